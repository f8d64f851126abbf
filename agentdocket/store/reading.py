"""Reading the store: events, traces and runs, as stored."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agentdocket.events import Case, Event, Trace
from agentdocket.store.datasets import Datasets
from agentdocket.store.errors import StoreError
from agentdocket.store.recorder import EVENT_COLUMNS, Recorder
from agentdocket.store.rows import Run, typed
from agentdocket.store.trace_pages import MONTH_OF, TracePages


@dataclass(frozen=True)
class StoredRun:
    """A run's events as stored, in trace order, with its dataset and case (the events of a
    large trace are read as they are iterated: iterate them once)."""

    trace_id: str
    events: Iterable[Event]
    case: Case | None
    dataset: str | None
    dataset_version: str | None


TABLES = frozenset(
    {"runs", "steps", "verdicts", "verdicts_latest", "judge_calls", "datasets", "cases", "events"}
)


# A trace's month first (trace_months, one key probe), then its rows in that month: given as
# a value, the month lets PostgreSQL's planner leave the other months' partitions out (given
# as a subquery, it plans every partition and prunes them when it runs: 2.7 ms of planning
# against 0.1 ms with 18 months), and on Citus the query goes to the trace's shard.
IN_ITS_MONTH = "trace_id = ? AND run_month = ?"
RUN = f"SELECT * FROM runs WHERE {IN_ITS_MONTH}"
TRACE_EVENTS = (
    f"SELECT {', '.join(EVENT_COLUMNS)} FROM events WHERE {IN_ITS_MONTH} ORDER BY seq, ts, event_id"
)


class Reader:
    """Events, traces and runs (a run's row leaves out the projection's own bookkeeping,
    such as the keys its question and answer were chosen by)."""

    def __init__(self, db: Recorder, datasets: Datasets, pages: TracePages) -> None:
        self.db = db
        self.datasets = datasets
        self.pages = pages

    def counts(self) -> dict[str, int]:
        out = {}
        for table in ("events", "runs", "steps", "verdicts", "judge_calls", "datasets", "cases"):
            out[table] = int(self.db.read(f"SELECT count(*) FROM {table}")[0][0])
        return out

    def rows(self, table: str, order_by: str) -> list[dict[str, Any]]:
        """All rows of a projection or reference table, decoded, in a stable order."""
        if table not in TABLES:
            raise StoreError(f"unknown table {table!r}")
        return [dict(r) for r in self.db.dicts(f"SELECT * FROM {table} ORDER BY {order_by}")]

    def events(self, trace_id: str) -> list[Event]:
        """The stored events of one trace, as stored (not upcast), in trace order."""
        return self._events(trace_id, self._month(trace_id))

    def _month(self, trace_id: str) -> Any:
        """The trace's month as the database holds it (None: nothing of it is stored)."""
        found = self.db.read(MONTH_OF, (trace_id,))
        return found[0][0] if found else None

    def _events(self, trace_id: str, month: Any) -> list[Event]:
        if month is None:
            return []
        return [self.db.event_of(r) for r in self.db.read(TRACE_EVENTS, (trace_id, month))]

    def _run(self, trace_id: str, month: Any) -> Run | None:
        if month is None:
            return None
        return next((typed(Run, r) for r in self.db.dicts(RUN, (trace_id, month))), None)

    def read_trace(self, trace_id: str) -> Trace | None:
        month = self._month(trace_id)
        events = self._events(trace_id, month)
        if not events:
            return None
        run = self._run(trace_id, month)
        found = self.datasets.cases_for([run]) if run else {}
        return Trace.from_events(events, found[trace_id][1] if trace_id in found else None)

    def _events_of(self, ids: Sequence[str]) -> dict[str, list[Event]]:
        """Stored events of several traces, each list in trace order."""
        by_trace: dict[str, list[Event]] = defaultdict(list)
        marks = ", ".join("?" for _ in ids)
        sql = (
            f"SELECT {', '.join(EVENT_COLUMNS)} FROM events WHERE trace_id IN ({marks}) "
            "ORDER BY trace_id, seq, ts, event_id"
        )
        for row in self.db.read(sql, ids):
            event = self.db.event_of(row)
            by_trace[event.trace_id].append(event)
        return by_trace

    def _runs_and_cases(
        self, ids: Sequence[str]
    ) -> tuple[dict[str, Run], dict[str, tuple[str, Case]]]:
        """Run rows of the traces, and for each run with a case: (dataset version, case)."""
        marks = ", ".join("?" for _ in ids)
        runs = {
            r["trace_id"]: typed(Run, r)
            for r in self.db.dicts(f"SELECT * FROM runs WHERE trace_id IN ({marks})", ids)
        }
        return runs, self.datasets.cases_for(list(runs.values()))

    def stored_runs(
        self, *, dataset: str | None = None, batch_size: int = 1000, batch_events: int = 5_000
    ) -> Iterator[StoredRun]:
        """Every stored trace (of ``dataset``; traces that are no run too) with its events as
        stored (not upcast) and its case, in order of first event: what an export writes.
        Traces are read a batch at a time (at most ``batch_size`` traces, of about
        ``batch_events`` events together: a page of :mod:`agentdocket.store.trace_pages`); a
        trace of more events than that alone, its events read a page at a time as they are
        iterated. What is held at once does not grow
        with a trace's size."""
        where, params = self.run_filter(dataset=dataset, agent=None, since=None, runs_only=False)
        sizes = self.db.read(
            f"SELECT trace_id, n_events FROM runs {where} ORDER BY first_ts, trace_id", params
        )
        chunk: list[str] = []
        held = 0
        for tid, n in sizes:
            if int(n) > batch_events:
                yield from self._stored(chunk)
                yield from self._stored([tid], page=batch_events)
                chunk, held = [], 0
                continue
            if chunk and (len(chunk) >= batch_size or held + int(n) > batch_events):
                yield from self._stored(chunk)
                chunk, held = [], 0
            chunk.append(tid)
            held += int(n)
        yield from self._stored(chunk)

    def _stored(self, chunk: list[str], *, page: int | None = None) -> Iterator[StoredRun]:
        """The traces of ``chunk`` as stored runs: their events read now in one query, or
        (given ``page``) ``page`` events at a time as each trace's events are iterated."""
        if not chunk:
            return
        events: dict[str, Iterable[Event]] = {}
        if page is None:
            events.update(self._events_of(chunk))
        else:
            events.update((tid, self.pages.events(tid, page)) for tid in chunk)
        runs, cases = self._runs_and_cases(chunk)
        for tid in chunk:
            version, case = cases.get(tid, (None, None))
            dataset = runs[tid]["dataset"] if tid in runs else None
            yield StoredRun(tid, events.get(tid, []), case, dataset, version)

    def trace_ids(
        self,
        *,
        dataset: str | None = None,
        agent: str | None = None,
        since: datetime | None = None,
        runs_only: bool = True,
    ) -> list[str]:
        """The runs' trace ids (with ``runs_only=False``: every stored trace's), oldest first."""
        where, params = self.run_filter(
            dataset=dataset, agent=agent, since=since, runs_only=runs_only
        )
        sql = f"SELECT trace_id FROM runs {where} ORDER BY first_ts, trace_id"
        return [r[0] for r in self.db.read(sql, params)]

    def run_filter(
        self,
        *,
        dataset: str | None,
        agent: str | None,
        since: datetime | None,
        runs_only: bool = True,
    ) -> tuple[str, list[Any]]:
        """The WHERE clause (and its parameters) selecting runs of ``dataset`` and ``agent``
        that began at ``since`` or later (each when given) from ``runs``."""
        # A trace is a run once its start is recorded (its root agent span arrived); traces
        # that never have one (an embedding call, indexing, a lone tool call) are stored, and
        # exported, but are not runs.
        clauses: list[str] = ["started_at IS NOT NULL"] if runs_only else []
        params: list[Any] = []
        if dataset is not None:
            clauses.append("dataset = ?")
            params.append(dataset)
        if agent is not None:
            clauses.append("agent = ?")
            params.append(agent)
        if since is not None:
            clauses.append("first_ts >= ?")
            params.append(self.db.to_db("ts", since))
        return ("WHERE " + " AND ".join(clauses) if clauses else ""), params

    def run(self, trace_id: str) -> Run | None:
        """The run of this trace id, if it is stored (a trace that is no run has a row too)."""
        return self._run(trace_id, self._month(trace_id))

    def known_runs(self, trace_ids: Sequence[str]) -> set[str]:
        """Which of these traces are runs (their ``run.started`` is stored)."""
        if not trace_ids:
            return set()
        where, params = self.db.any_of("trace_id", sorted(set(trace_ids)))
        rows = self.db.read(
            f"SELECT trace_id FROM runs WHERE {where} AND started_at IS NOT NULL", params
        )
        return {str(r[0]) for r in rows}

    def list_runs(
        self,
        *,
        dataset: str | None = None,
        agent: str | None = None,
        conversation: str | None = None,
        limit: int | None = 50,
    ) -> list[Run]:
        """Runs, newest first; ``conversation``: only the runs of that conversation (the
        ``conversation_id`` attribute the GenAI conventions' ``gen_ai.conversation.id`` or
        OpenInference's ``session.id`` gave)."""
        where, params = self._listed(dataset, agent, conversation)
        sql = f"SELECT * FROM runs {where} ORDER BY first_ts DESC, trace_id"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [typed(Run, r) for r in self.db.dicts(sql, params)]

    def count_runs(
        self,
        *,
        dataset: str | None = None,
        agent: str | None = None,
        conversation: str | None = None,
    ) -> int:
        """How many runs :meth:`list_runs` would list with no limit."""
        where, params = self._listed(dataset, agent, conversation)
        [(n,)] = self.db.read(f"SELECT count(*) FROM runs {where}", params)
        return int(n)

    def _listed(
        self, dataset: str | None, agent: str | None, conversation: str | None
    ) -> tuple[str, list[Any]]:
        where, params = self.run_filter(dataset=dataset, agent=agent, since=None)
        if conversation is not None:
            where += f" AND {self.db.json_text('attributes', 'conversation_id')} = ?"
            params.append(conversation)
        return where, params

    def trace_ids_with_prefix(self, prefix: str) -> list[str]:
        """The first ten trace ids of runs starting with ``prefix`` (abbreviated ids on the
        command line)."""
        rows = self.db.read(
            "SELECT trace_id FROM runs WHERE trace_id LIKE ? ORDER BY trace_id LIMIT 10",
            (prefix.lower() + "%",),
        )
        return [r[0] for r in rows]
