"""``create_react_agent`` whose tool takes a ``ToolRuntime`` (tests/test_tool_runtime_queue.py): the
``lc-runtime`` workflow. The model calls ``note(text="buy tea")``, then answers ``ok``; ``note`` reads the
run's context (``Ctx``) and the store (the workers' Redis store on the queue), writes a note under the
call's id, and streams a custom chunk."""

from __future__ import annotations

from dataclasses import dataclass

from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from graphcore.prebuilt import ToolRuntime, create_react_agent
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
