"""Messages and ``add_messages``: each case runs with langchain-core's messages and LangGraph's
``add_messages`` / ``MessagesState``, then with graphq's (``graphcore.messages``, ``graphcore``).

Ids are random (uuid4) on both sides, so messages are compared by ``(type, content)`` or with the ids they
were given. No ``from __future__ import annotations``: the states below are built inside the cases from
``lg.`` names, and their annotations must be evaluated where they are written.
"""

import re
from collections.abc import Sequence
from typing import Annotated, Any, TypedDict

import pytest
from pydantic import BaseModel

from tests.compat.conftest import Imports

UUID4 = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"


def shape(messages: list[Any]) -> list[tuple[str, Any]]:
    return [(m.type, m.content) for m in messages]


def with_ids(messages: list[Any]) -> list[tuple[str, Any, str]]:
    return [(m.type, m.content, m.id) for m in messages]


# -- coercion -----------------------------------------------------------------------------------------------


def test_a_string_becomes_a_human_message(lg: Imports) -> None:
    """LangGraph: ``add_messages`` reads a bare string as a ``HumanMessage`` with that content."""
    [message] = lg.add_messages([], "hello")
    assert isinstance(message, lg.HumanMessage)
    assert (message.type, message.content) == ("human", "hello")


@pytest.mark.parametrize(
    ("role", "kind"),
    [("user", "human"), ("human", "human"), ("assistant", "ai"), ("ai", "ai"), ("system", "system")],
)
def test_a_role_content_pair_becomes_a_message_of_that_role(lg: Imports, role: str, kind: str) -> None:
    """LangGraph: a ``(role, content)`` tuple becomes a message of the role's type (user/human → human,
    assistant/ai → ai, system → system)."""
    assert shape(lg.add_messages([], [(role, "text")])) == [(kind, "text")]


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ({"role": "user", "content": "a"}, "human"),
        ({"role": "assistant", "content": "a"}, "ai"),
        ({"role": "system", "content": "a"}, "system"),
        ({"type": "human", "content": "a"}, "human"),
        ({"type": "ai", "content": "a"}, "ai"),
    ],
)
def test_a_role_or_type_dict_becomes_a_message(lg: Imports, message: dict[str, str], kind: str) -> None:
    """LangGraph: a dict with ``role`` (OpenAI style) or ``type`` (LangChain style) and ``content`` becomes a
    message of that type."""
    assert shape(lg.add_messages([], [message])) == [(kind, "a")]


def test_a_dict_keeps_its_id_name_and_tool_call_id(lg: Imports) -> None:
    """LangGraph: a message dict's ``id``, ``name`` and (for a tool message) ``tool_call_id`` are kept."""
    human, tool = lg.add_messages(
        [],
        [
            {"role": "user", "content": "hi", "id": "h1", "name": "ann"},
            {"role": "tool", "content": "42", "tool_call_id": "call-1", "id": "t1"},
        ],
    )
    assert (human.type, human.id, human.name) == ("human", "h1", "ann")
    assert isinstance(tool, lg.ToolMessage)
    assert (tool.content, tool.tool_call_id, tool.id, tool.status) == ("42", "call-1", "t1", "success")


def test_an_ai_dict_with_tool_calls_becomes_an_ai_message_with_typed_calls(lg: Imports) -> None:
    """LangGraph: an assistant dict's ``tool_calls`` become the AI message's tool calls, each with
    ``"type": "tool_call"``."""
    call = {"name": "search", "args": {"q": "x"}, "id": "c1"}
    [ai] = lg.add_messages([], [{"role": "assistant", "content": "", "tool_calls": [call]}])
    assert ai.tool_calls == [{"name": "search", "args": {"q": "x"}, "id": "c1", "type": "tool_call"}]


def test_a_dict_without_role_or_content_is_refused_as_a_value_error(lg: Imports) -> None:
    """LangGraph: a message dict without ``role``/``type`` and ``content`` cannot be coerced: ValueError."""
    with pytest.raises(ValueError, match="'role'"):
        lg.add_messages([], [{"id": "1", "text": "a"}])


