"""The command line: demo, listing and showing runs, schemas, configuration errors."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import agentdocket
from agentdocket.cli import main
from agentdocket.store import open_store
from tests.helpers.db import cli
from tests.helpers.factory import nested_run

AGENTDOCKET = str(Path(sys.executable).parent / "agentdocket")  # the installed console script


def _demo(cwd: Path) -> str:
    """Run the installed `agentdocket demo` in ``cwd`` with no database configured."""
    env = {k: v for k, v in os.environ.items() if k != "AGENTDOCKET_DATABASE_URL"}
    done = subprocess.run(
        [AGENTDOCKET, "demo"], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


def test_demo_records_runs_of_three_strategies_through_the_tracer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the next steps write where they are run
    out = _demo(tmp_path)
    assert f"sqlite:///{tmp_path / 'agentdocket.db'}" in out
    assert "recorded 30 runs (10 questions x sequential, iterative, no-interaction)" in out
    listing = out.split("dataset concerts-demo")[0]
    for strategy in ("sequential", "iterative", "no-interaction"):
        assert listing.count(f" {strategy} ") == 10
    store = open_store(f"sqlite:///{tmp_path / 'agentdocket.db'}")
    runs = store.reader.list_runs(dataset="concerts-demo", limit=None)
    assert len(runs) == 30 and all(r["status"] == "ok" for r in runs)
    # then scored by every scorer, and the report printed by strategy
    assert store.reader.counts()["verdicts"] == 30 * 6
    assert "Loading weights" not in out
    report = json.loads(
        cli(
            f"sqlite:///{tmp_path / 'agentdocket.db'}",
            *("report", "--dataset", "concerts-demo", "--by", "strategy", "--format", "json"),
        )
    )
    planner = {
        strategy: group["scorers"]["planner.suffix_match"]
        for strategy, group in report["groups"].items()
    }
    assert [planner["sequential"][k] for k in ("scored", "passed", "failed")] == [10, 10, 0]
    assert [planner["no-interaction"][k] for k in ("scored", "passed", "failed")] == [10, 0, 10]
    # the cases came along; the runs' costs, priced by the demo's price file, close the report
    assert len(store.datasets.get("concerts-demo", "1").cases) == 10
    store.close()
    assert "cost: $0.002516 for 83 model calls, $0.000084 a run" in out
    # a second demo records the same runs again, kept once: the same report, word for word
    again = _demo(tmp_path)
    assert again.split("dataset concerts-demo")[1] == out.split("dataset concerts-demo")[1]
    with open_store(f"sqlite:///{tmp_path / 'agentdocket.db'}") as store:
        assert store.reader.counts()["runs"] == 30
    # every next step it points to works as printed
    steps = [line.split(": ", 2)[2] for line in out.splitlines() if line.startswith("next: ")]
    assert len(steps) == 5
    for step in steps:
        args = step.split()[1:]
        cli(f"sqlite:///{tmp_path / 'agentdocket.db'}", *args)


def test_demo_with_a_judge_calibrates_it_against_exact_match(url: str) -> None:
    """A judge that says Match to everything, in the conclusive format only: the interpretive
    questions' replies do not parse, and calibrate says so beside its figures."""
    judge = "python:tests.helpers.examined:match_judge"
    out = cli(url, "demo", "--judge", judge)
    assert f"judging the answers with answer.reference through {judge}" in out
    with open_store(url) as store:
        cases = store.datasets.get("concerts-demo", "1").cases
    interpretive = 3 * sum(c.question_type == "interpretive" for c in cases)
    assert 0 < interpretive < 30
    decided = 30 - interpretive
    assert f"answer.reference=1 as a judge of answer.exact: {decided} runs" in out
    assert (
        f"the judge decided {decided} of the 30 runs the truth decided; no decision on "
        f"{interpretive} (judge:unparseable {interpretive}), which the figures leave out"
    ) in out
    exact = json.loads(cli(url, "report", "--dataset", "concerts-demo", "--format", "json"))
    scorers = exact["scorers"]
    assert scorers["answer.reference"]["unparseable"] == interpretive
    assert scorers["answer.exact"]["unparseable"] == 0
    assert (scorers["answer.exact"]["passed"], scorers["answer.exact"]["failed"]) == (17, 13)
    calibrated = json.loads(
        cli(
            url,
            *("calibrate", "--judge", "answer.reference", "--against", "answer.exact"),
            "--format",
            "json",
        )
    )
    # every decided run judged passing: precision is the share the truth passes
    assert calibrated["fn"] == calibrated["tn"] == 0
    assert calibrated["precision"] == calibrated["tp"] / decided
    assert calibrated["judge_coverage"] == {
        "decided": decided,
        "undecided": interpretive,
        "undecided_kinds": {"judge:unparseable": interpretive},
    }


