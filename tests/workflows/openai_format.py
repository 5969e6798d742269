"""A workflow for ``add_messages(format="langchain-openai")`` on the queue
(tests/compat/test_messages_format.py): ``reply`` writes Anthropic-style content blocks, the channel keeps
them in OpenAI's format."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from graphcore import START, StateGraph, add_messages
from graphcore.messages import AIMessage, AnyMessage, HumanMessage


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages(format="langchain-openai")]


def reply(state: Any) -> dict[str, Any]:
    """An image block and a tool_use block (Anthropic's shapes), as LangGraph's format test writes."""
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "1234"}}
    return {
        "messages": [
            HumanMessage(
                content=[{"type": "text", "text": "look:", "cache_control": {"type": "ephemeral"}}, image]
            ),
            AIMessage(content=[{"type": "tool_use", "name": "foo", "input": {"bar": "baz"}, "id": "1"}]),
            HumanMessage(
                content=[{"type": "tool_result", "tool_use_id": "1", "is_error": False, "content": [image]}]
            ),
        ]
    }


_g = StateGraph(Chat)
_g.add_node("reply", reply)
_g.add_edge(START, "reply")
openai_format = _g.compile(name="openai-format")
