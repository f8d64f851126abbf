"""Write docs/cli.md, the command-line reference, from the click commands themselves.

    .venv/bin/python scripts/cli_reference.py          # write it
    .venv/bin/python scripts/cli_reference.py --check  # exit 1 when it is not current

Every command's ``--help``, rendered at a fixed width, in command order.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "cli.md"
sys.path.insert(0, str(ROOT))

HEADER = """# Command-line reference

Generated from the commands by `scripts/cli_reference.py` (a test checks that it is current).
Every command takes the global `--database URL` (or `AGENTDOCKET_DATABASE_URL`) before its
name; every command that prints a table (all but `demo`, a guided tour) also takes
`--format json`, and every command's help ends with examples.

"""


def _walk(
    command: click.Command, path: list[str], parent: click.Context | None
) -> Iterator[tuple[str, str]]:
    ctx = click.Context(
        command, info_name=path[-1], parent=parent, terminal_width=100, max_content_width=100
    )
    yield " ".join(path), command.get_help(ctx)
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from _walk(sub, [*path, name], ctx)


def reference() -> str:
    from agentdocket.cli import main

    parts = [HEADER]
    for name, text in _walk(main, ["agentdocket"], None):
        parts.append(f"## `{name}`\n\n```text\n{text.rstrip()}\n```\n\n")
    return "".join(parts).rstrip() + "\n"


def main() -> int:
    text = reference()
    if "--check" in sys.argv[1:]:
        if OUT.read_text() != text:
            print(f"{OUT} is not current: run scripts/cli_reference.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