def test_demo_refuses_a_judge_it_cannot_load_before_recording(url: str) -> None:
    done = CliRunner().invoke(main, ["--database", url, "demo", "--judge", "local:nothing"])
    assert done.exit_code == 2 and "no local model 'local:nothing'" in done.output
    with open_store(url) as store:
        assert store.reader.counts()["runs"] == 0


def _sample(runner: CliRunner, url: str) -> None:
    sample = Path(agentdocket.__file__).parent / "data" / "sample_traces.jsonl"
    done = runner.invoke(main, ["--database", url, "import", "traces", str(sample)], obj={})
    assert done.exit_code == 0, done.output


def test_runs_show_gives_a_run_with_its_events(url: str) -> None:
    runner = CliRunner()
    _sample(runner, url)
    shown = json.loads(cli(url, "runs", "show", "d069", "--format", "json"))
    assert shown["run"]["question"] == "Which stadium hosted the most concerts in 2024?"
    errors = [e["payload"].get("error") for e in shown["events"] if e["kind"] == "sql.executed"]
    assert "no such column: c.yr" in errors
    kinds = [e["kind"] for e in shown["events"]]
    assert kinds == [
        "run.started",
        "plan",
        "tool.called",
        "sql.executed",
        "tool.returned",
        "tool.called",
        "sql.executed",
        "tool.returned",
        "llm.called",
        "response",
        "run.finished",
    ]
    listed = json.loads(cli(url, "runs", "list", "--agent", "nobody", "--format", "json"))
    assert (listed["total"], listed["runs"]) == (0, [])  # the total counts what the filter kept
    missing = runner.invoke(main, ["--database", url, "runs", "show", "ffff"], obj={})
    assert missing.exit_code == 1 and "no run with a trace id starting 'ffff'" in missing.output


def test_demo_runs_are_readable_with_runs_show(url: str, tmp_path: Path) -> None:
    runner = CliRunner()
    done = runner.invoke(
        main,
        ["--database", url, "demo", "--concerts-db", str(tmp_path / "concerts.db")],
        obj={},
    )
    assert done.exit_code == 0, done.output
    assert (tmp_path / "concerts.db").exists()
    with open_store(url) as store:
        runs = store.reader.list_runs(dataset="concerts-demo", limit=None)
        for run in runs:
            shown = json.loads(cli(url, "runs", "show", run["trace_id"], "--format", "json"))
            assert shown["run"]["question"] == run["question"]
            assert shown["case"]["case_id"] == run["case_id"]
        q03 = next(r for r in runs if r["case_id"] == "q03" and r["strategy"] == "sequential")
    shown = json.loads(cli(url, "runs", "show", q03["trace_id"], "--format", "json"))
    errors = [e["payload"]["error"] for e in shown["events"] if e["kind"] == "tool.returned"]
    assert "OperationalError: no such column: c.concert_year" in errors
    [response] = [e["payload"]["text"] for e in shown["events"] if e["kind"] == "response"]
    assert response == "The average age of the singers who performed in 2023 is 34.8."
    # the table: every verdict with its failure type and why, and no sentinel order numbers
    failing = 0
    for run in runs:
        events = json.loads(cli(url, "runs", "show", run["trace_id"], "--format", "json"))
        failed = [
            e["payload"]
            for e in events["events"]
            if e["kind"] == "verdict" and e["payload"].get("failure_type")
        ]
        if not failed:
            continue
        failing += 1
        text = cli(url, "runs", "show", run["trace_id"], "--width", "400")
        assert "verdicts" in text and str(2**31 - 1) not in text
        for verdict in failed:
            assert verdict["failure_type"] in text
            assert (verdict.get("rationale") or "-").split()[0] in text
    assert failing


def test_schemas_are_printed_as_json_schema() -> None:
    out = CliRunner().invoke(main, ["schemas", "tool.called"], obj={}).output
    schema = json.loads(out)
    assert schema["schema_version"] == 1
    assert schema["required"] == ["call_id", "tool"]


