"""The store contract, run against real SQLite and real PostgreSQL alike."""

from __future__ import annotations

import random
import sqlite3
from datetime import datetime, timedelta
from typing import Any

import psycopg
import pytest

from agentdocket.events import Case, Dataset, ExpectedCall
from agentdocket.store import (
    CaseRun,
    DatasetConflict,
    DatasetVersion,
    DeadLetter,
    DeadLetterRow,
    Run,
    Store,
    StoreError,
    VerdictRow,
    open_store,
)
from tests.helpers.db import projections
from tests.helpers.factory import T0, many_runs, run_events, verdict_event
from tests.helpers.fresh import EVERY, fresh_url


@pytest.fixture(params=EVERY)
def url(request: pytest.FixtureRequest) -> str:
    """Each kind of database, a Citus cluster's too."""
    return fresh_url(request)


def test_append_and_read_back(store: Store) -> None:
    events = run_events(random.Random(1), fail=True)
    result = store.append(events)
    assert (result.inserted, result.duplicates) == (len(events), 0)
    stored = store.reader.events(events[0].trace_id)
    assert stored == sorted(events, key=lambda e: e.seq)
    trace = store.reader.read_trace(events[0].trace_id)
    assert trace is not None and trace.status == "error"
    assert trace.tool_calls()[1].error == "timeout"


def test_resent_events_add_nothing(store: Store) -> None:
    events = many_runs(20)
    store.append(events[:100])
    before = projections(store)
    again = store.append(events[:100])
    assert (again.inserted, again.duplicates) == (0, 100)
    assert projections(store) == before
    # a batch mixing stored and new events adds exactly the new ones
    mixed = store.append(events[50:] + events[50:60])
    assert mixed.inserted == len(events) - 100
    assert store.reader.counts()["events"] == len(events)


def test_runs_projection(store: Store) -> None:
    events = run_events(random.Random(2), fail=True, strategy="iterative")
    store.append(events)
    run = store.reader.run(events[0].trace_id)
    assert run is not None
    assert (run["agent"], run["agent_version"], run["strategy"]) == ("agent-a", "1.0", "iterative")
    assert run["models"] == {"planner": "m-plan", "response_former": "m-resp"}
    assert (run["dataset"], run["case_id"], run["status"]) == ("ds", "c1", "error")
    assert run["started_at"] == events[0].ts and run["ended_at"] == events[-1].ts
    assert run["n_events"] == len(events)
    assert (
        run["n_plans"],
        run["n_tool_calls"],
        run["n_sql"],
        run["n_retrievals"],
        run["n_llm_calls"],
        run["n_messages"],
        run["n_responses"],
    ) == (1, 2, 1, 1, 1, 2, 1)
    assert run["n_steps"] == 9  # tool.returned completes its call, it is not a step of its own
    assert run["n_errors"] == 1


def test_steps_view_joins_tool_calls_with_their_returns(store: Store) -> None:
    events = run_events(random.Random(3), fail=True)
    store.append(events[:3])  # run.started, plan, the first tool.called only
    steps = projections(store)["steps"]
    assert [(s["kind"], s["name"], s["status"]) for s in steps] == [
        ("plan", None, "ok"),
        ("tool", "sql", None),
    ]
    store.append(events)
    steps = projections(store)["steps"]
    tools = [
        (s["name"], s["status"], s["error"], s["duration_ms"], s["call_id"])
        for s in steps
        if s["kind"] == "tool"
    ]
    assert tools == [
        ("sql", "ok", None, 1.5, "call-0"),
        ("search", "error", "timeout", 2.5, "call-1"),
    ]
    assert [s["kind"] for s in steps] == [
        "plan",
        "tool",
        "tool",
        "sql",
        "retrieval",
        "llm",
        "message",
        "message",
        "response",
    ]


def test_rebuild_equals_incremental_projections(store: Store) -> None:
    events = many_runs(60, seed=5)
    rng = random.Random(9)
    shuffled = events[:]
    rng.shuffle(shuffled)  # arrival order differs from trace order; batches split runs
    for start in range(0, len(shuffled), 37):
        store.append(shuffled[start : start + 37])
    incremental = projections(store)
    assert len(incremental["runs"]) == 60 and len(incremental["verdicts"]) == 20
    assert store.projections.rebuild(batch_size=101) == len(events)
    assert projections(store) == incremental


def test_event_log_refuses_update_and_delete(store: Store) -> None:
    store.append(run_events(random.Random(4)))
    conn: Any = store.recorder.connection
    refused = (psycopg.Error, sqlite3.DatabaseError)
    for statement in ("UPDATE events SET seq = seq + 1", "DELETE FROM events"):
        with pytest.raises(refused, match="append-only"):
            conn.execute(statement)
    # TRUNCATE (PostgreSQL's alone): tests/contract/test_partitions.py
    assert store.reader.counts()["events"] == 13


