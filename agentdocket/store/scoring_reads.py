"""What the scorers and their reports read: traces in bulk (only the event kinds the scorers
judge), the verdicts already stored, and the verdict rows a report aggregates.

Traces are read a batch of runs at a time: one query for the runs, one for their events of the
wanted kinds (the one query whose speed matters, supplied by each recorder), cases from a
cache that lives as long as the iteration.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agentdocket.events import Case, Event, Trace
from agentdocket.store.datasets import Datasets
from agentdocket.store.reading import Reader
from agentdocket.store.recorder import AMONG_CHUNK, Recorder
from agentdocket.store.roles import EventLog
from agentdocket.store.rows import CaseRun, VerdictRow, typed

# (dataset, dataset version, case id) -> the case, or None when the dataset lacks it
CaseCache = dict[tuple[str, str, str], Case | None]


@dataclass(frozen=True)
class ReportRun:
    """What a report needs of a run."""

    trace_id: str
    status: str | None
    agent: str | None
    agent_version: str | None
    strategy: str | None
    models: dict[str, str]
    error: str | None = None
    case_id: str | None = None
    attributes: dict[str, Any] | None = None


@dataclass(frozen=True)
class ReportVerdict:
    """The latest verdict of one scorer version on one run (or step)."""

    trace_id: str
    scorer: str
    scorer_version: str
    passed: bool | None
    score: float | None
    failure_type: str | None
    details: dict[str, Any]
    label: str | None = None


VERDICT_EXPORT_SQL = (
    "SELECT v.verdict_id, v.trace_id, v.subject_span_id, r.dataset, r.case_id, r.agent, "
    "r.agent_version, r.strategy, v.scorer, v.scorer_version, v.passed, v.score, v.label, "
    "v.failure_type, v.rationale, v.details, v.input_hash, v.judge_trace_id, v.ts "
    "FROM verdicts v LEFT JOIN runs r ON r.trace_id = v.trace_id"
)


class ScoringReader:
    """Bulk reads for scoring and reporting."""

    def __init__(self, db: Recorder, log: EventLog, datasets: Datasets, runs: Reader) -> None:
        self.db = db
        self.log = log
        self.datasets = datasets
        self.runs = runs

    # --- traces ---------------------------------------------------------------------------

    def batches(
        self,
        *,
        kinds: Collection[str] | None = None,
        dataset: str | None = None,
        since: datetime | None = None,
        trace_ids: Sequence[str] | None = None,
        batch_size: int = 2000,
    ) -> Iterator[list[Trace]]:
        """Runs in batches as traces holding only events of ``kinds`` (every kind when None),
        each with its case. Runs of ``trace_ids``, else of ``dataset`` / ``since``."""
        ids = (
            list(trace_ids)
            if trace_ids is not None
            else self.runs.trace_ids(dataset=dataset, since=since)
        )
        cache: CaseCache = {}
        for start in range(0, len(ids), batch_size):
            yield self.traces(ids[start : start + batch_size], kinds, cache)

    def traces(
        self, ids: Sequence[str], kinds: Collection[str] | None, cache: CaseCache | None = None
    ) -> list[Trace]:
        """The runs among ``ids`` as (partial) traces with their cases, in the order given."""
        if not ids:
            return []
        cache = {} if cache is None else cache
        where, params = self.db.any_of("trace_id", ids)
        runs = {
            r[0]: r
            for r in self.db.read(
                f"SELECT trace_id, dataset, dataset_version, case_id, run_month FROM runs "
                f"WHERE {where}",
                params,
            )
        }
        self._fill_cases([r[:4] for r in runs.values()], cache)
        by_trace: dict[str, list[Event]] = defaultdict(list)
        # the runs' months: on PostgreSQL only their partitions are read
        months = sorted({self.db.from_db("run_month", r[4]) for r in runs.values() if r[4]})
        for event in self.log.scoring_events(list(runs), kinds, months):
            if event.kind != "label":  # people's labels are never a scorer's input
                by_trace[event.trace_id].append(event)
        out = []
        for tid in ids:
            run = runs.get(tid)
            if run is None:
                continue
            _, dataset, version, case_id, _ = run
            case = cache.get((dataset, version or "", case_id)) if dataset and case_id else None
            out.append(Trace.partial(tid, by_trace.get(tid, ()), case))
        return out

    def _fill_cases(self, runs: Collection[tuple[Any, ...]], cache: CaseCache) -> None:
        """Put the cases these runs name into ``cache``. A run naming no dataset version gets
        the latest version's case (cached under the empty version)."""
        wanted: dict[tuple[str, str], set[str]] = defaultdict(set)
        latest: dict[str, str | None] = {}
        for _, dataset, version, case_id in runs:
            if not (dataset and case_id) or (dataset, version or "", case_id) in cache:
                continue
            if not version:
                if dataset not in latest:
                    latest[dataset] = self.datasets.latest_version(dataset)
                resolved = latest[dataset]
                if resolved is None:
                    cache[(dataset, "", case_id)] = None
                    continue
                wanted[(dataset, resolved)].add(case_id)
            else:
                wanted[(dataset, version)].add(case_id)
        for (dataset, version), case_ids in wanted.items():
            found = self.datasets.cases(dataset, version, sorted(case_ids))
            for case_id in case_ids:
                case = found.get(case_id)
                cache[(dataset, version, case_id)] = case
                if latest.get(dataset) == version:
                    cache[(dataset, "", case_id)] = case

    def trace_groups(self, ids: Sequence[str]) -> dict[str, str]:
        """The semantic group of each run's case (runs whose case has a group)."""
        sql = (
            "SELECT r.trace_id, c.group_id FROM runs r JOIN cases c ON c.dataset = r.dataset "
            "AND c.dataset_version = r.dataset_version AND c.case_id = r.case_id "
            "WHERE {among} AND c.group_id IS NOT NULL"
        )
        return dict(self.db.read_among(sql, "r.trace_id", ids, size=2000))

    # --- verdicts -------------------------------------------------------------------------

    def verdict_keys(self, scorer: str, version: str, ids: Sequence[str]) -> set[tuple[str, str]]:
        """(trace id, input hash) of the verdicts this scorer version already gave these runs."""
        return self.log.verdict_keys(scorer, version, ids)

    def scorer_versions(self, dataset: str | None = None) -> dict[str, list[str]]:
        """The scorer versions that judged runs (of ``dataset``), as stored."""
        sql = "SELECT DISTINCT v.scorer, v.scorer_version FROM verdicts v"
        params: list[Any] = []
        if dataset is not None:
            sql += " JOIN runs r ON r.trace_id = v.trace_id WHERE r.dataset = ?"
            params.append(dataset)
        out: dict[str, list[str]] = defaultdict(list)
        for scorer, version in self.db.read(sql, params):
            out[scorer].append(version)
        return dict(out)

    def report_runs(self, dataset: str | None = None) -> list[ReportRun]:
        sql = (
            "SELECT trace_id, status, agent, agent_version, strategy, models, error, case_id, "
            "attributes FROM runs WHERE started_at IS NOT NULL"
        )
        params: list[Any] = []
        if dataset is not None:
            sql += " AND dataset = ?"
            params.append(dataset)
        return [
            ReportRun(
                r["trace_id"],
                r["status"],
                r["agent"],
                r["agent_version"],
                r["strategy"],
                r["models"] or {},
                r["error"],
                r["case_id"],
                r["attributes"],
            )
            for r in self.db.dicts(sql, params)
        ]

    def traces_with_failure(self, failure_type: str, ids: Sequence[str]) -> set[str]:
        """Those of ``ids`` whose latest run-level verdict of some scorer has ``failure_type``."""
        sql = (
            "SELECT DISTINCT v.trace_id FROM verdicts_latest v WHERE v.failure_type = ? "
            "AND v.subject_span_id IS NULL AND {among}"
        )
        return {r[0] for r in self.db.read_among(sql, "v.trace_id", ids, [failure_type])}

    def case_runs(self, dataset: str) -> list[CaseRun]:
        """The runs of ``dataset`` with their case, agent, version, status and attributes
        (which name an experiment and repeat): what comparisons select and pair."""
        sql = (
            "SELECT trace_id, case_id, agent, agent_version, status, error, attributes FROM runs "
            "WHERE started_at IS NOT NULL AND dataset = ? ORDER BY started_at, trace_id"
        )
        return [typed(CaseRun, r) for r in self.db.dicts(sql, [dataset])]

    def report_verdicts(
        self, versions: dict[str, str], dataset: str | None = None
    ) -> list[ReportVerdict]:
        """The latest verdict per run (and step) of each scorer at the given version."""
        out: list[ReportVerdict] = []
        for scorer, version in sorted(versions.items()):
            sql = (
                "SELECT v.trace_id, v.scorer, v.scorer_version, v.passed, v.score, "
                "v.failure_type, v.details, v.label FROM verdicts_latest v"
            )
            params: list[Any] = [scorer, version]
            if dataset is not None:
                sql += " JOIN runs r ON r.trace_id = v.trace_id"
            sql += " WHERE v.scorer = ? AND v.scorer_version = ?"
            if dataset is not None:
                sql += " AND r.dataset = ?"
                params.append(dataset)
            out.extend(
                ReportVerdict(
                    r["trace_id"],
                    r["scorer"],
                    r["scorer_version"],
                    r["passed"],
                    r["score"],
                    r["failure_type"],
                    r["details"],
                    r["label"],
                )
                for r in self.db.dicts(sql, params)
            )
        return out

    def verdict_export_rows(
        self, dataset: str | None = None, scorer: str | None = None
    ) -> Iterator[VerdictRow]:
        """Every stored verdict (all versions) with its run's dataset, case, agent and
        strategy."""
        clauses: list[str] = []
        params: list[Any] = []
        if dataset is not None:
            clauses.append("r.dataset = ?")
            params.append(dataset)
        if scorer is not None:
            clauses.append("v.scorer = ?")
            params.append(scorer)
        sql = VERDICT_EXPORT_SQL + (" WHERE " + " AND ".join(clauses) if clauses else "")
        order = " ORDER BY v.scorer, v.scorer_version, v.trace_id, v.ts"
        for row in self.db.dicts(sql + order, params):
            yield typed(VerdictRow, row)

    def verdict_rows_of(self, verdict_ids: Sequence[str]) -> list[VerdictRow]:
        """The verdicts of ``verdict_ids`` (their events' ids), as :meth:`verdict_export_rows`
        gives them, in no particular order; ids of no stored verdict are left out."""
        ids = sorted(set(verdict_ids))
        out: list[VerdictRow] = []
        for start in range(0, len(ids), AMONG_CHUNK):
            where, params = self.db.any_of("v.verdict_id", ids[start : start + AMONG_CHUNK])
            out += [
                typed(VerdictRow, r)
                for r in self.db.dicts(f"{VERDICT_EXPORT_SQL} WHERE {where}", params)
            ]
        return out

    def root_spans(self, trace_ids: Sequence[str]) -> dict[str, str]:
        """Each run's root span id (the span of its ``run.started`` event), by trace id: the
        span a run-level verdict is about."""
        sql = "SELECT trace_id, span_id FROM events WHERE kind = 'run.started' AND {among}"
        rows = self.db.read_among(sql, "trace_id", sorted(set(trace_ids)))
        return {trace_id: span_id for trace_id, span_id in rows}

    def judge_replies(self, keys: Sequence[str]) -> dict[str, tuple[str, str]]:
        """Cached judge replies by cache key: (reply, trace id of the recorded call)."""
        sql = "SELECT cache_key, reply, trace_id FROM judge_calls WHERE {among}"
        rows = self.db.read_among(sql, "cache_key", sorted(set(keys)))
        return {key: (reply, trace_id) for key, reply, trace_id in rows}
