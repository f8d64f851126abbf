"""The event log role's contract, one abstract test case subclassed per backend."""

from __future__ import annotations

import random
from datetime import date

from agentdocket.store import Store
from agentdocket.store.months import month_of
from tests.helpers.factory import run_events, verdict_event
from tests.helpers.roles import OnADatabase, OnCitus, OnPostgres, OnSqlite


class EventLogContract(OnADatabase):
    """Events inserted once each and read back whole; the runs' months kept."""

    def test_events_are_inserted_once_and_read_back_whole(self, store: Store) -> None:
        log, db = store.roles.log, store.recorder
        events = run_events(random.Random(30))
        months = {events[0].trace_id: month_of(events[0].ts)}
        store.roles.months.ensure_partitions(set(months.values()))
        with db.write() as conn:
            inserted, projection = log.insert_events(conn, events, months)
            assert log.stored_months(conn, [events[0].trace_id]) == {}  # not recorded yet
            log.keep_months(conn, months)
            # a trace recorded before keeps its month
            log.keep_months(conn, {events[0].trace_id: date(2030, 1, 1)})
            assert log.stored_months(conn, [events[0].trace_id, "f" * 32]) == months
        with db.write() as conn:
            again, _ = log.insert_events(conn, events, months)
        assert (inserted, again) == (len(events), 0)
        assert projection.runs  # the batch's run, projected as it was inserted
        rows = db.read(
            "SELECT event_id, trace_id, span_id, parent_span_id, seq, ts, kind, schema_version, "
            "payload FROM events ORDER BY seq"
        )
        assert [db.event_of(r) for r in rows] == sorted(events, key=lambda e: e.seq)

    def test_a_batch_of_traces_is_read_back_in_trace_order(self, store: Store) -> None:
        rng = random.Random(32)
        runs = [run_events(rng) for _ in range(3)]
        store.append([e for run in runs for e in run])
        ids = sorted(run[0].trace_id for run in runs)
        months = sorted({month_of(run[0].ts) for run in runs})
        read = store.roles.log.scoring_events(ids, None, months)
        assert read == sorted(
            (e for run in runs for e in run), key=lambda e: (e.trace_id, e.seq, e.ts, e.event_id)
        )
        only = store.roles.log.scoring_events(ids[:1], {"response"}, months)
        assert [e.kind for e in only] == ["response"] and only[0].trace_id == ids[0]

    def test_verdict_keys_name_what_a_scorer_version_gave(self, store: Store) -> None:
        events = run_events(random.Random(33))
        trace = events[0].trace_id
        store.append([*events, verdict_event(events, "s", "1")])
        keys = store.roles.log.verdict_keys("s", "1", [trace, "0" * 32])
        assert keys == {(trace, "h-1")}
        assert store.roles.log.verdict_keys("s", "2", [trace]) == set()
        assert store.roles.log.verdict_keys("s", "1", []) == set()

    def test_a_rebuild_lock_lets_the_rebuild_write(self, store: Store) -> None:
        with store.recorder.write() as conn:
            store.roles.log.lock_for_rebuild(conn)
            assert store.recorder.read_on(conn, "SELECT count(*) FROM runs") == [(0,)]

    def test_unique_keys_are_the_tables_unique_constraints(self, store: Store) -> None:
        """What the projections' upserts name as their conflict targets: each is a unique key
        of its table (an upsert on anything else fails)."""
        log = store.roles.log
        assert log.unique_key("runs")[0] == "trace_id"
        assert "event_id" in log.unique_key("events") and "verdict_id" in log.unique_key("verdicts")
        events = run_events(random.Random(34))
        store.append(events)
        store.append(events)  # the upserts' conflict targets work: nothing twice
        assert store.reader.counts()["runs"] == 1


class TestSqliteEventLog(EventLogContract, OnSqlite):
    pass


class TestPostgresEventLog(EventLogContract, OnPostgres):
    pass


class TestCitusEventLog(EventLogContract, OnCitus):
    pass
