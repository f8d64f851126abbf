"""PostgreSQL's bulk writes: events and projection rows by binary COPY, falling back to a
staging table with ``ON CONFLICT`` where some rows are already stored."""

from __future__ import annotations

from collections.abc import Callable, Collection, Container, Iterator, Sequence
from datetime import date
from typing import Any

import orjson
import psycopg
from psycopg import errors, sql
from psycopg.abc import Buffer
from psycopg.types.json import Jsonb, JsonbBinaryDumper

from agentdocket.events import Event
from agentdocket.store.errors import CopyFailed
from agentdocket.store.projections import Projection, project
from agentdocket.store.recorder import STORED_EVENT_COLUMNS

EVENT_TYPES = [
    *("uuid", "text", "text", "text", "int8", "timestamptz", "text", "int2", "jsonb", "date")
]
TYPES: dict[str, dict[str, str]] = {
    "runs": {
        "models": "jsonb",
        "attributes": "jsonb",
        "started_at": "timestamptz",
        "ended_at": "timestamptz",
        "first_ts": "timestamptz",
        "last_ts": "timestamptz",
        "run_month": "date",
    },
    "verdicts": {
        "passed": "bool",
        "score": "float8",
        "details": "jsonb",
        "ts": "timestamptz",
        "run_month": "date",
    },
    "cases": {"ordinal": "int4", "data": "jsonb"},
    "judge_calls": {"temperature": "float8", "sample": "int4", "ts": "timestamptz"},
    "dead_letters": {"received_at": "timestamptz"},
    "trace_months": {"run_month": "date"},
}


def jsonb(value: Any) -> Jsonb:
    """A JSON value as psycopg sends it, encoded by orjson."""
    return Jsonb(value, dumps=orjson.dumps)


class _StoredJsonb(JsonbBinaryDumper):
    """jsonb in binary COPY: JSON already written (bytes) goes as it is, after jsonb's
    version byte; any other value as psycopg dumps it."""

    def dump(self, obj: Any) -> Buffer | None:
        if isinstance(obj, bytes):
            return b"\x01" + obj
        return super().dump(obj)


def adapt(conn: Any) -> None:
    """Let ``conn``'s COPYs take a jsonb column's value as JSON already written (used only
    where COPY is told the column's type: ``set_types``)."""
    conn.adapters.register_dumper(None, _StoredJsonb)


def _event_rows(
    events: Sequence[Event], months: dict[str, date], payloads: Sequence[bytes | None] | None
) -> Iterator[tuple[Any, ...]]:
    encoded = payloads or [None] * len(events)
    for e, raw in zip(events, encoded, strict=True):
        yield (
            e.event_id,
            e.trace_id,
            e.span_id,
            e.parent_span_id,
            e.seq,
            e.ts,
            e.kind,
            e.schema_version,
            jsonb(e.payload) if raw is None else raw,
            months[e.trace_id],
        )


def _copy(
    conn: Any,
    table: str,
    columns: Sequence[str],
    types: list[str],
    rows: Iterator[tuple[Any, ...]] | list[tuple[Any, ...]],
    meanwhile: Callable[[], None] | None = None,
) -> None:
    """Binary COPY of rows. ``meanwhile`` runs after the rows are sent, while the server
    is still processing them."""
    stmt = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)").format(
        sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, columns))
    )
    with conn.cursor() as cur, cur.copy(stmt) as copy:
        copy.set_types(types)
        for row in rows:
            copy.write_row(row)
        if meanwhile is not None:
            meanwhile()


def _stage(conn: Any, table: str) -> str:
    """A temporary table shaped like ``table``, emptied at each commit. Created each time
    it is wanted (IF NOT EXISTS): one made inside a savepoint that rolled back is gone."""
    name = f"agentdocket_in_{table}"
    conn.execute(
        sql.SQL(
            "CREATE TEMP TABLE IF NOT EXISTS {} (LIKE {} INCLUDING DEFAULTS) ON COMMIT DELETE ROWS"
        ).format(sql.Identifier(name), sql.Identifier(table))
    )
    return name


# What a COPY of rows some of which are already stored raises: a unique violation; on Citus
# the worker's error reaches the coordinator without its SQLSTATE, as an internal error (any
# other cause of one is raised again, classified, by the staging path that follows).
CLASHES: tuple[type[Exception], ...] = (errors.UniqueViolation,)
CITUS_CLASHES: tuple[type[Exception], ...] = (errors.UniqueViolation, errors.InternalError_)


