"""``stream_mode="messages"`` metadata and de-duplication, as LangGraph's test_pregel cases
``test_tags_stream_mode_messages``, ``test_stream_mode_messages_command`` and
``test_stream_messages_dedupe_inputs`` / ``_state``: each pair carries the task's ``langgraph_*`` keys (the
model's also ``checkpoint_ns``, LangChain's ``ls_*`` and the model's tags), a node's written message
``ls_integration: "langgraph"``; input messages and messages already in the state are not shown again, and
with ``subgraphs=True`` a subgraph's nodes' messages are shown. Each case runs with LangGraph's imports and
with graphq's; a queued run records the same metadata."""

from typing import Any

import langchain_core
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from graphcore.backend.client import Client
from graphcore.backend.events import read_events
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from tests.compat.conftest import Imports
from tests.workers import work
from tests.workflows.lc_agent import build_tokens

REGISTRY = Registry.load(["tests.workflows.lc_agent"])


def node_metadata(node: str, step: int, ns: str) -> dict[str, Any]:
    """LangGraph's metadata of a task of ``node`` at ``step`` whose namespace is ``ns``."""
    return {
        "langgraph_step": step,
        "langgraph_node": node,
        "langgraph_triggers": (f"branch:to:{node}",),
        "langgraph_path": ("__pregel_pull", node),
        "langgraph_checkpoint_ns": ns,
    }


def test_a_models_tokens_carry_the_tasks_metadata_and_its_tags(lg: Imports) -> None:
    """LangGraph: a chat model's chunk carries the task's ``langgraph_*`` keys, ``checkpoint_ns`` (the task's
    namespace, ``call_model:<task id>``), LangChain's ``ls_*`` and ``lc_versions``, and the model's tags."""
    model = GenericFakeChatModel(messages=iter(["foo"]), tags=["meow"])
    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("call_model", lambda state: {"messages": model.invoke(state["messages"])})
    builder.add_edge(lg.START, "call_model")
    [(chunk, metadata)] = list(builder.compile().stream({"messages": "hi"}, stream_mode="messages"))
    ns = metadata["langgraph_checkpoint_ns"]
    assert (type(chunk).__name__, chunk.content, ns.split(":")[0]) == ("AIMessageChunk", "foo", "call_model")
    assert metadata == {
        **node_metadata("call_model", 1, ns),
        "checkpoint_ns": ns,
        "ls_provider": "genericfakechatmodel",
        "ls_model_type": "chat",
        "ls_integration": "langchain_chat_model",
        "lc_versions": {"langchain-core": langchain_core.__version__},
        "tags": ["meow"],
    }


def test_written_messages_and_a_commands_update_carry_the_nodes_metadata(lg: Imports) -> None:
    """LangGraph: the messages of a node's update, of its Command's update and of a list of Commands are
    shown with ``ls_integration: "langgraph"`` and the task's ``langgraph_*`` keys."""

    def my_node(state: Any) -> Any:
        return {"messages": HumanMessage(content="foo")}

    def my_other_node(state: Any) -> Any:
        return lg.Command(update={"messages": HumanMessage(content="bar")})

    def my_last_node(state: Any) -> Any:
        return [lg.Command(update={"messages": HumanMessage(content="baz")})]

    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("my_node", my_node)
    builder.add_node("my_other_node", my_other_node)
    builder.add_node("my_last_node", my_last_node)
    builder.add_edge(lg.START, "my_node")
    builder.add_edge("my_node", "my_other_node")
    builder.add_edge("my_other_node", "my_last_node")
    pairs = list(builder.compile().stream({"messages": []}, stream_mode="messages"))
    assert [(m.content, meta["langgraph_checkpoint_ns"].split(":")[0]) for m, meta in pairs] == [
        ("foo", "my_node"),
        ("bar", "my_other_node"),
        ("baz", "my_last_node"),
    ]
    nodes = ["my_node", "my_other_node", "my_last_node"]
    assert [meta for _, meta in pairs] == [
        {"ls_integration": "langgraph", **node_metadata(node, n, meta["langgraph_checkpoint_ns"])}
        for (n, node), (_, meta) in zip(enumerate(nodes, 1), pairs, strict=True)
    ]


