"""``serve --processes N``: N receiver processes on the same ports, and their supervisor.

One process decodes, maps and writes under one interpreter lock; on two cores it tops out
near 12.5k spans/s with the lock always wanted and the machine a third idle (Benchmarks, "More
than one receiver process"). With ``--processes N`` the command's process supervises N
receivers, each a whole ``serve`` (its own sink and database connections) on the same HTTP and
gRPC ports (``SO_REUSEPORT``: the kernel spreads the connections over them) and the same spool
directory (one file per process). What must run once runs in the first alone: the follower
(``--score``) and the rollup and costs refresher. ``GET /metrics`` adds up the figures of all
of them (:mod:`agentdocket.runtime.siblings`); ``/healthz`` answers for the process that took
the connection.

The supervisor starts them and says so once every one is ready; on SIGTERM or SIGINT it asks
each to stop (SIGTERM: requests in flight finish, the spool is flushed) and waits. One that
dies before they are all ready stops them all, as a start error; one that dies later is started
again, at once and then after a growing wait while it fails to start.
"""

from __future__ import annotations

import contextlib
import fcntl
import multiprocessing
import os
import secrets
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from pathlib import Path
from types import FrameType

from agentdocket.runtime import Say, StartError
from agentdocket.runtime.receiver import (
    GRACE_S,
    STOP_SIGNALS,
    Member,
    ReceiverSettings,
    check_token,
    run_receiver,
)
from agentdocket.store import display_url

READY_S = 120.0  # how long a receiver may take to start (imports, its first connection)
RETRY_MAX_S = 30.0  # the longest wait before starting again a receiver that fails to start


def run_receivers(settings: ReceiverSettings, say: Say) -> None:
    """Receive with ``settings.processes`` processes (one: in this process) until SIGTERM or
    SIGINT; :class:`StartError` when one of them cannot start (none is left running then)."""
    if settings.processes <= 1:
        run_receiver(settings, say)
        return
    check_token(settings)
    if not hasattr(socket, "SO_REUSEPORT"):
        raise StartError("--processes needs SO_REUSEPORT, which this system lacks (use Linux)")
    with contextlib.ExitStack() as held:
        held.enter_context(_only_supervisor(settings.host, settings.port))
        # Every receiver's HTTP socket listens before any receiver starts, so that the
        # connections of exporters that start first spread over all of them; a receiver
        # started again takes up the same socket, connections waiting in it included.
        sockets = [held.enter_context(_listening(settings.host, settings.port))]
        port = int(sockets[0].getsockname()[1])  # the one asked for, or the free one found
        for _ in range(settings.processes - 1):
            sockets.append(held.enter_context(_listening(settings.host, port)))
        grpc_port = settings.grpc_port  # 0: no gRPC
        if grpc_port:
            grpc_port = held.enter_context(_reserved(settings.host, grpc_port))
        figures = held.enter_context(tempfile.TemporaryDirectory(prefix="agentdocket-serve-"))
        shared = replace(settings, port=port, grpc_port=grpc_port)
        Supervisor(shared, Path(figures), sockets, say).run()


