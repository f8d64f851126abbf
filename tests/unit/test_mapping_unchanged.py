"""The events the receiver and the exporter make of spans stay byte for byte what they were:
every request captured from a real framework (``tests/fixtures/otlp/``, read as OTLP/JSON and
as OTLP/protobuf), ``bench/receiver.py``'s spans (encoded by the stock OTLP encoder, and as the
SDK's spans) and our own tracer's, mapped and hashed (:mod:`tests.helpers.mapping_digests`) and
compared with recorded digests.

The digests were recorded from commit db8bcfc (before decoding and mapping were made faster).
A deliberate change of the mapping records them again::

    python -m tests.helpers.mapping_digests
"""

from __future__ import annotations

import pytest

from agentdocket.events import Event, validate_payload
from tests.helpers import mapping_digests

# Recorded from commit db8bcfc; the OpenAI captures' again when model calls began to keep the
# service tier they were served at (openai.response.service_tier), which prices some calls;
# CrewAI's again when model calls began to keep the cost their spans report (OpenInference's
# llm.cost.total), beside the one agentdocket computes. The LlamaIndex (OpenLLMetry) capture
# recorded when it was added; openai-genai-1.3 when it was captured (the autumn 2026
# conventions: cache_write, the details record alone).
RECORDED = {
    "adk-1/000-traces.json json": "51f03d3c5c5f9e8cee80ddce9093f00e",
    "adk-1/000-traces.json protobuf": "51f03d3c5c5f9e8cee80ddce9093f00e",
    "adk-2/000-traces.json json": "f2df48eeb9e532e35c4ef19d1f235a57",
    "adk-2/000-traces.json protobuf": "f2df48eeb9e532e35c4ef19d1f235a57",
    "adk-2/001-logs.json json": "b0824a507d6e0b72d971a20ddeda6ced",
    "adk-2/001-logs.json protobuf": "b0824a507d6e0b72d971a20ddeda6ced",
    "adk-2-nocontent/000-traces.json json": "06a3cbb67856edff43b5d623f1f81f7d",
    "adk-2-nocontent/000-traces.json protobuf": "06a3cbb67856edff43b5d623f1f81f7d",
    "adk-2-nocontent/001-logs.json json": "e3b0c44298fc1c149afbf4c8996fb924",
    "adk-2-nocontent/001-logs.json protobuf": "e3b0c44298fc1c149afbf4c8996fb924",
    "adk-2-schema1/000-traces.json json": "ff27ec8a54e64224542673954c5d12a7",
    "adk-2-schema1/000-traces.json protobuf": "ff27ec8a54e64224542673954c5d12a7",
    "adk-2-schema1/001-logs.json json": "aaf34f446f070c27af77d4eb34f24054",
    "adk-2-schema1/001-logs.json protobuf": "aaf34f446f070c27af77d4eb34f24054",
    "crewai/000-traces.json json": "f8c9c35ab40821625fa3a0ae68d7d299",
    "crewai/000-traces.json protobuf": "f8c9c35ab40821625fa3a0ae68d7d299",
    "langgraph-openllmetry/000-traces.json json": "5815e264811ca99be639422f29079f5c",
    "langgraph-openllmetry/000-traces.json protobuf": "5815e264811ca99be639422f29079f5c",
    "llamaindex-openllmetry/000-traces.json json": "56e946822b7c82c3dde030be5584f2a2",
    "llamaindex-openllmetry/000-traces.json protobuf": "56e946822b7c82c3dde030be5584f2a2",
    "mcp/000-traces.json json": "ea1ecfb74395ddb5ccee2f710492cee0",
    "mcp/000-traces.json protobuf": "ea1ecfb74395ddb5ccee2f710492cee0",
    "mcp/001-traces.json json": "e0a629ae58a11ae005573236680bc6d7",
    "mcp/001-traces.json protobuf": "e0a629ae58a11ae005573236680bc6d7",
    "mcp/002-traces.json json": "7973657d16b783bf2548299d726db7b1",
    "mcp/002-traces.json protobuf": "7973657d16b783bf2548299d726db7b1",
    "mcp/003-traces.json json": "575f1abaaf9613f354c09e1323ab5001",
    "mcp/003-traces.json protobuf": "575f1abaaf9613f354c09e1323ab5001",
    "openai-genai-1.3/000-traces.json json": "5c1914459ad0d76803bac93a452a5902",
    "openai-genai-1.3/000-traces.json protobuf": "5c1914459ad0d76803bac93a452a5902",
    "openai-genai-1.3/001-logs.json json": "ec4fddb446f51663284d653ff9b1b981",
    "openai-genai-1.3/001-logs.json protobuf": "ec4fddb446f51663284d653ff9b1b981",
    "openai-v2/000-traces.json json": "ecfa64e2a5fcfca41bb91a6a07b563c3",
    "openai-v2/000-traces.json protobuf": "ecfa64e2a5fcfca41bb91a6a07b563c3",
    "openai-v2/001-logs.json json": "ffc940f0adb4ff834b2b04441a0b35d6",
    "openai-v2/001-logs.json protobuf": "ffc940f0adb4ff834b2b04441a0b35d6",
    "openai-v2-latest/000-traces.json json": "955ca2f8aad2111a70ca0dab68cd067b",
    "openai-v2-latest/000-traces.json protobuf": "955ca2f8aad2111a70ca0dab68cd067b",
    "openai-v2-latest/001-logs.json json": "3744b52f20c45f8291c93e25517b055c",
    "openai-v2-latest/001-logs.json protobuf": "3744b52f20c45f8291c93e25517b055c",
    "smolagents/000-traces.json json": "855b6be74934318b625eeb2d228aa398",
    "smolagents/000-traces.json protobuf": "855b6be74934318b625eeb2d228aa398",
    "strands-default/000-traces.json json": "a5ad02de64cc8ba08217355e7e7e979b",
    "strands-default/000-traces.json protobuf": "a5ad02de64cc8ba08217355e7e7e979b",
    "strands-latest/000-traces.json json": "959d766e714e396af8617dcd360a9728",
    "strands-latest/000-traces.json protobuf": "959d766e714e396af8617dcd360a9728",
    "bench make_spans(2000) protobuf": "d696053f5b9cfa1c46231ba96bb450d8",
    "bench make_spans(2000) sdk": "d696053f5b9cfa1c46231ba96bb450d8",
    "bench make_spans(2000) sdk recognised only": "d696053f5b9cfa1c46231ba96bb450d8",
    "our tracer protobuf": "1e79b777b7734bbba58980d8c557ac97",
    "our tracer sdk": "1e79b777b7734bbba58980d8c557ac97",
    "our tracer sdk recognised only": "1e79b777b7734bbba58980d8c557ac97",
}


@pytest.fixture(scope="module")
def sources() -> dict[str, list[Event]]:
    return mapping_digests.sources()


def test_the_events_of_captured_and_made_spans_are_unchanged(
    sources: dict[str, list[Event]],
) -> None:
    got = mapping_digests.all_digests(sources)
    assert {k: v for k, v in got.items() if RECORDED.get(k) != v} == {}
    assert got.keys() == RECORDED.keys()


def test_every_payload_is_in_its_validated_form(sources: dict[str, list[Event]]) -> None:
    """Payloads the mapping builds in their normalised form without validating them (tool
    calls, model calls: agentdocket.ingest.llm_payload) are what validation gives, field order
    included."""
    for name, events in sources.items():
        for e in events:
            valid = validate_payload(e.kind, e.payload)
            assert (valid, list(valid)) == (e.payload, list(e.payload)), (name, e.kind)
