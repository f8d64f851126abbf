"""A verdict as the GenAI conventions' ``gen_ai.evaluation.result`` record, and back: what each
kind of verdict becomes, and what the receiving side makes of it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from agentdocket.ingest.evaluations import check, verdict
from agentdocket.outbound.evaluations import evaluation, failed, received, says_something

TRACE, ROOT, STEP = "a" * 32, "b" * 16, "c" * 16
TS = datetime(2026, 11, 29, 3, 30, 48, 542075, tzinfo=UTC)


def _row(**given: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "verdict_id": "v-1",
        "trace_id": TRACE,
        "subject_span_id": None,
        "agent": "concerts",
        "agent_version": "1",
        "scorer": "answer.reference",
        "scorer_version": "1",
        "passed": None,
        "score": None,
        "label": None,
        "failure_type": None,
        "rationale": None,
        "judge_trace_id": None,
        "ts": TS,
    }
    return {**row, **given}


def _back(row: dict[str, Any]) -> dict[str, Any]:
    e = evaluation(row, ROOT)
    assert check(e.attributes) is None
    return dict(verdict(e.trace_id, e.span_id, e.attributes, e.time_ns).payload)


def test_a_passing_verdict_with_a_label_says_pass_and_keeps_its_label() -> None:
    row = _row(passed=True, score=1.0, label="Match", rationale="same facts")
    e = evaluation(row, ROOT)
    assert (e.trace_id, e.span_id) == (TRACE, ROOT)
    # the verdict's time, exactly
    assert e.time_ns == int(TS.replace(microsecond=0).timestamp()) * 10**9 + 542_075_000
    assert e.attributes["gen_ai.evaluation.score.label"] == "pass"
    assert e.attributes["agentdocket.verdict.label"] == "Match"
    assert e.attributes["gen_ai.evaluation.explanation"] == "same facts"
    assert e.attributes["gen_ai.agent.name"] == "concerts" and "error.type" not in e.attributes
    back = _back(row)
    assert (back["scorer"], back["scorer_version"]) == ("external.answer.reference", "1")
    assert (back["passed"], back["score"], back["label"]) == (True, 1.0, "Match")


def test_a_label_alone_is_the_label_and_a_failure_type_travels_beside_it() -> None:
    row = _row(label="4", score=4.0, failure_type="answer:partial")
    e = evaluation(row, ROOT)
    assert e.attributes["gen_ai.evaluation.score.label"] == "4"
    back = _back(row)
    assert (back["passed"], back["label"], back["failure_type"]) == (None, "4", "answer:partial")


def test_a_verdict_that_could_not_be_made_is_an_evaluation_that_failed() -> None:
    row = _row(failure_type="judge:unparseable", rationale="expected 'Conclusion: ...'")
    e = evaluation(row, ROOT)
    assert failed(e) and e.attributes["error.type"] == "judge:unparseable"
    assert "gen_ai.evaluation.score.value" not in e.attributes
    assert _back(row)["failure_type"] == "judge:unparseable"
    # an evaluation another tool says failed, with no agentdocket attributes: a judge's error
    foreign = {"gen_ai.evaluation.name": "relevance", "error.type": "timeout"}
    assert check(foreign) is None
    assert verdict(TRACE, ROOT, foreign, 1).payload["failure_type"] == "judge:error"


def test_a_step_verdict_is_on_its_step_and_comes_back_as_one() -> None:
    row = _row(subject_span_id=STEP, passed=False, score=0.0)
    e = evaluation(row, ROOT)
    assert e.span_id == STEP and e.attributes["agentdocket.verdict.step"] is True
    assert _back(row)["subject_span_id"] == STEP


def test_two_versions_at_one_instant_stay_two_verdicts() -> None:
    one = evaluation(_row(passed=True, verdict_id="v-1"), ROOT)
    two = evaluation(_row(passed=True, verdict_id="v-2", scorer_version="2"), ROOT)
    ids = {verdict(e.trace_id, e.span_id, e.attributes, e.time_ns).event_id for e in (one, two)}
    assert len(ids) == 2


def test_what_is_left_out() -> None:
    assert received(_row(scorer="external.relevance"))
    assert not says_something(_row())  # measurements alone
    assert says_something(_row(failure_type="response:missing"))
