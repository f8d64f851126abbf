"""Nothing reaches further than it should: a TaskWeaver case's data files are read only inside
its folder and written only inside the examiner's working directory, eval_code sees only the
environment variables allowed it, and --require-isolation refuses to run without network
isolation. On the real TaskWeaver auto_eval files, against both databases."""

from __future__ import annotations

import base64
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
import yaml  # type: ignore[import-untyped]
from click.testing import CliRunner, Result

from agentdocket.cli import main
from agentdocket.events import Case
from agentdocket.examiner.harness import (
    EVAL_ENV,
    CaseRefused,
    examine,
    network_isolation,
    run_eval_code,
)
from agentdocket.store import open_store
from tests.helpers.db import SHARED, cli, database_text, require_shared
from tests.helpers.examined import echo_examiner, make

CASES = SHARED / "datasets" / "taskweaver-auto_eval"
SECRET = "SECRET-OUTSIDE-THE-FOLDER"


def _invoke(url: str, *args: str) -> Result:
    return CliRunner().invoke(main, ["--database", url, *args])


def _folder(tmp_path: Path, case: str, edit: dict[str, object]) -> Path:
    """A TaskWeaver folder in ``tmp_path``: the published prompt files and one published case
    (with its data files), its YAML updated with ``edit``."""
    require_shared(CASES)
    folder = tmp_path / "tw"
    (folder / "cases").mkdir(parents=True)
    for name in ("evaluator_prompt.yaml", "virtual_user_prompt.yaml"):
        shutil.copy(CASES / name, folder / name)
    shutil.copytree(CASES / "cases" / case, folder / "cases" / case)
    (case_file,) = (folder / "cases" / case).glob("*.yaml")
    data = yaml.safe_load(case_file.read_text())
    case_file.write_text(yaml.safe_dump({**data, **edit}, sort_keys=False))
    return folder


def _nothing_stored(url: str) -> None:
    with open_store(url) as store:
        counts = store.reader.counts()
    assert counts["datasets"] == counts["cases"] == counts["events"] == 0, counts
    assert SECRET not in database_text(url)


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink", "through_symlink"])
def test_a_data_file_outside_the_case_folder_fails_the_import(
    url: str, tmp_path: Path, kind: str
) -> None:
    (tmp_path / "x").write_text(SECRET)  # what the case tries to reach
    names = {
        "dotdot": "../../../x",  # from tw/cases/calc_mean up to tmp_path
        "absolute": str(tmp_path / "x"),
        "symlink": "link.txt",
        "through_symlink": "up/x",
    }
    folder = _folder(tmp_path, "calc_mean", {"data_files": ["demo_data.csv", names[kind]]})
    case_folder = folder / "cases" / "calc_mean"
    (case_folder / "link.txt").symlink_to(tmp_path / "x")
    (case_folder / "up").symlink_to(tmp_path, target_is_directory=True)
    result = _invoke(url, "import", "taskweaver-cases", str(folder), "--dataset", "tw")
    assert result.exit_code == 1, result.output
    why = {
        "dotdot": f"leads out of {case_folder} (through '..')",
        "absolute": f"is absolute; names are relative to {case_folder}",
        "symlink": f"leads out of {case_folder} (through a symlink, to {tmp_path / 'x'})",
        "through_symlink": f"leads out of {case_folder} (through a symlink, to {tmp_path / 'x'})",
    }
    message = " ".join(result.output.split())  # rich wraps long lines
    assert message == (
        f"Error: {case_folder / 'calc_mean.yaml'}: data_files[1]: {names[kind]!r} "
        f"{why[kind]}; nothing was imported"
    )
    _nothing_stored(url)


def test_names_that_stay_inside_the_case_folder_import(sqlite_url: str, tmp_path: Path) -> None:
    folder = _folder(
        tmp_path, "calc_mean", {"data_files": ["sub/../demo_data.csv", "same.csv", "in/d.csv"]}
    )
    case_folder = folder / "cases" / "calc_mean"
    (case_folder / "same.csv").symlink_to(case_folder / "demo_data.csv")
    (case_folder / "in").mkdir()
    (case_folder / "in" / "d.csv").write_text("Count\n1\n")
    cli(sqlite_url, "import", "taskweaver-cases", str(folder), "--dataset", "tw")
    with open_store(sqlite_url) as store:
        (case,) = store.datasets.get("tw").cases
    files = case.attributes["data_files"]
    original = base64.b64encode((CASES / "cases/calc_mean/demo_data.csv").read_bytes()).decode()
    assert files["sub/../demo_data.csv"] == files["same.csv"] == original
    assert base64.b64decode(files["in/d.csv"]) == b"Count\n1\n"


