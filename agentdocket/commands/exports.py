"""`agentdocket export ...`: runs and verdicts to files (JSONL, Parquet, CSV)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from agentdocket.commands.common import err, open_from


@click.group()
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
    """Export runs (with steps, verdicts and cases) as JSONL or Parquet.

    \b
    Examples:
      agentdocket export traces > runs.jsonl
      agentdocket export traces --dataset support --format parquet -o runs.parquet
    """
    from agentdocket.importers.interchange_export import (
        export_records,
        write_jsonl,
        write_parquet,
    )

    with open_from(ctx) as store:
        records = export_records(store, dataset=dataset)
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


@export.command(name="verdicts")
@click.option("--format", "fmt", type=click.Choice(["parquet", "csv"]), default="parquet")
@click.option("--dataset", help="Only verdicts on runs of this dataset.")
@click.option("--scorer", help="Only this scorer's verdicts (every version).")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), required=True)
@click.pass_context
def export_verdicts(
    ctx: click.Context, fmt: str, dataset: str | None, scorer: str | None, output: Path
) -> None:
    """Export verdicts as a flat table (Parquet or CSV) for analysis: one row per verdict of
    every version, with the run's dataset, case, agent and strategy.

    \b
    Examples:
      agentdocket export verdicts -o verdicts.parquet
      agentdocket export verdicts --dataset support --scorer tools.slot_fill --format csv -o \\
          slot_fill.csv
    """
    from agentdocket.importers.interchange_export import write_verdicts

    with open_from(ctx) as store:
        n = write_verdicts(store.scoring.verdict_export_rows(dataset, scorer), output, fmt)
    err.print(f"exported {n} verdicts to {output}")


@export.command(name="costs")
@click.option("--format", "fmt", type=click.Choice(["parquet", "csv"]), default="parquet")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), required=True)
@click.pass_context
def export_costs(ctx: click.Context, fmt: str, output: Path) -> None:
    """Export every model call with its cost (as `costs refresh` last priced it) as a flat
    table: run, time, model, provider, role, tokens, cost in US dollars (empty: unpriced, with
    the reason), and the prices that produced it.

    \b
    Examples:
      agentdocket export costs -o costs.parquet
      agentdocket export costs --format csv -o costs.csv
    """
    import polars as pl

    with open_from(ctx) as store:
        rows = store.costs.rows()
    frame = pl.DataFrame(rows, infer_schema_length=None)
    if fmt == "parquet":
        frame.write_parquet(output)
    else:
        frame.write_csv(output)
    err.print(f"exported {frame.height} model calls to {output}")
