"""A run of 50,000 spans (100,000 events), sent to `agentdocket serve` as an SDK's batch
processor sends it, 512 spans a request: stored whole; `runs show` gives its summary (counts,
tokens, its slowest and its failing spans) and pages through its steps; `export traces`
writes every event without holding the trace (its peak traced memory is a fraction of the
line it writes). The timings and memory figures are bench/huge_trace.py's."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from agentdocket.importers.interchange_export import write_traces_jsonl
from agentdocket.store import open_store
from tests.helpers.db import cli
from tests.helpers.fresh import fresh_url
from tests.helpers.huge_trace import HugeTrace, huge_trace, requests
from tests.helpers.otlp_server import Server

SPANS = 50_000


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest) -> str:
    return fresh_url(request)


@pytest.fixture
def sent(url: str, tmp_path: Path) -> Iterator[HugeTrace]:
    """The huge run, sent over many requests to a real receiver and settled in the store."""
    made, spans = huge_trace(SPANS)
    server = Server(url, tmp_path / "spool").start()
    try:
        with httpx.Client(timeout=120) as client:
            for n, body in enumerate(requests(spans), 1):
                reply = client.post(
                    server.endpoint, content=body, headers={"content-type": "application/json"}
                )
                assert reply.status_code == 200, (n, reply.text)
        assert n == -(-SPANS // 512)  # as many requests as a batch processor sends
        server.settled()
    finally:
        server.stop()
    yield made


def _show(url: str, trace: str, *args: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(cli(url, "runs", "show", trace, "--format", "json", *args))
    return out


def test_a_50000_span_run_is_summarised_paged_and_exported(
    sent: HugeTrace, url: str, tmp_path: Path
) -> None:
    trace = sent.trace_id
    shown = _show(url, trace[:12])
    summary = shown["summary"]
    # every span arrived: a model call is an llm.called and a plan, a tool a call and a return
    pairs = (SPANS - 1) // 2
    assert summary["kinds"]["llm.called"] == summary["kinds"]["tool.returned"] == pairs
    assert summary["events"] == 4 * pairs + 4 == 100_000  # and the root's start, answer, end
    assert summary["failing"] == len(sent.failing) == 24
    assert [e["span_id"] for e in shown["failing"]] == sent.failing
    assert all(e["payload"]["error"] for e in shown["failing"])
    assert [e["span_id"] for e in shown["slowest"][:3]] == sent.slowest
    assert len(shown["slowest"]) == 10
    assert summary["input_tokens"] > 0 and summary["cost_usd"] is None  # not priced yet
    assert shown["pages"] == {"count": 1_000, "size": 100}
    assert shown["run"]["question"] == sent.question and shown["run"]["answer"] == sent.answer

    text = cli(url, "runs", "show", trace, "--width", "60")
    assert "failing steps: 24" in text and "slowest 10 steps" in text
    assert "every step: 1,000 pages of 100" in text
    assert text.count("order A-") >= 24  # each failing tool call listed with its error

    # pages: consecutive, in trace order, the last one short
    first, second = (_show(url, trace, "--page", str(k), "--page-size", "70") for k in (1, 2))
    assert first["pages"] == second["pages"] == -(-100_000 // 70)
    both = [(e["seq"], e["ts"], e["event_id"]) for e in first["events"] + second["events"]]
    assert len(both) == 140 and both == sorted(both) and len(set(both)) == 140
    last = _show(url, trace, "--page", str(first["pages"]), "--page-size", "70")
    assert len(last["events"]) == 100_000 % 70
    beyond = cli(url, "runs", "show", trace, "--page", "5000", "--page-size", "70")
    assert "no steps on page 5,000" in beyond

    # the export: every event, written as read; the memory it held is a fraction of the line
    out = tmp_path / "runs.jsonl"
    with open_store(url) as store, out.open("wb") as fh:
        tracemalloc.start()
        try:
            assert write_traces_jsonl(store, fh) == 1
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    [line] = out.read_bytes().splitlines()
    record = orjson.loads(line)
    assert record["trace_id"] == trace and record["run"]["status"] == "ok"
    # the run's own start and finish are its fields; every other event is a step
    assert len(record["steps"]) == 100_000 - 2 and record["verdicts"] == []
    assert {s["span_id"] for s in record["steps"]} == sent.span_ids
    assert len(sent.span_ids) == SPANS
    # held whole, the trace's events and record take several times the line; a page of them
    # (5,000 events) takes 8 MB on SQLite, 20 MB on PostgreSQL (its payloads come as dicts)
    assert peak < len(line) / 2, (peak, len(line))
