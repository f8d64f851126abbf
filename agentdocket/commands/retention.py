"""`agentdocket retention`: whole months of runs leave the log (agentdocket.store.retention)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import click
from rich.table import Table

from agentdocket.commands.common import FORMAT, console, echo_json, open_from
from agentdocket.events import format_ts
from agentdocket.store.month_ops import Month
from agentdocket.store.retention import parse_keep

COUNTED = ("runs", "events", "verdicts", "judge_calls")


def _keep(ctx: click.Context, param: click.Parameter, value: str) -> str:
    try:
        parse_keep(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc).split(": ", 1)[-1], ctx, param) from None
    return value


@click.command()
@click.option(
    "--keep",
    required=True,
    callback=_keep,
    help="How much to keep, counted back from now: 90d, 12w or 36h.",
)
@click.option("--dry-run", is_flag=True, help="Say what would go; change nothing.")
@FORMAT
@click.pass_context
def retention(ctx: click.Context, keep: str, dry_run: bool, fmt: str) -> None:
    """Drop whole months of runs older than the window kept: their events, runs, verdicts,
    judge calls and dashboard rollups, and process samples older than the window.

    A month goes once all of it is older than the window and none of its runs has an event
    inside the window (such a month is kept and reported as refused). Each month dropped is
    recorded as a `retention.applied` event. On PostgreSQL a month is a partition, dropped
    whole; on SQLite its rows are deleted (the one command allowed to delete from the log).

    \b
    Examples:
      agentdocket retention --keep 90d --dry-run
      agentdocket retention --keep 90d
      agentdocket retention --keep 26w --format json
    """
    failed: list[tuple[Month, str]] = []
    rollups = None
    with open_from(ctx) as store:
        plan = store.retention.plan(keep)
        if dry_run:
            dropped, refused, samples, trace_id = plan.drop, plan.refused, plan.samples, None
        else:

            def shown(month: Month) -> None:
                if fmt != "json":
                    console.print(f"dropped {month.label}: {_summary(month)}", highlight=False)

            applied = store.retention.apply(plan, progress=shown)
            dropped, refused = applied.dropped, applied.refused
            samples, trace_id = applied.samples, applied.trace_id
            failed, rollups = applied.failed, applied.rollups
    result = {
        "keep": keep,
        "window_start": format_ts(plan.window_start),
        "dry_run": dry_run,
        "dropped": [m.as_dict() for m in dropped],
        "refused": [m.as_dict() for m in refused],
        "samples": samples,
        "trace_id": trace_id,
        "failed": [{**m.as_dict(), "reason": why} for m, why in failed],
        "rollups": rollups,
    }
    # A month dropped is committed and recorded: then the command succeeds, whatever else
    # failed. Only when every month to drop failed did it do nothing it was asked.
    nothing_done = bool(failed) and not dropped
    if fmt == "json":
        echo_json(result)
        if nothing_done:
            ctx.exit(1)
        return
    _say(result, dropped, refused, failed)
    if nothing_done:
        ctx.exit(1)


def _say(
    result: dict[str, Any],
    dropped: Sequence[Month],
    refused: Sequence[Month],
    failed: Sequence[tuple[Month, str]],
) -> None:
    """The months dropped as a table; those kept, and why, on standard error."""
    verb = "would drop" if result["dry_run"] else "dropped"
    if not dropped and not refused and not failed:
        console.print(
            f"nothing to drop: no month ended before {result['window_start']}", highlight=False
        )
    if dropped:
        table = Table(title=f"{verb} (window from {result['window_start']})", title_justify="left")
        table.add_column("month")
        for col in COUNTED:
            table.add_column(col.replace("_", " "), justify="right")
        for m in dropped:
            table.add_row(m.label, *(f"{m.rows[c]:,}" for c in COUNTED))
        console.print(table)
    for m in refused:
        print(
            f"kept {m.label}: {m.newer_runs:,} of its runs have events inside the window",
            file=sys.stderr,
        )
    for m, why in failed:
        print(f"kept {m.label} for now: {why}", file=sys.stderr)
    rollups = result["rollups"]
    if rollups and rollups != "refreshed":
        print(f"the dropped hours' dashboard rollups are {rollups}", file=sys.stderr)
    noun = "samples would go" if result["dry_run"] else "samples went"
    console.print(f"{result['samples']:,} process {noun}", highlight=False)
    if trace_id := result["trace_id"]:
        console.print(f"recorded as retention.applied in trace {trace_id}", highlight=False)


def _summary(month: Month) -> str:
    return ", ".join(f"{month.rows[c]:,} {c.replace('_', ' ')}" for c in COUNTED)
