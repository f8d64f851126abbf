"""The follower as a service: judging runs as they finish (``score --follow``, ``serve
--score``), with a status line now and then, metrics if asked, the rollups refreshed."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from agentdocket.follow.config import ConfigFileError, FollowConfig
from agentdocket.follow.follower import Follower
from agentdocket.runtime import Say, Services, StartError
from agentdocket.runtime.refresher import Refresher
from agentdocket.store import Store, StoreError
from agentdocket.store.backends import backend_of

STATUS_EVERY_S = 10.0


def make_follower(store: Store, config: FollowConfig, reopen: Callable[[], Store]) -> Follower:
    """A follower of ``config`` on ``store`` (opening another from ``reopen`` after a
    failure)."""
    try:
        return Follower(store, config, reopen=reopen)
    except ConfigFileError as exc:
        raise StartError(str(exc)) from None


class Status:
    """A line for the operator every ``every`` seconds while something happens."""

    def __init__(self, say: Say, every: float = STATUS_EVERY_S) -> None:
        self.say = say
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
        self.say(
            f"agentdocket: followed {s.runs_seen} finished runs, {added} new verdicts, "
            f"{s.behind_events} events behind, cursor {s.position}"
        )


def describe(follower: Follower) -> str:
    return f"as {follower.key} with " + ", ".join(
        f.label for f in [*follower.chosen, *follower.sessions]
    )


class FollowerThread(threading.Thread):
    """A follower on a thread of its own with its own store (``serve --score``); a failure
    stops the follower, never the process around it."""

    def __init__(self, open: Callable[[], Store], config: FollowConfig, say: Say) -> None:
        super().__init__(name="agentdocket-follower", daemon=True)
        self.say = say
        self.stopped = threading.Event()
        try:
            self.store = open()
        except StoreError as exc:
            raise StartError(f"--score: {exc}") from None
        self.follower = make_follower(self.store, config, open)

    def run(self) -> None:
        try:
            self.follower.run(self.stopped, Status(self.say))
        except Exception as exc:  # the receiver in the same process keeps running
            self.say(f"agentdocket: the follower stopped: {type(exc).__name__}: {exc}")

    def stop(self) -> None:
        self.stopped.set()
        if self.is_alive():
            self.join()
        self.follower.store.close()


class MetricsServer:
    """The follower's figures on http://HOST:PORT/metrics (``score --follow --metrics-port``)."""

    def __init__(self, follower: Follower, host: str, port: int) -> None:
        self.follower, self.host, self.port = follower, host, port
        self.server: Any = None

    def start(self) -> MetricsServer:
        try:
            from prometheus_client import CollectorRegistry, start_http_server

            from agentdocket.follow.metrics import FollowerCollector
        except ImportError as exc:
            raise StartError(
                f"--metrics-port needs {exc.name}: pip install 'agentdocket[serve]'"
            ) from None
        registry = CollectorRegistry(auto_describe=False)
        registry.register(FollowerCollector(self.follower))
        try:
            self.server, _ = start_http_server(self.port, self.host, registry=registry)
        except OSError as exc:
            raise StartError(f"--metrics-port {self.port}: {exc.strerror}") from None
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()


def follow(
    store: Store,
    config: FollowConfig,
    stop: threading.Event,
    say: Say,
    *,
    metrics: tuple[str, int] | None = None,
) -> Follower:
    """Follow in this thread until ``stop`` is set (``score --follow``), with metrics on
    ``metrics`` (host, port) if given, the rollups refreshed every minute (PostgreSQL), and
    each new verdict sent to the config's ``[export]`` endpoint, if any."""
    follower = make_follower(store, config, store.sibling)
    services = Services()
    try:
        if metrics is not None:
            services.start(MetricsServer(follower, *metrics))
        if backend_of(store.url).rollups:
            services.start(Refresher(store.sibling, 60.0))
        if config.export is not None:
            from agentdocket.runtime.forwarder import ForwarderThread

            services.start(ForwarderThread(store.sibling, config.export, config.name, say))
        say(
            f"agentdocket: following {describe(follower)} from {follower.position}"
            + (f"; metrics on http://{metrics[0]}:{metrics[1]}/metrics" if metrics else "")
        )
        follower.run(stop, Status(say))
    finally:
        services.stop()
        follower.store.close()
    return follower
