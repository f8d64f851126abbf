"""Datasets of your own cases: case files in, versions immutable, bad input refused whole and
named, datasets made from stored runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentdocket.cli import main
from agentdocket.demo import run_demo
from tests.helpers.db import cli

CASES = """\
description: weather questions
cases:
  - case_id: paris
    question: What is the weather in Paris?
    expected_plan: [get_weather]
    expected_calls:
      - tool: get_weather
        arguments: {city: Paris}
    reference_answer: It is 18 C in Paris.
  - case_id: rome
    question: What is the weather in Rome?
    question_type: conclusive
    group: europe
"""


def _fails(url: str, *args: str) -> str:
    result = CliRunner().invoke(main, ["--database", url, *args])
    assert result.exit_code == 1, result.output
    return result.output


def test_a_case_file_round_trips_and_versions_are_immutable(url: str, tmp_path: Path) -> None:
    path = tmp_path / "cases.yaml"
    path.write_text(CASES)
    assert "2 cases, added" in cli(
        url, "datasets", "add", str(path), "--name", "w", "--version", "1"
    )
    again = cli(url, "datasets", "add", str(path), "--name", "w", "--version", "1")
    assert "already stored" in again
    shown = json.loads(cli(url, "datasets", "show", "w@1", "--format", "json"))
    assert shown["description"] == "weather questions"
    assert [c["case_id"] for c in shown["cases"]] == ["paris", "rome"]
    assert shown["cases"][0]["expected_calls"] == [
        {"tool": "get_weather", "arguments": {"city": "Paris"}}
    ]
    # export, then add the export: the same content (JSON Lines carries no description)
    out = tmp_path / "export.yaml"
    cli(url, "datasets", "export", "w@1", "-o", str(out))
    assert "already stored" in cli(
        url, "datasets", "add", str(out), "--name", "w", "--version", "1"
    )
    lines = tmp_path / "export.jsonl"
    cli(url, "datasets", "export", "w@1", "--format", "jsonl", "-o", str(lines))
    cli(url, "datasets", "add", str(lines), "--name", "w-lines", "--version", "1")
    again_shown = json.loads(cli(url, "datasets", "show", "w-lines@1", "--format", "json"))
    assert again_shown["cases"] == shown["cases"]
    # other content under version 1: refused, naming the case and field
    path.write_text(CASES.replace("18 C", "19 C"))
    refused = _fails(url, "datasets", "add", str(path), "--name", "w", "--version", "1")
    assert "case 'paris', field 'reference_answer', differs" in refused
    # without --version: a version from the content
    added = cli(url, "datasets", "add", str(path), "--name", "w")
    listed = json.loads(cli(url, "datasets", "list", "--format", "json"))
    versions = sorted(d["version"] for d in listed if d["name"] == "w")
    assert "w-lines" in {d["name"] for d in listed}
    assert len(versions) == 2 and any(v in added for v in versions)


@pytest.mark.parametrize(
    "text,suffix,named",
    [
        ("- question: no id\n", "yaml", "cases.yaml:1: case [0] has no case_id"),
        (
            "- case_id: a\n- case_id: b\n- case_id: a\n",
            "yaml",
            "cases.yaml:3: case 'a': duplicate case_id (first at",
        ),
        (
            "- case_id: a\n  expected_calls:\n    - tool: t\n      arguments: [1, 2]\n",
            "yaml",
            "cases.yaml:1: case 'a': expected_calls[0].arguments: an object",
        ),
        ("- case_id: a\n  question: [unclosed\n", "yaml", "cases.yaml:3:1: not valid YAML"),
        ('{"case_id": "a", "expected_plan": "t"}\n', "jsonl", "cases.jsonl:1: case 'a': "),
        ('{"case_id": "a"}\n{"case_id": \n', "jsonl", "cases.jsonl:2:13: not valid JSON"),
    ],
)
def test_bad_case_files_are_refused_whole_and_named(
    url: str, tmp_path: Path, text: str, suffix: str, named: str
) -> None:
    path = tmp_path / f"cases.{suffix}"
    path.write_text(text)
    output = _fails(url, "datasets", "add", str(path), "--name", "bad")
    assert named in output and "nothing was stored" in output, output
    assert json.loads(cli(url, "datasets", "list", "--format", "json")) == []


@pytest.fixture
def demo_url(url: str, tmp_path: Path) -> str:
    run_demo(url, spool_dir=tmp_path / "spool")
    cli(url, "score", "--dataset", "concerts-demo", "--scorer", "planner.suffix_match")
    return url


def test_a_regression_dataset_from_stored_runs(demo_url: str) -> None:
    added = cli(
        demo_url,
        "datasets",
        "add",
        "--from-runs",
        "--name",
        "regressions",
        "--dataset",
        "concerts-demo",
        "--failure-type",
        "planner:no_plan",
    )
    shown = json.loads(cli(demo_url, "datasets", "show", "regressions", "--format", "json"))
    cases = shown["cases"]
    assert f"{len(cases)} cases, added" in added and len(cases) == 10  # the runs with no plan
    assert all(c["question"] and c["attributes"]["from_trace"] == c["case_id"] for c in cases)
    none = _fails(demo_url, "datasets", "add", "--from-runs", "--name", "x", "--agent", "nobody")
    assert "no stored run matches" in none
