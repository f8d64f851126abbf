"""The batch runner and reports, on the demo's real traces, against SQLite and PostgreSQL:
idempotent re-scoring, new versions beside old ones, resuming after a crash, scorer bugs
isolated to their runs, worker processes, late events re-judged."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentdocket import scorers
from agentdocket.cli import main
from agentdocket.demo import run_demo
from agentdocket.events import Event, Response, Trace
from agentdocket.scorers import Outcome, Scorer
from agentdocket.scorers.runner import score_runs
from agentdocket.scorers.tool_use import suffix_match
from agentdocket.store import Store, open_store
from tests.helpers.db import cli

RULES = ["planner.suffix_match", "tools.slot_fill", "tools.procedural", "interaction.metrics"]


@pytest.fixture
def demo_url(url: str, tmp_path: Path) -> str:
    run_demo(url, spool_dir=tmp_path / "spool")
    return url


def _rules() -> list[Scorer]:
    return [scorers.get(n) for n in RULES]


def _verdict_ids(store: Store) -> set[str]:
    return {r["verdict_id"] for r in store.reader.rows("verdicts", "verdict_id")}


@pytest.fixture
def planner_v2() -> Iterator[Scorer]:
    def stricter(trace: Trace, config: Mapping[str, Any]) -> Outcome | None:
        found = suffix_match(trace, config)
        if found is None or not found.passed or found.details["extra_steps"] == 0:
            return found
        return Outcome(passed=False, score=0.0, failure_type="planner:extra_steps")

    v2 = scorers.register(
        Scorer(
            "planner.suffix_match",
            "2",
            "the expected plan exactly, no extra steps",
            stricter,
            inputs=("plan", "case"),
            metrics={"extra_steps_total": ("extra_steps", "sum")},
        )
    )
    yield v2
    scorers.unregister("planner.suffix_match", "2")


def test_rescoring_adds_nothing_and_a_new_version_adds_a_second_set(
    demo_url: str, planner_v2: Scorer
) -> None:
    cli(demo_url, "score", "--dataset", "concerts-demo", "--scorer", "planner.suffix_match=1")
    with open_store(demo_url) as store:
        first = _verdict_ids(store)
        events = store.reader.counts()["events"]
    assert len(first) == 30
    again = cli(
        demo_url, "score", "--dataset", "concerts-demo", "--scorer", "planner.suffix_match=1"
    )
    assert "scored 30 runs" in again
    with open_store(demo_url) as store:
        assert _verdict_ids(store) == first and store.reader.counts()["events"] == events
    cli(demo_url, "score", "--dataset", "concerts-demo", "--scorer", "planner.suffix_match")
    with open_store(demo_url) as store:
        rows = store.reader.rows("verdicts", "verdict_id")
    assert {r["scorer_version"] for r in rows} == {"1", "2"} and len(rows) == 60
    assert first < {r["verdict_id"] for r in rows}  # the old verdicts are kept

    latest = json.loads(cli(demo_url, "report", "--dataset", "concerts-demo", "--format", "json"))
    older = json.loads(
        cli(demo_url, "report", "--dataset", "concerts-demo", "--format", "json", "--version", "1")
    )
    v1, v2 = older["scorers"]["planner.suffix_match"], latest["scorers"]["planner.suffix_match"]
    assert (v1["version"], v2["version"]) == ("1", "2")
    # 12 demo plans fail (10 runs without a plan, 2 that stop early) and one passing plan has
    # an extra step (sequential q03 retries its query); version 2 fails that one too
    assert (v1["passed"], v1["failed"]) == (18, 12)
    assert v1["failure_types"] == {"planner:mismatch": 2, "planner:no_plan": 10}
    assert (v2["passed"], v2["failed"]) == (17, 13)
    assert v1["metrics"]["extra_steps_total"] == 1 and v2["metrics"]["extra_steps_total"] == 0
    assert v2["failure_types"]["planner:extra_steps"] == 1
    bad = CliRunner().invoke(
        main, ["--database", demo_url, "report", "--version", "planner.suffix_match=7"]
    )
    assert bad.exit_code == 1 and "has verdicts of versions 1, 2 only" in bad.output


def test_an_interrupted_run_resumes_where_it_stopped(demo_url: str) -> None:
    class Crash(Exception):
        pass

    def crash_after_first_batch(done: int, total: int) -> None:
        if done > 10:  # told of the second batch's first run: that batch is not written
            raise Crash

    with open_store(demo_url) as store:
        with pytest.raises(Crash):
            score_runs(store, _rules(), batch_size=10, progress=crash_after_first_batch)
        assert store.reader.counts()["verdicts"] == 10 * len(RULES)  # the first batch, whole
        resumed = score_runs(store, _rules(), batch_size=10)
        for tally in resumed.tallies.values():
            assert (tally.kept, tally.added, tally.errors) == (10, 20, 0)
        assert store.reader.counts()["verdicts"] == 30 * len(RULES)


def test_a_scorer_that_raises_loses_only_that_runs_verdict(demo_url: str) -> None:
    with open_store(demo_url) as store:
        victim = store.reader.trace_ids(dataset="concerts-demo")[7]

    def fragile(trace: Trace, config: Mapping[str, Any]) -> Outcome | None:
        if trace.trace_id == victim:
            raise ZeroDivisionError("boom")
        return Outcome(passed=True)

    scorers.register(Scorer("test.fragile", "1", "raises on one run", fragile, inputs=("plan",)))
    try:
        result = CliRunner().invoke(
            main, ["--database", demo_url, "score", "--scorer", "test.fragile"]
        )
        assert result.exit_code == 1
        assert f"test.fragile@1 on {victim}: ZeroDivisionError: boom" in result.output
        assert "1 runs could not be scored" in result.output
        with open_store(demo_url) as store:
            judged = {r["trace_id"] for r in store.reader.rows("verdicts", "verdict_id")}
            assert len(judged) == 29 and victim not in judged
    finally:
        scorers.unregister("test.fragile", "1")


def test_worker_processes_give_the_same_verdicts(demo_url: str, tmp_path: Path) -> None:
    with open_store(demo_url) as store:
        result = score_runs(store, _rules(), batch_size=4, workers=2)
        assert result.runs == 30 and result.error_count == 0
        parallel = {
            (r["verdict_id"], r["passed"], r["failure_type"])
            for r in store.reader.rows("verdicts", "verdict_id")
        }
    single = f"sqlite:///{tmp_path / 'single.db'}"
    run_demo(single, spool_dir=tmp_path / "spool2")
    with open_store(single) as store:
        score_runs(store, _rules(), batch_size=30)
        serial = {
            (r["passed"], r["failure_type"]) for r in store.reader.rows("verdicts", "verdict_id")
        }
    assert len(parallel) == 30 * len(RULES)
    # the demo's second recording has new trace ids, so compare the judgements, not ids
    assert {(p, f) for _, p, f in parallel} == serial


def test_batches_written_behind_store_every_verdict_once(demo_url: str) -> None:
    """With several batches, each one's verdicts are appended on a thread of their own while
    the next is scored: every run's verdicts are stored, and a run again adds nothing."""
    with open_store(demo_url) as store:
        ids = store.reader.trace_ids()
        ahead = score_runs(store, _rules(), batch_size=4)  # 8 batches
        assert ahead.runs == 30 and ahead.error_count == 0
        assert sum(t.added for t in ahead.tallies.values()) == 30 * len(RULES)
        stored = {
            (r["trace_id"], r["scorer"], r["passed"], r["failure_type"])
            for r in store.reader.rows("verdicts", "verdict_id")
        }
        assert score_runs(store, _rules(), batch_size=4).tallies[
            ("planner.suffix_match", "1")
        ].kept == len(ids)
    assert len(stored) == 30 * len(RULES)
    assert {t for t, _, _, _ in stored} == set(ids)


