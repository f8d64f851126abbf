"""Dead letters: records the database refused, kept whole with their error and origin.

A dead letter is never dropped and never changed. It is *resolved* once its event is in the log,
which :meth:`agentdocket.store.Store.retry_dead_letters` achieves when the cause has been fixed (a
constraint relaxed, the software upgraded). The same refused content is kept once, however
often it is sent: its id is a hash of the raw record.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from agentdocket.events import Event, PayloadError, event_from_json, event_to_json
from agentdocket.store.errors import RecordRefused, StoreError
from agentdocket.store.limits import bound
from agentdocket.store.recorder import Recorder
from agentdocket.store.rows import DeadLetterRow, typed

DEAD_LETTER_COLUMNS = (
    "letter_id",
    "event_id",
    "trace_id",
    "received_at",
    "source",
    "error",
    "code",
    "raw",
)

# Letters of records sent out that their endpoint refused (``export:otlp ENDPOINT``): not
# events to append; the verdicts they carry are in the log, and sent again from there.
OUTBOUND = "export:"
OUTBOUND_RETRY = "a record an endpoint refused, not an event: agentdocket export verdicts --otlp"


def raw_json(value: Any) -> str:
    """``value`` as JSON text of ASCII characters only, so that any string survives in any
    text column (a NUL becomes the six characters ``\\u0000``, a lone surrogate ``\\udXXX``).
    A value nested too deep for the encoder is kept within the limits
    (:mod:`agentdocket.store.limits`), so that a dead letter can always be kept."""
    try:
        return json.dumps(value, ensure_ascii=True, sort_keys=True, default=repr)
    except (RecursionError, ValueError):  # too deep, or circular
        return json.dumps(bound(value), ensure_ascii=True, sort_keys=True, default=repr)


@dataclass(frozen=True)
class DeadLetter:
    """One refused record: its raw content, why it was refused, and where it came from."""

    letter_id: str
    event_id: str | None
    trace_id: str | None
    received_at: datetime
    source: str
    error: str
    code: str | None
    raw: str

    @classmethod
    def of_event(cls, event: Event, error: RecordRefused | str, source: str) -> DeadLetter:
        raw = raw_json(event_to_json(event))
        if isinstance(error, RecordRefused):
            text = error.reason + (f" (column {error.column})" if error.column else "")
            code = error.code
        else:
            text, code = error, None
        return cls.of_raw(raw, text, source, code, str(event.event_id), event.trace_id)

    @classmethod
    def of_raw(
        cls,
        raw: str,
        error: str,
        source: str,
        code: str | None = None,
        event_id: str | None = None,
        trace_id: str | None = None,
    ) -> DeadLetter:
        letter_id = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        return cls(
            letter_id,
            event_id,
            trace_id,
            datetime.now(UTC),
            source,
            error,
            code,
            raw,
        )

    def event(self) -> Event:
        """The refused event, decoded from its raw content (PayloadError if it is not one)."""
        try:
            obj = json.loads(self.raw)
        except ValueError as exc:
            raise PayloadError(f"dead letter {self.letter_id}", f"not JSON ({exc})") from None
        if not isinstance(obj, dict):
            raise PayloadError(f"dead letter {self.letter_id}", "not an event object")
        return event_from_json(obj, f"dead letter {self.letter_id}")


Outcome = Literal["stored", "refused", "resolved", "undecodable"]


@dataclass(frozen=True)
class Retried:
    """What retrying one dead letter did."""

    letter_id: str
    outcome: Outcome  # resolved: its event was already in the log
    error: str | None = None


class DeadLetters:
    """Keeping, listing and retrying dead letters."""

    def __init__(self, db: Recorder, append_strict: Callable[[list[Event]], int]) -> None:
        self.db = db
        # appends events or raises RecordRefused instead of keeping a dead letter (retry's way)
        self.append_strict = append_strict

    def keep(self, letters: Iterable[DeadLetter]) -> int:
        """Store dead letters (a spool record that does not decode, a fault of ours on one
        record); the same letter twice is kept once. Returns how many were given."""
        letters = list(letters)
        if letters:
            with self.db.write() as conn:
                self.keep_on(conn, letters)
        return len(letters)

    def keep_on(self, conn: Any, letters: Sequence[DeadLetter]) -> None:
        unique = {d.letter_id: d for d in letters}.values()
        rows = self.db.as_rows(DEAD_LETTER_COLUMNS, unique)
        conflict = "ON CONFLICT (letter_id) DO NOTHING"
        self.db.merge(conn, "dead_letters", DEAD_LETTER_COLUMNS, ("letter_id",), rows, conflict)

    def letters(
        self, *, resolved: bool | None = False, limit: int | None = None
    ) -> list[DeadLetterRow]:
        """Dead letters, oldest first, each with ``resolved``; by default the unresolved ones
        (``resolved=None``: all of them)."""
        where = "" if resolved is None else f"WHERE resolved = {'TRUE' if resolved else 'FALSE'}"
        sql = f"SELECT * FROM dead_letters_state {where} ORDER BY received_at, letter_id"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [self._letter_row(r) for r in self.db.dicts(sql)]

    def get(self, letter_id: str) -> DeadLetterRow:
        """One dead letter by its id or a unique prefix of it."""
        rows = [
            self._letter_row(r)
            for r in self.db.dicts(
                "SELECT * FROM dead_letters_state WHERE letter_id LIKE ? ORDER BY letter_id "
                "LIMIT 2",
                (letter_id.lower() + "%",),
            )
        ]
        if not rows:
            raise StoreError(f"no dead letter {letter_id!r}")
        if len(rows) > 1:
            raise StoreError(f"dead letter id {letter_id!r} is ambiguous; give more of it")
        return rows[0]

    def counts(self) -> dict[str, int]:
        """How many dead letters are kept, and how many of them are not resolved yet."""
        rows = self.db.read(
            "SELECT count(*), coalesce(sum(CASE WHEN resolved THEN 0 ELSE 1 END), 0) "
            "FROM dead_letters_state"
        )
        return {"total": int(rows[0][0]), "unresolved": int(rows[0][1])}

    def retry(self, letter_ids: Sequence[str] | None = None) -> list[Retried]:
        """Append the events of these dead letters (default: every unresolved one) again, each
        alone: one still refused does not hold the others (nor becomes a second letter)."""
        if letter_ids is None:
            rows = self.letters(resolved=False)
        else:
            rows = [self.get(i) for i in letter_ids]
        out = []
        for row in rows:
            letter = DeadLetter(**{c: row[c] for c in DEAD_LETTER_COLUMNS})  # type: ignore[literal-required]
            if row["resolved"]:
                out.append(Retried(letter.letter_id, "resolved"))
                continue
            if letter.source.startswith(OUTBOUND):
                out.append(Retried(letter.letter_id, "undecodable", OUTBOUND_RETRY))
                continue
            try:
                event = letter.event()
            except PayloadError as exc:
                out.append(Retried(letter.letter_id, "undecodable", str(exc)))
                continue
            try:
                self.append_strict([event])
            except RecordRefused as exc:
                out.append(Retried(letter.letter_id, "refused", exc.reason))
                continue
            out.append(Retried(letter.letter_id, "stored"))
        return out

    def _letter_row(self, row: dict[str, Any]) -> DeadLetterRow:
        row["resolved"] = bool(row["resolved"])  # SQLite gives 0 / 1
        return typed(DeadLetterRow, row)
