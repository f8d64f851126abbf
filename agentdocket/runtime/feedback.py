"""``POST /v1/feedback``: people's labels from an application (a thumbs-down, a comment).

The body is JSON: one label, or ``{"labels": [...]}`` with up to :data:`MAX_LABELS`. A label::

    {"trace_id": "4bf92f35...", "rubric": "thumbs", "value": "down", "author": "user:42",
     "comment": "wrong table", "id": "fb-981", "span_id": null, "ts": "2026-11-26T10:00:00Z"}

``trace_id``, ``value`` and ``author`` are required; ``rubric`` defaults to the built-in
``thumbs``; ``id`` makes a retried request add nothing (without it each request is new);
``ts`` defaults to when it arrived. The value is checked against the rubric (a registered
one, at its latest version unless ``rubric_version`` is given). Any bad label turns the whole
request away with 400 (not JSON) or 422 naming the member (``labels[3].value: ...``): nothing
of it is stored. A label on a trace no run has yet is stored all the same (the run may still
be on its way) and listed in the answer's ``unknown_runs``.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Protocol

import orjson

from agentdocket.errors import AgentdocketError
from agentdocket.events import Event, Label, PayloadError, parse_ts
from agentdocket.events.labels import label_event, new_label_id
from agentdocket.events.rubrics import BUILT_IN, Rubric, RubricError
from agentdocket.store import Store, StoreError

MAX_LABELS = 1000
MAX_AUTHOR = 200
MAX_COMMENT = 10_000
FIELDS = frozenset(
    {"trace_id", "span_id", "rubric", "rubric_version", "value", "author", "comment", "id", "ts"}
)


class Invalid(AgentdocketError, ValueError):
    """A request turned away: its status and a message naming the member."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Lookup(Protocol):
    def rubric(self, name: str, version: str | None) -> Rubric | None:
        """The rubric a label answers; raises :class:`StoreError` when it cannot tell."""

    def known_runs(self, trace_ids: Sequence[str]) -> set[str] | None:
        """Which of these traces are runs (None when that cannot be told now)."""


class StoreLookup:
    """Rubrics and runs read from the store, on a connection of its own, opened when first
    needed and opened again after a failure."""

    def __init__(self, open: Callable[[], Store]) -> None:
        self.open = open
        self._store: Store | None = None
        self._lock = threading.Lock()

    def _get(self) -> Store:
        if self._store is None:
            self._store = self.open()
        return self._store

    def _forget(self) -> None:
        if self._store is not None:
            with contextlib.suppress(StoreError):
                self._store.close()
        self._store = None

    def rubric(self, name: str, version: str | None) -> Rubric | None:
        if name in BUILT_IN and version in (None, BUILT_IN[name].version):
            return BUILT_IN[name]
        with self._lock:
            try:
                return self._get().labels.rubric(name, version)
            except StoreError:
                self._forget()
                raise

    def known_runs(self, trace_ids: Sequence[str]) -> set[str] | None:
        with self._lock:
            try:
                return self._get().reader.known_runs(trace_ids)
            except StoreError:
                self._forget()
                return None

    def close(self) -> None:
        with self._lock:
            self._forget()


def _text(obj: dict[str, Any], key: str, where: str, limit: int, required: bool) -> str | None:
    value = obj.get(key)
    if value is None:
        if required:
            raise Invalid(422, f"{where}.{key}: missing")
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise Invalid(422, f"{where}.{key}: must be a non-empty string")
    if len(value) > limit:
        raise Invalid(422, f"{where}.{key}: over {limit} characters")
    return value


def _label(obj: object, where: str, lookup: Lookup, received: datetime) -> Event:
    if not isinstance(obj, dict):
        raise Invalid(422, f"{where}: a label is a JSON object")
    unknown = sorted(set(obj) - FIELDS)
    if unknown:
        raise Invalid(422, f"{where}.{unknown[0]}: not a field of a label")
    trace_id = _text(obj, "trace_id", where, 32, True)
    author = _text(obj, "author", where, MAX_AUTHOR, True)
    comment = _text(obj, "comment", where, MAX_COMMENT, False)
    name = _text(obj, "rubric", where, 200, False) or "thumbs"
    version = _text(obj, "rubric_version", where, 200, False)
    label_id = _text(obj, "id", where, 200, False) or new_label_id()
    try:
        rubric = lookup.rubric(name, version)
    except StoreError:
        raise Invalid(503, f"{where}.rubric: cannot read rubric {name!r} now") from None
    if rubric is None:
        raise Invalid(422, f"{where}.rubric: no rubric {name!r} (agentdocket rubric add)")
    if "value" not in obj:
        raise Invalid(422, f"{where}.value: missing")
    try:
        value = rubric.check(obj["value"], f"{where}.value")
        ts = parse_ts(obj["ts"], "ts") if obj.get("ts") is not None else received
        assert trace_id is not None and author is not None
        return label_event(
            Label(
                label_id=label_id,
                subject_trace_id=trace_id.lower(),
                subject_span_id=_text(obj, "span_id", where, 16, False),
                rubric=rubric.name,
                rubric_version=rubric.version,
                author=author,
                source="api",
                value=value,
                comment=comment,
            ),
            ts,
        )
    except RubricError as exc:
        raise Invalid(422, str(exc)) from None
    except PayloadError as exc:
        raise Invalid(422, f"{where}.{exc}") from None
    except ValueError as exc:
        raise Invalid(422, f"{where}: {exc}") from None


def labels_from(body: bytes, lookup: Lookup, received: datetime) -> list[Event]:
    """The label events of a request body, or :class:`Invalid` naming the first bad member."""
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise Invalid(400, f"body: not JSON ({exc})") from None
    if isinstance(doc, dict) and "labels" in doc:
        if set(doc) != {"labels"} or not isinstance(doc["labels"], list):
            raise Invalid(422, "labels: must be a list (and the body's only member)")
        items, prefix = doc["labels"], "labels"
    else:
        items, prefix = [doc], ""
    if not items:
        raise Invalid(422, "labels: empty")
    if len(items) > MAX_LABELS:
        raise Invalid(413, f"labels: {len(items)} labels, over the limit of {MAX_LABELS}")
    return [
        _label(item, f"{prefix}[{i}]" if prefix else "label", lookup, received)
        for i, item in enumerate(items)
    ]
