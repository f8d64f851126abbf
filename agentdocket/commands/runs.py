"""`agentdocket runs list|show`: inspecting recorded runs."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from agentdocket.commands.common import (
    FORMAT,
    console,
    echo_json,
    new_table,
    open_from,
    resolve_trace,
    shorten,
)

if TYPE_CHECKING:
    from rich.table import Table

    from agentdocket.store import Run
from agentdocket.commands.costs import PRICES
from agentdocket.commands.run_tables import steps_table, verdicts_table
from agentdocket.events import JUDGEMENT_KINDS, Event, event_to_json, format_ts


@click.group()
def runs() -> None:
    """Inspect recorded runs."""


def _when(value: Any) -> str:
    return format_ts(value)[:19].replace("T", " ") if value else "-"


def _duration(run: Run) -> str:
    if run["started_at"] and run["ended_at"]:
        seconds = (run["ended_at"] - run["started_at"]).total_seconds()
        return f"{seconds:.2f}s" if seconds >= 1 else f"{seconds * 1000:.1f}ms"
    return "-"


@runs.command(name="list")
@click.option("--dataset", help="Only runs of this dataset.")
@click.option("--agent", help="Only runs of this agent.")
@click.option(
    "--conversation", help="Only runs of this conversation (gen_ai.conversation.id, session.id)."
)
@click.option("--limit", default=50, show_default=True, help="At most this many (0: all).")
@FORMAT
@click.pass_context
def runs_list(
    ctx: click.Context,
    dataset: str | None,
    agent: str | None,
    conversation: str | None,
    limit: int,
    fmt: str = "table",
) -> None:
    """List runs, newest first.

    \b
    Examples:
      agentdocket runs list
      agentdocket runs list --dataset support --agent qa --limit 20
      agentdocket runs list --conversation c-42 --format json
    """
    with open_from(ctx) as store:
        rows = store.reader.list_runs(
            dataset=dataset, agent=agent, conversation=conversation, limit=limit or None
        )
        total = store.reader.count_runs(dataset=dataset, agent=agent, conversation=conversation)
        costs = _run_costs(store, [r["trace_id"] for r in rows])
    if fmt == "json":
        echo_json({"total": total, "runs": [{**r, **costs.get(r["trace_id"], {})} for r in rows]})
        return
    table = new_table(title=f"runs ({len(rows)} of {total})", title_justify="left")
    for col in (
        "trace",
        "started",
        "agent",
        "strategy",
        "case",
        "question",
        "status",
        "steps",
        "errors",
        "time",
        "cost",
    ):
        table.add_column(col, no_wrap=col in ("trace", "started"))
    for r in rows:
        agent_name = r["agent"] or "-"
        if r["agent_version"]:
            agent_name += f" {r['agent_version']}"
        case = f"{r['dataset']}/{r['case_id']}" if r["dataset"] and r["case_id"] else "-"
        status = r["status"] or "running"
        style = {"ok": "green", "error": "red"}.get(status, "yellow")
        table.add_row(
            r["trace_id"][:12],
            _when(r["started_at"] or r["first_ts"]),
            agent_name,
            r["strategy"] or "-",
            case,
            shorten(r["question"], 48),
            f"[{style}]{status}[/]",
            str(r["n_steps"]),
            str(r["n_errors"]),
            _duration(r),
            _cost_cell(costs.get(r["trace_id"])),
        )
    console.print(table)
    if costs and not any(c["priced_by"] for c in costs.values()):
        console.print("cost: not priced yet (agentdocket costs refresh)", highlight=False)


def _run_costs(store: Any, trace_ids: list[str]) -> dict[str, dict[str, Any]]:
    """The listed runs' costs as the last `costs refresh` priced them (the one price book every
    command shows): per run, dollars, calls and unpriced calls; runs with no model call are
    absent."""
    out: dict[str, dict[str, Any]] = {}
    for row in store.costs.of_runs(trace_ids):
        found = out.setdefault(
            row["trace_id"],
            {"cost_usd": None, "calls": 0, "unpriced_calls": 0, "priced_by": row["priced_by"]},
        )
        found["calls"] += 1
        if row["cost"] is None:
            found["unpriced_calls"] += 1
        else:
            found["cost_usd"] = (found["cost_usd"] or 0.0) + row["cost"]
    return out


def _cost_cell(cost: dict[str, Any] | None) -> str:
    if cost is None:
        return "-"
    text = "-" if cost["cost_usd"] is None else f"${cost['cost_usd']:.6f}"
    return text + (f" ({cost['unpriced_calls']} unpriced)" if cost["unpriced_calls"] else "")


@runs.command(name="show")
@click.argument("trace_id")
@click.option("--width", default=160, show_default=True, help="Truncate summaries to this.")
@click.option(
    "--steps",
    "max_steps",
    default=100,
    show_default=True,
    type=click.IntRange(min=0),
    help="Show at most this many steps, the first and the last (0: every step).",
)
@click.option(
    "--page",
    type=click.IntRange(min=1),
    help="Show this page of the run's steps (from 1), --page-size steps a page.",
)
@click.option(
    "--page-size",
    default=100,
    show_default=True,
    type=click.IntRange(min=1),
    help="Steps a page, for --page (and the pages a huge run's summary counts).",
)
@click.option(
    "--slowest",
    "slowest",
    default=10,
    show_default=True,
    type=click.IntRange(min=0),
    help="In a huge run's summary: this many of its slowest steps.",
)
@PRICES
@FORMAT
@click.pass_context
def runs_show(
    ctx: click.Context,
    trace_id: str,
    width: int,
    max_steps: int,
    page: int | None,
    page_size: int,
    slowest: int,
    prices: Path | None,
    fmt: str,
) -> None:
    """Show one run as a timeline of its steps (TRACE_ID may be abbreviated).

    A run of more steps than --steps shows its first and last steps, and what kinds the
    others are; --steps 0 shows them all, --format json gives every event. Its model
    calls' costs are the last `costs refresh`'s (what `report` and `costs show` add up), or
    priced now with --prices (or $AGENTDOCKET_PRICES) when not refreshed yet.

    A huge run (over 20,000 events) is shown as a summary instead, read without loading it:
    its counts by kind, tokens and cost, its --slowest steps, its failing steps, and how many
    pages its steps make; --page K shows page K of any run's steps (--steps 0: a huge run's
    whole timeline).

    \b
    Examples:
      agentdocket runs show 4bf92f35
      agentdocket runs show 4bf92f35 --steps 0
      agentdocket runs show 4bf92f35 --page 3 --page-size 50
      agentdocket runs show 4bf92f3577b34da6a3ce929d0e0e4736 --format json
    """
    from agentdocket.commands.run_pages import HUGE_EVENTS, show_page, show_summary

    with open_from(ctx) as store:
        tid = resolve_trace(store, trace_id)
        run = store.reader.run(tid)
        assert run is not None
        if page is not None:
            show_page(store, run, page, page_size, width, fmt)
            return
        if run["n_events"] > HUGE_EVENTS and max_steps:
            show_summary(store, run, page_size, slowest, width, fmt, lambda: _header(tid, run))
            return
        trace = store.reader.read_trace(tid)
        stored = store.costs.of_runs([tid]) if prices is None else []
    assert trace is not None
    events = list(trace.events)
    costs = _costs(events, prices, stored)
    if fmt == "json":
        echo_json(
            {
                "run": run,
                "events": [event_to_json(e) for e in events],
                "case": trace.case.to_json() if trace.case is not None else None,
                "costs": costs,
            }
        )
        return
    _header(tid, run)
    steps = [e for e in events if e.kind not in JUDGEMENT_KINDS]
    verdicts = [e for e in events if e.kind == "verdict"]
    console.print(steps_table(steps, (steps or events)[0].ts, width, max_steps))
    if 0 < max_steps < len(steps):
        kinds = Counter(e.kind for e in steps)
        console.print(
            f"{len(steps):,} steps ({', '.join(f'{n:,} {k}' for k, n in kinds.most_common())}); "
            f"{len(steps) - max_steps:,} not shown: --steps 0 shows them all",
            highlight=False,
        )
    if verdicts:
        console.print(verdicts_table(verdicts))
    if costs["calls"]:
        console.print(_costs_table(costs))
    labels = sum(1 for e in events if e.kind == "label")
    if labels:
        console.print(f"{labels} labels from people: agentdocket feedback list", highlight=False)
    if trace.case is not None:
        c = trace.case
        console.print(
            f"case {c.case_id}: expected plan {c.expected_plan or '-'}; "
            f"reference {c.reference_answer or c.stub_response or '-'}"
        )


def _header(tid: str, run: Run) -> None:
    """The run's id, agent, strategy, models, case, status, time, question and answer."""
    console.print(f"[bold]run {tid}[/]")
    case = f"{run['dataset']}/{run['case_id']}" if run["dataset"] else "-"
    models = ", ".join(f"{k}={v}" for k, v in (run["models"] or {}).items()) or "-"
    console.print(
        f"agent {run['agent'] or '-'} {run['agent_version'] or ''}  strategy "
        f"{run['strategy'] or '-'}  models {models}  case {case}  status "
        f"{run['status'] or 'running'}  time {_duration(run)}"
    )
    console.print(f"question: {run['question'] or '-'}")
    console.print(f"answer: {run['answer'] or '-'}")


