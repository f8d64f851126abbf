"""Projections of the event log: pure functions from events to rows of ``runs`` and ``verdicts``.

Every merge rule here is commutative and associative (sums, minima, maxima, "the first non-null
wins"), so the rows do not depend on how events were split into batches or in which order batches
arrived. The SQL upsert in the store applies the same rules across batches; ``agentdocket rebuild``
replays the whole log through this same code. (``steps`` is a view over ``events``: always
current, nothing to rebuild.)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from agentdocket.events import PIPELINE_KINDS, Event
from agentdocket.events.readings import Candidate, answer_candidate, best, question_candidate

# Counters kept per run, by event kind.
COUNTERS = {
    "plan": "n_plans",
    "tool.called": "n_tool_calls",
    "sql.executed": "n_sql",
    "retrieval": "n_retrievals",
    "llm.called": "n_llm_calls",
    "message": "n_messages",
    "response": "n_responses",
    "step": "n_other_steps",
}


@dataclass(slots=True)
class RunRow:
    trace_id: str
    agent: str | None = None
    agent_version: str | None = None
    strategy: str | None = None
    models: dict[str, str] | None = None
    question: str | None = None
    answer: str | None = None
    dataset: str | None = None
    dataset_version: str | None = None
    case_id: str | None = None
    attributes: dict[str, Any] | None = None
    status: str | None = None
    error: str | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    first_ts: datetime | None = None
    last_ts: datetime | None = None
    n_events: int = 0
    n_steps: int = 0
    n_errors: int = 0
    n_plans: int = 0
    n_tool_calls: int = 0
    n_sql: int = 0
    n_retrievals: int = 0
    n_llm_calls: int = 0
    n_messages: int = 0
    n_responses: int = 0
    n_other_steps: int = 0
    # the sort keys of the question's and the answer's candidates (agentdocket.events.readings)
    question_key: str | None = None
    answer_key: str | None = None


RUN_COLUMNS = tuple(f.name for f in fields(RunRow))
# set by run.started; first non-null wins
RUN_IDENTITY = (
    "agent",
    "agent_version",
    "strategy",
    "models",
    "dataset",
    "dataset_version",
    "case_id",
    "attributes",
)
# (value, key) pairs: the value whose key is smallest wins (agentdocket.events.readings)
RUN_READINGS = (("question", "question_key"), ("answer", "answer_key"))
RUN_COUNTS = tuple(c for c in RUN_COLUMNS if c.startswith("n_"))


@dataclass(slots=True)
class VerdictRow:
    verdict_id: str
    trace_id: str
    subject_span_id: str | None
    scorer: str
    scorer_version: str
    input_hash: str
    passed: bool | None
    score: float | None
    label: str | None
    failure_type: str | None
    rationale: str | None
    details: dict[str, Any]
    judge_trace_id: str | None
    ts: datetime


VERDICT_COLUMNS = tuple(f.name for f in fields(VerdictRow))
# An llm.called event with this attribute is a judge's call (see agentdocket.scorers.judges).
JUDGE_CACHE_KEY = "judge_cache_key"


@dataclass(slots=True)
class JudgeCallRow:
    cache_key: str
    trace_id: str
    event_id: str
    model: str
    temperature: float | None
    sample: int
    reply: str
    ts: datetime


JUDGE_CALL_COLUMNS = tuple(f.name for f in fields(JudgeCallRow))


@dataclass
class Projection:
    """Rows produced by a set of events, merged within the set."""

    runs: dict[str, RunRow] = field(default_factory=dict)
    verdicts: list[VerdictRow] = field(default_factory=list)
    judge_calls: list[JudgeCallRow] = field(default_factory=list)


def _first(a: Any, b: Any) -> Any:
    return a if a is not None else b


def _min(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else min(a, b)


def _max(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else max(a, b)


def _absorb(row: RunRow, event: Event) -> None:
    """Count one event into its run's row, in place."""
    ts = event.ts
    if row.first_ts is None or ts < row.first_ts:
        row.first_ts = ts
    if row.last_ts is None or ts > row.last_ts:
        row.last_ts = ts
    row.n_events += 1
    p = event.payload
    kind = event.kind
    if kind == "run.started":
        if row.agent is None:
            row.agent = p["agent"]
            row.agent_version = p.get("agent_version")
            row.strategy = p.get("strategy")
            row.models = p.get("models") or {}
            row.dataset = p.get("dataset")
            row.dataset_version = p.get("dataset_version")
            row.case_id = p.get("case_id")
            row.attributes = p.get("attributes") or {}
        row.started_at = _min(row.started_at, ts)
    elif kind == "run.finished":
        if row.status is None:
            row.status = p["status"]
            row.error = p.get("error")
        row.ended_at = _max(row.ended_at, ts)
    if kind in READING_KINDS:
        _read_question_and_answer(row, event)
    counter = COUNTERS.get(kind)
    if counter:
        setattr(row, counter, getattr(row, counter) + 1)
        row.n_steps += 1
    if _step_error(kind, p) is not None:
        row.n_errors += 1


