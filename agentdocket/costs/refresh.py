"""Pricing the log's model calls into ``call_costs``: every call, under one price book, in one
transaction (so the projection always holds one set of prices, named by ``priced_by``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from typing import Any

from agentdocket.costs.prices import PriceBook, Usage, reported
from agentdocket.events import Event
from agentdocket.store import Store
from agentdocket.store.arrivals import Position
from agentdocket.store.costs import CostRow, StoredCall


@dataclass(frozen=True)
class Priced:
    """What a costs refresh priced (a rollup refresh's report is
    :class:`agentdocket.store.upkeep.Refreshed`)."""

    calls: int
    priced: int
    unpriced: int
    version: str
    whole: bool = True  # every call priced again (else only new ones)
    # where the log's arrivals were read up to: the next refresh reads on from here
    position: Position = field(default_factory=Position)


def cost_row(call: StoredCall, book: PriceBook) -> CostRow:
    p = call.payload
    usage = Usage.of_call(p, call.ts)
    priced = book.price(usage)
    amount, currency, source = reported(p)
    return CostRow(
        event_id=call.event_id,
        trace_id=call.trace_id,
        ts=call.ts,
        model=usage.model,
        provider=usage.provider,
        role="judge" if call.judge else p.get("role"),
        judge=call.judge,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_creation_tokens=usage.cache_creation_tokens,
        cost=None if priced.cost is None else float(priced.cost),
        priced_by=book.version,
        rate=priced.by,
        unpriced=priced.unpriced,
        agent=call.run[0],
        agent_version=call.run[1],
        dataset=call.run[2],
        case_id=call.run[3],
        reported_cost=amount,
        reported_currency=currency,
        reported_source=source,
    )


def refresh(
    store: Store,
    book: PriceBook,
    progress: Callable[[int], None] | None = None,
    *,
    whole: bool = False,
    after: Position | None = None,
) -> Priced:
    """Price the log's model calls with ``book`` and keep the rows (the log is read, never
    changed): every call when ``whole``, or when the rows kept were priced by other prices;
    else only the calls that have no row yet. ``after``: the ``position`` an earlier refresh
    returned; then only the calls that arrived since are read (what a service pricing every
    minute wants: the read grows with the new calls, not with the log). ``progress(calls
    priced so far)`` after each batch."""
    upto = store.arrivals.head()  # first: nothing can arrive before it once it is read
    if after is None:
        whole = whole or store.costs.priced_by() != [book.version]
    else:  # a refresh keeps every row under one price book: one row tells which
        whole = whole or store.costs.priced_by_one() != book.version
    rows: list[CostRow] = []
    if whole or after is None:
        known = set() if whole else store.costs.priced_ids()
        for batch in store.costs.calls():
            rows.extend(cost_row(call, book) for call in batch if call.event_id not in known)
            if progress is not None:
                progress(len(rows))
    else:
        calls = store.costs.calls_between(after, upto)
        # priced already by another refresh (a `costs refresh` meanwhile)
        known = store.costs.priced_ids([c.event_id for c in calls])
        rows = [cost_row(call, book) for call in calls if call.event_id not in known]
        if progress is not None:
            progress(len(rows))
    if rows or whole:
        store.costs.replace(rows, whole=whole)
    unpriced = sum(1 for r in rows if r.cost is None)
    return Priced(len(rows), len(rows) - unpriced, unpriced, book.version, whole, upto)


def calls_of(events: Iterable[Event]) -> list[StoredCall]:
    """The model calls among a run's events, as the pricing reads them."""
    return [
        StoredCall(str(e.event_id), e.trace_id, e.ts, dict(e.payload))
        for e in events
        if e.kind == "llm.called"
    ]


def run_costs(calls: list[StoredCall], book: PriceBook) -> dict[str, Any]:
    """A run's model calls priced now (what `runs show` prints): each call, the total of the
    priced ones, and how many no price covers."""
    return _summed([cost_row(call, book) for call in calls], book.version)


def stored_costs(stored: list[dict[str, Any]]) -> dict[str, Any]:
    """A run's model calls as ``call_costs`` holds them (the last refresh's prices), in the
    form of :func:`run_costs`."""
    names = {f.name for f in fields(CostRow)}
    rows = [CostRow(**{k: v for k, v in r.items() if k in names}) for r in stored]
    return _summed(rows, rows[0].priced_by if rows else "")


def _summed(rows: list[CostRow], version: str) -> dict[str, Any]:
    priced = [r.cost for r in rows if r.cost is not None]
    told = [r.reported_usd for r in rows if r.reported_usd is not None]
    return {
        "priced_by": version,
        "total_usd": sum(priced) if priced else None,
        "unpriced_calls": len(rows) - len(priced),
        "reported_usd": sum(told) if told else None,
        "reported_calls": len(told),
        "calls": [
            {
                "event_id": r.event_id,
                "model": r.model,
                "provider": r.provider,
                "role": r.role,
                "input_tokens": r.input_tokens,
                "output_tokens": r.output_tokens,
                "cache_read_tokens": r.cache_read_tokens,
                "cache_creation_tokens": r.cache_creation_tokens,
                "cost_usd": r.cost,
                "rate": r.rate,
                "unpriced": r.unpriced,
                "reported_cost": r.reported_cost,
                "reported_currency": r.reported_currency,
                "reported_source": r.reported_source,
            }
            for r in rows
        ],
    }
