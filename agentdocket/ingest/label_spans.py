"""The tracer's labels (``run.feedback(...)``): a span of kind ``label`` becomes the label
event every other way in makes (:func:`agentdocket.events.labels.label_event`)."""

from __future__ import annotations

from agentdocket.events import Event, Label
from agentdocket.events.labels import label_event
from agentdocket.events.rubrics import BUILT_IN
from agentdocket.ingest import attributes as A
from agentdocket.ingest.span_reader import SpanReader


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def label_events(m: SpanReader) -> list[Event]:
    """The label a ``label`` span carries; a span without an author or a value of a kind a
    label holds raises (the mapping keeps it as a step, the problem noted)."""
    attrs = m.attrs
    author = attrs.get(A.LABEL_AUTHOR)
    if not isinstance(author, str) or not author:
        raise ValueError(f"{A.LABEL_AUTHOR}: missing")
    value = attrs.get(A.LABEL_VALUE)
    if not isinstance(value, bool | int | float | str):
        raise ValueError(f"{A.LABEL_VALUE}: {value!r} is not a label's value")
    rubric = str(attrs.get(A.LABEL_RUBRIC) or "thumbs")
    built_in = BUILT_IN.get(rubric)
    label = Label(
        label_id=str(attrs.get(A.LABEL_ID) or f"{m.trace_id}/{m.span_id}"),
        subject_trace_id=m.trace_id,
        subject_span_id=_text(attrs.get(A.LABEL_SUBJECT_SPAN)),
        rubric=rubric,
        rubric_version=built_in.version if built_in is not None else None,
        author=author,
        source="tracer",
        value=built_in.check(value, A.LABEL_VALUE) if built_in is not None else value,
        comment=_text(attrs.get(A.LABEL_COMMENT)),
    )
    return [label_event(label, m.start)]
