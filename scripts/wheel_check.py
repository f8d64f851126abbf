"""scripts/wheel-check's parts written in Python, one per subcommand.

Run with the development environment's Python (.venv/bin/python):
  extras              the extras a user installs for a feature, one a line (those that
                      scripts/declared_imports.py lists in FEATURES); exit 1 on an extra it
                      does not know as a user's or a developer's
  copy DEST           copy the files git would commit (tracked and new, not ignored) to DEST:
                      the source as a fresh clone has it, without build/, *.egg-info or caches
  contents SRC WHEEL SDIST
                      every file of SRC/agentdocket is in the wheel and in the sdist, and the
                      wheel holds nothing else (but its .dist-info)

Run with the fresh virtualenv's Python, agentdocket installed there:
  help                every command's --help (the click tree from agentdocket.cli.main, every
                      group and subcommand) exits 0, without a traceback
  serve               `agentdocket serve` on free ports answers GET /healthz with 200 within a
                      minute, then stops on SIGTERM with status 0 and no traceback
  trace-id            the first run's trace id of `agentdocket runs list --format json` (stdin)
  judged              `agentdocket report --format json` (stdin) has answer.reference's verdict
                      on every run, each passed, failed or missing, and counts the unparseable
"""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
import tomllib
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

from agentdocket.errors import AgentdocketError

ROOT = Path(__file__).resolve().parents[1]
SERVE_START_S = 60.0  # how long serve may take to answer /healthz (imports, the migration check)
SERVE_STOP_S = 60.0  # and to stop once asked (serve's own grace for requests is 30 s)


class CheckFailed(AgentdocketError):
    """What the check found wrong (the script's exit status 1, with this message)."""


def _source_files(root: Path) -> Iterator[Path]:
    """The files of ``root`` as git would commit them; every file but build products and
    caches when ``root`` is no git work tree (a source tarball)."""
    listed = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=False,
    )
    if listed.returncode == 0:
        for name in listed.stdout.decode().split("\0"):
            if name and (root / name).is_file():  # a tracked file deleted meanwhile: gone
                yield Path(name)
        return
    skip = {".git", ".venv", "__pycache__", "build", "dist", ".mypy_cache", ".ruff_cache"}
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if path.is_file() and not skip & set(rel.parts) and not rel.parts[0].endswith(".egg-info"):
            yield rel


def copy(dest: Path) -> None:
    for rel in _source_files(ROOT):
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, dest / rel)


def extras() -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from declared_imports import DEVELOPMENT_EXTRAS, FEATURES

    defined = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"].get(
        "optional-dependencies", {}
    )
    unknown = sorted(set(defined) - set(FEATURES) - DEVELOPMENT_EXTRAS)
    if unknown:
        raise CheckFailed(
            f"extras {', '.join(unknown)}: neither a user feature's nor a development extra; "
            "say which in scripts/declared_imports.py (FEATURES or DEVELOPMENT_EXTRAS)"
        )
    for extra in FEATURES:
        if extra in defined:
            print(extra)


def contents(src: Path, wheel: Path, sdist: Path) -> None:
    package = src / "agentdocket"
    expected = {
        p.relative_to(src).as_posix()
        for p in package.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }
    with zipfile.ZipFile(wheel) as z:
        in_wheel = {n for n in z.namelist() if not n.endswith("/")}
    dist_info = {n for n in in_wheel if n.split("/", 1)[0].endswith(".dist-info")}
    in_wheel -= dist_info
    with tarfile.open(sdist) as t:  # agentdocket-VERSION/...
        in_sdist = {m.name.split("/", 1)[1] for m in t.getmembers() if m.isfile() and "/" in m.name}
    problems = [f"{wheel.name} lacks {name}" for name in sorted(expected - in_wheel)]
    problems += [
        f"{wheel.name} holds {name}, no file of the package" for name in in_wheel - expected
    ]
    problems += [f"{sdist.name} lacks {name}" for name in sorted(expected - in_sdist)]
    # what the package reads at run time, named: a source tree without them is wrong too
    for pattern in (
        "agentdocket/py.typed",
        "agentdocket/migrations/env.py",
        "agentdocket/migrations/script.py.mako",
        "agentdocket/migrations/versions/0001_*.py",
        "agentdocket/scorers/judges/prompts/*.txt",
        "agentdocket/data/sample_traces.jsonl",
    ):
        if not fnmatch.filter(in_wheel, pattern):
            problems.append(f"{wheel.name} has no {pattern}")
    if problems:
        raise CheckFailed("\n".join(problems))
    # package-data patterns that match nothing: stale, not wrong (the files above are checked)
    data = tomllib.loads((src / "pyproject.toml").read_text())["tool"]["setuptools"]
    for pattern in data.get("package-data", {}).get("agentdocket", []):
        if not fnmatch.filter(in_wheel, f"agentdocket/{pattern}"):
            print(f"note: package-data {pattern!r} matches no file of the package", file=sys.stderr)
    print(
        f"{wheel.name} and {sdist.name}: the {len(expected)} files of the package "
        f"({sum(not n.endswith('.py') for n in expected)} of them data)"
    )


