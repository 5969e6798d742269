"""``stream_mode="messages"`` of a chat model called in a subgraph, both forms (a compiled graph
as a node; a graph invoked in a node): with ``subgraphs=True`` its tokens come under the subgraph's
namespace ``("sub:<task id>",)``; without it they are not shown, only the messages the ``sub`` node writes
to the parent's state. Each case runs with LangGraph's imports and with graphq's, sync and async; task ids
are normalised to ``<id>``."""

import re
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

from graphcore.backend.client import Client
from graphcore.backend.events import read_events
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from tests.compat.conftest import Imports, streamed
from tests.workers import work
from tests.workflows.lc_agent import build_sub_tokens

REGISTRY = Registry.load(["tests.workflows.lc_agent"])

CHUNK_METADATA = {
    "ls_integration": "langchain_chat_model",
    "ls_provider": "genericfakechatmodel",
    "ls_model_type": "chat",
    "langgraph_step": 1,
    "langgraph_node": "n",
    "langgraph_triggers": ("branch:to:n",),
    "langgraph_path": ("__pregel_pull", "n"),
    "langgraph_checkpoint_ns": "sub:<id>|n:<id>",
    "checkpoint_ns": "sub:<id>",
}
"""LangGraph's metadata of a token of the model called in the subgraph's node ``n``."""

TOKENS = [(("sub:<id>",), "AIMessageChunk", text, CHUNK_METADATA) for text in ("hi", " ", "there")]
"""LangGraph's pairs with ``subgraphs=True``: each token under the subgraph's namespace."""

WRITTEN = [
    (
        (),
        "AIMessage",
        "hi there",
        {
            "ls_integration": "langgraph",
            "langgraph_step": 1,
            "langgraph_node": "sub",
            "langgraph_triggers": ("branch:to:sub",),
            "langgraph_path": ("__pregel_pull", "sub"),
            "langgraph_checkpoint_ns": "sub:<id>",
        },
    )
]
"""LangGraph's pairs without ``subgraphs=True``: only the reply the ``sub`` node writes to the parent."""


def _norm(value: Any) -> Any:
    return re.sub(r":[0-9a-f-]{8,}", ":<id>", value) if isinstance(value, str) else value


def _pair(ns: tuple[str, ...], message: Any, metadata: dict[str, Any]) -> tuple[Any, ...]:
    kept = {k: _norm(v) for k, v in metadata.items() if k != "lc_versions"}
    return tuple(_norm(part) for part in ns), type(message).__name__, message.content, kept


def build(lg: Imports, form: str) -> Any:
    """A parent whose node ``sub`` is a graph whose node ``n`` calls a chat model replying "hi there":
    the compiled graph itself (``form="node"``) or a function invoking it (``form="call"``)."""
    model = GenericFakeChatModel(messages=iter(["hi there"]))
    inner = lg.StateGraph(lg.MessagesState)
    inner.add_node("n", lambda state: {"messages": [model.invoke(state["messages"])]})
    inner.add_edge(lg.START, "n")
    sub = inner.compile()
    outer = lg.StateGraph(lg.MessagesState)
    outer.add_node("sub", sub if form == "node" else lambda state: sub.invoke(state))
    outer.add_edge(lg.START, "sub")
    return outer.compile()


def collect(graph: Any, given: Any, subgraphs: bool, run_async: bool) -> list[tuple[Any, ...]]:
    """The normalised pairs of ``graph``'s ``stream`` (``astream`` when ``run_async``) of messages."""
    items = streamed(graph, given, run_async, stream_mode="messages", subgraphs=subgraphs)
    return [_pair(item[0], *item[1]) if subgraphs else _pair((), *item) for item in items]


def shown(lg: Imports, form: str, subgraphs: bool, run_async: bool) -> list[tuple[Any, ...]]:
    return collect(build(lg, form), {"messages": [("user", "q")]}, subgraphs, run_async)


