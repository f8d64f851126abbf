"""Pydantic AI, a framework that emits the OpenTelemetry GenAI conventions natively (not an
OpenInference instrumentation), with a scripted function model. Its spans name no dataset or
case: ``tracer.for_case`` adds them."""

from __future__ import annotations

from typing import Any

import pytest

from agentdocket.tracer import for_case
from tests.helpers.frameworks import (
    AGENT,
    DATASET,
    INSTRUCTIONS,
    SCENARIOS,
    Expected,
    Scenario,
    check_runs,
    exporting,
    weather,
)
from tests.helpers.otlp_server import Server

pytestmark = pytest.mark.slow


def _agent(scenario: Scenario) -> Any:
    from pydantic_ai import Agent, ModelRetry
    from pydantic_ai.messages import (
        ModelResponse,
        RetryPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.models.function import FunctionModel

    def script(messages: list[Any], info: Any) -> ModelResponse:
        answered = (ToolReturnPart, RetryPromptPart)
        if any(isinstance(p, answered) for p in messages[-1].parts):
            return ModelResponse(parts=[TextPart(scenario.answer)])
        call = ToolCallPart("get_weather", {"city": scenario.called}, tool_call_id="call_1")
        return ModelResponse(parts=[call])

    model = FunctionModel(script, model_name="scripted-1")
    agent = Agent(model, name=AGENT, instructions=INSTRUCTIONS)

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """The weather in a city."""
        try:
            return weather(city)
        except ValueError as exc:  # Pydantic AI's way for a tool to report a failure
            raise ModelRetry(str(exc)) from exc

    return agent


def test_pydantic_ai_through_its_own_genai_instrumentation(
    server: Server, weather_url: str
) -> None:
    from pydantic_ai import InstrumentationSettings

    with exporting(server.endpoint) as provider:
        for scenario in SCENARIOS:
            agent = _agent(scenario)
            agent.instrument = InstrumentationSettings(tracer_provider=provider)
            with for_case(DATASET, scenario.case_id):
                assert agent.run_sync(scenario.question).output == scenario.answer
    traces = check_runs(weather_url, Expected(model="scripted-1"))
    # the GenAI conventions' conversation id and the tools offered to the model are kept
    for trace in traces.values():
        started = trace.started
        assert started is not None and started.attributes.get("conversation_id")
        [first, _] = trace.of_kind("llm.called")
        [tool] = first.payload["attributes"]["tool_definitions"]
        assert tool["name"] == "get_weather" and tool["parameters"]["required"] == ["city"]
