"""Session scorers on every backend: a conversation judged as a whole, its verdict kept on its
last turn; re-scoring adds nothing, a late turn is a new input judged again (the old verdict
stays in the log), through the store and the command line."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from agentdocket import scorers
from agentdocket.scorers.session_runner import score_sessions
from agentdocket.store import open_store
from tests.helpers.db import cli
from tests.helpers.fresh import EVERY, fresh_url
from tests.helpers.recorder import Recorder

RULES = [
    "session.resolution",
    "session.repetition",
    "session.restating",
    "session.unanswered_error",
]


@pytest.fixture(params=EVERY)
def url(request: pytest.FixtureRequest) -> str:
    return fresh_url(request)


def _turn(recorder: Recorder, conversation: str, question: str, answer: str | None) -> None:
    run = recorder.tracer.run("support", question=question, conversation=conversation)
    if answer is None:
        with pytest.raises(RuntimeError), run:
            raise RuntimeError("the booking service is away")
        return
    with run:
        run.respond(answer)


def _record(url: str, spool: Path, turns: list[tuple[str, str, str | None]]) -> None:
    recorder = Recorder(url, spool)
    try:
        for conversation, question, answer in turns:
            _turn(recorder, conversation, question, answer)
        recorder.flush()
    finally:
        recorder.close()


def _judge(replies: list[str]) -> scorers.Scorer:
    goal = scorers.get("session.goal")
    model = FakeListChatModel(responses=replies)
    return dataclasses.replace(goal, config={**goal.config, "model": model})


def _verdicts(url: str, trace_id: str) -> dict[str, dict[str, object]]:
    with open_store(url) as store:
        trace = store.reader.read_trace(trace_id)
        assert trace is not None
        return {v.scorer: dataclasses.asdict(v) for v in trace.verdicts()}


def test_a_session_is_judged_whole_and_again_after_a_late_turn(url: str, tmp_path: Path) -> None:
    _record(
        url,
        tmp_path / "spool",
        [
            ("c-book", "I need a room in Paris for two nights", "For which nights?"),
            ("c-loop", "Where is my parcel?", "It is on its way."),
            ("c-book", "The 3rd to the 5th", "Booked: 2 nights."),
            ("c-loop", "Where is my parcel? It has not come", "It is on its way."),
            ("c-loop", "Cancel the order", None),
        ],
    )
    replies = [
        '{"reason": "booked", "is_hit": "yes"}',
        '{"reason": "no parcel, no answer", "is_hit": "no"}',
        '{"reason": "the parcel came", "is_hit": "yes"}',
    ]  # asked in turn: the model answers each question once
    chosen = [scorers.get(n) for n in RULES] + [_judge(replies)]
    with open_store(url) as store:
        first = score_sessions(store, chosen)
        assert first.runs == 2
        assert {k[0]: t.added for k, t in first.tallies.items()} == dict.fromkeys(
            [*RULES, "session.goal"], 2
        )
        book = [t["trace_id"] for t in store.sessions.turns("c-book")]
        loop = [t["trace_id"] for t in store.sessions.turns("c-loop")]
    on_book = _verdicts(url, book[-1])
    assert on_book["session.resolution"]["passed"] is True
    assert on_book["session.resolution"]["details"]["turns_to_resolution"] == 2  # type: ignore[index]
    assert on_book["session.goal"]["passed"] is True
    assert all(on_book[n]["passed"] is True for n in RULES)
    assert _verdicts(url, book[0]) == {}  # kept on the last turn only
    on_loop = _verdicts(url, loop[-1])
    assert on_loop["session.resolution"]["failure_type"] == "session:unresolved"
    assert on_loop["session.repetition"]["failure_type"] == "session:repeated_answer"
    assert on_loop["session.restating"]["failure_type"] == "session:user_restated"
    assert on_loop["session.unanswered_error"]["failure_type"] == "session:unanswered_error"
    assert on_loop["session.goal"]["failure_type"] == "session:goal_not_reached"

    with open_store(url) as store:  # the same inputs: nothing new, and the judge is not asked
        again = score_sessions(store, chosen)
        assert {t.added for t in again.tallies.values()} == {0}
        assert {t.kept for t in again.tallies.values()} == {2}

    _record(url, tmp_path / "late", [("c-loop", "Thanks, it came", "Glad it did!")])
    with open_store(url) as store:
        late = score_sessions(store, chosen)
        assert {(k[0], t.added, t.kept) for k, t in late.tallies.items()} == {
            (n, 1, 1) for n in [*RULES, "session.goal"]
        }
        newest = store.sessions.turns("c-loop")[-1]["trace_id"]
        store.projections.rebuild()
    assert _verdicts(url, newest)["session.resolution"]["passed"] is True
    assert _verdicts(url, newest)["session.goal"]["rationale"] == "the parcel came"
    assert _verdicts(url, loop[-1])["session.resolution"]["passed"] is False  # still in the log
    shown = json.loads(cli(url, "sessions", "show", "c-loop", "--format", "json"))
    current = {v["scorer"]: v for v in shown["verdicts"] if v["current"]}
    assert current["session.resolution"]["passed"] is True
    earlier = [v for v in shown["verdicts"] if not v["current"]]
    assert {v["at_turn"] for v in earlier} == {3}
    assert all(
        not t["verdicts"] or "session." not in t["verdicts"][0]["scorer"] for t in shown["turns"]
    )


def test_score_runs_session_scorers_from_the_command_line(url: str, tmp_path: Path) -> None:
    _record(
        url,
        tmp_path / "spool",
        [("c-1", "Hello", "Hi"), ("c-1", "Book it", "Booked."), ("c-2", "Hi", "Hello")],
    )
    out = json.loads(cli(url, "score", "--scorer", "session.resolution", "--format", "json"))
    assert out["sessions"] == 2
    assert [(s["scorer"], s["added"]) for s in out["scorers"]] == [("session.resolution", 2)]
    again = json.loads(cli(url, "score", "--scorer", "session.resolution", "--format", "json"))
    assert [(s["added"], s["kept"]) for s in again["scorers"]] == [(0, 2)]


def _session_verdicts(url: str) -> list[tuple[str, str]]:
    with open_store(url) as store:
        rows = store.recorder.read(
            "SELECT trace_id, input_hash FROM verdicts WHERE scorer = 'session.resolution'"
        )
    return sorted((str(r[0]), str(r[1])) for r in rows)


def test_a_follower_judges_idle_sessions_once_per_input(url: str, tmp_path: Path) -> None:
    from agentdocket.follow.config import FollowConfig, Rule
    from agentdocket.follow.follower import Follower

    def follower(store: object, idle: float) -> Follower:
        rules = (Rule(name="session.resolution"),)
        config = FollowConfig(rules=rules, name=f"idle-{idle:g}", session_idle_seconds=idle)
        return Follower(store, config)  # type: ignore[arg-type]

    _record(
        url, tmp_path / "a", [("c-1", "Book a room", "Which nights?"), ("c-1", "Friday", "Booked.")]
    )
    with open_store(url) as store:
        patient = follower(store, 3600)
        patient.round()  # the session has not been quiet for an hour: not judged yet
        assert sum(patient.stats.added.values()) == 0
        live = follower(store, 0)
        live.round()
        assert sum(live.stats.added.values()) == 1
        live.judge_idle_sessions(force=True)  # the same input: nothing new
        assert (sum(live.stats.added.values()), sum(live.stats.kept.values())) == (1, 1)
    [(first, _)] = _session_verdicts(url)

    _record(url, tmp_path / "b", [("c-1", "And breakfast?", "Included.")])
    with open_store(url) as store:
        live.store = store
        live.judge_idle_sessions(force=True)  # a late turn: judged again, as a new input
        assert sum(live.stats.added.values()) == 2
        restarted = follower(store, 0)  # resumes from its saved cursor: nothing to do
        restarted.round()
        assert sum(restarted.stats.added.values()) == 0
    judged = _session_verdicts(url)
    assert len(judged) == 2 and first in {t for t, _ in judged}
