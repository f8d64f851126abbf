"""Importers on the real files: ToolAlpaca evaluation sets as datasets of cases, and clear
errors (naming the place) for files that are not what they claim, with nothing written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from agentdocket.cli import main
from agentdocket.events import ExpectedCall
from agentdocket.store import open_store
from tests.helpers.db import SHARED, migrated_sqlite, require_shared

TOOLALPACA = SHARED / "datasets" / "toolalpaca"
IBM = SHARED / "datasets" / "ibm-coalitions"


def _invoke(url: str, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["--database", url, *args])
    return result.exit_code, result.output


def test_toolalpaca_eval_real_becomes_a_dataset_and_bad_inputs_are_reported(url: str) -> None:
    require_shared(TOOLALPACA)
    path = str(TOOLALPACA / "eval_real.json")
    code, out = _invoke(url, "import", "toolalpaca", path, "--dataset", "toolalpaca-real")
    assert code == 0, out
    warnings = [line for line in out.splitlines() if line.startswith("warning:")]
    assert [w.split(":")[1].strip() for w in warnings] == [
        f"CurrencyBeacon instruction {i} step 0" for i in (4, 8, 9, 10)
    ]
    assert "dataset toolalpaca-real (114 cases), 0 runs" in out
    with open_store(url) as store:
        dataset = store.datasets.get("toolalpaca-real")
    cases = {c.case_id: c for c in dataset.cases}
    assert len(cases) == 114 and len({c.attributes["api"] for c in cases.values()}) == 11
    nager = cases["Nager.Date:0"]
    assert nager.question == "Can you check if today is a public holiday in China?"
    assert nager.expected_plan == ["PublicHolidayIsTodayPublicHoliday"]
    assert nager.expected_calls == [
        ExpectedCall("PublicHolidayIsTodayPublicHoliday", {"countryCode": "CN"})
    ]
    broken = cases["CurrencyBeacon:4"].expected_calls[0].arguments
    assert isinstance(broken, str) and '"symbols": "symbols"' in broken  # kept raw
    again_code, again = _invoke(url, "import", "toolalpaca", path, "--dataset", "toolalpaca-real")
    assert again_code == 0 and "0 events added" in again


def test_toolalpaca_eval_simulated_keeps_its_placeholder_inputs_raw() -> None:
    require_shared(TOOLALPACA)
    from agentdocket.importers import toolalpaca

    dataset, problems = toolalpaca.load(TOOLALPACA / "eval_simulated.json", "sim")
    assert len(dataset.cases) == 100 and len(problems) == 32
    first = problems[0]
    assert (first.api, first.instruction, first.step) == ("AniAPI", 0, 1)
    assert "${animeId from searchAnime}" in first.raw


def test_a_toolalpaca_file_without_golden_answers_names_the_api(tmp_path: Path) -> None:
    require_shared(TOOLALPACA)
    apis = json.loads((TOOLALPACA / "eval_simulated.json").read_text())
    del apis[3]["Golden_Answers"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(apis))
    url = migrated_sqlite(tmp_path / "agentdocket.db")
    code, out = _invoke(url, "import", "toolalpaca", str(bad), "--dataset", "sim")
    assert code == 1
    assert f"API {apis[3]['Name']!r} has no Golden_Answers list; nothing was imported" in out
    with open_store(url) as store:
        assert store.reader.counts()["cases"] == 0


def test_a_broken_ibm_result_names_its_service_and_index_and_nothing_is_imported(
    tmp_path: Path,
) -> None:
    require_shared(IBM)
    services = json.loads(
        (IBM / "single-models" / "mistral_all" / "corrected_result.json").read_text()
    )
    services[2]["results"][3]["recieved_executor_step_and_parameters"] = [{"inputs": {}}]
    folder = tmp_path / "broken_model"
    folder.mkdir()
    (folder / "corrected_result.json").write_text(json.dumps(services))
    url = migrated_sqlite(tmp_path / "agentdocket.db")
    code, out = _invoke(url, "import", "ibm-coalitions", str(folder), "--dataset", "ibm-x")
    assert code == 1
    name = services[2]["service"]
    assert f"corrected_result.json: {name} result [3].received[0]" in out
    assert "nothing was imported" in out
    with open_store(url) as store:
        assert store.reader.counts()["events"] == 0 and store.reader.counts()["datasets"] == 0


def test_another_agents_results_join_the_dataset_and_cannot_change_its_cases(
    tmp_path: Path,
) -> None:
    """Every model answered the same tests: a second model's results add runs to the same
    dataset; results whose tests differ cannot change its cases."""
    require_shared(IBM)
    url = migrated_sqlite(tmp_path / "agentdocket.db")
    first = str(IBM / "single-models" / "mistral_all")
    second = IBM / "single-models" / "mixtral-all"
    assert _invoke(url, "import", "ibm-coalitions", first, "--dataset", "ibm")[0] == 0
    assert _invoke(url, "import", "ibm-coalitions", str(second), "--dataset", "ibm")[0] == 0
    with open_store(url) as store:
        assert {r["agent"] for r in store.reader.list_runs(limit=None)} == {
            "mistral_all",
            "mixtral-all",
        }
        assert store.reader.counts()["datasets"] == 1
    services = json.loads((second / "corrected_result.json").read_text())
    services[0]["results"][0]["expected_planner_output"] = ["somethingElse"]
    changed = tmp_path / "changed-model"
    changed.mkdir()
    (changed / "corrected_result.json").write_text(json.dumps(services))
    code, out = _invoke(url, "import", "ibm-coalitions", str(changed), "--dataset", "ibm")
    assert code == 1 and "already exists with different cases" in out
    assert "field 'expected_plan', differs" in out and "nothing was imported" in out
    with open_store(url) as store:
        assert {r["agent"] for r in store.reader.list_runs(limit=None)} == {
            "mistral_all",
            "mixtral-all",
        }


def test_report_formats_and_groups(tmp_path: Path) -> None:
    require_shared(IBM)
    url = migrated_sqlite(tmp_path / "agentdocket.db")
    folder = str(IBM / "single-models" / "mistral_all")
    assert _invoke(url, "import", "ibm-coalitions", folder, "--dataset", "ibm")[0] == 0
    code, out = _invoke(
        url, "score", "--scorer", "planner.suffix_match", "--scorer", "tools.slot_fill"
    )
    assert code == 0, out
    code, csv_text = _invoke(url, "report", "--dataset", "ibm", "--by", "agent", "--format", "csv")
    assert code == 0, csv_text
    lines = csv_text.splitlines()
    assert lines[0].startswith("group,runs,errored,scorer,version,scored,passed,failed,pass_rate")
    planner = [line.split(",") for line in lines if ",planner.suffix_match," in line]
    assert [row[0] for row in planner] == ["(all)", "mistral_all"]
    published = json.loads(
        (IBM / "single-models" / "mistral_all" / "final_summary_extra.json").read_text()
    )
    assert int(planner[1][7]) == published["planner_failure_count"]
    grouped = json.loads(_invoke(url, "report", "--by", "agent", "--format", "json")[1])
    assert grouped["dataset"] == "(all)" and grouped["by"] == "agent"
    assert grouped["groups"]["mistral_all"]["scorers"] == grouped["scorers"]
    code, out = _invoke(url, "report", "--dataset", "nope")
    assert code == 1 and "no dataset 'nope'" in out
    # every verdict as a flat table for analysis
    import polars as pl

    target = tmp_path / "verdicts.parquet"
    code, out = _invoke(url, "export", "verdicts", "--dataset", "ibm", "-o", str(target))
    assert code == 0 and "exported 228 verdicts" in out
    frame = pl.read_parquet(target)
    planner_rows = frame.filter(pl.col("scorer") == "planner.suffix_match")
    assert planner_rows.height == 114 and set(planner_rows["agent"]) == {"mistral_all"}
    passed = planner_rows.filter(pl.col("passed"))
    assert passed["detail_extra_steps"].sum() == published["additional_planner_steps_taken"]


def _ibm_copy(tmp_path: Path, name: str, change: Any) -> Path:
    """A real corrected_result.json, changed by ``change(services)``, in a folder ``name``."""
    require_shared(IBM)
    services = json.loads(
        (IBM / "single-models" / "mistral_all" / "corrected_result.json").read_text()
    )
    change(services)
    folder = tmp_path / name
    folder.mkdir()
    (folder / "corrected_result.json").write_text(json.dumps(services))
    return folder


def test_results_repeating_a_test_run_uuid_are_refused_or_handled_as_asked(
    tmp_path: Path,
) -> None:
    def repeat(services: list[dict[str, Any]]) -> None:
        # the first service's results given twice more, and one result of the second
        first = services[0]["results"]
        services.append({**services[0], "results": [*first, *first]})
        services[1]["results"].append(services[1]["results"][0])

    folder = _ibm_copy(tmp_path, "repeating", repeat)
    repeats = 2 * len(json.loads((folder / "corrected_result.json").read_text())[0]["results"]) + 1
    url = migrated_sqlite(tmp_path / "agentdocket.db")
    code, out = _invoke(url, "import", "ibm-coalitions", str(folder), "--dataset", "ibm")
    assert code == 1 and "nothing was imported" in " ".join(out.split())
    assert f"{repeats} results repeat the test_run_uuid of an earlier one" in " ".join(out.split())
    with open_store(url) as store:
        assert store.reader.counts()["events"] == 0

    code, out = _invoke(url, "import", "ibm-coalitions", str(folder), "--duplicates", "first")
    assert code == 0 and "skipped, the first result of each id kept" in " ".join(out.split())
    with open_store(url) as store:
        assert len(store.reader.list_runs(limit=None)) == 114
    code, out = _invoke(
        url, "import", "ibm-coalitions", str(folder), "--duplicates", "each", "--agent", "each"
    )
    assert code == 0 and "each made a run of its own" in " ".join(out.split())
    with open_store(url) as store:
        assert len(store.reader.list_runs(agent="each", limit=None)) == 114 + repeats
        assert len(store.datasets.get("ibm-coalitions").cases) == 114


def test_a_byte_that_is_not_utf8_is_named_by_its_offset(tmp_path: Path) -> None:
    folder = _ibm_copy(tmp_path, "latin1", lambda services: None)
    path = folder / "corrected_result.json"
    raw = path.read_bytes()
    at = raw.index(b'"input_prompt"', 5_000) + len('"input_prompt": "')
    path.write_bytes(raw[:at] + b"caf\xe9 " + raw[at:])
    line = raw.count(b"\n", 0, at) + 1
    column = at + 3 - (raw.rfind(b"\n", 0, at) + 1) + 1
    url = migrated_sqlite(tmp_path / "agentdocket.db")
    code, out = _invoke(url, "import", "ibm-coalitions", str(folder), "--dataset", "ibm")
    assert code == 1
    assert f"not UTF-8 at byte {at + 3:,} (line {line}, column {column}): byte 0xe9" in " ".join(
        out.split()
    )
    path.write_bytes(raw[:at] + b'"' + raw[at:])  # a quote too many: the JSON breaks there
    code, out = _invoke(url, "import", "ibm-coalitions", str(folder), "--dataset", "ibm")
    assert code == 1 and f"not JSON at byte {at + 1:,}" in " ".join(out.split())