def test_a_late_event_gets_the_run_judged_again(demo_url: str) -> None:
    scorer = scorers.get("interaction.metrics")
    with open_store(demo_url) as store:
        score_runs(store, [scorer])
        tid = store.reader.trace_ids(dataset="concerts-demo")[0]
        last = store.reader.events(tid)[-1]
        late = Event.create(
            trace_id=tid,
            span_id=last.span_id,
            seq=last.seq + 1,
            ts=last.ts + timedelta(seconds=1),
            payload=Response(text="one two three four five six seven"),
            index=9,
        )
        store.append([late])
        again = score_runs(store, [scorer])
        tally = again.tallies[(scorer.name, scorer.version)]
        assert (tally.added, tally.kept) == (1, 29)
        assert len([r for r in store.reader.rows("verdicts", "ts") if r["trace_id"] == tid]) == 2
    report = json.loads(cli(demo_url, "report", "--dataset", "concerts-demo", "--format", "json"))
    assert report["scorers"]["interaction.metrics"]["scored"] == 30  # the latest verdict only


def test_the_fast_verdict_event_equals_the_validated_one() -> None:
    from agentdocket.events import Verdict
    from agentdocket.scorers.runner import verdict_event, verdict_span

    verdict = Verdict(
        scorer="tools.slot_fill",
        scorer_version="3",
        input_hash="ab" * 32,
        subject_trace_id="c0ffee" + "0" * 26,
        passed=False,
        score=0.5,
        failure_type="slot_fill:wrong_argument",
        details={"unmatched": [{"tool": "sql", "arguments": {"q": None}}], "n": 2},
    )
    fast = verdict_event(verdict)
    checked = Event.create(
        trace_id=verdict.subject_trace_id,
        span_id=verdict_span(verdict),
        seq=fast.seq,
        ts=fast.ts,
        payload=verdict,
    )
    assert fast == checked
    bad = Verdict(**{**checked.payload, "details": {"when": object()}})
    with pytest.raises(ValueError, match="details are not JSON"):
        verdict_event(bad)