def test_a_missing_sqlite_file_is_named_not_created(tmp_path: Path) -> None:
    """A mistyped path is an error naming it, not a new empty database; `migrate` creates."""
    path = tmp_path / "nowhere" / "x.db"
    url = f"sqlite:///{path}"
    for command in (["runs", "list"], ["serve"], ["report", "--dataset", "d"]):
        result = CliRunner().invoke(main, ["--database", url, *command], obj={})
        assert result.exit_code == 1, (command, result.output)
        assert f"{path}: no such agentdocket database" in result.output
    assert not path.parent.exists()
    path.parent.mkdir()
    cli(url, "migrate")
    assert json.loads(cli(url, "runs", "list", "--format", "json"))["total"] == 0


def test_bad_database_url_is_a_clear_error() -> None:
    result = CliRunner().invoke(main, ["--database", "mysql://x/y", "runs", "list"], obj={})
    assert result.exit_code == 1
    assert "unsupported database 'mysql'" in result.output
    closed = CliRunner().invoke(
        main, ["--database", "postgresql+psycopg://u:secret@127.0.0.1:1/x", "runs", "list"], obj={}
    )
    assert closed.exit_code == 1 and "secret" not in closed.output


def test_retention_says_what_would_go_then_drops_it(url: str) -> None:
    """Runs from a year before now and from today: `--keep 90d` takes the old month only."""
    import json
    import random
    from datetime import UTC, datetime, timedelta

    from agentdocket.store import open_store
    from tests.helpers.factory import run_events

    now = datetime.now(UTC)
    rng = random.Random(5)
    old, new = run_events(rng, start=now - timedelta(days=365)), run_events(rng, start=now)
    with open_store(url) as store:
        store.append(old + new)
    label = (now - timedelta(days=365)).strftime("%Y-%m")
    dry = json.loads(cli(url, "retention", "--keep", "90d", "--dry-run", "--format", "json"))
    dropped = [m for m in dry["dropped"] if m["runs"]]
    assert [(m["month"], m["runs"], m["events"]) for m in dropped] == [(label, 1, len(old))]
    assert dry["dry_run"] and dry["trace_id"] is None
    assert dropped[0]["datasets"] == {"ds": 1}
    # nothing goes without a question: elsewhere than at a terminal, only with --yes
    asked = CliRunner().invoke(main, ["--database", url, "retention", "--keep", "90d"])
    assert asked.exit_code == 1 and "give --yes to go on (nothing was changed)" in asked.output
    assert "takes their runs away for good, by dataset: ds 1" in asked.output
    # a dataset kept out keeps its months, and says so
    kept = CliRunner().invoke(
        main, ["--database", url, "retention", "--keep", "90d", "--keep-dataset", "ds", "--yes"]
    )
    assert kept.exit_code == 0 and f"kept {label}: 1 of its runs are of datasets kept" in (
        kept.output
    )
    with open_store(url) as store:
        assert store.reader.run(old[0].trace_id) is not None
    text = cli(url, "retention", "--keep", "90d", "--yes")
    assert f"dropped {label}: 1 runs, {len(old)} events" in text
    assert "recorded as retention.applied in trace" in text
    with open_store(url) as store:
        assert store.reader.run(old[0].trace_id) is None
        assert store.reader.run(new[0].trace_id) is not None
    again = json.loads(cli(url, "retention", "--keep", "90d", "--format", "json", "--yes"))
    assert [m for m in again["dropped"] if m["runs"]] == []


def test_a_run_of_thousands_of_nested_spans_shows_its_first_and_last_steps(
    sqlite_url: str,
) -> None:
    """5,000 tool spans, each nested in the last: the table holds the first 90 and the last 10
    of the default 100 steps, a row for the 9,902 between, and what kinds the steps are;
    --steps 0 shows every one, indented without walking the chain again for each."""
    events = nested_run(random.Random(3), 5_000)
    with open_store(sqlite_url) as store:
        store.append(events)
    trace = events[0].trace_id
    text = cli(sqlite_url, "runs", "show", trace[:12], "--width", "60")
    rows = [line for line in text.splitlines() if line.startswith("│")]
    shown = [int(r.split("│")[1]) for r in rows if r.split("│")[1].strip().isdigit()]
    assert shown == [*range(90), *range(9_992, 10_002)]
    assert "9,902 more steps" in text
    assert "10,002 steps (5,000 tool.called, 5,000 tool.returned, 1 run.started, 1" in text
    everything = cli(sqlite_url, "runs", "show", trace, "--steps", "0", "--width", "60")
    assert "more steps" not in everything
    assert sum(1 for line in everything.splitlines() if "tool.returned" in line) == 5_000
