"""Handles for steps that take time: a tool call, a SQL query, a retrieval, an LLM call.

Each handle is a context manager around one OpenTelemetry span. Recording never raises into
the agent: a failure inside agentdocket is logged and the agent's own code runs on; the agent's
own exceptions are recorded on the span and propagate unchanged.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode

from agentdocket.ingest import attributes as A
from agentdocket.tracer.encode import document_attributes, message_attributes


class Run(Protocol):
    """What a step needs of the run it belongs to (:class:`agentdocket.tracer.api.Run`)."""

    @property
    def max_rows(self) -> int:
        """How many result rows a SQL step records."""

    def _start(self, name: str, attrs: dict[str, Any]) -> Span:
        """A span for a step, under the run's current span."""

    def _next_seq(self) -> int:
        """The next position in the run's trace."""


log = logging.getLogger("agentdocket.tracer")
F = TypeVar("F", bound=Callable[..., Any])


def record_error(span: Span, exc: BaseException) -> None:
    """Mark a span as failed with the exception (type, message, and an exception event)."""
    try:
        message = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        span.set_status(Status(StatusCode.ERROR, message))
        span.set_attribute(A.ERROR_TYPE, type(exc).__qualname__)
        span.record_exception(exc)
    except Exception:  # never into the host
        log.debug("agentdocket: could not record an error on a span", exc_info=True)


class _Step:
    """A span opened on ``__enter__`` (made current, so nested steps become its children) and
    closed on ``__exit__``."""

    __slots__ = ("_attrs", "_closed", "_name", "_run", "_span", "_token")

    def __init__(self, run: Run | None, name: str, attrs: dict[str, Any]) -> None:
        self._run = run
        self._name = name
        self._attrs = attrs
        self._span: Span | None = None
        self._token: object | None = None
        self._closed = False

    def _open(self) -> None:
        try:
            if self._run is not None:
                self._span = self._run._start(self._name, self._attrs)
            else:
                self._span = _tracer_for_orphans().start_span(self._name, attributes=self._attrs)
            self._token = otel_context.attach(trace.set_span_in_context(self._span))
        except Exception:
            log.debug("agentdocket: could not open a step span", exc_info=True)

    def _finish(self, exc: BaseException | None) -> None:
        if self._closed:
            return
        self._closed = True
        span = self._span
        if span is None:
            return
        try:
            if self._token is not None:
                otel_context.detach(self._token)  # type: ignore[arg-type]
            self._close(span, exc)
            if exc is not None:
                record_error(span, exc)
            if self._run is not None and self._has_end_event():
                span.set_attribute(A.END_SEQ, self._run._next_seq())
            span.end()
        except Exception:
            log.debug("agentdocket: could not close a step span", exc_info=True)

    def _has_end_event(self) -> bool:
        return False

    def _close(self, span: Span, exc: BaseException | None) -> None:
        """Set the attributes known at the end (result, rows, output)."""

    @property
    def span(self) -> Span | None:
        """The underlying OpenTelemetry span (to add attributes of your own)."""
        return self._span


def _tracer_for_orphans() -> trace.Tracer:
    return trace.get_tracer("agentdocket")


