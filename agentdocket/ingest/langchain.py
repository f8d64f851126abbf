"""A langchain-core callback handler recording LangChain runs as agentdocket events.

:class:`AgentdocketHandler` is a ``BaseTracer``: langchain-core assembles the run tree, and when
the root run ends its persist step hands the tree to :func:`run_to_events` (a pure function)
and queues the events for a background thread, which stores them, or spools them while the
database is away (the shared :class:`~agentdocket.ingest.sink.Sink`, with its back-off). The
agent's thread only maps and queues; nothing is ever raised into it, and a full queue drops
runs and counts them.

Mapping: the root run is the run (``run.started``, the answer as ``response``,
``run.finished``); chat model and LLM runs are ``llm.called`` (messages, model, temperature,
tokens), and the tool calls a model asks for are a ``plan`` step each (tool, arguments, call
id); tool runs are ``tool.called`` / ``tool.returned``; retriever runs are ``retrieval`` (ids,
scores, texts); other chains are generic ``step`` events. Every event keeps its run's place in
the tree (``parent_span_id``). The case a run answers comes from the handler's arguments or the
run's metadata (``agentdocket.dataset``, ``agentdocket.dataset_version``,
``agentdocket.case_id``, ``agentdocket.agent``, ``agentdocket.strategy``).
"""

from __future__ import annotations

import logging
import queue
import threading
import uuid
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from langchain_core.documents import Document as LcDocument
from langchain_core.messages import BaseMessage
from langchain_core.tracers.base import BaseTracer
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
from agentdocket.ingest.sink import Sink
from agentdocket.store.redaction import Redactor

log = logging.getLogger("agentdocket.langchain")

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
    def __init__(self, root: Run) -> None:
        self.trace_id = root.id.hex
        self.root = root.id
        self.events: list[Event] = []

    def add(self, run: Run, kind: str, payload: Mapping[str, Any], *, end: bool = False) -> None:
        parent = run.parent_run_id
        self.events.append(
            Event.create(
                trace_id=self.trace_id,
                span_id=_span_id(run.id),
                parent_span_id=None if parent is None or run.id == self.root else _span_id(parent),
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


def run_to_events(root: Run, **settings: str | None) -> list[Event]:
    """The events of a finished LangChain run tree. ``settings`` (dataset, dataset_version,
    case_id, agent, strategy) override the root's metadata ``agentdocket.*`` keys."""
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


class AgentdocketHandler(BaseTracer):
    """Record LangChain runs into agentdocket's store: ``config={"callbacks": [handler]}``.

    ``url`` defaults to ``AGENTDOCKET_DATABASE_URL`` (else ./agentdocket.db); ``sink`` shares an
    existing :class:`~agentdocket.ingest.sink.Sink` instead. ``dataset``,
    ``dataset_version``, ``case_id``, ``agent`` and ``strategy`` tag every run (the run's
    metadata can tag it too). Call :meth:`flush` to wait for queued runs, :meth:`close` at exit.
    """

    name: str = "agentdocket"

    def __init__(
        self,
        url: str | None = None,
        *,
        sink: Sink | None = None,
        spool_dir: str | None = None,
        redactor: Redactor | None = None,
        max_queue: int = 1000,
        **settings: str | None,
    ) -> None:
        super().__init__(_schema_format="original+chat")
        unknown = set(settings) - set(RUN_SETTINGS)
        if unknown:
            raise TypeError(f"unknown settings {sorted(unknown)}; known: {RUN_SETTINGS}")
        self.settings = settings
        self.sink = sink or Sink(url, spool_dir=spool_dir, redactor=redactor, source="langchain")
        self.dropped = 0  # runs lost to a full queue or a mapping failure
        self.failures = 0
        self._queue: queue.Queue[list[Event] | None] = queue.Queue(max_queue)
        self._worker = threading.Thread(
            target=self._drain, name="agentdocket-langchain", daemon=True
        )
        self._worker.start()

    def _persist_run(self, run: Run) -> None:
        try:
            events = run_to_events(run, **self.settings)
        except Exception:  # never into the agent
            self.dropped += 1
            log.exception("agentdocket: could not map LangChain run %s", run.id)
            return
        try:
            self._queue.put_nowait(events)
        except queue.Full:
            self.dropped += 1
            log.warning("agentdocket: queue full, dropped LangChain run %s", run.id)

    def _drain(self) -> None:
        while True:
            events = self._queue.get()
            try:
                if events is None:
                    return
                if self.sink.deliver(events, n_spans=1) == "dropped":
                    self.failures += 1
            except Exception:
                self.failures += 1
                log.exception("agentdocket: storing a LangChain run failed")
            finally:
                self._queue.task_done()

    def flush(self) -> None:
        """Wait until every queued run is stored or spooled."""
        self._queue.join()

    def close(self) -> None:
        self.flush()
        self._queue.put(None)
        self._worker.join()
        self.sink.close()


__all__ = ["AgentdocketHandler", "chat_message", "run_to_events"]
