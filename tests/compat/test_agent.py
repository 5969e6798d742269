"""``tools_condition`` and ``ToolNode``: each case runs with ``langgraph.prebuilt``'s and with
``graphcore.prebuilt``'s. Tool messages are compared by ``(type, content, tool_call_id)`` (and ``status``
where it matters), never by their random ids.

Tools are plain functions with docstrings (langchain-core makes a tool of a function only with one).
"""

import asyncio
from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from tests.compat.conftest import Imports


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def shout(text: str, times: int = 1) -> str:
    """Shout the text."""
    return text.upper() * times


def boom(x: str) -> str:
    """Fail."""
    raise RuntimeError(f"bad {x}")


def picky(x: str) -> str:
    """Fail with a ValueError on 'v', a RuntimeError otherwise."""
    raise (ValueError if x == "v" else RuntimeError)(x)


def as_dict(x: str) -> dict[str, Any]:
    """Return a dict."""
    return {"x": x, "n": [1, 2]}


def as_list(x: str) -> list[str]:
    """Return a list of strings."""
    return [x, x]


def nothing(x: str) -> None:
    """Return None."""
    return None


def call(name: str, args: dict[str, Any], cid: str) -> dict[str, Any]:
    return {"name": name, "args": args, "id": cid}


def results(messages: list[Any]) -> list[tuple[str, Any, str]]:
    return [(m.type, m.content, m.tool_call_id) for m in messages if m.type == "tool"]


def run_tools(lg: Imports, tools: list[Any], calls: list[dict[str, Any]], **options: Any) -> list[Any]:
    """The messages after a one-node graph ran ``ToolNode(tools, **options)`` on an AI message with
    ``calls``."""
    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("tools", lg.ToolNode(tools, **options))
    builder.add_edge(lg.START, "tools")
    out = builder.compile().invoke({"messages": [lg.AIMessage("", tool_calls=calls)]})
    return list(out["messages"])


# -- tools_condition ----------------------------------------------------------------------------------------


def test_tools_condition_routes_to_tools_when_the_last_message_calls_tools(lg: Imports) -> None:
    """LangGraph: ``tools_condition`` returns ``"tools"`` when the last message is an AI message with tool
    calls, for a dict state and for a bare list of messages."""
    ai = lg.AIMessage("", tool_calls=[call("add", {"a": 1, "b": 2}, "c1")])
    assert lg.tools_condition({"messages": [lg.HumanMessage("q"), ai]}) == "tools"
    assert lg.tools_condition([ai]) == "tools"


@pytest.mark.parametrize("last", ["answer", "human", "tool"])
def test_tools_condition_ends_otherwise(lg: Imports, last: str) -> None:
    """LangGraph: ``tools_condition`` returns ``END`` (``"__end__"``) when the last message has no tool
    calls: an AI answer, a human message or a tool result."""
    message = {
        "answer": lg.AIMessage("done"),
        "human": lg.HumanMessage("q"),
        "tool": lg.ToolMessage("3", tool_call_id="c1"),
    }[last]
    assert lg.tools_condition({"messages": [message]}) == lg.END == "__end__"


def test_tools_condition_reads_a_model_state_and_another_key(lg: Imports) -> None:
    """LangGraph: ``tools_condition`` reads a pydantic state's attribute, and ``messages_key`` names
    another key."""

    class State(BaseModel):
        messages: list[Any]

    ai = lg.AIMessage("", tool_calls=[call("add", {}, "c1")])
    assert lg.tools_condition(State(messages=[ai])) == "tools"
    assert lg.tools_condition({"chat": [ai]}, messages_key="chat") == "tools"


def test_tools_condition_without_messages_is_a_value_error(lg: Imports) -> None:
    """LangGraph: a state with no messages makes ``tools_condition`` raise ValueError."""
    with pytest.raises(ValueError):
        lg.tools_condition({"messages": []})


# -- ToolNode: results -------------------------------------------------------------------------------------


