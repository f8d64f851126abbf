"""The agent a foreign run is named after.

OpenTelemetry instrumentations name the agent in different places: on the root span
(``gen_ai.agent.name``, ``agent.name``, an ``invoke_agent {name}`` span), on an agent span
below a workflow root (the OpenAI Agents SDK), or only in the root span's name (LangGraph
names it after the graph). The rule, first found wins:

1. the root's own attributes: ``gen_ai.agent.name``, ``agent.name``, ``agentdocket.agent`` in
   its metadata, ``gen_ai.workflow.name`` (a workflow's, or a conversation turn's entry point);
2. the root's name when it is ``invoke_agent {name}``, ``invoke_workflow {name}`` or
   ``handle_conversation_turn {name}`` (a GenAI invocation's), or ``{name}.{method}`` on an
   OpenInference agent span (``weather.run``, as the smolagents and CrewAI instrumentations
   name an agent's spans) unless ``{name}`` is a class's (``FunctionAgent.run``);
3. the nearest agent span below the root in the same export batch (by depth, then start);
4. the root's name, unless it names code or an operation rather than an agent: a framework's
   generic one (``LangGraph``, ``Agent workflow``), a dotted path (``FunctionAgent.run``,
   OpenLLMetry's ``FunctionAgent.workflow``, a module path ``app.agent.run``), or the root's
   own GenAI operation alone (``invoke_agent``, which the GenAI conventions name an agent
   span that knows no agent name);
5. the service name (``service.name``), unless the SDK's default ``unknown_service``;
6. the root's name.

Step 3 sees only the spans exported with the root: agent spans end just before their root, so
they travel together in practice; a run whose agent span came in an earlier batch is named by
the later steps.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from agentdocket.ingest import attributes as A

INVOKE_PREFIXES = tuple(
    op + " " for op in (A.OP_INVOKE_AGENT, A.OP_INVOKE_WORKFLOW, A.OP_HANDLE_TURN)
)
GENERIC_NAMES = frozenset(
    {"LangGraph", "Agent workflow", "RunnableSequence", "AgentExecutor", "RunnableLambda"}
)
_METHOD = re.compile(r"^[A-Za-z_]\w*\.\w+$")
_CODE_PATH = re.compile(r"^[A-Za-z_]\w*(?:\.\w+)+$")  # FunctionAgent.run, app.agent.run
# a class's name rather than an agent's: two or more capitalised words (FunctionAgent)
_CLASS = re.compile(r"^(?:[A-Z][a-z0-9]+){2,}$")


def own_name(name: str, attrs: Mapping[str, Any], meta: Mapping[str, Any]) -> str | None:
    """Steps 1-2: what a span says of its own agent."""
    found = (
        attrs.get(A.GEN_AI_AGENT_NAME)
        or attrs.get(A.AGENT_NAME)
        or meta.get(A.AGENT)
        or attrs.get(A.GEN_AI_WORKFLOW_NAME)
    )
    if found:
        return str(found)
    for prefix in INVOKE_PREFIXES:
        if name.startswith(prefix) and name[len(prefix) :].strip():
            return name[len(prefix) :].strip()
    if attrs.get(A.OI_SPAN_KIND) == A.OI_AGENT and _METHOD.match(name):
        prefix = name.split(".", 1)[0]
        if prefix not in GENERIC_NAMES and not _CLASS.match(prefix):
            return prefix
    return None


def fallback_name(name: str, attrs: Mapping[str, Any]) -> str:
    """Steps 4-6, for a root that names no agent and has no agent span below it."""
    operation = name in (A.OP_INVOKE_AGENT, attrs.get(A.GEN_AI_OPERATION))
    if name and name not in GENERIC_NAMES and not _CODE_PATH.match(name) and not operation:
        return name
    service = attrs.get(A.SERVICE_NAME)
    if service and not str(service).startswith("unknown_service"):
        return str(service)
    return name or "unknown"


def _is_agent(name: str, attrs: Mapping[str, Any]) -> bool:
    return (
        attrs.get(A.OI_SPAN_KIND) == A.OI_AGENT
        or attrs.get(A.GEN_AI_OPERATION) == A.OP_INVOKE_AGENT
        or A.GEN_AI_AGENT_NAME in attrs
    )


def settings_below_roots(
    spans: Sequence[Any], keys: Sequence[str]
) -> dict[tuple[int, int], dict[str, str]]:
    """For each foreign root of the batch, the run settings (dataset, case, ...) the earliest
    span of its trace that carries any gives (the root's own win, key by key, when the run is
    read): OpenLLMetry puts its association properties (``traceloop.association.properties.*``)
    on the spans of the LangChain run, not on LangGraph's root above them. Only the spans of
    those roots' traces are read."""
    roots = {
        (s.context.trace_id, s.context.span_id)
        for s in spans
        if s.parent is None and s.context is not None and A.KIND not in (s.attributes or {})
    }
    if not roots:
        return {}
    traces = {trace for trace, _ in roots}
    mine = [s for s in spans if s.context is not None and s.context.trace_id in traces]
    found: dict[tuple[int, int], dict[str, str]] = {}
    by_id = {(s.context.trace_id, s.context.span_id): s for s in mine}
    where = _setting_keys(keys)
    carriers = [s for s in mine if not where.isdisjoint(s.attributes or ())]
    for s in sorted(carriers, key=lambda s: s.start_time or 0):
        settings = run_settings(s.attributes or {}, keys)
        if not settings:
            continue
        root = _root_of(s, by_id)
        if root in roots and root not in found:
            found[root] = settings
            if len(found) == len(roots):
                break
    return found


