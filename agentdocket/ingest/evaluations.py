"""Evaluations made elsewhere, as verdicts: the GenAI conventions' ``gen_ai.evaluation.result``
event, on the span it evaluates or as a log record naming that span.

Each becomes a run-level ``verdict`` event of the run the span belongs to, so that evaluations
made by another tool sit beside agentdocket's in reports and dashboards:

- scorer: ``external.{gen_ai.evaluation.name}``, version ``external`` (what made it is
  another tool's business; its name says it is not one of ours);
- score: ``gen_ai.evaluation.score.value``; label: ``gen_ai.evaluation.score.label``, which
  also decides ``passed`` when it says so (``pass``, ``yes``, ``true``, ``correct`` ... or
  ``fail``, ``no``, ``false``, ``incorrect`` ...);
- rationale: ``gen_ai.evaluation.explanation``; details: the span it evaluated, the response
  id, an ``error.type`` (an evaluation that failed), and the event's other attributes.

An event with no ``gen_ai.evaluation.name``, or with neither a score nor a label nor an
``error.type`` (an evaluation that failed: ``judge:error``, missing), is refused with the place
named (:func:`check`).

An event another agentdocket sent (:mod:`agentdocket.outbound.evaluations`) carries its
provenance, and keeps it: the scorer's version (``agentdocket.scorer.version``, instead of
``external``), its label, failure type and judge trace, a step verdict's span as the subject,
and one event per verdict sent (the event's id derives from ``agentdocket.verdict.id``), so
two versions of one scorer, or two verdicts made at one instant, stay apart.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from typing import Any

from agentdocket.events import Event, PayloadError, check_trace_id, validate_payload
from agentdocket.ingest.decode import attribute_json, ts_of

EVALUATION_EVENT = "gen_ai.evaluation.result"
NAME = "gen_ai.evaluation.name"
SCORE = "gen_ai.evaluation.score.value"
LABEL = "gen_ai.evaluation.score.label"
EXPLANATION = "gen_ai.evaluation.explanation"
RESPONSE_ID = "gen_ai.response.id"
ERROR_TYPE = "error.type"
VERSION = "external"
# what another agentdocket sends beside the convention's attributes (agentdocket.outbound)
SENT_VERSION = "agentdocket.scorer.version"
SENT_ID = "agentdocket.verdict.id"
SENT_LABEL = "agentdocket.verdict.label"
SENT_FAILURE = "agentdocket.verdict.failure_type"
SENT_JUDGE_TRACE = "agentdocket.verdict.judge_trace_id"
SENT_STEP = "agentdocket.verdict.step"
PASSING = frozenset({"pass", "passed", "yes", "true", "correct", "good", "success"})
FAILING = frozenset({"fail", "failed", "no", "false", "incorrect", "bad", "failure"})


def check(attributes: Mapping[str, Any]) -> str | None:
    """What is wrong with an evaluation event's attributes, if anything."""
    name = attributes.get(NAME)
    if not isinstance(name, str) or not name.strip():
        return f"{EVALUATION_EVENT} needs {NAME} (a non-empty string)"
    score, label = attributes.get(SCORE), attributes.get(LABEL)
    if score is None and label is None and not attributes.get(ERROR_TYPE):
        return f"{EVALUATION_EVENT} needs {SCORE} or {LABEL} (or {ERROR_TYPE}: it failed)"
    if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)):
        return f"{SCORE}: expected a number"
    if label is not None and not isinstance(label, str):
        return f"{LABEL}: expected a string"
    return None


def verdict(trace_id: str, span_id: str, attributes: Mapping[str, Any], time_ns: int) -> Event:
    """The verdict event of a checked evaluation of span ``span_id`` at ``time_ns``."""
    name = str(attributes[NAME]).strip()
    score, label = attributes.get(SCORE), attributes.get(LABEL)
    said = label.strip().lower() if isinstance(label, str) else None
    passed = True if said in PASSING else False if said in FAILING else None
    details = {
        k: attribute_json(v)
        for k, v in attributes.items()
        if k not in (NAME, SCORE, LABEL, EXPLANATION)
    }
    details["span_id"] = span_id
    canonical = repr(sorted((k, repr(v)) for k, v in attributes.items()))
    payload = {
        "scorer": f"external.{name}",
        "scorer_version": _text(attributes.get(SENT_VERSION)) or VERSION,
        "input_hash": hashlib.sha256(canonical.encode()).hexdigest(),
        "subject_trace_id": trace_id,
        "subject_span_id": span_id if attributes.get(SENT_STEP) is True else None,
        "passed": passed,
        "score": float(score) if score is not None and math.isfinite(score) else None,
        "label": _label(attributes, label, passed),
        "failure_type": _failure(attributes.get(SENT_FAILURE)) or _error(attributes, score, label),
        "rationale": attributes.get(EXPLANATION),
        "details": details,
        "judge_trace_id": _trace_id(attributes.get(SENT_JUDGE_TRACE)),
    }
    sent = _text(attributes.get(SENT_ID))
    own = f"external/{sent}" if sent else f"external/{name}/{span_id}"
    verdict_span = hashlib.sha256(own.encode()).hexdigest()[:16]
    return Event.assemble(
        trace_id=trace_id,
        span_id=verdict_span,
        parent_span_id=None,
        seq=0,
        ts=ts_of(time_ns),
        kind="verdict",
        payload=validate_payload("verdict", {k: v for k, v in payload.items() if v is not None}),
        index=time_ns,
    )


def _text(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def _label(attributes: Mapping[str, Any], label: Any, passed: bool | None) -> Any:
    """The verdict's label: another agentdocket's own (its ``score.label`` then says pass or
    fail, which is ``passed``), else the event's."""
    if attributes.get(SENT_ID) is None:
        return label
    own = _text(attributes.get(SENT_LABEL))
    return own if own is not None or passed is not None else label


def _error(attributes: Mapping[str, Any], score: Any, label: Any) -> str | None:
    """``judge:error`` for an evaluation that ended in an error (``error.type``, no result):
    missing, as a judge that failed is."""
    if score is None and label is None and attributes.get(ERROR_TYPE):
        return "judge:error"
    return None


def _failure(value: Any) -> str | None:
    """A sent failure type, when it has the verdicts' form ``area:problem``."""
    text = _text(value)
    return text if text is not None and ":" in text else None


def _trace_id(value: Any) -> str | None:
    """A sent judge trace id, when it is one (the events' own check); else none."""
    text = _text(value)
    if text is None:
        return None
    try:
        return check_trace_id(text.lower(), SENT_JUDGE_TRACE)
    except PayloadError:
        return None
