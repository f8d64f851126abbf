"""Verdicts out, live: a follower's ``[export]`` sends each new verdict as a
``gen_ai.evaluation.result`` record as it is stored, exactly once per verdict through a
SIGKILL of the follower (its cursor moves only past what the endpoint took); an endpoint away
holds nothing back for good, and a record it refuses is isolated as a dead letter while the
rest go through. The endpoint is a second agentdocket, behind a gate that counts, fails and
holds requests (:mod:`tests.helpers.otlp_gate`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentdocket import scorers
from agentdocket.demo import run_demo
from agentdocket.outbound.forward import Forwarder, cursor_name
from agentdocket.outbound.otlp import EvaluationSender, SendFailed
from agentdocket.scorers.runner import score_runs
from agentdocket.store import open_store
from agentdocket.store.dead_letters import OUTBOUND_RETRY
from tests.helpers.db import cli, migrated_sqlite
from tests.helpers.otlp_gate import Gate
from tests.helpers.otlp_server import Server, start_cli
from tests.helpers.waiting import until

JUDGED = ["answer.exact", "tools.slot_fill", "planner.suffix_match"]


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[Server]:
    """A second agentdocket (SQLite) holding the demo's runs, not their verdicts."""
    other = migrated_sqlite(tmp_path / "other.db")
    run_demo(other, spool_dir=tmp_path / "demo-spool")
    server = Server(other, tmp_path / "spool").start()
    yield server
    server.stop()


@pytest.fixture
def gate(receiver: Server) -> Iterator[Gate]:
    g = Gate(receiver.endpoint.replace("/v1/traces", "/v1/logs")).start()
    yield g
    g.stop()


def _ours(url: str) -> set[str]:
    """The verdict ids of the scorers followed."""
    with open_store(url) as store:
        rows = store.reader.rows("verdicts", "verdict_id")
    return {v["verdict_id"] for v in rows if v["scorer"] in JUDGED}


def _received(url: str) -> dict[str, dict[str, Any]]:
    """The receiver's verdicts by the id of the verdict they were sent from."""
    with open_store(url) as store:
        rows = store.reader.rows("verdicts", "verdict_id")
    return {v["details"]["agentdocket.verdict.id"]: v for v in rows}


def test_a_forwarder_waits_out_an_outage_and_isolates_a_refused_record(
    url: str, receiver: Server, gate: Gate
) -> None:
    run_demo(url)
    with open_store(url) as store:
        score_runs(store, [scorers.get("answer.exact")])  # before the forwarder: history
        sender = EvaluationSender(gate.endpoint, timeout=1.0)
        key = cursor_name("t", gate.endpoint)
        forwarder = Forwarder(store.arrivals, store.scoring, store.dead_letters, sender, key)
        assert forwarder.round() is False  # it starts with the verdicts made from now on
        score_runs(store, [scorers.get("tools.slot_fill"), scorers.get("planner.suffix_match")])
        new = {
            v["verdict_id"]
            for v in store.reader.rows("verdicts", "verdict_id")
            if v["scorer"] != "answer.exact"
        }
        assert len(new) == 60
        start = forwarder.position

        gate.down = True  # the endpoint away: nothing moves, nothing is lost
        with pytest.raises(SendFailed):
            forwarder.round()
        assert store.arrivals.cursor(key) == start and not gate.passed

        gate.down = False  # back, refusing one record: the others go through
        refused = sorted(new)[7]
        gate.refuse = {refused}
        forwarder.batch = 25
        while forwarder.round():
            pass
        assert set(gate.passed) == new - {refused}
        assert set(gate.passed.values()) == {1}
        assert forwarder.stats.sent == 59 and forwarder.stats.refused == 1
        letters = store.dead_letters.letters()
        assert [(d["source"], d["trace_id"]) for d in letters] == [
            (f"export:otlp {gate.endpoint}", json.loads(letters[0]["raw"])["trace_id"])
        ]
        assert json.loads(letters[0]["raw"])["attributes"]["agentdocket.verdict.id"] == refused
        assert "refused this gen_ai.evaluation.result record" in letters[0]["error"]
        [retried] = store.dead_letters.retry()
        assert (retried.outcome, retried.error) == ("undecodable", OUTBOUND_RETRY)

        # restarted: from its cursor, nothing sent twice
        again = Forwarder(store.arrivals, store.scoring, store.dead_letters, sender, key)
        assert again.position == forwarder.position
        assert again.round() is False
        sender.close()
    assert set(_received(receiver.url)) == new - {refused}


@pytest.mark.slow
def test_live_export_sends_each_verdict_once_through_a_sigkill(
    url: str, receiver: Server, gate: Gate, tmp_path: Path
) -> None:
    run_demo(url)
    config = tmp_path / "scoring.toml"
    config.write_text(
        '[follow]\nname = "live"\npoll_seconds = 0.2\n'
        + "".join(f'[[scorer]]\nname = "{n}"\n' for n in JUDGED)
        + f'[export]\notlp = "{gate.endpoint}"\nbatch = 5\n'
    )
    log = tmp_path / "follow.log"
    follow = start_cli(url, log, "score", "--follow", "--config", str(config))
    try:
        # killed twice with a request in flight (requests of 5 records): the first never
        # reaches the endpoint, the second does, after its sender died
        for passed, deliver in ((20, False), (50, True)):
            gate.hold_after(passed)
            until(gate.held.is_set, "a request held", detail=log.read_text, seconds=120)
            follow.kill()
            follow.wait()
            until(lambda: len(_received(receiver.url)) == passed, f"{passed} received")  # noqa: B023
            gate.release(deliver)
            follow = start_cli(url, log, "score", "--follow", "--config", str(config))
        ours = _ours(url)
        assert len(ours) == 90
        until(
            lambda: set(_received(receiver.url)) == ours,
            "every verdict received",
            detail=lambda: f"{len(_received(receiver.url))} of 90\n{log.read_text()}",
            seconds=120,
        )
    finally:
        follow.terminate()
        assert follow.wait(30) == 0, log.read_text()
    # each verdict reached the endpoint; twice only the batch delivered after its sender died
    assert set(gate.passed) == ours
    assert sum(gate.passed.values()) - len(ours) == 5
    received = _received(receiver.url)
    assert {v["scorer"] for v in received.values()} == {f"external.{n}" for n in JUDGED}
    [sending] = [
        f
        for f in json.loads(cli(url, "followers", "--format", "json"))
        if f["follower"].startswith("export:")
    ]
    assert sending["follower"] == f"export:live:{gate.endpoint}"
    assert sending["events_behind"] == 0 and sending["finished_runs_behind"] is None


def test_serve_score_sends_every_verdict_it_makes(
    sqlite_url: str, receiver: Server, gate: Gate, tmp_path: Path
) -> None:
    """The sender starts before the follower inside `serve`: none of its verdicts is made
    before the sender's cursor is placed."""
    run_demo(sqlite_url)
    config = tmp_path / "scoring.toml"
    config.write_text(
        "".join(f'[[scorer]]\nname = "{n}"\n' for n in JUDGED)
        + f'[export]\notlp = "{gate.endpoint}"\n'
    )
    server = Server(sqlite_url, tmp_path / "serve-spool", "--score", "--config", str(config))
    server.start()
    try:
        until(
            lambda: (
                len(_ours(sqlite_url)) == 90 and set(_received(receiver.url)) == _ours(sqlite_url)
            ),
            "every verdict judged and received",
            detail=lambda: f"{len(_received(receiver.url))} received\n{server.log.read_text()}",
            seconds=120,
        )
    finally:
        server.stop()
    assert "sending each new verdict to" in server.log.read_text()
