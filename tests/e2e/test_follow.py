"""Scoring live traffic: `serve --score` and `score --follow` as real processes, fed by the
stock OTLP exporter, killed and restarted mid-stream."""

from __future__ import annotations

import dataclasses
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
from prometheus_client.parser import text_string_to_metric_families

from agentdocket import scorers
from agentdocket.demo import run_demo
from agentdocket.follow.config import FollowConfig, Rule
from agentdocket.follow.follower import Follower
from agentdocket.follow.selection import Budget, Followed
from agentdocket.store import Store, open_store
from tests.helpers.otlp_server import Server, free_port, start_cli
from tests.helpers.waiting import until

SCORER = "interaction.metrics"
CONFIG = f"""
[follow]
name = "live"
poll_seconds = 0.2

[[scorer]]
name = "{SCORER}"
"""


def _verdicts(url: str) -> Counter[tuple[str, str]]:
    with open_store(url) as store:
        rows = store.recorder.read(
            "SELECT trace_id, input_hash FROM verdicts WHERE scorer = ?", [SCORER]
        )
    return Counter((r[0], r[1]) for r in rows)


def _finished(url: str) -> set[str]:
    with open_store(url) as store:
        rows = store.recorder.read("SELECT trace_id FROM runs WHERE ended_at IS NOT NULL")
    return {r[0] for r in rows}


def _samples(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    reply = httpx.get(url, timeout=10)
    assert reply.status_code == 200
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(reply.text)
        for s in family.samples
    }


class Agent:
    """Runs an instrumented 'agent' over OTLP/HTTP: a root AGENT span with a tool call and a
    database query under it."""

    def __init__(self, endpoint: str) -> None:
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
        self.tracer = self.provider.get_tracer("agent")
        self.roots: list[SpanContext] = []

    def run(self, i: int) -> None:
        root = {"openinference.span.kind": "AGENT", "input.value": f"q{i}", "output.value": "a"}
        with self.tracer.start_as_current_span("agent", attributes=root) as span:
            tool = {"openinference.span.kind": "TOOL", "tool.name": "t", "input.value": "{}"}
            self.tracer.start_span("t", attributes=tool).end()
            self.query(f"SELECT {i}")
            self.roots.append(span.get_span_context())

    def query(self, text: str) -> None:
        # a SQL step as agentdocket's tracer sends it (foreign database spans are generic steps)
        db = {"agentdocket.kind": "sql", "db.system.name": "postgresql", "db.query.text": text}
        self.tracer.start_span("query", attributes=db).end()

    def late_query(self, root: SpanContext) -> None:
        """A span of a finished run, arriving after it ended."""
        parent = SpanContext(root.trace_id, root.span_id, True, TraceFlags(TraceFlags.SAMPLED))
        with trace.use_span(NonRecordingSpan(parent)):
            self.query("SELECT 'late'")

    def close(self) -> None:
        self.provider.shutdown()


class Follow:
    """One `agentdocket score --follow` process."""

    def __init__(self, url: str, config: Path, log: Path) -> None:
        self.url, self.config, self.log = url, config, log
        self.metrics_port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Follow:
        self.proc = start_cli(
            self.url,
            self.log,
            "score",
            "--follow",
            "--config",
            str(self.config),
            "--metrics-port",
            str(self.metrics_port),
        )
        return self

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            return self.proc.wait(30)
        return self.proc.returncode


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "scoring.toml"
    path.write_text(CONFIG)
    return path


@pytest.fixture
def server(server_url: str, tmp_path: Path, config: Path) -> Iterator[Server]:
    s = Server(server_url, tmp_path / "spool", "--config", str(config)).start()
    yield s
    s.stop()


@pytest.mark.postgres
@pytest.mark.slow
def test_two_followers_killed_and_restarted_judge_each_run_once(
    server: Server, server_url: str, config: Path, tmp_path: Path
) -> None:
    follow = Follow(server_url, config, tmp_path / "follow.log").start()
    agent = Agent(server.endpoint)
    try:
        for i in range(60):
            agent.run(i)
            if i == 15:
                follow.kill()  # SIGKILL mid-stream, and back
                follow.start()
            if i == 30:
                server.restart()  # SIGKILL of `serve --score`, and back
            if i == 45:
                follow.kill()
                follow.start()
        finished = _finished(server_url)
        assert len(finished) == 60
        until(
            lambda: {t for t, _ in _verdicts(server_url)} == finished,
            "a verdict of each finished run",
            seconds=120,
        )
        verdicts = _verdicts(server_url)
        assert set(verdicts.values()) == {1}  # one verdict per run and input
        assert Counter(t for t, _ in verdicts) == Counter(dict.fromkeys(finished, 1))
        # a late event: judged again, under a new input hash
        late = format(agent.roots[3].trace_id, "032x")
        agent.late_query(agent.roots[3])
        until(
            lambda: sum(1 for t, _ in _verdicts(server_url) if t == late) == 2,
            "the late run's 2 verdicts",
            seconds=120,
        )
        time.sleep(1.0)  # both followers have had their rounds
        verdicts = _verdicts(server_url)
        assert set(verdicts.values()) == {1}
        assert sum(1 for t, _ in verdicts if t == late) == 2
    finally:
        agent.close()
        assert follow.stop() == 0, (tmp_path / "follow.log").read_text()