READING_KINDS = frozenset({"run.started", "llm.called", "llm.messages", "response"})


def _read_question_and_answer(row: RunRow, event: Event) -> None:
    held = Candidate(row.question_key, row.question) if row.question_key is not None else None
    found = best(held, question_candidate(event))
    if found is not None:
        row.question_key, row.question = found
    held = Candidate(row.answer_key, row.answer) if row.answer_key is not None else None
    found = best(held, answer_candidate(event))
    if found is not None:
        row.answer_key, row.answer = found


def _step_error(kind: str, p: Any) -> str | None:
    if kind in ("tool.returned", "sql.executed", "llm.called", "step"):
        error: str | None = p.get("error")
        if error is None and kind == "step" and p.get("status") == "error":
            return "error"
        return error
    return None


def _verdict_row(event: Event) -> VerdictRow:
    p = event.payload
    return VerdictRow(
        verdict_id=str(event.event_id),
        trace_id=p["subject_trace_id"],
        subject_span_id=p.get("subject_span_id"),
        scorer=p["scorer"],
        scorer_version=p["scorer_version"],
        input_hash=p["input_hash"],
        passed=p.get("passed"),
        score=p.get("score"),
        label=p.get("label"),
        failure_type=p.get("failure_type"),
        rationale=p.get("rationale"),
        details=p.get("details") or {},
        judge_trace_id=p.get("judge_trace_id"),
        ts=event.ts,
    )


def _judge_call_row(event: Event) -> JudgeCallRow | None:
    """The cache row of a judge's call; a failed call (no reply) is not cached."""
    p = event.payload
    if p.get("error") is not None or not p.get("output_messages"):
        return None
    attributes = p["attributes"]
    return JudgeCallRow(
        cache_key=str(attributes[JUDGE_CACHE_KEY]),
        trace_id=event.trace_id,
        event_id=str(event.event_id),
        model=p["model"],
        temperature=p.get("temperature"),
        sample=int(attributes.get("sample", 0)),
        reply=p["output_messages"][-1]["content"],
        ts=event.ts,
    )


def project(events: Iterable[Event]) -> Projection:
    """The projection rows of newly appended events (each event counted once)."""
    out = Projection()
    runs = out.runs
    for event in events:
        kind = event.kind
        if kind == "verdict":
            # a judgement about the run, not part of what the agent did: it leaves the run's
            # row (its times and counts) alone
            out.verdicts.append(_verdict_row(event))
            continue
        if kind in PIPELINE_KINDS or kind == "label":
            # a person's label judges the run as a verdict does (read from the log itself,
            # see agentdocket.store.labels): no row of its own here, no count in the run's
            continue
        if kind == "llm.called" and JUDGE_CACHE_KEY in (event.payload.get("attributes") or {}):
            # a judge's call: it belongs to the judging, not to a run of the agent
            judged = _judge_call_row(event)
            if judged is not None:
                out.judge_calls.append(judged)
            continue
        run = runs.get(event.trace_id)
        if run is None:
            run = runs[event.trace_id] = RunRow(event.trace_id)
        _absorb(run, event)
    return out
