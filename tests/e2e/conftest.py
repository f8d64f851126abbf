"""The seeded databases the dashboard tests share (built once per session): one on PostgreSQL
and one on the Citus cluster, seeded alike."""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from agentdocket import dashboards, scorers
from agentdocket.demo import run_demo
from agentdocket.events import Event
from agentdocket.scorers.base import Outcome
from agentdocket.scorers.runner import score_runs
from agentdocket.scorers.session_runner import score_sessions
from agentdocket.store import DeadLetter, Store, open_store
from agentdocket.store.migrate import upgrade
from agentdocket.store.pipeline import PipelineSample, ScoringSample
from tests.helpers.db import SHARED, cli, drop_database, fresh_pg, require_shared
from tests.helpers.fresh import SERVERS
from tests.helpers.grammar_records import RECORDS

IBM_CASE = SHARED / "datasets" / "ibm-coalitions" / "single-models" / "mistral_all"
IBM_OTHER = IBM_CASE.parent / "mixtral-all"


REFERENCE = [
    "Rationale.\nConclusion: Match\nScore: 4",
    "Rationale.\nConclusion: Not Match\nScore: 2",
]
PEER = ["Rationale.\nFinal Decision: Perfect", "Rationale.\nFinal Decision: Imperfect"]


def _stricter(trace: Any, config: Any) -> Outcome | None:
    """planner.suffix_match 1.1 for the versions dashboard: extra steps fail."""
    outcome = scorers.get("planner.suffix_match", "1").fn(trace, config)
    if outcome is not None and outcome.passed and outcome.details.get("extra_steps"):
        return Outcome(passed=False, score=0.0, failure_type="planner:extra_steps")
    return outcome


def _postgres(request: pytest.FixtureRequest) -> tuple[str, Callable[[], None]]:
    pg_template = request.getfixturevalue("pg_template")
    url, name = fresh_pg(pg_template)
    return url, lambda: drop_database(pg_template[0], name)


def _citus(request: pytest.FixtureRequest) -> tuple[str, Callable[[], None]]:
    cluster = request.getfixturevalue("citus_cluster")
    name = f"agentdocket_seeded_{uuid.uuid4().hex[:8]}"
    url = cluster.make_database(name)
    upgrade(url, derived=dashboards.objects())
    return url, lambda: cluster.drop_database(name)


# a migrated database of each kind, and how to drop it
MAKE = {"postgresql": _postgres, "citus": _citus}


