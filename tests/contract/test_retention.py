"""Retention: whole months past the window leave the log, and nothing else does."""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agentdocket.events import Event, GenericStep, LlmCalled
from agentdocket.events.payloads import ChatMessage
from agentdocket.store import Store
from agentdocket.store.projections import JUDGE_CACHE_KEY
from tests.helpers.factory import run_events, verdict_event
from tests.helpers.fresh import EVERY, fresh_url


@pytest.fixture(params=EVERY)
def url(request: pytest.FixtureRequest) -> str:
    """Each kind of database, a Citus cluster's too."""
    return fresh_url(request)


NOW = datetime(2026, 7, 15, 12, tzinfo=UTC)  # keep 90d: the window starts on 16 April
STARTS = {  # month -> run starts
    "2026-01": [datetime(2026, 1, 5, tzinfo=UTC), datetime(2026, 1, 31, 23, 59, 59, tzinfo=UTC)],
    "2026-02": [datetime(2026, 2, 10, tzinfo=UTC)],
    "2026-03": [datetime(2026, 3, 2, tzinfo=UTC), datetime(2026, 3, 20, tzinfo=UTC)],
    "2026-04": [datetime(2026, 4, 1, tzinfo=UTC)],
    "2026-06": [datetime(2026, 6, 30, tzinfo=UTC)],
}
TABLES = ("events", "runs", "verdicts", "judge_calls")


def _judge_call(trace_id: str, when: datetime, key: str) -> Event:
    return Event.create(
        trace_id=trace_id,
        span_id="00000000000000f1",
        seq=0,
        ts=when,
        payload=LlmCalled(
            model="judge-model",
            input_messages=[ChatMessage(role="user", content="judge this")],
            output_messages=[ChatMessage(role="assistant", content="pass")],
            attributes={JUDGE_CACHE_KEY: key, "sample": 0},
        ),
    )


def _seed(store: Store) -> dict[str, list[str]]:
    """Runs by month, each judged once; a judge's call in February; a March run with a
    late event inside the window. Returns the run trace ids by month."""
    rng = random.Random(21)
    traces: dict[str, list[str]] = {}
    for month, starts in STARTS.items():
        for start in starts:
            events = run_events(rng, start=start)
            events.append(verdict_event(events, when=start + timedelta(hours=2)))
            store.append(events)
            traces.setdefault(month, []).append(events[0].trace_id)
    judge_trace = f"{rng.getrandbits(128):032x}"
    store.append([_judge_call(judge_trace, datetime(2026, 2, 11, tzinfo=UTC), "k-feb")])
    store.append([_judge_call(f"{rng.getrandbits(128):032x}", NOW, "k-now")])
    late = Event.create(
        trace_id=traces["2026-03"][1],
        span_id="00000000000000aa",
        seq=50,
        ts=datetime(2026, 5, 2, tzinfo=UTC),
        payload=GenericStep(name="follow-up"),
    )
    store.append([late])
    traces["judge-feb"] = [judge_trace]
    return traces


def _state(store: Store) -> dict[str, Any]:
    """What each table holds, by trace."""
    rows = {
        table: Counter(r["trace_id"] for r in store.reader.rows(table, "trace_id"))
        for table in ("events", "runs", "verdicts")
    }
    rows["judge_calls"] = Counter(
        r["cache_key"] for r in store.reader.rows("judge_calls", "cache_key")
    )
    return rows


def test_a_dry_run_says_what_would_go_and_changes_nothing(store: Store) -> None:
    traces = _seed(store)
    before = _state(store)
    plan = store.retention.plan("90d", now=NOW)
    assert plan.window_start == NOW - timedelta(days=90)
    assert [m.label for m in plan.drop] == ["2026-01", "2026-02"]
    assert [(m.label, m.newer_runs) for m in plan.refused] == [("2026-03", 1)]
    january, february = plan.drop
    events = before["events"]
    assert january.rows == {
        "events": sum(events[t] for t in traces["2026-01"]),
        "runs": 2,
        "verdicts": 2,
        "judge_calls": 0,
    }
    assert february.rows == {
        "events": sum(events[t] for t in traces["2026-02"] + traces["judge-feb"]),
        "runs": 1,
        "verdicts": 1,
        "judge_calls": 1,
    }
    assert _state(store) == before
    assert store.reader.counts()["events"] == sum(before["events"].values())


