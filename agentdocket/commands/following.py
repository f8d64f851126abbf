"""Following live traffic: `score --follow`'s loop, and what it shares with `serve --score`."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from agentdocket.commands.common import err, open_from
from agentdocket.store import Store, open_store

if TYPE_CHECKING:
    from agentdocket.follow.config import FollowConfig
    from agentdocket.follow.follower import Follower

STATUS_EVERY_S = 10.0


def follow_config(
    config_file: Path | None,
    names: Sequence[str],
    *,
    agents: Sequence[str] = (),
    datasets: Sequence[str] = (),
    judge: str | None = None,
    options: Mapping[str, str] | None = None,
) -> FollowConfig:
    """The config file, or one made of the options (default: the newest version of every
    scorer that judges runs one by one, LLM judges only with --judge)."""
    from agentdocket import scorers
    from agentdocket.follow.config import ConfigFileError, from_options, load

    if config_file is not None:
        if names or agents or datasets or judge or options:
            raise click.UsageError(
                "--config FILE gives the scorers, their options and filters: drop --scorer, "
                "--config KEY=VALUE, --agent, --dataset and --judge, or put them in the file"
            )
        try:
            return load(config_file)
        except ConfigFileError as exc:
            raise click.ClickException(str(exc)) from None
    if not names:
        names = [s.name for s in scorers.latest(judges=judge is not None) if s.scope != "group"]
    return from_options(names, agents=agents, datasets=datasets, judge=judge, options=options)


def make_follower(store: Store, config: FollowConfig, *, keep_lags: bool = False) -> Follower:
    from agentdocket.follow.config import ConfigFileError
    from agentdocket.follow.follower import Follower

    url = store.url
    try:
        follower = Follower(store, config, reopen=lambda: open_store(url, migrate=False))
    except ConfigFileError as exc:
        raise click.ClickException(str(exc)) from None
    follower.stats.keep_lags = keep_lags
    return follower


def start_metrics(follower: Follower, host: str, port: int) -> Any:
    """Serve the follower's figures on http://HOST:PORT/metrics; returns the server."""
    try:
        from prometheus_client import CollectorRegistry, start_http_server

        from agentdocket.follow.metrics import FollowerCollector
    except ImportError as exc:
        raise click.ClickException(
            f"--metrics-port needs {exc.name}: pip install 'agentdocket[serve]'"
        ) from None
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FollowerCollector(follower))
    try:
        server, _ = start_http_server(port, host, registry=registry)
    except OSError as exc:
        raise click.ClickException(f"--metrics-port {port}: {exc.strerror}") from None
    return server


class Status:
    """A line on stderr every few seconds while something happens."""

    def __init__(self, every: float = STATUS_EVERY_S) -> None:
        self.every = every
        self.at = time.monotonic()
        self.shown = (-1, -1)

    def __call__(self, follower: Follower) -> None:
        now = time.monotonic()
        s = follower.stats
        added = sum(s.added.values())
        if now - self.at < self.every or (s.runs_seen, added) == self.shown:
            return
        self.at, self.shown = now, (s.runs_seen, added)
        err.print(
            f"agentdocket: followed {s.runs_seen} finished runs, {added} new verdicts, "
            f"{s.behind_events} events behind, cursor {s.position}"
        )


def follow_until_stopped(
    ctx: click.Context, config: FollowConfig, metrics_host: str, metrics_port: int | None
) -> None:
    """`score --follow`: follow in this process until SIGTERM or SIGINT, with metrics on
    ``metrics_port`` if given and the dashboards' rollups refreshed every minute (PostgreSQL)."""
    import signal

    from agentdocket.commands.refresh_dashboards import Refresher

    stop = threading.Event()
    with open_from(ctx) as store:
        follower = make_follower(store, config)
        server = start_metrics(follower, metrics_host, metrics_port) if metrics_port else None
        refresher = None
        if store.dialect == "postgresql":
            refresher = Refresher(store.url, 60.0)
            refresher.start()
        previous = {
            sig: signal.signal(sig, lambda *_: stop.set())
            for sig in (signal.SIGTERM, signal.SIGINT)
        }
        err.print(
            f"agentdocket: following as {follower.key} from {follower.position} with "
            + ", ".join(f.label for f in follower.chosen)
            + (f"; metrics on http://{metrics_host}:{metrics_port}/metrics" if server else "")
        )
        try:
            follower.run(stop, Status())
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            if refresher is not None:
                refresher.stop()
            if server is not None:
                server.shutdown()
            follower.store.close()
    added = sum(follower.stats.added.values())
    err.print(
        f"agentdocket: stopped; {follower.stats.runs_seen} finished runs followed, "
        f"{added} new verdicts, cursor {follower.stats.position}"
    )


class FollowerThread(threading.Thread):
    """A follower on a thread of its own (``serve --score``), with its own store."""

    def __init__(self, url: str, config: FollowConfig) -> None:
        super().__init__(name="agentdocket-follower", daemon=True)
        self.stopped = threading.Event()
        self.store = open_store(url, migrate=False)
        self.follower = make_follower(self.store, config)

    def run(self) -> None:
        try:
            self.follower.run(self.stopped, Status())
        except Exception as exc:  # the receiver in the same process keeps running
            err.print(f"[red]the follower stopped:[/] {type(exc).__name__}: {exc}")

    def stop(self) -> None:
        self.stopped.set()
        self.join()
        self.follower.store.close()
