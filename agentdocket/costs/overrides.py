"""A user's price file: rates for private deployments, fine-tuned and self-hosted models and
negotiated prices, over the ``genai-prices`` table.

One ``[[price]]`` table per rate, in US dollars per million tokens::

    [[price]]
    provider = "self-hosted"      # optional: any provider when absent
    model = "llama-3-70b*"        # the model's name, or a pattern (fnmatch: * and ?)
    input_mtok = 0.50             # uncached input tokens
    output_mtok = 1.50
    cache_read_mtok = 0.05        # optional: input_mtok when absent
    cache_write_mtok = 0.60       # optional: input_mtok when absent
    valid_from = 2026-01-01       # optional: from the beginning when absent

A call takes the rate of the latest ``valid_from`` on or before its own time among the tables
that name its model (and provider); at equal dates, the first in the file.

A ``[[provider]]`` table says how to read a provider's calls::

    [[provider]]
    name = "my-vllm"              # the provider as the spans name it
    priced_as = "openai"          # optional: price its calls from genai-prices as this one's
    cached_in_input = true        # optional: whether its input tokens count the cached ones

A provider genai-prices does not know is unpriced unless a ``[[price]]`` names it or a
``[[provider]]`` maps it. The file is checked whole when it is read: an error names the file,
the line of the table and the field.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
import tomllib
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

from agentdocket.errors import AgentdocketError

FIELDS = frozenset(
    {
        "provider",
        "model",
        "input_mtok",
        "output_mtok",
        "cache_read_mtok",
        "cache_write_mtok",
        "valid_from",
    }
)
PROVIDER_FIELDS = frozenset({"name", "priced_as", "cached_in_input"})
TABLE = re.compile(r"^\s*\[\[\s*price\s*\]\]")
PROVIDER_TABLE = re.compile(r"^\s*\[\[\s*provider\s*\]\]")
MILLION = Decimal(1_000_000)


class PriceFileError(AgentdocketError, ValueError):
    """A price file that cannot be read; the message names the file, line and field."""


@dataclass(frozen=True)
class Rate:
    model: str
    input_mtok: Decimal
    output_mtok: Decimal
    cache_read_mtok: Decimal
    cache_write_mtok: Decimal
    provider: str | None = None
    valid_from: datetime | None = None
    line: int = 0

    def matches(self, model: str, provider: str | None) -> bool:
        if self.provider is not None and self.provider != provider:
            return False
        return fnmatch.fnmatchcase(model.lower(), self.model.lower())


@dataclass(frozen=True)
class ProviderSetting:
    """How a provider's calls are read: priced as another provider, cached tokens in input."""

    name: str
    priced_as: str | None = None
    cached_in_input: bool | None = None
    line: int = 0


@dataclass(frozen=True)
class Overrides:
    rates: tuple[Rate, ...]
    source: str  # the file's name
    digest: str  # of its content: part of the price table's version
    providers: tuple[ProviderSetting, ...] = ()

    def provider(self, name: str | None) -> ProviderSetting | None:
        return next((p for p in self.providers if name is not None and p.name == name), None)

    def rate(self, model: str, provider: str | None, at: datetime) -> Rate | None:
        best: Rate | None = None
        for rate in self.rates:
            if not rate.matches(model, provider):
                continue
            if rate.valid_from is not None and rate.valid_from > at:
                continue
            start = rate.valid_from or datetime.min.replace(tzinfo=UTC)
            held = (best.valid_from or datetime.min.replace(tzinfo=UTC)) if best else None
            if held is None or start > held:
                best = rate
        return best


def _money(table: dict[str, object], key: str, where: str, default: Decimal | None) -> Decimal:
    value = table.get(key)
    if value is None:
        if default is None:
            raise PriceFileError(f"{where}: {key} is missing")
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PriceFileError(f"{where}: {key} must be a number (US dollars per million tokens)")
    if value < 0:
        raise PriceFileError(f"{where}: {key} must not be negative")
    return Decimal(str(value))


def _start(value: object, where: str) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    raise PriceFileError(f"{where}: valid_from must be a TOML date (2026-01-01)")


def parse_prices(text: str, source: str = "prices") -> Overrides:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PriceFileError(f"{source}: {exc}") from None
    extra = sorted(set(doc) - {"price", "provider"})
    if extra:
        raise PriceFileError(
            f"{source}: unknown table {extra[0]!r} (rates are [[price]] tables, providers "
            "[[provider]] tables)"
        )
    tables = doc.get("price", [])
    if not isinstance(tables, list):
        raise PriceFileError(f"{source}: price must be [[price]] tables")
    lines = [i + 1 for i, line in enumerate(text.splitlines()) if TABLE.match(line)]
    rates = []
    for i, table in enumerate(tables):
        line = lines[i] if i < len(lines) else 0
        where = f"{source}:{line}: [[price]] #{i + 1}"
        unknown = sorted(set(table) - FIELDS)
        if unknown:
            raise PriceFileError(f"{where}: unknown field {unknown[0]!r}")
        model = table.get("model")
        if not isinstance(model, str) or not model.strip():
            raise PriceFileError(f"{where}: model is missing (a name or a pattern)")
        provider = table.get("provider")
        if provider is not None and not isinstance(provider, str):
            raise PriceFileError(f"{where}: provider must be a text")
        input_rate = _money(table, "input_mtok", where, None)
        rates.append(
            Rate(
                model=model.strip(),
                provider=provider,
                input_mtok=input_rate,
                output_mtok=_money(table, "output_mtok", where, None),
                cache_read_mtok=_money(table, "cache_read_mtok", where, input_rate),
                cache_write_mtok=_money(table, "cache_write_mtok", where, input_rate),
                valid_from=_start(table.get("valid_from"), where),
                line=line,
            )
        )
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    return Overrides(tuple(rates), source, digest, _providers(doc, text, source))


def _providers(doc: dict[str, object], text: str, source: str) -> tuple[ProviderSetting, ...]:
    tables = doc.get("provider", [])
    if not isinstance(tables, list):
        raise PriceFileError(f"{source}: provider must be [[provider]] tables")
    lines = [i + 1 for i, line in enumerate(text.splitlines()) if PROVIDER_TABLE.match(line)]
    out: list[ProviderSetting] = []
    for i, table in enumerate(tables):
        line = lines[i] if i < len(lines) else 0
        where = f"{source}:{line}: [[provider]] #{i + 1}"
        unknown = sorted(set(table) - PROVIDER_FIELDS)
        if unknown:
            raise PriceFileError(f"{where}: unknown field {unknown[0]!r}")
        name, priced_as = table.get("name"), table.get("priced_as")
        inside = table.get("cached_in_input")
        if not isinstance(name, str) or not name.strip():
            raise PriceFileError(f"{where}: name is missing (the provider as spans name it)")
        if priced_as is not None and (not isinstance(priced_as, str) or not priced_as.strip()):
            raise PriceFileError(f"{where}: priced_as must be a provider's name")
        if inside is not None and not isinstance(inside, bool):
            raise PriceFileError(f"{where}: cached_in_input must be true or false")
        if any(p.name == name for p in out):
            raise PriceFileError(f"{where}: provider {name!r} is described twice")
        out.append(ProviderSetting(name, priced_as, inside, line))
    return tuple(out)


def read_prices(path: Path) -> Overrides:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PriceFileError(f"{path}: {exc.strerror or exc}") from None
    return parse_prices(text, str(path))
