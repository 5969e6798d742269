"""``react-agent``: a tool-calling (ReAct) agent, ported from LangGraph's how-to guide "How to create a ReAct
agent from scratch" (langgraph docs, how-tos/react-agent-from-scratch), with the prebuilt ``ToolNode`` and
``tools_condition`` of LangGraph's tool-calling guides, and a fake chat model so it needs no network.

Shape, as the guide's::

    START -> agent --(tool calls; budget and turns left)--> tools -> agent
                  \\--(an answer, the budget spent, or too many turns)--> END

The port changes the guide's imports (``langgraph.graph`` → ``graphcore``, ``langgraph.prebuilt`` →
``graphcore.prebuilt``, ``langchain_core.messages`` → ``graphcore.messages``) and keeps its structure: a
state with a ``messages`` list (here :class:`~graphcore.prebuilt.AgentLoopState`, which also keeps the
loop's accounts), a ``get_weather`` tool, an ``agent`` node that calls the model with a system prompt, the
``tools`` node and a conditional edge. graphq adds the loop limits of DESIGN G8: the router ends the run
when the token budget (input ``tokens_left``) is spent or after more than :data:`MAX_TURNS` model calls,
otherwise it is ``tools_condition``.

The fake model (:class:`FakeWeatherModel`) is deterministic: on a user message it calls ``get_weather``
once per known city the message names (in the order named: several calls run as parallel tasks); after
the tool results it answers with them; it reports ``usage_metadata`` (input tokens: the words of the
messages it was given; output tokens: the words of its reply plus 8 per tool call).

Walkthrough (no Redis needed: ``graphq run`` starts an embedded one)::

    graphq run react-agent --input \\
      '{"messages": [{"role": "user", "content": "weather in sf and nyc?"}], "tokens_left": 400}'
"""

from __future__ import annotations

from typing import Any

from graphcore import END, START, StateGraph
from graphcore.messages import AIMessage, BaseMessage, SystemMessage, ToolCall, UsageMetadata
from graphcore.prebuilt import (
    AgentLoopState,
    ToolNode,
    budget_exhausted,
    first_of,
    iteration_exceeds,
    model_turn,
    tools_condition,
)

__all__ = [
    "FORECASTS",
    "MAX_TURNS",
    "SYSTEM_PROMPT",
    "FakeWeatherModel",
    "build_graph",
    "get_weather",
    "graph",
]

MAX_TURNS = 5
"""More model calls than this end the loop (``iteration_exceeds(MAX_TURNS)``)."""

SYSTEM_PROMPT = "You are a helpful assistant. Use get_weather for any question about the weather."

FORECASTS = {"sf": "foggy, 14 °C", "nyc": "sunny, 22 °C", "paris": "light rain, 11 °C"}
"""The weather ``get_weather`` knows, by city."""


def get_weather(city: str) -> str:
    """Get the current weather in a city (one of ``FORECASTS``)."""
    forecast = FORECASTS.get(city.lower())
    return f"{city}: {forecast}" if forecast else f"{city}: no forecast"


def _words(message: BaseMessage) -> int:
    return len(message.text.split())


class FakeWeatherModel:
    """A deterministic stand-in for a chat model bound to ``get_weather`` (see the module docstring)."""

    def invoke(self, messages: list[BaseMessage]) -> AIMessage:
        """The reply to ``messages`` (a system prompt first, then the conversation)."""
        last = messages[-1]
        if last.type == "tool":
            results = [m.text for m in _trailing_tool_results(messages)]
            return self._reply("The weather: " + "; ".join(results) + ".", [], messages)
        asked = [city for city in _words_of(last.text) if city in FORECASTS]
        if not asked:
            return self._reply(f"I can tell the weather in {', '.join(FORECASTS)}.", [], messages)
        turn = sum(1 for m in messages if m.type == "ai")
        calls: list[ToolCall] = [
            {"name": "get_weather", "args": {"city": city}, "id": f"call-{turn}-{i}", "type": "tool_call"}
            for i, city in enumerate(dict.fromkeys(asked))
        ]
        return self._reply("", calls, messages)

    @staticmethod
    def _reply(content: str, calls: list[ToolCall], messages: list[BaseMessage]) -> AIMessage:
        input_tokens = sum(_words(m) for m in messages)
        output_tokens = len(content.split()) + 8 * len(calls)
        usage: UsageMetadata = {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
        }
        return AIMessage(content, tool_calls=calls, usage_metadata=usage)


def _words_of(text: str) -> list[str]:
    return [w.strip("?!.,;:").lower() for w in text.split()]


def _trailing_tool_results(messages: list[BaseMessage]) -> list[BaseMessage]:
    results: list[BaseMessage] = []
    for message in reversed(messages):
        if message.type != "tool":
            break
        results.insert(0, message)
    return results


MODEL = FakeWeatherModel()


def agent(state: AgentLoopState) -> dict[str, Any]:
    """The guide's ``call_model``: the model's reply to the system prompt and the conversation."""
    reply = MODEL.invoke([SystemMessage(SYSTEM_PROMPT), *state["messages"]])
    return model_turn(state, reply)


def build_graph() -> StateGraph:
    """The agent loop, not yet compiled."""
    builder = StateGraph(AgentLoopState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([get_weather]))
    builder.add_edge(START, "agent")
    route = first_of(budget_exhausted, iteration_exceeds(MAX_TURNS), otherwise=tools_condition)
    builder.add_conditional_edges("agent", route, ["tools", END])
    builder.add_edge("tools", "agent")
    return builder


graph = build_graph().compile(name="react-agent")
