"""``agentdocket datasets``: datasets of your own cases: add, list, show, export."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import click

from agentdocket.commands.common import FORMAT, console, echo_json, new_table, open_from


def _split(selection: str) -> tuple[str, str | None]:
    """``D@V`` -> (D, V); ``D`` -> (D, None): the latest version."""
    name, _, version = selection.partition("@")
    return name, version or None


@click.group()
def datasets() -> None:
    """Datasets of cases: what runs are expected to do, named and versioned, immutable.

    \b
    Examples:
      agentdocket datasets add cases.yaml --name support
      agentdocket datasets add --from-runs --name regressions --agent qa \\
          --failure-type slot_fill:wrong_argument
      agentdocket datasets show support --format json
    """


@datasets.command(name="add")
@click.argument("file", required=False, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--name", required=True, help="The dataset's name.")
@click.option(
    "--version", help="Its version (default: a hash of its content: the same cases, the same one)."
)
@click.option("--from-runs", is_flag=True, help="Make the cases from stored runs (no FILE).")
@click.option("--agent", help="--from-runs: only runs of this agent.")
@click.option("--dataset", "source", help="--from-runs: only runs of this dataset.")
@click.option("--failure-type", help="--from-runs: only runs with a verdict of this failure type.")
@click.option("--since", type=click.DateTime(), help="--from-runs: only runs started since.")
@click.option("--limit", default=1000, show_default=True, help="--from-runs: at most this many.")
@click.pass_context
def add(
    ctx: click.Context,
    file: Path | None,
    name: str,
    version: str | None,
    from_runs: bool,
    agent: str | None,
    source: str | None,
    failure_type: str | None,
    since: datetime | None,
    limit: int,
) -> None:
    """Add a dataset version from a case file (YAML, JSON Lines; see `agentdocket schemas
    case`), or from stored runs: each run's question becomes a case, its answer the reference
    answer (a regression dataset). The same content again adds nothing; other content under
    an existing version is refused, naming the first case and field that differ.

    \b
    Examples:
      agentdocket datasets add cases.yaml --name support
      agentdocket datasets add --from-runs --name regressions --agent qa --failure-type \\
          slot_fill:wrong_argument
    """
    from agentdocket.events import Dataset
    from agentdocket.importers.cases import CaseFileError, load
    from agentdocket.store import StoreError

    if from_runs == (file is not None):
        raise click.UsageError("give a case FILE, or --from-runs (not both)")
    dataset = None
    if file is not None:  # read and checked whole before the store is opened (or made)
        if not file.exists():
            raise click.BadParameter(f"{file} does not exist", param_hint="FILE")
        try:
            dataset = load(file, name, version)
        except CaseFileError as exc:
            raise click.ClickException(f"{exc}; nothing was stored") from None
    with open_from(ctx, create=file is not None) as store:
        if dataset is None:
            cases = _cases_from_runs(store, agent, source, failure_type, since, limit)
            if not cases:
                raise click.ClickException("no stored run matches; nothing was stored")
            draft = Dataset(name, "", tuple(cases), "cases made from stored runs")
            dataset = Dataset(
                name, version or draft.content_hash()[:12], draft.cases, draft.description
            )
        try:
            added = store.datasets.register(dataset)
        except StoreError as exc:
            raise click.ClickException(f"{exc}; nothing was stored") from None
    state = "added" if added else "already stored (same content)"
    console.print(f"dataset {name}@{dataset.version}: {len(dataset.cases)} cases, {state}")


def _cases_from_runs(
    store: Any,
    agent: str | None,
    source: str | None,
    failure_type: str | None,
    since: datetime | None,
    limit: int,
) -> list[Any]:
    from agentdocket.events import Case

    ids = store.reader.trace_ids(dataset=source, agent=agent, since=since)
    if failure_type is not None:
        failing = store.scoring.traces_with_failure(failure_type, ids)
        ids = [t for t in ids if t in failing]
    cases = []
    for trace_id in ids[:limit]:
        trace = store.reader.read_trace(trace_id)
        if trace is None or trace.question is None:
            continue
        started = trace.started
        cases.append(
            Case(
                case_id=trace_id,
                question=trace.question,
                reference_answer=trace.response,
                attributes={
                    "from_trace": trace_id,
                    "agent": started.agent if started else None,
                    "case_id": started.case_id if started else None,
                },
            )
        )
    return cases


@datasets.command(name="list")
@FORMAT
@click.pass_context
def list_(ctx: click.Context, fmt: str = "table") -> None:
    """List the datasets and their versions.

    \b
    Examples:
      agentdocket datasets list
      agentdocket datasets list --format json
    """
    with open_from(ctx) as store:
        rows = store.datasets.versions()
    if fmt == "json":
        echo_json(rows)
        return
    table = new_table(title="datasets", title_justify="left")
    for col in ("name", "version", "cases", "created", "description"):
        table.add_column(col)
    for r in rows:
        table.add_row(
            r["name"],
            r["version"],
            str(r["n_cases"]),
            str(r["created_at"])[:19],
            r["description"] or "",
        )
    console.print(table)


@datasets.command()
@click.argument("selection", metavar="DATASET[@VERSION]")
@FORMAT
@click.pass_context
def show(ctx: click.Context, selection: str, fmt: str = "table") -> None:
    """Show a dataset's cases (the latest version unless @VERSION).

    \b
    Examples:
      agentdocket datasets show support
      agentdocket datasets show support@2 --format json
    """
    name, version = _split(selection)
    with open_from(ctx) as store:
        dataset = store.datasets.get(name, version)
    if fmt == "json":
        echo_json(
            {
                "name": dataset.name,
                "version": dataset.version,
                "description": dataset.description,
                "cases": [c.to_json() for c in dataset.cases],
            }
        )
        return
    table = new_table(title=f"{dataset.name}@{dataset.version}", title_justify="left")
    for col in ("case", "question", "expected plan", "reference answer"):
        table.add_column(col)
    for c in dataset.cases:
        table.add_row(
            c.case_id,
            (c.question or "")[:80],
            " > ".join(c.expected_plan),
            (c.reference_answer or "")[:60],
        )
    console.print(table)


@datasets.command()
@click.argument("selection", metavar="DATASET[@VERSION]")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["yaml", "jsonl"]),
    default="yaml",
    show_default=True,
)
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False))
@click.pass_context
def export(ctx: click.Context, selection: str, fmt: str, output: Path | None) -> None:
    """Write a dataset as a case file that `datasets add` reads back.

    \b
    Examples:
      agentdocket datasets export support -o support.jsonl
      agentdocket datasets export support@2 --format yaml
    """
    from agentdocket.importers.cases import dump

    name, version = _split(selection)
    with open_from(ctx) as store:
        text = dump(store.datasets.get(name, version), fmt)
    if output is None:
        click.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