# -- ids --------------------------------------------------------------------------------------------------


def test_messages_without_an_id_get_a_uuid4_string(lg: Imports) -> None:
    """LangGraph: ``add_messages`` gives every message without an id ``str(uuid.uuid4())``, on both sides;
    a given id is kept."""
    left, right, kept = lg.add_messages(
        [lg.HumanMessage("a")], [lg.AIMessage("b"), lg.AIMessage("c", id="7")]
    )
    assert re.fullmatch(UUID4, left.id) and re.fullmatch(UUID4, right.id)
    assert left.id != right.id
    assert kept.id == "7"


def test_a_single_message_is_accepted_on_either_side(lg: Imports) -> None:
    """LangGraph: ``left`` and ``right`` may each be one message instead of a list."""
    merged = lg.add_messages(lg.HumanMessage("a", id="1"), lg.AIMessage("b", id="2"))
    assert with_ids(merged) == [("human", "a", "1"), ("ai", "b", "2")]


def test_the_left_list_is_not_modified(lg: Imports) -> None:
    """LangGraph: ``add_messages`` returns a new list; the current list keeps its items."""
    left = [lg.HumanMessage("a", id="1")]
    merged = lg.add_messages(left, [lg.HumanMessage("A", id="1"), lg.AIMessage("b", id="2")])
    assert with_ids(left) == [("human", "a", "1")]
    assert with_ids(merged) == [("human", "A", "1"), ("ai", "b", "2")]


# -- replace and remove -----------------------------------------------------------------------------------


def test_a_message_with_a_known_id_replaces_it_in_place(lg: Imports) -> None:
    """LangGraph: a right-hand message whose id is already present replaces that message where it stands."""
    left = [lg.HumanMessage("a", id="1"), lg.AIMessage("b", id="2")]
    merged = lg.add_messages(left, [lg.HumanMessage("edited", id="1"), lg.AIMessage("c", id="3")])
    assert with_ids(merged) == [("human", "edited", "1"), ("ai", "b", "2"), ("ai", "c", "3")]


def test_remove_message_deletes_by_id(lg: Imports) -> None:
    """LangGraph: ``RemoveMessage(id=...)`` deletes the message with that id."""
    left = [lg.HumanMessage("a", id="1"), lg.AIMessage("b", id="2"), lg.HumanMessage("c", id="3")]
    merged = lg.add_messages(left, [lg.RemoveMessage(id="2")])
    assert with_ids(merged) == [("human", "a", "1"), ("human", "c", "3")]


def test_a_removal_followed_by_the_same_id_keeps_the_new_message(lg: Imports) -> None:
    """LangGraph: a ``RemoveMessage`` followed in the same update by a message with that id keeps the new
    message, in the removed one's place."""
    left = [lg.HumanMessage("a", id="1"), lg.HumanMessage("b", id="2")]
    merged = lg.add_messages(left, [lg.RemoveMessage(id="1"), lg.HumanMessage("c", id="1")])
    assert with_ids(merged) == [("human", "c", "1"), ("human", "b", "2")]


def test_a_message_added_and_removed_in_one_update_is_gone(lg: Imports) -> None:
    """LangGraph: a message appended earlier in the same update can be removed by a later RemoveMessage."""
    merged = lg.add_messages(
        [lg.HumanMessage("a", id="1")], [lg.AIMessage("b", id="2"), lg.RemoveMessage(id="2")]
    )
    assert with_ids(merged) == [("human", "a", "1")]


def test_remove_all_messages_clears_everything_before_it(lg: Imports) -> None:
    """LangGraph: ``RemoveMessage(id=REMOVE_ALL_MESSAGES)`` drops the current messages and the update's
    messages before it; the result is the messages after it."""
    left = [lg.HumanMessage("a", id="1"), lg.AIMessage("b", id="2")]
    update = [lg.HumanMessage("gone", id="9"), lg.RemoveMessage(id=lg.REMOVE_ALL_MESSAGES), "fresh"]
    assert shape(lg.add_messages(left, update)) == [("human", "fresh")]


