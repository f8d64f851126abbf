"""The events of one span, by kind: a run, a tool call, a model call, a retrieval, a plan, a
step. :func:`agentdocket.ingest.mapping.span_to_events` decides the kind (ours, or by the
conventions a foreign span follows) and asks a :class:`SpanReader` for its events."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import cached_property
from typing import Any, Protocol

from opentelemetry.trace import SpanContext, Status, StatusCode

from agentdocket.events import Event, validate_payload
from agentdocket.events.readings import final_text, last_user_text
from agentdocket.ingest import attributes as A
from agentdocket.ingest.agents import fallback_name, own_name, run_settings
from agentdocket.ingest.conventions import FIELDS, tool_arguments
from agentdocket.ingest.conventions import messages as call_messages
from agentdocket.ingest.conventions.frameworks import (
    FINAL_ANSWER_TOOLS,
    NO_CALL_ID,
    tool_call_record,
)
from agentdocket.ingest.conventions.genai import documents as genai_documents
from agentdocket.ingest.conventions.genai import with_instructions
from agentdocket.ingest.conventions.openllmetry import tool_output
from agentdocket.ingest.decode import (
    attribute_json,
    documents,
    event_value,
    exception_text,
    jsonable,
    llm_settings,
    opt_int,
    opt_str,
    ts_of,
)
from agentdocket.ingest.llm_payload import normalised
from agentdocket.ingest.messages import (
    answer_text,
    blocks_text,
    event_messages,
    plan_steps,
    question_text,
    tool_message,
)

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


# The run settings a foreign run may carry in its attributes, metadata or association properties.
RUN_SETTINGS = (A.AGENT_VERSION, A.STRATEGY, A.DATASET, A.DATASET_VERSION, A.CASE_ID, A.AGENT)


class SpanReader:
    """The events of one span, read by its conventions (what
    :func:`agentdocket.ingest.mapping.span_to_events` builds them with)."""

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
        start, end = span.start_time, span.end_time
        self.start = ts_of(start)
        self._end_ns = end or start
        self.duration_ms = max(0.0, ((end or 0) - (start or 0)) / 1e6)
        self.ours = A.KIND in attrs
        status = span.status
        self.error: str | None = None
        if status.status_code is StatusCode.ERROR:
            self.error = self._error_of(status)
        seq = attrs.get(A.SEQ)
        self.seq = seq if isinstance(seq, int) and seq >= 0 else 0
        end_seq = attrs.get(A.END_SEQ)
        self.end_seq = end_seq if isinstance(end_seq, int) and end_seq >= 0 else self.seq

    @cached_property
    def end(self) -> datetime:
        """When the span ended (made when an event of its end asks)."""
        return ts_of(self._end_ns)

    def _error_of(self, status: Status) -> str:
        # a foreign span's recorded exception first (type and message; descriptions carry
        # tracebacks or framework wording), else its status; ours set the status
        events = self.span.events
        recorded = None if self.ours else exception_text(events)
        return (
            recorded
            or status.description
            or exception_text(events)
            or str(self.attrs.get(A.ERROR_TYPE) or "error")
        )

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

    def run(self) -> list[Event]:
        inputs, outputs = self.messages() if not self.ours else ([], [])
        status = self.attrs.get(A.RUN_STATUS)
        if status not in ("ok", "error", "cancelled"):
            status = "error" if self.error is not None else "ok"
        started = self.run_started(inputs)
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

    def run_started(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        """The run.started payload of a root span: its agent, question, models and settings."""
        models = {
            k[len(A.MODEL_PREFIX) :]: str(v)
            for k, v in self.attrs.items()
            if k.startswith(A.MODEL_PREFIX)
        }
        extra = A.loads(self.attrs.get(A.RUN_ATTRIBUTES))
        question = self.attrs.get(A.INPUT_VALUE)
        if not self.ours and question is not None:
            question = question_text(self.value(A.INPUT_VALUE, A.INPUT_MIME))
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
        conversation = self.get(*FIELDS["conversation"])
        if conversation is not None:
            attributes = {**attributes, "conversation_id": str(conversation)}
        if self.ours:
            agent = str(self.get(A.AGENT_NAME) or self.span.name)
        else:
            agent = (
                own_name(self.span.name, self.attrs, found)
                or self.agent_below
                or fallback_name(self.span.name, self.attrs)
            )
        return {
            "agent": agent,
            "agent_version": setting(*FIELDS["agent_version"], A.AGENT_VERSION),
            "strategy": setting(A.STRATEGY),
            "models": models,
            "question": opt_str(question),
            "dataset": setting(A.DATASET),
            "dataset_version": setting(A.DATASET_VERSION),
            "case_id": setting(A.CASE_ID),
            "attributes": attributes,
        }

    def tool(self) -> list[Event]:
        name = str(self.get(*FIELDS["tool_name"]) or self.span.name)
        if not self.ours and name in FINAL_ANSWER_TOOLS:
            return self.final_answer()
        raw_args = self.get(*FIELDS["tool_arguments"])
        if raw_args is None and not self.ours:  # the older event form (Strands)
            raw_args = event_value(self.span.events, "gen_ai.tool.message", "content")
        args, call_id = tool_arguments(A.loads(raw_args))
        if args is None:  # not recorded: read from the model's call with its id (Trace)
            args = ""
        elif not isinstance(args, dict):
            args = raw_args if isinstance(raw_args, str) else A.dumps(raw_args)
        result = self.tool_result()
        given = self.get(*FIELDS["tool_call_id"])
        call_id = given if given not in (None, NO_CALL_ID) else call_id
        error = self.error
        if not self.ours:  # LangChain's tool result is a ToolMessage naming its call
            message = tool_message(result)
            if message is not None:
                call_id = call_id or message.get("tool_call_id")
                result = message.get("content", result)
            record = tool_call_record(result)  # LlamaIndex's record of the call
            if record is not None:
                result, recorded_id, recorded_error = record
                call_id, error = call_id or recorded_id, error or recorded_error
        call_id = str(call_id or self.span_id)
        called = {"call_id": call_id, "tool": name, "arguments": args}
        returned = {
            "call_id": call_id,
            "tool": name,
            "result": jsonable(result),
            "error": error,
            "duration_ms": self.duration_ms,
        }
        return [
            self.event("tool.called", called, complete=True),
            self.event("tool.returned", returned, at_end=True, complete=True),
        ]

    def tool_result(self) -> Any:
        """What a tool returned: ``output.value`` (JSON unless declared text), else the first
        of the other conventions' attributes, else the older event form's ``gen_ai.choice``;
        a foreign one unwrapped from OpenLLMetry's record and from text content blocks."""
        if self.attrs.get(A.OUTPUT_VALUE) is not None:
            result = self.value(A.OUTPUT_VALUE, A.OUTPUT_MIME)
        else:
            result = A.loads(self.get(*FIELDS["tool_result"]))
            if result is None and not self.ours:
                result = A.loads(event_value(self.span.events, A.GEN_AI_CHOICE_EVENT, "message"))
        return result if self.ours else blocks_text(tool_output(result))

    def final_answer(self) -> list[Event]:
        """A framework's tool that ends the run with its answer (smolagents' ``final_answer``):
        the run's answer, not a tool call of its plan."""
        args, _ = tool_arguments(A.loads(self.get(*FIELDS["tool_arguments"])))
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
        if not docs:  # the GenAI conventions' JSON (retrieved documents, memory records)
            docs = genai_documents(self.get(*FIELDS["retrieval_documents"]))
        query = self.get(*FIELDS["retrieval_query"])
        payload = {
            "query": str(query or ""),
            "documents": docs,
            "error": self.error,
            "duration_ms": self.duration_ms,
        }
        return [self.event("retrieval", payload)]

    def messages(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The span's input and output messages, in whichever form it carries them."""
        inputs = call_messages(self.attrs, "input")
        outputs = call_messages(self.attrs, "output")
        if not inputs and not outputs:
            inputs, outputs = event_messages(self.span.events)
        return inputs, outputs

    def llm(self) -> list[Event]:
        inputs, outputs = self.messages()
        input_tokens = opt_int(self.get(*FIELDS["input_tokens"]))
        output_tokens = opt_int(self.get(*FIELDS["output_tokens"]))
        if not self.ours and not (inputs or outputs or input_tokens or output_tokens):
            # a span of model kind around no model call (LlamaIndex's preparation of a call
            # with tools): a step, not a second llm.called per call
            return self.generic()
        temperature, extra = llm_settings(self.attrs, foreign=not self.ours)
        inputs = with_instructions(self.attrs, inputs)
        payload = {
            "model": str(self.get(*FIELDS["model"]) or "unknown"),
            "role": opt_str(self.get(A.LLM_ROLE)),
            "input_messages": inputs,
            "output_messages": outputs,
            "temperature": temperature,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_read_tokens": opt_int(self.get(*FIELDS["cache_read_tokens"])),
            "cache_creation_tokens": opt_int(self.get(*FIELDS["cache_creation_tokens"])),
            "reasoning_tokens": opt_int(self.get(*FIELDS["reasoning_tokens"])),
            "duration_ms": self.duration_ms,
            "error": self.error,
            "attributes": extra,
        }
        normal = normalised(payload)  # without validating it again, where it can
        if normal is not None:
            events = [self.event("llm.called", normal, complete=True)]
        else:
            events = [self.event("llm.called", payload)]
        if not self.ours:  # a foreign model's tool calls are the agent's plan
            steps = [s for s in plan_steps(outputs) if s["tool"] not in FINAL_ANSWER_TOOLS]
            if steps:
                events.append(self.event("plan", {"steps": steps}, at_end=True))
        return events

    def genai_plan(self) -> list[Event]:
        """A GenAI ``plan`` span: the agent's planning. The conventions carry no plan on it: its
        plan is the reply of the model call below it, which states its steps (its tool calls)
        as that call's own plan event, and its text when the trace is read
        (:meth:`agentdocket.events.Trace.plans`). Here: a plan of no steps of its own, so
        that the steps are counted once."""
        return [self.event("plan", {"steps": []}, at_end=True)]

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
        name = None if self.ours else self.get(*FIELDS["step_name"])  # GenAI run_step
        payload = {
            "name": str(name or self.span.name),
            "status": "error" if self.error is not None else "ok",
            "error": self.error,
            "duration_ms": self.duration_ms,
            "attributes": attributes,
        }
        return [self.event("step", payload)]
