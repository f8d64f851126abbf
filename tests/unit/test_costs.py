"""Pricing one model call at its own time: by hand against genai-prices' published rates
(cache tokens included), a user's price file over it (checked on load, errors naming the
line), and calls no price covers left unpriced, never zero."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from agentdocket.costs.overrides import PriceFileError, parse_prices
from agentdocket.costs.prices import PriceBook, Usage

OPUS = {
    "model": "claude-opus-4-6",
    "provider": "anthropic",
    "input_tokens": 300_000,  # every prompt token: 50,000 read from the cache, 10,000 written
    "output_tokens": 2_000,
    "cache_read_tokens": 50_000,
    "cache_creation_tokens": 10_000,
}


def test_a_dated_call_is_priced_by_hand_with_its_cache_tokens() -> None:
    book = PriceBook()
    # From 2026-03-13 Anthropic prices Claude Opus 4.6 flat: $5 input, $0.5 cache read,
    # $6.25 cache write, $25 output per million tokens
    flat = book.price(Usage(at=datetime(2026, 3, 20, tzinfo=UTC), **OPUS))  # type: ignore[arg-type]
    by_hand = 240_000 * 5 + 50_000 * Decimal("0.5") + 10_000 * Decimal("6.25") + 2_000 * 25
    assert flat.cost == by_hand / 1_000_000 == Decimal("1.3375")
    assert flat.by == "genai-prices 0.2.3: anthropic/claude-opus-4-6"
    # before, a prompt over 200,000 tokens was priced at the long-context rates: $10, $1,
    # $12.5 and $37.5
    tiered = book.price(Usage(at=datetime(2026, 3, 1, tzinfo=UTC), **OPUS))  # type: ignore[arg-type]
    by_hand = 240_000 * 10 + 50_000 * 1 + 10_000 * Decimal("12.5") + 2_000 * Decimal("37.5")
    assert tiered.cost == by_hand / 1_000_000 == Decimal("2.65")


def test_calls_no_price_covers_are_unpriced_not_free() -> None:
    book = PriceBook()
    at = datetime(2026, 11, 1, tzinfo=UTC)
    unknown = book.price(Usage(model="scripted", at=at, input_tokens=10, output_tokens=5))
    assert unknown.cost is None and unknown.unpriced == "no price for model 'scripted'"
    untold = book.price(Usage(model="gpt-4o", provider="openai", at=at))
    assert untold.cost is None and untold.unpriced == "no token counts"


PRICES = """\
# negotiated and self-hosted rates
[[price]]
provider = "self-hosted"
model = "llama-3-70b*"
input_mtok = 0.5
output_mtok = 1.5

[[price]]
provider = "self-hosted"
model = "llama-3-70b*"
input_mtok = 0.25
output_mtok = 1.0
cache_read_mtok = 0.05
valid_from = 2026-06-01

[[price]]
model = "gpt-4o"
input_mtok = 2.0
output_mtok = 8.0
valid_from = 2026-10-01
"""


def test_a_price_file_prices_what_it_names_from_its_date_and_nothing_else() -> None:
    book = PriceBook(parse_prices(PRICES, "prices.toml"))
    early = Usage(
        model="llama-3-70b-instruct",
        provider="self-hosted",
        input_tokens=1_000_000,
        output_tokens=1_000_000,
        at=datetime(2026, 1, 5, tzinfo=UTC),
    )
    assert book.price(early).cost == Decimal("2.0") and book.price(early).by == "prices.toml:2"
    late = Usage(
        model="llama-3-70b-instruct",
        provider="self-hosted",
        input_tokens=1_000_000,
        cache_read_tokens=200_000,
        output_tokens=0,
        at=datetime(2026, 7, 1, tzinfo=UTC),
    )
    assert book.price(late).cost == Decimal("0.21")  # 800k x 0.25 + 200k x 0.05
    other = Usage(
        model="llama-3-70b-instruct",
        provider="vendor",
        input_tokens=1,
        output_tokens=1,
        at=datetime(2026, 7, 1, tzinfo=UTC),
    )
    assert book.price(other).cost is None  # the rates are the self-hosted deployment's
    gpt = {"model": "gpt-4o", "provider": "openai", "input_tokens": 1000, "output_tokens": 100}
    before = book.price(Usage(at=datetime(2026, 9, 1, tzinfo=UTC), **gpt))  # type: ignore[arg-type]
    after = book.price(Usage(at=datetime(2026, 10, 2, tzinfo=UTC), **gpt))  # type: ignore[arg-type]
    assert before.by is not None and before.by.startswith("genai-prices")
    assert after.cost == Decimal("0.0028") and after.by == "prices.toml:16"
    assert book.version.startswith("genai-prices 0.2.3 + prices.toml@")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[[price]]\nmodel = "m"\noutput_mtok = 1\n',
            "prices.toml:1: [[price]] #1: input_mtok is missing",
        ),
        (
            '\n\n[[price]]\nmodel = "m"\ninput_mtok = "cheap"\noutput_mtok = 1\n',
            "prices.toml:3: [[price]] #1: input_mtok must be a number",
        ),
        (
            '[[price]]\nmodel = "a"\ninput_mtok = 1\noutput_mtok = 1\n'
            '[[price]]\nmodel = "b"\ninput_mtok = -1\noutput_mtok = 1\n',
            "prices.toml:5: [[price]] #2: input_mtok must not be negative",
        ),
        (
            '[[price]]\nmodel = "m"\ninput_mtok = 1\noutput_mtok = 1\nvalid_from = "soon"\n',
            "valid_from must be a TOML date",
        ),
        ('[[price]]\nmodle = "m"\n', "prices.toml:1: [[price]] #1: unknown field 'modle'"),
        ("[[price]\n", "prices.toml: "),
        ("[rates]\nx = 1\n", "unknown table 'rates'"),
    ],
)
def test_a_bad_price_file_names_the_line_and_field(text: str, message: str) -> None:
    with pytest.raises(PriceFileError) as caught:
        parse_prices(text, "prices.toml")
    assert message in str(caught.value)


def test_a_judge_named_provider_colon_model_is_priced_as_that_providers_model() -> None:
    """A judge given as ``--judge openai:gpt-4o`` records its calls under that name; they are
    priced as OpenAI's gpt-4o. Another call's colons are its model's own (Bedrock's ids)."""
    at = datetime(2026, 11, 1, tzinfo=UTC)
    book = PriceBook()
    tokens = {"input_tokens": 1000, "output_tokens": 100}
    judge = Usage.of_call(
        {"model": "openai:gpt-4o", "attributes": {"judge_cache_key": "k"}, **tokens}, at
    )
    assert (judge.provider, judge.model) == ("openai", "gpt-4o")
    plain = book.price(Usage(model="gpt-4o", provider="openai", at=at, **tokens))
    assert plain.cost is not None and book.price(judge).cost == plain.cost
    google = Usage.of_call(
        {"model": "google_genai:gemini-1.5-pro", "attributes": {"judge_cache_key": "k"}, **tokens},
        at,
    )
    assert book.price(google).by == "genai-prices 0.2.3: google/gemini-1.5-pro"
    agent = Usage.of_call({"model": "openai:gpt-4o", **tokens}, at)  # not a judge's call
    assert (agent.provider, agent.model) == (None, "openai:gpt-4o")
    fine_tuned = Usage.of_call(
        {"model": "ft:gpt-4o-mini:acme:x", "attributes": {"judge_cache_key": "k"}, **tokens}, at
    )
    assert (fine_tuned.provider, fine_tuned.model) == (None, "ft:gpt-4o-mini:acme:x")
