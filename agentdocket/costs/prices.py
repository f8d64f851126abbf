"""The price of one model call, at the call's own time.

A call is priced from its token counts (input, output, cache reads and cache writes; input
counts every prompt token, cached ones included, as the GenAI conventions and the providers'
APIs report them; reasoning tokens are part of the output), its model and provider, and the
rates in force when it was made: a user's price file first (:mod:`agentdocket.costs.overrides`),
else pydantic's ``genai-prices`` table, asked with the call's time and any service tier the
span reported. A call no rate covers is **unpriced**, with the reason: never a cost of zero.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from functools import lru_cache
from importlib.metadata import version
from pathlib import Path
from typing import Any

import genai_prices

from agentdocket.costs import PRICES_ENV
from agentdocket.costs.overrides import MILLION, Overrides
from agentdocket.store.projections import JUDGE_CACHE_KEY

# OpenTelemetry's gen_ai.provider.name values -> genai-prices' provider ids, where they differ
PROVIDERS = {
    "gcp.gemini": "google",
    "gcp.vertex_ai": "google",
    "gcp.gen_ai": "google",
    "aws.bedrock": "aws",
    "azure.ai.openai": "azure",
    "azure.ai.inference": "azure",
    "mistral_ai": "mistral",
    "x_ai": "x-ai",
    # langchain's names (a judge named "PROVIDER:MODEL")
    "azure_openai": "azure",
    "azure_ai": "azure",
    "google_vertexai": "google",
    "google_genai": "google",
    "google_anthropic_vertex": "google",
    "bedrock": "aws",
    "bedrock_converse": "aws",
    "mistralai": "mistral",
    "xai": "x-ai",
}
TABLE = f"genai-prices {version('genai-prices')}"
# The providers of langchain's init_chat_model: a judge named "PROVIDER:MODEL" records its calls
# under that name, which is that provider's model.
JUDGE_PROVIDERS = frozenset(
    {
        "openai",
        "anthropic",
        "azure_openai",
        "azure_ai",
        "google_vertexai",
        "google_genai",
        "google_anthropic_vertex",
        "bedrock",
        "bedrock_converse",
        "cohere",
        "fireworks",
        "together",
        "mistralai",
        "huggingface",
        "groq",
        "ollama",
        "deepseek",
        "ibm",
        "nvidia",
        "xai",
        "perplexity",
    }
)


@dataclass(frozen=True)
class Usage:
    """What a model call used, as its ``llm.called`` event recorded it."""

    model: str
    at: datetime
    provider: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_creation_tokens: int | None = None
    service_tier: str | None = None

    @classmethod
    def of_call(cls, payload: Mapping[str, Any], at: datetime) -> Usage:
        """The usage of a stored ``llm.called`` payload made at ``at``. A judge's call
        recorded under the judge's name ``PROVIDER:MODEL`` (langchain's providers, as
        ``--judge openai:gpt-4o``) is that provider's model."""
        attributes = payload.get("attributes") or {}
        provider = attributes.get("provider")
        tier = attributes.get("service_tier")
        model = str(payload.get("model") or "unknown")
        named, _, rest = model.partition(":")
        if not provider and rest and named in JUDGE_PROVIDERS and JUDGE_CACHE_KEY in attributes:
            provider, model = named, rest
        return cls(
            model=model,
            at=at,
            provider=str(provider) if provider else None,
            input_tokens=payload.get("input_tokens"),
            output_tokens=payload.get("output_tokens"),
            cache_read_tokens=payload.get("cache_read_tokens"),
            cache_creation_tokens=payload.get("cache_creation_tokens"),
            service_tier=str(tier) if tier else None,
        )


@dataclass(frozen=True)
class Priced:
    """A call's cost in US dollars, or why it has none; ``by``: the rate's source."""

    cost: Decimal | None
    by: str | None
    unpriced: str | None = None


class PriceBook:
    """Prices calls: the user's rates (``overrides``), then ``genai-prices``."""

    def __init__(self, overrides: Overrides | None = None) -> None:
        self.overrides = overrides

    @property
    def version(self) -> str:
        """Which prices these are: the table's version, and the price file's digest."""
        if self.overrides is None:
            return TABLE
        return f"{TABLE} + {self.overrides.source}@{self.overrides.digest}"

    def price(self, usage: Usage) -> Priced:
        if usage.input_tokens is None and usage.output_tokens is None:
            return Priced(None, None, "no token counts")
        if self.overrides is not None:
            rate = self.overrides.rate(usage.model, usage.provider, usage.at)
            if rate is not None:
                cached = (usage.cache_read_tokens or 0) + (usage.cache_creation_tokens or 0)
                plain = max(0, (usage.input_tokens or 0) - cached)
                cost = (
                    plain * rate.input_mtok
                    + (usage.cache_read_tokens or 0) * rate.cache_read_mtok
                    + (usage.cache_creation_tokens or 0) * rate.cache_write_mtok
                    + (usage.output_tokens or 0) * rate.output_mtok
                ) / MILLION
                return Priced(cost, f"{self.overrides.source}:{rate.line}")
        return _table_price(
            usage.model,
            usage.provider,
            usage.at,
            usage.service_tier,
            usage.input_tokens or 0,
            usage.output_tokens or 0,
            usage.cache_read_tokens or 0,
            usage.cache_creation_tokens or 0,
        )


@lru_cache(maxsize=65536)
def _table_price(
    model: str,
    provider: str | None,
    at: datetime,
    tier: str | None,
    input_tokens: int,
    output_tokens: int,
    cache_read: int,
    cache_write: int,
) -> Priced:
    usage = genai_prices.Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
    )
    context = {"service_tier": tier} if tier else None
    asked = PROVIDERS.get(provider, provider) if provider else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for provider_id in dict.fromkeys((asked, None)):
            try:
                found = genai_prices.calc_price(
                    usage,
                    model,
                    provider_id=provider_id,
                    genai_request_timestamp=at,
                    price_context=context,
                )
            except LookupError:
                continue
            except (ValueError, TypeError) as exc:
                return Priced(None, None, f"genai-prices: {exc}")
            return Priced(found.total_price, f"{TABLE}: {found.provider.id}/{found.model.id}")
    where = f" (provider {provider})" if provider else ""
    return Priced(None, None, f"no price for model {model!r}{where}")


def price_book(path: Path | None) -> PriceBook:
    """The price book of the price file at ``path`` (genai-prices alone when None)."""
    from agentdocket.costs.overrides import read_prices

    return PriceBook(read_prices(path) if path is not None else None)


def price_book_from_env() -> PriceBook:
    """The price book of the price file ``$AGENTDOCKET_PRICES`` names (genai-prices alone
    when it names none)."""
    path = os.environ.get(PRICES_ENV)
    return price_book(Path(path) if path else None)