def _root_of(span: Any, by_id: Mapping[tuple[int, int], Any]) -> tuple[int, int]:
    seen = set()
    while span.parent is not None:
        key = (span.context.trace_id, span.parent.span_id)
        if key in seen or key not in by_id:
            return key
        seen.add(key)
        span = by_id[key]
    return (span.context.trace_id, span.context.span_id)


def _setting_keys(keys: Sequence[str]) -> frozenset[str]:
    """The attributes :func:`run_settings` reads for ``keys``: a span with none of them
    carries no setting."""
    return frozenset((*keys, *(A.TRACELOOP_ASSOCIATION + k for k in keys), A.METADATA))


def run_settings(attrs: Mapping[str, Any], keys: Sequence[str]) -> dict[str, str]:
    """The run settings a span carries: ``agentdocket.*`` attributes, OpenLLMetry's
    association properties of the same names, or OpenInference's ``metadata``."""
    meta = A.loads(attrs.get(A.METADATA))
    meta = meta if isinstance(meta, Mapping) else {}
    out = {}
    for key in keys:
        value = attrs.get(key)
        if value is None:
            value = attrs.get(A.TRACELOOP_ASSOCIATION + key)
        if value is None:
            value = meta.get(key)
        if value is not None:
            out[key] = str(value)
    return out


def names_below_roots(spans: Sequence[Any]) -> dict[tuple[int, int], str]:
    """Step 3 for the root spans of a batch that need it: (trace id, span id) -> the name
    its nearest agent span gives, where one does."""
    # only the roots step 3 can decide: foreign ones that do not name their agent themselves
    # (our tracer's runs always do; sparing them keeps the exporter's path short)
    roots = [
        s
        for s in spans
        if s.parent is None
        and s.context is not None
        and A.KIND not in (attrs := s.attributes or {})
        and own_name(s.name, attrs, {}) is None
    ]
    if not roots:
        return {}
    children: dict[tuple[int, int], list[Any]] = defaultdict(list)
    for s in spans:
        if s.parent is not None and s.context is not None:
            children[(s.context.trace_id, s.parent.span_id)].append(s)
    found: dict[tuple[int, int], str] = {}
    for root in roots:
        key = (root.context.trace_id, root.context.span_id)
        level = children.get(key, [])
        while level and key not in found:
            for s in sorted(level, key=lambda s: s.start_time or 0):
                attrs = s.attributes or {}
                name = own_name(s.name, attrs, {}) if _is_agent(s.name, attrs) else None
                if name:
                    found[key] = name
                    break
            level = [c for s in level for c in children.get((key[0], s.context.span_id), [])]
    return found
