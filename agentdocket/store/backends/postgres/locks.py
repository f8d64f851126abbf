"""One lock order for everything that makes, drops or reads across the log's partitions
(PostgreSQL).

Making a partition (``CREATE TABLE ... PARTITION OF``) and dropping one both lock the parent
table in ACCESS EXCLUSIVE mode; a reader or writer touches several parents in one transaction.
Two such paths that take the parents in different orders deadlock (a retention dropping
``verdicts``, ``runs`` then ``events`` while a refresh holds ``events`` and waits for ``runs``).
So:

- **Partition DDL** (ingestion making the partitions of a new or late month, retention
  dropping a month) first takes the advisory lock :data:`PARTITIONS` exclusively, holding no
  table yet; then all three parents in one statement, in the order ``events``, ``runs``,
  ``verdicts``, with a ``lock_timeout`` (:data:`LOCK_TRY`) shorter than the server's
  ``deadlock_timeout`` (1 s by default). It never waits for a table long enough to be part of
  a deadlock: on a timeout it lets everything go, backs off and tries again, for up to
  ``budget_s``; past that the database is busy (:class:`MaintenanceBusy`, transient).
- **The rollup refresh** takes :data:`PARTITIONS` shared before its transaction begins: a
  refresh and partition DDL never interleave, and DDL waiting for a refresh to finish holds
  nothing.
- **Ingestion** writes ``events``, then ``runs``, then ``verdicts``: the DDL's order.

Writers of the same traces take advisory locks on them (:class:`TraceLocks`), a bounded number
per transaction.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import psycopg
import psycopg.errors

from agentdocket.store.backends.postgres.errors import classify, mapped_errors
from agentdocket.store.errors import MaintenanceBusy

# The advisory key agentdocket_ensure_partitions takes (migration 0010): "agdp" "part".
PARTITIONS = (1634166881, 1885434996)
PARENTS = ("events", "runs", "verdicts")
LOCK_TRY = "200ms"
BUDGET_S = 60.0

T = TypeVar("T")


def lock_for_ddl(conn: psycopg.Connection[Any], *partitions: str) -> None:
    """In ``conn``'s transaction: the partition DDL lock, then the parents (and
    ``partitions``) in ACCESS EXCLUSIVE mode, or :class:`psycopg.errors.LockNotAvailable`."""
    conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", PARTITIONS)
    conn.execute(f"SET LOCAL lock_timeout = '{LOCK_TRY}'")
    tables = ", ".join((*PARENTS, *partitions))
    conn.execute(f"LOCK TABLE {tables} IN ACCESS EXCLUSIVE MODE")


@contextmanager
def refresh_lock(conn: psycopg.Connection[Any]) -> Iterator[None]:
    """The partition DDL lock, shared, around a refresh's transaction (no DDL until it ends).
    Taken on the session before the transaction begins: a repeatable-read snapshot taken while
    waiting for DDL to finish would not see what the DDL did, and its writes would fail."""
    conn.execute("SELECT pg_advisory_lock_shared(%s, %s)", PARTITIONS)
    try:
        yield
    finally:
        conn.execute("SELECT pg_advisory_unlock_shared(%s, %s)", PARTITIONS)


def with_ddl_lock(
    conn: psycopg.Connection[Any],
    work: Callable[[psycopg.Connection[Any]], T],
    *partitions: str,
    budget_s: float | None = None,
) -> T:
    """``work(conn)`` in a transaction of its own holding :func:`lock_for_ddl`, tried again
    (with jittered exponential back-off) while the tables are busy, up to ``budget_s``
    (default :data:`BUDGET_S`)."""
    budget_s = BUDGET_S if budget_s is None else budget_s
    deadline = time.monotonic() + budget_s
    delay = 0.02
    while True:
        try:
            with conn.transaction():
                lock_for_ddl(conn, *partitions)
                return work(conn)
        except psycopg.errors.LockNotAvailable as exc:
            if time.monotonic() + delay > deadline:
                raise MaintenanceBusy(
                    f"the log's tables stayed busy for {budget_s:.0f} s; nothing was changed, "
                    "try again later",
                    code=exc.sqlstate,
                ) from None
        except psycopg.Error as exc:
            raise classify(exc) from exc
        time.sleep(delay * (0.5 + random.random()))
        delay = min(delay * 2, 1.0)


# Traces not yet stored are locked while a batch gives them their month, and every trace whose
# runs a batch reads before it writes them (agentdocket.dashboards.stale_hours): the key's first
# half says what the lock is about ("agd" "mo", "agd" "mp"), the second is the trace's hash.
NEW_TRACE_LOCK = 0x61676D6F
TRACE_LOCK = 0x61676D70
# Past this many traces of one kind in a transaction, it locks them all at once: PostgreSQL's
# lock table holds about 10,000 advisory locks in all on a default server, and an import of
# 20,000 traces in one transaction ran out of it.
FINE_LIMIT = 2000
# The key that stands for every trace of a kind ("agd" "q", "agd" "r"; second half 0).
EVERY_TRACE = {NEW_TRACE_LOCK: 0x61676D71, TRACE_LOCK: 0x61676D72}


class TraceLocks:
    """A transaction's advisory locks on traces, of each kind.

    A transaction locks each trace it writes under ``(kind, hashtext(trace))``, holding the
    kind's :data:`EVERY_TRACE` key shared, until it has locked :data:`FINE_LIMIT` traces of the
    kind; from then on it holds that key exclusively, which stands for every trace of the kind:
    no other transaction locks a trace of the kind before it ends. Two transactions that lock
    trace by trace share that key and exclude each other trace by trace; one locking all
    at once waits for them and they wait for it. So the locks a transaction holds are bounded
    (two kinds, about 2 x 2000), however many traces it writes."""

    def __init__(self) -> None:
        self.held: dict[int, int] = {}  # traces locked one by one, by kind
        self.whole: set[int] = set()  # kinds locked all at once

    def lock(self, conn: Any, kind: int, trace_ids: Sequence[str]) -> None:
        if kind in self.whole or not trace_ids:
            return
        held = self.held.get(kind, 0)
        with mapped_errors():
            if held + len(trace_ids) > FINE_LIMIT:
                conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", [EVERY_TRACE[kind]])
                self.whole.add(kind)
                return
            if not held:
                conn.execute("SELECT pg_advisory_xact_lock_shared(%s, 0)", [EVERY_TRACE[kind]])
            # in hash order, so that two writers locking overlapping sets take them in the
            # same order
            conn.execute(
                "SELECT count(pg_advisory_xact_lock(%s, h)) FROM "
                "(SELECT DISTINCT hashtext(id) AS h FROM unnest(%s::text[]) AS t(id) ORDER BY h) s",
                [kind, list(trace_ids)],
                prepare=False,
            )
        self.held[kind] = held + len(trace_ids)