class ToolCallStep(_Step):
    """A tool call: ``with run.tool_call("search", {"q": "..."}) as call: call.result(hits)``.

    Also a decorator: ``@run.tool_call("search")`` records each call of the function with its
    bound arguments and return value.
    """

    __slots__ = ("_arguments", "_has_result", "_result", "_tool")

    def __init__(self, run: Run | None, tool: str, arguments: Any) -> None:
        args = A.dumps(arguments if arguments is not None else {})
        super().__init__(
            run,
            f"tool {tool}",
            {
                A.KIND: "tool",
                A.OI_SPAN_KIND: A.OI_TOOL,
                A.TOOL_NAME: tool,
                A.INPUT_VALUE: args,
                A.INPUT_MIME: A.JSON_MIME,
                A.GEN_AI_OPERATION: A.OP_EXECUTE_TOOL,
                A.GEN_AI_TOOL_NAME: tool,
                A.GEN_AI_TOOL_CALL_ARGUMENTS: args,
            },
        )
        self._tool = tool
        self._arguments = arguments
        self._result: Any = None
        self._has_result = False

    def __enter__(self) -> ToolCallStep:
        self._open()
        return self

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        self._finish(exc)

    def result(self, value: Any) -> Any:
        """Record the tool's result; returns it, so ``return call.result(x)`` reads well."""
        self._result = value
        self._has_result = True
        return value

    def _has_end_event(self) -> bool:
        return True

    def _close(self, span: Span, exc: BaseException | None) -> None:
        if self._has_result:
            out = A.dumps(self._result)
            span.set_attribute(A.OUTPUT_VALUE, out)
            span.set_attribute(A.OUTPUT_MIME, A.JSON_MIME)
            span.set_attribute(A.GEN_AI_TOOL_CALL_RESULT, out)

    @property
    def call_id(self) -> str | None:
        """The call id (the span id in hex) once the call has started."""
        if self._span is None:
            return None
        return format(self._span.get_span_context().span_id, "016x")

    def __call__(self, fn: F) -> F:
        return wrap_tool(fn, self._tool, lambda: self._run)


def wrap_tool(fn: F, tool: str, run_of: Callable[[], Run | None]) -> F:
    """``fn`` recording each of its calls as a tool call of the run ``run_of()`` returns."""
    try:
        signature: inspect.Signature | None = inspect.signature(fn)
    except (TypeError, ValueError):
        signature = None

    def arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if signature is None:
            return {"args": list(args), **kwargs}
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            return {"args": list(args), **kwargs}
        return {k: v for k, v in bound.arguments.items() if k not in ("self", "cls")}

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            with ToolCallStep(run_of(), tool, arguments(args, kwargs)) as call:
                return call.result(await fn(*args, **kwargs))

        return async_wrapper  # type: ignore[return-value]

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with ToolCallStep(run_of(), tool, arguments(args, kwargs)) as call:
            return call.result(fn(*args, **kwargs))

    return wrapper  # type: ignore[return-value]


class SqlStep(_Step):
    """A SQL query against the agent's database: ``with run.sql(q) as s: s.result(cols, rows)``."""

    __slots__ = ("_columns", "_max_rows", "_row_count", "_rows")

    def __init__(self, run: Run, query: str, database: str | None, system: str | None) -> None:
        attrs: dict[str, Any] = {
            A.KIND: "sql",
            A.OI_SPAN_KIND: A.OI_CHAIN,
            A.INPUT_VALUE: A.text_value(query),
            A.INPUT_MIME: A.TEXT_MIME,
            A.DB_QUERY_TEXT: A.text_value(query),
        }
        if database is not None:
            attrs[A.DB_NAMESPACE] = database
        if system is not None:
            attrs[A.DB_SYSTEM] = system
        super().__init__(run, "sql", attrs)
        self._columns: list[str] | None = None
        self._rows: list[Any] | None = None
        self._row_count: int | None = None
        self._max_rows = run.max_rows

    def __enter__(self) -> SqlStep:
        self._open()
        return self

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        self._finish(exc)

    def result(
        self, columns: Sequence[str], rows: Iterable[Sequence[Any]], row_count: int | None = None
    ) -> None:
        """Record the result: column names, rows (the first ``max_rows`` are kept) and the
        total row count (default: the number of rows given)."""
        kept: list[Any] = []
        total = 0
        for row in rows:
            if total < self._max_rows:
                kept.append(list(row))
            total += 1
        self._columns = [str(c) for c in columns]
        self._rows = kept
        self._row_count = row_count if row_count is not None else total

    def _close(self, span: Span, exc: BaseException | None) -> None:
        if self._rows is not None:
            span.set_attribute(A.SQL_COLUMNS, self._columns or [])
            span.set_attribute(A.OUTPUT_VALUE, A.dumps(self._rows))
            span.set_attribute(A.OUTPUT_MIME, A.JSON_MIME)
            span.set_attribute(A.DB_RETURNED_ROWS, self._row_count or 0)


