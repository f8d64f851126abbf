"""A judge's budget in money: a follower prices the calls its judge made (from their
``llm.called`` events, at their time, with a price file over genai-prices) and takes them from
a bucket of dollars refilled at ``usd_per_hour``; runs past it wait, none is dropped, and they
are judged as the hours pass (an injected clock). Real stores, SQLite and PostgreSQL."""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.messages.ai import UsageMetadata
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from agentdocket import scorers
from agentdocket.costs.overrides import parse_prices
from agentdocket.demo import run_demo
from agentdocket.follow.config import FollowConfig, Rule
from agentdocket.follow.follower import Follower
from agentdocket.follow.metrics import FollowerCollector
from agentdocket.follow.selection import Budget, Followed, MoneyBudget
from agentdocket.store import Store, open_store

SCORER = "answer.reference"
REPLY = "The answer holds the facts.\nConclusion: Match\nScore: 4"
# $1000 per million tokens: a call of 100 tokens in and 25 out costs $0.125 (exact in binary)
PRICES = """\
[[price]]
model = "fake-judge"
input_mtok = 1000
output_mtok = 1000
"""
CALL_USD = 0.125
PER_HOUR = 0.5  # four calls an hour


def _judge(name: str) -> GenericFakeChatModel:
    """A fake chat model whose every reply reports 100 tokens in and 25 out."""
    usage = UsageMetadata(input_tokens=100, output_tokens=25, total_tokens=125)
    reply = AIMessage(REPLY, usage_metadata=usage)
    return GenericFakeChatModel(name=name, messages=iter([reply] * 1000))


def _followed(model: GenericFakeChatModel, rule: Rule, clock: list[float]) -> Followed:
    base = scorers.get(SCORER)
    scorer = dataclasses.replace(base, config={**base.config, "model": model})

    def hours() -> float:
        return clock[0] * 3600

    budget = Budget(rule.calls_per_minute, clock=hours) if rule.calls_per_minute else None
    money = MoneyBudget(rule.usd_per_hour, clock=hours) if rule.usd_per_hour else None
    return Followed(scorer, rule, budget, money)


def _judged(store: Store) -> Counter[str]:
    rows = store.recorder.read("SELECT trace_id FROM verdicts WHERE scorer = ?", [SCORER])
    return Counter(r[0] for r in rows)


def _metrics(follower: Follower) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    registry = CollectorRegistry()
    registry.register(FollowerCollector(follower))
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(generate_latest(registry).decode())
        for s in family.samples
    }


def test_a_money_budget_defers_runs_past_it_and_judges_them_as_it_refills(
    url: str, tmp_path: Path
) -> None:
    run_demo(url, spool_dir=tmp_path / "spool")
    rule = Rule(name=SCORER, usd_per_hour=PER_HOUR, concurrency=1)
    hours = [0.0]
    followed = _followed(_judge("fake-judge"), rule, hours)
    config = FollowConfig(rules=(rule,), name="money", prices=parse_prices(PRICES, "prices.toml"))
    label = followed.label
    with open_store(url) as store:
        runs = set(store.reader.trace_ids(dataset="concerts-demo"))
        follower = Follower(store, config, [followed])
        stats = follower.stats
        rounds = 0
        while set(_judged(store)) != runs:
            assert rounds < 200, "the budget never let every run through"
            spent = stats.spend_usd.get(label, 0.0)
            added = stats.added.get(label, 0)
            deferred = stats.deferred.get(label, 0)
            follower.round()
            rounds += 1
            if stats.added.get(label, 0) > added:
                # a round pays only from money in the bucket: what was spent before it is
                # within the first hour's dollars and what has refilled since
                assert spent < PER_HOUR * (1 + hours[0])
            elif set(_judged(store)) != runs:
                # past the budget: runs wait behind the cursor, none dropped
                assert stats.deferred.get(label, 0) > deferred
                assert store.arrivals.cursor(follower.key) < follower.position
                follower.round()  # the same moment again: the bucket is still short
                assert stats.added.get(label, 0) == added
                hours[0] += 0.25  # a quarter of an hour: $0.125 back, one call
        assert hours[0] > 2  # it took hours' budgets
        judged = _judged(store)
        assert set(judged) == runs and set(judged.values()) == {1}  # each run judged once
        assert store.arrivals.cursor(follower.key) == follower.position
        calls = stats.judge_calls[label]
        assert stats.spend_usd[label] == calls * CALL_USD  # every call priced, at its rate
        assert stats.cache_hits[label] > 0  # repeated questions: answered free from the cache
        assert stats.deferred[label] > 0
        samples = _metrics(follower)
    scorer = (("scorer", label),)
    assert samples[("agentdocket_judge_spend_usd_total", scorer)] == calls * CALL_USD
    assert samples[("agentdocket_judge_unpriced_calls_total", scorer)] == 0
    assert samples[("agentdocket_judge_calls_total", scorer)] == calls
    assert samples[("agentdocket_judge_deferred_total", scorer)] == stats.deferred[label]


def test_judge_calls_no_price_covers_count_against_calls_only(
    url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An unpriced judge is not held by its money budget (it is counted, and logged); its
    calls budget still holds it."""
    run_demo(url, spool_dir=tmp_path / "spool")
    rule = Rule(name=SCORER, usd_per_hour=PER_HOUR, calls_per_minute=6, concurrency=1)
    hours = [0.0]
    followed = _followed(_judge("house-judge"), rule, hours)
    config = FollowConfig(rules=(rule,), name="unpriced", prices=parse_prices(PRICES, "p.toml"))
    label = followed.label
    with open_store(url) as store:
        runs = set(store.reader.trace_ids(dataset="concerts-demo"))
        follower = Follower(store, config, [followed])
        caplog.set_level(logging.WARNING, logger="agentdocket.follow")
        for _ in range(100):
            follower.round()
            if set(_judged(store)) == runs:
                break
            assert follower.stats.deferred[label] > 0  # by the calls budget
            hours[0] += 1 / 60  # a minute: six calls
        assert set(_judged(store)) == runs
        calls = follower.stats.judge_calls[label]
        assert hours[0] < 1 and calls > PER_HOUR / CALL_USD  # past what $0.5 would have paid
        assert follower.stats.unpriced_calls[label] == calls
        assert label not in follower.stats.spend_usd
        samples = _metrics(follower)
    told = [r.getMessage() for r in caplog.records if "unpriced" in r.getMessage()]
    assert len(told) == 1 and "no price for model 'house-judge'" in told[0]
    scorer = (("scorer", label),)
    assert samples[("agentdocket_judge_unpriced_calls_total", scorer)] == calls
    assert samples[("agentdocket_judge_spend_usd_total", scorer)] == 0
