"""Follow benchmark: scoring lag under sustained OTLP traffic.

    python bench/follow.py [--rates 50,200,500] [--seconds 30] [--database URL]

For each rate, on a fresh PostgreSQL database: ``agentdocket serve`` receives OTLP/HTTP and
``agentdocket score --follow`` judges with the rule-based scorers and ``response.similarity``
(two processes), while this process sends runs at the rate through the stock OTLP/HTTP exporter
(a batch span processor), all on this machine. A run is an agent span labelled with a case,
a tool span and a model span.

The lag of a run is measured in the database: from the last of its events being stored to the
last of its verdicts being stored (both ``events.received_at``). The backlog (events behind
the follower's cursor) is read from the follower's ``/metrics`` every second; it is bounded
when it stays below one round's worth of runs and drains once the traffic stops. The baseline
of each row is its own offered rate: ``judged/offered`` is the rate of runs fully judged against
it. Target: p95 lag under 5 s at 200 runs/s.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentdocket.events import Case, Dataset, ExpectedCall  # noqa: E402
from agentdocket.store import open_store  # noqa: E402
from agentdocket.store.config import parse_url, psycopg_conninfo  # noqa: E402
from bench.common import fresh_database, postgres_url  # noqa: E402
from tests.helpers.otlp_server import free_port  # noqa: E402

SCORERS = (
    "planner.suffix_match",
    "tools.slot_fill",
    "tools.procedural",
    "interaction.metrics",
    "response.similarity",
)
CASES = 50
BATCH = 500  # runs per follower round
CONFIG = '[follow]\nname = "bench"\npoll_seconds = 0.2\nbatch = {batch}\n' + "".join(
    f'\n[[scorer]]\nname = "{s}"\n' for s in SCORERS
)
LAG = """
WITH done AS (
    SELECT trace_id, max(received_at) AS at FROM events WHERE kind <> 'verdict'
    GROUP BY trace_id
), judged AS (
    SELECT trace_id, max(received_at) AS at FROM events WHERE kind = 'verdict'
    GROUP BY trace_id
), lag AS (
    SELECT extract(epoch FROM j.at - d.at) AS s FROM judged j JOIN done d USING (trace_id)
    WHERE d.at >= %s
)
SELECT count(*), percentile_cont(0.5) WITHIN GROUP (ORDER BY s),
       percentile_cont(0.95) WITHIN GROUP (ORDER BY s), max(s) FROM lag
"""


def _cli(url: str, *args: str) -> list[str]:
    return [
        sys.executable,
        "-c",
        "from agentdocket.cli import main; main()",
        "--database",
        url,
        *args,
    ]


def _dataset() -> Dataset:
    cases = tuple(
        Case(
            case_id=f"c{i}",
            question=f"how many concerts in city {i}?",
            expected_plan=["lookup"],
            expected_calls=[ExpectedCall(tool="lookup", arguments={"city": f"city {i}"})],
            reference_answer=f"There were {i} concerts in city {i}.",
            stub_response=f"There were {i} concerts in city {i}.",
        )
        for i in range(CASES)
    )
    return Dataset("bench-follow", "1", cases)


def _metric(port: int, name: str) -> float | None:
    try:
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=2).text
    except httpx.HTTPError:
        return None
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name:
                return float(sample.value)
    return None


def _send(endpoint: str, rate: int, seconds: float) -> tuple[int, float]:
    """Runs at ``rate`` per second for ``seconds``; returns (runs sent, seconds taken)."""
    provider = TracerProvider()
    exporter = OTLPSpanExporter(endpoint=endpoint)
    provider.add_span_processor(
        BatchSpanProcessor(
            exporter, max_queue_size=200_000, max_export_batch_size=512, schedule_delay_millis=100
        )
    )
    tracer = provider.get_tracer("bench")
    sent = 0
    start = time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        due = int(elapsed * rate) + 1
        while sent < due:
            i = sent % CASES
            root = {
                "openinference.span.kind": "AGENT",
                "input.value": f"how many concerts in city {i}?",
                "output.value": f"There were {i} concerts in city {i}.",
                "agentdocket.dataset": "bench-follow",
                "agentdocket.case_id": f"c{i}",
            }
            with tracer.start_as_current_span("agent", attributes=root):
                tool = {
                    "openinference.span.kind": "TOOL",
                    "tool.name": "lookup",
                    "input.value": f'{{"city": "city {i}"}}',
                    "output.value": str(i),
                }
                tracer.start_span("lookup", attributes=tool).end()
                llm = {
                    "openinference.span.kind": "LLM",
                    "llm.model_name": "m",
                    "llm.token_count.prompt": 20,
                    "llm.token_count.completion": 8,
                }
                tracer.start_span("llm", attributes=llm).end()
            sent += 1
        time.sleep(0.005)
    taken = time.perf_counter() - start
    provider.shutdown()  # flushes what is queued
    return sent, taken


def one_rate(
    url: str, rate: int, seconds: float, workdir: Path, in_serve: bool = False
) -> dict[str, Any]:
    with fresh_database(url) as db:
        with open_store(db) as store:
            store.datasets.register(_dataset())
        config = workdir / f"follow-{rate}.toml"
        config.write_text(CONFIG.format(batch=BATCH))
        port, metrics = free_port(), free_port()
        env = dict(os.environ, HF_HUB_OFFLINE="1")
        logs = open(workdir / f"bench-follow-{rate}.log", "ab")  # noqa: SIM115
        serving = ["serve", "--port", str(port), "--grpc-port", "0", "--refresh-every", "0"]
        if in_serve:  # serve --score: one process receives and follows
            serving += ["--config", str(config)]
            metrics = port
        serve = subprocess.Popen(_cli(db, *serving), stdout=logs, stderr=logs, env=env)
        follow = subprocess.Popen(
            _cli(db, "score", "--follow", "--config", str(config), "--metrics-port", str(metrics))
            if not in_serve
            else [sys.executable, "-c", "import time; time.sleep(1e6)"],
            stdout=logs,
            stderr=logs,
            env=env,
        )
        try:
            deadline = time.monotonic() + 120
            while _metric(metrics, "agentdocket_scoring_runs_total") is None or not _up(port):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"serve or the follower did not start: see {logs.name}")
                time.sleep(0.2)
            behind: list[float] = []
            stop = threading.Event()

            def watch() -> None:
                while not stop.wait(1.0):
                    value = _metric(metrics, "agentdocket_scoring_behind_events")
                    if value is not None:
                        behind.append(value)

            conninfo = psycopg_conninfo(parse_url(db))
            # one run first: the follower has loaded its model once it is judged
            _send(f"http://127.0.0.1:{port}/v1/traces", 1, 0.001)
            while _judged(conninfo) < 1:
                time.sleep(0.2)
            with psycopg.connect(conninfo) as conn:
                started = conn.execute("SELECT now()").fetchone()[0]  # type: ignore[index]
            watcher = threading.Thread(target=watch, daemon=True)
            watcher.start()
            sent, taken = _send(f"http://127.0.0.1:{port}/v1/traces", rate, seconds)
            sent += 1  # the warm-up run
            sent_at = time.monotonic()
            judged = 0
            while time.monotonic() - sent_at < 300:
                judged = _judged(conninfo)
                if judged >= sent:
                    break
                time.sleep(0.5)
            drained = time.monotonic() - sent_at
            stop.set()
            watcher.join()
            with psycopg.connect(conninfo) as conn:
                n, p50, p95, worst = conn.execute(LAG, [started]).fetchone()  # type: ignore[misc]
                verdicts = conn.execute(
                    "SELECT count(*) FROM events WHERE kind = 'verdict'"
                ).fetchone()[0]  # type: ignore[index]
        finally:
            for proc in (follow, serve):
                proc.terminate()
                proc.wait(60)
            logs.close()
    half = behind[len(behind) // 2 :] or [0.0]
    return {
        "rate": rate,
        "sent": sent,
        "offered_per_s": sent / taken,
        "judged_runs": judged,
        "verdicts": verdicts,
        "judged_per_offered": judged / sent if sent else 0.0,
        "lag_p50_s": float(p50 or 0),
        "lag_p95_s": float(p95 or 0),
        "lag_max_s": float(worst or 0),
        "drained_after_s": drained,
        "behind_max": max(behind or [0.0]),
        "behind_second_half_max": max(half),
        "bounded": judged >= sent and max(half) < BATCH * 10,
        "lag_runs": n,
    }


def _judged(conninfo: str) -> int:
    with psycopg.connect(conninfo) as conn:
        row = conn.execute("SELECT count(DISTINCT trace_id) FROM events WHERE kind = 'verdict'")
        return int(row.fetchone()[0])  # type: ignore[index]


def _up(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="50,200,500")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--database", help="PostgreSQL URL (default: the local cluster)")
    parser.add_argument(
        "--in-serve",
        action="store_true",
        help="follow inside serve (serve --score) instead of a score --follow process",
    )
    args = parser.parse_args()
    url = postgres_url(args.database)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for rate in (int(r) for r in args.rates.split(",")):
            row = one_rate(url, rate, args.seconds, Path(tmp), args.in_serve)
            rows.append(row)
            print(
                f"{rate:>4} runs/s offered ({row['offered_per_s']:.0f} sent/s, "
                f"{row['sent']} runs): "
                f"judged/offered {row['judged_per_offered']:.3f}, lag p50 {row['lag_p50_s']:.2f} s "
                f"p95 {row['lag_p95_s']:.2f} s max {row['lag_max_s']:.2f} s, drained "
                f"{row['drained_after_s']:.1f} s after the traffic, events behind max "
                f"{row['behind_max']:.0f} (second half {row['behind_second_half_max']:.0f}), "
                f"{'bounded' if row['bounded'] else 'NOT bounded'}",
                flush=True,
            )
    target = next((r for r in rows if r["rate"] == 200), None)
    if target is not None:
        verdict = "met" if target["lag_p95_s"] < 5 else "missed"
        print(f"target p95 lag < 5 s at 200 runs/s: {verdict} ({target['lag_p95_s']:.2f} s)")


if __name__ == "__main__":
    main()
