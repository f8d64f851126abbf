"""Judges that survive real replies: every judge's parser on the local model's own replies to
its prompt (tests/fixtures/judge_replies, captured by ``python -m tests.helpers.judge_replies``)
and on the shapes real models give (the verdict on the label's line, after it, in emphasis,
stated twice); and the judges' session with scripted models: a reply that does not parse is
asked again with a reminder of the format, within the retry budget, a reply cut off at the
output limit is named so, and a second pass is served from the cache attempt by attempt."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from agentdocket.scorers.judges.client import Ask, JudgeSession, observing_calls
from agentdocket.scorers.judges.parse import (
    Unparseable,
    parse_conclusion,
    parse_final_decision,
    parse_score,
    reminder,
)
from agentdocket.scorers.judges.points import parse_hit
from tests.helpers import judge_replies

# --- the local model's real replies -----------------------------------------------------------


@pytest.mark.parametrize("name", sorted(judge_replies.FILES))
def test_the_local_models_real_replies_parse_as_they_did_when_captured(name: str) -> None:
    replies = judge_replies.load(name)
    prompts = {r["prompt"] for r in replies}
    assert prompts == set(judge_replies.FILES[name])  # a reply to every prompt of the judge
    for reply in replies:
        assert judge_replies.parsed(reply["prompt"], reply["reply"]) == {
            k: reply[k] for k in ("parsed", "unparseable") if k in reply
        }, reply["reply"]


def test_the_real_replies_hold_what_the_parsers_must_survive() -> None:
    replies = [r for name in judge_replies.FILES for r in judge_replies.load(name)]
    # a 135M model mostly rambles past the format: most replies do not parse, none is guessed
    unparseable = [r for r in replies if "unparseable" in r]
    assert len(unparseable) > len(replies) / 2
    for r in unparseable:
        assert r["unparseable"].startswith("expected ")
    # replies cut off at the output limit are among them, and said so by the model
    assert any(r["finish_reason"] == "length" for r in replies)
    assert all(r["finish_reason"] in ("stop", "length") for r in replies)
    assert all(0 < r["output_tokens"] <= 64 for r in replies)
    # retries were asked with the reminder (attempt 1) after a reply that did not parse
    assert any(r["attempt"] == 1 for r in replies)


# --- where real models put their verdicts -----------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("The answer has every fact.\nConclusion: Match", "Match"),
        ("Conclusion: Not Match.", "Not Match"),
        ("**Conclusion:** not match", "Not Match"),
        ("**Conclusion**: NOT  MATCH", "Not Match"),
        ('"Conclusion: Match"', "Match"),
        ("Conclusion: [Match]", "Match"),
        ("so the conclusion: Match (all facts are there)", "Match"),
        ("Conclusion: Match. The system-generated answer contains the count.", "Match"),
        # changed its mind: the last statement decides
        ("Conclusion: Not Match\n...on reflection...\nConclusion: Match", "Match"),
        # the format echoed, then a verdict: the echo is passed over
        ("Conclusion: Match/Not Match\nConclusion: Match.", "Match"),
        # carrying on from the prompt's closing "Conclusion:"
        ("Match", "Match"),
        (" Not Match\n\nThe system-generated answer lacks the year.", "Not Match"),
        ("Not Match. The answer names another stadium.", "Not Match"),
    ],
)
def test_conclusions_where_models_put_them(reply: str, expected: str) -> None:
    assert parse_conclusion(reply) == expected


@pytest.mark.parametrize(
    "reply",
    [
        "It matches.",
        "Conclusion: Probably Match",
        "Conclusion:",
        "Conclusion: Match or not",
        "Conclusion: Match/Not Match",
        "MyConclusion: Match",
        "Matches all of it.",
        # the local model's own words: the verdict without the label is not guessed
        'The system generated answer is a "Match" to the gold answer, and the system-generated '
        'answer is a "Not Match" to the gold answer.',
    ],
)
def test_unclear_conclusions_are_unparseable(reply: str) -> None:
    with pytest.raises(Unparseable, match="expected 'Conclusion: Match / Not Match'"):
        parse_conclusion(reply)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Most key points are there.\nScore: 4", 4),
        ("Score: [2]", 2),
        ("**Score: 5**", 5),
        ("Score: 4/5", 4),
        ("score: 3 out of 5.", 3),
        ("Score: 2 (some key points are missing)", 2),
        ("4", 4),
        ("4\n\nThe answer has every key point and one more.", 4),
    ],
)
def test_scores_where_models_put_them(reply: str, expected: int) -> None:
    assert parse_score(reply) == expected


@pytest.mark.parametrize(
    "reply",
    [
        "Score: 4.5",
        "Score: 4,5",
        "Score: 6",
        "Score: 45",
        "Score: four",
        "I'd say 3",
        "Score: [1/2/3/4/5]",  # the format echoed back
        "1. Familiarize yourself with the gold answer.",  # a list, not a score
        "2019: 555,000; 2020: 610,000",  # the local model's own echo of the answer
        "3 concerts took place in London stadiums.",
    ],
)
def test_unclear_scores_are_unparseable(reply: str) -> None:
    with pytest.raises(Unparseable, match="expected 'Score: 1' to 'Score: 5'"):
        parse_score(reply)


def test_final_decisions_where_models_put_them() -> None:
    assert parse_final_decision("Rationale: fine.\nFinal Decision: Perfect") == "Perfect"
    assert parse_final_decision("Final Decision: **Imperfect**") == "Imperfect"
    assert parse_final_decision("All correct, so my final decision: imperfect.") == "Imperfect"
    for bad in (
        "Final Decision: Mostly perfect",
        "Final Decision: Perfectly fine",
        "Final Decision: After providing the rationale, conclude with one of the following",
        "Perfect",  # the review prompts do not end with the label: no bare opening verdict
        "- Perfect: If all SQL queries are correct",
    ):
        with pytest.raises(Unparseable, match="Perfect / Imperfect"):
            parse_final_decision(bad)


@pytest.mark.parametrize(
    ("reply", "hit", "reason"),
    [
        ('```json\n{"reason": "it echoed", "is_hit": "yes"}\n```', True, "it echoed"),
        ('{"reason": "no echo", "is_hit": "No"}', False, "no echo"),
        # not JSON (a trailing comma, single quotes): the last is_hit stated decides
        ('{"reason": "it echoed", "is_hit": "yes",}', True, "it echoed"),
        ("{'reason': 'x', 'is_hit': 'no'}", False, ""),
        ('"is_hit": "no" ... on reflection "is_hit": "yes"', True, ""),
    ],
)
def test_examiner_points_where_models_put_them(reply: str, hit: bool, reason: str) -> None:
    assert parse_hit(reply) == (hit, reason)


@pytest.mark.parametrize(
    "reply", ['{"reason": "x", "is_hit": "maybe"}', "The agent said Hello World: yes", ""]
)
def test_unclear_examiner_points_are_unparseable(reply: str) -> None:
    with pytest.raises(Unparseable, match='"is_hit": "yes" or "no"'):
        parse_hit(reply)


# --- the judges' session: reminders, cut-offs, the retry budget, the cache --------------------


class Scripted(BaseChatModel):
    """Replies in turn, each with token counts and a finish reason, as a provider does; keeps
    the messages it was sent."""

    replies: list[tuple[str, str]]  # (reply, finish reason)
    sent: list[list[tuple[str, str]]] = []  # noqa: RUF012 - given at construction

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        self.sent.append([(m.type, m.text) for m in messages])
        reply, finish = self.replies[(len(self.sent) - 1) % len(self.replies)]
        message = AIMessage(
            content=reply,
            usage_metadata={"input_tokens": 300, "output_tokens": 64, "total_tokens": 364},
            response_metadata={"finish_reason": finish},
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


def _stored(session: JudgeSession) -> Mapping[str, tuple[str, str]]:
    """The cache a store would keep of ``session``'s calls: key -> (reply, judge trace)."""
    out = {}
    for event in session.events:
        p = event.payload
        if p["error"] is None:
            out.setdefault(
                p["attributes"]["judge_cache_key"],
                (p["output_messages"][0]["content"], event.trace_id),
            )
    return out