def test_verdicts_keep_every_version_and_latest_is_selectable(store: Store) -> None:
    events = run_events(random.Random(6))
    store.append(events)
    before = store.reader.run(events[0].trace_id)
    v1 = verdict_event(events, version="1", passed=False, when=T0)
    v2 = verdict_event(events, version="2", passed=True, when=T0 + timedelta(minutes=1))
    store.append([v1, v2, v1])
    rows = store.reader.rows("verdicts", "scorer_version")
    assert [(r["scorer_version"], r["passed"], r["failure_type"]) for r in rows] == [
        ("1", False, "planner:wrong_plan"),
        ("2", True, None),
    ]
    latest = store.reader.rows("verdicts_latest", "scorer_version")
    assert len(latest) == 2  # one per (run, scorer, version)
    # a verdict judges the run; it does not change what the run did (its times, its counts)
    assert store.reader.run(events[0].trace_id) == before
    assert [v.scorer_version for v in store.reader.read_trace(events[0].trace_id).verdicts()] == [
        "1",
        "2",
    ]  # type: ignore[union-attr]


def test_datasets_are_immutable_per_version(store: Store) -> None:
    cases = (
        Case(
            case_id="c1",
            question="q?",
            expected_plan=["sql"],
            expected_calls=[ExpectedCall(tool="sql", arguments={"q": "x"})],
            reference_answer="4",
        ),
        Case(case_id="c2", question="r?", question_type="interpretive"),
    )
    ds = Dataset("ds", "1", cases)
    assert store.datasets.register(ds) is True
    assert store.datasets.register(ds) is False  # identical: nothing to do
    changed = Dataset("ds", "1", (cases[0], Case(case_id="c2", question="other")))
    with pytest.raises(DatasetConflict, match="immutable"):
        store.datasets.register(changed)
    store.datasets.register(Dataset("ds", "2", (cases[0],)))
    assert store.datasets.get("ds", "1") == ds
    assert store.datasets.latest_version("ds") == "2"
    with pytest.raises(StoreError, match="duplicate case ids c1"):
        store.datasets.register(Dataset("dup", "1", (cases[0], cases[0])))
    conn: Any = store.recorder.connection
    with pytest.raises((psycopg.Error, sqlite3.DatabaseError), match="refused"):
        conn.execute("UPDATE cases SET question_type = 'conclusive'")


def test_traces_come_with_their_cases_in_batches(store: Store) -> None:
    cases = tuple(Case(case_id=f"c{i}", expected_plan=["sql", "search"]) for i in range(7))
    store.datasets.register(Dataset("ds", "1", cases))
    events = many_runs(25, seed=2)
    store.append(events)
    batches = list(store.scoring.batches(dataset="ds", batch_size=10))
    assert [len(b) for b in batches] == [10, 10, 5]
    for trace in (t for b in batches for t in b):
        assert trace.case is not None
        assert trace.started is not None and trace.case.case_id == trace.started.case_id
    assert list(store.scoring.batches(dataset="elsewhere")) == []


def test_fresh_database_is_migrated_on_first_use(bare_url: str) -> None:
    with open_store(bare_url) as store:
        assert store.reader.counts()["events"] == 0


def test_rows_hold_exactly_their_declared_columns(store: Store) -> None:
    """Each typed row (agentdocket.store.rows) holds the columns its query gives, no fewer,
    no more (a run's row leaves out only the projection's own bookkeeping), with the types
    declared."""
    events = run_events(random.Random(11), dataset="ds", case_id="c1")
    store.datasets.register(Dataset("ds", "1", (Case("c1", "q?"),)))
    store.append([*events, verdict_event(events)])
    store.dead_letters.keep([DeadLetter.of_raw('{"x": 1}', "refused", "test")])
    tid = events[0].trace_id

    def raw(sql: str) -> set[str]:
        return set(next(store.recorder.dicts(sql)))

    run = store.reader.run(tid)
    assert run is not None and list(run) == list(Run.__annotations__)
    assert raw("SELECT * FROM runs") - set(run) == {"question_key", "answer_key"}
    assert isinstance(run["started_at"], datetime) and isinstance(run["n_tool_calls"], int)
    assert store.reader.list_runs() == [run]
    [case_run] = store.scoring.case_runs("ds")
    assert list(case_run) == list(CaseRun.__annotations__) and case_run["case_id"] == "c1"
    [version] = store.datasets.versions()
    assert list(version) == list(DatasetVersion.__annotations__)
    assert set(version) == raw("SELECT * FROM datasets") and version["n_cases"] == 1
    [letter] = store.dead_letters.letters()
    assert list(letter) == list(DeadLetterRow.__annotations__) and letter["resolved"] is False
    assert set(letter) == raw("SELECT * FROM dead_letters_state")
    [verdict] = store.scoring.verdict_export_rows()
    assert list(verdict) == list(VerdictRow.__annotations__)
    assert verdict["passed"] is True and verdict["details"] == {"extra_steps": 0}


def test_a_sibling_is_the_same_database_on_a_connection_of_its_own(store: Store) -> None:
    """What serve hands a service that works in a thread of its own: the database, the
    redaction and the limits of the store it came from, on a connection of its own."""
    sibling = store.sibling()
    try:
        assert sibling.url == store.url
        assert (sibling.redactor, sibling.limits) == (store.redactor, store.limits)
        assert sibling.recorder.connection is not store.recorder.connection
        events = run_events(random.Random(7))
        sibling.append(events)
        assert store.reader.events(events[0].trace_id) == sorted(events, key=lambda e: e.seq)
    finally:
        sibling.close()
