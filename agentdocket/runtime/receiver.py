"""``agentdocket serve`` as a service: the OTLP/HTTP and OTLP/gRPC receivers on one sink, and
beside them the annotators' page (``/annotate/`` on the HTTP port), the pipeline sampler
(which also keeps partitions made ahead), the rollup refresher (PostgreSQL) and, when asked, a
follower judging runs as they finish."""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator, MutableSequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from agentdocket.follow.config import FollowConfig
from agentdocket.runtime import Say, Services, StartError
from agentdocket.runtime.follower import FollowerThread, describe
from agentdocket.runtime.refresher import Refresher
from agentdocket.store import Opener, Redactor, display_url
from agentdocket.store.backends import backend_of
from agentdocket.store.limits import LIVE, Limits

if TYPE_CHECKING:
    from agentdocket.runtime.handover import Handover, Take
    from agentdocket.runtime.otlp_http import Receiver

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
SWITCH_INTERVAL_S = 0.0001
GRACE_S = 30  # how long requests in flight may take to finish once asked to stop


@dataclass(frozen=True)
class ReceiverSettings:
    """What ``serve`` was asked for: where to listen, the limits, what runs beside."""

    url: str
    redactor: Redactor
    host: str = "127.0.0.1"
    port: int = 4318
    grpc_port: int = 4317  # 0: no gRPC
    token: str | None = None
    max_body: int = 16 * 1024 * 1024
    max_pending: int = 8
    connections: int = 1  # database connections writing at once (by trace id)
    spool_dir: Path | None = None
    limits: Limits = LIVE
    refresh_every: float = 60.0  # 0: never
    scoring: FollowConfig | None = None
    processes: int = 1  # receiver processes sharing the ports (agentdocket.runtime.processes)
    member: Member | None = None  # set in each of them


@dataclass(frozen=True)
class Member:
    """One of the receiver processes of ``serve --processes N``: which one, the directory
    where they share their figures (:mod:`agentdocket.runtime.siblings`) and take requests
    from each other (:mod:`agentdocket.runtime.handover`), the shared memory counting their
    requests in flight, and the key that proves a connection comes from one of them."""

    index: int
    figures: Path
    in_flight: MutableSequence[int]
    key: bytes


def _missing(exc: ImportError) -> StartError:
    return StartError(
        f"`serve` needs the receiver's packages ({exc.name} is missing): "
        "pip install 'agentdocket[serve]'"
    )


def _uvicorn_server(app: Any, host: str, port: int, stop_on: tuple[int, ...] = STOP_SIGNALS) -> Any:
    try:
        import uvicorn
    except ImportError as exc:
        raise _missing(exc) from None

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
            previous = {sig: signal.signal(sig, self._stop) for sig in stop_on}
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

    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=GRACE_S,
    )
    return Server(config)


class _Grpc:
    def __init__(self, receiver: Any, host: str, port: int, shared: bool = False) -> None:
        self.receiver, self.host, self.port, self.shared = receiver, host, port, shared
        self.server: Any = None

    def start(self) -> None:
        try:
            from agentdocket.runtime.otlp_grpc import GrpcReceiver
        except ImportError as exc:
            raise StartError(
                f"OTLP/gRPC needs {exc.name}: pip install 'agentdocket[serve]' (or --grpc-port 0)"
            ) from None
        try:
            self.server = GrpcReceiver(self.receiver, self.host, self.port, self.shared).start()
        except (OSError, RuntimeError) as exc:
            raise StartError(f"{exc} (another process may hold the port)") from None
        self.port = self.server.port

    def stop(self) -> None:
        self.server.stop(GRACE_S)


class _Serving:
    """Taking requests from sibling processes, while the receiver runs."""

    def __init__(self, handover: Handover, take: Take) -> None:
        self.handover, self.take = handover, take

    def start(self) -> None:
        self.handover.serve(self.take)

    def stop(self) -> None:
        self.handover.close()


class _Closing:
    """Something to close when the services stop (the sink: flush, close the spool; the
    annotation page: close its store)."""

    def __init__(self, thing: Any) -> None:
        self.thing = thing

    def start(self) -> None:
        pass

    def stop(self) -> None:
        self.thing.close()


def check_token(settings: ReceiverSettings) -> None:
    from agentdocket.runtime.otlp_http import is_loopback

    if settings.token is not None and not settings.token.strip():  # never turns auth off
        raise StartError("--token (or $AGENTDOCKET_SERVE_TOKEN) is blank")
    if not settings.token and not is_loopback(settings.host):
        raise StartError(
            f"listening on {settings.host} (not loopback) needs a bearer token: --token or "
            "$AGENTDOCKET_SERVE_TOKEN"
        )


