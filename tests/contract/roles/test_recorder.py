"""The recorder's contract, one abstract test case subclassed per backend (as eventsourcing's
recorders are tested): a new backend is a recorder subclass and a subclass here. And the
mapping of every error each driver can raise into the store's one tree."""

from __future__ import annotations

import random
import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Iterator
from datetime import UTC, date, datetime

import psycopg
import psycopg.errors
import pytest

from agentdocket.store import open_store
from agentdocket.store.backends import backend_of
from agentdocket.store.backends.postgres.errors import classify as classify_postgres
from agentdocket.store.backends.sqlite import classify as classify_sqlite
from agentdocket.store.errors import RecordRefused, StoreError, StoreUnavailable, WriteConflict
from agentdocket.store.months import month_of
from agentdocket.store.recorder import Recorder
from tests.helpers.factory import run_events

AT = datetime(2026, 11, 25, 12, 30, 15, 123456, tzinfo=UTC)


class RecorderContract(ABC):
    """What every recorder does, whatever the database behind it."""

    @abstractmethod
    def url(self, request: pytest.FixtureRequest) -> str:
        """A fresh, migrated database of this backend."""

    @pytest.fixture
    def recorder(self, request: pytest.FixtureRequest) -> Iterator[Recorder]:
        store = open_store(self.url(request))
        yield store.recorder
        store.close()

    def _letter(self, recorder: Recorder, letter_id: str) -> list[object]:
        return [
            letter_id,
            None,
            None,
            recorder.to_db("received_at", AT),
            "contract",
            "why",
            None,
            "{}",
        ]

    INSERT = (
        "INSERT INTO dead_letters (letter_id, event_id, trace_id, received_at, source, error, "
        "code, raw) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
    )

    def test_a_write_commits_and_a_failing_one_leaves_nothing(self, recorder: Recorder) -> None:
        with recorder.write() as conn:
            assert recorder.execute(conn, self.INSERT, self._letter(recorder, "a")) == 1
        with pytest.raises(RuntimeError), recorder.write() as conn:
            recorder.execute(conn, self.INSERT, self._letter(recorder, "b"))
            raise RuntimeError("the caller's failure")
        assert recorder.read("SELECT letter_id FROM dead_letters ORDER BY letter_id") == [("a",)]

    def test_a_savepoint_isolates_a_refused_row(self, recorder: Recorder) -> None:
        with recorder.write() as conn:
            recorder.execute(conn, self.INSERT, self._letter(recorder, "a"))
            with pytest.raises(RecordRefused), recorder.savepoint(conn):
                recorder.execute(conn, self.INSERT, self._letter(recorder, "a"))  # its key again
            recorder.execute(conn, self.INSERT, self._letter(recorder, "c"))
        rows = recorder.read("SELECT letter_id FROM dead_letters ORDER BY letter_id")
        assert rows == [("a",), ("c",)]

    def test_values_round_trip_through_their_columns(self, recorder: Recorder) -> None:
        with recorder.write() as conn:
            recorder.execute(conn, self.INSERT, self._letter(recorder, "a"))
        [row] = recorder.dicts("SELECT letter_id, received_at FROM dead_letters")
        assert row == {"letter_id": "a", "received_at": AT}
        assert recorder.from_db("run_month", recorder.to_db("run_month", date(2026, 11, 1))) == (
            date(2026, 11, 1)
        )
        where, params = recorder.any_of("letter_id", ["a", "zz"])
        assert recorder.read(f"SELECT count(*) FROM dead_letters WHERE {where}", params) == [(1,)]

    def test_read_among_reads_every_chunk_with_the_parameters_before(
        self, recorder: Recorder
    ) -> None:
        with recorder.write() as conn:
            for i in range(7):
                recorder.execute(conn, self.INSERT, self._letter(recorder, f"l{i}"))
        wanted = [f"l{i}" for i in (0, 2, 3, 5, 6)] + ["absent"]
        sql = "SELECT letter_id FROM dead_letters WHERE source = ? AND {among}"
        rows = recorder.read_among(sql, "letter_id", wanted, ["contract"], size=2)  # 3 chunks
        assert sorted(r[0] for r in rows) == ["l0", "l2", "l3", "l5", "l6"]
        assert recorder.read_among(sql, "letter_id", wanted, ["elsewhere"], size=2) == []
        assert recorder.read_among(sql, "letter_id", [], ["contract"]) == []

    def test_events_are_inserted_once_and_read_back_whole(self, recorder: Recorder) -> None:
        events = run_events(random.Random(30))
        months = {events[0].trace_id: month_of(events[0].ts)}
        recorder.ensure_partitions(set(months.values()))
        with recorder.write() as conn:
            inserted, projection = recorder.insert_events(conn, events, months)
            assert recorder.stored_months(conn, [events[0].trace_id]) == {}  # not recorded yet
            recorder.keep_months(conn, months)
            # a trace recorded before keeps its month
            recorder.keep_months(conn, {events[0].trace_id: date(2030, 1, 1)})
            assert recorder.stored_months(conn, [events[0].trace_id, "f" * 32]) == months
        with recorder.write() as conn:
            again, _ = recorder.insert_events(conn, events, months)
        assert (inserted, again) == (len(events), 0)
        assert projection.runs  # the batch's run, projected as it was inserted
        rows = recorder.read(
            "SELECT event_id, trace_id, span_id, parent_span_id, seq, ts, kind, schema_version, "
            "payload FROM events ORDER BY seq"
        )
        assert [recorder.event_of(r) for r in rows] == sorted(events, key=lambda e: e.seq)

    def test_it_has_rollups_where_its_backend_has(self, recorder: Recorder) -> None:
        assert recorder.rollups == backend_of(recorder.url).rollups
        if recorder.rollups:  # what the store marks stale hours in is there
            assert recorder.read("SELECT count(*) FROM rollup_stale")[0][0] >= 0

    def test_ping_answers_and_a_closed_recorder_is_unavailable(self, recorder: Recorder) -> None:
        recorder.ping()
        recorder.close()
        with pytest.raises(StoreUnavailable):
            recorder.ping()


