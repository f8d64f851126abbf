"""One agent run of many spans, as OTLP/JSON requests of the size an SDK's BatchSpanProcessor
sends (512 spans a request): a root agent span, model calls (GenAI conventions, with messages
and token counts of realistic size) each followed by a tool call, a few of them failing, and
the slowest spans known in advance. For the huge-trace test and bench/huge_trace.py."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

# what BatchSpanProcessor sends at most in one request
BATCH = 512
# every this many tool calls one fails
FAILING_EVERY = 1_000
SLOW_MS = 60_000  # the slowest spans take 2, 3 and 4 times this: well above every other


@dataclass
class HugeTrace:
    """What was sent, to check what is shown: the trace id, the number of spans, the slowest
    spans' ids (slowest first), the failing ones' (in the order they ran), and every span's."""

    trace_id: str
    spans: int
    slowest: list[str] = field(default_factory=list)
    failing: list[str] = field(default_factory=list)
    question: str = ""
    answer: str = ""
    span_ids: set[str] = field(default_factory=set)


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


def _span(
    trace_id: str,
    span_id: str,
    parent: str | None,
    name: str,
    start_ns: int,
    duration_ms: float,
    attributes: dict[str, Any],
    error: str | None = None,
) -> dict[str, Any]:
    span: dict[str, Any] = {
        "traceId": trace_id,
        "spanId": span_id,
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(start_ns),
        "endTimeUnixNano": str(start_ns + int(duration_ms * 1_000_000)),
        "attributes": [_attr(k, v) for k, v in attributes.items()],
    }
    if parent is not None:
        span["parentSpanId"] = parent
    if error is not None:
        span["status"] = {"code": 2, "message": error}
    return span


def _text(rng: random.Random, words: int) -> str:
    vocabulary = ("the", "order", "parcel", "refund", "weather", "invoice", "customer", "late")
    return " ".join(rng.choice(vocabulary) for _ in range(words))


def huge_trace(spans: int, seed: int = 52) -> tuple[HugeTrace, list[dict[str, Any]]]:
    """A run of ``spans`` spans (at least 3): the trace, and its spans in OTLP/JSON, in the
    order they end (children before their parents, as an SDK exports them)."""
    rng = random.Random(f"{seed}-{spans}")
    trace_id = f"{rng.getrandbits(128):032x}"
    root_id = f"{rng.getrandbits(64):016x}"
    question = "Where is my parcel, and can I have a refund? " + _text(rng, 40)
    answer = "Your parcel arrives on Tuesday; the refund is on its way. " + _text(rng, 30)
    made = HugeTrace(trace_id, spans, question=question, answer=answer)
    start = time.time_ns() - 3_600 * 10**9  # an hour ago: inside live ingestion's window
    out: list[dict[str, Any]] = []
    now = start + 1_000_000
    pairs = (spans - 1) // 2
    slow = {pairs // 3: 3, pairs // 2: 2, 2 * pairs // 3: 1}  # pair -> rank among the slowest
    slowest: dict[int, str] = {}
    for i in range(pairs):
        call_id = f"call_{i}"
        llm_ms = SLOW_MS * (1 + slow[i]) if i in slow else rng.uniform(200, 2_000)
        messages = [{"role": "user", "parts": [{"type": "text", "content": question}]}]
        output = [
            {
                "role": "assistant",
                "parts": [
                    {"type": "text", "content": _text(rng, 25)},
                    {
                        "type": "tool_call",
                        "id": call_id,
                        "name": "lookup_order",
                        "arguments": {"order": f"A-{i}"},
                    },
                ],
            }
        ]
        span_id = f"{rng.getrandbits(64):016x}"
        if i in slow:
            slowest[slow[i]] = span_id
        out.append(
            _span(
                trace_id,
                span_id,
                root_id,
                f"chat step-{i}",
                now,
                llm_ms,
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "gpt-4o-mini",
                    "gen_ai.response.model": "gpt-4o-mini",
                    "gen_ai.usage.input_tokens": rng.randint(200, 900),
                    "gen_ai.usage.output_tokens": rng.randint(20, 200),
                    "gen_ai.input.messages": orjson.dumps(messages).decode(),
                    "gen_ai.output.messages": orjson.dumps(output).decode(),
                },
            )
        )
        now += int(llm_ms * 1_000_000)
        fails = i % FAILING_EVERY == FAILING_EVERY - 1
        span_id = f"{rng.getrandbits(64):016x}"
        error = f"order A-{i} not found" if fails else None
        if fails:
            made.failing.append(span_id)
        tool_ms = rng.uniform(5, 150)
        out.append(
            _span(
                trace_id,
                span_id,
                root_id,
                f"execute_tool lookup_order {i}",
                now,
                tool_ms,
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "lookup_order",
                    "gen_ai.tool.call.id": call_id,
                    "gen_ai.tool.call.arguments": orjson.dumps({"order": f"A-{i}"}).decode(),
                    **({} if fails else {"gen_ai.tool.call.result": _text(rng, 30)}),
                    **({"error.type": "NotFound"} if fails else {}),
                },
                error,
            )
        )
        now += int(tool_ms * 1_000_000)
    while len(out) < spans - 1:  # an even count: one plain step makes it up
        out.append(_span(trace_id, f"{rng.getrandbits(64):016x}", root_id, "tidy", now, 1.0, {}))
    total_ms = (now - start) / 1_000_000 + 1
    out.append(
        _span(
            trace_id,
            root_id,
            None,
            "invoke_agent support",
            start,
            total_ms,
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "support",
                "input.value": question,
                "output.value": answer,
            },
        )
    )
    made.slowest = [slowest[rank] for rank in sorted(slowest, reverse=True)]
    made.span_ids = {s["spanId"] for s in out}
    return made, out


def requests(spans: list[dict[str, Any]], batch: int = BATCH) -> Iterator[bytes]:
    """The spans as OTLP/JSON request bodies of at most ``batch`` spans each."""
    resource = {"attributes": [_attr("service.name", "support-agent")]}
    for start in range(0, len(spans), batch):
        chunk = spans[start : start + batch]
        yield orjson.dumps(
            {
                "resourceSpans": [
                    {
                        "resource": resource,
                        "scopeSpans": [{"scope": {"name": "bench"}, "spans": chunk}],
                    }
                ]
            }
        )