def help_all() -> None:
    import click
    from click.testing import CliRunner

    from agentdocket.cli import main

    def walk(command: click.Command, path: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
        yield path
        if isinstance(command, click.Group):
            ctx = click.Context(command, info_name=path[-1] if path else "agentdocket")
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None, (path, name)
                yield from walk(sub, (*path, name))

    runner = CliRunner()
    paths = list(walk(main, ()))
    failed = []
    for path in paths:
        result = runner.invoke(main, [*path, "--help"], prog_name="agentdocket")
        if (
            result.exit_code != 0
            or result.exception is not None
            or "Traceback" in result.output
            or not result.output.startswith("Usage: agentdocket")
        ):
            shown = " ".join(("agentdocket", *path, "--help"))
            failed.append(
                f"{shown}: exit {result.exit_code}, {result.exception!r}\n{result.output}"
            )
    if failed:
        raise CheckFailed("\n".join(failed))
    print(f"--help of {len(paths)} commands and groups")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _answers(url: str) -> int | None:
    """The status ``url`` answers with; None while nothing listens."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            status: int = response.status
            return status
    except urllib.error.HTTPError as exc:
        return exc.code
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return None


def serve() -> None:
    agentdocket = str(Path(sys.executable).with_name("agentdocket"))
    port, grpc_port = _free_port(), _free_port()
    command = [agentdocket, "serve", "--port", str(port), "--grpc-port", str(grpc_port)]
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=os.environ
    )
    url = f"http://127.0.0.1:{port}/healthz"
    try:
        deadline = time.monotonic() + SERVE_START_S
        while (status := _answers(url)) != 200:
            if proc.poll() is not None:
                raise CheckFailed(
                    f"agentdocket serve exited ({proc.returncode}) before {url} answered 200 "
                    f"(last: {status}):\n{proc.communicate()[0]}"
                )
            if time.monotonic() > deadline:
                raise CheckFailed(f"{url} did not answer 200 in {SERVE_START_S:.0f} s ({status})")
            time.sleep(0.1)  # between two tries of the condition
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=SERVE_STOP_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if proc.returncode != 0 or "Traceback" in output:
        raise CheckFailed(f"agentdocket serve stopped with {proc.returncode}:\n{output}")
    print(f"agentdocket serve: {url} answered 200; stopped on SIGTERM with status 0")


def trace_id() -> None:
    runs = json.load(sys.stdin)["runs"]
    if not runs:
        raise CheckFailed("runs list: no run")
    print(runs[0]["trace_id"])


def judged() -> None:
    report = json.load(sys.stdin)
    found = report["scorers"].get("answer.reference")
    if found is None:
        raise CheckFailed("report: no verdicts of answer.reference")
    decided = (found["passed"] or 0) + (found["failed"] or 0)
    if found["scored"] != report["runs"] or decided + found["missing"] != found["scored"]:
        raise CheckFailed(f"report: answer.reference did not judge every run: {found}")
    if not isinstance(found.get("unparseable"), int):
        raise CheckFailed(f"report: answer.reference has no count of unparseable replies: {found}")
    print(
        f"answer.reference: {found['scored']} runs judged, {decided} decided, "
        f"{found['unparseable']} unparseable"
    )


def main(argv: list[str]) -> int:
    commands: dict[str, tuple[Callable[..., None], int]] = {
        "extras": (extras, 0),
        "copy": (copy, 1),
        "contents": (contents, 3),
        "help": (help_all, 0),
        "serve": (serve, 0),
        "trace-id": (trace_id, 0),
        "judged": (judged, 0),
    }
    if not argv or argv[0] not in commands or len(argv) - 1 != commands[argv[0]][1]:
        print(__doc__, file=sys.stderr)
        return 2
    run, _ = commands[argv[0]]
    try:
        run(*(Path(a) for a in argv[1:]))
    except CheckFailed as exc:
        print(f"wheel-check: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
