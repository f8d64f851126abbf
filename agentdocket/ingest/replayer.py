"""The spool's replay in the background: what waits is delivered until nothing does, also when
no new events come to trigger a delivery."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger("agentdocket.ingest")


class Replayer:
    """Calls ``replay_once`` (True: nothing waits any more) at once and then every
    ``every_s`` seconds, on a thread started by :meth:`ensure` (when something was spooled, or
    was found at start) and ended when nothing waits or by :meth:`close`."""

    def __init__(self, replay_once: Callable[[], bool], every_s: float) -> None:
        self.replay_once, self.every_s = replay_once, every_s
        self._thread: threading.Thread | None = None
        self._closed = threading.Event()

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def ensure(self) -> None:
        """Replay in the background, unless that runs already or the sink is closed."""
        if self._closed.is_set() or (self._thread is not None and self._thread.is_alive()):
            return
        self._thread = threading.Thread(
            target=self._loop, name="agentdocket-spool-replay", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        self._closed.set()

    def _loop(self) -> None:
        """The first try at once, so that a process started after an outage empties the spool
        it inherited."""
        first = True
        while first or not self._closed.wait(self.every_s):
            first = False
            try:
                if self._closed.is_set() or self.replay_once():
                    return
            except Exception:
                log.exception("agentdocket: replaying the spool failed")
