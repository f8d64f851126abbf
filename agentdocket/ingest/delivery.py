"""What a span exporter hands its events to: a :class:`Delivery` keeps them (the durable
:class:`~agentdocket.ingest.sink.Sink`: stored, or spooled while the database is away) and
counts what became of them. The tracer's exporter knows this interface, not the sink."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from agentdocket.events import Event


@dataclass
class DeliveryStats:
    """What the sink has done since it started (counts of spans unless said otherwise)."""

    spans: int = 0
    events: int = 0  # events handed to the sink
    delivered: int = 0  # events appended to the database directly
    spooled: int = 0  # events written to the spool
    replayed: int = 0  # events delivered from the spool
    refused: int = 0  # events the database refused, kept as dead letters
    dropped: dict[str, int] = field(default_factory=dict)  # spans, by reason
    failures: int = 0  # failed attempts to reach or write the database


class Delivery(Protocol):
    """Where events go: kept (never raising into the caller) and counted."""

    stats: DeliveryStats

    def deliver(self, events: list[Event], n_spans: int = 0, source: str | None = None) -> str:
        """Keep ``events`` (mapped from ``n_spans`` spans): "stored", "spooled", "dropped" or
        "unavailable"."""
        ...

    def dropped(self, reason: str, n: int) -> None:
        """Count ``n`` spans lost before they reached it (for ``reason``)."""
        ...

    def close(self) -> None:
        """Deliver what can be, and let go of what it holds."""
        ...