class TestSqliteRecorder(RecorderContract):
    def url(self, request: pytest.FixtureRequest) -> str:
        return str(request.getfixturevalue("sqlite_url"))


class TestPostgresRecorder(RecorderContract):
    def url(self, request: pytest.FixtureRequest) -> str:
        return str(request.getfixturevalue("pg_url"))


@pytest.mark.citus
class TestCitusRecorder(RecorderContract):
    """PostgreSQL's recorder on a Citus coordinator, the tables distributed by `migrate`."""

    def url(self, request: pytest.FixtureRequest) -> str:
        return str(request.getfixturevalue("citus_migrated_url"))


# --- every driver error, in the tree ----------------------------------------------------------


def _psycopg_classes() -> list[type[psycopg.Error]]:
    found = {
        v
        for v in vars(psycopg.errors).values()
        if isinstance(v, type) and issubclass(v, psycopg.Error)
    }
    found |= {
        v for v in vars(psycopg).values() if isinstance(v, type) and issubclass(v, psycopg.Error)
    }
    return sorted(found, key=lambda c: (c.__module__, c.__qualname__))


def _expected_postgres(state: str, cls: type[psycopg.Error]) -> type[StoreError]:
    """The documented rule (store/errors.py), written out again: the test's own reading."""
    if state in ("40001", "40P01"):
        return WriteConflict
    if state[:2] in ("08", "53", "57", "58") or state in ("55P03", "55006"):
        return StoreUnavailable
    if not state and issubclass(cls, psycopg.OperationalError | psycopg.InterfaceError):
        return StoreUnavailable
    if state[:2] in ("22", "23", "54") or state == "P0001":
        return RecordRefused
    return StoreError


def test_every_psycopg_error_class_maps_into_the_tree() -> None:
    classes = _psycopg_classes()
    assert len(classes) > 200  # every SQLSTATE psycopg names, and its DB-API classes
    for cls in classes:
        mapped = classify_postgres(cls("boom"))
        state = cls.sqlstate or ""
        assert isinstance(mapped, StoreError), cls
        assert type(mapped) is _expected_postgres(state, cls), (cls, state, type(mapped))
        assert mapped.code == (state or None)


def test_every_sqlite3_error_class_maps_into_the_tree() -> None:
    classes = [
        v for v in vars(sqlite3).values() if isinstance(v, type) and issubclass(v, sqlite3.Error)
    ]
    assert len(classes) == 9
    for cls in classes:
        for message, transient in (
            ("boom", False),
            ("database is locked", True),
            ("Cannot operate on a closed database.", True),
        ):
            mapped = classify_sqlite(cls(message))
            closed = "closed" in message
            busy = transient and not closed and issubclass(cls, sqlite3.OperationalError)
            gone = closed and issubclass(cls, sqlite3.ProgrammingError)
            if issubclass(cls, sqlite3.IntegrityError | sqlite3.DataError):
                expected: type[StoreError] = RecordRefused
            elif busy or gone:
                expected = StoreUnavailable
            else:
                expected = StoreError
            assert type(mapped) is expected, (cls, message, type(mapped))
            assert mapped.code == cls.__name__
