"""``agentdocket serve`` as a real process on a free loopback port, for the receiver's tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

# A minute before the tests began: inside live ingestion's time window (spans dated outside it
# are dead letters), for requests built by hand.
START_NS = time.time_ns() - 60 * 10**9


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_cli(url: str, log: Path, *args: str) -> subprocess.Popen[bytes]:
    """``agentdocket --database URL ARGS...`` as a process of its own, its output in ``log``."""
    command = [sys.executable, "-c", "from agentdocket.cli import main; main()"]
    with open(log, "ab") as out:
        return subprocess.Popen(
            [*command, "--database", url, *args], stdout=out, stderr=out, env=dict(os.environ)
        )


class PortTaken(RuntimeError):
    """serve could not bind its port: another process holds it."""


class Server:
    """One ``agentdocket serve`` process; :meth:`restart` kills it and starts another on the
    same port."""

    def __init__(
        self, url: str, spool: Path, *args: str, port: int | None = None, grpc: bool = False
    ) -> None:
        self.url = url
        self.spool = spool
        self.args = args
        self.chosen = port is None  # ours to choose again if another process takes it first
        self.grpc = grpc
        self._ports(port)
        self.proc: subprocess.Popen[bytes] | None = None

    def _ports(self, port: int | None) -> None:
        self.port = port or free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}/v1/traces"
        # OTLP/gRPC only where a test asks for it (its default port is shared by all)
        self.grpc_port = free_port() if self.grpc else 0
        self.grpc_endpoint = f"127.0.0.1:{self.grpc_port}"
        self.log = self.spool.parent / f"serve-{self.port}.log"

    def start(self) -> Server:
        """Start serve and wait until it answers. A free port may be taken by another process
        (an outgoing connection's ephemeral port) before serve binds it: then, where the port
        was ours to choose, choose again."""
        for _ in range(5):
            try:
                return self._start()
            except PortTaken:
                if not self.chosen:
                    raise
                self._ports(None)
        return self._start()

    def _start(self) -> Server:
        self.proc = start_cli(
            self.url,
            self.log,
            "serve",
            "--port",
            str(self.port),
            "--spool-dir",
            str(self.spool),
            "--grpc-port",
            str(self.grpc_port),
            *self.args,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                said = self.log.read_text()
                if "address already in use" in said:
                    raise PortTaken(said)
                raise RuntimeError(f"serve exited: {said}")
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError(f"serve did not come up: {self.log.read_text()}")

    def settled(self, timeout: float = 60) -> None:
        """Wait until nothing waits in serve's spool: everything it acknowledged (200 means
        stored or spooled) is then in the database."""
        deadline = time.monotonic() + timeout
        while httpx.get(f"http://127.0.0.1:{self.port}/healthz", timeout=10).json()["spooled"]:
            if time.monotonic() > deadline:
                raise AssertionError(f"serve's spool did not drain: {self.log.read_text()}")
            time.sleep(0.1)  # polling the condition, not standing in for it

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()

    def restart(self) -> None:
        self.kill()
        self.start()
