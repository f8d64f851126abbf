"""Reading span attribute values back: JSON-safe values, and the values frameworks record
their own way (keyword-wrapped arguments, documents' ids in metadata, exceptions, the tools
offered to a model)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from agentdocket.ingest import attributes as A

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def ts_of(ns: int | None) -> datetime:
    """A time in nanoseconds since 1970 (OpenTelemetry's clock) as an aware UTC datetime."""
    return EPOCH + timedelta(microseconds=(ns or 0) // 1000)


def opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def opt_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def attribute_json(value: Any) -> Any:
    """A span attribute as JSON (sequences become arrays; NaN and infinities become text)."""
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [attribute_json(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def jsonable(value: Any) -> Any:
    """A value parsed from JSON text is JSON already; anything else goes through ``dumps``
    (a non-finite float becomes its text, as JSON has no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, str | int | float | bool | list | dict):
        return value
    return A.loads(A.dumps(value))


# --- values frameworks record their own way ------------------------------------------------

# Where frameworks keep a retrieved document's id and score when the standard attributes are
# missing (LlamaIndex, LangChain retrievers), in order of preference.
METADATA_IDS = ("id", "doc_id", "document_id", "node_id", "source")
METADATA_SCORES = ("score", "relevance_score", "similarity")


def event_value(events: Sequence[Any] | None, name: str, key: str) -> Any:
    """The value of ``key`` in the first span event called ``name`` (the GenAI conventions'
    older event form), else None."""
    for event in events or ():
        if getattr(event, "name", None) == name:
            attrs = getattr(event, "attributes", None) or {}
            if attrs.get(key) is not None:
                return attrs[key]
    return None


def document_identity(
    found_id: Any, score: Any, metadata: Mapping[str, Any], position: int
) -> tuple[str, float | None]:
    """A retrieved document's id and score: the standard attributes, else the first of
    :data:`METADATA_IDS` / :data:`METADATA_SCORES` in its metadata, else its position and no
    score."""
    if found_id is None:
        found_id = next((metadata[k] for k in METADATA_IDS if metadata.get(k) is not None), None)
    if not isinstance(score, int | float) or isinstance(score, bool):
        score = next((metadata[k] for k in METADATA_SCORES if metadata.get(k) is not None), None)
    number = isinstance(score, int | float) and not isinstance(score, bool)
    return str(position if found_id is None else found_id), float(score) if number else None


def exception_text(events: Sequence[Any] | None) -> str | None:
    """The last exception recorded among a span's events (an ``exception`` event, as the
    OpenTelemetry conventions record one): ``Type: message``, or either alone."""
    for event in reversed(tuple(events or ())):
        if getattr(event, "name", None) != "exception":
            continue
        attrs = getattr(event, "attributes", None) or {}
        kind, message = attrs.get("exception.type"), attrs.get("exception.message")
        parts = [str(p) for p in (kind, message) if p not in (None, "")]
        if parts:
            return ": ".join(parts)
    return None


def tool_definitions(attrs: Mapping[str, Any]) -> list[Any]:
    """The tools offered to a model: GenAI's ``gen_ai.tool.definitions`` (JSON), else
    OpenInference's ``llm.tools.N.tool.json_schema``; definitions that are not JSON objects
    (a framework's printout of a tool) are left out."""
    given = A.loads(attrs.get(A.GEN_AI_TOOL_DEFINITIONS))
    if not isinstance(given, list):
        given = [A.loads(t.get(A.TOOL_JSON_SCHEMA)) for t in A.indexed(attrs, A.LLM_TOOLS)]
    return [jsonable(t) for t in given if isinstance(t, dict)]


def documents(indexed: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Retrieved documents from OpenInference's ``retrieval.documents.N.document.*``: id,
    score (see :func:`document_identity`), text and metadata."""
    out = []
    for i, d in enumerate(indexed):
        meta = A.loads(d.get(A.DOCUMENT_METADATA))
        meta = meta if isinstance(meta, dict) else {}
        content = d.get(A.DOCUMENT_CONTENT)
        found_id, score = document_identity(d.get(A.DOCUMENT_ID), d.get(A.DOCUMENT_SCORE), meta, i)
        out.append(
            {
                "id": found_id,
                "score": score,
                "text": str(content) if content is not None else None,
                "metadata": meta,
            }
        )
    return out


_PROVIDERS = (A.LLM_PROVIDER, A.GEN_AI_PROVIDER, A.GEN_AI_SYSTEM_OLD)


def reported_cost(attrs: Mapping[str, Any]) -> dict[str, Any] | None:
    """The cost a span reports for its model call (the provider's own figure, or its
    instrumentation's), by precedence: the GenAI conventions' ``gen_ai.usage.cost.amount``
    with ``.currency`` (default USD) and ``.source``; then, as the named exceptions, Langfuse's
    ``gen_ai.usage.cost`` and OpenInference's ``llm.cost.total``, both in US dollars. None
    when the span reports none (or not a finite number)."""
    for key, currency_key, source_key, source in (
        (A.GEN_AI_COST_AMOUNT, A.GEN_AI_COST_CURRENCY, A.GEN_AI_COST_SOURCE, None),
        (A.LANGFUSE_COST, None, None, "langfuse"),
        (A.LLM_COST_TOTAL, None, None, "openinference"),
    ):
        amount = attrs.get(key)
        if isinstance(amount, bool) or not isinstance(amount, int | float):
            continue
        if amount != amount or amount in (float("inf"), float("-inf")):
            continue
        currency = attrs.get(currency_key) if currency_key else None
        found = attrs.get(source_key) if source_key else source
        return {
            "amount": float(amount),
            "currency": str(currency) if currency else "USD",
            "source": str(found) if found else None,
        }
    return None


def llm_settings(attrs: Mapping[str, Any], *, foreign: bool) -> tuple[float | None, dict[str, Any]]:
    """A model call's temperature and free attributes: the provider, the service tier it was
    served at, the model that answered when it is not the model asked
    (``gen_ai.response.model``: a dated snapshot prices differently), the cost the span
    reports (:func:`reported_cost`), and for a foreign span the tools offered to the model
    (:func:`tool_definitions`)."""
    params = A.loads(attrs.get(A.LLM_INVOCATION_PARAMETERS))
    temperature = attrs.get(A.GEN_AI_REQUEST_TEMPERATURE)
    if temperature is None and isinstance(params, dict):
        temperature = params.get("temperature")
    extra = A.loads(attrs.get(A.LLM_ATTRIBUTES))
    extra = dict(extra) if isinstance(extra, dict) else {}
    for key in _PROVIDERS:
        provider = attrs.get(key)
        if provider:
            extra.setdefault("provider", str(provider))
            break
    for key in A.SERVICE_TIERS:
        tier = attrs.get(key)
        if tier and tier != "auto":
            extra.setdefault("service_tier", str(tier))
            break
    answered = attrs.get(A.GEN_AI_RESPONSE_MODEL)
    asked = attrs.get(A.GEN_AI_REQUEST_MODEL) or attrs.get(A.LLM_MODEL)
    if answered and asked and str(answered) != str(asked):
        extra.setdefault("response_model", str(answered))
    cost = reported_cost(attrs)
    if cost is not None:
        extra.setdefault("reported_cost", cost)
    tools = tool_definitions(attrs) if foreign else []
    if tools:
        extra.setdefault("tool_definitions", tools)
    if isinstance(temperature, int | float) and not isinstance(temperature, bool):
        return float(temperature), extra
    return None, extra