def test_a_case_whose_data_file_leads_out_of_the_working_directory_is_refused(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The harness's own check: a case from the store (or a program) rather than the importer,
    which refuses such a case already."""
    from agentdocket.tracer import configure, shutdown

    folder = _folder(tmp_path, "echo", {})
    cli(url, "import", "taskweaver-cases", str(folder), "--dataset", "tw")
    with open_store(url) as store:
        (imported,) = store.datasets.get("tw").cases
    work = tmp_path / "work"  # the working directory is made in it: ../x is tmp_path/work/x
    work.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(work))
    payload = base64.b64encode(SECRET.encode()).decode()
    configured = configure(url, spool_dir=tmp_path / "spool", set_global=False)
    try:
        for name in ("../x", str(tmp_path / "abs"), "a/../../x"):
            files = {"first.txt": payload, name: payload}
            case = Case(
                imported.case_id,
                imported.question,
                scoring_points=imported.scoring_points,
                attributes={**imported.attributes, "data_files": files},
            )
            with pytest.raises(CaseRefused) as refused:
                examine(
                    configured.tracer,
                    case,
                    make,
                    echo_examiner(),
                    "echo",
                    agent_name="echo",
                    dataset="tw",
                    dataset_version="1",
                )
            assert str(refused.value).startswith(f"case echo/echo: data_files: {name!r} ")
    finally:
        configured.flush()
        shutdown()
    assert not (work / "x").exists() and not (tmp_path / "abs").exists()
    assert list(work.iterdir()) == []  # the working directories are gone
    with open_store(url) as store:
        assert store.reader.list_runs(limit=None) == []
    assert SECRET not in database_text(url)


SEES = "import os, sys, json\nprint(json.dumps(sorted(os.environ)), file=sys.stderr)\nsys.exit(1)"


def _seen(workdir: Path, names: tuple[str, ...] = ()) -> list[str]:
    """The environment variable names an eval_code process sees (it prints them and fails: its
    last line is the error recorded)."""
    result = run_eval_code(SEES, [], workdir, env_names=names)
    assert not result.passed and result.error is not None
    return list(json.loads(result.error))


def test_eval_code_sees_only_the_allowed_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = {
        "OPENAI_API_KEY": "sk-not-for-eval-code",
        "AGENTDOCKET_DATABASE_URL": "postgresql+psycopg://u:pw@db/agentdocket",
        "AWS_SECRET_ACCESS_KEY": "not-for-eval-code",
        "HTTPS_PROXY": "http://proxy:3128",
        "CASE_VAR": "from-the-case",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    for name in ("TZ", "TMPDIR"):
        monkeypatch.setenv(name, "UTC" if name == "TZ" else str(tmp_path))
    seen = _seen(tmp_path)
    assert set(seen) <= set(EVAL_ENV), seen
    assert {"PATH", "TZ", "TMPDIR"} <= set(seen)
    assert set(_seen(tmp_path, ("CASE_VAR",))) - set(EVAL_ENV) == {"CASE_VAR"}
    # the caller keeps its own environment
    assert os.environ["OPENAI_API_KEY"] == "sk-not-for-eval-code"


def _examine(url: str, folder: Path, *args: str) -> Result:
    return _invoke(
        url,
        "examine",
        "--agent",
        "tests.helpers.examined:make",
        "--cases",
        str(folder),
        "--examiner",
        "python:tests.helpers.examined:echo_examiner",
        "--judge",
        "python:tests.helpers.examined:yes_judge",
        *args,
    )


CHECKS_ENV = """\
import os
assert chat_history[-1].content == "Hello World"
assert os.environ.get("CASE_VAR") == "from-the-case", "no CASE_VAR"
assert os.environ.get("FLAG_VAR") == "from-the-flag", "no FLAG_VAR"
for name in ("OPENAI_API_KEY", "AGENTDOCKET_DATABASE_URL", "UNLISTED_VAR"):
    assert name not in os.environ, name + " reached eval_code"
"""


def test_a_case_and_pass_env_add_names_and_nothing_else_reaches_eval_code(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    points = [{"score_point": "the agent says Hello World", "weight": 1, "eval_code": CHECKS_ENV}]
    folder = _folder(tmp_path, "echo", {"eval_env": ["CASE_VAR"], "scoring_points": points})
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-eval-code")
    monkeypatch.setenv("AGENTDOCKET_DATABASE_URL", url)
    for name, value in [("CASE_VAR", "the-case"), ("FLAG_VAR", "the-flag"), ("UNLISTED_VAR", "-")]:
        monkeypatch.setenv(name, f"from-{value}")
    done = _examine(url, folder, "--pass-env", "FLAG_VAR", "--format", "json")
    assert done.exit_code == 0, done.output
    assert "examining echo/echo (eval_code also sees CASE_VAR, FLAG_VAR)" in done.stderr
    (row,) = json.loads(done.stdout)
    assert (row["eval_passed"], row["eval_total"], row["score"]) == (1, 1, 1.0)
    # without the flag, FLAG_VAR stays out and the check says so
    without = _examine(url, folder, "--format", "json")
    (row,) = json.loads(without.stdout)
    assert (row["eval_passed"], row["score"]) == (0, 0.0)
    with open_store(url) as store:
        verdicts = [
            r for r in store.reader.rows("verdicts", "ts") if r["scorer"] == "examiner.points"
        ]
    reasons = sorted(v["details"]["points"][0]["reason"] for v in verdicts)
    assert reasons == ["AssertionError: no FLAG_VAR", "passed"]
    bad = _examine(url, folder, "--pass-env", "NOT-A-NAME")
    assert bad.exit_code == 2 and "'NOT-A-NAME' is not an environment variable name" in bad.output


def test_a_case_listing_a_bad_eval_env_fails_the_import(sqlite_url: str, tmp_path: Path) -> None:
    folder = _folder(tmp_path, "echo", {"eval_env": ["OK", "A=B"]})
    result = _invoke(sqlite_url, "import", "taskweaver-cases", str(folder), "--dataset", "tw")
    assert result.exit_code == 1
    case_file = folder / "cases" / "echo" / "echo.yaml"
    assert f"{case_file}: eval_env[1]: 'A=B' is not a variable name" in " ".join(
        result.output.split()
    )
    _nothing_stored(sqlite_url)


def _no_unshare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A PATH without ``unshare``: network isolation is unavailable."""
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert network_isolation() == ([], "`unshare` is not on the PATH")


def test_require_isolation_refuses_to_run_without_it_and_nothing_is_recorded(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _folder(tmp_path, "echo", {})
    _no_unshare(tmp_path, monkeypatch)
    refused = _examine(url, folder, "--require-isolation")
    assert refused.exit_code == 1
    assert refused.output == (
        "Error: network isolation for eval_code is required, and unavailable: `unshare` is not "
        "on the PATH; nothing was examined\n"
    )
    _nothing_stored(url)


def test_without_isolation_the_examination_says_so(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _folder(tmp_path, "echo", {})
    _no_unshare(tmp_path, monkeypatch)
    table = _examine(url, folder)
    assert table.exit_code == 0, table.output
    assert (
        "warning: eval_code ran with network (not isolated) in echo/echo: `unshare` is not on "
        "the PATH (--require-isolation refuses to run so)"
    ) in table.stderr
    as_json = _examine(url, folder, "--format", "json")
    (row,) = json.loads(as_json.stdout)
    assert row["network_isolated"] is False and row["eval_passed"] == 1
    with open_store(url) as store:
        verdicts = [
            r for r in store.reader.rows("verdicts", "ts") if r["scorer"] == "examiner.points"
        ]
    assert [v["details"]["network_isolated"] for v in verdicts] == [False, False]
    assert verdicts[0]["details"]["points"][0]["network_isolated"] is False


def test_with_isolation_require_isolation_runs(url: str, tmp_path: Path) -> None:
    if not network_isolation()[0]:
        pytest.skip(f"no network isolation here: {network_isolation()[1]}")
    folder = _folder(tmp_path, "echo", {})
    done = _examine(url, folder, "--require-isolation", "--format", "json")
    assert done.exit_code == 0, done.output
    assert "not isolated" not in done.stderr
    (row,) = json.loads(done.stdout)
    assert row["network_isolated"] is True and row["score"] == 1.0
    with open_store(url) as store:
        (verdict,) = [
            r for r in store.reader.rows("verdicts", "ts") if r["scorer"] == "examiner.points"
        ]
    assert verdict["details"]["network_isolated"] is True
