"""Stale hours: which hours of the dashboards' rollups a write changed, marked in the write's
transaction (the store tells the dashboards' upkeep, :mod:`agentdocket.dashboards.upkeep`, of
every change).

A rollup hour is never read from its rollup once something it aggregates changed
(:mod:`agentdocket.dashboards.rollups`): the change marks the hour in ``rollup_stale``, in the
transaction that makes it. Marked here, not by the database: statement triggers with
transition tables (how migration 0005 marked) do not run on a distributed table (Citus), and
one way of marking for every backend with rollups is one way tested.

What a batch marks, as the triggers did:

- ``runs`` at a run's hour before and after the batch (a run is counted in the hour it
  started; a later event can move it earlier);
- ``verdicts`` at both hours too when the run has verdicts and moved, or changed what its
  verdicts are keyed by (agent, version, dataset, case, experiment, tool calls);
- ``verdicts`` at the run's hour for each run-level verdict the batch adds.

A run's hour before the batch is read before the batch's upserts, under a lock on its trace
(:meth:`~agentdocket.store.roles.Rollups.lock_runs`), so that two writers changing one run
mark every hour it passed through. Rebuilding the projections marks every hour before and
after instead (:meth:`StaleHours.mark_all`), and retention every hour of a month it drops
(:meth:`StaleHours.mark_month`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from agentdocket.store.projections import Projection, RunRow
from agentdocket.store.recorder import Recorder
from agentdocket.store.roles import Rollups

RUN_TIME = "coalesce(started_at, first_ts)"
MARK = "INSERT INTO rollup_stale (hour, what) SELECT * FROM unnest(?::timestamptz[], ?::text[])"
# The hours of runs whose run-level verdicts a batch adds.
MARK_JUDGED = (
    "INSERT INTO rollup_stale (hour, what) SELECT DISTINCT agentdocket_hour({t}), 'verdicts' "
    "FROM runs WHERE {where} AND {t} IS NOT NULL"
)
# Every stored run's hour (of a month), of both kinds (a rebuild, or retention dropping a
# month).
MARK_EVERY_RUN = (
    "INSERT INTO rollup_stale (hour, what) SELECT DISTINCT agentdocket_hour({t}), w "
    "FROM runs CROSS JOIN (VALUES ('runs'), ('verdicts')) k(w) WHERE {t} IS NOT NULL"
)


@dataclass(frozen=True)
class Keyed:
    """What a run's rollup rows are keyed by."""

    hour: datetime | None
    agent: str | None
    dataset: str | None
    tool_calls: int
    agent_version: str | None
    case_id: str | None
    experiment: str | None


def keyed(run: RunRow) -> Keyed:
    """What keys a run's rollup rows, from its projection row (as :meth:`StaleHours._keyed`
    reads it from the table: the experiment as ``->>`` gives it, JSON text for a non-string)."""
    experiment = (run.attributes or {}).get("experiment")
    if experiment is not None and not isinstance(experiment, str):
        experiment = json.dumps(experiment)
    return Keyed(
        hour(run.started_at if run.started_at is not None else run.first_ts),
        run.agent,
        run.dataset,
        run.n_tool_calls,
        run.agent_version,
        run.case_id,
        experiment,
    )


def hour(t: datetime | None) -> datetime | None:
    """The UTC hour of ``t``, as ``agentdocket_hour`` computes it in the database."""
    if t is None:
        return None
    return t.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