@pytest.fixture(scope="session", params=SERVERS)
def seeded(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A database of each kind seeded by the demo, two IBM imports, GRAMMAR results, the
    rule-based scorers and fake judges (the same rows on both)."""
    require_shared(IBM_CASE)
    url, drop = MAKE[request.param](request)
    try:
        seed(url, tmp_path_factory.mktemp(f"seed-{request.param}"))
        yield url
    finally:
        drop()


def seed(url: str, tmp: Path) -> None:
    """What the seeded tests read, stored into the migrated database at ``url``."""
    run_demo(url, spool_dir=tmp / "spool")
    cli(url, "import", "ibm-coalitions", str(IBM_CASE), "--dataset", "ibm-mistral")
    # a second model on the same cases: what the experiments dashboard compares
    cli(url, "import", "ibm-coalitions", str(IBM_OTHER), "--dataset", "ibm-mistral")
    results = tmp / "grammar.json"
    results.write_text(json.dumps(RECORDS))
    cli(url, "import", "grammar-results", str(results), "--dataset", "grammar-toy")
    _conversations(url, tmp / "talks")
    cli(url, "score")  # the session rule scorers among the others
    with open_store(url) as store:
        demo = [r["trace_id"] for r in store.reader.list_runs(dataset="concerts-demo", limit=None)]
        judge = scorers.get("answer.reference", "1")
        judge = dataclasses.replace(
            judge, config={**judge.config, "model": FakeListChatModel(responses=REFERENCE)}
        )
        peers = [
            dataclasses.replace(
                s, config={**s.config, "model": FakeListChatModel(responses=PEER * 3 + PEER[:1])}
            )
            for s in (
                scorers.get(f"review.peer.{t}", "1")
                for t in ("interaction_planning", "tool_employment", "information_synthesis")
            )
        ]
        stricter = dataclasses.replace(
            scorers.get("planner.suffix_match", "1"), version="1.1", fn=_stricter
        )
        score_runs(store, [judge, *peers, stricter], trace_ids=demo)
        ibm = [r["trace_id"] for r in store.reader.list_runs(dataset="ibm-mistral", limit=None)]
        score_runs(store, [stricter], trace_ids=ibm)
        goal = scorers.get("session.goal", "1")
        goal = dataclasses.replace(
            goal, config={**goal.config, "model": FakeListChatModel(responses=GOAL)}
        )
        score_sessions(store, [goal])
        store.dead_letters.keep([DeadLetter.of_raw('{"x": 1}', "test: refused", "seed")])
        _pipeline_samples(store)
        _labels(store, demo)
        _priced_calls(store, ibm)


def _priced_calls(store: Store, runs: list[str]) -> None:
    """A planner's call on gpt-4o in twenty IBM runs (the demo's scripted model has no price),
    then every call priced."""
    from agentdocket.costs.prices import PriceBook
    from agentdocket.costs.refresh import refresh
    from agentdocket.events import LlmCalled

    events = []
    for i, trace_id in enumerate(runs[:20]):
        run = store.reader.run(trace_id)
        assert run is not None and run["first_ts"] is not None
        call = LlmCalled(
            model="gpt-4o",
            role="planner",
            input_tokens=1000 + 100 * i,
            output_tokens=200,
            cache_read_tokens=100,
            attributes={"provider": "openai"},
        )
        events.append(
            Event.create(
                trace_id=trace_id, span_id="c" * 16, seq=10**6, ts=run["first_ts"], payload=call
            )
        )
    store.append(events)
    refresh(store, PriceBook())


def _labels(store: Store, runs: list[str]) -> None:
    """Two annotators' thumbs on eight demo runs (agreeing on six), and a user's thumbs-down
    sent by the application."""
    from agentdocket.events import Label
    from agentdocket.events.labels import label_event

    events = []
    for i, trace_id in enumerate(runs[:8]):
        for who in ("ana", "ben"):
            value = i % 2 == 0 if who == "ana" or i < 6 else i % 2 == 1
            events.append(
                label_event(
                    Label(f"{who}-{i}", trace_id, "thumbs", who, "queue", value, queue="seed")
                )
            )
    events.append(label_event(Label("app-1", runs[0], "thumbs", "user:7", "api", False)))
    store.append(events)


GOAL = [
    '{"reason": "booked", "is_hit": "yes"}',
    '{"reason": "never answered", "is_hit": "no"}',
    '{"reason": "the seat was not changed", "is_hit": "no"}',
]
# Three conversations of a support agent: one booked, one that looped and failed, one lost.
TALKS = {
    "s-book": [("A room in Paris", "For which nights?"), ("The 3rd to the 5th", "Booked.")],
    "s-loop": [
        ("Where is my parcel?", "It is on its way."),
        ("Where is my parcel? It has not come", "It is on its way."),
        ("Cancel the order", None),
    ],
    "s-lost": [("Change my seat", None)],
}


def _conversations(url: str, spool: Path) -> None:
    from tests.helpers.recorder import Recorder

    recorder = Recorder(url, spool)
    try:
        for session, turns in TALKS.items():
            for question, answer in turns:
                run = recorder.tracer.run("support", question=question, conversation=session)
                try:
                    with run:
                        if answer is None:
                            raise RuntimeError("the booking service is away")
                        run.respond(answer)
                except RuntimeError:
                    pass
        recorder.flush()
    finally:
        recorder.close()


def _pipeline_samples(store: Store) -> None:
    """What a receiver and a follower report over half a minute."""
    now = datetime.now(UTC)
    for i, at in enumerate((now - timedelta(seconds=30), now - timedelta(seconds=15))):
        store.pipeline.record(
            PipelineSample(at, "host:1", 100 * i, i, 3.0 * i or None, 40 * i, 300 * i, 0, i, 0)
        )
        store.pipeline.record(
            ScoringSample(at, "live:abc", "host:2", 10 * i, 20 * i, 0, 0.2, 0.4, 0.5, 2, 9, 0)
        )
