"""A real langchain-core tool-calling loop driven by a fake chat model that emits tool calls
(no provider, no network): the agent the LangChain handler and the OpenInference tests trace."""

from __future__ import annotations

from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableLambda
from langchain_core.tools import tool

from agentdocket.events import Case, Dataset, ExpectedCall


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"18 C in {city}"


class CityNotes(BaseRetriever):
    """Two fixed documents, with ids and scores."""

    def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
        return [
            Document(id="doc-fr", page_content="Paris is in France.", metadata={"score": 0.92}),
            Document(id="doc-it", page_content="Rome is in Italy.", metadata={"score": 0.41}),
        ]


def weather_agent(
    city: str, *, retrieve: bool = False, secret: str | None = None
) -> Runnable[str, str]:
    """A loop: ask the model; run the tools it calls; stop when it answers. The model first
    calls ``get_weather(city)``, then answers from the tool's result."""
    model = GenericFakeChatModel(
        messages=iter(
            [
                AIMessage(
                    content="",
                    tool_calls=[
                        {"name": "get_weather", "args": {"city": city}, "id": f"call_{city}"}
                    ],
                ),
                AIMessage(content=f"It is 18 C in {city}." + (f" ({secret})" if secret else "")),
            ]
        )
    )
    tools = {"get_weather": get_weather}

    def loop(question: str) -> str:
        if retrieve:
            CityNotes().invoke(question)
        messages: list[BaseMessage] = [HumanMessage(question)]
        while True:
            reply = model.invoke(messages)
            messages.append(reply)
            if not isinstance(reply, AIMessage) or not reply.tool_calls:
                return str(reply.content)
            for call in reply.tool_calls:
                messages.append(tools[call["name"]].invoke(call))

    return RunnableLambda(loop).with_config(run_name="weather-agent")


def weather_dataset() -> Dataset:
    return Dataset(
        "weather",
        "1",
        (
            Case(
                case_id="paris",
                question="Weather in Paris?",
                expected_plan=["get_weather"],
                expected_calls=[ExpectedCall("get_weather", {"city": "Paris"})],
            ),
            Case(
                case_id="rome",
                question="Weather in Rome?",
                expected_plan=["get_weather"],
                expected_calls=[ExpectedCall("get_weather", {"city": "Rome"})],
            ),
        ),
    )
