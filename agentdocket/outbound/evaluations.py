"""agentdocket's verdicts as the GenAI conventions' ``gen_ai.evaluation.result`` event, for a
tracing backend that watches the same agents: a log record on the judged run's trace and span.

What a verdict becomes (the attributes of :func:`evaluation`):

- ``gen_ai.evaluation.name``: the scorer's name (the metric);
- ``gen_ai.evaluation.score.value``: its score, when it has one (a double);
- ``gen_ai.evaluation.score.label``: ``pass`` or ``fail`` when it passed or failed (the
  convention's own examples), else its label (``Match``, ``4``, ...), when it has one;
- ``gen_ai.evaluation.explanation``: its rationale;
- the provenance the conventions have not settled yet (semantic-conventions-genai PR #359
  proposes ``gen_ai.evaluation.evaluator.*``), under agentdocket's own names until they do:
  ``agentdocket.scorer.version``, ``agentdocket.verdict.id``, and, when set,
  ``agentdocket.verdict.label`` (the label, when ``score.label`` holds pass or fail),
  ``agentdocket.verdict.failure_type``, ``agentdocket.verdict.judge_trace_id`` and
  ``agentdocket.verdict.step`` (true: a verdict on one step, the record's span);
- the run's ``gen_ai.agent.name`` and ``gen_ai.agent.version`` when known.

A failing verdict is a result, not an error: its failure type travels as
``agentdocket.verdict.failure_type``. A verdict that could not be made (no pass, score or
label, but a failure type: the run gave no answer, the judge's reply did not parse) is an
evaluation that ended in an error, as the conventions put it: ``error.type`` is its failure
type, with no score, at severity WARN. A verdict of measurements alone (``interaction.metrics``:
details, no pass, score or label) has no evaluation result to send and is left out.
The record's time is the verdict's, so a record sent twice is the same record. Verdicts that
came from outside (``external.*``) are not sent back. Standard library only: the sending is
:mod:`agentdocket.outbound.otlp`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

EVENT_NAME = "gen_ai.evaluation.result"
NAME = "gen_ai.evaluation.name"
SCORE = "gen_ai.evaluation.score.value"
LABEL = "gen_ai.evaluation.score.label"
EXPLANATION = "gen_ai.evaluation.explanation"
SCORER_VERSION = "agentdocket.scorer.version"
VERDICT_ID = "agentdocket.verdict.id"
VERDICT_LABEL = "agentdocket.verdict.label"
FAILURE_TYPE = "agentdocket.verdict.failure_type"
JUDGE_TRACE = "agentdocket.verdict.judge_trace_id"
STEP = "agentdocket.verdict.step"
EXTERNAL = "external."


@dataclass(frozen=True)
class Evaluation:
    """One verdict as a log record: where it goes, when, and what it says."""

    trace_id: str
    span_id: str
    time_ns: int
    attributes: dict[str, Any]


ERROR_TYPE = "error.type"


def received(row: dict[str, Any]) -> bool:
    """Whether a verdict row came from outside (not sent back)."""
    return str(row["scorer"]).startswith(EXTERNAL)


def says_something(row: dict[str, Any]) -> bool:
    """Whether a verdict has a result to send: a pass, score or label, or the failure that
    kept it from having one."""
    return any(row[k] is not None for k in ("passed", "score", "label", "failure_type"))


def failed(e: Evaluation) -> bool:
    """Whether an evaluation record says the evaluation ended in an error."""
    return ERROR_TYPE in e.attributes


def evaluation(row: dict[str, Any], root_span: str) -> Evaluation:
    """The record of verdict ``row`` (a row of ``export verdicts``); ``root_span``: its run's
    root span, the span a run-level verdict is about."""
    attributes: dict[str, Any] = {NAME: row["scorer"]}
    if row["score"] is not None:
        attributes[SCORE] = float(row["score"])
    passed, label = row["passed"], row["label"]
    if passed is not None:
        attributes[LABEL] = "pass" if passed else "fail"
        if label is not None:
            attributes[VERDICT_LABEL] = str(label)
    elif label is not None:
        attributes[LABEL] = str(label)
    if row["rationale"]:
        attributes[EXPLANATION] = str(row["rationale"])
    attributes[SCORER_VERSION] = str(row["scorer_version"])
    attributes[VERDICT_ID] = str(row["verdict_id"])
    if row["failure_type"]:
        attributes[FAILURE_TYPE] = str(row["failure_type"])
        if passed is None and row["score"] is None and label is None:
            attributes[ERROR_TYPE] = str(row["failure_type"])
    if row["judge_trace_id"]:
        attributes[JUDGE_TRACE] = str(row["judge_trace_id"])
    if row.get("agent"):
        attributes["gen_ai.agent.name"] = str(row["agent"])
    if row.get("agent_version"):
        attributes["gen_ai.agent.version"] = str(row["agent_version"])
    step = row.get("subject_span_id")
    if step:
        attributes[STEP] = True
    return Evaluation(row["trace_id"], step or root_span, _ns(row["ts"]), attributes)


def _ns(ts: datetime) -> int:
    """Nanoseconds since the epoch, exactly (a float would round microseconds)."""
    delta = ts - datetime(1970, 1, 1, tzinfo=ts.tzinfo)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


@dataclass
class LeftOut:
    """Verdicts not sent, by why: received from outside, measurements alone, or on a run with
    no root span known (no ``run.started`` event)."""

    external: int = 0
    measured: int = 0
    orphans: int = 0


def records(
    rows: Sequence[dict[str, Any]],
    root_spans: Callable[[list[str]], dict[str, str]],
    left: LeftOut,
) -> list[tuple[int, Evaluation]]:
    """The records of the ``rows`` that have one to send, each with its row's index, in the
    rows' order; those left out counted in ``left``. ``root_spans``: each run's root span by
    trace id, asked once for the run-level verdicts."""
    ours = [(i, r) for i, r in enumerate(rows) if not received(r)]
    left.external += len(rows) - len(ours)
    chosen = [(i, r) for i, r in ours if says_something(r)]
    left.measured += len(ours) - len(chosen)
    roots = root_spans([r["trace_id"] for _, r in chosen if not r["subject_span_id"]])
    out = []
    for i, r in chosen:
        root = roots.get(r["trace_id"])
        if r["subject_span_id"] or root is not None:
            out.append((i, evaluation(r, root or "")))
        else:
            left.orphans += 1
    return out