def test_removing_an_unknown_id_is_a_value_error(lg: Imports) -> None:
    """LangGraph: deleting an id that is not in the list raises ValueError."""
    with pytest.raises(ValueError, match="'nope'"):
        lg.add_messages([lg.HumanMessage("a", id="1")], lg.RemoveMessage(id="nope"))


# -- the message classes -----------------------------------------------------------------------------------


def test_each_message_class_has_its_type_and_empty_defaults(lg: Imports) -> None:
    """langchain-core: ``.type`` is human/ai/system/tool/remove; ``name`` and ``id`` default to None,
    ``additional_kwargs`` and ``response_metadata`` to ``{}``; content may be positional."""
    made = [
        lg.HumanMessage("h"),
        lg.AIMessage("a"),
        lg.SystemMessage("s"),
        lg.ToolMessage("t", tool_call_id="c"),
        lg.RemoveMessage(id="r"),
    ]
    assert [m.type for m in made] == ["human", "ai", "system", "tool", "remove"]
    assert [m.content for m in made] == ["h", "a", "s", "t", ""]
    assert all(m.name is None and m.additional_kwargs == {} and m.response_metadata == {} for m in made)
    assert all(isinstance(m, lg.BaseMessage) for m in made)


def test_an_ai_message_keeps_tool_calls_and_usage(lg: Imports) -> None:
    """langchain-core: an ``AIMessage``'s tool calls get ``"type": "tool_call"``; ``usage_metadata`` holds
    the token counts as given."""
    usage = {"input_tokens": 10, "output_tokens": 4, "total_tokens": 14}
    ai = lg.AIMessage("", tool_calls=[{"name": "f", "args": {"x": 1}, "id": "c1"}], usage_metadata=usage)
    assert ai.tool_calls == [{"name": "f", "args": {"x": 1}, "id": "c1", "type": "tool_call"}]
    assert ai.usage_metadata == usage
    assert lg.AIMessage("plain").tool_calls == []


def test_messages_compare_by_class_and_fields(lg: Imports) -> None:
    """langchain-core: two messages of one class with equal fields are equal; another class is not, and a
    tool message's status defaults to ``"success"``."""
    assert lg.HumanMessage("a", id="1") == lg.HumanMessage(content="a", id="1")
    assert lg.HumanMessage("a", id="1") != lg.AIMessage("a", id="1")
    assert lg.ToolMessage("r", tool_call_id="c").status == "success"
    assert lg.HumanMessage([{"type": "text", "text": "x"}, "y"]).text == "xy"


# -- in a graph ----------------------------------------------------------------------------------------------


def test_messages_state_coerces_the_input_and_the_nodes_writes(lg: Imports) -> None:
    """LangGraph: a ``MessagesState`` graph reads its input and its nodes' writes through ``add_messages``:
    strings, pairs and dicts all become messages with ids."""
    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("bot", lambda s: {"messages": [("assistant", f"echo {s['messages'][-1].content}")]})
    builder.add_edge(lg.START, "bot")
    out = builder.compile().invoke({"messages": [{"role": "user", "content": "hi"}]})
    assert shape(out["messages"]) == [("human", "hi"), ("ai", "echo hi")]
    assert all(re.fullmatch(UUID4, m.id) for m in out["messages"])


def test_a_subclass_of_messages_state_adds_keys(lg: Imports) -> None:
    """LangGraph: ``MessagesState`` is subclassed to add keys; the messages channel keeps its reducer."""

    class State(lg.MessagesState):
        summary: str

    builder = lg.StateGraph(State)
    builder.add_node("bot", lambda s: {"messages": "more", "summary": f"{len(s['messages'])} so far"})
    builder.add_edge(lg.START, "bot")
    out = builder.compile().invoke({"messages": "first"})
    assert shape(out["messages"]) == [("human", "first"), ("human", "more")]
    assert out["summary"] == "1 so far"


