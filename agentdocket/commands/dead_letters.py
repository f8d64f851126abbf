"""`agentdocket dead-letters list|show|retry|export`: the records the database refused."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from agentdocket.commands.common import FORMAT, console, echo_json, err, new_table, open_from
from agentdocket.events import format_ts


@click.group(name="dead-letters")
def dead_letters() -> None:
    """Records the database refused, kept with their error and origin.

    A refused record never holds up the rest of its batch: it is kept here, and the rest is
    stored. Fix the cause (a constraint, a software version), then retry:

    \b
        agentdocket dead-letters list
        agentdocket dead-letters show 3f2a
        agentdocket dead-letters retry --all
        agentdocket dead-letters export -o refused.jsonl
    """


@dead_letters.command(name="list")
@click.option("--all", "everything", is_flag=True, help="Resolved ones too (stored since).")
@click.option("--limit", default=100, show_default=True, help="At most this many (0: all).")
@FORMAT
@click.pass_context
def list_(ctx: click.Context, everything: bool, limit: int, fmt: str) -> None:
    """List dead letters, oldest first (by default those not resolved yet).

    \b
    Examples:
      agentdocket dead-letters list
      agentdocket dead-letters list --all --format json
    """
    with open_from(ctx) as store:
        rows = store.dead_letters.letters(
            resolved=None if everything else False, limit=limit or None
        )
        counts = store.dead_letters.counts()
    if fmt == "json":
        echo_json({"counts": counts, "dead_letters": rows})
        return
    title = f"dead letters ({counts['unresolved']} unresolved of {counts['total']})"
    table = new_table(title=title, title_justify="left")
    for col in ("id", "received", "source", "trace", "error", "resolved"):
        table.add_column(col, no_wrap=col in ("id", "received"), overflow="fold")
    for r in rows:
        table.add_row(
            r["letter_id"][:12],
            format_ts(r["received_at"])[:19].replace("T", " "),
            r["source"],
            (r["trace_id"] or "-")[:12],
            r["error"],
            "yes" if r["resolved"] else "no",
        )
    console.print(table)


@dead_letters.command()
@click.argument("letter_id")
@FORMAT
@click.pass_context
def show(ctx: click.Context, letter_id: str, fmt: str) -> None:
    """Show one dead letter (by its id or a unique prefix): error, origin and raw content.

    \b
    Examples:
      agentdocket dead-letters show 12
      agentdocket dead-letters show 12 --format json
    """
    with open_from(ctx) as store:
        row = store.dead_letters.get(letter_id)
    if fmt == "json":
        echo_json(row)
        return
    shown = {
        "letter_id": row["letter_id"],
        "received_at": format_ts(row["received_at"]),
        "source": row["source"],
        "event_id": row["event_id"],
        "trace_id": row["trace_id"],
        "code": row["code"],
        "error": row["error"],
    }
    for key, value in shown.items():
        console.print(f"[bold]{key}[/]: {value if value is not None else '-'}", highlight=False)
    console.print(f"[bold]resolved[/]: {'yes' if row['resolved'] else 'no'}")
    console.print("[bold]raw[/]:")
    try:
        click.echo(json.dumps(json.loads(row["raw"]), indent=2))
    except ValueError:
        click.echo(row["raw"])


@dead_letters.command()
@click.argument("letter_ids", nargs=-1)
@click.option("--all", "everything", is_flag=True, help="Every unresolved dead letter.")
@FORMAT
@click.pass_context
def retry(ctx: click.Context, letter_ids: tuple[str, ...], everything: bool, fmt: str) -> None:
    """Append the events of dead letters again, once the cause is fixed; each one is tried on
    its own. Exits 1 if any is still refused.

    \b
    Examples:
      agentdocket dead-letters retry 12 13
      agentdocket dead-letters retry --all
    """
    if not letter_ids and not everything:
        raise click.UsageError("name dead letters to retry, or give --all")
    with open_from(ctx) as store:
        results = store.dead_letters.retry(None if everything else list(letter_ids))
    if fmt == "json":
        echo_json([r.__dict__ for r in results])
    else:
        for r in results:
            line = f"{r.letter_id[:12]} {r.outcome}"
            console.print(line + (f": {r.error}" if r.error else ""), highlight=False)
        stored = sum(r.outcome == "stored" for r in results)
        err.print(f"{stored} of {len(results)} stored")
    if any(r.outcome in ("refused", "undecodable") for r in results):
        sys.exit(1)


@dead_letters.command()
@click.option("--all", "everything", is_flag=True, help="Resolved ones too.")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write to this file (default: standard output).",
)
@click.pass_context
def export(ctx: click.Context, everything: bool, output: Path | None) -> None:
    """Write dead letters as JSON Lines: one object a line, with ``event`` the refused event
    as it came in (decoded from ``raw``; null when it does not decode).

    \b
    Examples:
      agentdocket dead-letters export -o refused.jsonl
      agentdocket dead-letters export --all -o all.jsonl
    """
    with open_from(ctx) as store:
        rows = store.dead_letters.letters(resolved=None if everything else False)
    lines = []
    for row in rows:
        record = dict(row, received_at=format_ts(row["received_at"]))
        try:
            record["event"] = json.loads(row["raw"])
        except ValueError:
            record["event"] = None
        lines.append(json.dumps(record, ensure_ascii=True) + "\n")
    if output is None:
        click.echo("".join(lines), nl=False)
    else:
        output.write_text("".join(lines))
        err.print(f"{len(lines)} dead letters written to {output}")
