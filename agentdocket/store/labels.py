"""People's labels, read from the log (events of kind ``label``) and rubrics, registered.

Labels have no projection table: they are few beside the log, and the partial index
``events_labels`` (migration 0016) finds them without reading anything else, so a rebuild of
the projections or a new scorer version leaves them as they are. A later label by the same
author on the same subject and rubric supersedes an earlier one (:func:`latest`); both stay in
the log.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agentdocket.events.model import now
from agentdocket.events.rubrics import BUILT_IN, Rubric
from agentdocket.store.errors import StoreError
from agentdocket.store.escaping import escape_text
from agentdocket.store.recorder import Recorder


class RubricConflict(StoreError):
    """A rubric version registered again with a different definition."""


@dataclass(frozen=True)
class StoredLabel:
    """A label as stored: the payload's fields, when it was given and its event's id."""

    label_id: str
    trace_id: str
    span_id: str | None
    rubric: str
    rubric_version: str | None
    author: str
    source: str
    value: Any
    comment: str | None
    queue: str | None
    skipped: str | None
    ts: datetime
    event_id: str

    @property
    def subject(self) -> tuple[str, str | None, str, str]:
        """What a later label supersedes it on: (run, step, rubric, author)."""
        return (self.trace_id, self.span_id, self.rubric, self.author)


def latest(labels: Iterable[StoredLabel]) -> list[StoredLabel]:
    """Each author's latest label per subject and rubric (skips left out: passing on an item
    takes no label back), by time, then event id."""
    found: dict[tuple[str, str | None, str, str], StoredLabel] = {}
    for label in labels:
        if label.skipped is not None:
            continue
        held = found.get(label.subject)
        if held is None or (label.ts, label.event_id) > (held.ts, held.event_id):
            found[label.subject] = label
    return sorted(found.values(), key=lambda x: (x.trace_id, x.ts, x.event_id))


class Labels:
    """Reading labels (they are written by ``Store.append``, as events) and keeping rubrics."""

    def __init__(self, db: Recorder) -> None:
        self.db = db

    def _read(self, where: str, params: Sequence[Any]) -> list[StoredLabel]:
        rows = self.db.read(
            f"SELECT ts, event_id, payload FROM events WHERE kind = 'label'{where}", params
        )
        out = []
        for ts, event_id, payload in rows:
            p = self.db.from_db("payload", payload)
            out.append(
                StoredLabel(
                    label_id=p["label_id"],
                    trace_id=p["subject_trace_id"],
                    span_id=p.get("subject_span_id"),
                    rubric=p["rubric"],
                    rubric_version=p.get("rubric_version"),
                    author=p["author"],
                    source=p["source"],
                    value=p.get("value"),
                    comment=p.get("comment"),
                    queue=p.get("queue"),
                    skipped=p.get("skipped"),
                    ts=self.db.from_db("ts", ts),
                    event_id=str(self.db.from_db("event_id", event_id)),
                )
            )
        out.sort(key=lambda x: (x.ts, x.event_id))
        return out

    def of_runs(self, trace_ids: Sequence[str]) -> list[StoredLabel]:
        """Every label given on these runs (superseded ones and skips too), oldest first."""
        if not trace_ids:
            return []
        where, params = self.db.any_of("trace_id", list(trace_ids))
        return self._read(f" AND {where}", params)

    def given(
        self, *, rubric: str | None = None, queue: str | None = None, author: str | None = None
    ) -> list[StoredLabel]:
        """Every label (of this rubric, in this queue, by this author, where given)."""
        where, params = "", []
        for key, value in (("rubric", rubric), ("queue", queue), ("author", author)):
            if value is not None:
                where += f" AND {self.db.json_text('payload', key)} = ?"
                params.append(escape_text(value))
        return self._read(where, params)

    # --- rubrics ------------------------------------------------------------------------------

    def register_rubric(self, rubric: Rubric) -> bool:
        """Store a rubric version. True if new; False if the identical version was there.
        Raises :class:`RubricConflict` if that version exists with another definition."""
        digest = rubric.content_hash()
        with self.db.write() as conn:
            found = self.db.read_on(
                conn,
                "SELECT content_hash FROM rubrics WHERE name = ? AND version = ?",
                (escape_text(rubric.name), escape_text(rubric.version)),
            )
            if found:
                if found[0][0] == digest:
                    return False
                raise RubricConflict(
                    f"rubric {rubric.name!r} version {rubric.version!r} already exists with "
                    "another definition; rubrics are immutable, register a new version"
                )
            if rubric.name in BUILT_IN:
                raise RubricConflict(f"rubric {rubric.name!r} is built in; choose another name")
            self.db.execute(
                conn,
                "INSERT INTO rubrics (name, version, definition, content_hash, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (
                    escape_text(rubric.name),
                    escape_text(rubric.version),
                    self.db.to_db("definition", rubric.to_json()),
                    digest,
                    self.db.to_db("created_at", now()),
                ),
            )
        return True

    def rubric(self, name: str, version: str | None = None) -> Rubric | None:
        """A registered (or built-in) rubric: this version, else the latest registered."""
        if name in BUILT_IN and version in (None, BUILT_IN[name].version):
            return BUILT_IN[name]
        sql = "SELECT definition FROM rubrics WHERE name = ?"
        params = [escape_text(name)]
        if version is not None:
            sql += " AND version = ?"
            params.append(escape_text(version))
        rows = self.db.read(sql + " ORDER BY created_at DESC, version DESC LIMIT 1", params)
        if not rows:
            return None
        return Rubric.from_json(self.db.from_db("definition", rows[0][0]), f"rubric {name}")

    def rubrics(self) -> list[Rubric]:
        """Every registered rubric version, and the built-in ones."""
        rows = self.db.read("SELECT definition FROM rubrics ORDER BY name, created_at, version")
        stored = [Rubric.from_json(self.db.from_db("definition", r[0])) for r in rows]
        return [*BUILT_IN.values(), *stored]
