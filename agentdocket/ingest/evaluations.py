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

An event with no ``gen_ai.evaluation.name``, or with neither a score nor a label, is refused
with the place named (:func:`check`), as the specification requires one of them.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from typing import Any

from agentdocket.events import Event, validate_payload
from agentdocket.ingest.decode import attribute_json, ts_of

EVALUATION_EVENT = "gen_ai.evaluation.result"
NAME = "gen_ai.evaluation.name"
SCORE = "gen_ai.evaluation.score.value"
LABEL = "gen_ai.evaluation.score.label"
EXPLANATION = "gen_ai.evaluation.explanation"
RESPONSE_ID = "gen_ai.response.id"
ERROR_TYPE = "error.type"
VERSION = "external"
PASSING = frozenset({"pass", "passed", "yes", "true", "correct", "good", "success"})
FAILING = frozenset({"fail", "failed", "no", "false", "incorrect", "bad", "failure"})


def check(attributes: Mapping[str, Any]) -> str | None:
    """What is wrong with an evaluation event's attributes, if anything."""
    name = attributes.get(NAME)
    if not isinstance(name, str) or not name.strip():
        return f"{EVALUATION_EVENT} needs {NAME} (a non-empty string)"
    score, label = attributes.get(SCORE), attributes.get(LABEL)
    if score is None and label is None:
        return f"{EVALUATION_EVENT} needs {SCORE} or {LABEL}"
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
        "scorer_version": VERSION,
        "input_hash": hashlib.sha256(canonical.encode()).hexdigest(),
        "subject_trace_id": trace_id,
        "passed": passed,
        "score": float(score) if score is not None and math.isfinite(score) else None,
        "label": label,
        "rationale": attributes.get(EXPLANATION),
        "details": details,
    }
    verdict_span = hashlib.sha256(f"external/{name}/{span_id}".encode()).hexdigest()[:16]
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