def _costs(
    events: list[Event], prices: Path | None, stored: list[dict[str, Any]]
) -> dict[str, Any]:
    """The run's model calls priced at their own times, by the one price book every command
    shows: as the last `costs refresh` priced them (``stored``, when it priced every call of
    the run); else now, by the price file of --prices or $AGENTDOCKET_PRICES."""
    from agentdocket.costs.prices import price_book, price_book_from_env
    from agentdocket.costs.refresh import calls_of, run_costs, stored_costs

    calls = calls_of(events)
    if stored and {r["event_id"] for r in stored} >= {c.event_id for c in calls}:
        return stored_costs(stored)
    return run_costs(calls, price_book(prices) if prices is not None else price_book_from_env())


def _costs_table(costs: dict[str, Any]) -> Table:
    total, unpriced = costs["total_usd"], costs["unpriced_calls"]
    title = "cost: " + ("-" if total is None else f"${total:.6f}")
    if unpriced:
        title += f" ({unpriced} calls unpriced)"
    told = costs.get("reported_usd")
    if told is not None:  # the provider's own figure, beside ours
        title += f"; reported by the spans: ${told:.6f}"
        if total is not None:
            title += f" (ours {total - told:+.6f})"
    table = new_table(title=title, title_justify="left", show_header=True, header_style="bold")
    for col in ("model", "role", "tokens in / out", "cost", "reported"):
        table.add_column(col, overflow="fold")
    for c in costs["calls"]:
        cost = "unpriced" if c["cost_usd"] is None else f"${c['cost_usd']:.6f}"
        if c["unpriced"] and c["cost_usd"] is None:
            cost = f"unpriced: {c['unpriced']}"
        tokens = f"{c['input_tokens'] or '-'} / {c['output_tokens'] or '-'}"
        amount = c.get("reported_cost")
        shown = "-" if amount is None else f"{amount:.6f} {c.get('reported_currency') or 'USD'}"
        table.add_row(c["model"], c["role"] or "-", tokens, cost, shown)
    return table
