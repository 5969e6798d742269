"""A workflow whose state holds langchain-core's messages, imported from langchain_core itself: ``lc_chat``
answers the last human message with an AI message carrying a tool call, its usage and a streamed chunk's
type, as a LangChain chat model returns them."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk

from graphcore import START, MessagesState, StateGraph


def answer(state: MessagesState) -> dict[str, Any]:
    asked = state["messages"][-1]
    return {
        "messages": [
            AIMessage(
                "",
                id="ai-1",
                tool_calls=[{"name": "lookup", "args": {"q": asked.content}, "id": "call-1"}],
                usage_metadata={"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
                response_metadata={"model_name": "fake"},
            ),
            AIMessageChunk(f"{type(asked).__module__}:{type(asked).__name__}", id="ai-2"),
        ]
    }


_b = StateGraph(MessagesState)
_b.add_node("answer", answer)
_b.add_edge(START, "answer")
lc_chat = _b.compile(name="lc_chat")
