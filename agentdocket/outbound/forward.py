"""Sending each new verdict to an OTLP endpoint as it is stored, exactly once per verdict
through restarts: the live side of ``export verdicts --otlp`` (a follower's ``[export]``).

The forwarder follows the log's verdict events in arrival order from a cursor of its own
(``export:NAME:ENDPOINT`` among the followers' cursors). Each round reads the verdicts stored
after it, turns them into ``gen_ai.evaluation.result`` records
(:mod:`agentdocket.outbound.evaluations`; those received from outside and those of
measurements alone are left out, as the batch export leaves them out), sends them, and only
then moves the cursor past them. So:

- a forwarder killed at any point resumes with every verdict it had not sent; the batch in
  flight at the kill is sent again, as the same records (same trace, span, time and
  attributes, with ``agentdocket.verdict.id``), which an agentdocket receiver keeps once and
  any other backend can recognise;
- while the endpoint is away, nothing moves: the verdicts wait in the log (the log is the
  spool), and are sent when it is back;
- two forwarders of one name (two ``serve --score`` processes) take turns: one sends a
  round while it holds the name's claim (PostgreSQL), the other waits for the next round;
- a record the endpoint refuses while it takes others (the endpoint answers an empty request
  but not the batch, then not that record alone) is kept as a dead letter with the
  endpoint's name, and the verdicts after it go through.

A new forwarder starts at the head of the log: the verdicts made from then on. The history is
sent with ``export verdicts --otlp``, once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from agentdocket.outbound.evaluations import Evaluation, LeftOut, records
from agentdocket.outbound.otlp import SendFailed
from agentdocket.store.arrivals import Arrivals, Position
from agentdocket.store.dead_letters import OUTBOUND, DeadLetter, DeadLetters, raw_json
from agentdocket.store.scoring_reads import ScoringReader

VERDICT_KIND = "verdict"
SOURCE = f"{OUTBOUND}otlp"
CLAIM = "outbound"  # what one forwarder of a name holds while it sends (one at a time)


class Sender(Protocol):
    """Where the records go (:class:`agentdocket.outbound.otlp.EvaluationSender`): ``send``
    raises :class:`SendFailed` unless the endpoint took the batch."""

    endpoint: str

    def send(self, batch: Sequence[Evaluation]) -> None: ...

    def reachable(self) -> bool: ...


def cursor_name(name: str, endpoint: str) -> str:
    """The cursor a forwarder named ``name`` keeps for ``endpoint``."""
    return f"export:{name}:{endpoint}"


@dataclass
class ForwardStats:
    """What a forwarder did since it started."""

    sent: int = 0
    left_out: int = 0  # received from outside, or measurements alone
    refused: int = 0  # kept as dead letters
    failures: int = 0  # rounds the endpoint was away


class Forwarder:
    """Sends the verdicts stored after its cursor to ``sender`` (see the module docstring)."""

    def __init__(
        self,
        arrivals: Arrivals,
        scoring: ScoringReader,
        dead_letters: DeadLetters,
        sender: Sender,
        key: str,
        *,
        batch: int = 500,
        stats: ForwardStats | None = None,
    ) -> None:
        self.arrivals = arrivals
        self.scoring = scoring
        self.dead_letters = dead_letters
        self.sender = sender
        self.key = key
        self.batch = batch
        self.stats = stats if stats is not None else ForwardStats()
        if arrivals.saved_at(key) is None:  # new: from the verdicts made from now on
            arrivals.save_cursor(key, arrivals.head())
        self.position = arrivals.cursor(key)

    def round(self) -> bool:
        """Send the verdicts stored after the cursor (up to ``batch``) and move it past them;
        True when more are waiting. Raises :class:`SendFailed` when the endpoint is away: the cursor
        is then past what was sent, and no further."""
        held = self.arrivals.claim(self.key, [CLAIM])
        if not held:  # another forwarder of this name is sending (PostgreSQL)
            return False
        try:
            self.position = max(self.position, self.arrivals.cursor(self.key))
            found = self.arrivals.events_after(self.position, self.batch, (VERDICT_KIND,))
            if not found:
                return False
            records = self._records(found)
            try:
                self.sender.send([e for _, e in records])
                self.stats.sent += len(records)
            except SendFailed:
                if not self.sender.reachable():
                    self.stats.failures += 1
                    raise
                self._one_by_one(records)
            self._save(found[-1][0])
            return len(found) >= self.batch
        finally:
            self.arrivals.release(self.key, held)

    def _records(self, found: Sequence[tuple[Position, str]]) -> list[tuple[Position, Evaluation]]:
        """The records of the verdicts ``found``, in arrival order, with their positions."""
        by_id = {r["verdict_id"]: r for r in self.scoring.verdict_rows_of([i for _, i in found])}
        stored = [(p, dict(by_id[i])) for p, i in found if i in by_id]
        left = LeftOut()
        chosen = records([r for _, r in stored], self.scoring.root_spans, left)
        self.stats.left_out += len(found) - len(chosen)
        return [(stored[i][0], e) for i, e in chosen]

    def _one_by_one(self, records: Sequence[tuple[Position, Evaluation]]) -> None:
        """The endpoint is up but did not take the batch: each record alone, a refused one
        kept as a dead letter; if the endpoint goes away meanwhile, the cursor stops before
        the record it did not take."""
        for position, record in records:
            try:
                self.sender.send([record])
                self.stats.sent += 1
            except SendFailed as exc:
                if not self.sender.reachable():
                    self.stats.failures += 1
                    self._save(position.before())
                    raise
                self.dead_letters.keep([self._letter(record, exc)])
                self.stats.refused += 1

    def _letter(self, record: Evaluation, exc: Exception) -> DeadLetter:
        raw = raw_json(
            {
                "trace_id": record.trace_id,
                "span_id": record.span_id,
                "time_unix_nano": record.time_ns,
                "attributes": record.attributes,
            }
        )
        return DeadLetter.of_raw(
            raw,
            f"{self.sender.endpoint} refused this gen_ai.evaluation.result record ({exc}); "
            "send it again with: agentdocket export verdicts --otlp",
            f"{SOURCE} {self.sender.endpoint}",
            trace_id=record.trace_id,
        )

    def _save(self, position: Position) -> None:
        if position > self.position:
            self.arrivals.save_cursor(self.key, position)
            self.position = position
