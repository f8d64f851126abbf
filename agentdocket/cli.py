"""The ``agentdocket`` command line."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from agentdocket.events import PAYLOAD_TYPES, Event, format_ts, json_schema
from agentdocket.store import (
    ConfigError,
    Store,
    StoreError,
    database_url,
    display_url,
    open_store,
)

# Piped output (CI logs, files) is not squeezed to 80 columns.
console = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True)


@contextmanager
def _store(ctx: click.Context) -> Iterator[Store]:
    url = database_url(ctx.obj.get("url"))
    try:
        store = open_store(url)
    except (ConfigError, StoreError) as exc:
        raise click.ClickException(str(exc)) from None
    try:
        yield store
    finally:
        store.close()


@click.group()
@click.option(
    "--database",
    "url",
    envvar="AGENTDOCKET_DATABASE_URL",
    help="postgresql+psycopg://... or sqlite:///path (default: ./agentdocket.db).",
)
@click.pass_context
def main(ctx: click.Context, url: str | None) -> None:
    """Record what AI agents do as an append-only event log, and score it afterwards."""
    ctx.ensure_object(dict)
    ctx.obj["url"] = url


@main.command()
@click.argument("revision", default="head")
@click.option("--down", is_flag=True, help="Downgrade to REVISION (e.g. base) instead.")
@click.pass_context
def migrate(ctx: click.Context, revision: str, down: bool) -> None:
    """Bring the database schema to REVISION (default: the newest)."""
    from agentdocket.store import migrate as migrations

    url = database_url(ctx.obj.get("url"))
    try:
        if down:
            migrations.downgrade(url, revision)
        else:
            migrations.upgrade(url, revision)
        current = migrations.current_revision(url)
    except (ConfigError, StoreError) as exc:
        raise click.ClickException(str(exc)) from None
    console.print(f"{display_url(url)}: schema at revision {current or 'base'}")


@main.command()
@click.pass_context
def rebuild(ctx: click.Context) -> None:
    """Rebuild the projections (runs, verdicts) from the event log."""
    with _store(ctx) as store:
        counts = store.rebuild()
    console.print(
        f"replayed {counts['events']} events: {counts['runs']} runs, {counts['verdicts']} verdicts"
    )


@main.command()
@click.argument("kind", required=False)
def schemas(kind: str | None) -> None:
    """Print the JSON Schema of each event kind's payload (or of KIND)."""
    kinds = [kind] if kind else list(PAYLOAD_TYPES)
    out = {}
    for k in kinds:
        if k not in PAYLOAD_TYPES:
            raise click.BadParameter(f"unknown kind {k!r}; known: {', '.join(PAYLOAD_TYPES)}")
        cls = PAYLOAD_TYPES[k]
        out[k] = {"schema_version": cls.VERSION, **json_schema(cls)}  # type: ignore[attr-defined]
    click.echo(json.dumps(out if not kind else out[kind], indent=2))


# --- import / export --------------------------------------------------------------------------


@main.group(name="import")
def import_() -> None:
    """Import runs into the store."""


def _import_traces(store: Store, path: Path) -> tuple[int, int, int]:
    from agentdocket.store.interchange import ImportError_, read_file

    try:
        parsed = read_file(path)
    except ImportError_ as exc:
        raise click.ClickException(f"{exc}; nothing was imported") from None
    try:
        result = store.import_all(parsed.datasets, parsed.events)
    except StoreError as exc:
        raise click.ClickException(f"{path}: {exc}; nothing was imported") from None
    return parsed.runs, result.inserted, result.duplicates


@import_.command(name="traces")
@click.argument("path", type=click.Path(path_type=Path, dir_okay=False))
@click.pass_context
def import_traces(ctx: click.Context, path: Path) -> None:
    """Import a JSONL (or Parquet) file of runs, as written by `export traces`.

    The whole file is validated first; a bad line is reported with its number and nothing of the
    file is written. Re-importing adds nothing.
    """
    with _store(ctx) as store:
        runs, inserted, dupes = _import_traces(store, path)
    console.print(f"{path}: {runs} runs, {inserted} events added, {dupes} already stored")


@main.group()
def export() -> None:
    """Export runs from the store."""


