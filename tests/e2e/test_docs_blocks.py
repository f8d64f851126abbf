"""Every shell and Python block of the README and docs/ runs, so that no page can drift from the
commands again.

Each page's blocks run in order in a folder of their own, with only the state the page itself
makes: on SQLite no database at all (a command that writes makes the default one, as for a
user following the page), on PostgreSQL a fresh migrated database (the README's install step
migrates it), named by ``AGENTDOCKET_DATABASE_URL``; with ``agentdocket`` on the ``PATH`` and
``../shared`` where the docs say. A comment on the line before a block's fence tells the
harness what the block needs:

- ``<!-- docs-test: setup=NAME -->``: files or data the block assumes (a case file, an agent
  module, a scoring config), made first by :data:`SETUPS`;
- ``<!-- docs-test: prelude=NAME -->``: Python names the block uses as placeholders (the
  user's ``search``, ``answer``), defined first by :data:`PRELUDES`;
- ``<!-- docs-test: file=NAME -->``: the block is a file the next blocks use, written as is;
- ``<!-- docs-test: background -->``: long-running commands (``serve``, ``score --follow``),
  each started, waited for until it answers, and stopped;
- ``<!-- docs-test: skip=REASON -->``: the block needs what CI does not have (a Docker engine,
  an LLM provider, a dataset not shipped here); the reason is shown. Rare.

Several keys are separated by ``;``.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.db import ROOT, SHARED, admin_url, drop_database, fresh_pg

FENCE = re.compile(
    r"(?:<!-- docs-test: (?P<marks>[^>]*?) -->\n)?```(?P<lang>bash|python)\n(?P<code>.*?)```",
    re.S,
)
PAGES = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md"))]
GENERATED = {"docs/cli.md"}  # written from the commands' own help, which a test parses


@dataclass(frozen=True)
class Block:
    page: str
    index: int
    lang: str
    code: str
    marks: dict[str, str]

    @property
    def id(self) -> str:
        return f"{self.page}#{self.index}"


def _marks(text: str | None) -> dict[str, str]:
    out = {}
    for part in (text or "").split(";"):
        key, _, value = part.strip().partition("=")
        if key:
            out[key] = value.strip()
    return out


def blocks() -> list[Block]:
    out = []
    for page in PAGES:
        if page in GENERATED:
            continue
        text = (ROOT / page).read_text()
        for i, m in enumerate(FENCE.finditer(text)):
            code = textwrap.dedent(m.group("code"))
            out.append(Block(page, i, m.group("lang"), code, _marks(m.group("marks"))))
    return out


BLOCKS = blocks()


# --- what blocks assume ---------------------------------------------------------------------

WEATHER_CASES = """\
- case_id: paris
  question: What is the weather in Paris?
  expected_plan: [get_weather]
  expected_calls: [{tool: get_weather, arguments: {city: Paris}}]
  stub_response: It is 18 C in Paris.
- case_id: rome
  question: What is the weather in Rome?
  expected_plan: [get_weather]
  expected_calls: [{tool: get_weather, arguments: {city: Rome}}]
  stub_response: It is 18 C in Rome.
"""
WEATHER_AGENT = """
from agentdocket import tracer


@tracer.tool
def get_weather(city: str) -> str:
    return f"18 C in {city}"


def answer(case):
    tracer.current_run().plan(["get_weather"])
    city = case.question.removeprefix("What is the weather in ").rstrip("?")
    return f"It is {get_weather(city)}."
"""
SCORING_CONFIG = """\
[follow]
name = "docs"
poll_seconds = 0.5

[[scorer]]
name = "interaction.metrics"
"""


def _weather_agent(cwd: Path) -> None:
    (cwd / "cases.yaml").write_text(WEATHER_CASES)
    (cwd / "my_agent.py").write_text(WEATHER_AGENT)


def _scoring_config(cwd: Path) -> None:
    (cwd / "scoring.toml").write_text(SCORING_CONFIG)


def _grammar_templates(cwd: Path) -> None:
    from agentdocket.demo.database import build
    from tests.helpers.grammar_templates import SQL, TEXT

    build(cwd / "concerts.db")
    (cwd / "sql.txt").write_text(SQL)
    (cwd / "text.yaml").write_text(TEXT)


SETUPS: dict[str, Callable[[Path], None]] = {
    "weather-agent": _weather_agent,
    "scoring-config": _scoring_config,
    "grammar-templates": _grammar_templates,
}

# The user's own functions that the tracer's examples call.
PRELUDES = {
    "qa": """
q = "Which stadium hosted the most concerts in 2024?"
def search(query, limit=5):
    return ["stadium", "concert"][:limit]
def answer(question, hits):
    return f"{question}: {', '.join(hits)}"
""",
    "tracer": """
