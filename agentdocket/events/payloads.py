"""The payload of each event kind: its fields, their meaning and the current schema version.

These frozen dataclasses are the documentation and the validation of the event log.
``agentdocket schemas`` prints the JSON Schema generated from them. Changing a payload's shape
means bumping its ``VERSION`` and registering an upcaster in ``upcast.py`` for the old one;
stored events are never rewritten.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from agentdocket.events.codec import field

FAILURE_TYPE = re.compile(r"^[a-z][a-z0-9_.\-]*:[a-z0-9_.\-]+$")


@dataclass(frozen=True)
class RunStarted:
    """A run of an agent began: who ran, how, on what question and which case."""

    KIND: ClassVar[str] = "run.started"
    VERSION: ClassVar[int] = 1

    agent: str = field("agent name")
    agent_version: str | None = field("agent version", None)
    strategy: str | None = field("strategy, e.g. sequential, iterative, no-interaction", None)
    models: dict[str, str] = field("model of each role: planner, slot_filler, ...", factory=dict)
    question: str | None = field("the input question or instruction", None)
    dataset: str | None = field("dataset the case belongs to", None)
    dataset_version: str | None = field("version of that dataset", None)
    case_id: str | None = field("the case this run answers", None)
    attributes: dict[str, Any] = field("free attributes", factory=dict)


@dataclass(frozen=True)
class PlanStep:
    """One planned step: a tool to use, a text, or both."""

    tool: str | None = field("tool the step uses", None)
    text: str | None = field("the step in words", None)
    arguments: dict[str, Any] | None = field(
        "arguments the step intends to pass (a model's tool call)", None
    )
    call_id: str | None = field("id of the tool call the step requests, when it has one", None)

    def __post_init__(self) -> None:
        if self.tool is None and self.text is None:
            raise ValueError("a plan step needs a tool or a text")


@dataclass(frozen=True)
class Plan:
    """The ordered steps the agent intends to take."""

    KIND: ClassVar[str] = "plan"
    VERSION: ClassVar[int] = 1

    steps: list[PlanStep] = field("ordered steps")
    text: str | None = field("the plan as the model wrote it", None)


@dataclass(frozen=True)
class ToolCalled:
    """A tool was invoked."""

    KIND: ClassVar[str] = "tool.called"
    VERSION: ClassVar[int] = 1

    call_id: str = field("identifies the call; its tool.returned carries the same id")
    tool: str = field("tool name")
    arguments: dict[str, Any] | str = field(
        "arguments as an object, or the raw string when they could not be parsed", factory=dict
    )


@dataclass(frozen=True)
class ToolReturned:
    """A tool call ended, with its result or its error."""

    KIND: ClassVar[str] = "tool.returned"
    VERSION: ClassVar[int] = 1

    call_id: str = field("the id of the matching tool.called")
    tool: str | None = field("tool name", None)
    result: Any = field("result value (any JSON)", None)
    error: str | None = field("error message when the call failed", None)
    duration_ms: float | None = field("wall time of the call", None)


@dataclass(frozen=True)
class SqlExecuted:
    """A SQL query ran against the agent's database (this is data, not agentdocket's storage)."""

    KIND: ClassVar[str] = "sql.executed"
    VERSION: ClassVar[int] = 1

    query: str = field("the SQL text")
    columns: list[str] = field("result column names", factory=list)
    rows: list[list[Any]] = field("the first N result rows", factory=list)
    row_count: int | None = field("total rows the query returned", None)
    error: str | None = field("error message when the query failed", None)
    duration_ms: float | None = field("wall time of the query", None)
    database: str | None = field("which database it ran against", None)


@dataclass(frozen=True)
class Document:
    """A retrieved document."""

    id: str = field("document id")
    score: float | None = field("retrieval score", None)
    text: str | None = field("document text", None)
    metadata: dict[str, Any] = field("free metadata", factory=dict)


@dataclass(frozen=True)
class Retrieval:
    """Documents retrieved for a query."""

    KIND: ClassVar[str] = "retrieval"
    VERSION: ClassVar[int] = 2  # 2: error and duration_ms

    query: str = field("retrieval query")
    documents: list[Document] = field("retrieved documents, best first", factory=list)
    error: str | None = field("why the retrieval failed, if it did", None)
    duration_ms: float | None = field("how long it took", None)


@dataclass(frozen=True)
class ChatMessage:
    """One message of an LLM conversation."""

    role: str = field("system, user, assistant, tool, ...")
    content: str = field("message text")
    name: str | None = field("tool or participant name", None)
    tool_calls: list[dict[str, Any]] = field("tool calls the message requests", factory=list)


@dataclass(frozen=True)
class LlmCalled:
    """A language model was called."""

    KIND: ClassVar[str] = "llm.called"
    VERSION: ClassVar[int] = 1

    model: str = field("model name")
    role: str | None = field("the model's role in the agent: planner, judge, ...", None)
    input_messages: list[ChatMessage] = field("messages sent", factory=list)
    output_messages: list[ChatMessage] = field("messages received", factory=list)
    temperature: float | None = field("sampling temperature", None)
    input_tokens: int | None = field("prompt tokens", None)
    output_tokens: int | None = field("completion tokens", None)
    cache_read_tokens: int | None = field("prompt tokens read from the provider's cache", None)
    cache_creation_tokens: int | None = field("prompt tokens written to the provider's cache", None)
    reasoning_tokens: int | None = field("completion tokens spent on reasoning", None)
    duration_ms: float | None = field("wall time of the call", None)
    error: str | None = field("error message when the call failed", None)
    attributes: dict[str, Any] = field(
        "free attributes (provider, sample index, ...)", factory=dict
    )


@dataclass(frozen=True)
class LlmMessages:
    """Messages of a model call recorded apart from the call (OpenTelemetry log records, as
    some GenAI instrumentations send them): joined to its ``llm.called`` by span id, and read
    as the call's messages wherever the call recorded none."""

    KIND: ClassVar[str] = "llm.messages"
    VERSION: ClassVar[int] = 1

    input_messages: list[ChatMessage] = field("messages sent", factory=list)
    output_messages: list[ChatMessage] = field("messages received", factory=list)