@export.command(name="traces")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "parquet"]), default="jsonl")
@click.option("--dataset", help="Only runs of this dataset.")
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Output file (default: standard output for jsonl; required for parquet).",
)
@click.pass_context
def export_traces(ctx: click.Context, fmt: str, dataset: str | None, output: Path | None) -> None:
    """Export runs (with steps, verdicts and cases) as JSONL or Parquet."""
    from agentdocket.store.export import write_jsonl, write_parquet

    with _store(ctx) as store:
        records = store.export_records(dataset=dataset)
        if fmt == "parquet":
            if output is None:
                raise click.UsageError("--format parquet needs --output FILE")
            n = write_parquet(records, output)
        elif output is None:
            n = write_jsonl(records, sys.stdout.buffer)
        else:
            with output.open("wb") as fh:
                n = write_jsonl(records, fh)
    err.print(f"exported {n} runs" + (f" to {output}" if output else ""))


# --- inspection -------------------------------------------------------------------------------


@main.group()
def runs() -> None:
    """Inspect recorded runs."""


def _when(value: Any) -> str:
    return format_ts(value)[:19].replace("T", " ") if value else "-"


def _duration(run: dict[str, Any]) -> str:
    if run["started_at"] and run["ended_at"]:
        seconds = (run["ended_at"] - run["started_at"]).total_seconds()
        return f"{seconds:.2f}s" if seconds >= 1 else f"{seconds * 1000:.1f}ms"
    return "-"


@runs.command(name="list")
@click.option("--dataset", help="Only runs of this dataset.")
@click.option("--agent", help="Only runs of this agent.")
@click.option("--limit", default=50, show_default=True, help="At most this many (0: all).")
@click.pass_context
def runs_list(ctx: click.Context, dataset: str | None, agent: str | None, limit: int) -> None:
    """List runs, newest first."""
    with _store(ctx) as store:
        rows = store.list_runs(dataset=dataset, agent=agent, limit=limit or None)
        total = store.counts()["runs"]
    table = Table(title=f"runs ({len(rows)} of {total})", title_justify="left")
    for col in (
        "trace",
        "started",
        "agent",
        "strategy",
        "case",
        "status",
        "steps",
        "errors",
        "time",
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
            f"[{style}]{status}[/]",
            str(r["n_steps"]),
            str(r["n_errors"]),
            _duration(r),
        )
    console.print(table)


def _summary(event: Event) -> str:
    p = event.payload
    k = event.kind
    if k == "run.started":
        return f"{p['agent']} {p.get('agent_version') or ''} · {p.get('question') or ''}".strip()
    if k == "plan":
        return " → ".join(s.get("tool") or s.get("text") or "?" for s in p["steps"])
    if k == "tool.called":
        return f"{p['tool']}({json.dumps(p['arguments'], ensure_ascii=False)})"
    if k == "tool.returned":
        if p.get("error"):
            return f"error: {p['error']}"
        return json.dumps(p.get("result"), ensure_ascii=False)
    if k == "sql.executed":
        if p.get("error"):
            return f"{p['query']}  → error: {p['error']}"
        return f"{p['query']}  → {p.get('row_count')} rows"
    if k == "retrieval":
        return f"{p['query']} → {', '.join(d['id'] for d in p['documents'])}"
    if k == "llm.called":
        out = p.get("output_messages") or []
        text = out[-1]["content"] if out else ""
        return f"{p['model']} ({p.get('role') or '-'}) {text}"
    if k in ("message",):
        return f"{p['role']}: {p['content']}"
    if k == "response":
        return str(p["text"])
    if k == "run.finished":
        return str(p["status"]) + (f": {p['error']}" if p.get("error") else "")
    if k == "verdict":
        outcome = p.get("label") or (
            "pass" if p.get("passed") else "fail" if p.get("passed") is not None else ""
        )
        score = f" {p['score']:.3f}" if p.get("score") is not None else ""
        failure = f" [{p['failure_type']}]" if p.get("failure_type") else ""
        return f"{p['scorer']}@{p['scorer_version']}: {outcome}{score}{failure}"
    if k == "step":
        return str(p["name"])
    return json.dumps(p, ensure_ascii=False)


