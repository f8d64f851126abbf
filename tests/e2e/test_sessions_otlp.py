"""Turns sent over OTLP by the stock exporter to `agentdocket serve`, each an agent span with
the GenAI conventions' ``gen_ai.conversation.id``, or OpenInference's ``session.id``: one
session per conversation, its turns in order with question and answer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider

from tests.helpers.db import cli
from tests.helpers.frameworks import exporting
from tests.helpers.otlp_server import Server

CONVERSATIONS = {
    "conv-genai": [
        ("Is the Louvre open on Tuesday?", "No, it closes on Tuesdays."),
        ("And on Wednesday?", "Yes, 9:00 to 21:00."),
        ("Thanks!", "Enjoy your visit."),
    ],
    "conv-openinference": [("Book a table for two", "Done: 20:00, table 4.")],
    "conv-openllmetry": [("Any vegan dishes?", "Two: the curry and the salad.")],
}


@pytest.fixture
def server(url: str, tmp_path: Path) -> Iterator[Server]:
    s = Server(url, tmp_path / "spool").start()
    yield s
    s.stop()


def _genai_turn(provider: TracerProvider, conversation: str, question: str, answer: str) -> None:
    """An agent's turn; the last one as the conventions' ``handle_conversation_turn``."""
    last = question == CONVERSATIONS[conversation][-1][0]
    attributes = {
        "gen_ai.operation.name": "handle_conversation_turn" if last else "invoke_agent",
        "gen_ai.agent.name": "concierge",
        "gen_ai.conversation.id": conversation,
        "gen_ai.input.messages": json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": question}]}]
        ),
        "gen_ai.output.messages": json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]
        ),
    }
    tracer = provider.get_tracer("concierge")
    name = "handle_conversation_turn" if last else "invoke_agent concierge"
    with tracer.start_as_current_span(name, attributes=attributes):
        pass


def _openinference_turn(
    provider: TracerProvider, conversation: str, question: str, answer: str
) -> None:
    attributes = {
        "openinference.span.kind": "AGENT",
        "session.id": conversation,
        "input.value": question,
        "output.value": answer,
    }
    with provider.get_tracer("concierge").start_as_current_span("concierge", attributes=attributes):
        pass


def _openllmetry_turn(
    provider: TracerProvider, conversation: str, question: str, answer: str
) -> None:
    """OpenLLMetry's workflow span, its session an association property (before its SDK set
    gen_ai.conversation.id)."""
    attributes = {
        "traceloop.span.kind": "workflow",
        "traceloop.association.properties.session_id": conversation,
        "traceloop.entity.input": json.dumps({"inputs": {"question": question}}),
        "traceloop.entity.output": json.dumps({"outputs": {"answer": answer}}),
    }
    tracer = provider.get_tracer("concierge")
    with tracer.start_as_current_span("concierge.workflow", attributes=attributes):
        pass


def test_turns_over_otlp_form_one_session_per_conversation(url: str, server: Server) -> None:
    with exporting(server.endpoint) as provider:
        for question, answer in CONVERSATIONS["conv-genai"]:
            _genai_turn(provider, "conv-genai", question, answer)
        for question, answer in CONVERSATIONS["conv-openinference"]:
            _openinference_turn(provider, "conv-openinference", question, answer)
        for question, answer in CONVERSATIONS["conv-openllmetry"]:
            _openllmetry_turn(provider, "conv-openllmetry", question, answer)
    server.settled()
    listed = json.loads(cli(url, "sessions", "list", "--format", "json"))
    assert {s["session_id"]: s["turns"] for s in listed["sessions"]} == {
        "conv-genai": 3,
        "conv-openinference": 1,
        "conv-openllmetry": 1,
    }
    for conversation, expected in CONVERSATIONS.items():
        if conversation == "conv-openllmetry":  # its input and output are its own JSON
            continue
        shown = json.loads(cli(url, "sessions", "show", conversation, "--format", "json"))
        assert [(t["question"], t["answer"]) for t in shown["turns"]] == expected
    # a session scorer judges each conversation as a whole
    scored = json.loads(cli(url, "score", "--scorer", "session.resolution", "--format", "json"))
    assert scored["sessions"] == 3
    assert [(s["scorer"], s["added"]) for s in scored["scorers"]] == [("session.resolution", 3)]
    shown = json.loads(cli(url, "sessions", "show", "conv-genai", "--format", "json"))
    [verdict] = shown["verdicts"]
    assert (verdict["scorer"], verdict["passed"], verdict["current"]) == (
        "session.resolution",
        True,
        True,
    )
