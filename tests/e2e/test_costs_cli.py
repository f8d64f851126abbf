"""What the demo costs, on the command line and on both databases: its scripted model priced
by a price file (genai-prices has no price for it: every call unpriced until then), cost per
run and per role, in runs show, report and compare, and as Parquet."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from agentdocket.cli import main
from agentdocket.demo import run_demo
from agentdocket.demo.agent import tokens

PRICES = '[[price]]\nmodel = "scripted"\ninput_mtok = 0.40\noutput_mtok = 1.60\n'


def _cli(url: str, *args: str) -> str:
    out = CliRunner().invoke(main, ["--database", url, *args])
    assert out.exit_code == 0, out.output
    return out.output


@pytest.fixture
def demo_url(url: str, tmp_path: Path) -> str:
    run_demo(url, spool_dir=tmp_path / "spool")
    return url


def test_the_demo_costs_per_run_and_per_role(demo_url: str, tmp_path: Path) -> None:
    unpriced = _cli(demo_url, "costs", "refresh")
    assert "83 model calls priced by genai-prices" in unpriced and ": 83 unpriced" in unpriced
    prices = tmp_path / "prices.toml"
    prices.write_text(PRICES)
    priced = _cli(demo_url, "costs", "refresh", "--prices", str(prices))
    assert " ".join(priced.split()).endswith(": 0 unpriced") and "+ " in priced
    roles = json.loads(_cli(demo_url, "costs", "show", "--by", "role", "--format", "json"))
    by_role = {r["role"]: r for r in roles["rows"]}
    assert set(by_role) == {"planner", "slot_filler", "response_former"}
    for r in by_role.values():  # each role's cost is its tokens at the file's rates
        expected = (r["input_tokens"] * 0.40 + r["output_tokens"] * 1.60) / 1e6
        assert r["cost_usd"] == pytest.approx(expected) and r["unpriced_calls"] == 0
    runs = json.loads(_cli(demo_url, "costs", "show", "--by", "run", "--format", "json"))
    assert len(runs["rows"]) == 30 and sum(r["calls"] for r in runs["rows"]) == 83
    one = runs["rows"][0]
    shown = json.loads(
        _cli(demo_url, "runs", "show", one["trace_id"], "--prices", str(prices), "--format", "json")
    )
    assert shown["costs"]["total_usd"] == pytest.approx(one["cost_usd"])
    call = shown["costs"]["calls"][0]
    [event] = [e for e in shown["events"] if e["event_id"] == call["event_id"]]
    text = " ".join(m["content"] for m in event["payload"]["input_messages"])
    assert call["input_tokens"] == tokens(text)  # the scripted model's own count
    report = json.loads(_cli(demo_url, "report", "--by", "strategy", "--format", "json"))
    assert report["cost"]["calls"] == 83 and report["cost"]["total_usd"] == pytest.approx(
        sum(r["cost_usd"] for r in runs["rows"])
    )
    assert sum(g["cost"]["calls"] for g in report["groups"].values()) == 83
    out = tmp_path / "costs.parquet"
    _cli(demo_url, "export", "costs", "-o", str(out))
    frame = pl.read_parquet(out)
    assert frame.height == 83 and frame["cost"].null_count() == 0
    assert set(frame["role"]) == set(by_role)


def test_a_bad_price_file_is_refused_naming_the_line(demo_url: str, tmp_path: Path) -> None:
    prices = tmp_path / "prices.toml"
    prices.write_text(PRICES + '\n[[price]]\nmodel = "x"\ninput_mtok = 1\n')
    out = CliRunner().invoke(
        main, ["--database", demo_url, "costs", "refresh", "--prices", str(prices)]
    )
    assert out.exit_code == 1
    assert f"{prices}:6: [[price]] #2: output_mtok is missing" in out.output