def test_a_plugin_module_registers_a_scorer_for_the_command_line(
    demo_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = f"team_scorers_{uuid.uuid4().hex[:8]}"  # a fresh module for each database
    (tmp_path / f"{module}.py").write_text(
        "from agentdocket import scorers\n"
        "from agentdocket.scorers import Outcome, Scorer\n"
        "scorers.register(Scorer('answer.nonempty', '1', 'a non-empty response',\n"
        "    lambda t, c: Outcome(passed=bool((t.response or '').strip())),\n"
        "    inputs=('response',)))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        listed = cli(demo_url, "--plugin", module, "scorers")
        assert "answer.nonempty" in listed
        cli(demo_url, "--plugin", module, "score", "--scorer", "answer.nonempty")
        report = json.loads(cli(demo_url, "report", "--format", "json"))
        assert report["scorers"]["answer.nonempty"]["passed"] == 30
    finally:
        scorers.unregister("answer.nonempty", "1")
    missing = CliRunner().invoke(main, ["--plugin", "no_such_module", "scorers"])
    assert missing.exit_code == 1
    assert "plugin 'no_such_module' could not be imported: ModuleNotFoundError" in missing.output


def test_progress_moves_run_by_run_within_a_batch(demo_url: str) -> None:
    """The demo's 30 runs in one batch: the progress bar is told of every run as it is scored,
    not only once the batch is done."""
    seen: list[tuple[int, int]] = []
    with open_store(demo_url) as store:
        score_runs(
            store,
            _rules(),
            dataset="concerts-demo",
            batch_size=1000,
            progress=lambda done, total: seen.append((done, total)),
            refresh_dashboards=False,
        )
    assert {total for _, total in seen} == {30}
    done = [d for d, _ in seen]
    assert done == sorted(done) and done[0] == 0 and done[-1] == 30
    assert set(range(31)) <= set(done)
