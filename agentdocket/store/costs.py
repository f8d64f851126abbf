"""The ``call_costs`` projection: model calls as the log has them, their costs as the pricing
(:mod:`agentdocket.costs`) made them, and what they add up to by run, role, agent, dataset,
case and model. Pricing is not the store's: it reads the calls and keeps the rows it is given.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import astuple, dataclass, fields, replace
from datetime import datetime
from typing import Any

from agentdocket.store.arrivals import Position
from agentdocket.store.projections import JUDGE_CACHE_KEY
from agentdocket.store.recorder import Recorder
from agentdocket.store.roles import ArrivalOrder

READ_BATCH = 5000


RunDims = tuple[str | None, str | None, str | None, str | None]  # agent, version, dataset, case


@dataclass(frozen=True)
class StoredCall:
    """A model call of the log: where it is, when, and its payload."""

    event_id: str
    trace_id: str
    ts: datetime
    payload: dict[str, Any]
    run: RunDims = (None, None, None, None)  # its run's (a judge's: the judged run's)

    @property
    def judge(self) -> bool:
        return JUDGE_CACHE_KEY in (self.payload.get("attributes") or {})


@dataclass(frozen=True)
class CostRow:
    event_id: str
    trace_id: str
    ts: datetime
    model: str
    provider: str | None
    role: str | None
    judge: bool
    input_tokens: int | None
    output_tokens: int | None
    cache_read_tokens: int | None
    cache_creation_tokens: int | None
    cost: float | None
    priced_by: str
    rate: str | None
    unpriced: str | None
    agent: str | None = None
    agent_version: str | None = None
    dataset: str | None = None
    case_id: str | None = None
    # what the call's span reported it cost (the provider's figure), beside the computed cost
    reported_cost: float | None = None
    reported_currency: str | None = None
    reported_source: str | None = None

    @property
    def reported_usd(self) -> float | None:
        return self.reported_cost if self.reported_currency == "USD" else None


COLUMNS = tuple(f.name for f in fields(CostRow))
HOUR_KEY = ("hour", "agent", "agent_version", "dataset", "model", "role", "judge")
HOUR_COLUMNS = (*HOUR_KEY, "calls", "unpriced", "cost", "reported", "reported_calls")
NONE = "(none)"
# what the costs add up to: the rows' key columns, and the join that brings them
DIMENSIONS: dict[str, str] = {
    "run": "c.trace_id",
    "role": "coalesce(c.role, '(none)')",
    "model": "c.model",
    "agent": "coalesce(c.agent, '(none)'), coalesce(c.agent_version, '(none)')",
    "dataset": "coalesce(c.dataset, '(none)')",
    "case": "coalesce(c.dataset, '(none)'), coalesce(c.case_id, '(none)')",
}
KEYS = {
    "run": ("trace_id",),
    "role": ("role",),
    "model": ("model",),
    "agent": ("agent", "agent_version"),
    "dataset": ("dataset",),
    "case": ("dataset", "case_id"),
}


# The log's model calls, each with its run's agent, version, dataset and case.
CALLS = (
    "SELECT e.event_id, e.trace_id, e.ts, e.payload, r.agent, r.agent_version, r.dataset, "
    "r.case_id FROM events e LEFT JOIN runs r ON r.trace_id = e.trace_id "
    "WHERE e.kind = 'llm.called'"
)


class Costs:
    """Reading model calls; keeping and adding up their costs."""

    def __init__(self, db: Recorder, arrivals: ArrivalOrder) -> None:
        self.db = db
        self.order = arrivals

    def calls(self) -> Iterator[list[StoredCall]]:
        """Every model call of the log (the partial index ``events_llm_calls``) with its run's
        agent, version, dataset and case, in batches; a judge's call (in a trace of its own)
        with those of the run its verdict judged."""
        with self.db.write() as conn:
            for rows in self.db.stream_on(
                conn, f"{CALLS} ORDER BY e.trace_id, e.event_id", READ_BATCH
            ):
                yield self._judged_runs(conn, [self._call(r) for r in rows])

    def calls_between(self, after: Position, upto: Position) -> list[StoredCall]:
        """The model calls that arrived after ``after`` and by ``upto`` (positions of
        :class:`~agentdocket.store.arrivals.Arrivals`; ``upto`` one its ``head`` gave, so that
        none can still arrive before it), as :meth:`calls` gives them: a read of what arrived
        between the two, never of the whole log."""
        since, params = self.order.arrived_after(after.tx, after.seq)  # columns only events has
        by, more = self.order.arrived_by(upto.tx, upto.seq, "e")
        with self.db.write() as conn:
            rows = self.db.read_on(conn, f"{CALLS} AND {since} AND {by}", [*params, *more])
            return self._judged_runs(conn, [self._call(r) for r in rows])

    def _call(self, row: Sequence[Any]) -> StoredCall:
        """A call from its row of :data:`CALLS`."""
        return StoredCall(
            str(self.db.from_db("event_id", row[0])),
            row[1],
            self.db.from_db("ts", row[2]),
            self.db.from_db("payload", row[3]),
            (row[4], row[5], row[6], row[7]),
        )

    def _judged_runs(self, conn: Any, calls: list[StoredCall]) -> list[StoredCall]:
        judges = sorted({c.trace_id for c in calls if c.judge and c.run[0] is None})
        if not judges:
            return calls
        where, params = self.db.any_of("v.judge_trace_id", judges)
        found: dict[str, RunDims] = {
            r[0]: (r[1], r[2], r[3], r[4])
            for r in self.db.read_on(
                conn,
                "SELECT v.judge_trace_id, r.agent, r.agent_version, r.dataset, r.case_id "
                f"FROM verdicts v JOIN runs r ON r.trace_id = v.trace_id WHERE {where}",
                params,
            )
        }
        return [
            replace(c, run=found[c.trace_id]) if c.trace_id in found and c.judge else c
            for c in calls
        ]

    def priced_ids(self, among: Sequence[str] | None = None) -> set[str]:
        """The event ids of the calls that have a row (of those ``among``, if given)."""
        if among is None:
            return {str(r[0]) for r in self.db.read("SELECT event_id FROM call_costs")}
        sql = "SELECT event_id FROM call_costs WHERE {among}"
        return {str(r[0]) for r in self.db.read_among(sql, "event_id", among, size=READ_BATCH)}

    def replace(self, rows: Sequence[CostRow], *, whole: bool = True) -> None:
        """Calls' costs, in one transaction: with ``whole``, every call's (the rows before
        go), else rows for calls that had none."""
        with self.db.write() as conn:
            if whole:
                self.db.execute(conn, "DELETE FROM call_costs")
                self.db.execute(conn, "DELETE FROM rollup_costs")
            self._add_hours(conn, rows)
            marks = ", ".join("?" * len(COLUMNS))
            sql = f"INSERT INTO call_costs ({', '.join(COLUMNS)}) VALUES ({marks})"
            for row in rows:
                self.db.execute(
                    conn,
                    sql,
                    [self.db.to_db(c, v) for c, v in zip(COLUMNS, astuple(row), strict=True)],
                )

    def _add_hours(self, conn: Any, rows: Sequence[CostRow]) -> None:
        """Add ``rows`` to the hourly roll-up (calls, unpriced calls, dollars per hour and
        agent, version, dataset, model, role, judge)."""
        hours: dict[tuple[Any, ...], list[float]] = defaultdict(lambda: [0, 0, 0.0, 0.0, 0])
        for r in rows:
            key = (
                r.ts.replace(minute=0, second=0, microsecond=0),
                *(v or NONE for v in (r.agent, r.agent_version, r.dataset, r.model, r.role)),
                r.judge,
            )
            found = hours[key]
            found[0] += 1
            if r.cost is None:
                found[1] += 1
            else:
                found[2] += r.cost
            if r.reported_usd is not None:
                found[3] += r.reported_usd
                found[4] += 1
        for key, (calls, unpriced, cost, reported, reported_calls) in hours.items():
            self.db.execute(
                conn,
                f"INSERT INTO rollup_costs ({', '.join(HOUR_COLUMNS)}) VALUES "
                f"({', '.join('?' * len(HOUR_COLUMNS))}) ON CONFLICT ({', '.join(HOUR_KEY)}) "
                "DO UPDATE SET calls = rollup_costs.calls + excluded.calls, "
                "unpriced = rollup_costs.unpriced + excluded.unpriced, "
                "cost = rollup_costs.cost + excluded.cost, "
                "reported = rollup_costs.reported + excluded.reported, "
                "reported_calls = rollup_costs.reported_calls + excluded.reported_calls",
                [
                    self.db.to_db("ts", key[0]),
                    *key[1:6],
                    self.db.to_db("judge", key[6]),
                    int(calls),
                    int(unpriced),
                    cost,
                    reported,
                    int(reported_calls),
                ],
            )

    def of_runs(self, trace_ids: Sequence[str]) -> list[dict[str, Any]]:
        """The priced calls of these runs, in time order."""
        if not trace_ids:
            return []
        where, params = self.db.any_of("trace_id", list(trace_ids))
        return list(
            self.db.dicts(f"SELECT * FROM call_costs WHERE {where} ORDER BY ts, event_id", params)
        )

    def run_total(self, trace_id: str) -> dict[str, Any]:
        """One run's priced calls added up by the database: calls, unpriced calls, dollars
        (None: none priced) and the prices' version (None: not priced yet)."""
        [(calls, priced, total, by)] = self.db.read(
            "SELECT count(*), count(cost), sum(cost), max(priced_by) FROM call_costs "
            "WHERE trace_id = ?",
            (trace_id,),
        )
        return {
            "calls": int(calls),
            "unpriced_calls": int(calls) - int(priced),
            "cost_usd": None if total is None else float(total),
            "priced_by": by,
        }

    def rows(self) -> list[dict[str, Any]]:
        """Every priced call, in time order."""
        return list(self.db.dicts("SELECT * FROM call_costs ORDER BY ts, event_id"))

    def priced_by(self) -> list[str]:
        """The versions of the prices the rows were priced by (every row read)."""
        return [str(r[0]) for r in self.db.read("SELECT DISTINCT priced_by FROM call_costs")]

    def priced_by_one(self) -> str | None:
        """The version of the prices of one row, or None when there is none: what a refresh
        that keeps every row under one price book (:mod:`agentdocket.costs.refresh`) needs to
        read, where :meth:`priced_by` reads every row."""
        rows = self.db.read("SELECT priced_by FROM call_costs LIMIT 1")
        return str(rows[0][0]) if rows else None

    def by(self, dimension: str, *, judges: bool = False) -> list[dict[str, Any]]:
        """Cost, calls and unpriced calls per ``dimension`` (run, role, model, agent, dataset,
        case): the agent's own calls, or with ``judges`` the judges' (the cost of evaluating,
        credited to the run each judged)."""
        key = DIMENSIONS[dimension]
        if judges:
            # a judge's calls live in a trace of their own, which its verdict names
            source = (
                "(SELECT DISTINCT v.trace_id AS run, j.* FROM call_costs j JOIN verdicts v "
                "ON v.judge_trace_id = j.trace_id WHERE j.judge) c"
            )
            key = key.replace("c.trace_id", "c.run")
            where = ""
        else:
            source, where = "call_costs c", "WHERE NOT c.judge "
        names = KEYS[dimension]
        sql = (
            f"SELECT {key}, sum(c.cost), count(*), sum(CASE WHEN c.cost IS NULL THEN 1 ELSE 0 "
            f"END), sum(c.input_tokens), sum(c.output_tokens), "
            "sum(CASE WHEN c.reported_currency = 'USD' THEN c.reported_cost END), "
            f"sum(CASE WHEN c.reported_currency = 'USD' THEN 1 ELSE 0 END) FROM {source} "
            f"{where}GROUP BY {key} ORDER BY {key}"
        )
        out = []
        for row in self.db.read(sql):
            found = dict(zip(names, row[: len(names)], strict=True))
            cost, calls, unpriced, tokens_in, tokens_out, reported, reporting = row[len(names) :]
            found |= {
                "cost_usd": None if cost is None else float(cost),
                "calls": int(calls),
                "unpriced_calls": int(unpriced or 0),
                "input_tokens": None if tokens_in is None else int(tokens_in),
                "output_tokens": None if tokens_out is None else int(tokens_out),
                "reported_usd": None if reported is None else float(reported),
                "reported_calls": int(reporting or 0),
            }
            out.append(found)
        return out