@runs.command(name="show")
@click.argument("trace_id")
@click.option("--width", default=160, show_default=True, help="Truncate summaries to this.")
@click.pass_context
def runs_show(ctx: click.Context, trace_id: str, width: int) -> None:
    """Show one run as a timeline of its steps (TRACE_ID may be abbreviated)."""
    with _store(ctx) as store:
        matches = store.find_traces(trace_id)
        if not matches:
            raise click.ClickException(f"no run with a trace id starting {trace_id!r}")
        if len(matches) > 1:
            raise click.ClickException(
                f"{trace_id!r} matches several runs: {', '.join(matches)}; give more characters"
            )
        tid = matches[0]
        run = store.run(tid)
        events = store.events(tid)
        trace = store.read_trace(tid)
    assert run is not None and trace is not None
    console.print(f"[bold]run {tid}[/]")
    case = f"{run['dataset']}/{run['case_id']}" if run["dataset"] else "-"
    models = ", ".join(f"{k}={v}" for k, v in (run["models"] or {}).items()) or "-"
    console.print(
        f"agent {run['agent'] or '-'} {run['agent_version'] or ''}  strategy "
        f"{run['strategy'] or '-'}  models {models}  case {case}  status "
        f"{run['status'] or 'running'}  time {_duration(run)}"
    )
    if run["question"]:
        console.print(f"question: {run['question']}")
    start = events[0].ts
    table = Table(show_header=True, header_style="bold")
    for col in ("seq", "+ms", "kind", "what"):
        table.add_column(col, overflow="fold")
    depth = _depths(events)
    for e in events:
        offset = (e.ts - start).total_seconds() * 1000
        text = _summary(e)
        if len(text) > width:
            text = text[: width - 1] + "…"
        style = "red" if e.payload.get("error") else ""
        indent = "  " * depth.get(e.span_id, 0)
        table.add_row(
            str(e.seq), f"{offset:.0f}", indent + e.kind, f"[{style}]{text}[/]" if style else text
        )
    console.print(table)
    if trace.case is not None:
        c = trace.case
        console.print(
            f"case {c.case_id}: expected plan {c.expected_plan or '-'}; "
            f"reference {c.reference_answer or c.stub_response or '-'}"
        )


def _depths(events: list[Event]) -> dict[str, int]:
    parent = {e.span_id: e.parent_span_id for e in events}
    depth: dict[str, int] = {}
    for span in parent:
        d, seen, cur = 0, set(), parent.get(span)
        while cur is not None and cur in parent and cur not in seen:
            seen.add(cur)
            d += 1
            cur = parent[cur]
        depth[span] = d
    return depth


# --- demo -------------------------------------------------------------------------------------


@main.command()
@click.option(
    "--concerts-db",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Keep the demo's concerts database at this path (default: a temporary file).",
)
@click.pass_context
def demo(ctx: click.Context, concerts_db: Path | None) -> None:
    """Run a scripted database-QA agent over its own concerts database in three strategies
    (sequential, iterative, no-interaction), recording every step through the tracer, then
    list the runs."""
    from rich.progress import Progress

    from agentdocket.demo import DATASET, QUESTIONS, STRATEGIES, run_demo

    url = database_url(ctx.obj.get("url"))
    console.print(f"store: {display_url(url)}")
    total = len(QUESTIONS) * len(STRATEGIES)
    with Progress(console=err, transient=True) as progress:
        task = progress.add_task("recording runs", total=total)

        def advance(case_id: str, strategy: str, answer: str) -> None:
            progress.update(task, advance=1, description=f"{strategy} {case_id}")

        try:
            result = run_demo(url, concerts_db=concerts_db, progress=advance)
        except (ConfigError, StoreError) as exc:
            raise click.ClickException(str(exc)) from None
    stats = result.stats
    console.print(
        f"recorded {len(result.trace_ids)} runs ({len(QUESTIONS)} questions x "
        f"{', '.join(STRATEGIES)}): {stats.spans} spans, {stats.events} events, "
        f"{stats.delivered + stats.replayed} stored"
    )
    if stats.spooled:
        err.print(
            f"[yellow]{stats.spooled} events are spooled in {result.spool_dir}: the store was "
            "unavailable; they are delivered when it is reachable again[/]"
        )
    if concerts_db is not None:
        console.print(f"concerts database kept at {concerts_db}")
    ctx.invoke(runs_list, dataset=DATASET, agent=None, limit=len(result.trace_ids))
    console.print("see one with: agentdocket runs show TRACE_ID")
