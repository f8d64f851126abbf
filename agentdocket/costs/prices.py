"""The price of one model call, at the call's own time.

A call is priced from its token counts (input, output, cache reads and cache writes; reasoning
tokens are part of the output), its model and provider, and the rates in force when it was
made: a user's price file first (:mod:`agentdocket.costs.overrides`), else pydantic's
``genai-prices`` table, asked with the call's time and any service tier the span reported. A
call no rate covers is **unpriced**, with the reason: never a cost of zero. The rules:

- **Both token counts or none.** A call missing its input or its output token count is
  unpriced ("no output token count"), not priced as zero for the missing side.
- **Cached tokens.** The GenAI conventions, OpenAI's and Google's APIs count cached prompt
  tokens inside the input tokens; Anthropic's and Bedrock's Converse APIs count them apart
  (their input tokens are the uncached ones). genai-prices takes the first form. A call of a
  provider whose API counts them apart (:data:`CACHE_APART`), or whose cached tokens
  outnumber its input tokens (they cannot be inside), has them added to its input; a price
  file's ``[[provider]]`` table says otherwise for a provider (``cached_in_input``).
- **The model that answered.** A span may name the model asked (``gpt-4o``) and the one that
  answered (``gpt-4o-2024-05-13``, a dated snapshot at another price): the answering model is
  priced first when it is the more specific name of the one asked, else the model asked first;
  the other is tried when the first has no price.
- **Known providers only.** A call whose provider genai-prices does not know (a self-hosted
  ``gpt-4o``) is unpriced, unless the price file prices it (a ``[[price]]`` for that provider)
  or maps the provider to one it knows (``[[provider]] priced_as``); it is never priced as any
  provider's list price. A call naming no provider is priced by its model's name alone, and
  its rate says so.
- **Local models cost nothing.** A call of provider ``local`` (a judge named ``local:NAME``,
  run on this machine: :mod:`agentdocket.scorers.judges.local`) costs zero, by the rate
  ``local model: no charge``: not unpriced, since there is no price to find.
"""

from __future__ import annotations

import dataclasses
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
from genai_prices import data_snapshot

