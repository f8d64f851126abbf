"""A person's label as an event of the log: every way in (POST /v1/feedback, ``agentdocket
feedback add``, the tracer, the annotation page) builds it here.

The event lives in the trace of the run it labels, like a verdict; its span id is a digest of
the label's own id, so the same label sent twice is one event (the store ignores re-sent ids).
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime

from agentdocket.events.model import Event, check_span_id, check_trace_id, now, utc
from agentdocket.events.payloads import Label

LABEL_SEQ = 2**31 - 2  # after every step of the run, before its verdicts (2**31 - 1)
MAX_ID = 200


def new_label_id() -> str:
    return uuid.uuid4().hex


def label_span(label_id: str) -> str:
    span = hashlib.sha256(f"label/{label_id}".encode()).hexdigest()[:16]
    return span if span != "0" * 16 else "1" * 16


def label_event(label: Label, ts: datetime | None = None) -> Event:
    """The event carrying ``label``, in the trace of the run it is about; ``ts`` is when it
    was given (now when None)."""
    check_trace_id(label.subject_trace_id, "trace_id")
    if label.subject_span_id is not None:
        check_span_id(label.subject_span_id, "span_id")
    if not label.label_id or len(label.label_id) > MAX_ID:
        raise ValueError(f"id: a label id is 1 to {MAX_ID} characters")
    return Event.create(
        trace_id=label.subject_trace_id,
        span_id=label_span(label.label_id),
        seq=LABEL_SEQ,
        ts=utc(ts) if ts is not None else now(),
        payload=label,
    )
