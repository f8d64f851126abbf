"""Recording an agent's run: ``with tracer.run(agent=...) as run: run.plan(...); ...``.

Every step is an OpenTelemetry span with OpenInference and GenAI attributes; the span
processor and exporter (see :mod:`agentdocket.tracer.exporter`) turn them into events off the
agent's thread. A run is one trace: it starts a new trace and links to the span that was current
when it began, so that a request handling several runs keeps them apart.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterable, Mapping
from contextvars import ContextVar, Token
from typing import Any, Literal, TypedDict, TypeVar, overload

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, Span, TracerProvider
from typing_extensions import Unpack

from agentdocket import __version__
from agentdocket.events import Case, PlanStep
from agentdocket.ingest import attributes as A
from agentdocket.tracer.steps import (
    LlmCallStep,
    RetrievalStep,
    SqlStep,
    ToolCallStep,
    record_error,
    wrap_tool,
)

log = logging.getLogger("agentdocket.tracer")
F = TypeVar("F", bound=Callable[..., Any])

# DB-API driver module -> OpenTelemetry ``db.system.name``
DB_SYSTEMS = {
    "sqlite3": "sqlite",
    "psycopg": "postgresql",
    "psycopg2": "postgresql",
    "pymysql": "mysql",
    "MySQLdb": "mysql",
    "duckdb": "duckdb",
}

_current: ContextVar[Run | None] = ContextVar("agentdocket_run", default=None)


class RunOptions(TypedDict, total=False):
    """What a run records about itself (all optional).

    ``case`` is the :class:`~agentdocket.events.Case` (or its id) the run answers, in
    ``dataset`` at ``dataset_version``; ``models`` names the model of each role
    (``{"planner": "gpt-4o", ...}``); ``question`` defaults to the case's question;
    ``conversation`` is the id of the conversation this run is a turn of (recorded as
    ``gen_ai.conversation.id``: the runs sharing it are one session).
    """

    question: str | None
    case: Case | str | None
    dataset: str | None
    dataset_version: str | None
    strategy: str | None
    models: Mapping[str, str] | None
    agent_version: str | None
    attributes: Mapping[str, Any] | None
    conversation: str | None


class Tracer:
    """Makes runs. Uses the global OpenTelemetry tracer provider unless given one."""

    def __init__(self, provider: TracerProvider | None = None, *, max_rows: int = 20) -> None:
        self.provider = provider
        self.max_rows = max_rows
        self._otel: trace.Tracer | None = None

    @property
    def otel(self) -> trace.Tracer:
        if self._otel is None:
            self._otel = trace.get_tracer("agentdocket", __version__, tracer_provider=self.provider)
        return self._otel

    def run(self, agent: str, **options: Unpack[RunOptions]) -> Run:
        """A run of ``agent``, to use as ``with tracer.run(...) as run:`` (see
        :class:`RunOptions` for the keywords)."""
        return Run(self, agent, **options)

    @overload
    def tool(self, fn: F, /, *, name: str | None = None) -> F: ...
    @overload
    def tool(self, fn: None = None, /, *, name: str | None = None) -> Callable[[F], F]: ...

    def tool(self, fn: Any = None, /, *, name: str | None = None) -> Any:
        """Decorator: every call of the function is a tool call of the current run (or, outside
        a run, a tool span under whatever span is current)."""

        def decorate(f: F) -> F:
            return wrap_tool(f, name or f.__name__, current_run)

        return decorate(fn) if fn is not None else decorate


def current_run() -> Run | None:
    """The run being recorded in this context, if any."""
    return _current.get()


class Run:
    """One run of an agent; every method records a step. Use as a context manager."""

    def __init__(self, tracer: Tracer, agent: str, **options: Unpack[RunOptions]) -> None:
        question = options.get("question")
        case = options.get("case")
        attributes = options.get("attributes")
        self._tracer = tracer
        if isinstance(case, Case):
            question = question if question is not None else case.question
            case_id: str | None = case.case_id
        else:
            case_id = case
        attrs: dict[str, Any] = {
            A.KIND: "run",
            A.SEQ: 0,
            A.OI_SPAN_KIND: A.OI_AGENT,
            A.AGENT_NAME: agent,
            A.GEN_AI_OPERATION: A.OP_INVOKE_AGENT,
            A.GEN_AI_AGENT_NAME: agent,
        }
        optional = {
            A.GEN_AI_AGENT_VERSION: options.get("agent_version"),
            A.STRATEGY: options.get("strategy"),
            A.DATASET: options.get("dataset"),
            A.DATASET_VERSION: options.get("dataset_version"),
            A.CASE_ID: case_id,
            A.GEN_AI_CONVERSATION_ID: options.get("conversation"),
        }
        attrs.update({k: v for k, v in optional.items() if v is not None})
        if question is not None:
            attrs[A.INPUT_VALUE] = A.text_value(question)
            attrs[A.INPUT_MIME] = A.TEXT_MIME
        for role, model in (options.get("models") or {}).items():
            attrs[A.MODEL_PREFIX + role] = str(model)
        if attributes:
            attrs[A.RUN_ATTRIBUTES] = A.dumps(dict(attributes))
        self._attrs = attrs
        self._name = f"{A.OP_INVOKE_AGENT} {agent}"
        self._seq = itertools.count(1)
        self._span: Span | None = None
        self._context: Context | None = None
        self._token: object | None = None
        self._run_token: Token[Run | None] | None = None
        self._status: Literal["ok", "error", "cancelled"] | None = None
        self._error: str | None = None
        self.trace_id: str | None = None

    # --- the run's own span -------------------------------------------------------------------

    def __enter__(self) -> Run:
        try:
            caller = trace.get_current_span().get_span_context()
            links = [Link(caller)] if caller.is_valid else None
            self._span = self._tracer.otel.start_span(
                self._name, context=Context(), attributes=self._attrs, links=links
            )
            self._context = trace.set_span_in_context(self._span)
            self._token = otel_context.attach(self._context)
            span_context = self._span.get_span_context()
            if span_context.is_valid:  # not with a no-op provider
                self.trace_id = format(span_context.trace_id, "032x")
        except Exception:
            log.warning("agentdocket: could not start recording a run", exc_info=True)
        self._run_token = _current.set(self)
        return self

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        if self._run_token is not None:
            _current.reset(self._run_token)
        span = self._span
        if span is None:
            return
        try:
            if self._token is not None:
                otel_context.detach(self._token)  # type: ignore[arg-type]
            status = self._status
            if exc is not None:
                record_error(span, exc)
                if status is None:
                    cancelled = isinstance(exc, KeyboardInterrupt | GeneratorExit)
                    status = "cancelled" if cancelled else "error"
            span.set_attribute(A.RUN_STATUS, status or "ok")
            if self._error is not None and exc is None:
                span.set_status(trace.Status(trace.StatusCode.ERROR, self._error))
            span.set_attribute(A.END_SEQ, self._next_seq())
            span.end()
        except Exception:
            log.debug("agentdocket: could not finish a run span", exc_info=True)

    def fail(self, error: str) -> None:
        """Mark the run as failed without raising (the agent gave up, a guard refused, ...)."""
        self._status = "error"
        self._error = error

    @property
    def span(self) -> Span | None:
        return self._span

    # --- steps --------------------------------------------------------------------------------

    @property
    def max_rows(self) -> int:
        return self._tracer.max_rows

    def _next_seq(self) -> int:
        return next(self._seq)

    def _start(self, name: str, attrs: dict[str, Any]) -> Span:
        """A child span of the step that is current in this run (or of the run itself)."""
        attrs[A.SEQ] = next(self._seq)
        current = trace.get_current_span()
        ctx = self._context
        if (
            self._span is not None
            and current is not self._span
            and current.get_span_context().trace_id == self._span.get_span_context().trace_id
        ):
            ctx = None  # the current context: nested under the open step
        return self._tracer.otel.start_span(name, context=ctx, attributes=attrs)

    def _instant(self, name: str, attrs: dict[str, Any]) -> None:
        try:
            self._start(name, attrs).end()
        except Exception:
            log.debug("agentdocket: could not record a step", exc_info=True)

    def plan(
        self, steps: Iterable[str | PlanStep | Mapping[str, Any]], text: str | None = None
    ) -> None:
        """Record the plan: ordered steps, each a tool name, a :class:`PlanStep` or a mapping
        with ``tool`` and/or ``text``."""
        out: list[dict[str, str]] = []
        for step in steps:
            if isinstance(step, str):
                out.append({"tool": step})
            elif isinstance(step, PlanStep):
                out.append({k: v for k, v in (("tool", step.tool), ("text", step.text)) if v})
            else:
                out.append({k: str(v) for k, v in step.items() if k in ("tool", "text") and v})
        attrs: dict[str, Any] = {
            A.KIND: "plan",
            A.OI_SPAN_KIND: A.OI_CHAIN,
            A.OUTPUT_VALUE: A.dumps(out),
            A.OUTPUT_MIME: A.JSON_MIME,
        }
        if text is not None:
            attrs[A.PLAN_TEXT] = A.text_value(text)
        self._instant("plan", attrs)

    def tool_call(self, tool: str, arguments: Any = None) -> ToolCallStep:
        """A tool call; a context manager (``call.result(value)`` records the result) or a
        decorator for the tool function."""
        return ToolCallStep(self, tool, arguments)

    def sql(self, query: str, *, database: str | None = None, system: str | None = None) -> SqlStep:
        """A SQL query; ``with run.sql(q) as s: ...; s.result(columns, rows)``."""
        return SqlStep(self, query, database, system)

    def execute_sql(
        self, connection: Any, query: str, params: Any = (), *, database: str | None = None
    ) -> list[Any]:
        """Run ``query`` on a DB-API connection, record it, and return all rows. A failing
        query is recorded with its error, and the error raised."""
        module = type(connection).__module__.split(".")[0]
        system = DB_SYSTEMS.get(module, module)
        with self.sql(query, database=database, system=system) as step:
            cursor = connection.cursor()
            try:
                cursor.execute(query, params)
                rows = cursor.fetchall() if cursor.description is not None else []
                columns = [d[0] for d in cursor.description or ()]
            finally:
                cursor.close()
            step.result(columns, rows)
            return list(rows)

    def retrieval(self, query: str, documents: Iterable[Any] | None = None) -> RetrievalStep:
        """A retrieval. With ``documents`` it is recorded at once; without, use it as a context
        manager and call ``.documents(...)`` inside."""
        step = RetrievalStep(self, query)
        if documents is not None:
            step._open()
            step.documents(documents)
            step._finish(None)
        return step

    def llm_call(
        self,
        model: str,
        role: str | None,
        messages: Iterable[Any],
        *,
        output: Any = None,
        temperature: float | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        attributes: Mapping[str, Any] | None = None,
    ) -> LlmCallStep:
        """An LLM call by the agent's ``role`` (planner, slot_filler, ...). With ``output`` it
        is recorded at once; without, use it as a context manager and call ``.output(...)``."""
        step = LlmCallStep(self, model, role, messages, temperature, attributes)
        if output is not None:
            step._open()
            step.output(output, input_tokens=input_tokens, output_tokens=output_tokens)
            step._finish(None)
        return step

    def message(self, role: str, content: str, name: str | None = None) -> None:
        """A conversation turn between the agent and its user (or examiner)."""
        attrs: dict[str, Any] = {
            A.KIND: "message",
            A.OI_SPAN_KIND: A.OI_CHAIN,
            A.MESSAGE_SPEAKER: role,
            A.INPUT_VALUE: A.text_value(content),
            A.INPUT_MIME: A.TEXT_MIME,
        }
        if name is not None:
            attrs[A.MESSAGE_SPEAKER_NAME] = name
        self._instant("message", attrs)

    def feedback(
        self,
        value: bool | int | float | str,
        *,
        author: str,
        rubric: str = "thumbs",
        comment: str | None = None,
        label_id: str | None = None,
    ) -> None:
        """A person's label on this run (a user's thumbs-up: ``run.feedback("up",
        author="user:42")``), recorded with the run's spans. The value is checked where the
        rubric is known: here for the built-in ``thumbs``."""
        attrs: dict[str, Any] = {
            A.KIND: "label",
            A.LABEL_RUBRIC: rubric,
            A.LABEL_VALUE: value,
            A.LABEL_AUTHOR: author,
        }
        if comment is not None:
            attrs[A.LABEL_COMMENT] = comment
        if label_id is not None:
            attrs[A.LABEL_ID] = label_id
        self._instant("label", attrs)

    def respond(self, text: str) -> None:
        """The agent's final answer (also set as the run span's ``output.value``)."""
        value = A.text_value(text)
        self._instant(
            "response",
            {
                A.KIND: "response",
                A.OI_SPAN_KIND: A.OI_CHAIN,
                A.OUTPUT_VALUE: value,
                A.OUTPUT_MIME: A.TEXT_MIME,
            },
        )
        if self._span is not None:
            try:
                self._span.set_attribute(A.OUTPUT_VALUE, value)
                self._span.set_attribute(A.OUTPUT_MIME, A.TEXT_MIME)
            except Exception:
                log.debug("agentdocket: could not set the run's output", exc_info=True)