def subgraph_to_node_2(lg: Imports, replies: list[AIMessage]) -> Any:
    """LangGraph's dedupe cases: a subgraph as ``node_1`` whose ``call_model`` writes the next of
    ``replies`` and whose ``route`` goes to the parent's ``node_2`` (``Command.PARENT``), which returns the
    state it got."""

    def call_model(state: Any) -> Any:
        return {"messages": replies.pop(0)}

    def route(state: Any) -> Any:
        return lg.Command(goto="node_2", graph=lg.Command.PARENT)

    sub = lg.StateGraph(lg.MessagesState)
    sub.add_node("call_model", call_model)
    sub.add_node("route", route)
    sub.add_edge(lg.START, "call_model")
    sub.add_edge("call_model", "route")
    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("node_1", sub.compile(), destinations=("node_2",))
    builder.add_node("node_2", lambda state: state)
    builder.add_edge(lg.START, "node_1")
    return builder


def test_input_messages_are_not_shown_and_a_subgraphs_are(lg: Imports) -> None:
    """LangGraph: with ``subgraphs=True`` the subgraph node's message is shown under the subgraph's
    namespace, with its own metadata; the input message ``node_2`` returns is not (nor without
    ``subgraphs``, where the subgraph's messages are not shown)."""
    graph = subgraph_to_node_2(lg, [AIMessage("hi", id="1"), AIMessage("hi", id="1")]).compile()
    chunks = list(graph.stream({"messages": "hi"}, stream_mode="messages", subgraphs=True))
    [(ns, (message, metadata))] = chunks
    assert (len(ns), ns[0].split(":")[0], message, metadata["langgraph_node"]) == (
        1,
        "node_1",
        AIMessage("hi", id="1"),
        "call_model",
    )
    assert metadata["langgraph_checkpoint_ns"].startswith(f"{ns[0]}|call_model:")
    assert list(graph.stream({"messages": "hi"}, stream_mode="messages")) == []


def test_messages_already_in_the_state_are_not_shown_again(lg: Imports) -> None:
    """LangGraph: on a thread's second turn only the new reply is shown; the messages of the first turn,
    in the state, are not."""
    builder = subgraph_to_node_2(lg, [AIMessage("bye", id="1"), AIMessage("bye again", id="2")])
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    thread = {"configurable": {"thread_id": "1"}}
    for text, reply in (("hi", AIMessage("bye", id="1")), ("hi again", AIMessage("bye again", id="2"))):
        chunks = list(graph.stream({"messages": text}, thread, stream_mode="messages", subgraphs=True))
        assert [(message, metadata["langgraph_node"]) for _, (message, metadata) in chunks] == [
            (reply, "call_model")
        ]


def _keyed(metadata: dict[str, Any]) -> dict[str, Any]:
    """``metadata`` without what names a task by its id (the namespaces)."""
    return {k: v for k, v in metadata.items() if k not in ("langgraph_checkpoint_ns", "checkpoint_ns")}


def test_a_queued_runs_messages_carry_langgraphs_metadata(client: Client, lg: Imports) -> None:
    """A run enqueued with ``stream_mode=["messages"]`` records each pair with the metadata LangGraph
    streams for the same graph, the namespaces ``node:<task id>``."""
    tokens = {"messages": [HumanMessage("hi", id="h1")]}
    expected = [
        _keyed(meta)
        for _, meta in build_tokens(lg.StateGraph, lg.START).compile().stream(tokens, stream_mode="messages")
    ]
    run_id = client.enqueue("lc_tokens", tokens, config={"stream_mode": ["messages"]})
    work(client)
    assert client.get_run(run_id).status == RunStatus.COMPLETED
    pairs = [event.data for event in read_events(client.kv, run_id, run_id) if event.mode == "messages"]
    assert [_keyed(meta) for _, meta in pairs] == expected
    assert [meta["langgraph_checkpoint_ns"].split(":")[0] for _, meta in pairs] == ["chat"] * 5 + ["plain"]