@dataclass(frozen=True)
class Message:
    """A conversation turn between the agent and its user (or examiner)."""

    KIND: ClassVar[str] = "message"
    VERSION: ClassVar[int] = 1

    role: str = field("who spoke: user, agent, examiner, ...")
    content: str = field("what was said")
    name: str | None = field("speaker name", None)


@dataclass(frozen=True)
class Response:
    """The agent's final answer."""

    KIND: ClassVar[str] = "response"
    VERSION: ClassVar[int] = 1

    text: str = field("the final answer text")


@dataclass(frozen=True)
class RunFinished:
    """A run ended."""

    KIND: ClassVar[str] = "run.finished"
    VERSION: ClassVar[int] = 1

    status: Literal["ok", "error", "cancelled"] = field("how the run ended")
    error: str | None = field("error message when status is error", None)


@dataclass(frozen=True)
class GenericStep:
    """A step of a kind agentdocket does not model (e.g. a foreign span), kept as it came."""

    KIND: ClassVar[str] = "step"
    VERSION: ClassVar[int] = 1

    name: str = field("step name")
    status: Literal["ok", "error"] | None = field("outcome", None)
    error: str | None = field("error message", None)
    duration_ms: float | None = field("wall time", None)
    attributes: dict[str, Any] = field("the step's attributes", factory=dict)


@dataclass(frozen=True)
class Verdict:
    """A scorer's judgement of a run (or of one step of it)."""

    KIND: ClassVar[str] = "verdict"
    VERSION: ClassVar[int] = 1

    scorer: str = field("scorer name, e.g. tools.slot_fill")
    scorer_version: str = field("scorer version")
    input_hash: str = field("hash of the inputs the scorer judged (trace, case, config)")
    subject_trace_id: str = field("the run judged")
    subject_span_id: str | None = field("the step judged, when the verdict is about one", None)
    passed: bool | None = field("pass / fail, for scorers that decide one", None)
    score: float | None = field("numeric score", None)
    label: str | None = field("categorical verdict, e.g. Match, Robust", None)
    failure_type: str | None = field("namespaced failure, e.g. slot_fill:missing_call", None)
    rationale: str | None = field("why, in words", None)
    details: dict[str, Any] = field("scorer-specific details and metrics", factory=dict)
    judge_trace_id: str | None = field("trace of the judge calls behind this verdict", None)

    def __post_init__(self) -> None:
        if self.failure_type is not None and not FAILURE_TYPE.match(self.failure_type):
            raise ValueError(
                f"failure_type {self.failure_type!r} must be namespaced as 'area:problem'"
            )