def test_tool_node_answers_each_call_in_order(lg: Imports) -> None:
    """LangGraph: ``ToolNode`` runs every tool call of the last AI message and appends one ToolMessage per
    call, in call order, with the call's id and the tool's name."""
    messages = run_tools(
        lg,
        [add, shout],
        [call("shout", {"text": "hi", "times": 2}, "c1"), call("add", {"a": 2, "b": 3}, "c2")],
    )
    assert results(messages) == [("tool", "HIHI", "c1"), ("tool", "5", "c2")]
    assert [m.name for m in messages[1:]] == ["shout", "add"]
    assert [m.status for m in messages[1:]] == ["success", "success"]


def test_tool_node_runs_two_calls_of_one_tool(lg: Imports) -> None:
    """LangGraph: two calls of the same tool in one AI message each get their own result."""
    messages = run_tools(lg, [add], [call("add", {"a": 1, "b": 1}, "x"), call("add", {"a": 2, "b": 2}, "y")])
    assert results(messages) == [("tool", "2", "x"), ("tool", "4", "y")]


@pytest.mark.parametrize(
    ("tool", "content"),
    [(as_dict, '{"x": "q", "n": [1, 2]}'), (as_list, '["q", "q"]'), (nothing, "null"), (shout, "Q")],
)
def test_tool_output_becomes_text_content(lg: Imports, tool: Any, content: str) -> None:
    """LangGraph: a tool's return value becomes the ToolMessage's content: a string as is, anything else as
    JSON text."""
    arg = "text" if tool is shout else "x"
    assert results(run_tools(lg, [tool], [call(tool.__name__, {arg: "q"}, "c1")])) == [
        ("tool", content, "c1")
    ]


def test_tool_arguments_are_coerced_and_defaults_apply(lg: Imports) -> None:
    """LangGraph: the call's arguments are validated against the tool's signature leniently (``"2"`` is the
    int 2) and missing optional arguments take their defaults."""
    messages = run_tools(
        lg, [add, shout], [call("add", {"a": "2", "b": 3}, "c1"), call("shout", {"text": "a"}, "c2")]
    )
    assert results(messages) == [("tool", "5", "c1"), ("tool", "A", "c2")]


def test_a_tool_returning_a_tool_message_keeps_it(lg: Imports) -> None:
    """LangGraph: a tool that returns a ToolMessage itself has that message appended."""

    def custom(x: str) -> Any:
        """Return a ToolMessage."""
        return lg.ToolMessage(f"made {x}", tool_call_id="c1", name="custom", artifact={"raw": x})

    [_, message] = run_tools(lg, [custom], [call("custom", {"x": "q"}, "c1")])
    assert (message.content, message.tool_call_id, message.artifact) == ("made q", "c1", {"raw": "q"})


def test_tool_node_on_another_messages_key_and_a_model_state(lg: Imports) -> None:
    """LangGraph: ``messages_key`` names the state key ToolNode reads and writes; a pydantic state works."""

    class State(BaseModel):
        chat: Annotated[list[lg.AnyMessage], lg.add_messages]

    builder = lg.StateGraph(State)
    builder.add_node("tools", lg.ToolNode([add], messages_key="chat"))
    builder.add_edge(lg.START, "tools")
    out = builder.compile().invoke(
        {"chat": [lg.AIMessage("", tool_calls=[call("add", {"a": 1, "b": 2}, "c1")])]}
    )
    assert results(out["chat"]) == [("tool", "3", "c1")]


def test_a_tool_node_is_named_tools(lg: Imports) -> None:
    """LangGraph: ``add_node(ToolNode(tools))`` names the node ``"tools"`` (the ToolNode's default name)."""
    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node(lg.ToolNode([add]))
    builder.add_edge(lg.START, "tools")
    out = builder.compile().invoke(
        {"messages": [lg.AIMessage("", tool_calls=[call("add", {"a": 1, "b": 1}, "c")])]}
    )
    assert results(out["messages"]) == [("tool", "2", "c")]


