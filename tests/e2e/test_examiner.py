"""The examiner harness on the real TaskWeaver auto_eval cases: import, conversations recorded
through the tracer, eval_code checks, the judge's weighted points."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentdocket.examiner.harness import run_eval_code
from agentdocket.store import open_store
from tests.helpers.db import SHARED, cli, require_shared

CASES = SHARED / "datasets" / "taskweaver-auto_eval"


def test_the_23_cases_import_with_their_points_and_data_files(url: str) -> None:
    require_shared(CASES)
    out = cli(url, "import", "taskweaver-cases", str(CASES), "--dataset", "tw")
    assert "dataset tw (23 cases)" in out
    # two published cases (file_chain, list_files) name three data files they do not hold
    assert out.count("warning:") == 6 and out.count("file_A.txt") == 2
    with open_store(url) as store:
        cases = {c.case_id: c for c in store.datasets.get("tw").cases}
    assert len(cases) == 23
    echo = cases["echo/echo"]
    assert echo.question == 'The task is to echo the word "Hello World"'
    assert [p.weight for p in echo.scoring_points] == [1.0, 1.0]
    assert echo.scoring_points[0].eval_code and echo.scoring_points[1].eval_code is None
    assert echo.attributes["stop_keyword"] == "TASK_FINISHED"
    assert set(cases["calc_mean/calc_mean"].attributes["data_files"]) == {"demo_data.csv"}
    chain = cases["file_chain/planner_react_file_chain"].attributes
    assert chain["missing_data_files"] == ["file_A.txt", "file_B.txt", "file_C.txt"]
    assert "{response_schema}" not in echo.attributes["judge_instruction"]
    again = cli(url, "import", "taskweaver-cases", str(CASES), "--dataset", "tw")
    assert "dataset tw (23 cases)" in again


def test_eval_code_passes_fails_times_out_and_reports_syntax_errors(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("7")
    history = [("examiner", "Hello World"), ("agent", "Hello World")]
    ok = run_eval_code(
        "assert isinstance(chat_history[-1], HumanMessage)\n"
        "assert chat_history[-1].content == 'Hello World'\n"
        "assert open('a.txt').read() == '7'",
        history,
        tmp_path,
    )
    assert ok.passed and ok.error is None
    failed = run_eval_code("assert chat_history[-1].content == 'Bye', 'not bye'", history, tmp_path)
    assert not failed.passed and failed.error == "AssertionError: not bye"
    slow = run_eval_code("while True: pass", history, tmp_path, timeout_s=1)
    assert not slow.passed and slow.error == "timed out after 1s"
    broken = run_eval_code("assert (", history, tmp_path)
    assert not broken.passed and "SyntaxError" in (broken.error or "")
    offline = run_eval_code(
        "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=2)", history, tmp_path
    )
    assert not offline.passed or not offline.network_isolated


def _examine(url: str, *args: str) -> str:
    return cli(
        url, "examine", "--agent", "tests.helpers.examined:make", "--cases", str(CASES), *args
    )


def test_an_echo_agent_is_examined_end_to_end(url: str) -> None:
    require_shared(CASES)
    out = _examine(
        url,
        "--case",
        "echo/echo",
        "--examiner",
        "python:tests.helpers.examined:echo_examiner",
        "--judge",
        "python:tests.helpers.examined:yes_judge",
    )
    row = next(line for line in out.splitlines() if "│ echo/echo" in line)
    assert [c.strip() for c in row.split("│")[2:6]] == ["2", "keyword", "1/1", "1.00"]
    with open_store(url) as store:
        (run,) = store.reader.list_runs(dataset="taskweaver-auto_eval", limit=None)
        assert run["status"] == "ok" and run["strategy"] == "examined"
        events = store.reader.events(run["trace_id"])
        said = [(e.payload["role"], e.payload["content"]) for e in events if e.kind == "message"]
        assert said == [
            ("examiner", "Hello World"),
            ("agent", "Hello World"),
            ("examiner", "TASK_FINISHED"),
        ]
        (verdict,) = [
            r for r in store.reader.rows("verdicts", "ts") if r["scorer"] == "examiner.points"
        ]
    points = verdict["details"]["points"]
    assert [(p["by"], p["hit"]) for p in points] == [("eval_code", True), ("llm", True)]
    assert verdict["score"] == 1.0 and verdict["details"]["total_weight"] == 2.0


def test_examiner_stop_conditions_and_a_stateful_case(url: str, tmp_path: Path) -> None:
    require_shared(CASES)
    scripts = tmp_path / "scripted_examiners.py"
    scripts.write_text(
        "from langchain_core.language_models.fake_chat_models import FakeListChatModel\n"
        "def chatty(): return FakeListChatModel(responses=['tell me more'] * 10)\n"
        "def crash(): return FakeListChatModel(responses=['explode'])\n"
        "def files(): return FakeListChatModel(responses=['save a.txt=7', 'save b.txt=7',"
        " 'TASK_FINISHED'])\n"
        'def no(): return FakeListChatModel(responses=[\'{"reason": "-", "is_hit": "no"}\']'
        " * 50)\n"
    )
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        chatty = _examine(
            url,
            "--case",
            "echo/echo",
            "--max-rounds",
            "3",
            "--examiner",
            "python:scripted_examiners:chatty",
            "--judge",
            "python:scripted_examiners:no",
        )
        row = next(line for line in chatty.splitlines() if "│ echo/echo" in line)
        # 3 rounds, then the limit; the eval_code fails (the agent said 'tell me more') and
        # the judge says no: 0 of 2
        assert [c.strip() for c in row.split("│")[2:6]] == ["3", "max_rounds", "0/1", "0.00"]
        crash = _examine(
            url,
            "--case",
            "echo/echo",
            "--examiner",
            "python:scripted_examiners:crash",
            "--judge",
            "python:scripted_examiners:no",
        )
        assert "agent_error" in crash
        stateful = _examine(
            url,
            "--case",
            "stateful/execution_stateful",
            "--examiner",
            "python:scripted_examiners:files",
            "--judge",
            "python:scripted_examiners:no",
        )
        row = next(line for line in stateful.splitlines() if "│ stateful" in line)
        assert [c.strip() for c in row.split("│")[2:5]] == ["3", "keyword", "1/1"]
    finally:
        sys.path.remove(str(tmp_path))
    with open_store(url) as store:
        statuses = sorted(r["status"] for r in store.reader.list_runs(limit=None))
    assert statuses == ["error", "ok", "ok"]


def test_all_23_cases_run_end_to_end_and_the_report_shows_normalized_scores(
    sqlite_url: str,
) -> None:
    require_shared(CASES)
    out = _examine(
        sqlite_url,
        "--examiner",
        "python:tests.helpers.examined:polite_examiner",
        "--judge",
        "python:tests.helpers.examined:yes_judge",
    )
    assert "examined 23 cases" in out
    report = json.loads(
        cli(sqlite_url, "report", "--dataset", "taskweaver-auto_eval", "--format", "json")
    )
    points = report["scorers"]["examiner.points"]
    assert report["runs"] == 23 and points["scored"] == 23
    # the judge says yes to every statement; the echo agent fails the two eval_code checks
    # (echo: it repeats the request, not "Hello World"; stateful: it wrote no files)
    with open_store(sqlite_url) as store:
        scores = {
            r["trace_id"]: r["score"]
            for r in store.reader.rows("verdicts", "ts")
            if r["scorer"] == "examiner.points"
        }
        by_case = {r["case_id"]: scores[r["trace_id"]] for r in store.reader.list_runs(limit=None)}
    assert by_case["echo/echo"] == 0.5 and by_case["stateful/execution_stateful"] == 0.0
    assert sum(1 for s in by_case.values() if s == 1.0) == 21
    mean = points["metrics"]["normalized_score"]
    assert mean == pytest.approx((21 + 0.5) / 23)
