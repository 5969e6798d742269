"""A LangGraph-style agent built from LangChain pieces: a LangChain
chat model (langchain-core's fake, with ``bind_tools``) called in a node, LangChain tools (``@tool``, one
with an artifact, a ``StructuredTool``) run by graphq's ``ToolNode``, and a LangChain ``Runnable`` chain
(prompt | model | parser) as the node that writes the summary. ``lc_agent`` runs in process and on the
workers; the model's script is picked by how many AI messages the state holds, so every process that runs
a step answers the same. ``lc_command`` runs a tool that returns a ``Command`` (its update and goto);
``lc_react`` is graphq's ``create_react_agent`` of a scripted fake chat model and the same tools;
``lc_tokens`` a chat model streaming its reply, then a node writing messages (``stream_mode="messages"``);
``lc_react_hooks`` the agent with a pre- and a post-model hook and a structured response; ``lc_pushed`` a node
that pushes two messages (``push_message``) and returns a third; ``lc_injected`` the agent with tools given
the state, one key of it (``InjectedState``) and the store (``InjectedStore``: the workers' Redis store on
the queue)."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnableLambda
from langchain_core.tools import InjectedToolCallId, StructuredTool, tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel

from graphcore import END, START, Command, MessagesState, StateGraph, push_message
from graphcore.prebuilt import InjectedState, InjectedStore, ToolNode, create_react_agent, tools_condition


class ToolCallingFakeModel(FakeMessagesListChatModel):
    """langchain-core's fake chat model with ``bind_tools`` as real chat models have it: the tools' schemas
    are bound as the ``tools`` keyword of every call."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, Any]:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(response_format="content_and_artifact")
def lookup(city: str) -> tuple[str, dict[str, Any]]:
    """Look a city's weather up."""
    return f"sunny in {city}", {"city": city, "celsius": 21}


def _shout(text: str) -> str:
    return text.upper()


shout = StructuredTool.from_function(_shout, name="shout", description="Upper-case a text.")

TOOLS = [add, lookup, shout]
USAGE = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
SCRIPT = [
    AIMessage(
        "",
        tool_calls=[
            {"name": "add", "args": {"a": 2, "b": "3"}, "id": "call-add"},
            {"name": "lookup", "args": {"city": "sf"}, "id": "call-lookup"},
            {"name": "shout", "args": {"text": "hi"}, "id": "call-shout"},
        ],
        usage_metadata=USAGE,
    ),
    AIMessage("2 + 3 = 5; sunny in sf", usage_metadata=USAGE),
]


def agent(state: MessagesState) -> dict[str, Any]:
    answered = sum(1 for m in state["messages"] if m.type == "ai")
    model = ToolCallingFakeModel(responses=SCRIPT[answered:]).bind_tools(TOOLS)
    return {"messages": [model.invoke(state["messages"])]}


summary_chain = (
    ChatPromptTemplate.from_messages([("placeholder", "{messages}"), ("human", "Summarize.")])
    | ToolCallingFakeModel(responses=[AIMessage("summary: 5, sunny", id="summary")])
    | RunnableLambda(lambda message: {"messages": [message]}, name="summarize")
)


def build() -> StateGraph:
    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(TOOLS))
    builder.add_node("summarize", summary_chain)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: "summarize"})
    builder.add_edge("tools", "agent")
    builder.add_edge("summarize", END)
    return builder


lc_agent = build().compile(name="lc_agent")


