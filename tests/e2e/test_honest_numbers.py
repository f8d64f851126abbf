"""Numbers that cannot mislead, through the command line on real stores (SQLite and
PostgreSQL): agents run as experiments through the tracer, scored by the real runner, then
compared and reported.

- the direction follows the test: 15 cases fall a little and one rises a lot: worse, and the
  gate fails;
- a lost answer is a failure: a candidate that stops answering 4 of 6 cases fails the gate,
  which names them;
- unknown is not a pass: a pinned version that does not exist is an error;
- a small sample says what it cannot see: 3 of 6 cases regressing is inconclusive, said
  loudly (and exits 3 when asked to fail on it); an identical candidate exits 0;
- repeated trials: ``report --format json`` gives pass@k and pass^k per scorer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from agentdocket import scorers
from agentdocket.cli import main
from agentdocket.events import Trace
from agentdocket.scorers.base import Outcome, Scorer
from tests.helpers.db import cli

AGENT = '''
import asyncio
import os

from agentdocket import tracer


CALLS = {}  # (HONEST_RUN, case id) -> calls so far


@tracer.tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"18 C in {city}"


async def answer(case):
    """What the agent does depends on HONEST_MODE and the case; every choice is scripted."""
    mode, i = os.environ["HONEST_MODE"], int(case.case_id.removeprefix("c"))
    run = tracer.current_run()
    if mode.startswith("number"):  # answers a number: the scores' cases
        baseline = 0.5 if i < 15 else 0.0
        candidate = 0.45 if i < 15 else 1.0
        return str(candidate if mode == "number-candidate" else baseline)
    city = case.question.removeprefix("What is the weather in ").rstrip("?")
    if mode == "silent":  # stops answering 4 of 6 cases, four different ways
        if i in (0, 1):
            return None
        if i == 2:
            raise RuntimeError("the tool server went away")
        if i == 3:
            await asyncio.Event().wait()  # never set: the experiment's --timeout ends it
    if mode == "wrong" and i >= 3:  # asks about the wrong city on 3 of 6 cases
        city = "Atlantis"
    key = (os.environ.get("HONEST_RUN"), case.case_id)
    CALLS[key] = CALLS.get(key, 0) + 1
    if mode == "flaky" and i == 1 and CALLS[key] == 2:
        city = "Atlantis"  # wrong on the second of its repeats, of one case
    run.plan(["get_weather"])
    return f"It is {get_weather(city)}."
'''

JUDGE = '''
from langchain_core.language_models.fake_chat_models import FakeListChatModel


def model():
    """A judge that finds every answer it is shown a match."""
    return FakeListChatModel(responses=["The answer matches.\\nConclusion: Match"])
'''

CITIES = ["Paris", "Rome", "Oslo", "Lima", "Cairo", "Quito"]


def _number(trace: Trace, config: object) -> Outcome | None:
    """A score scorer: the number the agent answered."""
    answer = trace.response
    if answer is None:
        return Outcome(failure_type="response:missing")
    return Outcome(score=float(answer))


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder with the agent and judge modules, the current directory (experiments import
    the agent from it), and the number scorer registered."""
    (tmp_path / "honest_agent.py").write_text(AGENT)
    (tmp_path / "fake_judge.py").write_text(JUDGE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    scorers.register(
        Scorer("answer.number", "1", "the number answered", _number, inputs=("answer",))
    )
    yield tmp_path
    scorers.unregister("answer.number", "1")


def _dataset(url: str, folder: Path, name: str, n: int) -> None:
    lines = []
    for i in range(n):
        city = CITIES[i % len(CITIES)]
        lines.append(
            json.dumps(
                {
                    "case_id": f"c{i}",
                    "question": f"What is the weather in {city}?",
                    "expected_plan": ["get_weather"],
                    "expected_calls": [{"tool": "get_weather", "arguments": {"city": city}}],
                    "reference_answer": f"It is 18 C in {city}.",
                }
            )
        )
    path = folder / f"{name}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    cli(url, "datasets", "add", str(path), "--name", name, "--version", "1")


def _experiment(
    url: str, monkeypatch: pytest.MonkeyPatch, dataset: str, mode: str, *more: str
) -> None:
    monkeypatch.setenv("HONEST_MODE", mode)
    monkeypatch.setenv("HONEST_RUN", f"{url}{mode}")
    cli(
        url,
        "experiment",
        "run",
        "--dataset",
        dataset,
        "--agent",
        "honest_agent:answer",
        "--agent-version",
        mode,
        "--scorer",
        "tools.slot_fill",
        *more,
    )


def _compare(url: str, dataset: str, baseline: str, candidate: str, *more: str) -> Result:
    return CliRunner().invoke(
        main,
        [
            "--database",
            url,
            "compare",
            "--dataset",
            dataset,
            "--baseline",
            f"experiment:honest_agent@{baseline}",
            "--candidate",
            f"experiment:honest_agent@{candidate}",
            *more,
        ],
    )


def test_the_verdict_follows_its_test_not_the_mean(
    url: str, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """15 cases fall by 0.05 and one rises by 1.0: the mean rises, the signed-rank test says
    worse. The verdict is worse, its estimate and interval are below zero, the gate fails."""
    _dataset(url, workdir, "numbers", 16)
    for mode in ("number-baseline", "number-candidate"):
        _experiment(url, monkeypatch, "numbers", mode)
    cli(url, "score", "--dataset", "numbers", "--scorer", "answer.number")
    result = _compare(
        url,
        "numbers",
        "number-baseline",
        "number-candidate",
        "--format",
        "json",
        "--fail-on-regression",
    )
    assert result.exit_code == 1, result.output
    found = json.loads(result.output[: result.output.rindex("}") + 1])
    entry = found["scorers"]["answer.number"]
    assert entry["verdict"] == "worse" and found["outcome"] == "worse"
    assert entry["difference"]["estimate"] == pytest.approx(-0.05)
    assert entry["difference"]["ci_high"] < 0 < entry["difference"]["mean"]


def test_a_candidate_that_stops_answering_fails_the_gate_by_name(
    url: str, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The candidate gives no answer on 2 cases, raises on one and times out on one; the
    judge never sees them. They are failures, and the gate fails naming them."""
    _dataset(url, workdir, "six", 6)
    _experiment(url, monkeypatch, "six", "good")
    _experiment(url, monkeypatch, "six", "silent", "--timeout", "2")
    judge = ["--scorer", "answer.reference", "--judge", "python:fake_judge:model"]
    cli(url, "score", "--dataset", "six", *judge)
    report = json.loads(
        cli(url, "report", "--dataset", "six", "--by", "version", "--format", "json")
    )
    silent = report["groups"]["silent"]["scorers"]["answer.reference"]
    assert (silent["scored"], silent["passed"], silent["missing"]) == (6, 2, 4)
    assert silent["missing_kinds"] == {"agent:error": 1, "agent:timeout": 1, "response:missing": 2}
    assert silent["pass_rate"] == pytest.approx(2 / 6)
    assert silent["pass_rate_answered"] == 1.0
    table = cli(url, "report", "--dataset", "six", "--by", "version")
    assert "33.3% (100.0% of answered)" in table
    gate = _compare(url, "six", "good", "silent", "--fail-on-regression")
    assert gate.exit_code == 1, gate.output
    assert "4 of 6 cases lost their answer on answer.reference" in gate.output
    assert "agent:timeout 1" in gate.output and "c0, c1, c2, c3" in gate.output


def test_a_version_that_does_not_exist_is_an_error(
    url: str, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _dataset(url, workdir, "six", 6)
    for mode in ("good", "wrong"):
        _experiment(url, monkeypatch, "six", mode)
    pinned = _compare(
        url, "six", "good", "wrong", "--version", "tools.slot_fill=7", "--fail-on-regression"
    )
    assert pinned.exit_code == 2, pinned.output
    assert "tools.slot_fill has no verdicts of version 7" in pinned.output
    assert "(it has 2)" in pinned.output


def test_a_small_sample_says_what_it_cannot_see_and_an_identical_candidate_passes(
    url: str, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """3 of 6 cases go from pass to fail: too few for the exact test. Not a silent pass: the
    gate is inconclusive, says the smallest drop 6 cases can show and what would catch this
    one, and exits 3 when told to fail on it. The same agent again exits 0."""
    _dataset(url, workdir, "six", 6)
    for mode in ("good", "wrong", "good-again"):
        monkeypatch.setenv("HONEST_MODE", mode)
        _experiment(url, monkeypatch, "six", mode if mode != "good-again" else "good-again")
    small = _compare(url, "six", "good", "wrong", "--fail-on-regression")
    assert small.exit_code == 0, small.output
    assert "inconclusive: cases regressed and the test cannot decide" in small.output
    assert "with 6 cases the smallest drop it can flag at alpha 0.05 is 100 points" in (
        " ".join(small.output.split())
    )
    assert "would be caught 80% of the time with about" in " ".join(small.output.split())
    strict = _compare(url, "six", "good", "wrong", "--fail-on-inconclusive")
    assert strict.exit_code == 3, strict.output
    same = _compare(url, "six", "good", "good-again", "--fail-on-regression")
    assert same.exit_code == 0, same.output
    assert "pass: no case regressed" in same.output


def test_repeated_trials_report_pass_at_k_and_pass_hat_k(
    url: str, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three repeats of six cases, one case wrong on one repeat: pass@1 17 of 18 runs, pass@3
    every case, pass^3 five of six cases; that case is flaky."""
    _dataset(url, workdir, "six", 6)
    _experiment(url, monkeypatch, "six", "flaky", "--repeat", "3")
    report = json.loads(
        cli(
            url,
            "report",
            "--dataset",
            "six",
            "--experiment",
            "honest_agent@flaky",
            "--format",
            "json",
        )
    )
    repeats = report["scorers"]["tools.slot_fill"]["repeats"]
    assert repeats["pass_at_k"]["1"] == pytest.approx(17 / 18)
    assert repeats["pass_at_k"]["3"] == 1.0
    assert repeats["pass_hat_k"]["3"] == pytest.approx(5 / 6)
    assert repeats["flaky_cases"] == ["c1"]
    low, high = repeats["pass_at_1"]["ci_low"], repeats["pass_at_1"]["ci_high"]
    assert low < 17 / 18 < high <= 1.0
    table = cli(url, "report", "--dataset", "six", "--experiment", "honest_agent@flaky")
    assert "pass@3 100.0%, pass^3 83.3%" in " ".join(table.split())
    assert "1 flaky cases (c1)" in " ".join(table.split())
