"""The figures of a receiver's siblings: the other processes of one ``serve --processes N``.

The processes share the HTTP and gRPC ports (``SO_REUSEPORT``), so a scrape of ``GET /metrics``
reaches any one of them. Each process writes its own figures (their Prometheus text) to a file
of its own in a directory they share, once a second, when it stops and before it answers a
scrape; whichever process a scrape reaches answers with its own figures, taken then, and its
siblings' latest added:

- counters are summed over every process that wrote figures, stopped ones included, so that a
  process restarted never makes a total go back (its successor counts from zero beside it;
  what a killed process counted after its last writing was never answered, so is not missed);
- gauges are summed over the processes alive now (``agentdocket_requests_in_flight``), except
  the spool's (``agentdocket_spool_*``), which measure the spool directory every process
  shares: they are this process's reading alone.

A sibling's figures are at most about a second old (:data:`EVERY_S`).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from agentdocket.ingest.readers import KEYS, Reader
from agentdocket.runtime.handover import NOT_TAKEN, Board, Handover, Reply

log = logging.getLogger("agentdocket.receiver")
EVERY_S = 1.0
SUFFIX = ".prom"
# Gauges that measure what all the processes share: one process's reading is everyone's.
SHARED = frozenset(
    {"agentdocket_spool_bytes", "agentdocket_spool_files", "agentdocket_spool_oldest_seconds"}
)


@dataclass(frozen=True)
class Figures:
    """One process's figures as it last wrote them."""

    pid: int
    text: str
    alive: bool


class Siblings:
    """The other receiver processes of one ``serve``: the directory where they share their
    figures, and (where given) the board of their requests in flight and the handover of
    requests to them (:mod:`agentdocket.runtime.handover`)."""

    def __init__(
        self,
        directory: Path,
        pid: int | None = None,
        board: Board | None = None,
        handover: Handover | None = None,
    ) -> None:
        self.directory = directory
        self.pid = os.getpid() if pid is None else pid
        self.board, self.handover = board, handover

    def in_flight(self, n: int) -> None:
        """This process has ``n`` requests in flight now."""
        if self.board is not None:
            self.board.set(n)

    def hand_over(self, read: Reader, body: bytes, source: str, in_flight: int) -> Reply | None:
        """A request handed to an idle sibling, where this process has another in flight: the
        sibling's reply, or None (this process takes it)."""
        if in_flight < 2 or self.board is None or self.handover is None:
            return None
        k = self.board.idle()
        if k is None:
            return None
        signal, protobuf = KEYS[read]
        reply = self.handover.give(k, signal, protobuf, body, source)
        return None if reply.status == NOT_TAKEN.status else reply  # (a sibling's comes pickled)

    def publish(self, text: bytes) -> None:
        """Write this process's figures, whole (a reader never sees half a file)."""
        path = self.directory / f"{self.pid}{SUFFIX}"
        partial = path.with_suffix(".partial")
        partial.write_bytes(text)
        os.replace(partial, path)

    def others(self) -> list[Figures]:
        """The latest figures of every other process that wrote some."""
        out = []
        for path in sorted(self.directory.glob(f"*{SUFFIX}")):
            if not path.stem.isdigit() or int(path.stem) == self.pid:
                continue
            try:
                text = path.read_text()
            except FileNotFoundError:
                continue
            out.append(Figures(int(path.stem), text, _alive(int(path.stem))))
        return out

    def merged(self, own: bytes) -> bytes:
        """``own`` figures (Prometheus text) with the siblings' added (see the module)."""
        return merge(own.decode(), self.others())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):  # gone, or someone else's under its pid
        return False
    return True


def merge(own: str, others: Sequence[Figures]) -> bytes:
    """One exposition of ``own`` figures and ``others``' (see the module's rules)."""
    families: dict[str, Metric] = {}
    sums: dict[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]] = {}

    def add(text: str, mine: bool, alive: bool) -> None:
        for family in text_string_to_metric_families(text):
            if family.name in SHARED and not mine:
                continue
            if family.type != "counter" and not alive:
                continue
            families.setdefault(family.name, family)
            values = sums.setdefault(family.name, {})
            for sample in family.samples:
                key = (sample.name, tuple(sorted(sample.labels.items())))
                values[key] = values.get(key, 0.0) + sample.value

    add(own, True, True)
    for figures in others:
        add(figures.text, False, figures.alive)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Fixed(list(_rebuilt(families, sums))))
    return bytes(generate_latest(registry))


def _rebuilt(
    families: dict[str, Metric],
    sums: dict[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]],
) -> Iterator[Metric]:
    for name, family in families.items():
        metric = Metric(name, family.documentation, family.type, family.unit)
        for (sample, labels), value in sums[name].items():
            metric.add_sample(sample, dict(labels), value)
        yield metric


class _Fixed:
    """A collector of metrics made already."""

    def __init__(self, metrics: list[Metric]) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        return iter(self.metrics)


class Figured(Protocol):
    """What has figures to share (:class:`agentdocket.runtime.otlp_http.Receiver`)."""

    def figures(self, *, alone: bool = False) -> bytes: ...


class Publisher:
    """Writes a receiver's own figures for its siblings: at start, every :data:`EVERY_S` and
    once more when it stops (so that its last counts stay in the totals)."""

    def __init__(self, receiver: Figured, siblings: Siblings, every: float = EVERY_S) -> None:
        self.receiver, self.siblings, self.every = receiver, siblings, every
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="agentdocket-figures", daemon=True)

    def start(self) -> None:
        self._publish()
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join()
        self._publish()

    def _run(self) -> None:
        while not self._stopping.wait(self.every):
            self._publish()

    def _publish(self) -> None:
        try:
            self.siblings.publish(self.receiver.figures(alone=True))
        except OSError as exc:  # the next one may pass; the scrape shows older figures meanwhile
            log.warning("agentdocket: cannot share this receiver's figures: %s", exc)
