"""``agentdocket serve``: receive OTLP/HTTP traces into the store."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import click

from agentdocket.commands.common import err, existing_database

TOKEN_ENV = "AGENTDOCKET_SERVE_TOKEN"


def _duration(ctx: click.Context, param: click.Parameter, value: str) -> timedelta:
    from agentdocket.store.limits import parse_duration

    try:
        return parse_duration(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx, param) from None


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", default=4318, show_default=True, type=click.IntRange(0, 65535), help="OTLP/HTTP port."
)
@click.option(
    "--grpc-port",
    default=4317,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="OTLP/gRPC port (0: no gRPC).",
)
@click.option(
    "--token",
    envvar=TOKEN_ENV,
    help=f"Bearer token clients must send (or ${TOKEN_ENV}); required off loopback.",
)
@click.option(
    "--max-body-mib",
    default=16.0,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    help="Largest request body, before and after decompression.",
)
@click.option(
    "--max-pending",
    default=8,
    show_default=True,
    type=click.IntRange(min=1),
    help="Requests in flight before new ones get 503 with Retry-After.",
)
@click.option(
    "--connections",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="Database connections writing at once, each taking the traces whose id hashes to it "
    "(more than one pays where the database is across a network). Requests that arrive "
    "together share one commit.",
)
@click.option(
    "--processes",
    default=1,
    show_default=True,
    type=click.IntRange(min=1, max=64),
    help="Receiver processes sharing the ports, each with its own database connections: one "
    "process uses one core (about 12k spans/s on two cores), two use more. The first also "
    "scores (--score) and refreshes; /metrics adds up all of them.",
)
@click.option(
    "--max-age",
    default="400d",
    show_default=True,
    callback=_duration,
    help="Spans dated longer ago are dead letters, not stored (set it to your retention).",
)
@click.option(
    "--max-ahead",
    default="1d",
    show_default=True,
    callback=_duration,
    help="Spans dated further ahead of now are dead letters, not stored.",
)
@click.option(
    "--spool-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Where batches wait while the database is away (default: the user cache).",
)
@click.option(
    "--refresh-every",
    default=60.0,
    show_default=True,
    type=click.FloatRange(min=0),
    help="Refresh the dashboards' rollups every this many seconds (PostgreSQL; 0: never).",
)
@click.option(
    "--score",
    is_flag=True,
    help="Also judge runs as they finish, in this process off the request path (the newest "
    "version of every run-by-run scorer but the LLM judges, or those of --config).",
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="A scoring config file (TOML) for --score: scorers, filters, sampling, judge budgets.",
)
@click.pass_context
def serve(
    ctx: click.Context,
    host: str,
    port: int,
    grpc_port: int,
    token: str | None,
    max_body_mib: float,
    max_pending: int,
    connections: int,
    processes: int,
    max_age: timedelta,
    max_ahead: timedelta,
    spool_dir: Path | None,
    refresh_every: float,
    score: bool,
    config_file: Path | None,
) -> None:
    """Receive OTLP traces into the store: HTTP (POST /v1/traces, protobuf or JSON, gzip) and
    gRPC (TraceService/Export).

    Point any OpenTelemetry exporter at http://HOST:PORT (OTLP/HTTP) or HOST:GRPC-PORT
    (OTLP/gRPC, most SDKs' default), e.g. with OTEL_EXPORTER_OTLP_ENDPOINT. OpenInference and
    GenAI spans become events; other spans are kept as generic steps. A request succeeds only
    once its spans are committed to the database or written to the local spool.

    \b
    With --score (or --config) it also judges runs as they finish, as `score --follow` does;
    its figures join the receiver's on GET /metrics.

    The annotators' page is at http://HOST:PORT/annotate/: each annotator signs in with
    their token and labels the runs of their annotation queues.

    \b
    Examples:
      agentdocket serve
      agentdocket serve --host 0.0.0.0 --token "$TOKEN" --grpc-port 0
      agentdocket serve --score --config scoring.toml
      agentdocket serve --processes 2
    """
    from agentdocket.runtime.processes import run_receivers
    from agentdocket.runtime.receiver import ReceiverSettings
    from agentdocket.store import Redactor, database_url
    from agentdocket.store.limits import Limits

    url = existing_database(database_url(ctx.obj.get("url")), create=True)
    redactor = Redactor.from_env()  # errors in either: the command line says them
    scoring = None
    if score or config_file is not None:
        from agentdocket.commands.follower_options import follow_config

        scoring = follow_config(config_file, ())
    settings = ReceiverSettings(
        url,
        redactor,
        host=host,
        port=port,
        grpc_port=grpc_port,
        token=token,
        max_body=int(max_body_mib * 1024 * 1024),
        max_pending=max_pending,
        connections=connections,
        spool_dir=spool_dir,
        limits=Limits(max_age=max_age, max_ahead=max_ahead),
        refresh_every=refresh_every,
        scoring=scoring,
        processes=processes,
    )
    # a StartError: the command line says it. The services' lines are plain text, printed as
    # they are: rich would take "[embeddings]" in a missing extra's message for markup
    run_receivers(settings, say=lambda line: err.print(line, markup=False, highlight=False))