def run_receiver(
    settings: ReceiverSettings,
    say: Say,
    ready: Callable[[], object] | None = None,
    listening: socket.socket | None = None,
) -> None:
    """Receive until SIGTERM or SIGINT, then let requests in flight finish (each one stored or
    spooled), stop what runs beside, flush and close the spool. :class:`StartError` when
    something cannot start (nothing is left running then). ``ready`` is called once the ports
    are taken and everything beside has started. One of several processes (``member``) takes
    HTTP requests on ``listening`` (its supervisor's socket), shares the gRPC port and its
    figures, and stops on SIGTERM alone (its supervisor's)."""
    try:
        from agentdocket.people.annotate import PATH, Annotation
        from agentdocket.runtime.otlp_http import Receiver
    except ImportError as exc:
        raise _missing(exc) from None
    from agentdocket.ingest.sink import Sink, with_connect_timeout
    from agentdocket.runtime.feedback import StoreLookup

    s = settings
    check_token(s)
    own = listening is None and bool(s.port)
    if own:  # taken first: a port in use is said before anything
        listening = _bound(s.host, s.port)
    # this process's stores: the first opened checks the schema, the others are its siblings,
    # each service's on a connection of its own, opened when first needed
    opener = Opener(with_connect_timeout(s.url), redactor=s.redactor)
    sink = Sink(
        opener.url,
        spool_dir=s.spool_dir,
        redactor=s.redactor,
        source="receiver",
        limits=s.limits,
        connections=s.connections,
        store_factory=lambda: opener(s.limits),
    )
    token = s.token.strip() if s.token else None
    annotation = Annotation(opener)
    receiver = Receiver(
        sink,
        lookup=StoreLookup(opener),
        token=token,
        max_body=s.max_body,
        max_pending=s.max_pending,
        extra_routes=annotation.routes,
    )
    services = Services()
    services.start(_Closing(opener))  # stopped after everything that opened a store from it
    services.start(_Closing(sink))
    services.start(_Closing(receiver.lookup))
    services.start(_Closing(annotation))
    try:
        m = s.member  # one of several processes: the ports shared, stopped by SIGTERM alone
        if m is not None:
            _join_siblings(services, receiver, m)
        stop_on = (signal.SIGTERM,) if m is not None else STOP_SIGNALS
        server = _uvicorn_server(receiver.app, s.host, s.port, stop_on)
        grpc = _Grpc(receiver, s.host, s.grpc_port, m is not None) if s.grpc_port else None
        if grpc is not None:
            services.start(grpc)
        say(
            f"agentdocket: receiving OTLP/HTTP on http://{s.host}:{s.port}/v1/traces"
            + (f" and OTLP/gRPC on {s.host}:{grpc.port}" if grpc else "")
            + f" into {display_url(s.url)} (pid {os.getpid()})"
        )
        say(f"agentdocket: annotation page on http://{s.host}:{s.port}{PATH}/")
        _start_beside(services, receiver, opener, s, say)
        _settle()
        if ready is not None:
            ready()
        server.run(sockets=[listening] if listening is not None else None)
    finally:
        services.stop()
        if own and listening is not None:
            listening.close()
    if server.stopped_by is not None:
        say(
            f"agentdocket: stopped by {signal.Signals(server.stopped_by).name}; "
            f"{receiver.stats.spans} spans received"
        )


def _bound(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` for this one process (uvicorn listens on it), or
    :class:`StartError` naming the port when another process holds it."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise StartError(
            f"cannot listen for OTLP/HTTP on {host}:{port}: {exc.strerror} (another process "
            "may hold the port)"
        ) from None
    return sock


def _join_siblings(services: Services, receiver: Receiver, member: Member) -> None:
    """Hand requests to idle siblings and take theirs; publish this process's figures."""
    from agentdocket.runtime.handover import Board, Handover
    from agentdocket.runtime.siblings import Publisher, Siblings

    handover = Handover(member.figures, member.index, member.key)
    board = Board(member.in_flight, member.index)
    receiver.siblings = Siblings(member.figures, board=board, handover=handover)
    services.start(_Serving(handover, receiver.take_over))
    services.start(Publisher(receiver, receiver.siblings))


def _start_beside(
    services: Services, receiver: Receiver, opener: Opener, s: ReceiverSettings, say: Say
) -> None:
    """What runs beside the receiving, each with its own stores from ``opener``: the follower
    (``--score``), the sampler of the database's figures, the rollups' refresher."""
    from agentdocket.runtime.sampler import Sampler

    if s.scoring is not None:
        from agentdocket.follow.metrics import FollowerCollector

        if s.scoring.export is not None:  # its cursor placed before the first verdict
            from agentdocket.runtime.forwarder import ForwarderThread

            services.start(ForwarderThread(opener, s.scoring.export, s.scoring.name, say))
        follower = FollowerThread(opener, s.scoring, say)
        receiver.collectors.append(FollowerCollector(follower.follower))
        services.start(follower)
        say(f"agentdocket: scoring runs as they finish, {describe(follower.follower)}")
    services.start(Sampler(receiver, opener))
    if s.refresh_every and backend_of(s.url).rollups:
        services.start(Refresher(opener, s.refresh_every))


def _settle() -> None:
    """Tune the interpreter for a long-lived receiving process."""
    # What exists now (modules, the app, the services) lives as long as the process: the
    # collector's full passes leave it out (decoding and mapping a span: 42 to 37 us)
    gc.collect()
    gc.freeze()
    # A thread back from the database (the append of a request, each of its round trips)
    # waits for the interpreter lock while others decode and map; by default it may wait
    # the whole switch interval, 5 ms, with the database idle. This process's threads
    # hand the lock over every 0.1 ms: 10.2k to 13.5k spans/s (bench/receiver.py).
    sys.setswitchinterval(SWITCH_INTERVAL_S)
