"""A first day with the command line, as a new user has it: a bare path names an SQLite
database, commands that write make the default one, nothing is dropped without a question,
ids and totals read one way, and every command that shows a cost shows the same one."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import agentdocket
from agentdocket.cli import main
from agentdocket.store import open_store
from tests.helpers.db import cli

AGENTDOCKET = str(Path(sys.executable).parent / "agentdocket")
SAMPLE = Path(agentdocket.__file__).parent / "data" / "sample_traces.jsonl"
CASES = "- case_id: paris\n  question: What is the weather in Paris?\n"


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "AGENTDOCKET_DATABASE_URL"}
    return subprocess.run(
        [AGENTDOCKET, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_a_bare_path_is_an_sqlite_database_and_writing_makes_it(tmp_path: Path) -> None:
    (tmp_path / "cases.yaml").write_text(CASES)
    made = _run(tmp_path, "--database", "mine.db", "datasets", "add", "cases.yaml", "--name", "s")
    assert made.returncode == 0, made.stderr
    assert f"created the agentdocket database {tmp_path / 'mine.db'}" in made.stderr
    listed = _run(tmp_path, "--database", "mine.db", "datasets", "list", "--format", "json")
    assert [d["name"] for d in json.loads(listed.stdout)] == ["s"]
    # the default database, made by the first command that writes, as the README has it
    default = _run(tmp_path, "datasets", "add", "cases.yaml", "--name", "s")
    assert default.returncode == 0 and (tmp_path / "agentdocket.db").is_file()
    # reading a database that is not there is refused, naming it, and makes nothing
    typo = _run(tmp_path, "--database", "mnie.db", "runs", "list")
    assert typo.returncode == 1 and "mnie.db: no such agentdocket database" in typo.stderr
    assert not (tmp_path / "mnie.db").exists()
    # a case file that does not exist makes no database either
    nothing = _run(
        tmp_path, "--database", "other.db", "datasets", "add", "nope.yaml", "--name", "s"
    )
    assert nothing.returncode == 2 and not (tmp_path / "other.db").exists()


def test_migrating_down_past_data_asks_and_reading_does_not_remake_it(sqlite_url: str) -> None:
    runner = CliRunner()
    assert (
        runner.invoke(main, ["--database", sqlite_url, "import", "traces", str(SAMPLE)]).exit_code
        == 0
    )
    down = runner.invoke(main, ["--database", sqlite_url, "migrate", "base", "--down"])
    assert down.exit_code == 1, down.output
    assert "holds 50 events; migrating down to base drops" in " ".join(down.output.split())
    assert "give --yes to go on (nothing was changed)" in down.output
    with open_store(sqlite_url) as store:  # nothing was changed
        assert store.reader.counts()["runs"] == 6
    gone = runner.invoke(main, ["--database", sqlite_url, "migrate", "base", "--down", "--yes"])
    assert gone.exit_code == 0 and "schema at revision base" in gone.output
    after = runner.invoke(main, ["--database", sqlite_url, "runs", "list"])
    assert after.exit_code == 1 and "has no agentdocket schema" in after.output


def test_totals_honour_filters_and_short_ids_are_read_everywhere(url: str) -> None:
    runner = CliRunner()
    assert runner.invoke(main, ["--database", url, "import", "traces", str(SAMPLE)]).exit_code == 0
    listed = json.loads(cli(url, "runs", "list", "--agent", "nobody", "--format", "json"))
    assert (listed["total"], listed["runs"]) == (0, [])
    every = json.loads(cli(url, "runs", "list", "--limit", "2", "--format", "json"))
    assert (every["total"], len(every["runs"])) == (6, 2)
    short = every["runs"][0]["trace_id"][:8]
    assert "label stored" in cli(
        url, "feedback", "add", short, "--rubric", "thumbs", "--value", "up", "--author", "ana"
    )
    given = json.loads(cli(url, "feedback", "list", "--format", "json"))
    assert [g["trace_id"] for g in given] == [every["runs"][0]["trace_id"]]
    unknown = runner.invoke(
        main,
        [
            "--database",
            url,
            "feedback",
            "add",
            "ffff",
            "--rubric",
            "thumbs",
            "--value",
            "up",
            "--author",
            "ana",
        ],
    )
    assert unknown.exit_code == 1 and "no run with a trace id starting 'ffff'" in unknown.output


def test_every_command_shows_the_cost_the_last_refresh_made(url: str, tmp_path: Path) -> None:
    """`runs show` and `runs list` show what `costs refresh --prices FILE` priced, as `report`
    charges it, not a cost of their own from another price book."""
    runner = CliRunner()
    assert runner.invoke(main, ["--database", url, "import", "traces", str(SAMPLE)]).exit_code == 0
    prices = tmp_path / "prices.toml"
    prices.write_text('[[price]]\nmodel = "*"\ninput_mtok = 1.0\noutput_mtok = 2.0\n')
    cli(url, "costs", "refresh", "--prices", str(prices))
    listed = json.loads(cli(url, "runs", "list", "--format", "json"))
    priced = [r for r in listed["runs"] if r.get("calls") and not r["unpriced_calls"]]
    assert priced  # (one of the sample's calls has no output token count: unpriced)
    run = priced[0]
    shown = json.loads(cli(url, "runs", "show", run["trace_id"][:10], "--format", "json"))
    assert shown["costs"]["total_usd"] == pytest.approx(run["cost_usd"])
    assert shown["costs"]["unpriced_calls"] == 0
    table = cli(url, "runs", "show", run["trace_id"][:10])
    assert "unpriced" not in table.split("cost:")[1].split("\n")[0]
    report = json.loads(cli(url, "report", "--format", "json"))
    assert report["cost"]["total_usd"] == pytest.approx(sum(r["cost_usd"] for r in priced))
    assert report["cost"]["unpriced_calls"] == sum(r["unpriced_calls"] for r in listed["runs"])


def test_serve_on_a_taken_port_says_so_before_anything_else(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _run(tmp_path, "serve", "--port", str(port), "--grpc-port", "0")
    assert done.returncode != 0
    assert f"cannot listen for OTLP/HTTP on 127.0.0.1:{port}" in done.stderr
    assert "receiving OTLP" not in done.stdout + done.stderr


def test_retention_of_nothing_is_refused_with_a_reason(sqlite_url: str) -> None:
    done = CliRunner().invoke(main, ["--database", sqlite_url, "retention", "--keep", "0d"])
    assert done.exit_code == 2 and "0 would keep nothing" in done.output
