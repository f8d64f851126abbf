"""Requests handed over between the receiver processes of one ``serve --processes N``.

An exporter keeps its connection (gRPC's above all): the process that took it gets all its
requests, and two busy exporters may well share one process while another idles. So a
receiver with another request in flight hands a new one to a sibling that has none, if there
is one (:class:`Board`: each process's requests in flight, in memory they share), over a Unix
socket in their shared directory (:class:`Handover`); the sibling decodes, maps and stores it,
and its answer (stored or spooled, or why not) is the answer to the exporter. A sibling that
cannot be reached, or is full, leaves the request to the process that took it.

Only the processes of one supervisor talk so: the sockets are in its private directory and
each connection proves it knows the supervisor's key (``multiprocessing``'s HMAC challenge).
"""

from __future__ import annotations

import contextlib
import logging
import queue
import socket
import threading
from collections.abc import Callable, MutableSequence
from dataclasses import dataclass, field
from multiprocessing.connection import Client, Connection, Listener
from pathlib import Path

log = logging.getLogger("agentdocket.receiver")


@dataclass(frozen=True)
class Reply:
    """A sibling's answer: 200 stored or spooled, else the status and message of its refusal;
    0: not taken (it is full), the request stays with the process that took it."""

    status: int
    message: str = ""
    headers: dict[str, str] = field(default_factory=dict)


DONE = Reply(200)
NOT_TAKEN = Reply(0)
# What a process does with a request handed to it: (signal, protobuf, body, source).
Take = Callable[[str, bool, bytes, str], Reply]


class Board:
    """Each receiver's requests in flight, in shared memory (``counts``, one integer per
    process, made by the supervisor); this process is ``index``."""

    def __init__(self, counts: MutableSequence[int], index: int) -> None:
        self.counts, self.index = counts, index
        counts[index] = 0  # a process started again: what its predecessor left is not in flight

    def set(self, in_flight: int) -> None:
        self.counts[self.index] = in_flight

    def idle(self) -> int | None:
        """A sibling with no request in flight (the next one after this process first, so that
        busy processes do not all pick the same), or None."""
        n = len(self.counts)
        for step in range(1, n):
            k = (self.index + step) % n
            if self.counts[k] == 0:
                return k
        return None


class Handover:
    """This process's socket for requests from its siblings, and its connections to theirs."""

    def __init__(self, directory: Path, index: int, key: bytes) -> None:
        self.directory, self.index, self.key = directory, index, key
        self._idle: dict[int, queue.SimpleQueue[Connection]] = {}
        self._listener: Listener | None = None
        # siblings' connections to this process, each answered by a thread
        self._taking: dict[Connection, threading.Thread] = {}
        self._lock = threading.Lock()

    def _address(self, k: int) -> str:
        return str(self.directory / f"{k}.sock")

    # --- taking ---------------------------------------------------------------------------------

    def serve(self, take: Take) -> None:
        """Take siblings' requests with ``take``, each connection on a thread of its own."""
        address = self._address(self.index)
        # a predecessor of this index, killed, left its socket's file: the index is this one's
        Path(address).unlink(missing_ok=True)
        self._listener = Listener(address, family="AF_UNIX", authkey=self.key)
        threading.Thread(
            target=self._accept,
            args=(self._listener, take),
            name="agentdocket-handover",
            daemon=True,
        ).start()

    def _accept(self, listener: Listener, take: Take) -> None:
        while True:
            try:
                conn = listener.accept()
            except OSError:  # closed: this process stops
                return
            except Exception as exc:  # a failed challenge: not one of ours
                log.warning("agentdocket: a handover connection was refused: %s", exc)
                continue
            answering = threading.Thread(
                target=self._answer, args=(conn, take), name="agentdocket-handover", daemon=True
            )
            with self._lock:
                self._taking[conn] = answering
            answering.start()

    def _answer(self, conn: Connection, take: Take) -> None:
        with contextlib.suppress(EOFError, OSError, ValueError):  # closed by close()
            while True:
                signal, protobuf, body, source = conn.recv()
                conn.send(take(signal, protobuf, body, source))
        with self._lock:  # closed under the lock: close() never shuts another file's number
            self._taking.pop(conn, None)
            conn.close()

    def close(self, grace: float = 30.0) -> None:
        """Take no more requests: siblings asking find the socket gone and keep theirs; a
        request being taken now is finished (within ``grace`` seconds), though its answer no
        longer reaches the sibling, which then stores it itself (a second append adds
        nothing). Then close this process's connections to its siblings."""
        if self._listener is not None:
            self._listener.close()
        with self._lock:
            taking = dict(self._taking)
            for conn in taking:  # wakes its thread, in recv or about to answer (close would not)
                with (
                    contextlib.suppress(OSError),
                    socket.fromfd(conn.fileno(), socket.AF_UNIX, socket.SOCK_STREAM) as sock,
                ):
                    sock.shutdown(socket.SHUT_RDWR)
        for answering in taking.values():
            answering.join(grace)
        for idle in self._idle.values():
            while not idle.empty():
                idle.get_nowait().close()

    # --- giving ---------------------------------------------------------------------------------

    def give(self, k: int, signal: str, protobuf: bool, body: bytes, source: str) -> Reply:
        """Hand a request to sibling ``k``: its reply, or :data:`NOT_TAKEN` where it cannot
        be reached (it stops, or is being started again)."""
        idle = self._idle.setdefault(k, queue.SimpleQueue())
        try:
            conn = idle.get_nowait()
        except queue.Empty:
            try:
                conn = Client(self._address(k), family="AF_UNIX", authkey=self.key)
            except (OSError, EOFError) as exc:
                log.debug("agentdocket: receiver %d cannot take a request: %s", k, exc)
                return NOT_TAKEN
        try:
            conn.send((signal, protobuf, body, source))
            reply: Reply = conn.recv()
        except (OSError, EOFError) as exc:  # it died: the request is ours again, whole
            conn.close()
            log.debug("agentdocket: receiver %d went while taking a request: %s", k, exc)
            return NOT_TAKEN
        idle.put(conn)
        return reply