def test_a_nodes_config_holds_the_tasks_metadata_and_namespace(lg: Imports) -> None:
    """LangGraph: a node's ``config["metadata"]`` holds its task's ``langgraph_*`` keys (a ``Send``'s task
    is triggered by ``__pregel_push``, its path its index) and ``config["configurable"]["checkpoint_ns"]``
    is the task's namespace."""
    seen: list[tuple[dict[str, Any], str]] = []

    def record(state: Any, config: RunnableConfig) -> Any:
        seen.append((dict(config["metadata"]), config["configurable"]["checkpoint_ns"]))
        return {}

    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("a", record)
    builder.add_node("s", record)
    builder.add_edge(lg.START, "a")
    builder.add_conditional_edges("a", lambda state: [lg.Send("s", state)])
    builder.compile().invoke({"messages": []})
    [(pulled, pulled_ns), (pushed, pushed_ns)] = seen
    assert (pulled_ns.split(":")[0], pushed_ns.split(":")[0]) == ("a", "s")
    assert pulled == node_metadata("a", 1, pulled_ns)
    assert pushed == {
        **node_metadata("s", 2, pushed_ns),
        "langgraph_triggers": ("__pregel_push",),
        "langgraph_path": ("__pregel_push", 0, False),
    }


def test_push_message_streams_at_once_and_writes_the_state(lg: Imports) -> None:
    """LangGraph: ``push_message`` shows the message in the ``messages`` stream with the task's metadata
    (nothing more) and writes it to ``messages``, before what the node returns; one without an id is a
    ValueError "Message ID is required"."""
    refused: list[str] = []

    def chat(state: Any) -> Any:
        try:
            lg.push_message(AIMessage(content="No ID"))
        except ValueError as exc:
            refused.append(str(exc))
        lg.push_message(AIMessage(content="First", id="1"))
        lg.push_message(HumanMessage(content="Second", id="2"))
        return {"messages": [AIMessage(content="Third", id="3")]}

    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("chat", chat)
    builder.add_edge(lg.START, "chat")
    parts = list(builder.compile().stream({"messages": []}, stream_mode=["messages", "values"]))
    pairs = [chunk for mode, chunk in parts if mode == "messages"]
    values = [chunk for mode, chunk in parts if mode == "values"]
    assert refused == ["Message ID is required"]
    assert [(m.content, m.id) for m, _ in pairs] == [("First", "1"), ("Second", "2"), ("Third", "3")]
    ns = pairs[0][1]["langgraph_checkpoint_ns"]
    assert [meta for _, meta in pairs] == [node_metadata("chat", 1, ns)] * 2 + [
        {"ls_integration": "langgraph", **node_metadata("chat", 1, ns)}
    ]
    assert [(m.content, m.id) for m in values[-1]["messages"]] == [
        ("First", "1"),
        ("Second", "2"),
        ("Third", "3"),
    ]


def test_a_queued_run_records_pushed_messages(client: Client) -> None:
    """On the queue ``push_message`` records its pairs (the task's metadata) and writes the state, as in
    process."""
    run_id = client.enqueue("lc_pushed", {"messages": []}, config={"stream_mode": ["messages"]})
    work(client)
    run = client.get_run(run_id)
    assert run.status == RunStatus.COMPLETED, run.error
    assert run.result is not None
    assert [(m.content, m.id) for m in run.result["messages"]] == [
        ("First", "p1"),
        ("Second", "p2"),
        ("Third", "p3"),
    ]
    pairs = [event.data for event in read_events(client.kv, run_id, run_id) if event.mode == "messages"]
    assert [(m.content, m.id) for m, _ in pairs] == [("First", "p1"), ("Second", "p2"), ("Third", "p3")]
    ns = pairs[0][1]["langgraph_checkpoint_ns"]
    assert [meta for _, meta in pairs] == [node_metadata("pushing", 1, ns)] * 2 + [
        {"ls_integration": "langgraph", **node_metadata("pushing", 1, ns)}
    ]