@contextlib.contextmanager
def _only_supervisor(host: str, port: int) -> Iterator[None]:
    """Hold this host and port for this supervisor alone. Its sockets share the ports with
    ``SO_REUSEPORT``, which would also let a second ``serve --processes`` of the same user
    join them unnoticed; a single ``serve`` fails to bind, as it does on any port taken."""
    if port == 0:  # a free port is chosen: no one else can have asked for it
        yield
        return
    path = Path(tempfile.gettempdir()) / f"agentdocket-serve-{host}-{port}.lock"
    with open(path, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StartError(
                f"cannot listen on {host}:{port}: another `serve --processes` holds it"
            ) from None
        yield


def _socket(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` with ``SO_REUSEPORT``, as every receiver's is."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise StartError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    return sock


@contextlib.contextmanager
def _listening(host: str, port: int) -> Iterator[socket.socket]:
    """A receiver's HTTP socket, listening (the kernel spreads connections over them)."""
    with _socket(host, port) as sock:
        sock.listen(2048)
        yield sock


@contextlib.contextmanager
def _reserved(host: str, port: int) -> Iterator[int]:
    """The gRPC port held for the receivers while they run (bound, never listening): gRPC
    binds its own sockets, with ``SO_REUSEPORT`` when shared."""
    with _socket(host, port) as sock:
        yield int(sock.getsockname()[1])


@dataclass
class _Receiver:
    index: int
    process: BaseProcess
    ready: Connection  # the receiver sends its pid once ready, then waits for a go


class Supervisor:
    """Starts, watches and stops the receiver processes of one ``serve``."""

    def __init__(
        self, settings: ReceiverSettings, figures: Path, sockets: list[socket.socket], say: Say
    ) -> None:
        self.settings, self.figures, self.sockets, self.say = settings, figures, sockets, say
        self.context = multiprocessing.get_context("spawn")  # no fork of a threaded process
        # each receiver's requests in flight, which the others read before handing one over
        self.in_flight = self.context.RawArray("i", settings.processes)
        self.key = secrets.token_bytes(32)
        self.stopped_by: int | None = None
        self._wake, self._wakeup = socket.socketpair()
        self._wakeup.setblocking(False)

    def run(self) -> None:
        previous = {sig: signal.signal(sig, self._stop) for sig in STOP_SIGNALS}
        old_fd = signal.set_wakeup_fd(self._wakeup.fileno())
        receivers: list[_Receiver] = []
        try:
            receivers.extend(self._start(k) for k in range(self.settings.processes))
            for r in receivers:
                if not self._await_ready(r):
                    return
            # all together: a receiver's ports all taken before any one answers /healthz
            for r in receivers:
                r.ready.send("go")
            self._say_ready(receivers)
            self._watch(receivers)
        finally:
            self._stop_all(receivers)
            signal.set_wakeup_fd(old_fd)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self._wake.close()
            self._wakeup.close()
        if self.stopped_by is not None:
            self.say(f"agentdocket: stopped by {signal.Signals(self.stopped_by).name}")

    def _stop(self, sig: int, frame: FrameType | None) -> None:
        self.stopped_by = sig

    def settings_of(self, k: int) -> ReceiverSettings:
        """Receiver ``k``'s settings: the first also scores and refreshes."""
        s = self.settings
        return replace(
            s,
            processes=1,
            member=Member(k, self.figures, self.in_flight, self.key),
            scoring=s.scoring if k == 0 else None,
            refresh_every=s.refresh_every if k == 0 else 0.0,
        )

    def _start(self, k: int) -> _Receiver:
        mine, theirs = self.context.Pipe()
        process = self.context.Process(
            target=receive,
            args=(self.settings_of(k), self.sockets[k], theirs),
            name=f"agentdocket-receiver-{k}",
        )
        process.start()
        theirs.close()
        return _Receiver(k, process, mine)

    def _await_ready(self, r: _Receiver) -> bool:
        """Wait for ``r`` to be ready: False when asked to stop meanwhile."""
        while self.stopped_by is None:
            woken = wait([r.ready, r.process.sentinel, self._wake], timeout=READY_S)
            if not woken:
                raise StartError(f"receiver {r.index} did not start within {READY_S:.0f} s")
            if r.ready in woken:
                try:
                    r.ready.recv()
                    return True
                except EOFError:
                    pass  # it died before it was ready: its sentinel says so
            if r.process.sentinel in woken or not r.process.is_alive():
                r.process.join()
                raise StartError(
                    f"receiver {r.index} exited with status {r.process.exitcode} before it was "
                    "ready (its error is above)"
                )
            self._drain()
        return False

    def _say_ready(self, receivers: list[_Receiver]) -> None:
        s = self.settings
        pids = ", ".join(str(r.process.pid) for r in receivers)
        self.say(
            f"agentdocket: {len(receivers)} receiver processes (pids {pids}) on "
            f"http://{s.host}:{s.port}/v1/traces"
            + (f" and OTLP/gRPC on {s.host}:{s.grpc_port}" if s.grpc_port else "")
            + f" into {display_url(s.url)} (supervisor pid {os.getpid()})"
        )

    def _watch(self, receivers: list[_Receiver]) -> None:
        """Until asked to stop: start again a receiver that died, at once, and while it fails
        to start, again after 1, 2, 4 ... 30 s (the others receive meanwhile)."""
        due: dict[int, float] = {}  # receivers to start again, and when
        failures: dict[int, int] = {}
        while self.stopped_by is None:
            alive = {r.process.sentinel: r for r in receivers if r.index not in due}
            timeout = max(0.0, min(due.values()) - time.monotonic()) if due else None
            woken = wait([*alive, self._wake], timeout)
            self._drain()
            if self.stopped_by is not None:
                return
            for sentinel in woken:
                dead = alive.get(sentinel) if isinstance(sentinel, int) else None
                if dead is not None:
                    dead.process.join()
                    self.say(
                        f"agentdocket: receiver {dead.index} (pid {dead.process.pid}) exited "
                        f"with status {dead.process.exitcode}; starting it again"
                    )
                    due[dead.index] = time.monotonic()
            for k in [k for k, at in due.items() if at <= time.monotonic()]:
                if self._start_again(receivers, k):
                    del due[k]
                    failures.pop(k, None)
                elif self.stopped_by is None:
                    failures[k] = failures.get(k, 0) + 1
                    due[k] = time.monotonic() + min(RETRY_MAX_S, 2.0 ** (failures[k] - 1))

    def _start_again(self, receivers: list[_Receiver], k: int) -> bool:
        """Start receiver ``k`` again: whether it is ready (it says why not, if it can)."""
        old = next(r for r in receivers if r.index == k)
        old.ready.close()
        again = self._start(k)
        receivers[receivers.index(old)] = again
        try:
            if not self._await_ready(again):
                return False
        except StartError as exc:
            self.say(f"agentdocket: {exc}")
            return False
        again.ready.send("go")
        self.say(f"agentdocket: receiver {k} started again (pid {again.process.pid})")
        return True

    def _drain(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while self._wake.recv(512, socket.MSG_DONTWAIT):
                pass

    def _stop_all(self, receivers: list[_Receiver]) -> None:
        """Ask each receiver to stop, and wait: its requests in flight have ``GRACE_S``."""
        for r in receivers:
            if r.process.is_alive() and r.process.pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(r.process.pid, signal.SIGTERM)
        for r in receivers:
            r.process.join(GRACE_S + 15)
            if r.process.is_alive():
                self.say(f"agentdocket: receiver {r.index} did not stop; killing it")
                r.process.kill()
                r.process.join()
            r.ready.close()


def receive(settings: ReceiverSettings, listening: socket.socket, ready: Connection) -> None:
    """A receiver process: ``run_receiver`` with its lines marked. Once ready it tells
    ``ready`` its pid and waits there for the supervisor's go, given when every receiver is
    ready (its gRPC port taken: exporters starting then do not all find the first one alone).
    It ignores SIGINT: a Ctrl-C reaches the supervisor, which asks each receiver to stop with
    SIGTERM."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    k = settings.member.index if settings.member is not None else 0

    def say(text: str) -> None:
        print(f"[receiver {k}] {text}", file=sys.stderr, flush=True)

    try:
        run_receiver(settings, say, ready=lambda: _ready(ready), listening=listening)
    except StartError as exc:
        say(f"agentdocket: {exc}")
        sys.exit(2)
    except EOFError:  # the supervisor went before its go
        say("agentdocket: the supervisor is gone; stopping")
        sys.exit(1)


def _ready(supervisor: Connection) -> None:
    """Say ready, wait for the go, then watch the supervisor: should it go (killed), this
    receiver stops as if asked to (not left holding the ports, orphaned)."""
    supervisor.send(os.getpid())
    supervisor.recv()
    threading.Thread(
        target=_stop_when_gone, args=(supervisor,), name="agentdocket-supervisor", daemon=True
    ).start()


def _stop_when_gone(supervisor: Connection) -> None:
    with contextlib.suppress(EOFError, OSError):
        supervisor.recv()  # the supervisor sends nothing more: this returns when it is gone
    os.kill(os.getpid(), signal.SIGTERM)
