"""`runs show` of a huge run, and of one page of any run's steps: what the store adds up and
the few steps asked for, never the whole trace (a run of 50,000 spans holds 100,000 events)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from agentdocket.commands.common import console, echo_json, new_table
from agentdocket.commands.run_tables import step_summary, steps_table, verdicts_table
from agentdocket.events import Event, event_to_json

if TYPE_CHECKING:
    from rich.table import Table

    from agentdocket.store import Run, Store

# A run of more events than this is shown as a summary (`runs show` reads the whole of a
# smaller one, as it always did).
HUGE_EVENTS = 20_000
# failing steps listed at most in a summary (their number is always told)
FAILING_SHOWN = 50
# verdicts listed at most in a summary
VERDICTS_SHOWN = 200


def pages_of(steps: int, size: int) -> int:
    return max(1, -(-steps // size))


def show_page(store: Store, run: Run, page: int, size: int, width: int, fmt: str) -> None:
    """Page ``page`` of the run's steps, ``size`` a page, in trace order."""
    tid = run["trace_id"]
    steps = store.trace_pages.count_steps(tid)
    pages = pages_of(steps, size)
    events = store.trace_pages.steps_page(tid, page, size)
    if fmt == "json":
        echo_json(
            {
                "run": run,
                "page": page,
                "page_size": size,
                "pages": pages,
                "steps": steps,
                "events": [event_to_json(e) for e in events],
            }
        )
        return
    console.print(f"[bold]run {tid}[/]: steps, page {page:,} of {pages:,}", highlight=False)
    if not events:
        console.print(f"no steps on page {page:,}: the run has {steps:,} steps", highlight=False)
        return
    start = run["started_at"] or run["first_ts"] or events[0].ts
    parents = store.trace_pages.parents(tid)
    console.print(steps_table(events, start, width, 0, parents))
    first = (page - 1) * size + 1
    console.print(
        f"steps {first:,}-{first + len(events) - 1:,} of {steps:,}"
        + (f"; next: --page {page + 1}" if page < pages else ""),
        highlight=False,
    )


def show_summary(
    store: Store, run: Run, size: int, slowest_n: int, width: int, fmt: str, header: Any
) -> None:
    """A huge run: what it holds (counts by kind, tokens, cost, failures), its slowest steps,
    its failing steps (at most :data:`FAILING_SHOWN`), and how to page through the rest."""
    tid = run["trace_id"]
    pages = store.trace_pages
    summary = pages.summary(tid)
    assert summary is not None
    slowest = pages.slowest(tid, slowest_n)
    failing = pages.failing(tid, FAILING_SHOWN) if summary.failing else []
    verdicts = pages.of_kind(tid, "verdict", VERDICTS_SHOWN) if "verdict" in summary.kinds else []
    cost = store.costs.run_total(tid)
    page_count = pages_of(summary.steps, size)
    if fmt == "json":
        held: dict[str, Any] = {
            "events": summary.events,
            "steps": summary.steps,
            "kinds": summary.kinds,
            "failing": summary.failing,
            "input_tokens": summary.input_tokens,
            "output_tokens": summary.output_tokens,
        }
        held.update(cost)
        out: dict[str, Any] = {
            "run": run,
            "summary": held,
            "slowest": [event_to_json(e) for e in slowest],
            "failing": [event_to_json(e) for e in failing],
            "verdicts": [event_to_json(e) for e in verdicts],
            "pages": {"count": page_count, "size": size},
        }
        echo_json(out)
        return
    header()
    kinds = ", ".join(f"{n:,} {k}" for k, n in summary.kinds.items())
    console.print(f"{summary.events:,} events ({kinds})", highlight=False)
    console.print(f"{_tokens(summary.input_tokens, summary.output_tokens)}; {_cost(cost)}")
    start = run["started_at"] or run["first_ts"]
    assert start is not None
    console.print(_listed(f"slowest {len(slowest)} steps", slowest, start, width, timed=True))
    if summary.failing:
        title = f"failing steps: {summary.failing:,}"
        if summary.failing > len(failing):
            title += f" (the first {len(failing)} shown)"
        console.print(_listed(title, failing, start, width, timed=False))
    else:
        console.print("failing steps: none", highlight=False)
    if verdicts:
        console.print(verdicts_table(verdicts))
    labels = summary.kinds.get("label", 0)
    if labels:
        console.print(f"{labels} labels from people: agentdocket feedback list", highlight=False)
    console.print(
        f"every step: {page_count:,} pages of {size:,} (--page 1 to --page {page_count}, "
        "--page-size N)",
        highlight=False,
    )


def _tokens(tokens_in: int | None, tokens_out: int | None) -> str:
    if tokens_in is None and tokens_out is None:
        return "tokens: -"
    return f"tokens {tokens_in or 0:,} in / {tokens_out or 0:,} out"


def _cost(cost: dict[str, Any]) -> str:
    if cost["priced_by"] is None:
        return "cost: not priced yet (agentdocket costs refresh)"
    text = "cost: -" if cost["cost_usd"] is None else f"cost ${cost['cost_usd']:.6f}"
    return text + (f" ({cost['unpriced_calls']} calls unpriced)" if cost["unpriced_calls"] else "")


def _listed(title: str, events: list[Event], start: datetime, width: int, *, timed: bool) -> Table:
    """Steps picked out of a run (no depth: their parents were not read), with their time
    into the run and, for the slowest, how long each took."""
    table = new_table(title=title, title_justify="left", show_header=True, header_style="bold")
    for col in ("seq", "+ms", *(("ms",) if timed else ()), "kind", "span", "what"):
        table.add_column(col, overflow="fold")
    for e in events:
        text = step_summary(e)
        if len(text) > width:
            text = text[: width - 1] + "…"
        error = e.payload.get("error")
        shown = f"[red]{text}[/]" if error else text
        offset = f"{(e.ts - start).total_seconds() * 1000:.0f}"
        took = (f"{float(e.payload.get('duration_ms') or 0):,.0f}",) if timed else ()
        table.add_row(str(e.seq), offset, *took, e.kind, e.span_id, shown)
    return table
