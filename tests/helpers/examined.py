"""An agent to examine, and scripted examiner / judge models, for the examiner harness tests
(named on the command line as tests.helpers.examined:...)."""

from __future__ import annotations

from pathlib import Path

from langchain_core.language_models.fake_chat_models import FakeListChatModel


class EchoAgent:
    """Replies with what it was told; writes a.txt and b.txt when asked to save a number."""

    def __init__(self, task: str, workdir: Path) -> None:
        self.workdir = workdir
        self.closed = False

    def reply(self, message: str) -> str:
        if message.startswith("save "):
            name, value = message.removeprefix("save ").split("=")
            (self.workdir / name).write_text(value)
            return "saved"
        if message == "explode":
            raise RuntimeError("the agent crashed")
        return message

    def close(self) -> None:
        self.closed = True


def make(task: str, workdir: Path) -> EchoAgent:
    return EchoAgent(task, workdir)


def echo_examiner() -> FakeListChatModel:
    """Sends "Hello World", then stops: the echo case's examiner."""
    return FakeListChatModel(responses=["Hello World", "TASK_FINISHED"])


def yes_judge() -> FakeListChatModel:
    return FakeListChatModel(
        responses=['```json\n{"reason": "the agent repeated it", "is_hit": "yes"}\n```'] * 50
    )


def match_judge() -> FakeListChatModel:
    """A judge that says Match to everything, in the conclusive questions' format only (so an
    interpretive question's reply, which wants a score, does not parse)."""
    return FakeListChatModel(responses=["The answers agree.\nConclusion: Match"])


def polite_examiner() -> FakeListChatModel:
    """Asks for the task once, then stops; cycles, so one model serves every case in turn."""
    return FakeListChatModel(responses=["Please do the task described.", "TASK_FINISHED"])
