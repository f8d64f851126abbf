"""Building realistic traces for tests."""

from __future__ import annotations

import dataclasses
import hashlib
import random
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from agentdocket.events import (
    Document,
    Event,
    LlmCalled,
    Message,
    Plan,
    PlanStep,
    Response,
    Retrieval,
    RunFinished,
    RunStarted,
    SqlExecuted,
    ToolCalled,
    ToolReturned,
    Verdict,
)

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def span(rng: random.Random) -> str:
    return f"{rng.getrandbits(64) | 1:016x}"


def run_events(
    rng: random.Random,
    *,
    dataset: str | None = "ds",
    case_id: str | None = "c1",
    agent: str = "agent-a",
    strategy: str = "sequential",
    fail: bool = False,
    start: datetime = T0,
) -> list[Event]:
    """One run: start, plan, two tool calls (one may fail), SQL, retrieval, LLM, answer, end."""
    tid = uuid.UUID(int=rng.getrandbits(128)).hex
    root = span(rng)
    out: list[Event] = []

    def add(payload: Any, sp: str | None = None, index: int = 0) -> None:
        seq = len(out)
        out.append(
            Event.create(
                trace_id=tid,
                span_id=sp or root,
                parent_span_id=None if sp is None else root,
                seq=seq,
                ts=start + timedelta(milliseconds=10 * seq),
                payload=payload,
                index=index,
            )
        )

    add(
        RunStarted(
            agent=agent,
            agent_version="1.0",
            strategy=strategy,
            models={"planner": "m-plan", "response_former": "m-resp"},
            question=f"question {rng.random():.6f}",
            dataset=dataset,
            case_id=case_id,
            attributes={"k": rng.randint(0, 9)},
        )
    )
    add(Plan(steps=[PlanStep(tool="sql"), PlanStep(tool="search", text="look it up")]))
    for k in range(2):
        sp = span(rng)
        add(
            ToolCalled(
                call_id=f"call-{k}",
                tool="sql" if k == 0 else "search",
                arguments={"q": f"x{k}", "n": k},
            ),
            sp,
        )
        error = "timeout" if fail and k == 1 else None
        add(
            ToolReturned(
                call_id=f"call-{k}",
                tool=None,
                result=None if error else [k],
                error=error,
                duration_ms=1.5 + k,
            ),
            sp,
        )
    add(SqlExecuted(query="SELECT 1", columns=["x"], rows=[[1]], row_count=1, duration_ms=0.4))
    add(Retrieval(query="docs", documents=[Document(id="d1", score=0.9), Document(id="d2")]))
    sp = span(rng)
    add(
        LlmCalled(
            model="m-resp",
            role="response_former",
            temperature=0.0,
            input_tokens=10,
            output_tokens=5,
        ),
        sp,
    )
    add(Message(role="user", content="hi"), sp, index=0)
    add(Message(role="agent", content="hello"), sp, index=1)
    add(Response(text=f"answer {rng.random():.4f}"))
    add(RunFinished(status="error" if fail else "ok", error="tool failed" if fail else None))
    return out


def verdict_event(
    trace_events: list[Event],
    scorer: str = "planner.suffix_match",
    version: str = "1",
    passed: bool = True,
    when: datetime = T0,
) -> Event:
    first = trace_events[0]
    v = Verdict(
        scorer=scorer,
        scorer_version=version,
        input_hash=f"h-{version}",
        subject_trace_id=first.trace_id,
        passed=passed,
        score=1.0 if passed else 0.0,
        failure_type=None if passed else "planner:wrong_plan",
        details={"extra_steps": 0},
    )
    sp = hashlib.sha256(f"{scorer}/{version}".encode()).hexdigest()[:16]
    return Event.create(trace_id=first.trace_id, span_id=sp, seq=0, ts=when, payload=v)


def many_runs(n: int, seed: int = 1, **kw: Any) -> list[Event]:
    rng = random.Random(seed)
    events: list[Event] = []
    for i in range(n):
        evs = run_events(
            rng, fail=i % 5 == 0, case_id=f"c{i % 7}", start=T0 + timedelta(seconds=i), **kw
        )
        events.extend(evs)
        if i % 3 == 0:
            events.append(verdict_event(evs, passed=i % 2 == 0, when=T0 + timedelta(hours=1)))
    return events


# Text PostgreSQL's jsonb cannot hold (NUL), the escape character itself, and a lone surrogate.
AWKWARD = "nul\x00inside \ufdd0esc \ud800lone"


def awkward_run_events(rng: random.Random, text: str = AWKWARD) -> list[Event]:
    """A run whose tool result, message and run attribute hold ``text``."""
    out = []
    for e in run_events(rng):
        p = dict(e.payload)
        if e.kind == "tool.returned" and p.get("result") is not None:
            p["result"] = {"rows": [text], text: 1}
        elif e.kind == "message":
            p["content"] = text
        elif e.kind == "run.started":
            p["attributes"] = {**p["attributes"], "note": text}
        else:
            out.append(e)
            continue
        out.append(dataclasses.replace(e, payload=p))
    return out


def nested_run(rng: random.Random, spans: int) -> list[Event]:
    """A run whose root calls ``spans`` tools, each its own span, each nested in the last
    (the deepest shape a tree of spans takes)."""
    trace = uuid.UUID(int=rng.getrandbits(128)).hex
    root = f"{rng.getrandbits(64):016x}"
    t0 = datetime.now(UTC) - timedelta(hours=1)
    events = [
        Event.create(
            trace_id=trace,
            span_id=root,
            seq=0,
            ts=t0,
            payload=RunStarted(agent="huge", question="how deep does it go?"),
        )
    ]
    parent = root
    for i in range(spans):
        span = f"{rng.getrandbits(64):016x}"
        at = t0 + timedelta(milliseconds=i)
        for k, payload in enumerate(
            (
                ToolCalled(call_id=span, tool="lookup", arguments={"i": i}),
                ToolReturned(call_id=span, tool="lookup", result={"rows": [i, i + 1]}),
            )
        ):
            events.append(
                Event.create(
                    trace_id=trace,
                    span_id=span,
                    parent_span_id=parent,
                    seq=2 * i + 1 + k,
                    ts=at,
                    payload=payload,
                )
            )
        parent = span
    events.append(
        Event.create(
            trace_id=trace,
            span_id=root,
            seq=2 * spans + 1,
            ts=t0 + timedelta(milliseconds=spans),
            payload=RunFinished(status="ok"),
        )
    )
    return events
