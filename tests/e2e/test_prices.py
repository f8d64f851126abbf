"""What a model call costs, from spans as instrumentations send them, on real stores: the model
that answered, a provider genai-prices does not know, a missing token count, cached tokens
counted apart (Anthropic), and the cost a span reports kept beside the computed one in
``costs refresh``, ``costs show``, ``runs show`` and ``compare``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import genai_prices
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from agentdocket.store import open_store
from agentdocket.tracer import StoreSpanExporter
from tests.helpers.db import cli

CALLS: dict[str, dict[str, Any]] = {
    "snapshot": {  # asked for gpt-4o, answered by the dated snapshot: $5 per million input
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.response.model": "gpt-4o-2024-05-13",
        "gen_ai.provider.name": "openai",
        "gen_ai.usage.input_tokens": 1_000_000,
        "gen_ai.usage.output_tokens": 0,
    },
    "selfhosted": {  # a gpt-4o of one's own: not OpenAI's list price
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.provider.name": "vllm",
        "gen_ai.usage.input_tokens": 1000,
        "gen_ai.usage.output_tokens": 100,
    },
    "half": {  # no output token count: not priced as zero output
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.provider.name": "openai",
        "gen_ai.usage.input_tokens": 1000,
    },
    "cached": {  # Anthropic counts cached tokens apart from its input tokens
        "gen_ai.request.model": "claude-3-5-sonnet",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.usage.input_tokens": 1000,
        "gen_ai.usage.output_tokens": 300,
        "gen_ai.usage.cache_read.input_tokens": 4000,
        "gen_ai.usage.cache_creation.input_tokens": 500,
    },
    "reported": {  # the provider's own figure, kept beside ours
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.provider.name": "openai",
        "gen_ai.usage.input_tokens": 100_000,
        "gen_ai.usage.output_tokens": 10_000,
        "gen_ai.usage.cost.amount": 0.0123,
        "gen_ai.usage.cost.currency": "USD",
        "gen_ai.usage.cost.source": "openai",
    },
}


def _record(url: str, tmp_path: Path, version: str) -> str:
    """One run of agent "pricer" at ``version`` with every call above, through the stock
    SDK and our span exporter: its trace id."""
    exporter = StoreSpanExporter(url, spool_dir=tmp_path / f"spool-{version}")
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("an-instrumentation")
    root_attrs = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "pricer",
        "gen_ai.agent.version": version,
        "agentdocket.dataset": "prices",
        "agentdocket.case_id": "c1",
    }
    with tracer.start_as_current_span("invoke_agent pricer", attributes=root_attrs) as root:
        for name, attrs in CALLS.items():
            tracer.start_span(
                f"chat {name}", attributes={"gen_ai.operation.name": "chat", **attrs}
            ).end()
        trace_id = f"{root.get_span_context().trace_id:032x}"
    provider.shutdown()
    return trace_id


def test_calls_are_priced_as_what_answered_by_known_providers_from_whole_counts(
    url: str, tmp_path: Path
) -> None:
    trace_id = _record(url, tmp_path, "1")
    cli(url, "costs", "refresh")
    by_model: dict[str, list[dict[str, Any]]] = {}
    with open_store(url) as store:
        for r in store.costs.of_runs([trace_id]):
            by_model.setdefault(r["model"], []).append(r)
    openai_calls = [r for r in by_model["gpt-4o"] if r["provider"] == "openai"]
    priced = next(r for r in openai_calls if r["cost"] is not None)
    assert priced["cost"] == pytest.approx(5.0) and "gpt-4o-2024-05-13" in priced["rate"]
    half = next(r for r in openai_calls if r["cost"] is None)
    assert half["unpriced"] == "no output token count"
    [selfhosted] = [r for r in by_model["gpt-4o"] if r["provider"] == "vllm"]
    assert selfhosted["cost"] is None and selfhosted["unpriced"].startswith(
        "unknown provider 'vllm'"
    )
    [cached] = by_model["claude-3-5-sonnet"]
    raw = {
        "model": "claude-3-5-sonnet",
        "usage": {
            "input_tokens": 1000,
            "output_tokens": 300,
            "cache_read_input_tokens": 4000,
            "cache_creation_input_tokens": 500,
        },
    }
    expected = genai_prices.calc_price(
        genai_prices.extract_usage(raw, provider_id="anthropic").usage,
        "claude-3-5-sonnet",
        provider_id="anthropic",
        genai_request_timestamp=cached["ts"],
    ).total_price
    assert cached["cost"] == pytest.approx(float(expected))
    [told] = by_model["gpt-4o-mini"]
    assert (told["reported_cost"], told["reported_currency"], told["reported_source"]) == (
        0.0123,
        "USD",
        "openai",
    )
    assert told["cost"] is not None and told["cost"] != told["reported_cost"]


def test_the_reported_cost_is_shown_beside_the_computed_one(url: str, tmp_path: Path) -> None:
    first = _record(url, tmp_path, "1")
    _record(url, tmp_path, "2")
    cli(url, "costs", "refresh")
    cli(url, "score")
    shown = json.loads(cli(url, "costs", "show", "--by", "run", "--format", "json"))
    runs = {r["trace_id"]: r for r in shown["rows"]}
    assert runs[first]["reported_usd"] == pytest.approx(0.0123)
    assert runs[first]["reported_calls"] == 1
    assert runs[first]["difference_usd"] == pytest.approx(runs[first]["cost_usd"] - 0.0123)
    text = cli(url, "runs", "show", first)
    assert "reported by the spans: $0.012300" in " ".join(text.split())
    compared = json.loads(
        cli(
            url,
            "compare",
            "--dataset",
            "prices",
            "--baseline",
            "pricer@1",
            "--candidate",
            "pricer@2",
            "--format",
            "json",
        )
    )
    assert compared["cost"]["reported"] == {
        "baseline_usd": pytest.approx(0.0123),
        "baseline_runs": 1,
        "candidate_usd": pytest.approx(0.0123),
        "candidate_runs": 1,
    }
