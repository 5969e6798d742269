"""``memory-agent``: LangGraph's agents quickstart ("Build an agent": a ReAct agent with a tool, a prompt
and memory, langgraph docs agents/agents), with only its imports changed to graphq's.

The tutorial's program is kept as it is: a LangChain ``@tool`` ``get_weather``, ``create_react_agent``
with a system prompt and an ``InMemorySaver`` checkpointer, and two questions on one thread, the second
answered with the first in memory. Changed: ``langgraph.prebuilt`` → ``graphcore.prebuilt`` and
``langgraph.checkpoint.memory`` → ``graphcore``; and, so that it needs no network or API key, the
tutorial's ``"anthropic:claude-3-7-sonnet-latest"`` is :class:`FakeWeatherChat`, a LangChain chat model
(langchain-core's ``BaseChatModel``) that calls ``get_weather`` for the city the last question names, then
answers with the tool's result and how many questions the conversation has had (the memory: the second
answer says "question 2").

In process::

    python -m graphq.examples.memory_agent

On the workers the thread is the memory (the checkpointer is graphq's Redis store there)::

    GRAPHQ_WORKFLOWS=graphq.examples.memory_agent graphq worker &
    graphq enqueue memory-agent --thread 1 \\
      --input '{"messages": [{"role": "user", "content": "what is the weather in sf"}]}'
    graphq enqueue memory-agent --thread 1 \\
      --input '{"messages": [{"role": "user", "content": "what about new york?"}]}'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool

from graphcore import InMemorySaver  # was: from langgraph.checkpoint.memory import InMemorySaver
from graphcore.prebuilt import create_react_agent  # was: from langgraph.prebuilt import create_react_agent

__all__ = ["CITIES", "FakeWeatherChat", "agent", "get_weather"]

CITIES = ("sf", "new york", "paris")
"""The cities :class:`FakeWeatherChat` knows to ask about."""


class FakeWeatherChat(BaseChatModel):
    """A deterministic chat model for the tutorial (no network): the same conversation gets the same reply
    in every process, so a queued run's steps agree wherever they run."""

    @property
    def _llm_type(self) -> str:
        return "fake-weather-chat"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, Any]:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages))])

    def _reply(self, messages: list[BaseMessage]) -> AIMessage:
        questions = [m for m in messages if m.type == "human"]
        if messages[-1].type == "tool":
            nth = len(questions)
            return AIMessage(f"{messages[-1].content} (question {nth} of this conversation)")
        city = next((c for c in CITIES if c in str(questions[-1].content).lower()), None)
        if city is None:
            return AIMessage("Which city?")
        call = {"name": "get_weather", "args": {"city": city}, "id": f"call-{len(questions)}"}
        return AIMessage("", tool_calls=[call])


# The tutorial, from here on (only the imports above and the model differ).


@tool
def get_weather(city: str) -> str:
    """Get weather for a given city."""
    return f"It's always sunny in {city}!"


checkpointer = InMemorySaver()
agent = create_react_agent(
    model=FakeWeatherChat(),  # the tutorial: "anthropic:claude-3-7-sonnet-latest"
    tools=[get_weather],
    prompt="You are a helpful assistant",
    checkpointer=checkpointer,
    name="memory-agent",
)

if __name__ == "__main__":
    # Run the agent
    config = {"configurable": {"thread_id": "1"}}
    sf_response = agent.invoke(
        {"messages": [{"role": "user", "content": "what is the weather in sf"}]},
        config,
    )
    ny_response = agent.invoke(
        {"messages": [{"role": "user", "content": "what about new york?"}]},
        config,
    )
    for message in ny_response["messages"]:
        print(f"{message.type}: {message.content or message.tool_calls}")
