"""``agentdocket serve``: receive OTLP/HTTP traces into the store."""

from __future__ import annotations

import os
from pathlib import Path

import click

from agentdocket.commands.common import err
from agentdocket.commands.dashboards import Refresher
from agentdocket.store import ConfigError, RedactionConfigError, Redactor, database_url, display_url
from agentdocket.store.config import parse_url

TOKEN_ENV = "AGENTDOCKET_SERVE_TOKEN"


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=4318, show_default=True, type=click.IntRange(0, 65535))
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
@click.pass_context
def serve(
    ctx: click.Context,
    host: str,
    port: int,
    token: str | None,
    max_body_mib: float,
    max_pending: int,
    spool_dir: Path | None,
    refresh_every: float,
) -> None:
    """Receive OTLP/HTTP traces (POST /v1/traces, protobuf or JSON, gzip) into the store.

    Point any OpenTelemetry exporter at http://HOST:PORT (OTEL_EXPORTER_OTLP_ENDPOINT).
    OpenInference and GenAI spans become events; other spans are kept as generic steps. A
    request is answered 200 only once its spans are committed to the database or written to
    the local spool.
    """
    try:
        import uvicorn

        from agentdocket.adapters.receiver import Receiver, is_loopback
    except ImportError as exc:
        raise click.ClickException(
            f"`serve` needs the receiver's packages ({exc.name} is missing): "
            "pip install 'agentdocket[serve]'"
        ) from None
    from agentdocket.tracer.exporter import StoreSpanExporter

    if not token and not is_loopback(host):
        raise click.ClickException(
            f"listening on {host} (not loopback) needs a bearer token: --token or ${TOKEN_ENV}"
        )
    try:
        url = database_url(ctx.obj.get("url"))
        redactor = Redactor.from_env()
    except (ConfigError, RedactionConfigError) as exc:
        raise click.ClickException(str(exc)) from None
    sink = StoreSpanExporter(url, spool_dir=spool_dir, redactor=redactor)
    receiver = Receiver(
        sink,
        token=token or None,
        max_body=int(max_body_mib * 1024 * 1024),
        max_pending=max_pending,
    )
    err.print(
        f"agentdocket: receiving OTLP/HTTP on http://{host}:{port}/v1/traces into "
        f"{display_url(url)} (pid {os.getpid()})"
    )
    refresher = None
    if refresh_every and parse_url(url).get_backend_name() == "postgresql":
        refresher = Refresher(url, refresh_every)
        refresher.start()
    try:
        uvicorn.run(receiver.app, host=host, port=port, log_level="warning", access_log=False)
    finally:
        if refresher is not None:
            refresher.stop()
        sink.shutdown()