class StaleHours:
    """Marks the hours a batch's projection rows changed, on a database with rollups."""

    def __init__(self, db: Recorder, rollups: Rollups) -> None:
        self.db = db
        self.rollups = rollups

    def before(
        self,
        conn: Any,
        proj: Projection,
        months: dict[str, date],
        new: frozenset[str] = frozenset(),
    ) -> dict[str, Keyed]:
        """Lock the runs ``proj`` changes and read what keys them now (before the upserts);
        the ``new`` traces have no row to read."""
        traces = sorted(set(proj.runs) | {v.trace_id for v in proj.verdicts})
        if not traces:
            return {}
        self.rollups.lock_runs(conn, traces)
        return self._keyed(conn, sorted(set(proj.runs) - new), months)

    def mark(
        self,
        conn: Any,
        proj: Projection,
        months: dict[str, date],
        before: dict[str, Keyed],
        new: frozenset[str] = frozenset(),
    ) -> int:
        """Mark what ``proj`` changed (after its upserts); how many marks it wrote from what it
        read back (the hours of runs only judged here are marked in the database, uncounted).
        The rows of the ``new`` traces are ``proj``'s own: known without reading them back."""
        judged = {v.trace_id for v in proj.verdicts if v.subject_span_id is None}
        # runs only judged here (a scoring batch's): their hours marked by the database, with
        # no reading back (a new trace has no run to mark)
        only_judged = sorted(judged - set(proj.runs) - new)
        for where, params in self._of(only_judged, months):
            self.db.execute(conn, MARK_JUDGED.format(t=RUN_TIME, where=where), params)
        judged -= set(only_judged)
        stored = sorted((set(proj.runs) | judged) - new)
        after = self._keyed(conn, stored, months)
        after.update((t, keyed(proj.runs[t])) for t in proj.runs if t in new)
        with_verdicts = self._with_verdicts(
            conn, [t for t in proj.runs if t in after and t not in new], months
        )
        with_verdicts |= {v.trace_id for v in proj.verdicts if v.trace_id in new}
        marks: set[tuple[datetime, str]] = set()
        for trace in proj.runs:
            was, now = before.get(trace), after.get(trace)
            hours = {k.hour for k in (was, now) if k is not None and k.hour is not None}
            marks.update((h, "runs") for h in hours)
            if trace in with_verdicts and (was is None or was != now):
                marks.update((h, "verdicts") for h in hours)
        for trace in judged:
            found = after.get(trace)
            if found is not None and found.hour is not None:
                marks.add((found.hour, "verdicts"))
        if marks:
            ordered = sorted(marks)
            self.db.execute(conn, MARK, [[h for h, _ in ordered], [w for _, w in ordered]])
        return len(marks)

    def mark_all(self, conn: Any) -> None:
        """Mark every stored run's hour, for runs and verdicts."""
        self.db.execute(conn, MARK_EVERY_RUN.format(t=RUN_TIME))

    def mark_month(self, conn: Any, month: date) -> None:
        """Mark the hour of every run of ``month``, for runs and verdicts (the month is about
        to go: its hours are read live until the next refresh)."""
        sql = MARK_EVERY_RUN.format(t=RUN_TIME) + " AND run_month = ?"
        self.db.execute(conn, sql, [self.db.to_db("run_month", month)])

    def _keyed(self, conn: Any, traces: Sequence[str], months: dict[str, date]) -> dict[str, Keyed]:
        found: dict[str, Keyed] = {}
        sql = (
            f"SELECT trace_id, {RUN_TIME}, agent, dataset, n_tool_calls, agent_version, "
            "case_id, attributes->>'experiment' FROM runs WHERE "
        )
        for where, params in self._of(traces, months):
            for trace, t, *keys in self.db.read_on(conn, sql + where, params):
                found[trace] = Keyed(hour(self.db.from_db("ts", t)), *keys)
        return found

    def _with_verdicts(self, conn: Any, traces: Sequence[str], months: dict[str, date]) -> set[str]:
        sql = "SELECT DISTINCT trace_id FROM verdicts WHERE "
        return {
            r[0]
            for where, ps in self._of(traces, months)
            for r in self.db.read_on(conn, sql + where, ps)
        }

    def _of(
        self, traces: Sequence[str], months: dict[str, date]
    ) -> Iterator[tuple[str, list[Any]]]:
        """Conditions picking these traces a thousand at a time, in their months' partitions."""
        for start in range(0, len(traces), 1000):
            chunk = list(traces[start : start + 1000])
            by_trace, params = self.db.any_of("trace_id", chunk)
            in_months = sorted({months[t] for t in chunk if t in months})
            by_month, more = self.db.any_of(
                "run_month", [self.db.to_db("run_month", m) for m in in_months]
            )
            yield f"{by_trace} AND {by_month}", [*params, *more]
