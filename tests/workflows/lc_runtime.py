"""A tool that takes a ``ToolRuntime`` (tests/test_tool_runtime_queue.py): ``note`` reads the run's context
(``Ctx``) and the store (the workers' Redis store on the queue), writes a note under the call's id, and
streams a custom chunk. ``lc-runtime``: ``create_react_agent`` whose model calls ``note(text="buy tea")``,
then answers ``ok`` (one ``tools`` task per call); ``lc-runtime-node``: a ``ToolNode`` given the messages
(the calls of their last AI message run in an inner graph)."""

from __future__ import annotations

from dataclasses import dataclass

from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from graphcore import END, START, MessagesState, StateGraph
from graphcore.prebuilt import ToolNode, ToolRuntime, create_react_agent
from tests.workflows.lc_agent import ScriptedModel


@dataclass
class Ctx:
    user: str


@tool
def note(text: str, runtime: ToolRuntime[Ctx, dict]) -> str:
    """Note a text for the user."""
    user = runtime.context.user
    home = runtime.store.get(("users", user), "home").value["city"]
    runtime.store.put(("notes", user), runtime.tool_call_id, {"text": text})
    runtime.stream_writer({"noted": text, "call": runtime.tool_call_id})
    return f"{user} of {home}: {text} ({runtime.tool_call_id})"


CALLS = [{"name": "note", "args": {"text": "buy tea"}, "id": "n1"}]

lc_runtime = create_react_agent(
    ScriptedModel(responses=[AIMessage("", tool_calls=CALLS), AIMessage("ok")]),
    [note],
    context_schema=Ctx,
    name="lc-runtime",
)

node_builder = StateGraph(MessagesState, context_schema=Ctx)
node_builder.add_node("tools", ToolNode([note]))
node_builder.add_edge(START, "tools")
node_builder.add_edge("tools", END)
lc_runtime_node = node_builder.compile(name="lc-runtime-node")