def copy_events(
    conn: Any,
    events: Sequence[Event],
    months: dict[str, date],
    payloads: Sequence[bytes | None] | None = None,
    projected: Projection | None = None,
    *,
    clashes: tuple[type[Exception], ...] = CLASHES,
    copy_first: bool = True,
    redo: bool = False,
) -> tuple[int, Projection]:
    """Insert the new ones of ``events``: how many, and their projection. ``payloads`` and
    ``projected`` as in :meth:`~agentdocket.store.recorder.Recorder.insert_events`. With
    ``copy_first``, COPY into the table is tried first; ``clashes``: the errors that send the
    batch to the staging table instead (:data:`CLASHES`). With ``redo``, any failure of that
    COPY raises :class:`~agentdocket.store.errors.CopyFailed` instead, for the caller to run
    its whole transaction again with ``redo`` off, and nothing more is sent in this one."""
    if not events:
        return 0, Projection()
    # Fast path: a batch of new events goes straight in with COPY. If any of them is already
    # stored (a retried batch), the savepoint rolls back and the batch goes through a staging
    # table with ON CONFLICT DO NOTHING, which tells which rows were new; with ``redo`` the
    # caller runs its transaction again instead.
    if copy_first and redo:
        try:
            return len(events), _copy_events(conn, events, months, payloads, projected)
        except psycopg.Error as exc:
            raise CopyFailed(f"COPY of {len(events)} events failed: {exc}") from exc
    if copy_first:
        try:
            with conn.transaction():
                made = _copy_events(conn, events, months, payloads, projected)
            return len(events), made
        except clashes:
            pass
    staging = _stage(conn, "events")
    conn.execute(sql.SQL("DELETE FROM {}").format(sql.Identifier(staging)))
    rows = _event_rows(events, months, payloads)
    _copy(conn, staging, STORED_EVENT_COLUMNS, EVENT_TYPES, rows)
    cols = sql.SQL(", ").join(map(sql.Identifier, STORED_EVENT_COLUMNS))
    cur = conn.execute(
        sql.SQL(
            "INSERT INTO events ({cols}) SELECT {cols} FROM {src} ORDER BY trace_id, event_id "
            "ON CONFLICT (trace_id, event_id, run_month) DO NOTHING RETURNING event_id"
        ).format(cols=cols, src=sql.Identifier(staging))
    )
    new = {row[0] for row in cur.fetchall()}
    return len(new), project(e for e in events if e.event_id in new)


def _copy_events(
    conn: Any,
    events: Sequence[Event],
    months: dict[str, date],
    payloads: Sequence[bytes | None] | None,
    projected: Projection | None,
) -> Projection:
    """COPY ``events`` into the log; their projection, ``projected`` or else computed while
    the server digests the rows."""
    made: list[Projection] = [] if projected is None else [projected]
    _copy(
        conn,
        "events",
        STORED_EVENT_COLUMNS,
        EVENT_TYPES,
        _event_rows(events, months, payloads),
        meanwhile=None if made else lambda: made.append(project(events)),
    )
    return made[0]


def _types(table: str, columns: Sequence[str]) -> list[str]:
    declared = TYPES.get(table, {})
    return [declared.get(c, "int4" if c.startswith("n_") else "text") for c in columns]


def _existing(
    conn: Any, table: str, key: Sequence[str], keys: list[tuple[Any, ...]]
) -> set[tuple[Any, ...]]:
    """Which of ``keys`` are already in ``table`` (one index probe each)."""
    cols = sql.SQL(", ").join(map(sql.Identifier, key))
    unnest = sql.SQL(", ").join(sql.SQL("%s::text[]") for _ in key)
    query = sql.SQL(
        "SELECT {cols} FROM {table} WHERE ({cols}) IN (SELECT * FROM unnest({unnest}))"
    ).format(cols=cols, table=sql.Identifier(table), unnest=unnest)
    params = [[k[i] for k in keys] for i in range(len(key))]
    # not prepared: a generic plan made while the table was small stays bad (verdict_keys)
    return {tuple(r) for r in conn.execute(query, params, prepare=False).fetchall()}


def merge_rows(
    conn: Any,
    table: str,
    columns: Sequence[str],
    key: Sequence[str],
    rows: list[tuple[Any, ...]],
    conflict: str,
    *,
    clashes: tuple[type[Exception], ...] = CLASHES,
    probe: bool = True,
    new: bool | Collection[tuple[Any, ...]] = False,
) -> None:
    """Insert ``rows``, or merge them into those with the same ``key`` by ``conflict``;
    ``clashes`` as in :func:`copy_events`. Which rows are new: ``new`` True (all of them),
    or the keys known new (the others are merged); else, with ``probe``, the stored keys are
    looked up first (not on Citus, where that is a query to every shard: every row is merged
    there). A clash in the new rows takes the merge path all the same."""
    types = _types(table, columns)
    index = [columns.index(k) for k in key]
    keyed = [(tuple(r[i] for i in index), r) for r in rows]
    if new is True or not conflict:
        existing: Container[tuple[Any, ...]] = ()
    elif new:
        known = set(new)
        existing = {k for k, _ in keyed if k not in known}
    elif probe:
        existing = _existing(conn, table, key, [k for k, _ in keyed])
    else:
        existing = {k for k, _ in keyed}
    # Rows with a new key go straight in with COPY. Should another writer have inserted one
    # of those keys meanwhile, the savepoint rolls back and they take the upsert path too.
    fresh = [r for k, r in keyed if k not in existing]
    merge = [r for k, r in keyed if k in existing]
    if fresh:
        try:
            with conn.transaction():
                _copy(conn, table, columns, types, fresh)
        except clashes:
            if not conflict:
                raise
            merge = rows
    if merge:
        merge.sort(key=lambda r: tuple(r[i] for i in index))
        staging = _stage(conn, table)
        conn.execute(sql.SQL("DELETE FROM {}").format(sql.Identifier(staging)))
        _copy(conn, staging, columns, types, merge)
        cols = sql.SQL(", ").join(map(sql.Identifier, columns))
        # Key order, so that concurrent writers lock rows in the same order.
        order = sql.SQL(", ").join(map(sql.Identifier, key))
        conn.execute(
            sql.SQL(
                "INSERT INTO {dst} ({cols}) SELECT {cols} FROM {src} ORDER BY {order} {conflict}"
            ).format(
                dst=sql.Identifier(table),
                cols=cols,
                src=sql.Identifier(staging),
                order=order,
                conflict=sql.SQL(conflict),
            )
        )
