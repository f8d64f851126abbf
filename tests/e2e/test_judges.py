"""Judge prompts are the document's, word for word; replies are parsed strictly."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from agentdocket import scorers
from agentdocket.cli import main
from agentdocket.demo import run_demo
from agentdocket.scorers import Scorer
from agentdocket.scorers.judges import (
    PROMPTS,
    Unparseable,
    parse_conclusion,
    parse_final_decision,
    parse_score,
    render,
)
from agentdocket.scorers.judges.peer import SUBTASKS
from agentdocket.scorers.judges.prompts import placeholders
from agentdocket.scorers.runner import score_runs
from agentdocket.scorers.selection import Selection, resolve_scorers
from agentdocket.store import Store, open_store
from tests.helpers.db import SHARED, require_shared

SOURCE = SHARED / "seeds" / "000_b3c1d8e83c640636.txt"


def test_every_prompt_is_the_documents_text_word_for_word() -> None:
    require_shared(SOURCE)
    document = SOURCE.read_text(encoding="utf-8")
    assert len(PROMPTS) == 8
    for name, text in PROMPTS.items():
        assert text.strip() in document, name


def test_prompts_take_the_documents_placeholders() -> None:
    assert placeholders("reference_conclusive") == {"question", "gold_answer", "answer"}
    assert placeholders("reference_interpretive") == {"question", "gold_answer", "answer"}
    assert placeholders("review_interaction_planning") == {"question", "database_text", "plan"}
    assert placeholders("meta_review_tool_employment") == {
        "question",
        "database_text",
        "plan",
        "sql_results",
        "TE_reviews",
    }
    assert placeholders("meta_review_information_synthesis") == {
        "question",
        "database_text",
        "plan",
        "sql_results",
        "answer",
        "IS_reviews",
    }
    text = render("reference_conclusive", question="Q?", gold_answer="42", answer="It is 42.")
    assert "Question: Q?" in text and "Reference (Gold) Answer: 42" in text
    assert text.rstrip().endswith("Conclusion:")
    with pytest.raises(ValueError, match="missing answer; unexpected plan"):
        render("reference_conclusive", question="Q?", gold_answer="42", plan="x")
    with pytest.raises(KeyError, match="no judge prompt 'nope'"):
        render("nope")


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("The answer has every fact.\nConclusion: Match", "Match"),
        ("Conclusion: Not Match.", "Not Match"),
        ("**Conclusion:** not match", "Not Match"),
        ('"Conclusion: Match"', "Match"),
        ("Conclusion: Not Match\n...on reflection...\nConclusion: Match", "Match"),
    ],
)
def test_conclusions(reply: str, expected: str) -> None:
    assert parse_conclusion(reply) == expected


@pytest.mark.parametrize(
    "reply",
    ["It matches.", "Conclusion: Probably Match", "Conclusion:", "Conclusion: Match or not"],
)
def test_unclear_conclusions_are_unparseable(reply: str) -> None:
    with pytest.raises(Unparseable, match="expected 'Conclusion: Match / Not Match'"):
        parse_conclusion(reply)


def test_scores_and_decisions() -> None:
    assert parse_score("Most key points are there.\nScore: 4") == 4
    assert parse_score("Score: [2]") == 2
    for bad in ("Score: 4.5", "Score: 6", "Score: four", "I'd say 3"):
        with pytest.raises(Unparseable):
            parse_score(bad)
    assert parse_final_decision("Rationale: fine.\nFinal Decision: Perfect") == "Perfect"
    assert parse_final_decision("Final Decision: **Imperfect**") == "Imperfect"
    with pytest.raises(Unparseable, match="Perfect / Imperfect"):
        parse_final_decision("Final Decision: Mostly perfect")


# --- judges in the runner, with langchain-core's fake chat model ------------------------------

BOTH = "The answer holds the facts.\nConclusion: Match\nScore: 4"  # parses for either prompt


def _judge(version: str, model: object, retries: int = 2) -> Scorer:
    base = scorers.get("answer.reference", "1")
    return dataclasses.replace(
        base, version=version, config={**base.config, "model": model, "retries": retries}
    )


@pytest.fixture
def demo_url(url: str, tmp_path: Path) -> str:
    run_demo(url, spool_dir=tmp_path / "spool")
    return url


def test_reference_judge_records_its_calls_and_serves_repeats_from_the_cache(
    demo_url: str,
) -> None:
    model = FakeListChatModel(responses=[BOTH] * 500)
    with open_store(demo_url) as store:
        runs_before = store.reader.counts()["runs"]
        first = score_runs(store, [_judge("t1", model)])
        # identical questions (two strategies gave the same answer) are asked once
        distinct = first.judge_calls
        assert 10 <= distinct < 30 and model.i == distinct
        rows = [
            r
            for r in store.reader.rows("verdicts", "verdict_id")
            if r["scorer"] == "answer.reference"
        ]
        assert len(rows) == 30
        conclusive = [r for r in rows if r["details"]["question_type"] == "conclusive"]
        interpretive = [r for r in rows if r["details"]["question_type"] == "interpretive"]
        assert {(r["label"], r["passed"]) for r in conclusive} == {("Match", True)}
        assert {(r["label"], r["score"]) for r in interpretive} == {("4", 4.0)}
        assert len(interpretive) == 2 * 3  # 2 interpretive questions x 3 strategies
        # each verdict links to its judge trace, which holds the prompt and the raw reply
        verdict = next(r for r in rows if r["details"]["cached"] == 0)
        calls = [
            e for e in store.reader.events(verdict["judge_trace_id"]) if e.kind == "llm.called"
        ]
        assert len(calls) == 1
        call = calls[0].payload
        run = store.reader.run(verdict["trace_id"])
        assert run is not None and run["question"] in call["input_messages"][0]["content"]
        assert call["output_messages"][0]["content"] == BOTH
        assert call["attributes"]["parsed"] in ("Match", 4) and call["temperature"] == 0.0
        # judge traces are not runs of the agent; their calls fill the cache
        assert store.reader.counts()["runs"] == runs_before
        assert store.reader.counts()["judge_calls"] == distinct

        again = score_runs(store, [_judge("t1", model)])
        assert again.judge_calls == 0 and model.i == distinct  # same version: nothing to do
        bumped = score_runs(store, [_judge("t2", model)])
        assert bumped.judge_calls == 0 and model.i == distinct  # new version: from the cache
        v2 = [r for r in store.reader.rows("verdicts", "verdict_id") if r["scorer_version"] == "t2"]
        assert len(v2) == 30 and all(r["details"]["cached"] == 1 for r in v2)
        # a verdict served from the cache links to the trace where its call is recorded
        for row in v2:
            linked = [
                e for e in store.reader.events(row["judge_trace_id"]) if e.kind == "llm.called"
            ]
            assert len(linked) == 1


def test_an_unparseable_judge_is_asked_again_then_reported_not_guessed(demo_url: str) -> None:
    model = FakeListChatModel(responses=["It looks right to me."] * 100)
    with open_store(demo_url) as store:
        ids = store.reader.trace_ids(dataset="concerts-demo")[:2]
        result = score_runs(store, [_judge("u1", model, retries=2)], trace_ids=ids)
        assert result.judge_calls == 6 and model.i == 6  # 1 + 2 retries, for each run
        rows = [
            r for r in store.reader.rows("verdicts", "verdict_id") if r["scorer_version"] == "u1"
        ]
        assert {r["failure_type"] for r in rows} == {"judge:unparseable"}
        assert all(r["passed"] is None and r["label"] is None for r in rows)
        assert all(r["details"]["attempts"] == 3 for r in rows)
        assert "expected 'Conclusion: Match / Not Match'" in rows[0]["rationale"] or (
            "expected 'Score: 1' to 'Score: 5'" in rows[0]["rationale"]
        )


def test_a_judge_without_a_model_is_a_clear_error(demo_url: str) -> None:
    result = CliRunner().invoke(
        main, ["--database", demo_url, "score", "--scorer", "answer.reference"]
    )
    assert result.exit_code == 1
    assert "this scorer needs a judge model: `agentdocket score --judge" in result.output
    named = CliRunner().invoke(
        main,
        [
            "--database",
            demo_url,
            "score",
            "--scorer",
            "answer.reference",
            "--judge",
            "openai:gpt-4o",
        ],
    )
    assert named.exit_code == 1
    assert "needs the 'langchain' package" in named.output or "cannot be loaded" in named.output
    with open_store(demo_url) as store:
        assert store.reader.counts()["verdicts"] == 0  # nothing half-written


def _peer(subtask: str, version: str, **config: object) -> Scorer:
    base = scorers.get(f"review.peer.{subtask}", "1")
    return dataclasses.replace(base, version=version, config={**base.config, **config})


PERFECT = "Rationale: the work is complete.\nFinal Decision: Perfect"
IMPERFECT = "Rationale: something is missing.\nFinal Decision: Imperfect"


def _distinct_questions(store: Store, n: int) -> list[str]:
    chosen: dict[str, str] = {}
    for run in store.reader.list_runs(dataset="concerts-demo", limit=None):
        chosen.setdefault(run["case_id"], run["trace_id"])
    return sorted(chosen.values())[:n]


def test_peer_review_records_reviewers_and_meta_reviewers_per_subtask(demo_url: str) -> None:
    model = FakeListChatModel(responses=[PERFECT] * 1000)
    chosen = [_peer(s, "p1", model=model) for s in SUBTASKS]
    with open_store(demo_url) as store:
        ids = _distinct_questions(store, 3)
        result = score_runs(store, chosen, trace_ids=ids)
        assert result.judge_calls == 3 * 3 * (3 + 3) == model.i  # runs x subtasks x (R + M)
        rows = [
            r for r in store.reader.rows("verdicts", "verdict_id") if r["scorer_version"] == "p1"
        ]
        assert len(rows) == 3 * 3
        for row in rows:
            assert (row["label"], row["passed"]) == ("Perfect", True)
            assert row["details"]["reviewer_decisions"] == ["Perfect"] * 3
            assert row["details"]["meta_reviewer_decisions"] == ["Perfect"] * 3
            judge = [
                e for e in store.reader.events(row["judge_trace_id"]) if e.kind == "llm.called"
            ]
            roles = sorted(e.payload["role"] for e in judge)
            assert roles == ["meta_reviewer"] * 3 + ["reviewer"] * 3
            assert {e.payload["temperature"] for e in judge} == {0.7}
        meta = next(
            e
            for e in store.reader.events(rows[0]["judge_trace_id"])
            if e.kind == "llm.called" and e.payload["role"] == "meta_reviewer"
        )
        prompt = meta.payload["input_messages"][0]["content"]
        assert "Reviewer 1:\n" + PERFECT in prompt and "Reviewer 3:\n" in prompt
        again = score_runs(store, [_peer(s, "p2", model=model) for s in SUBTASKS], trace_ids=ids)
        assert again.judge_calls == 0 and model.i == 54  # a new version: all from the cache
    report = json.loads(
        CliRunner()
        .invoke(main, ["--database", demo_url, "report", "--format", "json", "--version", "p2"])
        .output
    )
    planning = report["scorers"]["review.peer.interaction_planning"]
    assert planning["pass_rate"] == 1.0 and planning["scored"] == 3
    assert planning["metrics"] == {"reviewer_agreement": 1.0, "meta_reviewer_agreement": 1.0}


@pytest.mark.parametrize(
    ("replies", "n_meta", "label", "unanimous"),
    [
        ([PERFECT, IMPERFECT, PERFECT, IMPERFECT, PERFECT, IMPERFECT], 3, "Imperfect", False),
        ([IMPERFECT, IMPERFECT, IMPERFECT, PERFECT, PERFECT, IMPERFECT], 3, "Perfect", True),
        ([PERFECT, PERFECT, PERFECT, PERFECT, IMPERFECT], 2, "Imperfect", True),  # a tie
    ],
)
def test_the_majority_of_meta_reviewers_decides(
    demo_url: str, replies: list[str], n_meta: int, label: str, unanimous: bool
) -> None:
    model = FakeListChatModel(responses=replies)
    scorer = _peer(
        "tool_employment",
        f"m{n_meta}{label}",
        model=model,
        n_meta_reviewers=n_meta,
        max_concurrency=1,
    )
    with open_store(demo_url) as store:
        ids = _distinct_questions(store, 1)
        score_runs(store, [scorer], trace_ids=ids)
        (row,) = [
            r
            for r in store.reader.rows("verdicts", "verdict_id")
            if r["scorer_version"] == scorer.version
        ]
    assert row["label"] == label and row["passed"] is (label == "Perfect")
    assert row["details"]["reviewers_unanimous"] is unanimous
    assert len(row["details"]["meta_reviewer_decisions"]) == n_meta


def test_a_jury_of_reviewer_models_takes_turns(demo_url: str) -> None:
    a = FakeListChatModel(name="model-a", responses=[PERFECT] * 50)
    b = FakeListChatModel(name="model-b", responses=[IMPERFECT] * 50)
    scorer = _peer("information_synthesis", "jury", model=a, reviewers=[a, b], meta_reviewers=[a])
    with open_store(demo_url) as store:
        score_runs(store, [scorer], trace_ids=_distinct_questions(store, 1))
        (row,) = [
            r for r in store.reader.rows("verdicts", "verdict_id") if r["scorer_version"] == "jury"
        ]
    assert row["details"]["reviewer_decisions"] == ["Perfect", "Imperfect", "Perfect"]
    assert row["details"]["reviewers_unanimous"] is False and row["label"] == "Perfect"
    assert (a.i, b.i) == (2 + 3, 1)
    # the report breaks the panel down by model
    scorers.register(scorer)
    try:
        args = ["--database", demo_url, "report", "--format", "json", "--version", "jury"]
        report = json.loads(CliRunner().invoke(main, args).output)
    finally:
        scorers.unregister("review.peer.information_synthesis", "jury")
    panel = report["scorers"]["review.peer.information_synthesis"]["judge_models"]
    assert panel["reviewer"] == {
        "model-a": {"decisions": 2, "perfect_rate": 1.0, "agrees_with_verdict": 1.0},
        "model-b": {"decisions": 1, "perfect_rate": 0.0, "agrees_with_verdict": 0.0},
    }
    assert panel["meta_reviewer"]["model-a"]["decisions"] == 3


def test_calibration_counts_and_kappa() -> None:
    from agentdocket.scorers.calibration import calibrate, decision

    # 40 TP, 10 FP, 5 FN, 45 TN: the textbook numbers
    pairs = [(True, True)] * 40 + [(True, False)] * 10 + [(False, True)] * 5
    pairs += [(False, False)] * 45
    result = calibrate(pairs, samples=300, seed=1)
    assert (result.tp, result.fp, result.fn, result.tn) == (40, 10, 5, 45)
    assert result.precision == 0.8 and result.recall == 40 / 45 and result.agreement == 0.85
    assert result.kappa == pytest.approx(0.7)  # po 0.85, pe 0.5
    for metric in ("precision", "recall", "agreement", "kappa"):
        interval = result.intervals[metric]
        assert interval is not None
        assert interval[0] <= getattr(result, metric) <= interval[1]
        assert interval[1] - interval[0] < 0.4
    assert calibrate(pairs, samples=300, seed=1) == result  # reproducible
    always = calibrate([(True, True), (True, False)], samples=50)
    assert always.recall == 1.0 and always.kappa == 0.0
    assert calibrate([(True, True)] * 3, samples=10).kappa is None  # chance agreement is 1
    assert decision(None, "Perfect") is True and decision(None, "Not Match") is False
    assert decision(None, "4") is None and decision(False, "Match") is False


def test_calibrate_compares_a_judge_with_a_truth(demo_url: str) -> None:
    model = FakeListChatModel(responses=[BOTH] * 500)  # the judge says Match to everything
    with open_store(demo_url) as store:
        score_runs(store, [_judge("c1", model), scorers.get("tools.procedural")])
    scorers.register(_judge("c1", model))
    try:
        args = ["--database", demo_url, "calibrate", "--judge", "answer.reference=c1"]
        out = CliRunner().invoke(main, [*args, "--truth", "tools.procedural", "--format", "json"])
    finally:
        scorers.unregister("answer.reference", "c1")
    assert out.exit_code == 0, out.output
    result = json.loads(out.output)
    # 24 conclusive runs (8 questions x 3 strategies), all judged Match; procedural passes 13
    # runs of 30, of which the conclusive ones are the truth's positives
    assert result["n"] == 24 and result["fn"] == 0 and result["tn"] == 0
    assert result["recall"] == 1.0 and result["kappa"] == 0.0
    assert result["precision"] == result["tp"] / 24
    args = ["--database", demo_url, "calibrate", "--judge", "answer.reference"]
    text = CliRunner().invoke(main, [*args, "--truth", "tools.procedural"])
    assert text.exit_code == 0 and "low: optimistic" in text.output and "kappa" in text.output


def test_rate_limits_back_off_and_errors_are_recorded_not_raised() -> None:
    from langchain_core.language_models.fake_chat_models import FakeListChatModel as Fake

    from agentdocket.scorers.judges.client import Ask, JudgeSession

    class RateLimitError(Exception):
        status_code = 429

    class Flaky(Fake):
        failures: int = 2

        def invoke(self, *args: object, **kwargs: object) -> object:  # type: ignore[override]
            if self.failures:
                self.failures -= 1
                raise RateLimitError("slow down")
            return super().invoke(*args, **kwargs)

    session = JudgeSession(backoff_s=0.01)
    model = Flaky(responses=["Conclusion: Match"])
    (answer,) = session.ask(model, "flaky", 0.0, [Ask("a" * 32, "q?", parse_conclusion)])
    assert answer.parsed == "Match" and answer.failure is None and model.failures == 0

    class Broken(Fake):
        def invoke(self, *args: object, **kwargs: object) -> object:  # type: ignore[override]
            raise ConnectionError("no route to the provider")

    (failed,) = session.ask(
        Broken(responses=["x"]), "broken", 0.0, [Ask("b" * 32, "q?", parse_conclusion)]
    )
    assert failed.failure == "judge:error" and "ConnectionError: no route" in (failed.error or "")
    recorded = [e.payload for e in session.events if e.trace_id == "b" * 32]
    assert len(recorded) == 1 and recorded[0]["error"].startswith("ConnectionError")


def test_a_configured_judge_reaches_every_worker_whole(demo_url: str) -> None:
    """Options and a judge model object, selected as `score --config --judge` selects them,
    travel to two worker processes as the scorer value: every run is judged by that model,
    under the configured version (a name looked up again in a worker found no such version)."""
    model = FakeListChatModel(responses=[BOTH] * 1000)
    chosen = resolve_scorers(Selection(("answer.reference",), {"retries": "3"}, model))
    assert [s.version for s in chosen] == ["1+retries=3"]
    with open_store(demo_url) as store:
        result = score_runs(store, chosen, workers=2, batch_size=5)
        assert result.runs == 30 and result.error_count == 0
        rows = [
            r
            for r in store.reader.rows("verdicts", "verdict_id")
            if r["scorer"] == "answer.reference"
        ]
    assert len(rows) == 30 and {r["scorer_version"] for r in rows} == {"1+retries=3"}
    assert all(r["judge_trace_id"] for r in rows)
    assert {r["label"] for r in rows} <= {"Match", "4"}  # conclusive or interpretive prompts
