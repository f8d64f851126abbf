"""`agentdocket retention`: whole months of runs leave the log (agentdocket.store.retention)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from agentdocket.commands.common import FORMAT, confirm, console, echo_json, new_table, open_from
from agentdocket.events import format_ts

if TYPE_CHECKING:
    from agentdocket.store.roles import Month

COUNTED = ("runs", "events", "verdicts", "judge_calls")


def _keep(ctx: click.Context, param: click.Parameter, value: str) -> str:
    from agentdocket.store.retention import parse_keep

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
@click.option(
    "--keep-dataset",
    "kept",
    multiple=True,
    metavar="DATASET",
    help="Keep every month holding runs of this dataset, however old (repeatable): imported "
    "research data, a benchmark's runs.",
)
@click.option("--yes", is_flag=True, help="Drop without asking (from cron).")
@FORMAT
@click.pass_context
def retention(
    ctx: click.Context, keep: str, dry_run: bool, kept: tuple[str, ...], yes: bool, fmt: str
) -> None:
    """Drop whole months of runs older than the window kept: their events, runs, verdicts,
    judge calls and dashboard rollups, and process samples older than the window.

    A month goes once all of it is older than the window, none of its runs has an event
    inside the window and none is of a dataset given to --keep-dataset (such a month is kept
    and reported as refused). Each month is shown with its runs by dataset. Each month dropped
    is recorded as a `retention.applied` event. On PostgreSQL a month is a partition, dropped
    whole; on SQLite its rows are deleted (the one command allowed to delete from the log).
    Without --dry-run it asks first at a terminal, and needs --yes elsewhere.

    \b
    Examples:
      agentdocket retention --keep 90d --dry-run
      agentdocket retention --keep 90d --keep-dataset ibm-coalitions --yes
      agentdocket retention --keep 26w --format json --dry-run
    """
    failed: list[tuple[Month, str]] = []
    rollups = None
    with open_from(ctx) as store:
        plan = store.retention.plan(keep, kept_datasets=kept)
        if not dry_run and plan.drop:
            confirm(ctx, yes, _question(plan.drop))
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


def _question(months: Sequence[Month]) -> str:
    """What dropping these months takes away, by dataset."""
    runs: dict[str, int] = {}
    for m in months:
        for dataset, n in m.datasets.items():
            runs[dataset] = runs.get(dataset, 0) + n
    shown = ", ".join(f"{d} {n:,}" for d, n in sorted(runs.items()))
    return (
        f"dropping {len(months)} months ({months[0].label} to {months[-1].label}) takes their "
        f"runs away for good, by dataset: {shown or 'none'}"
    )


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
        table = new_table(
            title=f"{verb} (window from {result['window_start']})", title_justify="left"
        )
        table.add_column("month")
        for col in COUNTED:
            table.add_column(col.replace("_", " "), justify="right")
        table.add_column("runs by dataset")
        for m in dropped:
            datasets = ", ".join(f"{d} {n:,}" for d, n in m.datasets.items())
            table.add_row(m.label, *(f"{m.rows[c]:,}" for c in COUNTED), datasets or "-")
        console.print(table)
    for m in refused:
        reasons = []
        if m.newer_runs:
            reasons.append(f"{m.newer_runs:,} of its runs have events inside the window")
        if m.kept_runs:
            reasons.append(f"{m.kept_runs:,} of its runs are of datasets kept (--keep-dataset)")
        print(f"kept {m.label}: {'; '.join(reasons)}", file=sys.stderr)
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