@pytest.mark.parametrize("run_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("form", ["node", "call"])
def test_a_subgraphs_tokens_come_under_its_namespace_with_subgraphs(
    lg: Imports, form: str, run_async: bool
) -> None:
    """LangGraph: with ``subgraphs=True`` a model's tokens in a subgraph are under ``("sub:<task id>",)``,
    with the subgraph task's metadata (``checkpoint_ns`` is the ``sub`` task's namespace)."""
    assert shown(lg, form, subgraphs=True, run_async=run_async) == TOKENS


@pytest.mark.parametrize("run_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("form", ["node", "call"])
def test_without_subgraphs_only_the_sub_nodes_written_reply_is_shown(
    lg: Imports, form: str, run_async: bool
) -> None:
    """LangGraph: without ``subgraphs=True`` a subgraph's tokens are not shown; the reply the ``sub`` node
    writes to the parent's state is, once, with the ``sub`` task's metadata."""
    assert shown(lg, form, subgraphs=False, run_async=run_async) == WRITTEN


def test_a_nested_subgraphs_pairs_carry_the_run_metadata_and_the_outermost_tasks_namespace(
    lg: Imports,
) -> None:
    """LangGraph: in a graph two levels down, a model's token and a node's written message both carry the
    run's metadata and ``checkpoint_ns`` of the outermost ``sub`` task, under ``("sub:<id>", "mid:<id>")``."""
    model = GenericFakeChatModel(messages=iter(["hi"]))
    inner = lg.StateGraph(lg.MessagesState)
    inner.add_node("n", lambda state: {"messages": [model.invoke(state["messages"])]})
    inner.add_node("w", lambda state: {"messages": [lg.AIMessage("w", id="w1")]})
    inner.add_edge(lg.START, "n")
    inner.add_edge("n", "w")
    middle = lg.StateGraph(lg.MessagesState)
    middle.add_node("mid", inner.compile())
    middle.add_edge(lg.START, "mid")
    outer = lg.StateGraph(lg.MessagesState)
    outer.add_node("sub", middle.compile())
    outer.add_edge(lg.START, "sub")
    items = outer.compile().stream(
        {"messages": [("user", "q")]}, {"metadata": {"u": 1}}, stream_mode="messages", subgraphs=True
    )
    keys = ("u", "checkpoint_ns", "langgraph_checkpoint_ns")
    pairs = [_pair(ns, message, metadata) for ns, (message, metadata) in items]
    assert [(ns, content, {k: md.get(k) for k in keys}) for ns, _, content, md in pairs] == [
        (
            ("sub:<id>", "mid:<id>"),
            "hi",
            {"u": 1, "checkpoint_ns": "sub:<id>", "langgraph_checkpoint_ns": NS_N},
        ),
        (
            ("sub:<id>", "mid:<id>"),
            "w",
            {"u": 1, "checkpoint_ns": "sub:<id>", "langgraph_checkpoint_ns": NS_W},
        ),
    ]


NS_N, NS_W = "sub:<id>|mid:<id>|n:<id>", "sub:<id>|mid:<id>|w:<id>"


def test_a_queued_run_records_what_a_stream_without_subgraphs_shows(client: Client, lg: Imports) -> None:
    """A queued run with ``stream_mode=["messages"]`` and a subgraph whose node streams a model's tokens
    records what LangGraph's stream without ``subgraphs=True`` shows of the same graph: not the subgraph's
    tokens, only the messages the ``sub`` node writes (``subgraphs=True`` has no namespace to show on the
    queue)."""
    given = {"messages": [lg.HumanMessage("hi", id="h1")]}
    graph = build_sub_tokens(lg.StateGraph, lg.START).compile()
    expected = [_pair((), m, md) for m, md in graph.stream(given, stream_mode="messages")]
    assert [(t, c, md["langgraph_node"]) for _, t, c, md in expected] == [
        ("AIMessage", "hello big world", "sub"),
        ("AIMessage", "plain", "sub"),
    ]
    run_id = client.enqueue("lc_sub_tokens", given, config={"stream_mode": ["messages"]})
    work(client)
    assert client.get_run(run_id).status == RunStatus.COMPLETED
    events = read_events(client.kv, run_id, run_id)
    assert [_pair((), *event.data) for event in events if event.mode == "messages"] == expected


@pytest.mark.parametrize("subgraphs", [True, False])
def test_push_message_in_a_subgraph_goes_under_its_namespace(lg: Imports, subgraphs: bool) -> None:
    """LangGraph: ``push_message`` in a subgraph's node shows the message under the subgraph's namespace
    with ``subgraphs=True``; without it, only the ``sub`` node's write of it is shown, at the top."""

    def pushing(state: Any) -> Any:
        lg.push_message(lg.AIMessage("pushed", id="p1"))
        return {}

    inner = lg.StateGraph(lg.MessagesState)
    inner.add_node("p", pushing)
    inner.add_edge(lg.START, "p")
    outer = lg.StateGraph(lg.MessagesState)
    outer.add_node("sub", inner.compile())
    outer.add_edge(lg.START, "sub")
    pairs = collect(outer.compile(), {"messages": []}, subgraphs, run_async=False)
    assert [(ns, content, md["langgraph_node"]) for ns, _, content, md in pairs] == (
        [(("sub:<id>",), "pushed", "p")] if subgraphs else [((), "pushed", "sub")]
    )


@pytest.mark.parametrize("run_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("subgraphs", [True, False])
def test_a_graph_streamed_in_a_node_shows_its_messages_to_both_streams(
    lg: Imports, subgraphs: bool, run_async: bool
) -> None:
    """LangGraph: a node streaming a graph with ``stream_mode="messages"`` gets its model's tokens and its
    nodes' written messages; the enclosing stream shows them under ``("sub:<task id>",)`` with
    ``subgraphs=True``, and nothing of them without it."""
    model = GenericFakeChatModel(messages=iter(["a b"]))
    inner = lg.StateGraph(lg.MessagesState)
    inner.add_node("n", lambda state: {"messages": [model.invoke(state["messages"])]})
    inner.add_node("w", lambda state: {"messages": [lg.AIMessage("w", id="w1")]})
    inner.add_edge(lg.START, "n")
    inner.add_edge("n", "w")
    sub = inner.compile()
    seen: list[str] = []

    def node(state: Any) -> Any:
        seen.extend(message.content for message, _ in sub.stream(state, stream_mode="messages"))
        return {}

    outer = lg.StateGraph(lg.MessagesState)
    outer.add_node("sub", node)
    outer.add_edge(lg.START, "sub")
    pairs = collect(outer.compile(), {"messages": [("user", "q")]}, subgraphs, run_async)
    assert seen == ["a", " ", "b", "w"]
    assert [(ns, content, md["langgraph_node"]) for ns, _, content, md in pairs] == (
        [(("sub:<id>",), text, node) for text, node in (("a", "n"), (" ", "n"), ("b", "n"), ("w", "w"))]
        if subgraphs
        else []
    )