@tool
def remember(fact: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command[Literal["recall"]]:
    """Remember a fact: a Command that answers the call, adds the fact and goes to ``recall``."""
    answer = ToolMessage(f"noted {fact}", tool_call_id=tool_call_id)
    return Command(update={"messages": [answer], "facts": [fact]}, goto="recall")


class Facts(MessagesState):
    facts: Annotated[list[str], operator.add]


def recall(state: Facts) -> dict[str, Any]:
    return {"facts": [f"{len(state['messages'])} messages"]}


_c = StateGraph(Facts)
_c.add_node("tools", ToolNode([remember, lookup]), destinations=("recall",))
_c.add_node("recall", recall)
_c.add_edge(START, "tools")
lc_command = _c.compile(name="lc_command")


class ScriptedModel(ToolCallingFakeModel):
    """A fake chat model whose reply is ``responses[n]``, n the AI messages it was given: every process
    running a step of the same thread answers the same."""

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        answered = sum(1 for m in messages if m.type == "ai")
        return ChatResult(generations=[ChatGeneration(message=self.responses[answered])])


lc_react = create_react_agent(
    ScriptedModel(responses=SCRIPT), TOOLS, prompt="You add and look things up.", name="lc_react"
)


def chat(state: MessagesState) -> dict[str, Any]:
    """Streams its reply token by token (``invoke`` streams under a ``messages`` handler)."""
    model = GenericFakeChatModel(messages=iter([AIMessage("hello big world", id="m1")]))
    return {"messages": [model.invoke(state["messages"])]}


def plain(state: MessagesState) -> dict[str, Any]:
    """Writes a new message and one already in the state (shown once, by id)."""
    return {"messages": [AIMessage("plain", id="w1"), state["messages"][0]]}


def build_tokens(graph: type[StateGraph] = StateGraph, start: Any = START) -> StateGraph:
    """``chat`` then ``plain``; ``graph`` and ``start`` from either side of the import map."""
    builder = graph(MessagesState)
    builder.add_node("chat", chat)
    builder.add_node("plain", plain)
    builder.add_edge(start, "chat")
    builder.add_edge("chat", "plain")
    return builder


lc_tokens = build_tokens().compile(name="lc_tokens")


def build_sub_tokens(graph: type[StateGraph] = StateGraph, start: Any = START) -> StateGraph:
    """One node ``sub``: :func:`build_tokens`'s graph, compiled, as a subgraph."""
    builder = graph(MessagesState)
    builder.add_node("sub", build_tokens(graph, start).compile())
    builder.add_edge(start, "sub")
    return builder


lc_sub_tokens = build_sub_tokens().compile(name="lc_sub_tokens")


class Answer(BaseModel):
    """``lc_react_hooks``'s structured response."""

    text: str
    tools: int


class StructuredModel(ScriptedModel):
    """The scripted model with ``with_structured_output``: an :class:`Answer` of the last reply and the
    number of tool messages, the same in every process."""

    def with_structured_output(self, schema: Any, **kwargs: Any) -> Runnable[Any, Any]:
        def answer(messages: list[BaseMessage]) -> Any:
            return schema(text=messages[-1].content, tools=sum(1 for m in messages if m.type == "tool"))

        return RunnableLambda(answer)


def last_two(state: MessagesState) -> dict[str, Any]:
    """A pre-model hook: the model sees the messages of this turn only (from the last human message)."""
    messages = state["messages"]
    start = max(i for i, m in enumerate(messages) if m.type == "human")
    return {"llm_input_messages": messages[start:]}


lc_react_hooks = create_react_agent(
    StructuredModel(responses=SCRIPT),
    TOOLS,
    pre_model_hook=last_two,
    post_model_hook=lambda state: {},
    response_format=("Answer in the form.", Answer),
    name="lc_react_hooks",
)


def pushing(state: MessagesState) -> dict[str, Any]:
    """Pushes two messages, then returns a third."""
    push_message(AIMessage("First", id="p1"))
    push_message(AIMessage("Second", id="p2"))
    return {"messages": [AIMessage("Third", id="p3")]}


_p = StateGraph(MessagesState)
_p.add_node("pushing", pushing)
_p.add_edge(START, "pushing")
lc_pushed = _p.compile(name="lc_pushed")


@tool
def count(state: Annotated[dict[str, Any], InjectedState]) -> str:
    """Count the messages."""
    return f"{len(state['messages'])} messages, keys {sorted(state)}"


@tool
def first(prefix: str, messages: Annotated[list[Any], InjectedState("messages")]) -> str:
    """The first message's text."""
    return f"{prefix}{messages[0].content}"


@tool
def recall(user: str, store: Annotated[Any, InjectedStore()]) -> str:
    """A user's favourite city."""
    item = store.get(("users", user), "city")
    return str(item.value if item else None)


INJECTED_CALLS = [
    {"name": "count", "args": {}, "id": "c1"},
    {"name": "first", "args": {"prefix": "> ", "messages": ["forged"]}, "id": "c2"},
    {"name": "recall", "args": {"user": "ann"}, "id": "c3"},
]
lc_injected = create_react_agent(
    ScriptedModel(responses=[AIMessage("", tool_calls=INJECTED_CALLS), AIMessage("ok")]),
    [count, first, recall],
    name="lc_injected",
)