def test_retention_drops_exactly_the_runs_of_the_months_past_the_window(store: Store) -> None:
    traces = _seed(store)
    before = _state(store)
    gone = set(traces["2026-01"] + traces["2026-02"] + traces["judge-feb"])
    applied = store.retention.apply(store.retention.plan("90d", now=NOW))
    assert [m.label for m in applied.dropped] == ["2026-01", "2026-02"]
    assert [m.label for m in applied.refused] == ["2026-03"]
    after = _state(store)
    records = [
        e for e in store.reader.events(applied.trace_id or "") if e.kind == "retention.applied"
    ]
    # everything else is as it was, plus the record of what went
    for table in ("events", "runs", "verdicts"):
        kept = {t: n for t, n in before[table].items() if t not in gone}
        if table == "events":
            kept[applied.trace_id or ""] = len(records)
        assert dict(after[table]) == kept, table
    assert dict(after["judge_calls"]) == {"k-now": 1}
    # the log says what went, month by month, by table
    assert [r.payload["months"][0]["month"] for r in records] == ["2026-01", "2026-02"]
    assert [r.payload["months"][0]["events"] for r in records] == [
        sum(before["events"][t] for t in traces["2026-01"]),
        sum(before["events"][t] for t in traces["2026-02"] + traces["judge-feb"]),
    ]
    assert records[0].payload["refused"][0]["month"] == "2026-03"
    assert store.reader.run(traces["2026-01"][0]) is None
    # the traces' months went with them; the kept traces keep theirs
    months = {t: m for t, m in store.recorder.read("SELECT trace_id, run_month FROM trace_months")}
    assert not gone & months.keys()
    assert set(traces["2026-03"]) <= months.keys()
    # nothing more to drop under the same window; a shorter one takes March with its late run
    again = store.retention.plan("90d", now=NOW)
    assert again.drop == [] and [m.label for m in again.refused] == ["2026-03"]
    shorter = store.retention.plan("30d", now=NOW).drop  # (PostgreSQL: May, empty, too)
    assert [m.label for m in shorter if m.rows["events"]] == ["2026-03", "2026-04"]


@pytest.mark.postgres
def test_postgres_drops_the_months_partitions_and_their_rollups(server_url: str) -> None:
    from agentdocket import dashboards
    from agentdocket.store import open_store

    def hours(store: Store) -> dict[str, int]:
        rows = store.recorder.read(
            "SELECT to_char(hour, 'YYYY-MM'), sum(runs) FROM rollup_runs GROUP BY 1"
        )
        return {str(m): int(n) for m, n in rows}

    with open_store(server_url, derived=dashboards.objects()) as store:
        _seed(store)
        store.projections.refresh_dashboards()
        before = hours(store)
        assert before == {"2026-01": 2, "2026-02": 1, "2026-03": 2, "2026-04": 1, "2026-06": 1}
        store.retention.apply(store.retention.plan("90d", now=NOW))
        # the dropped months' hours are gone from the rollups, the others as they were
        assert hours(store) == {m: n for m, n in before.items() if m >= "2026-03"}
        [(stale,)] = store.recorder.read("SELECT count(*) FROM rollup_stale")
        assert stale == 0
        [(names,)] = store.recorder.read(
            "SELECT array_agg(c.relname::text ORDER BY c.relname) FROM pg_inherits i "
            "JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'events'::regclass "
            "AND c.relname < 'events_2026_05'"
        )
    assert names == ["events_2026_03", "events_2026_04"]


def test_a_month_that_became_newer_after_the_plan_is_kept(store: Store) -> None:
    traces = _seed(store)
    plan = store.retention.plan("90d", now=NOW)
    assert [m.label for m in plan.drop] == ["2026-01", "2026-02"]
    late = Event.create(
        trace_id=traces["2026-01"][0],
        span_id="00000000000000bb",
        seq=60,
        ts=NOW - timedelta(days=1),
        payload=GenericStep(name="came back"),
    )
    store.append([late])
    applied = store.retention.apply(plan)
    assert [m.label for m in applied.dropped] == ["2026-02"]
    assert [(m.label, m.newer_runs) for m in applied.refused] == [
        ("2026-03", 1),
        ("2026-01", 1),
    ]
    assert store.reader.run(traces["2026-01"][0]) is not None
