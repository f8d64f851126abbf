"""Annotation queues: annotators and their tokens, queues of runs, and handing items out.

A queue holds runs (its items, in the order they are handed out), the rubrics each is labelled
under, how many annotators each item gets (``per_item``) and who may label. An annotator asking
for work gets the first item they have neither labelled nor skipped in this queue whose quota
is not yet taken by the labels given and the claims held (a claim lasts :data:`CLAIM_TTL`).
Choosing and claiming happen in one transaction holding the queue's row, so two annotators
asking at once are not both handed the last place on an item: no annotator sees an item
twice, and no item gets more annotators than it asks for while claims are honoured.
"""

from __future__ import annotations

import hashlib
import secrets
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from agentdocket.events.model import now
from agentdocket.store.errors import StoreError
from agentdocket.store.labels import Labels
from agentdocket.store.recorder import Recorder

CLAIM_TTL = timedelta(minutes=30)


class QueueError(StoreError):
    """A queue or annotator that cannot be made as asked; the message says why."""


@dataclass(frozen=True)
class Queue:
    name: str
    rubrics: tuple[tuple[str, str], ...]  # (name, version)
    per_item: int
    selection: dict[str, Any]
    show_verdicts: bool
    members: tuple[str, ...]
    items: tuple[str, ...] = field(repr=False)
    created_at: datetime


@dataclass(frozen=True)
class Progress:
    """How far a queue is: items with their quota of labels, and each annotator's count."""

    queue: str
    items: int
    per_item: int
    complete: int  # items with per_item annotators done
    labels: int  # annotator-item pairs done (labelled, not skipped)
    skipped: int
    by_annotator: dict[str, dict[str, int]]  # name -> {labelled, skipped, remaining}


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def choose(
    items: Sequence[str],
    per_item: int,
    annotator: str,
    done: dict[str, set[str]],
    counted: dict[str, set[str]],
    claims: dict[str, set[str]],
) -> str | None:
    """The item to hand ``annotator``: one they already claim and have not done, else the
    first they have not done whose labels (``counted``: authors who labelled it) and claims
    by others leave room. ``done``: authors who labelled or skipped each item."""
    for item in items:
        if annotator in claims.get(item, ()) and annotator not in done.get(item, ()):
            return item
    for item in items:
        if annotator in done.get(item, ()):
            continue
        taken = counted.get(item, set()) | claims.get(item, set())
        if len(taken) < per_item:
            return item
    return None