@pytest.mark.postgres
def test_follower_metrics_match_the_database(
    server: Server, server_url: str, config: Path, tmp_path: Path
) -> None:
    """`serve --score`'s /metrics carries the follower's figures, and they agree with what
    the database holds after a known number of runs."""
    agent = Agent(server.endpoint)
    try:
        for i in range(12):
            agent.run(i)
    finally:
        agent.close()
    until(lambda: len(_verdicts(server_url)) == 12, "12 verdicts", seconds=120)
    metrics = server.endpoint.replace("/v1/traces", "/metrics")
    label = (("scorer", f"{SCORER}@1"),)

    def settled() -> bool:
        s = _samples(metrics)
        return s[("agentdocket_scoring_verdicts_total", label)] == 12 and (
            s[("agentdocket_scoring_backlog_runs", label)] == 0
        )

    until(settled, "the followers settled", seconds=30)
    samples = _samples(metrics)
    assert samples[("agentdocket_scoring_runs_total", ())] == 12
    assert samples[("agentdocket_scoring_lag_seconds_count", ())] == 12
    assert samples[("agentdocket_scoring_lag_seconds_bucket", (("le", "+Inf"),))] == 12
    assert samples[("agentdocket_scoring_errors_total", label)] == 0
    assert samples[("agentdocket_scoring_behind_events", ())] == 0
    assert samples[("agentdocket_spans_received_total", ())] == 36
    # the panels' hourly view has the follower's verdicts at once (their hours are read live
    # until serve's next refresh, a minute after its first)
    with open_store(server_url) as store:
        [(counted,)] = store.recorder.read(
            "SELECT sum(verdicts) FROM dashboard_verdict_stats WHERE scorer = ?", [SCORER]
        )
    assert counted == 12
    # stopping writes the last samples the pipeline dashboard reads
    server.stop()
    with open_store(server_url) as store:
        [receiver] = store.pipeline.latest("pipeline_samples")
        [follower] = store.pipeline.latest("scoring_samples")
        events = store.reader.counts()["events"]
    assert receiver["spans_received"] == 36 and receiver["spool_bytes"] == 0
    assert receiver["events_stored"] == events - 12  # the verdicts came from the follower
    assert follower["verdicts"] == 12 and follower["runs_judged"] == 12
    assert follower["behind_runs"] == 0


def test_a_judge_budget_defers_runs_and_drops_none(url: str, tmp_path: Path) -> None:
    """An LLM judge held to 6 calls a minute judges at most that many new questions per round;
    the rest wait (the cursor stays behind them) and are all judged as the minutes pass."""
    run_demo(url, spool_dir=tmp_path / "spool")
    reply = "The answer holds the facts.\nConclusion: Match\nScore: 4"
    model = FakeListChatModel(responses=[reply] * 500)
    base = scorers.get("answer.reference")
    scorer = dataclasses.replace(base, config={**base.config, "model": model})
    rule = Rule(name="answer.reference", calls_per_minute=6, concurrency=1)
    minutes = [0.0]
    followed = Followed(scorer, rule, Budget(6, clock=lambda: minutes[0] * 60))
    with open_store(url) as store:
        runs = set(store.reader.trace_ids(dataset="concerts-demo"))
        follower = Follower(store, FollowConfig(rules=(rule,), name="budget"), [followed])
        calls: list[int] = []
        for _ in range(40):
            before = follower.stats.judge_calls.get(followed.label, 0)
            follower.round()
            calls.append(follower.stats.judge_calls.get(followed.label, 0) - before)
            judged = {t for t, _ in _judged(store)}
            if judged == runs:
                break
            assert store.arrivals.cursor(follower.key) < follower.position  # held back
            minutes[0] += 1
        assert judged == runs
        assert max(calls) <= 6 and sum(calls) > 6  # it took several minutes' budgets
        assert follower.stats.deferred[followed.label] > 0
        assert sum(follower.stats.cache_hits.values()) > 0  # repeated questions cost nothing
        assert store.arrivals.cursor(follower.key) == follower.position


def _judged(store: Store) -> Counter[tuple[str, str]]:
    rows = store.recorder.read(
        "SELECT trace_id, input_hash FROM verdicts WHERE scorer = 'answer.reference'"
    )
    return Counter((r[0], r[1]) for r in rows)


def test_serve_score_judges_live_runs_on_the_default_store(
    sqlite_url: str, config: Path, tmp_path: Path
) -> None:
    """What README and the live-scoring page show, on SQLite after `agentdocket migrate`: the
    follower inside `serve` opens the store without migrating it and judges every run."""
    server = Server(sqlite_url, tmp_path / "spool", "--score", "--config", str(config)).start()
    agent = Agent(server.endpoint)
    try:
        for i in range(5):
            agent.run(i)
        finished = _finished(sqlite_url)
        assert len(finished) == 5
        until(
            lambda: {t for t, _ in _verdicts(sqlite_url)} == finished,
            "a verdict of each finished run",
            seconds=120,
        )
    finally:
        agent.close()
        server.stop()
    assert "has no agentdocket schema" not in server.log.read_text()
