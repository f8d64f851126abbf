"""From OpenTelemetry spans to events: a pure function, shared by the exporter and the receiver.

A span is recognised by ``agentdocket.kind`` (ours), else by ``openinference.span.kind``, else by
``gen_ai.operation.name``. Ours carry ``agentdocket.seq`` (their order within the run); foreign
spans are ordered by time (seq 0, and 1 for the run's end so it sorts last). A span that cannot
be mapped to its kind (foreign data of an unexpected shape) is kept as a generic ``step`` event
with the problem noted, never dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode

from agentdocket.events import Event, validate_payload
from agentdocket.events.readings import final_text, last_user_text
from agentdocket.ingest import attributes as A
from agentdocket.ingest.agents import (
    fallback_name,
    names_below_roots,
    own_name,
    run_settings,
    settings_below_roots,
)
from agentdocket.ingest.decode import (
    attribute_json,
    documents,
    event_value,
    exception_text,
    jsonable,
    llm_settings,
    opt_int,
    opt_str,
    tool_arguments,
)
from agentdocket.ingest.evaluations import EVALUATION_EVENT
from agentdocket.ingest.evaluations import check as check_evaluation
from agentdocket.ingest.evaluations import verdict as evaluation_verdict
from agentdocket.ingest.messages import (
    answer_text,
    blocks_text,
    event_messages,
    parts_text,
    plan_steps,
    question_text,
    read_messages,
    tool_message,
)

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
UNSPECIFIED = "<not specified>"  # Google ADK's tool call id when it has none
MAPPING_ERROR = "agentdocket.mapping_error"


class SpanLike(Protocol):
    """What the mapping reads of a span (``ReadableSpan`` has it)."""

    @property
    def name(self) -> str: ...
    @property
    def context(self) -> SpanContext | None: ...
    @property
    def parent(self) -> SpanContext | None: ...
    @property
    def attributes(self) -> Mapping[str, Any] | None: ...
    @property
    def start_time(self) -> int | None: ...
    @property
    def end_time(self) -> int | None: ...
    @property
    def status(self) -> Status: ...
    @property
    def events(self) -> Sequence[Any]:
        """Span events, each with a ``name`` and ``attributes`` (``exception`` is read)."""


def ts_of(ns: int | None) -> datetime:
    return EPOCH + timedelta(microseconds=(ns or 0) // 1000)


def spans_to_events(spans: Iterable[SpanLike], *, keep_unrecognized: bool = False) -> list[Event]:
    """The events of a batch of ended spans."""
    batch = list(spans)
    agents = names_below_roots(batch)
    below = settings_below_roots(batch, RUN_SETTINGS)
    out: list[Event] = []
    for span in batch:
        ctx = span.context
        key = (ctx.trace_id, ctx.span_id) if ctx is not None else None
        out.extend(
            span_to_events(
                span,
                keep_unrecognized=keep_unrecognized,
                agent=agents.get(key) if key else None,
                settings=below.get(key) if key else None,
            )
        )
    return out


# The run settings a foreign run may carry in its attributes, metadata or association properties.
RUN_SETTINGS = (A.AGENT_VERSION, A.STRATEGY, A.DATASET, A.DATASET_VERSION, A.CASE_ID, A.AGENT)


def span_to_events(
    span: SpanLike,
    *,
    keep_unrecognized: bool = False,
    agent: str | None = None,
    settings: Mapping[str, str] | None = None,
) -> list[Event]:
    """The events of one span; ``agent``: the name an agent span below this root gives,
    ``settings``: the run settings a span below it carries (see
    :mod:`agentdocket.ingest.agents`)."""
    ctx = span.context
    if ctx is None or not ctx.is_valid:
        return []
    attrs = _plain_attributes(span)
    m = _Mapper(span, ctx, attrs, agent, settings)
    return _events_of(m, attrs, keep_unrecognized) + evaluations(span, m.trace_id, m.span_id)


def evaluations(span: SpanLike, trace_id: str, span_id: str) -> list[Event]:
    """The verdicts of the evaluations recorded on a span (``gen_ai.evaluation.result``
    events; :mod:`agentdocket.ingest.evaluations`), those that say what they must."""
    out = []
    for event in span.events or ():
        if getattr(event, "name", None) != EVALUATION_EVENT:
            continue
        attrs = getattr(event, "attributes", None) or {}
        if check_evaluation(attrs) is None:  # the receiver refused the others already
            time = getattr(event, "timestamp", None) or span.end_time or 0
            out.append(evaluation_verdict(trace_id, span_id, attrs, time))
    return out


def _events_of(m: _Mapper, attrs: Mapping[str, Any], keep_unrecognized: bool) -> list[Event]:
    kind = attrs.get(A.KIND)
    handler = _OURS.get(kind) if isinstance(kind, str) else None
    if handler is None:
        handler = m.foreign_handler(keep_unrecognized)
        if handler is None:
            return []
    try:
        return handler(m)
    except Exception as exc:  # foreign data of any shape: kept, with the problem noted
        problem = f"{type(exc).__name__}: {exc}"
    try:
        return m.generic(problem=problem)
    except Exception:  # attributes no payload can hold: the step without them
        return m.generic(problem=problem, keep_attributes=False)


def _plain_attributes(span: SpanLike) -> dict[str, Any]:
    """The span's attributes as a plain dict (every lookup on the SDK's own attribute mapping
    costs about a microsecond: one copy, then dictionary lookups), with those of its GenAI
    ``gen_ai.client.inference.operation.details`` events where the span has none of its own
    (the current conventions' messages may travel there instead)."""
    attrs = dict(span.attributes or {})
    for event in span.events or ():
        if getattr(event, "name", None) == A.GEN_AI_DETAILS_EVENT:
            for key, value in (getattr(event, "attributes", None) or {}).items():
                attrs.setdefault(key, value)
    return attrs


class _Mapper:
    """The events of one span."""

    def __init__(
        self,
        span: SpanLike,
        ctx: SpanContext,
        attrs: Mapping[str, Any],
        agent: str | None = None,
        settings: Mapping[str, str] | None = None,
    ) -> None:
        self.span = span
        self.agent_below = agent
        self.settings_below = settings or {}
        self.attrs = attrs
        self.trace_id = format(ctx.trace_id, "032x")
        self.span_id = format(ctx.span_id, "016x")
        parent = span.parent
        self.parent = format(parent.span_id, "016x") if parent is not None else None
        self.start = ts_of(span.start_time)
        self.end = ts_of(span.end_time or span.start_time)
        self.duration_ms = max(0.0, ((span.end_time or 0) - (span.start_time or 0)) / 1e6)
        status = span.status
        self.error: str | None = None
        if status.status_code is StatusCode.ERROR:
            # a foreign span's recorded exception first (type and message; descriptions
            # carry tracebacks or framework wording), else its status; ours set the status
            recorded = None if A.KIND in attrs else exception_text(span.events)
            self.error = (
                recorded
                or status.description
                or exception_text(span.events)
                or str(attrs.get(A.ERROR_TYPE) or "error")
            )
        self.ours = A.KIND in attrs
        seq = attrs.get(A.SEQ)
        self.seq = seq if isinstance(seq, int) and seq >= 0 else 0
        end_seq = attrs.get(A.END_SEQ)
        self.end_seq = end_seq if isinstance(end_seq, int) and end_seq >= 0 else self.seq

    def event(
        self,
        kind: str,
        payload: dict[str, Any],
        *,
        at_end: bool = False,
        seq: int | None = None,
        complete: bool = False,
    ) -> Event:
        """An event of this span. Ids and times come from a valid span context and clock. The
        payload is validated, unless ``complete``: built here with every field, typed by
        construction, in its normalised form (the tool call hot path; a test holds every such
        payload equal to its validated form)."""
        if not complete:
            payload = validate_payload(kind, {k: v for k, v in payload.items() if v is not None})
        return Event.assemble(
            trace_id=self.trace_id,
            span_id=self.span_id,
            parent_span_id=self.parent,
            seq=seq if seq is not None else (self.end_seq if at_end else self.seq),
            ts=self.end if at_end else self.start,
            kind=kind,
            payload=payload,
        )

    def get(self, *keys: str) -> Any:
        for key in keys:
            value = self.attrs.get(key)
            if value is not None:
                return value
        return None

    def value(self, key: str, mime_key: str) -> Any:
        """``input.value`` / ``output.value``: parsed JSON unless declared plain text."""
        raw = self.attrs.get(key)
        if raw is None or self.attrs.get(mime_key) == A.TEXT_MIME:
            return raw
        return A.loads(raw)

    # --- kinds --------------------------------------------------------------------------------

    def foreign_handler(self, keep_unrecognized: bool) -> Any:
        oi = self.attrs.get(A.OI_SPAN_KIND)
        op = self.attrs.get(A.GEN_AI_OPERATION)
        if (
            oi in (A.OI_AGENT, A.OI_CHAIN)
            or op in A.RUN_OPERATIONS
            or self.attrs.get(A.TRACELOOP_SPAN_KIND) in A.TRACELOOP_RUNS
            or (self.span.name == A.ADK_INVOCATION and set(self.attrs) <= {A.SERVICE_NAME})
        ):
            # A trace's root agent, workflow or chain is the run (LangChain's root is often a
            # chain, Google ADK's a workflow).
            return _Mapper.run if self.parent is None else _Mapper.generic
        if self.attrs.get(A.MCP_METHOD) is not None and getattr(self.span, "kind", None) in (
            SpanKind.SERVER,
            SpanKind.CONSUMER,
        ):
            # An MCP server's side of a call its client records: a step (keeping the session
            # id and the rest), never a second tool call.
            return _Mapper.generic
        if oi == A.OI_TOOL or op == A.OP_EXECUTE_TOOL:
            return _Mapper.tool
        if oi == A.OI_LLM or op in A.LLM_OPERATIONS:
            return _Mapper.llm
        if oi == A.OI_RETRIEVER or op == A.OP_RETRIEVAL:
            return _Mapper.retrieval
        if oi is not None or op is not None or keep_unrecognized:
            return _Mapper.generic
        return None

    def run(self) -> list[Event]:
        models = {
            k[len(A.MODEL_PREFIX) :]: str(v)
            for k, v in self.attrs.items()
            if k.startswith(A.MODEL_PREFIX)
        }
        extra = A.loads(self.attrs.get(A.RUN_ATTRIBUTES))
        question = self.attrs.get(A.INPUT_VALUE)
        if not self.ours and question is not None:
            question = question_text(self.value(A.INPUT_VALUE, A.INPUT_MIME))
        inputs, outputs = self.messages() if not self.ours else ([], [])
        if not self.ours and question is None:  # a GenAI root's own messages
            question = last_user_text(inputs)
        # Foreign runs name their case in span attributes, OpenInference's metadata (where
        # LangChain's ``config={"metadata": {...}}`` lands) or OpenLLMetry's association
        # properties; else a span below the root may (agentdocket.ingest.agents).
        found = (
            {} if self.ours else {**self.settings_below, **run_settings(self.attrs, RUN_SETTINGS)}
        )

        def setting(key: str, *more: str) -> str | None:
            return opt_str(self.get(key, *more) or found.get(key))

        attributes = extra if isinstance(extra, dict) else {}
        conversation = self.get(A.GEN_AI_CONVERSATION_ID, A.SESSION_ID)
        if conversation is not None and not self.ours:
            attributes = {**attributes, "conversation_id": str(conversation)}
        if self.ours:
            agent = str(self.get(A.AGENT_NAME) or self.span.name)
        else:
            agent = (
                own_name(self.span.name, self.attrs, found)
                or self.agent_below
                or fallback_name(self.span.name, self.attrs)
            )
        started = {
            "agent": agent,
            "agent_version": setting(A.GEN_AI_AGENT_VERSION, A.AGENT_VERSION),
            "strategy": setting(A.STRATEGY),
            "models": models,
            "question": opt_str(question),
            "dataset": setting(A.DATASET),
            "dataset_version": setting(A.DATASET_VERSION),
            "case_id": setting(A.CASE_ID),
            "attributes": attributes,
        }
        status = self.attrs.get(A.RUN_STATUS)
        if status not in ("ok", "error", "cancelled"):
            status = "error" if self.error is not None else "ok"
        events = [self.event("run.started", started, seq=0 if self.ours else None)]
        if not self.ours:
            output = None
            if self.attrs.get(A.OUTPUT_VALUE) is not None:
                output = answer_text(self.value(A.OUTPUT_VALUE, A.OUTPUT_MIME))
            if output is None:  # a GenAI root's own output messages (the text, trimmed)
                output = (final_text(outputs) or "").strip() or None
            if output is not None:  # else read from its model calls (Trace.response)
                events.append(self.event("response", {"text": output}, at_end=True))
        events.append(
            self.event(
                "run.finished",
                {"status": status, "error": self.error if status != "ok" else None},
                at_end=True,
                seq=None if self.ours else 1,
            )
        )
        return events

    def tool(self) -> list[Event]:
        name = str(self.get(A.TOOL_NAME, A.GEN_AI_TOOL_NAME) or self.span.name)
        if not self.ours and name in A.FINAL_ANSWER_TOOLS:
            return self.final_answer()
        raw_args = self.get(A.INPUT_VALUE, A.GEN_AI_TOOL_CALL_ARGUMENTS, A.ADK_TOOL_ARGS)
        if raw_args is None and not self.ours:  # the older event form (Strands)
            raw_args = event_value(self.span.events, "gen_ai.tool.message", "content")
        args, call_id = tool_arguments(A.loads(raw_args))
        if args is None:  # not recorded: read from the model's call with its id (Trace)
            args = ""
        elif not isinstance(args, dict):
            args = raw_args if isinstance(raw_args, str) else A.dumps(raw_args)
        if self.attrs.get(A.OUTPUT_VALUE) is not None:
            result = self.value(A.OUTPUT_VALUE, A.OUTPUT_MIME)
        else:
            result = A.loads(self.get(A.GEN_AI_TOOL_CALL_RESULT, A.ADK_TOOL_RESPONSE))
            if result is None and not self.ours:
                result = A.loads(event_value(self.span.events, A.GEN_AI_CHOICE_EVENT, "message"))
        given = self.get(A.GEN_AI_TOOL_CALL_ID, A.TOOL_CALL_ID)
        call_id = given if given not in (None, UNSPECIFIED) else call_id
        if not self.ours:  # LangChain's tool result is a ToolMessage naming its call
            result = blocks_text(result)
            message = tool_message(result)
            if message is not None:
                call_id = call_id or message.get("tool_call_id")
                result = message.get("content", result)
        call_id = str(call_id or self.span_id)
        called = {"call_id": call_id, "tool": name, "arguments": args}
        returned = {
            "call_id": call_id,
            "tool": name,
            "result": jsonable(result),
            "error": self.error,
            "duration_ms": self.duration_ms,
        }
        return [
            self.event("tool.called", called, complete=True),
            self.event("tool.returned", returned, at_end=True, complete=True),
        ]

    def final_answer(self) -> list[Event]:
        """A framework's tool that ends the run with its answer (smolagents' ``final_answer``):
        the run's answer, not a tool call of its plan."""
        args, _ = tool_arguments(A.loads(self.get(A.INPUT_VALUE, A.GEN_AI_TOOL_CALL_ARGUMENTS)))
        answer = args.get("answer") if isinstance(args, dict) else None
        if answer is None:
            answer = self.attrs.get(A.OUTPUT_VALUE)
        if answer is None:
            return self.generic()
        text = answer if isinstance(answer, str) else A.dumps(answer)
        return [self.event("response", {"text": text}, at_end=True)]

    def sql(self) -> list[Event]:
        rows = self.value(A.OUTPUT_VALUE, A.OUTPUT_MIME)
        columns = self.attrs.get(A.SQL_COLUMNS)
        count = self.attrs.get(A.DB_RETURNED_ROWS)
        payload = {
            "query": str(self.get(A.DB_QUERY_TEXT, A.DB_STATEMENT_OLD, A.INPUT_VALUE) or ""),
            "columns": [str(c) for c in columns] if columns is not None else [],
            "rows": jsonable(rows) if isinstance(rows, list) else [],
            "row_count": count if isinstance(count, int) else None,
            "error": self.error,
            "duration_ms": self.duration_ms,
            "database": opt_str(self.get(A.DB_NAMESPACE, A.DB_SYSTEM)),
        }
        return [self.event("sql.executed", payload)]

    def retrieval(self) -> list[Event]:
        docs = documents(A.indexed(self.attrs, A.RETRIEVAL_DOCUMENTS))
        query = self.get(A.INPUT_VALUE, A.GEN_AI_RETRIEVAL_QUERY)
        payload = {
            "query": str(query or ""),
            "documents": docs,
            "error": self.error,
            "duration_ms": self.duration_ms,
        }
        return [self.event("retrieval", payload)]

    def messages(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The span's input and output messages, in whichever form it carries them."""
        inputs = read_messages(self.attrs, A.LLM_INPUT_MESSAGES, A.GEN_AI_INPUT_MESSAGES, "prompt")
        outputs = read_messages(
            self.attrs, A.LLM_OUTPUT_MESSAGES, A.GEN_AI_OUTPUT_MESSAGES, "completion"
        )
        if not inputs and not outputs:
            inputs, outputs = event_messages(self.span.events)
        return inputs, outputs

    def llm(self) -> list[Event]:
        inputs, outputs = self.messages()
        input_tokens = opt_int(
            self.get(A.LLM_PROMPT_TOKENS, A.GEN_AI_INPUT_TOKENS, A.GEN_AI_PROMPT_TOKENS_OLD)
        )
        output_tokens = opt_int(
            self.get(
                A.LLM_COMPLETION_TOKENS, A.GEN_AI_OUTPUT_TOKENS, A.GEN_AI_COMPLETION_TOKENS_OLD
            )
        )
        if not self.ours and not (inputs or outputs or input_tokens or output_tokens):
            # a span of model kind around no model call (LlamaIndex's preparation of a call
            # with tools): a step, not a second llm.called per call
            return self.generic()
        temperature, extra = llm_settings(self.attrs, foreign=not self.ours)
        given = A.loads(self.attrs.get(A.GEN_AI_SYSTEM_INSTRUCTIONS))
        instructions = given if isinstance(given, str) else parts_text(given)
        if instructions and not (inputs and inputs[0].get("role") == "system"):
            inputs = [{"role": "system", "content": instructions}, *inputs]
        payload = {
            "model": str(
                self.get(A.LLM_MODEL, A.GEN_AI_REQUEST_MODEL, A.GEN_AI_RESPONSE_MODEL) or "unknown"
            ),
            "role": opt_str(self.get(A.LLM_ROLE)),
            "input_messages": inputs,
            "output_messages": outputs,
            "temperature": temperature,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "duration_ms": self.duration_ms,
            "error": self.error,
            "attributes": extra,
        }
        events = [self.event("llm.called", payload)]
        if not self.ours:  # a foreign model's tool calls are the agent's plan
            steps = [s for s in plan_steps(outputs) if s["tool"] not in A.FINAL_ANSWER_TOOLS]
            if steps:
                events.append(self.event("plan", {"steps": steps}, at_end=True))
        return events

    def plan(self) -> list[Event]:
        steps = self.value(A.OUTPUT_VALUE, A.OUTPUT_MIME)
        if not isinstance(steps, list):
            raise ValueError("a plan span's output.value must be a JSON array of steps")
        payload = {"steps": steps, "text": opt_str(self.attrs.get(A.PLAN_TEXT))}
        return [self.event("plan", payload)]

    def message(self) -> list[Event]:
        payload = {
            "role": str(self.attrs.get(A.MESSAGE_SPEAKER, "user")),
            "content": str(self.attrs.get(A.INPUT_VALUE, "")),
            "name": opt_str(self.attrs.get(A.MESSAGE_SPEAKER_NAME)),
        }
        return [self.event("message", payload)]

    def response(self) -> list[Event]:
        return [self.event("response", {"text": str(self.attrs.get(A.OUTPUT_VALUE, ""))})]

    def generic(self, problem: str | None = None, keep_attributes: bool = True) -> list[Event]:
        attributes = (
            {k: attribute_json(v) for k, v in self.attrs.items()} if keep_attributes else {}
        )
        if problem is not None:
            attributes[MAPPING_ERROR] = problem
        payload = {
            "name": self.span.name,
            "status": "error" if self.error is not None else "ok",
            "error": self.error,
            "duration_ms": self.duration_ms,
            "attributes": attributes,
        }
        return [self.event("step", payload)]


_OURS = {
    "run": _Mapper.run,
    "plan": _Mapper.plan,
    "tool": _Mapper.tool,
    "sql": _Mapper.sql,
    "retrieval": _Mapper.retrieval,
    "llm": _Mapper.llm,
    "message": _Mapper.message,
    "response": _Mapper.response,
}