from agentdocket.costs import PRICES_ENV
from agentdocket.costs.overrides import MILLION, Overrides, Rate
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
# The rules below, numbered: a change of them prices every stored call again (the projection
# names the prices that made it, and a refresh under other prices re-prices the whole log).
RULES = 2
# The providers of langchain's init_chat_model: a judge named "PROVIDER:MODEL" records its calls
# under that name, which is that provider's model.
JUDGE_PROVIDERS = frozenset(
    {
        "local",  # agentdocket's own: a model run on this machine
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
    response_model: str | None = None  # the model that answered, when not the one asked

    @classmethod
    def of_call(cls, payload: Mapping[str, Any], at: datetime) -> Usage:
        """The usage of a stored ``llm.called`` payload made at ``at``. A judge's call
        recorded under the judge's name ``PROVIDER:MODEL`` (langchain's providers, as
        ``--judge openai:gpt-4o``) is that provider's model."""
        attributes = payload.get("attributes") or {}
        provider = attributes.get("provider")
        tier = attributes.get("service_tier")
        answered = attributes.get("response_model")
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
            response_model=str(answered) if answered else None,
        )

    def models(self) -> list[str]:
        """The model names to price by, in order: the answering model first when it is the
        more specific name of the model asked, a dated or numbered version of it
        (``gpt-4o`` answered by ``gpt-4o-2024-05-13``, not by ``gpt-4o-mini``), else the model
        asked first."""
        answered = self.response_model
        if not answered or answered == self.model:
            return [self.model]
        rest = answered.lower().removeprefix(self.model.lower())
        if rest != answered.lower() and rest[:1] in "-@:." and rest[1:2].isdigit():
            return [answered, self.model]
        return [self.model, answered]


# Providers (genai-prices' ids, and langchain's name for Anthropic on Vertex) whose APIs count
# cached prompt tokens apart from the input tokens: Anthropic's, and Bedrock's Converse.
CACHE_APART = frozenset({"anthropic", "aws", "google_anthropic_vertex"})


def reported(payload: Mapping[str, Any]) -> tuple[float | None, str | None, str | None]:
    """The cost a call's span reported (amount, currency, source), or Nones."""
    found = (payload.get("attributes") or {}).get("reported_cost")
    if not isinstance(found, dict):
        return None, None, None
    amount = found.get("amount")
    if isinstance(amount, bool) or not isinstance(amount, int | float):
        return None, None, None
    currency, source = found.get("currency"), found.get("source")
    return float(amount), str(currency or "USD"), str(source) if source else None


@dataclass(frozen=True)
class Priced:
    """A call's cost in US dollars, or why it has none; ``by``: the rate's source."""

    cost: Decimal | None
    by: str | None
    unpriced: str | None = None


# The provider of models run on this machine (judges named local:NAME), and the rate they are at.
LOCAL = "local"
LOCAL_RATE = "local model: no charge"


class PriceBook:
    """Prices calls: the user's rates (``overrides``), then ``genai-prices``."""

    def __init__(self, overrides: Overrides | None = None) -> None:
        self.overrides = overrides

    @property
    def version(self) -> str:
        """Which prices these are: the table's version, and the price file's digest."""
        if self.overrides is None:
            return f"{TABLE}, rules {RULES}"
        return f"{TABLE}, rules {RULES} + {self.overrides.source}@{self.overrides.digest}"

    def price(self, usage: Usage) -> Priced:
        if usage.provider == LOCAL:
            return Priced(Decimal(0), LOCAL_RATE)
        if usage.input_tokens is None or usage.output_tokens is None:
            missing = "input" if usage.input_tokens is None else "output"
            both = usage.input_tokens is None and usage.output_tokens is None
            return Priced(None, None, "no token counts" if both else f"no {missing} token count")
        setting = self.overrides.provider(usage.provider) if self.overrides else None
        usage = self._cached_inside(usage, setting.cached_in_input if setting else None)
        for model in usage.models():
            if self.overrides is not None:
                rate = self.overrides.rate(model, usage.provider, usage.at)
                if rate is not None:
                    return Priced(_rate_cost(rate, usage), f"{self.overrides.source}:{rate.line}")
        asked = usage.provider
        if setting is not None and setting.priced_as is not None:
            asked = setting.priced_as
        provider_id = PROVIDERS.get(asked, asked) if asked else None
        if provider_id is not None and not _known_provider(provider_id):
            return Priced(
                None,
                None,
                f"unknown provider {usage.provider!r} (a price file can price it, or map it to a "
                "known one with [[provider]] priced_as)",
            )
        found = Priced(None, None, "")
        for model in usage.models():
            found = _table_price(
                model,
                provider_id,
                usage.at,
                usage.service_tier,
                usage.input_tokens,
                usage.output_tokens,
                usage.cache_read_tokens or 0,
                usage.cache_creation_tokens or 0,
            )
            if found.cost is not None:
                return found
        return found

    @staticmethod
    def _cached_inside(usage: Usage, declared: bool | None) -> Usage:
        """``usage`` with its cached tokens inside its input tokens (see the module's
        docstring)."""
        cached = (usage.cache_read_tokens or 0) + (usage.cache_creation_tokens or 0)
        if not cached or usage.input_tokens is None:
            return usage
        inside = declared
        if inside is None:
            provider = usage.provider or ""
            apart = provider in CACHE_APART or PROVIDERS.get(provider, provider) in CACHE_APART
            inside = not apart and usage.input_tokens >= cached
        if inside:
            return usage
        return dataclasses.replace(usage, input_tokens=usage.input_tokens + cached)


def _rate_cost(rate: Rate, usage: Usage) -> Decimal:
    cached = (usage.cache_read_tokens or 0) + (usage.cache_creation_tokens or 0)
    plain = max(0, (usage.input_tokens or 0) - cached)
    return (
        plain * rate.input_mtok
        + (usage.cache_read_tokens or 0) * rate.cache_read_mtok
        + (usage.cache_creation_tokens or 0) * rate.cache_write_mtok
        + (usage.output_tokens or 0) * rate.output_mtok
    ) / MILLION


@lru_cache(maxsize=1024)
def _known_provider(provider_id: str) -> bool:
    """Whether genai-prices knows this provider id."""
    try:
        data_snapshot.get_snapshot().find_provider(None, provider_id, None)
    except LookupError:
        return False
    return True


@lru_cache(maxsize=65536)
def _table_price(
    model: str,
    provider: str | None,  # a genai-prices provider id
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
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            found = genai_prices.calc_price(
                usage,
                model,
                provider_id=provider,
                genai_request_timestamp=at,
                price_context=context,
            )
        except LookupError:
            where = f" (provider {provider})" if provider else ""
            return Priced(None, None, f"no price for model {model!r}{where}")
        except (ValueError, TypeError) as exc:
            return Priced(None, None, f"genai-prices: {exc}")
    by = f"{TABLE}: {found.provider.id}/{found.model.id}"
    return Priced(found.total_price, by if provider else f"{by} (by the model's name alone)")


def price_book(path: Path | None) -> PriceBook:
    """The price book of the price file at ``path`` (genai-prices alone when None)."""
    from agentdocket.costs.overrides import read_prices

    return PriceBook(read_prices(path) if path is not None else None)


def price_book_from_env() -> PriceBook:
    """The price book of the price file ``$AGENTDOCKET_PRICES`` names (genai-prices alone
    when it names none)."""
    path = os.environ.get(PRICES_ENV)
    return price_book(Path(path) if path else None)
