"""LlamaIndex's FunctionAgent with a scripted function-calling model, through OpenInference's
instrumentation."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tests.helpers.frameworks import (
    AGENT,
    INSTRUCTIONS,
    SCENARIOS,
    Expected,
    Scenario,
    check_runs,
    instrumented,
    weather,
)
from tests.helpers.otlp_server import Server

# LlamaIndex's instrumentation reads Pydantic models' deprecated attributes
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


def _agent(scenario: Scenario) -> Any:
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.llms import ChatMessage, ChatResponse, LLMMetadata, MessageRole
    from llama_index.core.llms.callbacks import llm_chat_callback
    from llama_index.core.llms.function_calling import FunctionCallingLLM
    from llama_index.core.llms.llm import ToolSelection
    from llama_index.core.tools import FunctionTool

    class ScriptedLLM(FunctionCallingLLM):
        """Replies from a script, its tool calls in OpenAI's shape as OpenAI's LLM class
        keeps them."""

        turn: int = 0

        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(model_name="scripted-1", is_function_calling_model=True)

        def _reply(self) -> ChatResponse:
            self.turn += 1
            if self.turn == 1:
                call = {
                    "id": "call_1",
                    "type": "function",
                    "function": {
                        "name": "get_weather",
                        "arguments": json.dumps({"city": scenario.called}),
                    },
                }
                message = ChatMessage(
                    role=MessageRole.ASSISTANT, content="", additional_kwargs={"tool_calls": [call]}
                )
            else:
                message = ChatMessage(role=MessageRole.ASSISTANT, content=scenario.answer)
            usage = {"prompt_tokens": 20, "completion_tokens": 7, "total_tokens": 27}
            return ChatResponse(message=message, raw={"usage": usage})

        @llm_chat_callback()
        def chat(self, messages: Any, **kwargs: Any) -> ChatResponse:
            return self._reply()

        @llm_chat_callback()
        async def achat(self, messages: Any, **kwargs: Any) -> ChatResponse:
            return self._reply()

        @llm_chat_callback()
        async def astream_chat(self, messages: Any, **kwargs: Any) -> Any:
            reply = self._reply()

            async def stream() -> Any:
                yield reply

            return stream()

        def stream_chat(self, messages: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

        def complete(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

        async def acomplete(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

        def stream_complete(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

        async def astream_complete(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

        def _prepare_chat_with_tools(
            self, tools: Any, user_msg: Any = None, chat_history: Any = None, **kwargs: Any
        ) -> dict[str, Any]:
            messages = list(chat_history or [])
            if user_msg is not None:
                messages.append(
                    user_msg
                    if isinstance(user_msg, ChatMessage)
                    else ChatMessage(role=MessageRole.USER, content=user_msg)
                )
            return {"messages": messages, "tools": tools}

        def get_tool_calls_from_response(
            self, response: Any, error_on_no_tool_call: bool = True, **kwargs: Any
        ) -> list[ToolSelection]:
            return [
                ToolSelection(
                    tool_id=c["id"],
                    tool_name=c["function"]["name"],
                    tool_kwargs=json.loads(c["function"]["arguments"]),
                )
                for c in response.message.additional_kwargs.get("tool_calls", [])
            ]

    def get_weather(city: str) -> str:
        """The weather in a city."""
        return weather(city)

    return FunctionAgent(
        name=AGENT,
        tools=[FunctionTool.from_defaults(get_weather)],
        llm=ScriptedLLM(),
        system_prompt=INSTRUCTIONS,
    )


async def _run(scenario: Scenario) -> Any:
    return await _agent(scenario).run(scenario.question)  # the workflow needs a running loop


def test_llamaindex_function_agent_through_openinference(server: Server, weather_url: str) -> None:
    from openinference.instrumentation import using_metadata
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

    with instrumented(LlamaIndexInstrumentor(), server.endpoint):
        for scenario in SCENARIOS:
            # LlamaIndex records no agent name: it comes from the metadata
            with using_metadata({**scenario.metadata, "agentdocket.agent": AGENT}):
                result = asyncio.run(_run(scenario))
            assert str(result) == scenario.answer
    check_runs(weather_url, Expected(model="scripted-1", tokens=(20, 7)))