def test_a_pydantic_state_with_a_messages_field(lg: Imports) -> None:
    """LangGraph: a pydantic state ``messages: Annotated[list[AnyMessage], add_messages]`` works as the
    TypedDict one; nodes read ``state.messages`` as message objects."""

    class State(BaseModel):
        messages: Annotated[list[lg.AnyMessage], lg.add_messages]
        turns: int = 0

    def bot(state: State) -> dict[str, Any]:
        return {"messages": [lg.AIMessage(f"seen {state.messages[-1].content}")], "turns": state.turns + 1}

    builder = lg.StateGraph(State)
    builder.add_node("bot", bot)
    builder.add_edge(lg.START, "bot")
    out = builder.compile().invoke({"messages": [("user", "q")]})
    assert shape(out["messages"]) == [("human", "q"), ("ai", "seen q")]
    assert out["turns"] == 1


def test_a_node_removes_and_replaces_messages(lg: Imports) -> None:
    """LangGraph: a node's ``RemoveMessage`` and same-id writes edit the history (a summarising node)."""

    def trim(state: dict[str, Any]) -> dict[str, Any]:
        first, second = state["messages"][:2]
        return {"messages": [lg.RemoveMessage(id=first.id), lg.AIMessage("summary", id=second.id)]}

    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("trim", trim)
    builder.add_edge(lg.START, "trim")
    out = builder.compile().invoke({"messages": ["a", "b", "c"]})
    assert shape(out["messages"]) == [("ai", "summary"), ("human", "c")]


def test_a_node_removing_an_unknown_id_fails_the_run_with_a_value_error(lg: Imports) -> None:
    """LangGraph: a node's ``RemoveMessage`` of an id that is not there fails the run with a ValueError."""
    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("bad", lambda s: {"messages": [lg.RemoveMessage(id="missing")]})
    builder.add_edge(lg.START, "bad")
    with pytest.raises(ValueError, match="'missing'"):
        builder.compile().invoke({"messages": ["a"]})


def test_a_thread_accumulates_messages_over_turns(lg: Imports) -> None:
    """LangGraph: with a checkpointer, each ``invoke`` on a thread appends its input and replies to the
    stored messages."""
    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("bot", lambda s: {"messages": [("ai", f"{len(s['messages'])} messages")]})
    builder.add_edge(lg.START, "bot")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"messages": "one"}, config)
    out = graph.invoke({"messages": "two"}, config)
    assert shape(out["messages"]) == [
        ("human", "one"),
        ("ai", "1 messages"),
        ("human", "two"),
        ("ai", "3 messages"),
    ]


def test_langchain_typed_dict_state_with_a_plain_list_annotation(lg: Imports) -> None:
    """LangGraph: ``Annotated[list, add_messages]`` (no item type) works as well as ``list[AnyMessage]``."""

    class State(TypedDict):
        messages: Annotated[list, lg.add_messages]

    builder = lg.StateGraph(State)
    builder.add_node("bot", lambda s: {"messages": {"role": "assistant", "content": "ok"}})
    builder.add_edge(lg.START, "bot")
    assert shape(builder.compile().invoke({"messages": ("user", "go")})["messages"]) == [
        ("human", "go"),
        ("ai", "ok"),
    ]


def test_the_react_guides_sequence_of_base_messages_state(lg: Imports) -> None:
    """LangGraph ("How to create a ReAct agent from scratch"): ``messages: Annotated[Sequence[BaseMessage],
    add_messages]`` holds the conversation as the other annotations do."""

    class AgentState(TypedDict):
        messages: Annotated[Sequence[lg.BaseMessage], lg.add_messages]

    def call_model(state: AgentState) -> dict[str, Any]:
        return {"messages": [lg.AIMessage(f"{len(state['messages'])} seen")]}

    builder = lg.StateGraph(AgentState)
    builder.add_node("agent", call_model)
    builder.set_entry_point("agent")
    out = builder.compile().invoke({"messages": [("user", "hi")]})
    assert shape(out["messages"]) == [("human", "hi"), ("ai", "1 seen")]