def _lookup(cache: Mapping[str, tuple[str, str]]) -> Any:
    def lookup(keys: Sequence[str]) -> Mapping[str, tuple[str, str]]:
        return {k: cache[k] for k in keys if k in cache}

    return lookup


ASK = Ask("a" * 32, "Question...\n\nConclusion:", parse_conclusion)
RAMBLE = "System:\n\nThe system-generated answer is a match"


def test_an_unparseable_reply_is_asked_again_with_a_reminder_of_the_format() -> None:
    model = Scripted(replies=[(RAMBLE, "length"), ("Conclusion: Match", "stop")], sent=[])
    session = JudgeSession()
    (answer,) = session.ask(model, "scripted", 0.0, [ASK], retries=2)
    assert answer.parsed == "Match" and answer.failure is None and answer.attempts == 2
    expected = "'Conclusion: Match / Not Match'"
    assert model.sent == [
        [("human", ASK.prompt)],
        [("human", ASK.prompt), ("ai", RAMBLE), ("human", reminder(expected))],
    ]
    first, second = (e.payload for e in session.events)
    assert (first["attributes"]["attempt"], second["attributes"]["attempt"]) == (0, 1)
    assert [m["role"] for m in second["input_messages"]] == ["user", "assistant", "user"]
    assert (
        first["attributes"]["finish_reason"] == "length" and first["attributes"]["parsed"] is None
    )
    assert second["attributes"]["parsed"] == "Match"
    for call in (first, second):  # tokens land as a provider's do
        assert (call["input_tokens"], call["output_tokens"]) == (300, 64)


