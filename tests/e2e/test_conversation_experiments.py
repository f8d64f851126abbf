"""Experiments over conversations: a case with scripted user turns, and cases with a simulated
user played by a scripted chat model, each conversation recorded turn by turn as one session
and judged as a whole; an agent that cannot converse is refused before anything runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agentdocket.store import open_store
from tests.helpers.db import ROOT, cli

AGENT = '''
import asyncio


async def converse(case, messages):
    """Answers each user message in turn; it remembers how many it has seen."""
    await asyncio.sleep(0)
    said = [m["content"] for m in messages if m["role"] == "user"]
    if said[-1] == "fail now":
        raise RuntimeError("the booking service is away")
    return f"({len(said)}) noted: {said[-1]}"


def answer(case):
    return "one answer only"


def forgetful(case, messages):
    """Answers the opening, then fails on every later turn."""
    if len(messages) > 1:
        raise RuntimeError("lost the thread")
    return "Noted."
'''

USERS = '''
from langchain_core.language_models.fake_chat_models import FakeListChatModel


def polite():
    """A user who asks once more, then is satisfied."""
    return FakeListChatModel(responses=["And breakfast, please.", "Thanks. DONE"] * 2)


def never_done():
    return FakeListChatModel(responses=["Not quite.", "Still not."])
'''


def _cases(folder: Path, cases: list[dict[str, object]]) -> Path:
    path = folder / "cases.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in cases))
    return path


def _run(url: str, tmp_path: Path, *more: str) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable,
        "-c",
        "from agentdocket.cli import main; main()",
        "--database",
        url,
        "experiment",
        "run",
        "--dataset",
        "talks",
        "--agent-version",
        "1",
        "--scorer",
        "session.resolution",
        "--scorer",
        "session.restating",
        "--format",
        "json",
        *more,
    ]
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    return subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )


def test_scripted_and_simulated_users_make_sessions(url: str, tmp_path: Path) -> None:
    (tmp_path / "talker.py").write_text(AGENT)
    (tmp_path / "users.py").write_text(USERS)
    cases = [
        {
            "case_id": "book",
            "question": "A room in Paris, please.",
            "user_turns": ["For two nights.", "From the 3rd.", "Yes, book it."],
        },
        {
            "case_id": "simulated",
            "question": "I need a room.",
            "user": {"persona": "a traveller", "goal": "a room with breakfast", "stop": "DONE"},
        },
        {
            "case_id": "failing",
            "question": "Cancel my room.",
            "user_turns": ["fail now", "Hello?"],
        },
    ]
    cli(url, "datasets", "add", str(_cases(tmp_path, cases)), "--name", "talks", "--version", "1")
    done = _run(url, tmp_path, "--agent", "talker:converse", "--user-model", "python:users:polite")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["sessions"], summary["turns"]) == (3, 4 + 2 + 2)
    assert summary["ended"] == {"scripted": 1, "stop": 1, "error": 1}
    with open_store(url) as store:
        sessions = {s["session_id"]: s for s in store.sessions.recent()}
        book = store.sessions.turns("talker@1/book/0")
        simulated = store.sessions.turns("talker@1/simulated/0")
    assert set(sessions) == {"talker@1/book/0", "talker@1/simulated/0", "talker@1/failing/0"}
    assert [t["question"] for t in book] == [
        "A room in Paris, please.",
        "For two nights.",
        "From the 3rd.",
        "Yes, book it.",
    ]
    assert book[-1]["answer"] == "(4) noted: Yes, book it."
    # the simulated user's stop message ends the talk; it is not sent to the agent
    assert [t["question"] for t in simulated] == ["I need a room.", "And breakfast, please."]
    assert sessions["talker@1/failing/0"]["status"] == "error"

    shown = json.loads(cli(url, "sessions", "show", "talker@1/book/0", "--format", "json"))
    [resolution] = [v for v in shown["verdicts"] if v["scorer"] == "session.resolution"]
    assert (resolution["passed"], resolution["current"]) == (True, True)
    failing = json.loads(cli(url, "sessions", "show", "talker@1/failing/0", "--format", "json"))
    assert [v["passed"] for v in failing["verdicts"] if v["scorer"] == "session.resolution"] == [
        False
    ]

    again = _run(url, tmp_path, "--agent", "talker:converse", "--user-model", "python:users:polite")
    assert json.loads(again.stdout)["skipped"] == 3  # every conversation is done


def test_the_turn_limit_ends_a_simulated_conversation(url: str, tmp_path: Path) -> None:
    (tmp_path / "talker.py").write_text(AGENT)
    (tmp_path / "users.py").write_text(USERS)
    case = {
        "case_id": "long",
        "question": "Hello.",
        "user": {"persona": "a tester", "goal": "nothing", "max_turns": 3, "stop": "DONE"},
    }
    cli(url, "datasets", "add", str(_cases(tmp_path, [case])), "--name", "talks", "--version", "1")
    done = _run(
        url, tmp_path, "--agent", "talker:converse", "--user-model", "python:users:never_done"
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["ended"] == {"turn_limit": 1}
    with open_store(url) as store:
        assert len(store.sessions.turns("talker@1/long/0")) == 3


def test_an_agent_that_cannot_converse_is_refused(url: str, tmp_path: Path) -> None:
    (tmp_path / "talker.py").write_text(AGENT)
    case = {"case_id": "book", "question": "A room.", "user_turns": ["Two nights."]}
    cli(url, "datasets", "add", str(_cases(tmp_path, [case])), "--name", "talks", "--version", "1")
    refused = _run(url, tmp_path, "--agent", "talker:answer")
    assert refused.returncode == 1
    assert "case book is a conversation: the agent must take (case, messages)" in refused.stderr
    simulated = {"case_id": "sim", "question": "Hi.", "user": {"persona": "p", "goal": "g"}}
    cli(
        url,
        "datasets",
        "add",
        str(_cases(tmp_path, [simulated])),
        "--name",
        "talks",
        "--version",
        "2",
    )
    no_model = _run(url, tmp_path, "--agent", "talker:converse", "--dataset", "talks@2")
    assert "case sim has a simulated user: give its chat model (--user-model)" in no_model.stderr
    with open_store(url) as store:
        assert store.sessions.count() == 0


def test_compare_pairs_sessions_by_case(url: str, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from agentdocket.cli import main

    (tmp_path / "talker.py").write_text(AGENT)
    cases = [
        {
            "case_id": f"c{i}",
            "question": f"Room {i}, please.",
            "user_turns": ["Two nights.", "Book it."],
        }
        for i in range(3)
    ]
    cli(url, "datasets", "add", str(_cases(tmp_path, cases)), "--name", "talks", "--version", "1")
    assert _run(url, tmp_path, "--agent", "talker:converse").returncode == 0
    worse = _run(url, tmp_path, "--agent", "talker:forgetful", "--agent-version", "2")
    assert worse.returncode == 0, worse.stderr
    compared = CliRunner().invoke(
        main,
        [
            "--database",
            url,
            "compare",
            "--dataset",
            "talks",
            "--baseline",
            "experiment:talker@1",
            "--candidate",
            "experiment:talker@2",
            "--scorer",
            "session.resolution",
            "--format",
            "json",
        ],
    )
    result = json.loads(compared.output)
    resolution = result["scorers"]["session.resolution"]
    # three conversations a side, one unit each: three turns each on the baseline, two on the
    # candidate (it failed its second), none of them left unjudged
    assert (resolution["baseline"]["runs"], resolution["candidate"]["runs"]) == (3, 3)
    assert (resolution["baseline"]["unjudged"], resolution["candidate"]["unjudged"]) == (0, 0)
    assert (resolution["baseline"]["rate"], resolution["candidate"]["rate"]) == (1.0, 0.0)
    assert resolution["regressed"] == 3
    report = json.loads(cli(url, "report", "--dataset", "talks", "--format", "json"))
    reported = report["scorers"]["session.resolution"]
    assert (report["runs"], reported["scored"], reported["unjudged"]) == (9 + 6, 6, 0)
    assert (reported["passed"], reported["missing_kinds"]) == (3, {"agent:error": 3})
