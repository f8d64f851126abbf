"""`agentdocket export ...`: runs and verdicts to files (JSONL, Parquet, CSV), and verdicts over
OTLP to a tracing backend."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import click

from agentdocket.commands.common import err, open_from, progress_bar


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
        write_parquet,
        write_traces_jsonl,
    )

    with open_from(ctx) as store:
        if fmt == "parquet":
            if output is None:
                raise click.UsageError("--format parquet needs --output FILE")
            n = write_parquet(export_records(store, dataset=dataset), output)
        elif output is None:
            n = write_traces_jsonl(store, sys.stdout.buffer, dataset=dataset)
        else:
            with output.open("wb") as fh:
                n = write_traces_jsonl(store, fh, dataset=dataset)
    err.print(f"exported {n} runs" + (f" to {output}" if output else ""))


@export.command(name="verdicts")
@click.option("--format", "fmt", type=click.Choice(["parquet", "csv"]), default="parquet")
@click.option("--dataset", help="Only verdicts on runs of this dataset.")
@click.option("--scorer", help="Only this scorer's verdicts (every version).")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--otlp",
    "endpoint",
    help="Send them instead to this OTLP endpoint as gen_ai.evaluation.result log records: "
    "http://HOST:4318/v1/logs, or HOST:4317 with --protocol grpc.",
)
@click.option(
    "--protocol",
    type=click.Choice(["http/protobuf", "grpc"]),
    default="http/protobuf",
    show_default=True,
    help="With --otlp: the OTLP transport.",
)
@click.option(
    "--header",
    "headers",
    multiple=True,
    metavar="KEY=VALUE",
    help="With --otlp: a header sent with every request, such as authorization=... (repeatable).",
)
@click.option("--insecure", is_flag=True, help="With --protocol grpc: plain text, no TLS.")
@click.pass_context
def export_verdicts(
    ctx: click.Context,
    fmt: str,
    dataset: str | None,
    scorer: str | None,
    output: Path | None,
    endpoint: str | None,
    protocol: str,
    headers: tuple[str, ...],
    insecure: bool,
) -> None:
    """Export verdicts as a flat table (Parquet or CSV) for analysis: one row per verdict of
    every version, with the run's dataset, case, agent and strategy. With --otlp, send them to
    a tracing backend instead, each as the GenAI conventions' gen_ai.evaluation.result event
    on the judged run's trace and span (verdicts received from outside, external.*, are not
    sent back).

    \b
    Examples:
      agentdocket export verdicts -o verdicts.parquet
      agentdocket export verdicts --dataset support --scorer tools.slot_fill --format csv -o \\
          slot_fill.csv
      agentdocket export verdicts --otlp http://localhost:4318/v1/logs \\
          --header "authorization=Bearer $TOKEN"
    """
    if endpoint is not None:
        if output is not None:
            raise click.UsageError("--otlp sends the verdicts: give it or --output, not both")
        _send_verdicts(ctx, dataset, scorer, endpoint, protocol, headers, insecure)
        return
    if output is None:
        raise click.UsageError("give --output FILE, or --otlp ENDPOINT")
    from agentdocket.importers.interchange_export import write_verdicts

    with open_from(ctx) as store:
        n = write_verdicts(store.scoring.verdict_export_rows(dataset, scorer), output, fmt)
    err.print(f"exported {n} verdicts to {output}")


SEND_BATCH = 500


def _send_verdicts(
    ctx: click.Context,
    dataset: str | None,
    scorer: str | None,
    endpoint: str,
    protocol: str,
    headers: tuple[str, ...],
    insecure: bool,
) -> None:
    """The verdicts sent in batches of :data:`SEND_BATCH`, each sent before the next is read."""
    from agentdocket.outbound.evaluations import LeftOut, records
    from agentdocket.outbound.otlp import EvaluationSender, ExporterUnavailable, SendFailed

    given: dict[str, str] = {}
    for header in headers:
        key, sep, value = header.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{header!r}: expected KEY=VALUE", param_hint="--header")
        given[key.strip().lower()] = value
    try:
        sender = EvaluationSender(endpoint, protocol, given, insecure=insecure)
    except ExporterUnavailable as exc:
        raise click.ClickException(str(exc)) from None
    sent = 0
    skipped = LeftOut()
    try:
        with open_from(ctx) as store, progress_bar("sending verdicts") as advance:
            rows = (dict(r) for r in store.scoring.verdict_export_rows(dataset, scorer))
            while chunk := list(itertools.islice(rows, SEND_BATCH)):
                batch = [e for _, e in records(chunk, store.scoring.root_spans, skipped)]
                try:
                    sender.send(batch)
                except SendFailed as exc:
                    raise click.ClickException(
                        f"{exc}; {sent} verdicts were sent before it, sending again sends "
                        "the same records"
                    ) from None
                sent += len(batch)
                advance(sent, sent)
    finally:
        sender.close()
    left = [
        f"{n} {what}"
        for n, what in (
            (skipped.external, "received from outside (external.*)"),
            (skipped.measured, "of measurements alone (no pass, score, label or failure)"),
            (skipped.orphans, "on runs with no run.started event"),
        )
        if n
    ]
    err.print(
        f"sent {sent} verdicts to {endpoint}" + (f"; left out {', '.join(left)}" if left else "")
    )


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