class RetrievalStep(_Step):
    """A retrieval: ``with run.retrieval(query) as r: r.documents(hits)``."""

    __slots__ = ("_docs",)

    def __init__(self, run: Run, query: str) -> None:
        super().__init__(
            run,
            "retrieval",
            {
                A.KIND: "retrieval",
                A.OI_SPAN_KIND: A.OI_RETRIEVER,
                A.INPUT_VALUE: A.text_value(query),
                A.INPUT_MIME: A.TEXT_MIME,
                A.GEN_AI_OPERATION: A.OP_RETRIEVAL,
                A.GEN_AI_RETRIEVAL_QUERY: A.text_value(query),
            },
        )
        self._docs: dict[str, Any] | None = None

    def __enter__(self) -> RetrievalStep:
        if self._span is None and not self._closed:
            self._open()
        return self

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        self._finish(exc)

    def documents(self, documents: Iterable[Any]) -> None:
        """Record the retrieved documents, best first."""
        self._docs = document_attributes(documents)

    def _close(self, span: Span, exc: BaseException | None) -> None:
        if self._docs:
            span.set_attributes(self._docs)


class LlmCallStep(_Step):
    """An LLM call: ``with run.llm_call(model, role, messages) as call: call.output(reply)``."""

    __slots__ = ("_out",)

    def __init__(
        self,
        run: Run,
        model: str,
        role: str | None,
        messages: Iterable[Any],
        temperature: float | None,
        attributes: Mapping[str, Any] | None,
    ) -> None:
        attrs: dict[str, Any] = {
            A.KIND: "llm",
            A.OI_SPAN_KIND: A.OI_LLM,
            A.LLM_MODEL: model,
            A.GEN_AI_OPERATION: A.OP_CHAT,
            A.GEN_AI_REQUEST_MODEL: model,
        }
        if role is not None:
            attrs[A.LLM_ROLE] = role
        if temperature is not None:
            attrs[A.GEN_AI_REQUEST_TEMPERATURE] = float(temperature)
            attrs[A.LLM_INVOCATION_PARAMETERS] = A.dumps({"temperature": temperature})
        if attributes:
            attrs[A.LLM_ATTRIBUTES] = A.dumps(dict(attributes))
        attrs.update(message_attributes(A.LLM_INPUT_MESSAGES, messages))
        super().__init__(run, f"{A.OP_CHAT} {model}", attrs)
        self._out: dict[str, Any] | None = None

    def __enter__(self) -> LlmCallStep:
        if self._span is None and not self._closed:
            self._open()
        return self

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        self._finish(exc)

    def output(
        self,
        messages: Any,
        *,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
    ) -> None:
        """Record the reply: a string (one assistant message), a message, or a list of them."""
        if isinstance(messages, str):
            messages = [{"role": "assistant", "content": messages}]
        elif not isinstance(messages, list | tuple):
            messages = [messages]
        out = message_attributes(A.LLM_OUTPUT_MESSAGES, messages)
        if input_tokens is not None:
            out[A.LLM_PROMPT_TOKENS] = out[A.GEN_AI_INPUT_TOKENS] = int(input_tokens)
        if output_tokens is not None:
            out[A.LLM_COMPLETION_TOKENS] = out[A.GEN_AI_OUTPUT_TOKENS] = int(output_tokens)
        if input_tokens is not None and output_tokens is not None:
            out[A.LLM_TOTAL_TOKENS] = int(input_tokens) + int(output_tokens)
        self._out = out

    def _close(self, span: Span, exc: BaseException | None) -> None:
        if self._out:
            span.set_attributes(self._out)