class Queues:
    """Annotators, queues and the handing out of their items."""

    def __init__(self, db: Recorder, labels: Labels) -> None:
        self.db = db
        self.labels = labels

    # --- annotators ---------------------------------------------------------------------------

    def add_annotator(self, name: str, *, rotate: bool = False) -> str:
        """Make an annotator (or, with ``rotate``, give one a new token); returns the token,
        which is shown once: only its digest is kept."""
        if not name or len(name) > 100 or not name.isprintable():
            raise QueueError(f"annotator name {name!r}: 1 to 100 printable characters")
        token = secrets.token_urlsafe(24)
        with self.db.write() as conn:
            found = self.db.read_on(conn, "SELECT 1 FROM annotators WHERE name = ?", (name,))
            if found and not rotate:
                raise QueueError(f"annotator {name!r} exists (give --rotate for a new token)")
            if found:
                self.db.execute(
                    conn,
                    "UPDATE annotators SET token_hash = ? WHERE name = ?",
                    (token_digest(token), name),
                )
            else:
                self.db.execute(
                    conn,
                    "INSERT INTO annotators (name, token_hash, created_at) VALUES (?, ?, ?)",
                    (name, token_digest(token), self.db.to_db("created_at", now())),
                )
        return token

    def annotator(self, token: str) -> str | None:
        """The annotator this sign-in token belongs to."""
        rows = self.db.read(
            "SELECT name FROM annotators WHERE token_hash = ?", (token_digest(token),)
        )
        return str(rows[0][0]) if rows else None

    def annotators(self) -> list[str]:
        return [str(r[0]) for r in self.db.read("SELECT name FROM annotators ORDER BY name")]

    # --- queues -------------------------------------------------------------------------------

    def create(
        self,
        name: str,
        *,
        rubrics: Sequence[tuple[str, str]],
        per_item: int,
        items: Sequence[str],
        members: Sequence[str],
        selection: dict[str, Any],
        show_verdicts: bool = False,
    ) -> Queue:
        """Make a queue of ``items`` (runs, in the order they are handed out)."""
        if not rubrics:
            raise QueueError(f"queue {name!r}: give at least one rubric")
        if per_item < 1:
            raise QueueError(f"queue {name!r}: per_item must be 1 or more")
        if len(set(members)) < per_item:
            raise QueueError(
                f"queue {name!r}: {per_item} annotators per item need at least {per_item} "
                f"members, not {len(set(members))}"
            )
        if not items:
            raise QueueError(f"queue {name!r}: the selection holds no run")
        with self.db.write() as conn:
            if self.db.read_on(conn, "SELECT 1 FROM queues WHERE name = ?", (name,)):
                raise QueueError(f"queue {name!r} exists; queues are not changed, make another")
            known = {str(r[0]) for r in self.db.read_on(conn, "SELECT name FROM annotators")}
            unknown = sorted(set(members) - known)
            if unknown:
                raise QueueError(f"queue {name!r}: no annotator {unknown[0]!r} (annotator add)")
            self.db.execute(
                conn,
                "INSERT INTO queues (name, rubrics, per_item, selection, show_verdicts, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    name,
                    self.db.to_db("rubrics", [list(r) for r in rubrics]),
                    per_item,
                    self.db.to_db("selection", selection),
                    self.db.to_db("show_verdicts", show_verdicts),
                    self.db.to_db("created_at", now()),
                ),
            )
            for i, trace_id in enumerate(dict.fromkeys(items)):
                self.db.execute(
                    conn,
                    "INSERT INTO queue_items (queue, position, trace_id) VALUES (?, ?, ?)",
                    (name, i, trace_id),
                )
            for member in sorted(set(members)):
                self.db.execute(
                    conn,
                    "INSERT INTO queue_members (queue, annotator) VALUES (?, ?)",
                    (name, member),
                )
        found = self.get(name)
        assert found is not None
        return found

    def get(self, name: str) -> Queue | None:
        rows = self.db.read(
            "SELECT rubrics, per_item, selection, show_verdicts, created_at FROM queues "
            "WHERE name = ?",
            (name,),
        )
        if not rows:
            return None
        rubrics, per_item, selection, show, created = rows[0]
        members = self.db.read(
            "SELECT annotator FROM queue_members WHERE queue = ? ORDER BY annotator", (name,)
        )
        items = self.db.read(
            "SELECT trace_id FROM queue_items WHERE queue = ? ORDER BY position", (name,)
        )
        return Queue(
            name=name,
            rubrics=tuple((str(r[0]), str(r[1])) for r in self.db.from_db("rubrics", rubrics)),
            per_item=int(per_item),
            selection=self.db.from_db("selection", selection),
            show_verdicts=bool(self.db.from_db("show_verdicts", show)),
            members=tuple(str(m[0]) for m in members),
            items=tuple(str(i[0]) for i in items),
            created_at=self.db.from_db("created_at", created),
        )

    def names(self, annotator: str | None = None) -> list[str]:
        """Every queue's name (the ones ``annotator`` is a member of, where given)."""
        if annotator is None:
            return [str(r[0]) for r in self.db.read("SELECT name FROM queues ORDER BY name")]
        rows = self.db.read(
            "SELECT queue FROM queue_members WHERE annotator = ? ORDER BY queue", (annotator,)
        )
        return [str(r[0]) for r in rows]

    def _state(
        self, queue: str
    ) -> tuple[dict[str, set[str]], dict[str, set[str]], dict[str, set[str]]]:
        """Per item: who labelled or skipped it, who labelled it, in this queue."""
        done: dict[str, set[str]] = defaultdict(set)
        labelled: dict[str, set[str]] = defaultdict(set)
        skipped: dict[str, set[str]] = defaultdict(set)
        for label in self.labels.given(queue=queue):
            done[label.trace_id].add(label.author)
            (skipped if label.skipped is not None else labelled)[label.trace_id].add(label.author)
        for item, authors in skipped.items():
            authors -= labelled.get(item, set())  # labelled after all (went back)
        return done, labelled, skipped

    def next_item(self, queue: Queue, annotator: str) -> str | None:
        """Hand ``annotator`` their next item of ``queue`` (claimed for them), or None when
        nothing is left for them."""
        if annotator not in queue.members:
            raise QueueError(f"{annotator!r} is not an annotator of queue {queue.name!r}")
        done, labelled, _ = self._state(queue.name)
        with self.db.write() as conn:
            # the queue's row held to the end: choosing and claiming are one step per queue
            self.db.execute(
                conn, "UPDATE queues SET per_item = per_item WHERE name = ?", (queue.name,)
            )
            cutoff = now() - CLAIM_TTL
            claims: dict[str, set[str]] = defaultdict(set)
            for trace_id, who in self.db.read_on(
                conn,
                "SELECT trace_id, annotator FROM queue_claims WHERE queue = ? AND claimed_at > ?",
                (queue.name, self.db.to_db("claimed_at", cutoff)),
            ):
                if who not in done.get(trace_id, ()):
                    claims[trace_id].add(who)
            # labels given since the read above are in the claims they were made under
            item = choose(queue.items, queue.per_item, annotator, done, labelled, claims)
            if item is not None:
                self.db.execute(
                    conn,
                    "DELETE FROM queue_claims WHERE queue = ? AND trace_id = ? AND annotator = ?",
                    (queue.name, item, annotator),
                )
                self.db.execute(
                    conn,
                    "INSERT INTO queue_claims (queue, trace_id, annotator, claimed_at) "
                    "VALUES (?, ?, ?, ?)",
                    (queue.name, item, annotator, self.db.to_db("claimed_at", now())),
                )
        return item

    def progress(self, queue: Queue) -> Progress:
        _, labelled, skipped = self._state(queue.name)
        items = set(queue.items)
        by: dict[str, dict[str, int]] = {}
        for member in queue.members:
            n_labelled = sum(1 for i in items if member in labelled.get(i, ()))
            n_skipped = sum(1 for i in items if member in skipped.get(i, ()))
            open_ = sum(
                1
                for i in items
                if member not in labelled.get(i, ())
                and member not in skipped.get(i, ())
                and len(labelled.get(i, ())) < queue.per_item
            )
            by[member] = {"labelled": n_labelled, "skipped": n_skipped, "remaining": open_}
        return Progress(
            queue=queue.name,
            items=len(items),
            per_item=queue.per_item,
            complete=sum(1 for i in items if len(labelled.get(i, ())) >= queue.per_item),
            labels=sum(len(labelled.get(i, ())) for i in items),
            skipped=sum(len(skipped.get(i, ())) for i in items),
            by_annotator=by,
        )
