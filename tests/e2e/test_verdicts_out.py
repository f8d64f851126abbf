"""Verdicts out over OpenTelemetry: ``export verdicts --otlp`` sends each verdict as a
``gen_ai.evaluation.result`` log record on the judged run's trace and span, through the SDK's
stock log exporters; a second agentdocket holding the same runs receives them as
``external.*`` verdicts, one for one, over HTTP and over gRPC, and keeps them once when they
are sent again. What came from outside is not sent back."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentdocket import scorers
from agentdocket.demo import run_demo
from agentdocket.scorers.runner import score_runs
from agentdocket.store import open_store
from tests.helpers.db import cli, migrated_sqlite
from tests.helpers.otlp_server import Server
from tests.helpers.waiting import until

RULES = ["answer.exact", "planner.suffix_match", "tools.slot_fill", "interaction.metrics"]


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[Server]:
    """A second agentdocket (SQLite) holding the demo's runs, not their verdicts, serving
    OTLP over HTTP and gRPC."""
    other = migrated_sqlite(tmp_path / "other.db")
    run_demo(other, spool_dir=tmp_path / "demo-spool")
    server = Server(other, tmp_path / "spool", grpc=True).start()
    yield server
    server.stop()


def _verdicts(url: str) -> list[dict[str, Any]]:
    with open_store(url) as store:
        return store.reader.rows("verdicts", "verdict_id")


def _sent(out: str) -> int:
    found = re.search(r"sent (\d+) verdicts", out)
    assert found, out
    return int(found.group(1))


def _same(verdict: dict[str, Any]) -> tuple[Any, ...]:
    """What a verdict says, the scorer's name as the receiver has it."""
    score = verdict["score"]
    return (
        verdict["trace_id"],
        verdict["scorer"].removeprefix("external."),
        verdict["scorer_version"],
        verdict["passed"],
        None if score is None else round(score, 9),
        verdict["label"],
        verdict["failure_type"],
        verdict["rationale"],
        verdict["ts"],
    )


def test_verdicts_travel_to_a_second_agentdocket_one_for_one(url: str, receiver: Server) -> None:
    run_demo(url)
    chosen = [scorers.get(n) for n in RULES]
    # a second version of one scorer, its verdicts made at the same instant: kept apart
    chosen.append(dataclasses.replace(scorers.get("tools.slot_fill"), version="2-other"))
    with open_store(url) as store:
        score_runs(store, chosen)
    every = _verdicts(url)
    assert len(every) == 30 * len(RULES) + 30
    # interaction.metrics' verdicts are measurements alone: no evaluation result to send
    ours = [v for v in every if v["scorer"] != "interaction.metrics"]

    logs = receiver.endpoint.replace("/v1/traces", "/v1/logs")
    out = cli(url, "export", "verdicts", "--otlp", logs, "--header", "authorization=Bearer x")
    assert _sent(out) == len(ours) == 120
    assert "left out 30 of measurements alone (no pass, score, label or failure)" in out
    until(
        lambda: len(_verdicts(receiver.url)) == len(ours),
        "the receiver to hold every verdict sent",
        detail=lambda: f"{len(_verdicts(receiver.url))} of {len(ours)}",
    )
    theirs = _verdicts(receiver.url)
    assert all(v["scorer"].startswith("external.") for v in theirs)
    assert sorted(map(_same, theirs)) == sorted(map(_same, ours))
    # the judged span: the run's root span, which the receiving store knows as the run's own
    with open_store(receiver.url) as store:
        roots = store.scoring.root_spans(sorted({v["trace_id"] for v in theirs}))
    assert all(v["details"]["span_id"] == roots[v["trace_id"]] for v in theirs)
    assert {v["details"]["agentdocket.verdict.id"] for v in theirs} == {
        v["verdict_id"] for v in ours
    }

    # sent again, over gRPC this time: the same records, kept once
    again = cli(
        url,
        *("export", "verdicts", "--otlp", receiver.grpc_endpoint),
        *("--protocol", "grpc", "--insecure", "--scorer", "answer.exact"),
    )
    assert _sent(again) == 30
    cli(url, "export", "verdicts", "--otlp", logs)  # and all of them over HTTP, once more
    assert len(_verdicts(receiver.url)) == len(ours)

    # what came from outside is not sent back
    back = cli(receiver.url, "export", "verdicts", "--otlp", logs)
    assert _sent(back) == 0
    assert f"left out {len(ours)} received from outside (external.*)" in back


def test_an_endpoint_that_does_not_answer_is_said_and_nothing_is_lost(url: str) -> None:
    from click.testing import CliRunner

    from agentdocket.cli import main

    run_demo(url)
    with open_store(url) as store:
        score_runs(store, [scorers.get("answer.exact")])
    done = CliRunner().invoke(
        main,
        ["--database", url, "export", "verdicts", "--otlp", "http://127.0.0.1:9/v1/logs"],
    )
    assert done.exit_code == 1
    assert "http://127.0.0.1:9/v1/logs did not take 30 evaluation records" in done.output
    assert "0 verdicts were sent before it" in done.output
    assert len(_verdicts(url)) == 30
