"""The command line: demo, listing and showing runs, schemas, configuration errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from agentdocket.cli import main

AGENTDOCKET = str(Path(sys.executable).parent / "agentdocket")  # the installed console script


def _demo(cwd: Path) -> str:
    """Run the installed `agentdocket demo` in ``cwd`` with no database configured."""
    env = {k: v for k, v in os.environ.items() if k != "AGENTDOCKET_DATABASE_URL"}
    done = subprocess.run(
        [AGENTDOCKET, "demo"], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


def test_demo_imports_the_sample_and_lists_it(tmp_path: Path) -> None:
    out = _demo(tmp_path)
    assert f"sqlite:///{tmp_path / 'agentdocket.db'}" in out
    assert "imported 6 sample runs (50 events new, 0 already there)" in out
    assert out.count("concerts-qa 0.1") == 6
    assert "(0 events new, 50 already there)" in _demo(tmp_path)


def test_runs_show_prints_a_timeline(url: str) -> None:
    runner = CliRunner()
    assert runner.invoke(main, ["--database", url, "demo"], obj={}).exit_code == 0
    shown = runner.invoke(main, ["--database", url, "runs", "show", "d069"], obj={})
    assert shown.exit_code == 0, shown.output
    text = shown.output
    assert "Which stadium hosted the most concerts in 2024?" in text
    assert "error: no such column: c.yr" in text
    kinds = [line.split("│")[3].strip() for line in text.splitlines() if line.count("│") == 5]
    kinds = [k for k in kinds if k]
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
    listed = runner.invoke(main, ["--database", url, "runs", "list", "--agent", "nobody"], obj={})
    assert "runs (0 of 6)" in listed.output
    missing = runner.invoke(main, ["--database", url, "runs", "show", "ffff"], obj={})
    assert missing.exit_code == 1 and "no run with a trace id starting 'ffff'" in missing.output


def test_schemas_are_printed_as_json_schema() -> None:
    out = CliRunner().invoke(main, ["schemas", "tool.called"], obj={}).output
    schema = json.loads(out)
    assert schema["schema_version"] == 1
    assert schema["required"] == ["call_id", "tool"]


def test_bad_database_url_is_a_clear_error() -> None:
    result = CliRunner().invoke(main, ["--database", "mysql://x/y", "runs", "list"], obj={})
    assert result.exit_code == 1
    assert "unsupported database 'mysql'" in result.output
    closed = CliRunner().invoke(
        main, ["--database", "postgresql+psycopg://u:secret@127.0.0.1:1/x", "runs", "list"], obj={}
    )
    assert closed.exit_code == 1 and "secret" not in closed.output