def test_a_reply_cut_off_at_the_limit_is_unparseable_and_says_so_within_the_budget() -> None:
    model = Scripted(replies=[(RAMBLE, "length")], sent=[])
    session = JudgeSession()
    (answer,) = session.ask(model, "scripted", 0.0, [ASK], retries=1)
    assert len(model.sent) == 2 and answer.attempts == 2  # the first ask and 1 retry
    assert answer.failure == "judge:unparseable" and answer.parsed is None
    assert (answer.error or "").startswith(
        "cut off at 64 tokens: expected 'Conclusion: Match / Not Match'"
    )
    assert answer.reply == RAMBLE  # kept, as its calls are
    assert all(e.payload["output_messages"][0]["content"] == RAMBLE for e in session.events)
    # a reply that stopped by itself is not called cut off
    stopped = Scripted(replies=[(RAMBLE, "stop")], sent=[])
    (plain,) = JudgeSession().ask(stopped, "scripted", 0.0, [ASK], retries=0)
    assert (plain.error or "").startswith("expected 'Conclusion")


def test_a_cut_off_reply_that_states_its_verdict_stands() -> None:
    model = Scripted(replies=[("Conclusion: Not Match\n\nThe system-generated", "length")], sent=[])
    (answer,) = JudgeSession().ask(model, "scripted", 0.0, [ASK], retries=2)
    assert answer.parsed == "Not Match" and answer.attempts == 1


def test_a_second_pass_is_served_from_the_cache_retries_included() -> None:
    model = Scripted(
        replies=[(RAMBLE, "length"), (RAMBLE, "length"), ("Conclusion: Match", "stop")], sent=[]
    )
    other = Ask("b" * 32, "Another question\n\nConclusion:", parse_conclusion)
    first = JudgeSession(max_concurrency=1)  # the scripted replies in a known order
    answers = first.ask(model, "scripted", 0.0, [ASK, other], retries=2)
    assert first.calls_made == len(model.sent) == 5
    again = JudgeSession(_lookup(_stored(first)))
    repeated = again.ask(model, "scripted", 0.0, [ASK, other], retries=2)
    assert again.calls_made == 0 and len(model.sent) == 5 and again.cache_hits == 5
    assert [(a.parsed, a.failure, a.keys) for a in repeated] == [
        (a.parsed, a.failure, a.keys) for a in answers
    ]
    # what the cache does not keep: whether a stored reply was cut off
    cut = [a for a in answers if a.failure]
    assert all((a.error or "").startswith("cut off at 64 tokens") for a in cut)
    assert all((a.error or "").startswith("expected") for a in repeated if a.failure)


def test_each_call_made_is_told_to_the_observer_as_it_returns() -> None:
    """What score's progress counts: every call made, retries included; none from the cache."""
    model = Scripted(replies=[(RAMBLE, "length"), ("Conclusion: Match", "stop")], sent=[])
    other = Ask("b" * 32, "Another question...\n\nConclusion:", parse_conclusion)
    seen: list[str] = []
    session = JudgeSession()
    with observing_calls(seen.append):
        session.ask(model, "scripted", 0.0, [ASK, other], retries=2)
    assert len(model.sent) >= 3 and seen == ["scripted"] * len(model.sent)
    cached = JudgeSession(_lookup(_stored(session)))
    with observing_calls(seen.append):
        cached.ask(model, "scripted", 0.0, [ASK, other], retries=2)
    assert len(seen) == len(model.sent) and cached.calls_made == 0