def test_tool_node_without_an_ai_message_is_a_value_error(lg: Imports) -> None:
    """LangGraph: ToolNode given messages without any AI message raises ValueError."""
    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("tools", lg.ToolNode([add]))
    builder.add_edge(lg.START, "tools")
    with pytest.raises(Exception) as failed:
        builder.compile().invoke({"messages": [lg.HumanMessage("q")]})
    error = failed.value if lg.is_langgraph else failed.value.error  # graphq: NodeError(.error)
    assert isinstance(error, ValueError)
    assert "AIMessage" in str(error)


def test_an_async_tool_runs_under_ainvoke(lg: Imports) -> None:
    """LangGraph: an ``async def`` tool is awaited when the graph runs with ``ainvoke``, beside sync tools."""

    async def slow(x: str) -> str:
        """Wait, then double."""
        await asyncio.sleep(0.01)
        return x * 2

    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("tools", lg.ToolNode([slow, shout]))
    builder.add_edge(lg.START, "tools")
    ai = lg.AIMessage("", tool_calls=[call("slow", {"x": "a"}, "c1"), call("shout", {"text": "b"}, "c2")])
    out = asyncio.run(builder.compile().ainvoke({"messages": [ai]}))
    assert results(out["messages"]) == [("tool", "aa", "c1"), ("tool", "B", "c2")]


# -- ToolNode: errors --------------------------------------------------------------------------------------


def test_an_unknown_tool_name_becomes_an_error_message(lg: Imports) -> None:
    """LangGraph: a call of a tool the node does not have gets a ToolMessage with ``status="error"`` naming
    the tools it has."""
    [_, message] = run_tools(lg, [add, shout], [call("nope", {}, "c1")])
    assert (message.content, message.status, message.name) == (
        "Error: nope is not a valid tool, try one of [add, shout].",
        "error",
        "nope",
    )


def test_invalid_arguments_become_an_error_message(lg: Imports) -> None:
    """LangGraph 1.x: by default, arguments that do not validate against the tool's signature become a
    ToolMessage with ``status="error"`` saying which argument is wrong."""
    [_, message] = run_tools(lg, [add], [call("add", {"a": 1}, "c1")])
    assert message.status == "error"
    assert message.content == (
        "Error invoking tool 'add' with kwargs {'a': 1} with error:\n b: Field required\n"
        " Please fix the error and try again."
    )


def test_an_exception_in_a_tool_fails_the_run_by_default(lg: Imports) -> None:
    """LangGraph 1.x: by default an exception the tool raises is not caught: the run fails with it."""
    with pytest.raises(Exception) as failed:
        run_tools(lg, [boom], [call("boom", {"x": "q"}, "c1")])
    error = failed.value if lg.is_langgraph else failed.value.error  # graphq: NodeError(.error)
    assert (type(error), str(error)) == (RuntimeError, "bad q")


@pytest.mark.parametrize(
    ("handling", "content"),
    [(True, "Error: RuntimeError('bad q')\n Please fix your mistakes."), ("try again", "try again")],
)
def test_handle_tool_errors_turns_exceptions_into_error_messages(
    lg: Imports, handling: Any, content: str
) -> None:
    """LangGraph: ``handle_tool_errors=True`` makes any exception an error ToolMessage (``"Error: <repr>\\n
    Please fix your mistakes."``); a string is used as the content."""
    [_, message] = run_tools(lg, [boom], [call("boom", {"x": "q"}, "c1")], handle_tool_errors=handling)
    assert (message.content, message.status, message.tool_call_id) == (content, "error", "c1")


