"""The store: the one place that reads and writes agentdocket's database.

:class:`Store` appends events (the one write path) and gives its parts, each one idea, all
written against a per-database :class:`~agentdocket.store.recorder.Recorder` and the roles
the database plays (:mod:`agentdocket.store.roles`), each part given those it works with:

- ``store.reader`` (:class:`~agentdocket.store.reading.Reader`): events, traces and runs;
- ``store.datasets`` (:class:`~agentdocket.store.datasets.Datasets`): datasets and cases;
- ``store.dead_letters`` (:class:`~agentdocket.store.dead_letters.DeadLetters`): records the
  database refused, kept and retried;
- ``store.projections`` (:class:`~agentdocket.store.projector.Projector`): rebuilding the
  projections, refreshing the dashboards' rollups;
- ``store.scoring`` (:class:`~agentdocket.store.scoring_reads.ScoringReader`): what scorers
  and reports read;
- ``store.arrivals`` (:class:`~agentdocket.store.arrivals.Arrivals`): what the follower reads
  and keeps (arrivals, finished runs, cursors, claims);
- ``store.pipeline`` (:class:`~agentdocket.store.pipeline.PipelineSamples`): what receiver
  processes report of themselves;
- ``store.retention`` (:class:`~agentdocket.store.retention.Retention`): whole months leaving
  the log;
- ``store.labels`` (:class:`~agentdocket.store.labels.Labels`): people's labels (read from the
  log) and the rubrics they answer;
- ``store.queues`` (:class:`~agentdocket.store.queues.Queues`): annotators and annotation
  queues;
- ``store.costs`` (:class:`~agentdocket.store.costs.Costs`): model calls and what they cost
  (the ``call_costs`` projection);
- ``store.trace_pages`` (:class:`~agentdocket.store.trace_pages.TracePages`): one trace read a
  part at a time (its summary, slowest and failing steps, pages), however large.

Their rows are typed (:mod:`agentdocket.store.rows`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import date

from agentdocket.events import Dataset, Event
from agentdocket.store.appending import BATCH, Appender, AppendResult, Prepared
from agentdocket.store.arrivals import Arrivals
from agentdocket.store.backends import backend_of
from agentdocket.store.costs import Costs
from agentdocket.store.datasets import Datasets
from agentdocket.store.dead_letters import DeadLetters
from agentdocket.store.derived import DIGEST_SQL
from agentdocket.store.labels import Labels
from agentdocket.store.limits import STORE, Limits
from agentdocket.store.pipeline import PipelineSamples
from agentdocket.store.projector import Projector
from agentdocket.store.queues import Queues
from agentdocket.store.reading import Reader
from agentdocket.store.redaction import Redactor
from agentdocket.store.retention import Retention
from agentdocket.store.roles import Roles
from agentdocket.store.scoring_reads import ScoringReader
from agentdocket.store.sessions import Sessions
from agentdocket.store.trace_pages import TracePages
from agentdocket.store.upkeep import upkeep_for


class Store:
    """Append events; read and keep everything else through the parts (see the module)."""

    def __init__(
        self, roles: Roles, redactor: Redactor | None = None, limits: Limits = STORE
    ) -> None:
        self.roles = roles
        self.recorder = recorder = roles.recorder
        self.limits = limits
        # told of every change to the projections where the database has rollups
        self.upkeep = upkeep_for(roles)
        # Applied to every event and case before it is written (AGENTDOCKET_REDACT by default).
        self.redactor = redactor if redactor is not None else Redactor.from_env()
        self.projections = Projector(recorder, roles.log, self.upkeep)
        self.datasets = Datasets(recorder, self.redactor)
        self.dead_letters = DeadLetters(recorder, self._append_strict)
        self._appender = Appender(
            recorder,
            roles.log,
            roles.months,
            self.projections,
            self.datasets,
            self.dead_letters,
            self.redactor,
            limits,
        )
        self.trace_pages = TracePages(recorder)
        self.reader = Reader(recorder, self.datasets, self.trace_pages)
        self.scoring = ScoringReader(recorder, roles.log, self.datasets, self.reader)
        self.arrivals = Arrivals(recorder, roles.arrivals)
        self.pipeline = PipelineSamples(recorder)
        self.retention = Retention(recorder, roles.months, self._appender, self.upkeep)
        self.labels = Labels(recorder)
        self.queues = Queues(recorder, self.labels)
        self.costs = Costs(recorder, roles.arrivals)
        self.sessions = Sessions(recorder, self.reader)
        # False when open_store was given derived objects the database does not have as given
        # (PostgreSQL at the head revision is migrated only by `agentdocket migrate`).
        self.derived_current = True

    def sibling(self, limits: Limits | None = None) -> Store:
        """Another store over this database, on a connection of its own, with this one's
        redaction and its limits (or ``limits``): for a service of the same process that works
        in a thread of its own (a connection serves one transaction at a time). The schema was
        checked when this store opened: not again."""
        sibling = Store(
            backend_of(self.url).open(self.url),
            self.redactor,
            self.limits if limits is None else limits,
        )
        sibling.derived_current = self.derived_current
        return sibling

    def ensure_partitions(self, months: set[date]) -> int:
        """Make sure rows of these months have somewhere to go (a database with monthly
        partitions makes those missing); how many partitions were made."""
        return self.roles.months.ensure_partitions(months)

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
        self.roles.close()

    def ping(self) -> None:
        """Raise :class:`StoreUnavailable` unless the database answers now."""
        self.recorder.ping()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def append(
        self, events: Iterable[Event], batch_size: int = BATCH, *, source: str = "append"
    ) -> AppendResult:
        """Append events; re-sent events (same id) are ignored. Each batch is one transaction.

        An event the database refuses (:class:`RecordRefused`) does not fail its batch: it is
        isolated, kept as a dead letter naming ``source``, and the rest is stored. Raises
        :class:`StoreUnavailable` when the database is away (nothing of the batch is written).
        """
        return self._appender.append(events, batch_size, source=source)

    def prepare(self, events: Sequence[Event]) -> Prepared:
        """``events`` made ready to write (limits, escaping, redaction, their projection), with
        no database work: for :meth:`append_prepared`, by a caller that prepares a batch while
        another is written (the receiver)."""
        return self._appender.prepare(events)

    def append_prepared(
        self, batches: Sequence[Prepared], *, source: str = "append"
    ) -> AppendResult:
        """Append batches :meth:`prepare` made (by this store, or one opened alike), in one
        transaction; otherwise as :meth:`append`."""
        return self._appender.append_prepared(batches, source=source)

    def import_all(
        self, datasets: Sequence[Dataset], events: Sequence[Event], batch_size: int = BATCH
    ) -> AppendResult:
        """Register datasets and append events in one transaction: all of it or nothing.
        An event the database refuses fails the whole import with :class:`RecordRefused`
        naming it (the caller knows where it came from)."""
        return self._appender.import_all(datasets, events, batch_size)

    def _append_strict(self, events: list[Event]) -> int:
        return self._appender.append_strict(events)
