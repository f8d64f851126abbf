"""The OpenAI Agents SDK with an offline model of its own kind, through OpenInference's
instrumentation."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest

from tests.helpers.frameworks import (
    INSTRUCTIONS,
    SCENARIOS,
    Expected,
    Scenario,
    check_runs,
    instrumented,
    weather,
)
from tests.helpers.otlp_server import Server

pytestmark = pytest.mark.slow


def _agent(scenario: Scenario) -> Any:
    from agents import Agent, function_tool
    from agents.items import ModelResponse
    from agents.models.chatcmpl_converter import Converter
    from agents.models.interface import Model
    from agents.tracing import generation_span
    from agents.usage import Usage
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    class ScriptedModel(Model):
        """Replies from a script, recording a generation span as the SDK's own models do."""

        def __init__(self) -> None:
            self.turn = 0

        async def get_response(
            self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
        ) -> ModelResponse:
            tracing = args[5] if len(args) > 5 else kwargs["tracing"]
            self.turn += 1
            output: list[Any]
            if self.turn == 1:
                output = [
                    ResponseFunctionToolCall(
                        type="function_call",
                        call_id="call_1",
                        name="get_weather",
                        arguments=json.dumps({"city": scenario.called}),
                        id="fc_1",
                        status="completed",
                    )
                ]
            else:
                text = ResponseOutputText(type="output_text", text=scenario.answer, annotations=[])
                output = [
                    ResponseOutputMessage(
                        id="msg_1",
                        type="message",
                        role="assistant",
                        status="completed",
                        content=[text],
                    )
                ]
            messages = Converter.items_to_messages(input)
            if system_instructions:
                messages = [{"role": "system", "content": system_instructions}, *messages]
            replies = Converter.items_to_messages([o.model_dump() for o in output])
            with generation_span(
                model="scripted-1",
                input=messages,
                output=replies,
                usage={"input_tokens": 20, "output_tokens": 7},
                disabled=tracing.is_disabled(),
            ):
                pass
            usage = Usage(requests=1, input_tokens=20, output_tokens=7, total_tokens=27)
            return ModelResponse(output=output, usage=usage, response_id=f"resp_{self.turn}")

        async def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return weather(city)

    return Agent(
        name="weather", instructions=INSTRUCTIONS, tools=[get_weather], model=ScriptedModel()
    )


def test_openai_agents_sdk_through_openinference(server: Server, weather_url: str) -> None:
    from agents import RunConfig, Runner, set_trace_processors
    from openinference.instrumentation import using_metadata
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    os.environ.setdefault("OPENAI_API_KEY", "offline")  # never used: the model is scripted
    set_trace_processors([])  # no export to OpenAI's own tracing backend: only OpenInference's
    with instrumented(OpenAIAgentsInstrumentor(), server.endpoint):
        for scenario in SCENARIOS:
            with using_metadata(scenario.metadata):
                result = asyncio.run(
                    Runner.run(
                        _agent(scenario),
                        scenario.question,
                        run_config=RunConfig(workflow_name="weather workflow"),
                    )
                )
            assert result.final_output == scenario.answer
    # The SDK redacts a failing tool's exception from its spans: its own message is what is
    # recorded.
    check_runs(
        weather_url, Expected(model="scripted-1", tokens=(20, 7), error="Error running tool")
    )