def test_an_error_handler_handles_the_types_it_declares(lg: Imports) -> None:
    """LangGraph: a handler function gives the content for the exception types its parameter names; other
    exceptions still fail the run."""

    def handler(e: ValueError) -> str:
        return f"handled {e}"

    [_, message] = run_tools(lg, [picky], [call("picky", {"x": "v"}, "c1")], handle_tool_errors=handler)
    assert (message.content, message.status) == ("handled v", "error")
    with pytest.raises(Exception) as failed:
        run_tools(lg, [picky], [call("picky", {"x": "r"}, "c1")], handle_tool_errors=handler)
    error = failed.value if lg.is_langgraph else failed.value.error
    assert type(error) is RuntimeError


def test_handle_tool_errors_by_exception_type(lg: Imports) -> None:
    """LangGraph: an exception type (or tuple) as ``handle_tool_errors`` handles those types only."""
    [_, message] = run_tools(lg, [picky], [call("picky", {"x": "v"}, "c1")], handle_tool_errors=(ValueError,))
    assert (message.content, message.status) == (
        "Error: ValueError('v')\n Please fix your mistakes.",
        "error",
    )


# -- the agent loop -----------------------------------------------------------------------------------------


def fake_model(lg: Imports) -> Any:
    """A model node: asks for ``add`` on the first human message, then answers with the tool's result."""

    def model(state: dict[str, Any]) -> dict[str, Any]:
        last = state["messages"][-1]
        if last.type == "tool":
            return {"messages": [lg.AIMessage(f"the sum is {last.content}")]}
        a, b = (int(n) for n in last.content.split("+"))
        return {"messages": [lg.AIMessage("", tool_calls=[call("add", {"a": a, "b": b}, "call-1")])]}

    return model


def test_a_react_loop_with_tools_condition_and_tool_node(lg: Imports) -> None:
    """LangGraph (how-to "ReAct agent from scratch"): model → ``tools_condition`` → ``ToolNode`` → model
    loops until the model answers without tool calls."""
    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("model", fake_model(lg))
    builder.add_node("tools", lg.ToolNode([add]))
    builder.add_edge(lg.START, "model")
    builder.add_conditional_edges("model", lg.tools_condition)
    builder.add_edge("tools", "model")
    out = builder.compile().invoke({"messages": "2+3"})
    assert [(m.type, m.content) for m in out["messages"]] == [
        ("human", "2+3"),
        ("ai", ""),
        ("tool", "5"),
        ("ai", "the sum is 5"),
    ]
    assert out["messages"][2].tool_call_id == "call-1"


def test_the_loops_updates_stream_names_each_node(lg: Imports) -> None:
    """LangGraph: streamed ``updates`` of the loop are ``{node: {"messages": [...]}}``: model, tools, model,
    and the tools update holds only the new ToolMessages."""
    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("model", fake_model(lg))
    builder.add_node("tools", lg.ToolNode([add]))
    builder.add_edge(lg.START, "model")
    builder.add_conditional_edges("model", lg.tools_condition, ["tools", lg.END])
    builder.add_edge("tools", "model")
    events = list(builder.compile().stream({"messages": "1+1"}, stream_mode="updates"))
    assert [next(iter(e)) for e in events] == ["model", "tools", "model"]
    assert results(events[1]["tools"]["messages"]) == [("tool", "2", "call-1")]


def test_an_interrupt_inside_a_tool_pauses_and_resumes(lg: Imports) -> None:
    """LangGraph: a tool may call ``interrupt()``; the run pauses with its value, and
    ``Command(resume=...)`` gives the tool its answer."""

    def approve(action: str) -> str:
        """Ask a human."""
        answer = lg.interrupt({"approve": action})
        return f"{action}: {answer}"

    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("tools", lg.ToolNode([approve]))
    builder.add_edge(lg.START, "tools")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    paused = graph.invoke(
        {"messages": [lg.AIMessage("", tool_calls=[call("approve", {"action": "pay"}, "c1")])]}, config
    )
    assert [i.value for i in paused["__interrupt__"]] == [{"approve": "pay"}]
    out = graph.invoke(lg.Command(resume="yes"), config)
    assert results(out["messages"]) == [("tool", "pay: yes", "c1")]