import sqlite3
q = "How many singers are there?"
sql = "SELECT count(*) FROM singer"
connection = sqlite3.connect(":memory:")
connection.execute("CREATE TABLE singer (name TEXT)")
connection.execute("INSERT INTO singer VALUES ('Joe')")
prompt, reply, answer = "Answer from the rows: [(1,)]", "There is 1 singer.", "There is 1 singer."
""",
    "langchain-agent": """
from langchain_core.language_models.fake_chat_models import FakeListChatModel
agent = FakeListChatModel(responses=["It is 18 C in Paris."])
question = "What is the weather in Paris?"
""",
}


# --- running them ---------------------------------------------------------------------------


def _env(cwd: Path, url: str) -> dict[str, str]:
    venv = Path(sys.executable).parent
    return {
        **os.environ,
        "PATH": f"{venv}{os.pathsep}{os.environ.get('PATH', '')}",
        "AGENTDOCKET_DATABASE_URL": url,
        "PYTHONPATH": f"{cwd}{os.pathsep}{ROOT}",
        "HF_HUB_OFFLINE": "1",
    }


def _shared(code: str) -> str:
    return code.replace("../shared", str(SHARED))


def _run(block: Block, cwd: Path, env: dict[str, str]) -> None:
    prelude = PRELUDES[block.marks["prelude"]] if "prelude" in block.marks else ""
    if block.lang == "python":
        command = [sys.executable, "-c", prelude + _shared(block.code)]
    else:
        command = ["bash", "-e", "-o", "pipefail", "-c", _shared(block.code)]
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{block.id} failed:\n{done.stdout}\n{done.stderr}"


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _background(block: Block, cwd: Path, env: dict[str, str]) -> None:
    """Each command line of the block as a process of its own; each must come up (its port
    answers, or it says it is following) and stay up until stopped."""
    lines = [
        line.split("#", 1)[0].strip()
        for line in block.code.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    for line in lines:
        if line.startswith("export "):
            continue
        log = cwd / "background.log"
        with log.open("w") as out:
            proc = subprocess.Popen(
                ["bash", "-c", f"exec {line}"], cwd=cwd, env=env, stdout=out, stderr=out
            )
        try:
            deadline = time.monotonic() + 120
            port = 9464 if "--metrics-port 9464" in line else 4318 if " serve" in line else None
            while not (_port_open(port) if port else "follow" in log.read_text().lower()):
                assert proc.poll() is None, f"{block.id}: {line!r} exited: {log.read_text()}"
                assert time.monotonic() < deadline, f"{block.id}: {line!r} did not come up"
                time.sleep(0.1)
            assert proc.poll() is None, log.read_text()
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(60) == 0, f"{block.id}: {line!r} did not stop: {log.read_text()}"


@pytest.fixture(scope="module")
def folders() -> Iterator[dict[tuple[str, str], tuple[Path, str]]]:
    """(backend, page) -> the page's folder and store, made at its first block."""
    made: dict[tuple[str, str], tuple[Path, str]] = {}
    yield made
    server = admin_url()
    for (backend, _), (_, url) in made.items():
        if backend == "postgresql" and server is not None:
            drop_database(server, url.rsplit("/", 1)[1])


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.id)
def test_the_block_runs_as_written(
    block: Block,
    backend: str,
    folders: dict[tuple[str, str], tuple[Path, str]],
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    if "skip" in block.marks:
        pytest.skip(block.marks["skip"])
    if "shared" in block.code and not SHARED.exists():
        pytest.skip("../shared is not beside this checkout")
    if (backend, block.page) not in folders:  # a page's blocks share a folder and a store
        cwd = tmp_path_factory.mktemp(Path(block.page).stem)
        if backend == "sqlite":  # no database yet: the page's own commands make it
            url = f"sqlite:///{cwd / 'agentdocket.db'}"
        else:
            url, _ = fresh_pg(request.getfixturevalue("pg_template"))
        folders[(backend, block.page)] = (cwd, url)
    cwd, url = folders[(backend, block.page)]
    env = _env(cwd, url)
    if "setup" in block.marks:
        SETUPS[block.marks["setup"]](cwd)
    if "file" in block.marks:
        (cwd / block.marks["file"]).write_text(block.code)
    elif "background" in block.marks:
        _background(block, cwd, env)
    else:
        _run(block, cwd, env)


def test_every_mark_names_something_the_harness_knows() -> None:
    known = {"setup", "prelude", "file", "background", "skip"}
    for block in BLOCKS:
        assert set(block.marks) <= known, block.id
        assert block.marks.get("setup", "weather-agent") in SETUPS, block.id
        assert block.marks.get("prelude", "qa") in PRELUDES, block.id
        if "skip" in block.marks:
            assert block.marks["skip"], f"{block.id}: a skip says why"
    skipped = [b.id for b in BLOCKS if "skip" in b.marks]
    assert len(skipped) <= len(BLOCKS) // 2, skipped
