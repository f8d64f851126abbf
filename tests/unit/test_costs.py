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
    # Anthropic counts cached tokens apart: 240,000 uncached, 50,000 read from the cache and
    # 10,000 written, 300,000 prompt tokens in all
    "input_tokens": 240_000,
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
    assert book.version.startswith("genai-prices 0.2.3, rules 2 + prices.toml@")


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


# --- what is priced, and as whom ---------------------------------------------------------------

AT = datetime(2024, 6, 1, tzinfo=UTC)


def test_the_model_that_answered_is_priced_when_it_is_the_more_specific() -> None:
    """gpt-4o on 2024-06-01 answered as the dated snapshot gpt-4o-2024-05-13: $5.00 per
    million input tokens, not the $2.50 of what gpt-4o came to mean later."""
    book = PriceBook()
    asked = Usage(model="gpt-4o", provider="openai", at=AT, input_tokens=1_000_000, output_tokens=0)
    answered = Usage(
        model="gpt-4o",
        provider="openai",
        at=AT,
        input_tokens=1_000_000,
        output_tokens=0,
        response_model="gpt-4o-2024-05-13",
    )
    assert book.price(answered).cost == Decimal("5")
    assert book.price(answered).by == "genai-prices 0.2.3: openai/gpt-4o-2024-05-13"
    assert book.price(asked).cost == Decimal("2.5")
    # an answering model that is not a more specific name of the one asked comes second
    other = Usage(
        model="gpt-4o",
        provider="openai",
        at=AT,
        input_tokens=1_000_000,
        output_tokens=0,
        response_model="gpt-4o-mini",
    )
    assert book.price(other).cost == Decimal("2.5")


def test_a_provider_genai_prices_does_not_know_is_unpriced_unless_the_file_says() -> None:
    """A self-hosted gpt-4o is not OpenAI's list price; a price file prices it or maps it."""
    selfhosted = Usage(
        model="gpt-4o", provider="vllm", at=AT, input_tokens=1_000_000, output_tokens=1_000_000
    )
    found = PriceBook().price(selfhosted)
    assert found.cost is None and found.unpriced is not None
    assert found.unpriced.startswith("unknown provider 'vllm'")
    mapped = PriceBook(parse_prices('[[provider]]\nname = "vllm"\npriced_as = "openai"\n'))
    assert mapped.price(selfhosted).cost == Decimal("2.5") + Decimal("10")
    priced = PriceBook(
        parse_prices(
            '[[price]]\nprovider = "vllm"\nmodel = "gpt-4o"\ninput_mtok = 0.1\noutput_mtok = 0.2\n'
        )
    )
    assert priced.price(selfhosted).cost == Decimal("0.3")
    # no provider at all: priced by the model's name, and the rate says so
    nameless = Usage(model="gpt-4o", at=AT, input_tokens=1_000_000, output_tokens=0)
    alone = PriceBook().price(nameless)
    assert alone.cost == Decimal("2.5") and alone.by is not None
    assert alone.by.endswith("(by the model's name alone)")


def test_a_call_missing_a_token_count_is_unpriced_with_the_reason() -> None:
    book = PriceBook()
    no_output = book.price(Usage(model="gpt-4o", provider="openai", at=AT, input_tokens=100))
    assert no_output.cost is None and no_output.unpriced == "no output token count"
    no_input = book.price(Usage(model="gpt-4o", provider="openai", at=AT, output_tokens=100))
    assert no_input.cost is None and no_input.unpriced == "no input token count"


# Each provider family's raw usage as its API reports it (and instrumentations pass it on),
# with how a span records it: genai-prices' own extraction of the raw usage is the reference.
FAMILIES = [
    (
        "openai",
        "chat",
        {
            "model": "gpt-4o",
            "usage": {
                "prompt_tokens": 5000,
                "completion_tokens": 300,
                "prompt_tokens_details": {"cached_tokens": 4000},
            },
        },
        {
            "model": "gpt-4o",
            "provider": "openai",
            "input_tokens": 5000,
            "output_tokens": 300,
            "cache_read_tokens": 4000,
        },
    ),
    (
        "anthropic",
        "default",
        {
            "model": "claude-3-5-sonnet",
            "usage": {
                "input_tokens": 1000,
                "output_tokens": 300,
                "cache_read_input_tokens": 4000,
                "cache_creation_input_tokens": 500,
            },
        },
        {
            "model": "claude-3-5-sonnet",
            "provider": "anthropic",
            "input_tokens": 1000,
            "output_tokens": 300,
            "cache_read_tokens": 4000,
            "cache_creation_tokens": 500,
        },
    ),
    (
        "google",
        "default",
        {
            "modelVersion": "gemini-2.5-flash",
            "usageMetadata": {
                "promptTokenCount": 5000,
                "candidatesTokenCount": 300,
                "cachedContentTokenCount": 4000,
            },
        },
        {
            "model": "gemini-2.5-flash",
            "provider": "gcp.gemini",
            "input_tokens": 5000,
            "output_tokens": 300,
            "cache_read_tokens": 4000,
        },
    ),
    (
        "aws",
        "default",
        {
            "usage": {
                "inputTokens": 1000,
                "outputTokens": 300,
                "cacheReadInputTokens": 4000,
                "cacheWriteInputTokens": 500,
            }
        },
        {
            "model": "anthropic.claude-3-5-sonnet-20240620-v1:0",
            "provider": "aws.bedrock",
            "input_tokens": 1000,
            "output_tokens": 300,
            "cache_read_tokens": 4000,
            "cache_creation_tokens": 500,
        },
    ),
]


@pytest.mark.parametrize("family,flavor,raw,recorded", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_each_provider_familys_cached_tokens_are_read_as_its_api_counts_them(
    family: str, flavor: str, raw: dict[str, object], recorded: dict[str, object]
) -> None:
    import genai_prices

    at = datetime(2025, 9, 1, tzinfo=UTC)
    extracted = genai_prices.extract_usage(raw, provider_id=family, api_flavor=flavor)
    expected = genai_prices.calc_price(
        extracted.usage, str(recorded["model"]), provider_id=family, genai_request_timestamp=at
    ).total_price
    ours = PriceBook().price(Usage(at=at, **recorded))  # type: ignore[arg-type]
    assert ours.cost == expected, (family, ours)
    # a price file can say a provider's instrumentation counts them inside after all
    if family == "anthropic":
        inside = PriceBook(
            parse_prices('[[provider]]\nname = "anthropic"\ncached_in_input = true\n')
        ).price(Usage(at=at, **{**recorded, "input_tokens": 5500}))  # type: ignore[arg-type]
        assert inside.cost == expected
