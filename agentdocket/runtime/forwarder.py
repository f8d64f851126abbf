"""The forwarder as a service: each new verdict sent to an OTLP endpoint as it is stored
(a follower's ``[export]``; :mod:`agentdocket.outbound.forward`), on a thread of its own with
a store of its own, beside the follower (``score --follow``, ``serve --score``).

An endpoint that is away is tried again with a growing pause (up to
:data:`MAX_BACKOFF_S`); the verdicts wait in the log meanwhile. The database away is the
same: the next attempt opens a new store. Neither stops the follower or the receiver."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable

from agentdocket.follow.config import ExportConfig
from agentdocket.outbound.forward import Forwarder, ForwardStats, cursor_name
from agentdocket.outbound.otlp import EvaluationSender, ExporterUnavailable, SendFailed
from agentdocket.runtime import Say, StartError
from agentdocket.store import Store, StoreError

log = logging.getLogger("agentdocket.export")
MAX_BACKOFF_S = 30.0
POLL_S = 1.0


class ForwarderThread:
    """Sends new verdicts to ``config``'s endpoint until stopped (see the module docstring)."""

    def __init__(
        self,
        open: Callable[[], Store],
        config: ExportConfig,
        name: str,
        say: Say,
        *,
        poll: float = POLL_S,
    ) -> None:
        self.thread = threading.Thread(target=self.run, name="agentdocket-export", daemon=True)
        self.open = open
        self.say = say
        self.poll = poll
        self.key = cursor_name(name, config.otlp)
        self.batch = config.batch
        self.stats = ForwardStats()
        self.stopped = threading.Event()
        try:
            self.sender = EvaluationSender(
                config.otlp,
                config.protocol,
                config.headers,
                timeout=config.timeout_seconds,
                insecure=config.insecure,
            )
        except ExporterUnavailable as exc:
            raise StartError(f"[export]: {exc}") from None
        self.store: Store | None = None
        self.forwarder: Forwarder | None = None

    def start(self) -> ForwarderThread:
        self._connect()  # the cursor is placed before the first verdict can be missed
        if self.forwarder is None:
            raise StartError(f"[export]: cannot open the store to send verdicts to {self.key}")
        self.say(
            f"agentdocket: sending each new verdict to {self.sender.endpoint} "
            f"({self.key}, from {self.forwarder.position})"
        )
        self.thread.start()
        return self

    def _connect(self) -> None:
        """A store and a forwarder on it, from the saved cursor (None on failure)."""
        self._close()
        try:
            self.store = self.open()
            self.forwarder = Forwarder(
                self.store.arrivals,
                self.store.scoring,
                self.store.dead_letters,
                self.sender,
                self.key,
                batch=self.batch,
                stats=self.stats,
            )
        except StoreError as exc:
            log.warning("export %s: the store cannot be opened yet: %s", self.key, exc)
            self._close()

    def _close(self) -> None:
        self.forwarder = None
        if self.store is not None:
            with contextlib.suppress(Exception):  # the connection may be gone already
                self.store.close()
            self.store = None

    def run(self) -> None:
        backoff = self.poll
        away = False
        while not self.stopped.is_set():
            try:
                if self.forwarder is None:
                    self._connect()
                    if self.forwarder is None:
                        raise StoreError("the store is away")
                full = self.forwarder.round()
            except SendFailed as exc:
                if not away:
                    self.say(
                        f"agentdocket: cannot send verdicts to {self.sender.endpoint} ({exc}); "
                        "they wait in the log, retrying"
                    )
                away = True
            except StoreError as exc:
                log.warning("export %s: %s; retrying in %.0f s", self.key, exc, backoff)
                self._close()
            except Exception as exc:  # the follower and receiver beside it keep running
                self.say(f"agentdocket: sending verdicts failed: {type(exc).__name__}: {exc}")
                self._close()
            else:
                if away:
                    self.say(f"agentdocket: sending verdicts to {self.sender.endpoint} again")
                away = False
                backoff = self.poll
                if not full:
                    self.stopped.wait(self.poll)
                continue
            self.stopped.wait(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_S)

    def stop(self) -> None:
        self.stopped.set()
        if self.thread.is_alive():
            self.thread.join()
        self._close()
        self.sender.close()
