"""``answer.exact``: the answer against the reference answer, after normalizing only case,
whitespace, and quotes and punctuation at the ends."""

from __future__ import annotations

import pytest

from agentdocket import scorers
from agentdocket.events import Case, Event, Response, RunStarted, Trace
from agentdocket.scorers.exact import normalized
from tests.helpers.factory import T0


def trace_of(case: Case, response: str | None) -> Trace:
    payloads: list[object] = [RunStarted(agent="a", question=case.question, case_id=case.case_id)]
    if response is not None:
        payloads.append(Response(text=response))
    events = [
        Event.create(trace_id="a" * 32, span_id="b" * 16, seq=i, ts=T0, payload=p)
        for i, p in enumerate(payloads)
    ]
    return Trace.from_events(events, case)


@pytest.mark.parametrize(
    ("answer", "reference", "same"),
    [
        ("4 singers are from France.", "4 singers are from France.", True),
        ("  4 SINGERS are\nfrom   France ", "4 singers are from France.", True),
        ('"Wembley Stadium."', "Wembley Stadium", True),
        ("ﬁve", "five", True),  # NFKC: the ligature is two letters
        ("4 singers are from France", "Four singers are from France.", False),
        ("4.5", "4.", False),  # only the ends are stripped: 4.5 stays itself
        ("France, Germany", "Germany, France", False),
    ],
)
def test_normalized_compares_only_what_exact_match_ignores(
    answer: str, reference: str, same: bool
) -> None:
    assert (normalized(answer) == normalized(reference)) is same


def test_a_verdict_per_answer_none_without_a_reference() -> None:
    scorer = scorers.get("answer.exact", "1")
    case = Case(case_id="c1", question="How many?", reference_answer="Four.")
    right = scorer.verdict(trace_of(case, response="four"))
    wrong = scorer.verdict(trace_of(case, response="five"))
    silent = scorer.verdict(trace_of(case, response=None))
    assert (right.passed, right.failure_type) == (True, None)
    assert (wrong.passed, wrong.failure_type) == (False, "answer:not_exact")
    assert (silent.passed, silent.failure_type) == (None, "response:missing")
    unreferenced = Case(case_id="c2", question="Why?")
    assert scorer.verdict(trace_of(unreferenced, response="because")) is None
