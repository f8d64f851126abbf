"""Span attribute names: OpenInference, OpenTelemetry GenAI / database conventions, and ours.

Our spans carry the conventional attributes so that any OpenTelemetry backend (Phoenix, Jaeger,
a collector) understands them, plus a few ``agentdocket.*`` attributes for what the conventions
do not say (step kind, order within the run, the case a run answers). The exporter reads the
same conventional attributes back, which is also how it understands foreign spans.

References: OpenInference semantic conventions (``openinference.span.kind``, ``input.value``,
``llm.*``, ``retrieval.documents.*``); OpenTelemetry semantic conventions for generative AI
(``gen_ai.*``) and databases (``db.*``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import orjson

from agentdocket.store.limits import STORE as LIMITS
from agentdocket.store.limits import bound

# --- OpenInference ---------------------------------------------------------------------------
OI_SPAN_KIND: Final = "openinference.span.kind"
INPUT_VALUE: Final = "input.value"
INPUT_MIME: Final = "input.mime_type"
OUTPUT_VALUE: Final = "output.value"
OUTPUT_MIME: Final = "output.mime_type"
JSON_MIME: Final = "application/json"
TEXT_MIME: Final = "text/plain"
METADATA: Final = "metadata"
TOOL_NAME: Final = "tool.name"
TOOL_ARGUMENTS: Final = "tool.arguments"  # OpenLLMetry's LlamaIndex instrumentation
TOOL_ID: Final = "tool.id"
TOOL_CALL_ID: Final = "tool_call.id"
LLM_MODEL: Final = "llm.model_name"
LLM_INVOCATION_PARAMETERS: Final = "llm.invocation_parameters"
LLM_INPUT_MESSAGES: Final = "llm.input_messages"
LLM_OUTPUT_MESSAGES: Final = "llm.output_messages"
LLM_PROMPT_TOKENS: Final = "llm.token_count.prompt"
LLM_COMPLETION_TOKENS: Final = "llm.token_count.completion"
LLM_TOTAL_TOKENS: Final = "llm.token_count.total"
LLM_PROVIDER: Final = "llm.provider"
MESSAGE_ROLE: Final = "message.role"
MESSAGE_CONTENT: Final = "message.content"
MESSAGE_NAME: Final = "message.name"
MESSAGE_CONTENTS: Final = "message.contents"  # + .N.message_content.{type,text}
MESSAGE_CONTENT_TYPE: Final = "message_content.type"
MESSAGE_CONTENT_TEXT: Final = "message_content.text"
MESSAGE_TOOL_CALLS: Final = "message.tool_calls"
TOOL_CALL_FUNCTION_NAME: Final = "tool_call.function.name"
TOOL_CALL_FUNCTION_ARGUMENTS: Final = "tool_call.function.arguments"
RETRIEVAL_DOCUMENTS: Final = "retrieval.documents"
DOCUMENT_ID: Final = "document.id"
DOCUMENT_SCORE: Final = "document.score"
DOCUMENT_CONTENT: Final = "document.content"
DOCUMENT_METADATA: Final = "document.metadata"
AGENT_NAME: Final = "agent.name"
SESSION_ID: Final = "session.id"  # OpenInference's conversation
LLM_TOOLS: Final = "llm.tools"  # + .N.tool.json_schema
TOOL_JSON_SCHEMA: Final = "tool.json_schema"
SERVICE_NAME: Final = "service.name"  # a resource attribute; the receiver passes it on

OI_AGENT: Final = "AGENT"
OI_CHAIN: Final = "CHAIN"
OI_TOOL: Final = "TOOL"
OI_LLM: Final = "LLM"
OI_RETRIEVER: Final = "RETRIEVER"

# --- OpenTelemetry GenAI ---------------------------------------------------------------------
GEN_AI_OPERATION: Final = "gen_ai.operation.name"
GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
GEN_AI_AGENT_VERSION: Final = "gen_ai.agent.version"
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
GEN_AI_TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_REQUEST_TEMPERATURE: Final = "gen_ai.request.temperature"
GEN_AI_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
GEN_AI_PROMPT_TOKENS_OLD: Final = "gen_ai.usage.prompt_tokens"
GEN_AI_COMPLETION_TOKENS_OLD: Final = "gen_ai.usage.completion_tokens"
GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"
GEN_AI_SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"
GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
GEN_AI_PROVIDER: Final = "gen_ai.provider.name"
# the cost a span reports for its call: the GenAI conventions', Langfuse's, OpenInference's
GEN_AI_COST_AMOUNT: Final = "gen_ai.usage.cost.amount"
GEN_AI_COST_CURRENCY: Final = "gen_ai.usage.cost.currency"
GEN_AI_COST_SOURCE: Final = "gen_ai.usage.cost.source"
LANGFUSE_COST: Final = "gen_ai.usage.cost"
LLM_COST_TOTAL: Final = "llm.cost.total"
# the service tier a call was served at (priced apart by some providers), current and older
SERVICE_TIERS: Final = (
    "openai.response.service_tier",
    "gen_ai.openai.response.service_tier",
    "openai.request.service_tier",
    "gen_ai.openai.request.service_tier",
)
GEN_AI_SYSTEM_OLD: Final = "gen_ai.system"
GEN_AI_RETRIEVAL_QUERY: Final = "gen_ai.retrieval.query.text"
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
GEN_AI_TOOL_DEFINITIONS: Final = "gen_ai.tool.definitions"
# the conventions of autumn 2026 (semantic-conventions-genai): invocations, steps, memory,
# retrieved documents, guardrails, tool-call decisions, and A2A's spans beside them
GEN_AI_WORKFLOW_NAME: Final = "gen_ai.workflow.name"
GEN_AI_STEP_NAME: Final = "gen_ai.step.name"
GEN_AI_MEMORY_RECORDS: Final = "gen_ai.memory.records"
GEN_AI_RETRIEVAL_DOCUMENTS: Final = "gen_ai.retrieval.documents"
GEN_AI_GUARDRAIL_EVENT: Final = "gen_ai.guardrail.result"
GEN_AI_DECISION_EVENT: Final = "gen_ai.tool.call.decision"
GEN_AI_DECISION_OUTCOME: Final = "gen_ai.tool.call.decision.outcome"
A2A_METHOD: Final = "a2a.method.name"
OP_PLAN: Final = "plan"
OP_RUN_STEP: Final = "run_step"
OP_HANDLE_TURN: Final = "handle_conversation_turn"
# The older event-based form: a message per span event, its role from the event's name.
GEN_AI_MESSAGE_EVENTS: Final = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
GEN_AI_CHOICE_EVENT: Final = "gen_ai.choice"
# The current form's event: a call's messages, system instructions (and any other of the span's
# attributes) as the event's attributes, when they are not on the span itself.
GEN_AI_DETAILS_EVENT: Final = "gen_ai.client.inference.operation.details"
OP_INVOKE_AGENT: Final = "invoke_agent"
OP_INVOKE_WORKFLOW: Final = "invoke_workflow"
RUN_OPERATIONS: Final = frozenset({"invoke_agent", "invoke_workflow"})
OP_EXECUTE_TOOL: Final = "execute_tool"
OP_CHAT: Final = "chat"
OP_RETRIEVAL: Final = "retrieval"
LLM_OPERATIONS: Final = frozenset({"chat", "text_completion", "generate_content"})

# --- OpenLLMetry (Traceloop) ------------------------------------------------------------------
TRACELOOP_SPAN_KIND: Final = "traceloop.span.kind"  # workflow, task, agent, tool
TRACELOOP_ASSOCIATION: Final = "traceloop.association.properties."  # + a run setting's name
TRACELOOP_ENTITY_INPUT: Final = "traceloop.entity.input"
TRACELOOP_ENTITY_OUTPUT: Final = "traceloop.entity.output"
TRACELOOP_RUNS: Final = frozenset({"workflow", "agent"})

# --- framework rules: fields no convention carries ----------------------------------------------
# Google ADK's older layout (its schema 1, and ADK 1.x): an attribute-less ``invocation`` root,
# and a tool's arguments and response under its own names.
ADK_INVOCATION: Final = "invocation"
ADK_TOOL_ARGS: Final = "gcp.vertex.agent.tool_call_args"
ADK_TOOL_RESPONSE: Final = "gcp.vertex.agent.tool_response"
# smolagents' tool that ends a run with its answer: the answer, not a step of the plan.
FINAL_ANSWER_TOOLS: Final = frozenset({"final_answer"})

# --- OpenTelemetry MCP (Model Context Protocol) -------------------------------------------------
MCP_METHOD: Final = "mcp.method.name"  # tools/call, tools/list, initialize, ...
MCP_SESSION: Final = "mcp.session.id"

# --- OpenTelemetry database ------------------------------------------------------------------
DB_SYSTEM: Final = "db.system.name"
DB_NAMESPACE: Final = "db.namespace"
DB_QUERY_TEXT: Final = "db.query.text"
DB_STATEMENT_OLD: Final = "db.statement"
DB_RETURNED_ROWS: Final = "db.response.returned_rows"
ERROR_TYPE: Final = "error.type"

# --- agentdocket -----------------------------------------------------------------------------
KIND: Final = "agentdocket.kind"  # run, plan, tool, sql, retrieval, llm, message, response, label
SEQ: Final = "agentdocket.seq"  # order of the span's (first) event within its run
LABEL_RUBRIC: Final = "agentdocket.label.rubric"  # a person's label (run.feedback)
LABEL_VALUE: Final = "agentdocket.label.value"
LABEL_AUTHOR: Final = "agentdocket.label.author"
LABEL_COMMENT: Final = "agentdocket.label.comment"
LABEL_ID: Final = "agentdocket.label.id"
LABEL_SUBJECT_SPAN: Final = "agentdocket.label.span_id"
END_SEQ: Final = "agentdocket.end_seq"  # order of a span's closing event (run, tool)
STRATEGY: Final = "agentdocket.run.strategy"
MODEL_PREFIX: Final = "agentdocket.run.model."  # + role
RUN_ATTRIBUTES: Final = "agentdocket.run.attributes"  # JSON object
RUN_STATUS: Final = "agentdocket.run.status"
AGENT: Final = "agentdocket.agent"  # in a foreign run's metadata
AGENT_VERSION: Final = "agentdocket.agent_version"  # in a foreign run's metadata
DATASET: Final = "agentdocket.dataset"
DATASET_VERSION: Final = "agentdocket.dataset_version"
CASE_ID: Final = "agentdocket.case_id"
PLAN_TEXT: Final = "agentdocket.plan.text"
SQL_COLUMNS: Final = "agentdocket.sql.columns"
LLM_ROLE: Final = "agentdocket.llm.role"
LLM_ATTRIBUTES: Final = "agentdocket.llm.attributes"  # JSON object
MESSAGE_SPEAKER: Final = "agentdocket.message.role"
MESSAGE_SPEAKER_NAME: Final = "agentdocket.message.name"
DOCUMENTS_JSON: Final = "agentdocket.retrieval.documents"  # JSON, when documents carry metadata

# Serialised values longer than this are cut, and marked, rather than bloating every backend.
MAX_VALUE_CHARS: Final = 64 * 1024
TRUNCATED: Final = "…[truncated by agentdocket]"


def _fallback(value: Any) -> Any:
    if isinstance(value, set | frozenset):
        return sorted(value, key=_safe_repr)
    return _safe_repr(value)


def _safe_repr(value: Any) -> str:
    try:
        return repr(value)
    except Exception:
        return f"<unrepresentable {type(value).__name__}>"


def dumps(value: Any) -> str:
    """JSON text of any value: dataclasses, datetimes and numpy types natively; other objects
    by their ``repr``. Never raises."""
    try:
        text = orjson.dumps(
            value, default=_fallback, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS
        ).decode()
    except Exception:
        text = orjson.dumps(_safe_repr(value)).decode()
    if len(text) > MAX_VALUE_CHARS:
        return orjson.dumps(text[:MAX_VALUE_CHARS] + TRUNCATED).decode()
    return text


def loads(text: Any) -> Any:
    """The JSON value of an attribute, or the attribute itself when it is not JSON text;
    within the limits (:mod:`agentdocket.store.limits`): nested no deeper than they allow,
    whatever the text held, so that no reading of it recurses without end."""
    if not isinstance(text, str):
        return text
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return text
    if text.count("[") + text.count("{") <= LIMITS.max_depth:
        return value  # cannot nest deeper (the common case: no walk)
    return bound(value, LIMITS)


def text_value(value: Any) -> str:
    """A string attribute for free text (cut at :data:`MAX_VALUE_CHARS`)."""
    text = value if isinstance(value, str) else dumps(value)
    return text if len(text) <= MAX_VALUE_CHARS else text[:MAX_VALUE_CHARS] + TRUNCATED


_INDEXES = {str(i): i for i in range(100)}  # the usual list positions, by their text


def indexed(attrs: Mapping[str, Any], prefix: str) -> list[dict[str, Any]]:
    """OpenInference's flattened lists: ``prefix.0.message.role`` … as ``[{"message.role": …}]``."""
    items: dict[int, dict[str, Any]] = {}
    start = prefix + "."
    skip = len(start)
    for key in attrs:
        if key.startswith(start):
            index, _, rest = key[skip:].partition(".")
            i = _INDEXES.get(index)
            if i is None and index.isdigit() and index.isascii():
                i = int(index)
            if i is not None and rest:
                item = items.get(i)
                if item is None:
                    item = items[i] = {}
                item[rest] = attrs[key]
    if len(items) < 2:
        return list(items.values())
    return [items[i] for i in sorted(items)]
