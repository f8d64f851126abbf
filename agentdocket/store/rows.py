"""The rows the store's parts return, typed.

Each is a ``TypedDict``: a plain dictionary at run time (what ``--format json`` prints and a
Parquet export writes, column for column), whose keys and value types a type checker knows.
The contract suite checks on every backend that a row holds exactly the keys declared here.
Times are ``datetime`` (UTC), JSON columns decoded.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypedDict, TypeVar, cast


class Run(TypedDict):
    """A row of the ``runs`` projection: one run, identified by its trace id."""

    trace_id: str
    agent: str | None
    agent_version: str | None
    strategy: str | None
    models: dict[str, str] | None
    question: str | None
    dataset: str | None
    dataset_version: str | None
    case_id: str | None
    attributes: dict[str, Any] | None
    status: str | None
    error: str | None
    started_at: datetime | None
    ended_at: datetime | None
    first_ts: datetime | None
    last_ts: datetime | None
    n_events: int
    n_steps: int
    n_errors: int
    n_plans: int
    n_tool_calls: int
    n_sql: int
    n_retrievals: int
    n_llm_calls: int
    n_messages: int
    n_responses: int
    n_other_steps: int
    run_month: str | None
    answer: str | None


class Session(TypedDict):
    """A conversation: the runs that share a conversation id, read from the ``runs``
    projection (:mod:`agentdocket.store.sessions`)."""

    session_id: str
    agent: str | None
    turns: int
    errors: int  # turns that ended in an error
    running: int  # turns not finished yet
    status: str  # error (a turn failed), running (a turn has not ended), else ok
    first_question: str | None
    last_answer: str | None
    started_at: datetime | None
    ended_at: datetime | None
    first_ts: datetime | None
    last_ts: datetime | None


class CaseRun(TypedDict):
    """A run of a dataset as comparisons select and pair it."""

    trace_id: str
    case_id: str | None
    agent: str | None
    agent_version: str | None
    status: str | None
    error: str | None
    attributes: dict[str, Any] | None


class DatasetVersion(TypedDict):
    """One stored version of a dataset (its cases are read with ``datasets.get``)."""

    name: str
    version: str
    description: str | None
    content_hash: str
    n_cases: int
    created_at: datetime


class DeadLetterRow(TypedDict):
    """A kept dead letter and whether its event has since reached the log."""

    letter_id: str
    event_id: str | None
    trace_id: str | None
    received_at: datetime
    source: str
    error: str
    code: str | None
    raw: str
    resolved: bool


class VerdictRow(TypedDict):
    """A stored verdict (any version) with its run's dataset, case, agent and strategy: what
    ``export verdicts`` writes."""

    verdict_id: str
    trace_id: str
    subject_span_id: str | None  # a step verdict's span; None: the run as a whole
    dataset: str | None
    case_id: str | None
    agent: str | None
    agent_version: str | None
    strategy: str | None
    scorer: str
    scorer_version: str
    passed: bool | None
    score: float | None
    label: str | None
    failure_type: str | None
    rationale: str | None
    details: dict[str, Any] | None
    input_hash: str | None
    judge_trace_id: str | None
    ts: datetime


RowT = TypeVar("RowT", Run, CaseRun, DatasetVersion, DeadLetterRow, VerdictRow)


def typed(kind: type[RowT], row: Mapping[str, Any]) -> RowT:
    """``row`` as a ``kind``: its declared columns, in declared order (a column the database
    has and the type does not declare, such as a projection's own bookkeeping, is left out)."""
    return cast(RowT, {name: row[name] for name in kind.__annotations__})
