"""``agentdocket serve``: receive OTLP/HTTP traces into the store."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from types import FrameType
from typing import Any

import click

from agentdocket.commands.common import err, existing_database
from agentdocket.commands.refresh_dashboards import Refresher
from agentdocket.store import (
    ConfigError,
    RedactionConfigError,
    Redactor,
    StoreError,
    database_url,
    display_url,
)
from agentdocket.store.config import parse_url
from agentdocket.store.limits import Limits, parse_duration

TOKEN_ENV = "AGENTDOCKET_SERVE_TOKEN"
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
GRACE_S = 30  # how long requests in flight may take to finish once asked to stop


def _server_class() -> type[Any]:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, stopping on SIGTERM or SIGINT without raising the signal again
        once it has shut down (uvicorn does, which kills the process before our own shutdown
        and with exit status 143)."""

        stopped_by: int | None = None

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            previous = {sig: signal.signal(sig, self._stop) for sig in STOP_SIGNALS}
            try:
                yield
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

        def _stop(self, sig: int, frame: FrameType | None) -> None:
            if self.should_exit and sig == signal.SIGINT:
                self.force_exit = True  # a second Ctrl-C: do not wait for requests
            self.stopped_by = sig
            self.should_exit = True

    return Server


def _duration(ctx: click.Context, param: click.Parameter, value: str) -> timedelta:
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

    \b
    Examples:
      agentdocket serve
      agentdocket serve --host 0.0.0.0 --token "$TOKEN" --grpc-port 0
      agentdocket serve --score --config scoring.toml
    """
    try:
        import uvicorn

        from agentdocket.ingest.receiver import Receiver, is_loopback
    except ImportError as exc:
        raise click.ClickException(
            f"`serve` needs the receiver's packages ({exc.name} is missing): "
            "pip install 'agentdocket[serve]'"
        ) from None
    from agentdocket.ingest.sink import Sink

    if token is not None and not token.strip():  # given blank: never a way to turn auth off
        raise click.ClickException("--token (or $AGENTDOCKET_SERVE_TOKEN) is blank")
    token = token.strip() if token else None
    if not token and not is_loopback(host):
        raise click.ClickException(
            f"listening on {host} (not loopback) needs a bearer token: --token or ${TOKEN_ENV}"
        )
    try:
        url = existing_database(database_url(ctx.obj.get("url")))
        redactor = Redactor.from_env()
    except (ConfigError, RedactionConfigError) as exc:
        raise click.ClickException(str(exc)) from None
    limits = Limits(max_age=max_age, max_ahead=max_ahead)
    sink = Sink(url, spool_dir=spool_dir, redactor=redactor, source="receiver", limits=limits)
    receiver = Receiver(
        sink,
        token=token or None,
        max_body=int(max_body_mib * 1024 * 1024),
        max_pending=max_pending,
    )
    follower = None
    if score or config_file is not None:
        from agentdocket.commands.following import FollowerThread, follow_config

        scoring = follow_config(config_file, ())
        try:
            follower = FollowerThread(url, scoring)
        except StoreError as exc:
            sink.close()
            raise click.ClickException(f"--score: {exc}") from None
        from agentdocket.follow.metrics import FollowerCollector

        receiver.collectors.append(FollowerCollector(follower.follower))
    grpc_server = None
    if grpc_port:
        try:
            from agentdocket.ingest.grpc_receiver import GrpcReceiver
        except ImportError as exc:
            raise click.ClickException(
                f"OTLP/gRPC needs {exc.name}: pip install 'agentdocket[serve]' (or --grpc-port 0)"
            ) from None
        try:
            grpc_server = GrpcReceiver(receiver, host, grpc_port).start()
        except (OSError, RuntimeError) as exc:
            sink.close()
            raise click.ClickException(f"{exc} (another process may hold the port)") from None
    err.print(
        f"agentdocket: receiving OTLP/HTTP on http://{host}:{port}/v1/traces"
        + (f" and OTLP/gRPC on {host}:{grpc_server.port}" if grpc_server else "")
        + f" into {display_url(url)} (pid {os.getpid()})"
    )
    if follower is not None:
        follower.start()
        err.print(
            f"agentdocket: scoring runs as they finish, as {follower.follower.key} with "
            + ", ".join(f.label for f in follower.follower.chosen)
        )
    from agentdocket.ingest.samples import Sampler

    sampler = Sampler(receiver, url)
    sampler.start()
    refresher = None
    if refresh_every and parse_url(url).get_backend_name() == "postgresql":
        refresher = Refresher(url, refresh_every)
        refresher.start()
    config = uvicorn.Config(
        receiver.app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=GRACE_S,
    )
    server = _server_class()(config)
    try:
        server.run()
    finally:
        # In-flight requests have finished (each one stored or spooled): stop refreshing,
        # flush, close the spool (an empty spool file is removed).
        if grpc_server is not None:
            grpc_server.stop(GRACE_S)
        if follower is not None:
            follower.stop()
        sampler.stop()
        if refresher is not None:
            refresher.stop()
        sink.close()
    if server.stopped_by is not None:
        err.print(
            f"agentdocket: stopped by {signal.Signals(server.stopped_by).name}; "
            f"{receiver.stats.spans} spans received"
        )
