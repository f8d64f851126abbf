"""JSONL / Parquet interchange: strict validation with line numbers, exact round trips."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from agentdocket.cli import main
from agentdocket.events import Case, Dataset
from agentdocket.importers.interchange_export import export_records, write_jsonl
from agentdocket.store import open_store
from tests.helpers.db import migrated_sqlite, projections
from tests.helpers.factory import many_runs


def _cli(url: str, *args: str) -> str:
    result = CliRunner().invoke(main, ["--database", url, *args], obj={})
    if result.exit_code != 0:
        raise AssertionError(f"exit {result.exit_code}: {result.output}")
    return result.output


def _seed(url: str, n_runs: int) -> None:
    with open_store(url) as store:
        store.datasets.register(
            Dataset(
                "ds",
                "1",
                tuple(
                    Case(
                        case_id=f"c{i}",
                        question=f"q{i}",
                        expected_plan=["sql", "search"],
                        stub_response="stub",
                    )
                    for i in range(7)
                ),
            )
        )
        store.append(many_runs(n_runs, seed=3))


GOOD = {
    "run": {
        "agent": "a",
        "started_at": "2026-01-01T00:00:00Z",
        "status": "ok",
        "dataset": "d",
        "case_id": "c1",
    },
    "steps": [
        {"kind": "plan", "payload": {"steps": [{"tool": "sql"}]}},
        {"kind": "response", "payload": {"text": "4"}},
    ],
    "case": {"case_id": "c1", "expected_plan": ["sql"]},
}


def _write(path: Path, lines: list[object]) -> Path:
    path.write_text("\n".join(json.dumps(x) if not isinstance(x, str) else x for x in lines))
    return path


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("{not json", "line 3: not valid JSON"),
        ({"steps": []}, "line 3: missing required key 'run'"),
        ({**GOOD, "run": {"agent": "a"}}, "line 3.run: missing required field 'started_at'"),
        (
            {**GOOD, "steps": [{"kind": "plan", "payload": {"steps": "sql"}}]},
            "line 3.steps[0].payload.steps: expected an array",
        ),
        ({**GOOD, "steps": [{"kind": "teleport"}]}, "line 3.steps[0].kind: 'teleport'"),
        ({**GOOD, "trace_id": "short"}, "line 3.trace_id: 'short' is not a trace id"),
        (
            {**GOOD, "run": {**GOOD["run"], "started_at": "yesterday"}},  # type: ignore[dict-item]
            "line 3.run.started_at: 'yesterday' is not an ISO 8601 timestamp",
        ),
        (
            {**GOOD, "case": {"case_id": "c1", "expected_plan": ["other"]}},
            "line 3: case 'c1' of dataset 'd' differs from the one given on line 1",
        ),
    ],
)
def test_a_bad_line_is_rejected_with_its_number_and_nothing_is_imported(
    url: str, tmp_path: Path, bad: object, message: str
) -> None:
    other = {**GOOD, "run": {**GOOD["run"], "started_at": "2026-01-02T00:00:00Z"}}  # type: ignore[dict-item]
    path = _write(tmp_path / "runs.jsonl", [GOOD, other, bad, GOOD])
    result = CliRunner().invoke(main, ["--database", url, "import", "traces", str(path)], obj={})
    assert result.exit_code == 1
    assert message in result.output, result.output
    assert "nothing was imported" in result.output
    with open_store(url) as store:
        assert store.reader.counts() == dict.fromkeys(
            ("events", "runs", "steps", "verdicts", "judge_calls", "datasets", "cases"), 0
        )


def test_import_is_idempotent_and_fills_defaults(url: str, tmp_path: Path) -> None:
    path = _write(tmp_path / "runs.jsonl", [GOOD, "", GOOD])
    assert "1 runs" not in _cli(url, "import", "traces", str(path))
    out = _cli(url, "import", "traces", str(path))
    assert "0 events added" in out
    with open_store(url) as store:
        (run,) = store.reader.list_runs()
        assert (run["agent"], run["status"], run["n_steps"]) == ("a", "ok", 2)
        trace = store.reader.read_trace(run["trace_id"])
        assert trace is not None and trace.case is not None
        assert trace.case.expected_plan == ["sql"] and trace.response == "4"
        assert store.datasets.get("d").version == "1"


def test_ten_thousand_runs_round_trip_through_export(
    url: str, sqlite_url: str, tmp_path: Path
) -> None:
    # source: the parametrised database; target: always a fresh SQLite file of its own,
    # and PostgreSQL's own round trip is covered by the parametrisation of the source.
    _seed(url, 10_000)
    exported = tmp_path / "export.jsonl"
    _cli(url, "export", "traces", "--format", "jsonl", "-o", str(exported))
    assert sum(1 for _ in exported.open()) == 10_000
    target = migrated_sqlite(tmp_path / "copy.db")
    _cli(target, "import", "traces", str(exported))
    with open_store(url) as a, open_store(target) as b:
        assert a.reader.counts() == b.reader.counts()
        assert projections(a) == projections(b)
        # the events themselves are identical, ids, envelopes and payloads
        some = a.reader.trace_ids()[:50]
        assert [a.reader.events(t) for t in some] == [b.reader.events(t) for t in some]
        # and exporting the copy gives the same file
        again = tmp_path / "again.jsonl"
        with again.open("wb") as fh:
            write_jsonl(export_records(b), fh)
    assert [orjson.loads(x) for x in exported.open("rb")] == [
        orjson.loads(x) for x in again.open("rb")
    ]


def test_parquet_export_imports_back(url: str, tmp_path: Path) -> None:
    import polars as pl

    _seed(url, 30)
    out = tmp_path / "runs.parquet"
    _cli(url, "export", "traces", "--format", "parquet", "-o", str(out), "--dataset", "ds")
    frame = pl.read_parquet(out)
    assert frame.height == 30
    assert frame["status"].to_list().count("error") == 6
    assert frame.schema["started_at"] == pl.Datetime("us", "UTC")
    target = migrated_sqlite(tmp_path / "copy.db")
    _cli(target, "import", "traces", str(out))
    with open_store(url) as a, open_store(target) as b:
        assert projections(a) == projections(b)
