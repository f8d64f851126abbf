"""Run months: the month a run and everything about it are stored under (migration 0010),
recorded by trace in ``trace_months`` (migration 0012).

A trace takes its month when its first events are stored: the month (UTC) of the earliest of
them. Every later event of the trace (a late span, a verdict about the run) takes the month
already stored, so a run never straddles two partitions and retention drops whole runs. With
OpenTelemetry the root span usually arrives last, after its children, so "the run's start" is
in practice the start of the earliest span that arrived first; the two differ only for a run
whose first exported span began in the month after the run did.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime
from typing import Any

from agentdocket.events import Event
from agentdocket.store.roles import EventLog

COLUMN = "run_month"


def month_of(ts: datetime) -> date:
    """The first day of ``ts``'s month, in UTC."""
    t = ts.astimezone(UTC)
    return date(t.year, t.month, 1)


AHEAD = 3  # months ahead of the current one that always have partitions


def months_ahead(now: datetime | None = None, ahead: int = AHEAD) -> set[date]:
    """This month and the ``ahead`` after it."""
    first = month_of(now or datetime.now(UTC))
    return {
        date(first.year + (first.month - 1 + i) // 12, (first.month - 1 + i) % 12 + 1, 1)
        for i in range(ahead + 1)
    }


def needed(events: Sequence[Event]) -> set[date]:
    """Every month a batch of events could be stored under (a superset: a new trace takes the
    month of one of its events, a known trace the month it has)."""
    return {month_of(e.ts) for e in events}


def _subject(event: Event) -> str | None:
    if event.kind == "verdict":
        subject = event.payload.get("subject_trace_id")
        if isinstance(subject, str) and subject != event.trace_id:
            return subject
    return None


def earliest(events: Sequence[Event]) -> dict[str, datetime]:
    """The time of the earliest of ``events`` of each trace, and of the runs their verdicts
    judge (the verdict's)."""
    found: dict[str, datetime] = {}
    for e in events:
        ts = e.ts
        seen = found.get(e.trace_id)
        if seen is None or ts < seen:
            found[e.trace_id] = ts
        if e.kind == "verdict" and (subject := _subject(e)) is not None:
            seen = found.get(subject)
            if seen is None or ts < seen:
                found[subject] = ts
    return found


def assign(
    log: EventLog, conn: Any, events: Sequence[Event], first: dict[str, datetime] | None = None
) -> dict[str, date]:
    """Each trace's month, for the traces of ``events`` and the runs their verdicts judge (see
    :func:`place`)."""
    return place(log, conn, events, first)[0]


def place(
    log: EventLog, conn: Any, events: Sequence[Event], first: dict[str, datetime] | None = None
) -> tuple[dict[str, date], frozenset[str]]:
    """Each trace's month, for the traces of ``events`` and the runs their verdicts judge: the
    stored month where the trace has events, else the month of its earliest event here (of the
    verdict, for a judged run with no events); and the traces new here, which nothing stored
    is about yet (no run, no verdict). Runs in the caller's write transaction; on PostgreSQL
    the new traces are locked first, so two writers never give one two months (nor both take
    it for new). ``first``: :func:`earliest` of ``events``, where the caller has it."""
    earliest_ = earliest(events) if first is None else first
    months = log.stored_months(conn, list(earliest_))
    new = sorted(set(earliest_) - set(months))
    if new and log.lock_new_traces(conn, new):
        months.update(log.stored_months(conn, new))  # stored meanwhile by who held the lock
    given = {t: month_of(earliest_[t]) for t in new if t not in months}
    log.keep_months(conn, given)
    months.update(given)
    return months, frozenset(given)
