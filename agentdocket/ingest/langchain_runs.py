"""LangChain run trees as agentdocket events: a pure function, :func:`run_to_events`.

The root run is the run (``run.started``, the answer as ``response``, ``run.finished``); chat
model and LLM runs are ``llm.called`` (messages, model, temperature, tokens), and the tool
calls a model asks for are a ``plan`` step each (tool, arguments, call id); tool runs are
``tool.called`` / ``tool.returned``; retriever runs are ``retrieval`` (ids, scores, texts);
other chains are generic ``step`` events. Every event keeps its run's place in the tree
(``parent_span_id``). The case a run answers comes from the handler's arguments or the run's
metadata (``agentdocket.dataset``, ``agentdocket.dataset_version``, ``agentdocket.case_id``,
``agentdocket.agent``, ``agentdocket.strategy``). A tree that ran inside a run our tracer
records joins that run instead (``within``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from langchain_core.documents import Document as LcDocument
from langchain_core.messages import BaseMessage
from langchain_core.tracers.schemas import Run

from agentdocket.events import Event
from agentdocket.ingest.decode import jsonable
from agentdocket.ingest.messages import (
    answer_text,
    content_text,
    message_fields,
    plan_steps,
    question_text,
)

ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}
RUN_SETTINGS = ("dataset", "dataset_version", "case_id", "agent", "strategy")
LLM_RUNS = frozenset({"llm", "chat_model"})


def _span_id(run_id: uuid.UUID) -> str:
    low = run_id.int & 0xFFFF_FFFF_FFFF_FFFF
    return format(low or (run_id.int >> 64) or 1, "016x")


def _ts(value: datetime | None) -> datetime:
    if value is None:
        return datetime.now(UTC)
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _ms(run: Run) -> float | None:
    if run.end_time is None:
        return None
    return max(0.0, (_ts(run.end_time) - _ts(run.start_time)).total_seconds() * 1000)


def _metadata(run: Run) -> Mapping[str, Any]:
    meta = (run.extra or {}).get("metadata")
    return meta if isinstance(meta, Mapping) else {}


# --- messages ---------------------------------------------------------------------------------


def chat_message(value: Any) -> dict[str, Any]:
    """A LangChain message (object, ``dumpd`` form or dict) as a ``ChatMessage`` payload."""
    if isinstance(value, BaseMessage):
        fields: Mapping[str, Any] = value.model_dump()
        kind = value.type
    else:
        fields = message_fields(value) or {"content": value}
        kind = str(fields.get("type") or "")
        if not kind and isinstance(value, Mapping) and isinstance(value.get("id"), list):
            kind = str(value["id"][-1]).removesuffix("MessageChunk").removesuffix("Message")
            kind = kind.lower()
    calls = [
        {"name": str(c.get("name")), "arguments": jsonable(c.get("args")), "id": c.get("id")}
        for c in fields.get("tool_calls") or ()
        if isinstance(c, Mapping)
    ]
    message: dict[str, Any] = {
        "role": ROLES.get(kind, kind or "user"),
        "content": content_text(fields.get("content")),
        "tool_calls": [{k: v for k, v in c.items() if v is not None} for c in calls],
    }
    if fields.get("name"):
        message["name"] = str(fields["name"])
    return message


def _input_messages(run: Run) -> list[dict[str, Any]]:
    batches = run.inputs.get("messages")
    if isinstance(batches, list) and batches and isinstance(batches[0], list):
        return [chat_message(m) for m in batches[0]]
    prompts = run.inputs.get("prompts")
    if isinstance(prompts, list):
        return [{"role": "user", "content": str(p)} for p in prompts[:1]]
    return []


def _generations(run: Run) -> Iterator[Any]:
    generations = (run.outputs or {}).get("generations")
    if isinstance(generations, list) and generations and isinstance(generations[0], list):
        yield from generations[0]


def _output_messages(run: Run) -> list[dict[str, Any]]:
    out = []
    for g in _generations(run):
        message = g.get("message") if isinstance(g, Mapping) else getattr(g, "message", None)
        if message is not None:
            out.append(chat_message(message))
        else:
            text = g.get("text") if isinstance(g, Mapping) else getattr(g, "text", "")
            out.append({"role": "assistant", "content": str(text or "")})
    return out


def _tokens(run: Run) -> tuple[int | None, int | None]:
    for g in _generations(run):
        message = g.get("message") if isinstance(g, Mapping) else getattr(g, "message", None)
        fields = (
            message.model_dump() if isinstance(message, BaseMessage) else message_fields(message)
        )
        usage = (fields or {}).get("usage_metadata")
        if isinstance(usage, Mapping):
            return usage.get("input_tokens"), usage.get("output_tokens")
    usage = ((run.outputs or {}).get("llm_output") or {}).get("token_usage")
    if isinstance(usage, Mapping):
        return usage.get("prompt_tokens"), usage.get("completion_tokens")
    return None, None


def _model(run: Run) -> tuple[str, float | None]:
    params = (run.extra or {}).get("invocation_params") or {}
    meta = _metadata(run)
    model = next(
        (params[k] for k in ("model", "model_name", "model_id") if params.get(k)),
        meta.get("ls_model_name") or run.name,
    )
    temperature = params.get("temperature", meta.get("ls_temperature"))
    return str(model), float(temperature) if isinstance(temperature, int | float) else None


# --- documents --------------------------------------------------------------------------------


def _document(doc: Any, index: int) -> dict[str, Any]:
    if isinstance(doc, LcDocument):
        doc_id, text, meta = doc.id, doc.page_content, dict(doc.metadata)
    elif isinstance(doc, Mapping):
        fields = doc.get("kwargs", doc)
        doc_id, text = fields.get("id"), fields.get("page_content")
        meta = dict(fields.get("metadata") or {})
    else:
        doc_id, text, meta = None, str(doc), {}
    doc_id = doc_id or meta.get("id") or meta.get("source") or str(index)
    score = next(
        (meta.pop(k) for k in ("score", "relevance_score", "similarity_score") if k in meta), None
    )
    return {
        "id": str(doc_id),
        "score": float(score) if isinstance(score, int | float) else None,
        "text": None if text is None else str(text),
        "metadata": jsonable(meta),
    }


# --- the run tree as events -------------------------------------------------------------------


class _Builder:
    def __init__(self, root: Run, within: tuple[str, str] | None = None) -> None:
        self.trace_id = within[0] if within else root.id.hex
        self.above = within[1] if within else None  # the span the root run is under
        self.root = root.id
        self.events: list[Event] = []

    def add(self, run: Run, kind: str, payload: Mapping[str, Any], *, end: bool = False) -> None:
        parent = run.parent_run_id
        self.events.append(
            Event.create(
                trace_id=self.trace_id,
                span_id=_span_id(run.id),
                parent_span_id=(
                    self.above if parent is None or run.id == self.root else _span_id(parent)
                ),
                seq=len(self.events),
                ts=_ts(run.end_time if end else run.start_time),
                kind=kind,
                payload=payload,
            )
        )

    def walk(self, run: Run) -> None:
        for child in sorted(
            run.child_runs, key=lambda r: (r.dotted_order or "", _ts(r.start_time))
        ):
            self.child(child)

    def child(self, run: Run) -> None:
        if run.run_type in LLM_RUNS:
            self.llm(run)
        elif run.run_type == "tool":
            self.tool(run)
        elif run.run_type == "retriever":
            query = run.inputs.get("query")
            docs = (run.outputs or {}).get("documents") or []
            payload: dict[str, Any] = {
                "query": str(query if query is not None else question_text(run.inputs) or ""),
                "documents": [_document(d, i) for i, d in enumerate(docs)],
            }
            self.add(run, "retrieval", payload)
        else:
            payload = {
                "name": run.name,
                "status": "error" if run.error else "ok",
                "error": run.error,
                "duration_ms": _ms(run),
                "attributes": {"run_type": run.run_type},
            }
            self.add(run, "step", payload)
        self.walk(run)

    def llm(self, run: Run) -> None:
        model, temperature = _model(run)
        outputs = _output_messages(run)
        tokens_in, tokens_out = _tokens(run)
        provider = _metadata(run).get("ls_provider")
        payload: dict[str, Any] = {
            "model": model,
            "input_messages": _input_messages(run),
            "output_messages": outputs,
            "temperature": temperature,
            "input_tokens": tokens_in if isinstance(tokens_in, int) else None,
            "output_tokens": tokens_out if isinstance(tokens_out, int) else None,
            "duration_ms": _ms(run),
            "error": run.error,
            "attributes": {"provider": provider} if provider else {},
        }
        self.add(run, "llm.called", payload, end=True)
        steps = plan_steps(outputs)
        if steps:
            self.add(run, "plan", {"steps": steps}, end=True)

    def tool(self, run: Run) -> None:
        extra = run.extra or {}
        output = (run.outputs or {}).get("output")
        result: Any = output
        call_id = extra.get("tool_call_id")
        if isinstance(output, BaseMessage):
            call_id = call_id or getattr(output, "tool_call_id", None)
            result = output.content
        arguments = dict(run.inputs) if isinstance(run.inputs, Mapping) else {}
        call_id = str(call_id or _span_id(run.id))
        self.add(
            run,
            "tool.called",
            {"call_id": call_id, "tool": run.name, "arguments": jsonable(arguments)},
        )
        returned = {
            "call_id": call_id,
            "tool": run.name,
            "result": jsonable(result),
            "error": run.error,
            "duration_ms": _ms(run),
        }
        self.add(run, "tool.returned", returned, end=True)


def run_to_events(
    root: Run, *, within: tuple[str, str] | None = None, **settings: str | None
) -> list[Event]:
    """The events of a finished LangChain run tree. ``settings`` (dataset, dataset_version,
    case_id, agent, strategy) override the root's metadata ``agentdocket.*`` keys.

    ``within`` (trace id, span id): the tree ran inside a run our tracer records (an
    experiment's call of the agent); its steps join that run's trace under its span, and the
    run's start, answer and end are the tracer's to record."""
    if within is not None:
        b = _Builder(root, within)
        if root.run_type in LLM_RUNS or root.run_type in ("tool", "retriever"):
            b.child(root)
        else:
            b.walk(root)
        return b.events
    meta = _metadata(root)

    def setting(name: str) -> str | None:
        value = settings.get(name) or meta.get(f"agentdocket.{name}")
        return None if value is None else str(value)

    b = _Builder(root)
    models = sorted({_model(r)[0] for r in _descendants(root) if r.run_type in LLM_RUNS})
    started = {
        "agent": setting("agent") or root.name,
        "strategy": setting("strategy"),
        "models": {"llm": models[0]} if len(models) == 1 else {},
        "question": question_text(root.inputs) if root.inputs else None,
        "dataset": setting("dataset"),
        "dataset_version": setting("dataset_version"),
        "case_id": setting("case_id"),
        "attributes": {"run_type": root.run_type, "tags": list(root.tags or [])},
    }
    b.add(root, "run.started", started)
    if root.run_type in LLM_RUNS or root.run_type in ("tool", "retriever"):
        b.child(root)  # a lone model or tool call traced as its own run
    else:
        b.walk(root)
    answer = answer_text(root.outputs) if root.outputs else None
    if answer is not None:
        b.add(root, "response", {"text": answer}, end=True)
    status = "error" if root.error else "ok"
    b.add(root, "run.finished", {"status": status, "error": root.error}, end=True)
    return b.events


def _descendants(run: Run) -> Iterator[Run]:
    for child in run.child_runs:
        yield child
        yield from _descendants(child)


# --- the handler ------------------------------------------------------------------------------
