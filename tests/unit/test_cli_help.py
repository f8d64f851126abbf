"""Every command's help has examples, and every example parses against the command it shows:
the options exist, the required arguments are given (nothing is run)."""

from __future__ import annotations

import copy
import shlex
from collections.abc import Iterator

import click
import pytest

from agentdocket.cli import main


def _commands(group: click.Group, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))
        else:
            yield (*path, name)


def _leaf(path: tuple[str, ...]) -> click.Command:
    command: click.Command = main
    for name in path:
        assert isinstance(command, click.Group)
        command = command.commands[name]
    return command


def _syntax_only(command: click.Command) -> click.Command:
    """The command with its paths' existence unchecked: an example names files of its own."""
    params = []
    for param in command.params:
        if isinstance(param.type, click.Path) and param.type.exists:
            param = copy.copy(param)
            param.type = copy.copy(param.type)
            param.type.exists = False  # type: ignore[union-attr]
        params.append(param)
    clone = copy.copy(command)
    clone.params = params
    return clone


def _examples(text: str) -> list[str]:
    """The command lines under ``Examples:`` (continued lines joined)."""
    lines = text.split("Examples:", 1)[1].splitlines() if "Examples:" in text else []
    out: list[str] = []
    for line in lines:
        line = line.strip()
        if not line:
            if out:
                break
            continue
        if out and out[-1].endswith("\\"):
            out[-1] = out[-1][:-1] + " " + line
        elif line.startswith("agentdocket"):
            out.append(line)
    return out


@pytest.mark.parametrize("path", list(_commands(main)), ids=" ".join)
def test_every_command_shows_examples_that_parse(path: tuple[str, ...]) -> None:
    command = _leaf(path)
    examples = _examples(command.help or "")
    assert examples, f"agentdocket {' '.join(path)} --help shows no example"
    for example in examples:
        words = shlex.split(example, comments=True)[1:]
        if ">" in words:  # the shell's redirection, not the command's
            words = words[: words.index(">")]
        # group options (--database, --plugin) stand before the command's path
        start = next(i for i in range(len(words)) if tuple(words[i : i + len(path)]) == path)
        main.make_context("agentdocket", [*words[:start], *path], resilient_parsing=True)
        _syntax_only(command).make_context(path[-1], words[start + len(path) :])


def test_no_example_runs_into_the_next_line() -> None:
    """A group's examples too: each continued line stays a line of its own in the help."""
    from click.testing import CliRunner

    for group in ("datasets", "dead-letters", "grammar", "import", "export", "runs"):
        text = CliRunner().invoke(main, [group, "--help"]).output
        assert all(
            "  --" not in line.strip() for line in text.splitlines() if "agentdocket" in line
        )


def test_the_version_is_printed() -> None:
    from click.testing import CliRunner

    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0 and result.output.startswith("agentdocket ")


def _makes_a_table(source: str) -> bool:
    """rich's ``Table(...)``, or the console's ``new_table(...)`` (rich imported then)."""
    return "Table(" in source or "new_table(" in source


def test_every_command_that_prints_a_table_takes_format_json() -> None:
    """What the command-line reference promises: the commands that print a rich table, by
    themselves or through a function of their module, take ``--format`` with ``json`` among
    its choices (``demo``, a tour, excepted)."""
    import inspect
    import sys

    tables = []
    for path in _commands(main):
        command = _leaf(path)
        if command.callback is None or path == ("demo",):
            continue
        callback = inspect.unwrap(command.callback)
        source = inspect.getsource(callback)
        module = sys.modules[callback.__module__]
        sources = {
            name: inspect.getsource(f)
            for name, f in vars(module).items()
            if inspect.isfunction(f) and f.__module__ == module.__name__
        }
        # the module's functions that print a table, themselves or through one that does
        printers = {name for name, text in sources.items() if _makes_a_table(text)}
        while more := {
            name
            for name, text in sources.items()
            if name not in printers and any(f"{p}(" in text for p in printers)
        }:
            printers |= more
        if not _makes_a_table(source) and not any(f"{name}(" in source for name in printers):
            continue
        tables.append(path)
        formats = [p for p in command.params if p.name == "fmt"]
        assert formats, path
        assert "json" in formats[0].type.choices, path  # type: ignore[attr-defined]
    # the detection sees tables printed directly, through a helper and through a helper's
    # helper (score: _report, then _print_tallies)
    assert {("runs", "list"), ("score",), ("compare",)} <= set(tables)


def test_listing_the_commands_imports_nothing_heavy() -> None:
    """`agentdocket --help` imports every command module; none of them imports the store,
    SQLAlchemy, Alembic, rich, NumPy or a model library at module level (what bench/startup.py
    times: --help within 3x a bare `import click`)."""
    import subprocess
    import sys

    heavy = ("sqlalchemy", "rich", "alembic", "numpy", "polars", "psycopg", "langchain_core")
    probe = (
        "import sys, agentdocket.cli; "
        f"print(sorted({{m for m in sys.modules if m.split('.')[0] in {heavy!r} "
        "or m.startswith('agentdocket.store')}))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout
