"""`compare` reports what the candidate costs against the baseline, case by case, beside the
verdicts: runs of two agent versions on the same cases, the candidate's model calls about a
third shorter, priced by genai-prices at their own times."""

from __future__ import annotations

import json
import random
from datetime import timedelta

from click.testing import CliRunner

from agentdocket.cli import main
from agentdocket.events import Event, LlmCalled
from agentdocket.store import open_store
from tests.helpers.factory import T0, run_events, verdict_event


def _runs(url: str) -> None:
    rng = random.Random(8)
    events = []
    for case in range(30):
        tokens = rng.randint(2_000, 20_000)  # cases differ in length
        for version, share in (("1.0", 1.0), ("1.1", 0.7)):
            run = run_events(rng, case_id=f"c{case}", start=T0 + timedelta(minutes=case))
            started = run[0]
            payload = dict(started.payload) | {"agent_version": version}
            run[0] = Event.create(
                trace_id=started.trace_id,
                span_id=started.span_id,
                seq=0,
                ts=started.ts,
                kind="run.started",
                payload=payload,
            )
            run = [e for e in run if e.kind != "llm.called"]
            noise = rng.uniform(0.9, 1.1)
            call = LlmCalled(
                model="gpt-4o",
                role="planner",
                input_tokens=int(tokens * share * noise),
                output_tokens=int(tokens * share * noise / 10),
                attributes={"provider": "openai"},
            )
            run.append(
                Event.create(
                    trace_id=started.trace_id, span_id="a" * 16, seq=50, ts=started.ts, payload=call
                )
            )
            run.append(verdict_event(run, passed=case % 4 != 0))
            events += run
    with open_store(url) as store:
        store.append(events)


def test_compare_reports_the_cost_difference_with_its_interval(sqlite_url: str) -> None:
    _runs(sqlite_url)
    args = ["--database", sqlite_url, "compare", "--dataset", "ds", "--baseline", "agent-a@1.0"]
    out = CliRunner().invoke(main, [*args, "--candidate", "agent-a@1.1", "--format", "json"])
    assert out.exit_code == 0, out.output
    cost = json.loads(out.output)["cost"]
    assert cost["cases"] == 30 and cost["cases_unpriced"] == 0
    # the candidate's calls are 0.7 of the baseline's, give or take 10% per run
    assert cost["ci_low"] < 0.7 < cost["ci_high"] < 1
    assert cost["summary"] == (
        f"cost: {100 * (1 - cost['ratio']):.0f}% cheaper (95% CI "
        f"{100 * (1 - cost['ci_high']):.0f}%-{100 * (1 - cost['ci_low']):.0f}%)"
    )
    assert cost["priced_by"].startswith("genai-prices")
    text = CliRunner().invoke(main, [*args, "--candidate", "agent-a@1.1"])
    assert "cheaper (95% CI" in text.output and "pass: no case regressed" in text.output
