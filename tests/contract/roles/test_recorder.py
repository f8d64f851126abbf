"""The core recorder's contract, one abstract test case subclassed per backend (as
eventsourcing's recorders are tested): a new backend is a recorder subclass and a subclass
here (its roles have theirs beside this one). And the mapping of every error each driver can
raise into the store's one tree."""

from __future__ import annotations

import random
import sqlite3
from datetime import UTC, date, datetime

import psycopg
import psycopg.errors
import pytest

from agentdocket.store import Store
from agentdocket.store.backends import backend_of
from agentdocket.store.backends.postgres.errors import classify as classify_postgres
from agentdocket.store.backends.sqlite import classify as classify_sqlite
from agentdocket.store.errors import RecordRefused, StoreError, StoreUnavailable, WriteConflict
from agentdocket.store.recorder import Recorder
from tests.helpers.factory import run_events
from tests.helpers.roles import OnADatabase, OnCitus, OnPostgres, OnSqlite

AT = datetime(2026, 11, 25, 12, 30, 15, 123456, tzinfo=UTC)


class RecorderContract(OnADatabase):
    """What every recorder does, whatever the database behind it."""

    @pytest.fixture
    def recorder(self, store: Store) -> Recorder:
        return store.recorder

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

    def test_it_plays_the_roles_its_backend_says(self, store: Store) -> None:
        roles = store.roles
        assert roles.recorder is store.recorder
        has_rollups = backend_of(store.url).rollups
        assert (roles.rollups is not None, roles.readers is not None) == (has_rollups,) * 2
        if has_rollups:  # what the dashboards' upkeep marks stale hours in is there
            assert store.recorder.read("SELECT count(*) FROM rollup_stale")[0][0] >= 0
            assert store.upkeep is not None
        else:
            assert store.upkeep is None

    def test_json_members_read_as_text(self, store: Store) -> None:
        events = run_events(random.Random(31))
        store.append(events)
        [response] = [e for e in events if e.kind == "response"]
        member = store.recorder.json_text("payload", "text")
        sql = f"SELECT {member} FROM events WHERE kind = 'response'"
        assert store.recorder.read(sql) == [(response.payload["text"],)]

    def test_ping_answers_and_a_closed_recorder_is_unavailable(self, recorder: Recorder) -> None:
        recorder.ping()
        recorder.close()
        with pytest.raises(StoreUnavailable):
            recorder.ping()


class TestSqliteRecorder(RecorderContract, OnSqlite):
    pass


class TestPostgresRecorder(RecorderContract, OnPostgres):
    pass


class TestCitusRecorder(RecorderContract, OnCitus):
    pass


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
