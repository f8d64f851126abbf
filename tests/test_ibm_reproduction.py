"""The tool-use scorers reproduce the IBM coalitions study's published numbers exactly from its
raw outputs, imported through the store (../shared/datasets/ibm-coalitions)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agentdocket import scorers
from agentdocket.adapters.ibm_coalitions import load
from agentdocket.scorers.rouge import RougeL, rouge_l
from agentdocket.store import open_store

from .conftest import SHARED

SINGLE = SHARED / "datasets" / "ibm-coalitions" / "single-models"
CASES = sorted(p.name for p in SINGLE.iterdir()) if SINGLE.is_dir() else []


def _require_data() -> None:
    if not SINGLE.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"{SINGLE} is missing: CI must have ../shared beside the checkout")
        pytest.skip(f"{SINGLE} is absent (the shared datasets are not beside this checkout)")


@pytest.mark.parametrize("test_case", CASES or ["(no data)"])
def test_planner_and_slot_filling_reproduce_the_published_summary(
    test_case: str, tmp_path: Path
) -> None:
    _require_data()
    folder = SINGLE / test_case
    dataset, events = load(folder / "corrected_result.json", f"ibm-{test_case}")
    url = f"sqlite:///{tmp_path / 'agentdocket.db'}"
    with open_store(url) as store:
        store.import_all([dataset], events)
        again = store.import_all([dataset], events)
        assert again.inserted == 0  # importing twice adds nothing
        traces = [t for batch in store.iter_traces(dataset=dataset.name) for t in batch]
    published = json.loads((folder / "final_summary_extra.json").read_text())
    verdicts = {t["test_run_uuid"]: t for s in published["results"] for t in s["tests"]}
    planner = scorers.get("planner.suffix_match")
    slots = scorers.get("tools.slot_fill")
    counts = {"planner_failure": 0, "slot_filling_failure": 0, "both_passed": 0, "extra": 0}
    scored = 0
    rouge: list[RougeL] = []
    for trace in traces:
        assert trace.case is not None
        if trace.status == "error":
            continue  # left out of every average, as in the study
        scored += 1
        plan, slot = planner.verdict(trace), slots.verdict(trace)
        assert plan is not None and slot is not None
        # reference = the stub response (the study called rouge_score the other way round)
        rouge.append(rouge_l(trace.case.stub_response or "", trace.response or ""))
        counts["planner_failure"] += not plan.passed
        counts["slot_filling_failure"] += not slot.passed
        counts["both_passed"] += bool(plan.passed and slot.passed)
        if plan.passed:
            counts["extra"] += plan.details["extra_steps"]
        test = verdicts[trace.case.attributes["test_run_uuid"]]
        assert (plan.passed, slot.passed) == (
            test["planner_passed"],
            test["slot_filling_passed"],
        ), trace.case.case_id
    assert scored == len(verdicts) == 114
    mean = {
        k: sum(getattr(r, k) for r in rouge) / scored for k in ("precision", "recall", "fmeasure")
    }
    # the study's "precision" is LCS / stub length: our recall, and vice versa
    assert abs(mean["recall"] - published["average_rougeL_precision"]) < 1e-9
    assert abs(mean["precision"] - published["average_rougeL_recall"]) < 1e-9
    assert abs(mean["fmeasure"] - published["average_rougeL_fmeasure"]) < 1e-9
    assert counts == {
        "planner_failure": published["planner_failure_count"],
        "slot_filling_failure": published["slot_filling_failure_count"],
        "both_passed": published["planner_and_slot_filling_pass_count"],
        "extra": published["additional_planner_steps_taken"],
    }
