"""GRAMMAR-Eval on a results file of our own making that reaches every group tag and both
blames: import, score grammar.groups, report (the metric names are a contract)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentdocket import scorers
from agentdocket.cli import main
from agentdocket.scorers.runner import score_runs
from agentdocket.store import open_store
from tests.helpers.db import cli
from tests.helpers.grammar_records import RECORDS, record


@pytest.fixture
def results(tmp_path: Path) -> Path:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(RECORDS))
    return path


def test_groups_tags_blames_and_report_metrics(url: str, results: Path) -> None:
    out = cli(url, "import", "grammar-results", str(results), "--dataset", "g")
    assert "dataset g (9 cases), 9 runs" in out
    cli(url, "score", "--dataset", "g", "--scorer", "grammar.groups")
    again = cli(url, "score", "--dataset", "g", "--scorer", "grammar.groups")
    assert "│            0 │              9 │" in again  # nothing new: all kept
    report = json.loads(cli(url, "report", "--dataset", "g", "--format", "json"))
    metrics = report["scorers"]["grammar.groups"]["metrics"]
    assert metrics == {
        "accuracy": pytest.approx(4 / 9),
        "retrieval_accuracy": pytest.approx(7 / 9),
        "knowledge_accuracy": pytest.approx(3 / 4),
        "refined_accuracy": pytest.approx(4 / 7),
        "refined_retrieval_accuracy": pytest.approx(6 / 7),
        "gap": 1,
        "robust": 1,
        "non_robust": 2,
        "runs_per_group": pytest.approx(2.25),
        "blame_retrieval": 1,
        "blame_language_model": 2,
    }
    # the imported judgement is a verdict too
    assert report["scorers"]["grammar.judge"]["passed"] == 6
    with open_store(url) as store:
        runs = {r["trace_id"]: r["question"] for r in store.list_runs(limit=None)}
        rows = [r for r in store.rows("verdicts", "ts") if r["scorer"] == "grammar.groups"]
    by_question = {runs[r["trace_id"]]: r for r in rows}
    assert by_question["question C phrasing 2"]["details"]["blame"] == "language_model"
    assert by_question["question C phrasing 3"]["failure_type"] == "grammar:retrieval"
    assert by_question["question B phrasing 2"]["label"] == "Gap"
    assert {r["label"] for r in rows} == {"Gap", "Robust", "Non-robust"}


def test_open_domain_trusts_the_judge(sqlite_url: str, results: Path) -> None:
    cli(sqlite_url, "import", "grammar-results", str(results), "--dataset", "g")
    base = scorers.get("grammar.groups")
    open_domain = dataclasses.replace(
        base, version="open", config={**base.config, "closed_domain": False}
    )
    with open_store(sqlite_url) as store:
        result = score_runs(store, [open_domain], dataset="g")
        assert result.tallies[("grammar.groups", "open")].added == 9
        rows = [r for r in store.rows("verdicts", "ts") if r["scorer_version"] == "open"]
    assert sum(1 for r in rows if r["passed"]) == 6  # A1 A2 B2 C1 C3 D1


def test_a_bad_record_names_its_index(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([RECORDS[0], {**RECORDS[1], "judgement": "Maybe"}]))
    database = ["--database", f"sqlite:///{tmp_path / 'a.db'}"]
    result = CliRunner().invoke(
        main, [*database, "import", "grammar-results", str(bad), "--dataset", "g"]
    )
    assert result.exit_code == 1
    assert "bad.json: record [1]: judgement 'Maybe' is not Correct" in result.output


def test_compare_two_conditions_over_the_same_groups(url: str, results: Path) -> None:
    longer = [
        record("A", "Incorrect", ["d1"], ["d1"], 11),
        record("A", "Incorrect", ["d1"], ["d1"], 12),
        record("B", "Incorrect", ["d2"], ["d2"], 11),
        record("B", "Incorrect", ["d2"], ["d2"], 12),
        record("C", "Correct", ["d3"], ["d3"], 11),
        record("C", "Correct", ["d3"], ["d3"], 12),
        record("C", "Correct", ["d3"], ["d3"], 13),
        record("D", "Correct", ["d4"], ["d4"], 11),
        record("D", "Correct", ["d4"], ["d4"], 12),
    ]
    other = results.with_name("long.json")
    other.write_text(json.dumps(longer))
    for path, name in ((results, "short"), (other, "long")):
        cli(url, "import", "grammar-results", str(path), "--dataset", name)
        cli(url, "score", "--dataset", name, "--scorer", "grammar.groups")
    out = cli(url, "grammar", "compare", "--a", "short", "--b", "long", "--format", "json")
    result = json.loads(out)
    assert (result["groups"], result["mutual_gap"]) == (4, 1)  # B is a gap in both
    assert (result["gap_only_a"], result["gap_only_b"]) == (0, 1)  # A only in the long form
    assert result["accuracy_a"] == pytest.approx(4 / 9)
    assert result["accuracy_b"] == pytest.approx(5 / 9)
    assert result["difference"] == pytest.approx(-1 / 9)
    low, high = result["interval"]
    assert low <= result["difference"] <= high
    text = cli(url, "grammar", "compare", "--a", "short", "--b", "long")
    assert "4 common groups; mutual gaps 1" in text and "difference -0.111" in text
