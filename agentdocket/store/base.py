"""The store: the one place that reads and writes agentdocket's database.

:class:`Store` is the public face of a few small parts, each one idea, all written against a
per-database :class:`~agentdocket.store.recorder.Recorder`:

- :class:`~agentdocket.store.appending.Appender`: appends events with their projections, one
  transaction per batch, isolating a record the database refuses;
- :class:`~agentdocket.store.projector.Projector`: the projection upserts, and rebuilding;
- :class:`~agentdocket.store.datasets.DatasetRegistry`: datasets and cases;
- :class:`~agentdocket.store.dead_letters.DeadLetters`: records the database refused;
- :class:`~agentdocket.store.reading.Reader`: events, traces and runs;
- :class:`~agentdocket.store.scoring_reads.ScoringReader`: what scorers and reports read.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any

from agentdocket.events import Case, Dataset, Event, Trace
from agentdocket.store.appending import BATCH, Appender, AppendResult
from agentdocket.store.datasets import DatasetRegistry
from agentdocket.store.dead_letters import DeadLetter, DeadLetters, Retried
from agentdocket.store.derived import DIGEST_SQL
from agentdocket.store.following import Following
from agentdocket.store.limits import STORE, Limits
from agentdocket.store.projector import Projector
from agentdocket.store.reading import Reader, StoredRun
from agentdocket.store.recorder import Recorder
from agentdocket.store.redaction import Redactor
from agentdocket.store.retention import Retention
from agentdocket.store.rollups import Refreshed
from agentdocket.store.samples import PipelineSamples
from agentdocket.store.scoring_reads import CaseCache, ReportRun, ReportVerdict, ScoringReader


class Store:
    """Append events, register datasets, read traces and projections, keep dead letters."""

    def __init__(
        self, recorder: Recorder, redactor: Redactor | None = None, limits: Limits = STORE
    ) -> None:
        self.recorder = recorder
        # Applied to every event and case before it is written (AGENTDOCKET_REDACT by default).
        self.redactor = redactor if redactor is not None else Redactor.from_env()
        self.projector = Projector(recorder)
        self.registry = DatasetRegistry(recorder, self.redactor)
        self.letters = DeadLetters(recorder)
        self.appender = Appender(
            recorder, self.projector, self.registry, self.letters, self.redactor, limits
        )
        self.reader = Reader(recorder, self.registry)
        self.scoring = ScoringReader(recorder, self.registry, self.reader)
        # Arrivals, finished runs, followers' cursors and claims (continuous scoring).
        self.following = Following(recorder)
        # What receiver processes report of themselves (the pipeline dashboard).
        self.samples = PipelineSamples(recorder)
        # Whole months of runs leaving the log (agentdocket retention).
        self.retention = Retention(recorder, self.appender)
        # False when open_store was given derived objects the database does not have as given
        # (PostgreSQL at the head revision is migrated only by `agentdocket migrate`).
        self.derived_current = True

    def derived_digest(self) -> str | None:
        """The digest of the derived objects installed here (None if none are): on this
        store's connection, at the head revision (which has ``derived_objects``)."""
        rows = self.recorder.read(DIGEST_SQL)
        return str(rows[0][0]) if rows else None

    @property
    def url(self) -> str:
        return self.recorder.url

    @property
    def dialect(self) -> str:
        return self.recorder.dialect

    def close(self) -> None:
        self.recorder.close()

    def ping(self) -> None:
        """Raise :class:`StoreUnavailable` unless the database answers now."""
        self.recorder.ping()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- appending ----------------------------------------------------------------------------

    def append(
        self, events: Iterable[Event], batch_size: int = BATCH, *, source: str = "append"
    ) -> AppendResult:
        """Append events; re-sent events (same id) are ignored. Each batch is one transaction.

        An event the database refuses (:class:`RecordRefused`) does not fail its batch: it is
        isolated, kept as a dead letter naming ``source``, and the rest is stored. Raises
        :class:`StoreUnavailable` when the database is away (nothing of the batch is written).
        """
        return self.appender.append(events, batch_size, source=source)

    def import_all(
        self, datasets: Sequence[Dataset], events: Sequence[Event], batch_size: int = BATCH
    ) -> AppendResult:
        """Register datasets and append events in one transaction: all of it or nothing.
        An event the database refuses fails the whole import with :class:`RecordRefused`
        naming it (the caller knows where it came from)."""
        return self.appender.import_all(datasets, events, batch_size)

    # --- projections --------------------------------------------------------------------------

    def rebuild(self, batch_size: int = BATCH) -> dict[str, int]:
        """Drop the projections and replay the whole event log into them, in one transaction."""
        count = self.projector.rebuild(batch_size)
        return {"events": count, **self.counts()}

    def refresh_dashboards(
        self, progress: Callable[[int, int], None] | None = None
    ) -> Refreshed | None:
        """Bring the dashboards' hourly rollups up to date (see
        :mod:`agentdocket.store.rollups`); None where there are none (SQLite).
        ``progress(done, total)`` counts stale hours."""
        return self.recorder.refresh_dashboards(progress)

    # --- datasets -----------------------------------------------------------------------------

    def register_dataset(self, dataset: Dataset) -> bool:
        """Store a dataset version. True if new; False if the identical version was there.

        Raises :class:`DatasetConflict` if that version exists with different content.
        """
        return self.registry.register_dataset(dataset)

    def datasets(self) -> list[dict[str, Any]]:
        return self.registry.datasets()

    def latest_version(self, name: str) -> str | None:
        return self.registry.latest_version(name)

    def dataset(self, name: str, version: str | None = None) -> Dataset:
        return self.registry.dataset(name, version)

    # --- dead letters -------------------------------------------------------------------------

    def keep_dead_letters(self, letters: Iterable[DeadLetter]) -> int:
        """Store dead letters; the same letter twice is kept once. Returns how many were
        given."""
        return self.letters.keep(letters)

    def dead_letters(
        self, *, resolved: bool | None = False, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """Dead letters, oldest first, each with ``resolved``; by default the unresolved ones
        (``resolved=None``: all of them)."""
        return self.letters.letters(resolved=resolved, limit=limit)

    def dead_letter(self, letter_id: str) -> dict[str, Any]:
        """One dead letter by its id or a unique prefix of it."""
        return self.letters.get(letter_id)

    def dead_letter_counts(self) -> dict[str, int]:
        """How many dead letters are kept, and how many of them are not resolved yet."""
        return self.letters.counts()

    def retry_dead_letters(self, letter_ids: Sequence[str] | None = None) -> list[Retried]:
        """Append the events of these dead letters (default: every unresolved one) again, each
        alone: one still refused does not hold the others."""
        return self.letters.retry(self.appender.append_strict, letter_ids)

    # --- reading ------------------------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        return self.reader.counts()

    def rows(self, table: str, order_by: str) -> list[dict[str, Any]]:
        """All rows of a projection or reference table, decoded, in a stable order."""
        return self.reader.rows(table, order_by)

    def events(self, trace_id: str) -> list[Event]:
        """The stored events of one trace, as stored (not upcast), in trace order."""
        return self.reader.events(trace_id)

    def read_trace(self, trace_id: str) -> Trace | None:
        return self.reader.read_trace(trace_id)

    def iter_traces(
        self,
        *,
        dataset: str | None = None,
        trace_ids: Sequence[str] | None = None,
        batch_size: int = 1000,
    ) -> Iterator[list[Trace]]:
        """Whole traces in batches, each with its case, ordered by start time then trace id."""
        return self.scoring.scoring_batches(
            kinds=None, dataset=dataset, trace_ids=trace_ids, batch_size=batch_size
        )

    def stored_runs(
        self, *, dataset: str | None = None, batch_size: int = 1000
    ) -> Iterator[StoredRun]:
        """Every run (of ``dataset``) with its events as stored and its case: what an export
        writes."""
        return self.reader.stored_runs(dataset=dataset, batch_size=batch_size)

    def trace_ids(
        self, *, dataset: str | None = None, agent: str | None = None, since: datetime | None = None
    ) -> list[str]:
        return self.reader.trace_ids(dataset=dataset, agent=agent, since=since)

    def run(self, trace_id: str) -> dict[str, Any] | None:
        return self.reader.run(trace_id)

    def list_runs(
        self,
        *,
        dataset: str | None = None,
        agent: str | None = None,
        conversation: str | None = None,
        limit: int | None = 50,
    ) -> list[dict[str, Any]]:
        """Runs, newest first (of one conversation, if given)."""
        return self.reader.list_runs(
            dataset=dataset, agent=agent, conversation=conversation, limit=limit
        )

    def find_runs(self, prefix: str) -> list[str]:
        """Trace ids of the runs whose id starts with ``prefix`` (abbreviated ids)."""
        return self.reader.find_runs(prefix)

    # --- reading for scorers and reports ------------------------------------------------------

    def scoring_batches(
        self,
        *,
        kinds: Collection[str] | None,
        dataset: str | None = None,
        since: datetime | None = None,
        trace_ids: Sequence[str] | None = None,
        batch_size: int = 2000,
    ) -> Iterator[list[Trace]]:
        """Runs in batches as traces holding only events of ``kinds`` (every kind when None),
        each with its case."""
        return self.scoring.scoring_batches(
            kinds=kinds, dataset=dataset, since=since, trace_ids=trace_ids, batch_size=batch_size
        )

    def traces_for_scoring(
        self, ids: Sequence[str], kinds: Collection[str] | None, cache: CaseCache | None = None
    ) -> list[Trace]:
        return self.scoring.traces_for_scoring(ids, kinds, cache)

    def trace_groups(self, ids: Sequence[str]) -> dict[str, str]:
        """The semantic group of each run's case (runs whose case has a group)."""
        return self.scoring.trace_groups(ids)

    def verdict_keys(self, scorer: str, version: str, ids: Sequence[str]) -> set[tuple[str, str]]:
        """(trace id, input hash) of the verdicts this scorer version already gave these runs."""
        return self.scoring.verdict_keys(scorer, version, ids)

    def scorer_versions(self, dataset: str | None = None) -> dict[str, list[str]]:
        return self.scoring.scorer_versions(dataset)

    def report_runs(self, dataset: str | None = None) -> list[ReportRun]:
        return self.scoring.report_runs(dataset)

    def traces_with_failure(self, failure_type: str, ids: Sequence[str]) -> set[str]:
        """Those of ``ids`` with a latest run-level verdict of ``failure_type``."""
        return self.scoring.traces_with_failure(failure_type, ids)

    def case_runs(self, dataset: str) -> list[dict[str, Any]]:
        """The runs of ``dataset`` with case, agent, version, status and attributes."""
        return self.scoring.case_runs(dataset)

    def report_verdicts(
        self, versions: dict[str, str], dataset: str | None = None
    ) -> list[ReportVerdict]:
        """The latest verdict per run (and step) of each scorer at the given version."""
        return self.scoring.report_verdicts(versions, dataset)

    def verdict_export_rows(
        self, dataset: str | None = None, scorer: str | None = None
    ) -> Iterator[dict[str, Any]]:
        return self.scoring.verdict_export_rows(dataset, scorer)

    def judge_replies(self, keys: Sequence[str]) -> dict[str, tuple[str, str]]:
        """Cached judge replies by cache key: (reply, trace id of the recorded call)."""
        return self.scoring.judge_replies(keys)

    def cases_for(self, runs: list[dict[str, Any]]) -> dict[str, tuple[str, Case]]:
        """For each run naming a case: (dataset version, case), keyed by trace id."""
        return self.registry.cases_for(runs)
