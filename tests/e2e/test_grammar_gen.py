"""GRAMMAR-Gen on the demo's concerts database: placeholders filled from the data, single-answer
queries kept, text variants grouped, and every answer re-executes to the same values."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentdocket.cli import main
from agentdocket.demo.database import build
from agentdocket.store import open_store
from tests.helpers.grammar_templates import SQL, TEXT

NICK = "SELECT age FROM singer WHERE name = '[singer.nickname]';"


@pytest.fixture
def concerts(tmp_path: Path) -> Path:
    return build(tmp_path / "concerts.db")


def _files(tmp_path: Path, sql: str = SQL, text: str = TEXT) -> tuple[Path, Path]:
    (tmp_path / "sql.txt").write_text(sql)
    (tmp_path / "text.yaml").write_text(text)
    return tmp_path / "sql.txt", tmp_path / "text.yaml"


def _generate(url: str, concerts: Path, sql: Path, text: Path) -> tuple[int, str]:
    args = ["--database", url, "grammar", "generate", "--db", f"sqlite:///{concerts}"]
    files = ["--sql-templates", str(sql), "--text-templates", str(text), "--dataset", "cg"]
    result = CliRunner().invoke(main, [*args, *files])
    return result.exit_code, result.output


def test_generated_cases_are_grounded_and_grouped(url: str, concerts: Path, tmp_path: Path) -> None:
    code, out = _generate(url, concerts, *_files(tmp_path))
    assert code == 0, out
    with sqlite3.connect(concerts) as db:
        names = db.execute("SELECT count(DISTINCT name) FROM singer").fetchone()[0]
        years = db.execute("SELECT count(DISTINCT year) FROM song").fetchone()[0]
        places = db.execute("SELECT count(DISTINCT location) FROM stadium").fetchone()[0]
        countries = db.execute("SELECT count(DISTINCT country) FROM singer").fetchone()[0]
        filled = names + places + countries + names * years  # the last one: a product
        assert f"4 SQL templates, {filled} filled queries" in out
        with open_store(url) as store:
            cases = store.datasets.get("cg").cases
        groups: dict[str, list[str]] = {}
        for case in cases:
            assert case.group == case.attributes["sql"]
            groups.setdefault(case.group, []).append(case.question or "")
            # grounded: the filled query re-executes to exactly the stored answer
            rows = db.execute(case.group).fetchall()
            assert len(rows) == 1
            assert ", ".join(str(v) for v in rows[0]) == case.reference_answer
    # every group holds the text variants of its template, filled with the same values
    ages = [qs for g, qs in groups.items() if g.startswith("SELECT age")]
    assert len(ages) == names and all(len(qs) == 2 for qs in ages)
    assert "How old is " in ages[0][0] and "What is the age of the singer " in ages[0][1]
    assert any(g.startswith("SELECT title") and " AND song.year = " in g for g in groups)
    assert "several answers" in out and "no answer" in out  # dropped, and counted


@pytest.mark.parametrize(
    ("sql", "text", "message"),
    [
        ("SELECT age FROM singer;\n", TEXT, "sql.txt:1: no '[Table.Column]' placeholder"),
        (SQL + SQL.splitlines()[1] + "\n", TEXT, "is there twice"),
        (
            SQL,
            TEXT.replace("How old is [singer.name]?", "How old?"),
            "does not use the placeholders",
        ),
        (NICK + "\n", f'"{NICK}": ["[singer.nickname]?"]\n', "placeholder [singer.nickname]"),
    ],
)
def test_bad_templates_are_clear_errors_and_store_nothing(
    sqlite_url: str, concerts: Path, tmp_path: Path, sql: str, text: str, message: str
) -> None:
    code, out = _generate(sqlite_url, concerts, *_files(tmp_path, sql, text))
    assert code == 1 and message in out and "nothing was stored" in out
    with open_store(sqlite_url) as store:
        assert store.reader.counts()["cases"] == 0
