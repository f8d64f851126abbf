"""A judge's money budget: the bucket of dollars (refill, spend, defer, the one-hour cap) on an
injected clock, and ``usd_per_hour`` and ``[follow] prices`` as a scoring config gives them;
and the calls budget's full bucket letting a dear run through."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from agentdocket.follow.config import ConfigFileError, load, parse
from agentdocket.follow.selection import Budget, MoneyBudget

ROOT = Path(__file__).resolve().parents[2]
SCORER = "interaction.metrics"


class Clock:
    def __init__(self) -> None:
        self.seconds = 0.0

    def __call__(self) -> float:
        return self.seconds

    def hours(self, n: float) -> None:
        self.seconds += n * 3600


def test_the_money_bucket_refills_spends_defers_and_holds_one_hour() -> None:
    clock = Clock()
    money = MoneyBudget(2.0, clock)  # $2 an hour; the bucket holds $2
    assert money.allow(10) == 1  # no cost seen yet: one run, to learn it
    money.spend(0.5, 1)  # it cost $0.50
    assert money.allow(10) == 3  # $1.50 left pays for three more
    money.spend(1.5, 3)
    assert money.allow(10) == 0  # spent: every run waits
    clock.hours(0.25)  # refills continuously: $0.50 a quarter of an hour
    assert money.allow(10) == 1
    clock.hours(10)  # a long idle time fills the bucket to one hour's dollars, no more
    assert money.allow(10) == 4 and money.dollars == 2.0
    assert money.allow(0) == 0

    # a round that cost more than foreseen leaves the bucket in debt, paid back first
    money.spend(3.0, 1)  # the bucket had $2: $1 owed
    assert money.allow(10) == 0
    clock.hours(0.5)
    assert money.allow(10) == 0 and money.dollars == 0.0  # out of debt, empty: not enough
    clock.hours(0.5)
    assert money.allow(10) == 1  # $1 at the new estimate, $1 a run

    # cached answers cost nothing, but the estimate keeps a tenth of the dearest run seen
    money.spend(0.0, 100)
    assert money.cost_per_run == 0.8 * 1.0 + 0.2 * (0.1 * 3.0)  # a tenth of the $3 run


def test_a_run_dearer_than_the_whole_bucket_is_judged_alone_when_it_is_full() -> None:
    clock = Clock()
    money = MoneyBudget(1.0, clock)
    assert money.allow(5) == 1
    money.spend(4.0, 1)  # one run cost four hours' dollars
    clock.hours(3.5)
    assert money.allow(5) == 0  # $0.50 of the $4 it costs
    clock.hours(0.5)
    assert money.allow(5) == 1  # full: one run, so that none waits for ever


def test_a_run_needing_more_calls_than_a_minute_holds_is_judged_alone_when_it_is_full() -> None:
    clock = Clock()
    calls = Budget(1, clock)  # one call a minute, for a judge that asks three times a run
    assert calls.allow(5) == 1
    calls.spend(3, 1)
    clock.seconds += 120
    assert calls.allow(5) == 0  # the two calls owed are paid back: empty
    clock.seconds += 60
    assert calls.allow(5) == 1  # full (one call), short of the 1.4 a run expected: one run


def test_a_judge_that_costs_nothing_is_not_held() -> None:
    money = MoneyBudget(1.0, Clock())
    money.allow(5)
    money.spend(0.0, 1)  # unpriced or cached: nothing taken
    assert money.allow(500) == 500


def test_usd_per_hour_is_read_beside_calls_per_minute_and_checked() -> None:
    both = parse({"scorer": [{"name": SCORER, "calls_per_minute": 60, "usd_per_hour": 2.5}]})
    assert both.rules[0].usd_per_hour == 2.5 and both.rules[0].calls_per_minute == 60
    money = parse({"scorer": [{"name": SCORER, "usd_per_hour": 3}]})
    assert money.rules[0].usd_per_hour == 3.0 and money.rules[0].calls_per_minute is None
    assert parse({"scorer": [{"name": SCORER}]}).rules[0].usd_per_hour is None
    for value, message in (
        (0, "scoring.toml: scorer[1].usd_per_hour: 0 would judge nothing (must be more than 0)"),
        (-1.5, "scoring.toml: scorer[1].usd_per_hour: -1.5 is out of range (must be at least"),
        ("2.50", "scoring.toml: scorer[1].usd_per_hour: expected a number, got '2.50'"),
        (True, "scoring.toml: scorer[1].usd_per_hour: expected a number, got True"),
    ):
        data = {"scorer": [{"name": SCORER}, {"name": SCORER, "usd_per_hour": value}]}
        with pytest.raises(ConfigFileError) as caught:
            parse(data, "scoring.toml")
        assert str(caught.value).startswith(message)


def test_the_price_file_is_read_from_the_configs_folder_and_checked_on_load(
    tmp_path: Path,
) -> None:
    bad = '[[price]]\nmodel = "m"\ninput_mtok = 1\n'
    (tmp_path / "prices.toml").write_text(bad)
    config = tmp_path / "scoring.toml"
    config.write_text(f'[follow]\nprices = "prices.toml"\n\n[[scorer]]\nname = "{SCORER}"\n')
    with pytest.raises(ConfigFileError) as caught:
        load(config)
    assert str(caught.value) == (
        f"{config}: follow.prices: {tmp_path / 'prices.toml'}:1: [[price]] #1: "
        "output_mtok is missing"
    )
    (tmp_path / "prices.toml").write_text(bad + "output_mtok = 2\n")
    prices = load(config).prices
    assert prices is not None and prices.rates[0].model == "m"
    config.write_text(f'[follow]\nprices = "nowhere.toml"\n\n[[scorer]]\nname = "{SCORER}"\n')
    with pytest.raises(ConfigFileError, match=r"scoring\.toml: follow\.prices: .*nowhere\.toml"):
        load(config)
    with pytest.raises(ConfigFileError, match=r"follow\.prices: expected a file name, got 3"):
        parse({"follow": {"prices": 3}, "scorer": [{"name": SCORER}]})


def test_the_live_scoring_pages_config_and_price_file_load(tmp_path: Path) -> None:
    """The config file and the price file that docs/scoring-live.md shows (TOML blocks, which
    the docs test does not run) are read as they are written."""
    page = (ROOT / "docs" / "scoring-live.md").read_text()
    blocks = re.findall(r"```toml\n(.*?)```", page, re.S)
    configs = [b for b in blocks if "[[scorer]]" in b]
    prices = [b for b in blocks if "[[price]]" in b]
    assert len(configs) == 1 and len(prices) == 1
    assert 'prices = "prices.toml"' in configs[0] and "usd_per_hour" in configs[0]
    (tmp_path / "prices.toml").write_text(prices[0])
    (tmp_path / "scoring.toml").write_text(configs[0])
    config = load(tmp_path / "scoring.toml")
    assert any(r.usd_per_hour == 2.5 for r in config.rules)
    assert config.prices is not None and tomllib.loads(prices[0])["price"]
