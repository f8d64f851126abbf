"""Dependencies declared where they are imported (scripts/declared_imports.py, which
scripts/wheel-check runs): agentdocket's own source passes, and a source that imports an
undeclared distribution, or an extra's at start-up, is refused, naming the line."""

from __future__ import annotations

import functools
import importlib.util
import sys
import textwrap
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "declared_imports", ROOT / "scripts/declared_imports.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


def test_every_import_of_agentdocket_is_declared() -> None:
    problems, used = _script().check(ROOT)
    assert problems == []
    assert "genai-prices" in used["base"]  # costs: a base dependency (it was declared nowhere)
    assert {"starlette", "protobuf"} <= used["[serve]"]


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))


def test_an_undeclared_import_and_an_extra_at_start_up_are_refused(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "pyproject.toml": """
                [project]
                name = "agentdocket"
                dependencies = ["click>=8"]
                [project.optional-dependencies]
                serve = ["uvicorn"]
                embeddings = ["sentence-transformers"]
                test = ["pytest"]
                dev = ["agentdocket[test]"]
            """,
            "agentdocket/__init__.py": "",
            "agentdocket/cli.py": """
                import click
                from agentdocket.runtime import receiver
            """,
            "agentdocket/runtime/__init__.py": "",
            # serve's module, but loaded at start-up: `agentdocket --help` needs uvicorn
            "agentdocket/runtime/receiver.py": "import uvicorn\n",
            "agentdocket/costs/__init__.py": "",
            "agentdocket/costs/prices.py": """
                from typing import TYPE_CHECKING

                import genai_prices  # declared nowhere

                if TYPE_CHECKING:
                    import pytest  # never run: no problem

                def price():
                    import yaml  # declared nowhere, imported late: still a problem
                    try:
                        import langchain  # guarded, and yet not the judges' module
                    except ImportError:
                        pass
            """,
            # a development extra's distribution, imported by the package
            "agentdocket/scorers/checks.py": "def f():\n    import pytest\n",
        },
    )
    problems, _ = _script().check(tmp_path)
    text = "\n".join(problems)
    assert "agentdocket/runtime/receiver.py:1: uvicorn (uvicorn) is imported when" in text
    assert (
        "agentdocket/costs/prices.py:4: genai_prices comes from genai-prices, declared nowhere"
        in text
    )
    assert "agentdocket/costs/prices.py:10: yaml comes from pyyaml, declared nowhere" in text
    assert "agentdocket/costs/prices.py:12: langchain" in text
    assert (
        "agentdocket/scorers/checks.py:2: pytest comes from pytest, declared in [dev], [test]"
        in text
    )
    assert ":7:" not in text  # the TYPE_CHECKING block
    assert len(problems) == 5, text


def test_an_extra_neither_a_users_nor_a_developers_is_refused(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "pyproject.toml": """
                [project]
                name = "agentdocket"
                dependencies = []
                [project.optional-dependencies]
                gpu = ["torch"]
            """,
            "agentdocket/__init__.py": "",
            "agentdocket/cli.py": "",
        },
    )
    problems, _ = _script().check(tmp_path)
    assert len(problems) == 1 and "extra 'gpu'" in problems[0]
