"""Reading one trace a part at a time, however many events it holds: what it holds (counts by
kind, tokens, failures) added up by the database, its slowest and its failing steps, a page of
its steps, and its events in pages (keyset pagination) for a reader that writes them as it
reads them (``runs show`` of a huge run, ``export traces``).

None of it loads the whole trace: a summary of a run of 100,000 events reads a few rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from agentdocket.events import JUDGEMENT_KINDS, Event
from agentdocket.store.recorder import EVENT_COLUMNS, Recorder

# a trace's month (agentdocket.store.reading, which reads a trace whole, asks the same)
MONTH_OF = "SELECT run_month FROM trace_months WHERE trace_id = ?"
# events read at a time by :meth:`TracePages.events`
PAGE = 5_000
ORDER = "seq, ts, event_id"  # a trace's order (agentdocket.store.reading)
STEPS = "kind NOT IN ({})".format(", ".join(f"'{k}'" for k in sorted(JUDGEMENT_KINDS)))
# kinds whose payload's "error" says the step failed (agentdocket.store.projections counts them)
FAILING_KINDS = ("tool.returned", "sql.executed", "llm.called", "step")
# kinds whose payload says how long the step took (duration_ms)
TIMED_KINDS = ("tool.returned", "sql.executed", "llm.called", "retrieval", "step")


@dataclass(frozen=True)
class TraceSummary:
    """What one trace holds, as the database adds it up."""

    events: int
    steps: int
    kinds: dict[str, int]
    failing: int
    input_tokens: int | None
    output_tokens: int | None


class TracePages:
    """One trace read in parts (no part grows with the trace's size but the page asked for)."""

    def __init__(self, db: Recorder) -> None:
        self.db = db
        self._duration = f"CAST({db.json_text('payload', 'duration_ms')} AS {db.float_type})"
        error = db.json_text("payload", "error")
        kinds = ", ".join(f"'{k}'" for k in FAILING_KINDS)
        status = db.json_text("payload", "status")
        self._failing = (
            f"(kind IN ({kinds}) AND {error} IS NOT NULL OR kind = 'step' AND {status} = 'error')"
        )
        self._columns = ", ".join(EVENT_COLUMNS)
        self._in_trace = db.trace_in_month

    def _month(self, trace_id: str) -> Any:
        found = self.db.read(MONTH_OF, (trace_id,))
        return found[0][0] if found else None

    def summary(self, trace_id: str) -> TraceSummary | None:
        """Counts by kind, failing steps, and the model calls' tokens (None: no call said)."""
        month = self._month(trace_id)
        if month is None:
            return None
        tokens = [
            f"sum(CASE WHEN kind = 'llm.called' THEN "
            f"CAST({self.db.json_text('payload', key)} AS bigint) END)"
            for key in ("input_tokens", "output_tokens")
        ]
        # one pass over the trace's rows: each kind's count, failures and tokens
        rows = self.db.read(
            f"SELECT kind, count(*), sum(CASE WHEN {self._failing} THEN 1 ELSE 0 END), "
            f"{', '.join(tokens)} FROM events WHERE {self._in_trace} GROUP BY kind",
            (trace_id, month),
        )
        if not rows:
            return None
        ordered = sorted(rows, key=lambda r: (-int(r[1]), str(r[0])))
        kinds = {str(r[0]): int(r[1]) for r in ordered}
        tokens_in = [int(r[3]) for r in rows if r[3] is not None]
        tokens_out = [int(r[4]) for r in rows if r[4] is not None]
        return TraceSummary(
            events=sum(kinds.values()),
            steps=sum(n for k, n in kinds.items() if k not in JUDGEMENT_KINDS),
            kinds=kinds,
            failing=sum(int(r[2]) for r in rows),
            input_tokens=sum(tokens_in) if tokens_in else None,
            output_tokens=sum(tokens_out) if tokens_out else None,
        )

    def slowest(self, trace_id: str, n: int) -> list[Event]:
        """The ``n`` steps that took longest (by their ``duration_ms``), slowest first."""
        timed = ", ".join(f"'{k}'" for k in TIMED_KINDS)
        return self._select(
            trace_id,
            f"AND kind IN ({timed}) AND {self._duration} IS NOT NULL "
            f"ORDER BY {self._duration} DESC, {ORDER} LIMIT ?",
            (n,),
        )

    def of_kind(self, trace_id: str, kind: str, n: int) -> list[Event]:
        """The first ``n`` events of one kind, in trace order."""
        return self._select(trace_id, f"AND kind = ? ORDER BY {ORDER} LIMIT ?", (kind, n))

    def failing(self, trace_id: str, n: int) -> list[Event]:
        """The first ``n`` failing steps, in trace order."""
        return self._select(trace_id, f"AND {self._failing} ORDER BY {ORDER} LIMIT ?", (n,))

    def steps_page(self, trace_id: str, page: int, size: int) -> list[Event]:
        """Page ``page`` (from 1) of the trace's steps (verdicts and labels left out), ``size``
        steps a page, in trace order. The sort that skips the pages before carries the keys
        alone; the page's own rows are then read by key."""
        month = self._month(trace_id)
        if month is None:
            return []
        keys = self.db.read(
            f"SELECT event_id FROM events WHERE {self._in_trace} AND {STEPS} "
            f"ORDER BY {ORDER} LIMIT ? OFFSET ?",
            (trace_id, month, size, (page - 1) * size),
        )
        place = {str(k[0]): i for i, k in enumerate(keys)}
        rows = self.db.read_among(
            f"SELECT {self._columns} FROM events WHERE {self._in_trace} AND {{among}}",
            "event_id",
            [k[0] for k in keys],
            (trace_id, month),
        )
        event_id = EVENT_COLUMNS.index("event_id")
        rows.sort(key=lambda r: place[str(r[event_id])])
        return [self.db.event_of(r) for r in rows]

    def count_steps(self, trace_id: str) -> int:
        """How many steps the trace has (verdicts and labels left out)."""
        month = self._month(trace_id)
        if month is None:
            return 0
        [(n,)] = self.db.read(
            f"SELECT count(*) FROM events WHERE {self._in_trace} AND {STEPS}", (trace_id, month)
        )
        return int(n)

    def parents(self, trace_id: str) -> dict[str, str | None]:
        """Each span's parent span (no payload read): what a page's indentation needs."""
        month = self._month(trace_id)
        if month is None:
            return {}
        rows = self.db.read(
            f"SELECT DISTINCT span_id, parent_span_id FROM events WHERE {self._in_trace}",
            (trace_id, month),
        )
        return {str(s): p for s, p in rows}

    def _select(self, trace_id: str, rest: str, params: tuple[Any, ...]) -> list[Event]:
        month = self._month(trace_id)
        if month is None:
            return []
        sql = f"SELECT {self._columns} FROM events WHERE {self._in_trace} {rest}"
        return [self.db.event_of(r) for r in self.db.read(sql, (trace_id, month, *params))]

    def events(self, trace_id: str, page: int = PAGE) -> Iterator[Event]:
        """Every event of the trace in trace order, read ``page`` at a time: each page starts
        after the last row of the one before (keyset pagination: short queries, no cursor
        held open between them), so what is held at once is one page, whatever the trace's
        size. (No index holds a trace in its order: each page sorts the trace's keys again,
        which costs more, the more pages; the page is large for that.)"""
        month = self._month(trace_id)
        if month is None:
            return
        select = f"SELECT {self._columns} FROM events WHERE {self._in_trace}"
        first = f"{select} ORDER BY {ORDER} LIMIT ?"
        after = f"{select} AND ({ORDER}) > (?, ?, ?) ORDER BY {ORDER} LIMIT ?"
        key = [EVENT_COLUMNS.index(c) for c in ("seq", "ts", "event_id")]
        rows = self.db.read(first, (trace_id, month, page))
        while rows:
            for row in rows:
                yield self.db.event_of(row)
            if len(rows) < page:
                return
            last = rows[-1]
            rows = self.db.read(after, (trace_id, month, *(last[i] for i in key), page))
