"""`agentdocket compare` on the IBM study: every single-model test case imported into one
dataset, scored, and compared pairwise; its discordant counts and exact McNemar p-values equal
those computed from the study's own per-test verdicts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scipy import stats as scipy_stats

from agentdocket.store import open_store
from tests.helpers.db import SHARED, cli, migrated_sqlite, require_shared

IBM = SHARED / "datasets" / "ibm-coalitions" / "single-models"
SINGLE = sorted(p.name for p in IBM.iterdir()) if IBM.exists() else []
# our scorer -> the study's per-test verdict
PUBLISHED = {
    "planner.suffix_match": "planner_passed",
    "tools.slot_fill": "slot_filling_passed",
    "tools.procedural": "planner_and_slot_filling_passed",
}
PAIRS = [
    ("mistral_all", "mixtral-all"),
    ("codellama34-all", "mistral_all"),
    ("mistral_all", "mistral_mixtral_flan_mistral_mistral"),
    ("mixtral-all", "llama2_mixtral_flan_mixtral_mistral"),
]


@pytest.fixture(scope="module")
def one_dataset(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    require_shared(IBM)
    url = migrated_sqlite(tmp_path_factory.mktemp("compare") / "agentdocket.db")
    for name in SINGLE:  # the default dataset, ibm-coalitions: one for every model
        cli(url, "import", "ibm-coalitions", str(IBM / name))
    cli(url, "score", "--dataset", "ibm-coalitions", *(f"--scorer={s}" for s in PUBLISHED))
    yield url


def _published(url: str, agent: str) -> dict[str, dict[str, Any]]:
    """The study's per-test verdicts of ``agent``, by our case id (through each run's
    test_run_uuid)."""
    tests = {
        t["test_run_uuid"]: t
        for s in json.loads((IBM / agent / "final_summary_extra.json").read_text())["results"]
        for t in s["tests"]
    }
    with open_store(url) as store:
        runs = [r for r in store.scoring.case_runs("ibm-coalitions") if r["agent"] == agent]
    assert len(runs) == 114
    return {r["case_id"]: tests[r["attributes"]["test_run_uuid"]] for r in runs}


def test_all_eight_models_share_one_dataset(one_dataset: str) -> None:
    datasets = json.loads(cli(one_dataset, "datasets", "list", "--format", "json"))
    [ibm] = [d for d in datasets if d["name"] == "ibm-coalitions"]
    assert ibm["n_cases"] == 114
    with open_store(one_dataset) as store:
        assert len(store.scoring.case_runs("ibm-coalitions")) == 114 * len(SINGLE) == 912


def _compare(url: str, baseline: str, candidate: str, *more: str) -> str:
    return cli(
        url,
        "compare",
        "--dataset",
        "ibm-coalitions",
        "--baseline",
        baseline,
        "--candidate",
        candidate,
        *more,
    )


@pytest.mark.parametrize("baseline,candidate", PAIRS)
def test_compare_equals_the_published_verdicts(
    one_dataset: str, baseline: str, candidate: str
) -> None:
    result = json.loads(_compare(one_dataset, baseline, candidate, "--format", "json"))
    a, b = _published(one_dataset, baseline), _published(one_dataset, candidate)
    assert set(a) == set(b)
    for scorer, field in PUBLISHED.items():
        s = result["scorers"][scorer]
        improved = sum(1 for c in a if not a[c][field] and b[c][field])
        regressed = sum(1 for c in a if a[c][field] and not b[c][field])
        assert (s["improved"], s["regressed"]) == (improved, regressed), scorer
        exact = (
            1.0
            if improved + regressed == 0
            else scipy_stats.binomtest(improved, improved + regressed, 0.5).pvalue
        )
        assert s["p_value"] == pytest.approx(exact, rel=1e-12), scorer
        assert s["baseline"]["passed"] == sum(1 for c in a if a[c][field])
        assert s["candidate"]["passed"] == sum(1 for c in b if b[c][field])
        assert s["baseline"]["n"] == s["candidate"]["n"] == s["paired"] == 114
        low, high = s["difference"]["ci_low"], s["difference"]["ci_high"]
        assert low <= s["difference"]["estimate"] <= high
        assert s["verdict"] in ("better", "worse", "no detectable difference")
    markdown = _compare(one_dataset, baseline, candidate, "--format", "markdown")
    assert markdown.startswith(f"### agentdocket: `{candidate}` against `{baseline}`")
    assert "| planner.suffix_match |" in markdown


def test_unknown_selections_and_the_regression_gate(one_dataset: str, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from agentdocket.cli import main

    runner = CliRunner()
    base = ["--database", one_dataset, "compare", "--dataset", "ibm-coalitions"]
    missing = runner.invoke(main, [*base, "--baseline", "nobody", "--candidate", "mistral_all"])
    assert missing.exit_code == 2 and "selects no run" in missing.output
    assert "mistral_all" in missing.output  # the agents it does have
    # codellama34-all does much worse than mistral_all on slot filling: a regression
    gate = runner.invoke(
        main,
        [
            *base,
            "--baseline",
            "mistral_all",
            "--candidate",
            "codellama34-all",
            "--scorer",
            "tools.slot_fill",
            "--fail-on-regression",
        ],
    )
    report = json.loads(
        _compare(
            one_dataset,
            "mistral_all",
            "codellama34-all",
            "--scorer",
            "tools.slot_fill",
            "--format",
            "json",
        )
    )
    worse = report["scorers"]["tools.slot_fill"]["verdict"] == "worse"
    assert gate.exit_code == (1 if worse else 0), gate.output


def test_a_scorer_upgraded_between_the_sides_is_read_at_the_version_both_have(
    one_dataset: str,
) -> None:
    import dataclasses

    from agentdocket import scorers
    from agentdocket.scorers.runner import score_runs

    newer = dataclasses.replace(scorers.get("planner.suffix_match", "1"), version="9")
    scorers.register(newer)
    try:
        with open_store(one_dataset) as store:
            only = [
                r["trace_id"]
                for r in store.scoring.case_runs("ibm-coalitions")
                if r["agent"] == "mixtral-all"
            ]
            score_runs(store, [newer], trace_ids=only, refresh_dashboards=False)
        both = json.loads(
            _compare(
                one_dataset,
                "mistral_all",
                "mixtral-all",
                "--scorer",
                "planner.suffix_match",
                "--format",
                "json",
            )
        )["scorers"]["planner.suffix_match"]
        assert both["version"] == "1" and both["paired"] == 114
        # pinned at a version that judged only one side: an error naming the versions there
        # are, not "no data" passed off as no regression
        from click.testing import CliRunner

        from agentdocket.cli import main

        pinned = CliRunner().invoke(
            main,
            [
                "--database",
                one_dataset,
                "compare",
                "--dataset",
                "ibm-coalitions",
                "--baseline",
                "mistral_all",
                "--candidate",
                "mixtral-all",
                "--version",
                "planner.suffix_match=9",
                "--fail-on-regression",
            ],
        )
        assert pinned.exit_code == 2, pinned.output
        assert "version 9 judged no run of the baseline" in pinned.output
        assert "(it has 9, 1)" in pinned.output
    finally:
        scorers.unregister("planner.suffix_match", "9")