@dataclass(frozen=True)
class TelemetryDropped:
    """Spans an exporter had to drop (queue or spool full), reported once delivery resumed.

    Lives in a trace of its own: it is about the telemetry pipeline, not about a run, so it is
    not projected into ``runs``.
    """

    KIND: ClassVar[str] = "telemetry.dropped"
    VERSION: ClassVar[int] = 1

    count: int = field("spans dropped since the last report")
    reason: Literal["queue_full", "spool_full", "spool_error"] = field(
        "queue_full: the span processor's queue overflowed; spool_full: the spool reached its "
        "maximum size while the database was away; spool_error: the spool could not be written"
    )
    first_dropped_at: str | None = field("when the first of them was dropped (ISO 8601)", None)
    last_dropped_at: str | None = field("when the last of them was dropped (ISO 8601)", None)
    process: dict[str, Any] = field("host, pid and service of the dropping process", factory=dict)


@dataclass(frozen=True)
class RetentionApplied:
    """Whole months of runs dropped from the log by ``agentdocket retention``: what went, and
    under which window. Lives in a trace of its own, like ``telemetry.dropped``."""

    KIND: ClassVar[str] = "retention.applied"
    VERSION: ClassVar[int] = 1

    keep: str = field("the window kept, as given: 90d")
    window_start: str = field("runs that started before the month of this time went (ISO 8601)")
    months: list[dict[str, Any]] = field(
        "each month dropped: month (YYYY-MM) and the rows that went with it, by table"
    )
    refused: list[dict[str, Any]] = field(
        "months past the window kept because runs in them are newer than the window",
        factory=list,
    )
    process: dict[str, Any] = field("host, pid and user of the process", factory=dict)


@dataclass(frozen=True)
class Label:
    """A person's judgement of a run (or one step of it) under a rubric: a user's thumbs-down
    from production, an annotator's answer in a queue, a label given on the command line.

    Stored in the trace of the run it is about, like a verdict; never overwritten: a later
    label by the same author on the same subject and rubric supersedes an earlier one, and
    both are kept. A skip (``skipped`` set, ``value`` empty) says the author passed on the item.
    """

    KIND: ClassVar[str] = "label"
    VERSION: ClassVar[int] = 1

    label_id: str = field("the label's own id: the same id sent twice is stored once")
    subject_trace_id: str = field("the run labelled")
    rubric: str = field("the rubric answered, e.g. helpful")
    author: str = field("who labelled: an annotator's name, or the application's user id")
    source: Literal["api", "cli", "tracer", "queue"] = field(
        "the way in: POST /v1/feedback, agentdocket feedback add, the tracer, an annotation queue"
    )
    value: bool | int | float | str | None = field(
        "the answer: true/false (pass/fail), a category, a number on the scale, or a text", None
    )
    subject_span_id: str | None = field("the step labelled, when the label is about one", None)
    rubric_version: str | None = field("the rubric's version, when it is a registered one", None)
    comment: str | None = field("the author's words", None)
    queue: str | None = field("the annotation queue the label was given in", None)
    skipped: str | None = field("why the author skipped the item (then there is no value)", None)

    def __post_init__(self) -> None:
        if self.skipped is None and self.value is None:
            raise ValueError("a label needs a value, or a reason it was skipped")


PAYLOAD_TYPES: dict[str, type] = {
    cls.KIND: cls
    for cls in (
        RunStarted,
        Plan,
        ToolCalled,
        ToolReturned,
        SqlExecuted,
        Retrieval,
        LlmCalled,
        LlmMessages,
        Message,
        Response,
        RunFinished,
        GenericStep,
        Verdict,
        Label,
        TelemetryDropped,
        RetentionApplied,
    )
}
KINDS = tuple(PAYLOAD_TYPES)
# Kinds about the pipeline and the log themselves: stored, but not part of any run.
PIPELINE_KINDS = frozenset({"telemetry.dropped", "retention.applied"})
# Kinds that judge a run rather than tell what it did: in its trace, outside its counts.
JUDGEMENT_KINDS = frozenset({"verdict", "label"})
STEP_KINDS = frozenset(KINDS) - {"run.started", "run.finished"} - JUDGEMENT_KINDS - PIPELINE_KINDS
