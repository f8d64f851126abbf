"""The IBM coalitions study's published numbers, reproduced exactly from its raw outputs through
the command line: `import ibm-coalitions`, `score`, `report --format json`
(../shared/datasets/ibm-coalitions: 8 single-model test cases and 2 fine-tuned models)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentdocket.cli import main
from agentdocket.store import open_store
from tests.helpers.db import SHARED, cli, migrated_sqlite, require_shared

IBM = SHARED / "datasets" / "ibm-coalitions"
SINGLE = sorted(p.name for p in (IBM / "single-models").iterdir()) if IBM.is_dir() else []
FINE_TUNED = sorted(p.name for p in (IBM / "fine-tuned").glob("*/")) if IBM.is_dir() else []
FINE_TUNED = [p for p in FINE_TUNED if (IBM / "fine-tuned" / p).is_dir()]


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Every IBM test case imported (twice) and scored (twice) into one SQLite store."""
    require_shared(IBM)
    url = migrated_sqlite(tmp_path_factory.mktemp("ibm") / "agentdocket.db")
    folders = [IBM / "single-models" / n for n in SINGLE]
    folders += [IBM / "fine-tuned" / n for n in FINE_TUNED]
    for folder in folders:
        cli(url, "import", "ibm-coalitions", str(folder), "--dataset", f"ibm-{folder.name}")
        again = cli(url, "import", "ibm-coalitions", str(folder), "--dataset", f"ibm-{folder.name}")
        assert " 0 events added" in again  # importing twice adds nothing
    cli(url, "score")
    with open_store(url) as store:
        verdicts = store.reader.counts()["verdicts"]
    cli(url, "score")  # scoring twice adds nothing
    with open_store(url) as store:
        assert store.reader.counts()["verdicts"] == verdicts == 5 * 114 * len(folders)
    yield url


def _report(url: str, dataset: str) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(
        cli(url, "report", "--dataset", dataset, "--format", "json")
    )
    return report


def _verdicts(url: str, dataset: str) -> dict[str, dict[str, Any]]:
    """For each run of the dataset: its attributes and each scorer's passed."""
    with open_store(url) as store:
        runs = {r["trace_id"]: r for r in store.reader.list_runs(dataset=dataset, limit=None)}
        out: dict[str, dict[str, Any]] = {}
        for v in store.reader.rows("verdicts", "verdict_id"):
            if v["trace_id"] in runs:
                run = runs[v["trace_id"]]
                entry = out.setdefault(v["trace_id"], {"run": run})
                entry[v["scorer"]] = v["passed"]
    return out


def _check_summary(report: dict[str, Any], published: dict[str, Any]) -> None:
    s = report["scorers"]
    assert s["planner.suffix_match"]["failed"] == published["planner_failure_count"]
    assert s["tools.slot_fill"]["failed"] == published["slot_filling_failure_count"]
    assert s["tools.procedural"]["passed"] == published["planner_and_slot_filling_pass_count"]
    planner = s["planner.suffix_match"]["metrics"]
    assert planner["extra_steps_total"] == published["additional_planner_steps_taken"]
    similarity = s["response.similarity"]["metrics"]
    # reference = the stub: the study's "precision" is our recall and vice versa
    assert abs(similarity["rougeL_recall"] - published["average_rougeL_precision"]) < 1e-9
    assert abs(similarity["rougeL_precision"] - published["average_rougeL_recall"]) < 1e-9
    assert abs(similarity["rougeL_fmeasure"] - published["average_rougeL_fmeasure"]) < 1e-9
    cosine = published["average_cosine_similarity_of_final_responses"]
    assert abs(similarity["cosine"] - cosine) < 1e-3


@pytest.mark.parametrize("test_case", SINGLE or ["(no data)"])
def test_single_model_test_cases_reproduce_the_published_summary(
    scored: str, test_case: str
) -> None:
    folder = IBM / "single-models" / test_case
    published = json.loads((folder / "final_summary_extra.json").read_text())
    report = _report(scored, f"ibm-{test_case}")
    assert report["runs"] == 114 and report["errored"] == 0
    _check_summary(report, published)
    # every test's verdicts, not only the counts
    tests = {t["test_run_uuid"]: t for s in published["results"] for t in s["tests"]}
    verdicts = _verdicts(scored, f"ibm-{test_case}")
    assert len(verdicts) == len(tests) == 114
    for entry in verdicts.values():
        test = tests[entry["run"]["attributes"]["test_run_uuid"]]
        assert (entry["planner.suffix_match"], entry["tools.slot_fill"]) == (
            test["planner_passed"],
            test["slot_filling_passed"],
        ), entry["run"]["case_id"]


@pytest.mark.parametrize("model", FINE_TUNED or ["(no data)"])
def test_fine_tuned_models_reproduce_their_published_results(scored: str, model: str) -> None:
    published = json.loads((IBM / "fine-tuned" / model / f"{model}-results.json").read_text())
    report = _report(scored, f"ibm-{model}")
    assert report["runs"] == 114
    assert report["errored"] == published["error_in_parsing_count"]
    _check_summary(report, published)
    planner = report["scorers"]["planner.suffix_match"]["metrics"]
    assert planner["extra_steps_mean"] == pytest.approx(
        published["average_additional_planner_steps"], abs=1e-12
    )
    tests = {
        (s["service_name"], i): t for s in published["results"] for i, t in enumerate(s["tests"])
    }
    for entry in _verdicts(scored, f"ibm-{model}").values():
        run = entry["run"]
        test = tests[(run["attributes"]["service"], run["attributes"]["instruction"])]
        assert (run["status"] == "error") == (str(test.get("errored")) == "True")
        if run["status"] != "error":
            assert (entry["planner.suffix_match"], entry["tools.slot_fill"]) == (
                test["planner_passed"],
                test["slot_filling_passed"],
            ), run["case_id"]


def test_a_fine_tuned_folder_without_expected_responses_is_refused(tmp_path: Path) -> None:
    require_shared(IBM)
    lone = tmp_path / "lonely-model"
    lone.mkdir()
    data = (IBM / "fine-tuned" / FINE_TUNED[0] / "api_data_0_11.json").read_bytes()
    (lone / "api_data_0_11.json").write_bytes(data)
    url = migrated_sqlite(tmp_path / "agentdocket.db")
    result = CliRunner().invoke(
        main, ["--database", url, "import", "ibm-coalitions", str(lone), "--dataset", "x"]
    )
    assert result.exit_code == 1
    assert "need --expected expected_final_responses.json" in result.output
