"""The documentation stays true: the command-line reference is generated from the commands and
current, the README stays a first page, and the docs cite documents by title."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_cli_reference_is_current() -> None:
    spec = importlib.util.spec_from_file_location(
        "cli_reference", ROOT / "scripts/cli_reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (ROOT / "docs/cli.md").read_text() == module.reference(), (
        "docs/cli.md is not current: run .venv/bin/python scripts/cli_reference.py"
    )


def test_the_schema_page_is_the_migrations_schema() -> None:
    """docs/schema.md is generated from a database the migrations built, as simonw/llm's
    schema page is: a migration that changes the schema changes the page, or this fails."""
    spec = importlib.util.spec_from_file_location("schema_page", ROOT / "scripts/schema_page.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = module.page()
    assert "## `events`" in text and "| `run_month` |" in text
    assert (ROOT / "docs/schema.md").read_text() == text, (
        "docs/schema.md is not current: run .venv/bin/python scripts/schema_page.py"
    )


def test_the_readme_is_a_short_first_page() -> None:
    text = (ROOT / "README.md").read_text()
    assert len(text) < 8000
    lines = [line for line in text.splitlines() if not line.startswith("<!--")]  # unrendered
    first = lines[3:5]
    assert first[0].startswith("scripts/demo") and first[1].startswith("scripts/test")


def test_source_documents_are_cited_by_title_not_file_name() -> None:
    pattern = re.compile(r"\b00[0-9]_[0-9a-f]{16}\.txt\b")
    cited = [
        str(p.relative_to(ROOT))
        for folder in ("agentdocket", "docs", "bench", "dashboards")  # tests open the files
        for p in (ROOT / folder).rglob("*")
        if p.is_file()
        and p.suffix in {".py", ".md", ".txt", ".yaml"}
        and pattern.search(p.read_text())
    ]
    cited += ["README.md"] if pattern.search((ROOT / "README.md").read_text()) else []
    assert cited == []
