"""Naming the dataset and case of runs recorded by any instrumentation.

OpenInference instrumentations carry metadata (``using_metadata`` or LangChain's
``config={"metadata": ...}``); the OpenTelemetry GenAI conventions have no place for it. This
works for both: spans started inside ``with for_case(...)`` get the case's attributes, through
:class:`CaseSpanProcessor` added to the ``TracerProvider`` the instrumentation uses::

    provider.add_span_processor(CaseSpanProcessor())
    with for_case("weather", "paris"):
        agent.run_sync("What is the weather in Paris?")
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry import context
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from agentdocket.ingest import attributes as A

_KEY = context.create_key("agentdocket.case")


@contextmanager
def for_case(
    dataset: str,
    case_id: str,
    *,
    dataset_version: str | None = None,
    agent: str | None = None,
    agent_version: str | None = None,
) -> Iterator[None]:
    """Spans started inside carry the dataset, case (and agent) as ``agentdocket.*``
    attributes, which the span mapping reads on a run's root."""
    labels = {
        A.DATASET: dataset,
        A.CASE_ID: case_id,
        A.DATASET_VERSION: dataset_version,
        A.GEN_AI_AGENT_NAME: agent,
        A.GEN_AI_AGENT_VERSION: agent_version,
    }
    token = context.attach(
        context.set_value(_KEY, {k: v for k, v in labels.items() if v is not None})
    )
    try:
        yield
    finally:
        context.detach(token)


class CaseSpanProcessor(SpanProcessor):
    """Copies the labels of the enclosing :func:`for_case` onto each span as it starts."""

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        labels: Any = context.get_value(_KEY, parent_context)
        if labels:
            span.set_attributes(labels)

    def on_end(self, span: ReadableSpan) -> None:
        return None
