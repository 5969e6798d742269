"""``config["callbacks"]`` of ``invoke``/``stream``/``ainvoke``/``astream``: the handlers hear the
graph's chain run and each node's (``on_chain_start``/``on_chain_end``/``on_chain_error``, named, tagged
``graph:step:<n>``, with the ``langgraph_*`` metadata, each a child of the graph's), a subgraph's run inside
its node's, and the LangChain calls inside nodes as children of their node's run. Each case runs with
LangGraph's imports and with graphq's; LangGraph's sequence is the expected value."""

import asyncio
import operator
import warnings
from typing import Annotated, Any
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from typing_extensions import TypedDict

from tests.compat.conftest import Imports

KEY_METADATA = (
    "langgraph_step",
    "langgraph_node",
    "langgraph_triggers",
    "langgraph_path",
    "ls_integration",
    "k",
)
"""The metadata compared as it is; ``checkpoint_ns`` and ``langgraph_checkpoint_ns`` are compared without
their task ids (LangGraph's are UUIDs, graphq's 16 hex digits)."""


class Recorder(BaseCallbackHandler):
    """Records ``(event, name, run, parent, tags, metadata, data)`` per callback; runs are numbered in the
    order they first appear (run ids differ between runs)."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []
        self.runs: dict[UUID, int] = {}

    def _record(
        self, event: str, name: Any, run_id: UUID, parent: UUID | None, kw: dict[str, Any], data: Any
    ) -> None:
        run = self.runs.setdefault(run_id, len(self.runs))
        shown_parent = None if parent is None else self.runs.setdefault(parent, len(self.runs))
        metadata = kw.get("metadata") or {}
        key = {k: metadata[k] for k in KEY_METADATA if k in metadata}
        for ns in ("checkpoint_ns", "langgraph_checkpoint_ns"):
            if ns in metadata:
                key[ns] = "|".join(part.split(":")[0] for part in metadata[ns].split("|"))
        self.events.append((event, name, run, shown_parent, sorted(kw.get("tags") or []), key, data))

    def on_chain_start(
        self, serialized: Any, inputs: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kw: Any
    ) -> None:
        self._record("on_chain_start", kw.get("name"), run_id, parent_run_id, kw, inputs)

    def on_chain_end(
        self, outputs: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kw: Any
    ) -> None:
        self._record("on_chain_end", None, run_id, parent_run_id, kw, outputs)

    def on_chain_error(
        self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **kw: Any
    ) -> None:
        original = getattr(error, "error", error)  # graphq's NodeError carries the node's exception (docs)
        self._record("on_chain_error", None, run_id, parent_run_id, kw, type(original).__name__)

    def on_chat_model_start(
        self, serialized: Any, messages: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kw: Any
    ) -> None:
        self._record("on_chat_model_start", None, run_id, parent_run_id, kw, [m.content for m in messages[0]])

    def on_llm_end(
        self, response: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kw: Any
    ) -> None:
        self._record(
            "on_llm_end", None, run_id, parent_run_id, kw, response.generations[0][0].message.content
        )


class State(TypedDict):
    seen: Annotated[list[str], operator.add]


def _chat(state: State) -> dict[str, Any]:
    model = GenericFakeChatModel(messages=iter([AIMessage("hi")]))
    return {"seen": [model.invoke("q").text]}


def _boom(state: State) -> dict[str, Any]:
    raise ValueError("boom")


def _graph(lg: Imports, last: Any = None) -> Any:
    """``chat`` (calls a fake chat model) → ``sub`` (a subgraph: ``inner``) → ``last`` when given."""
    inner = lg.StateGraph(State)
    inner.add_node("inner", lambda state: {"seen": ["inner"]})
    inner.add_edge(lg.START, "inner")
    builder = lg.StateGraph(State)
    builder.add_node("chat", _chat)
    builder.add_node("sub", inner.compile())
    builder.add_edge(lg.START, "chat")
    builder.add_edge("chat", "sub")
    if last is not None:
        builder.add_node(last.__name__.lstrip("_"), last)
        builder.add_edge("sub", last.__name__.lstrip("_"))
    return builder.compile()


def _node_md(node: str, step: int, ns: str, triggers: tuple[str, ...], **more: Any) -> dict[str, Any]:
    return {
        "langgraph_step": step,
        "langgraph_node": node,
        "langgraph_triggers": triggers,
        "langgraph_path": ("__pregel_pull", node),
        "ls_integration": "langgraph",
        "k": 1,
        "langgraph_checkpoint_ns": ns,
        **more,
    }


def _expected_until_boom() -> list[tuple[Any, ...]]:
    """LangGraph's sequence for ``_graph(lg, _boom)`` run with tags ``["t0"]`` and metadata ``{"k": 1}``."""
    graph_md = {"ls_integration": "langgraph", "k": 1}
    chat = _node_md("chat", 1, "chat", ("branch:to:chat",))
    sub = _node_md("sub", 2, "sub", ("branch:to:sub",))
    inner = _node_md("inner", 1, "sub|inner", ("branch:to:inner",), checkpoint_ns="sub")
    boom = _node_md("boom", 3, "boom", ("branch:to:boom",))
    model = {**chat, "checkpoint_ns": "chat", "ls_integration": "langchain_chat_model"}  # the model's own
    return [
        ("on_chain_start", "LangGraph", 0, None, ["t0"], graph_md, {"seen": []}),
        ("on_chain_start", "chat", 1, 0, ["graph:step:1", "t0"], chat, {"seen": []}),
        ("on_chat_model_start", None, 2, 1, ["seq:step:1", "t0"], model, ["q"]),
        ("on_llm_end", None, 2, 1, ["seq:step:1", "t0"], {}, "hi"),
        ("on_chain_end", None, 1, 0, ["graph:step:1", "t0"], {}, {"seen": ["hi"]}),
        ("on_chain_start", "sub", 3, 0, ["graph:step:2", "t0"], sub, {"seen": ["hi"]}),
        (
            "on_chain_start",
            "LangGraph",
            4,
            3,
            ["seq:step:1", "t0"],
            {**sub, "checkpoint_ns": "sub"},
            {"seen": ["hi"]},
        ),
        ("on_chain_start", "inner", 5, 4, ["graph:step:1", "t0"], inner, {"seen": ["hi"]}),
        ("on_chain_end", None, 5, 4, ["graph:step:1", "t0"], {}, {"seen": ["inner"]}),
        ("on_chain_end", None, 4, 3, ["seq:step:1", "t0"], {}, {"seen": ["hi", "inner"]}),
        ("on_chain_end", None, 3, 0, ["graph:step:2", "t0"], {}, {"seen": ["hi", "inner"]}),
        ("on_chain_start", "boom", 6, 0, ["graph:step:3", "t0"], boom, {"seen": ["hi", "hi", "inner"]}),
        ("on_chain_error", None, 6, 0, ["graph:step:3", "t0"], {}, "ValueError"),
        ("on_chain_error", None, 0, None, ["t0"], {}, "ValueError"),
    ]


async def _astream(graph: Any, config: dict[str, Any]) -> None:
    async for _ in graph.astream({"seen": []}, config):
        pass


CALLS = {
    "invoke": lambda graph, config: graph.invoke({"seen": []}, config),
    "stream": lambda graph, config: list(graph.stream({"seen": []}, config)),
    "ainvoke": lambda graph, config: asyncio.run(graph.ainvoke({"seen": []}, config)),
    "astream": lambda graph, config: asyncio.run(_astream(graph, config)),
}


@pytest.mark.parametrize("call", sorted(CALLS))
def test_callbacks_hear_the_graph_its_nodes_a_subgraph_and_a_model(lg: Imports, call: str) -> None:
    """LangGraph: the graph's run (named "LangGraph", the caller's tags and metadata) is the root; each
    node's run its child (tag ``graph:step:<n>``, ``langgraph_*`` metadata); the model a node calls and a
    subgraph's own run are children of the node's run (tag ``seq:step:1``), the subgraph's nodes children of
    its run; a node that raises ends its run and the graph's with ``on_chain_error``."""
    recorder = Recorder()
    config = {"callbacks": [recorder], "tags": ["t0"], "metadata": {"k": 1}}
    with pytest.raises(ValueError, match="boom"):
        CALLS[call](_graph(lg, _boom), config)
    assert recorder.events == _expected_until_boom()


def test_a_finished_run_ends_with_its_final_state_and_takes_a_run_name(lg: Imports) -> None:
    """LangGraph: ``on_chain_end`` of the graph's run carries the final state; ``run_name`` names the run."""
    recorder = Recorder()
    out = _graph(lg).invoke({"seen": []}, {"callbacks": [recorder], "run_name": "mine"})
    assert out == {"seen": ["hi", "hi", "inner"]}
    graph_events = [(e[0], e[1], e[6]) for e in recorder.events if e[2] == 0]
    assert graph_events == [("on_chain_start", "mine", {"seen": []}), ("on_chain_end", None, out)]
    assert [e[1] for e in recorder.events if e[0] == "on_chain_start"] == [
        "mine",
        "chat",
        "sub",
        "LangGraph",
        "inner",
    ]


def test_an_async_node_and_its_model_under_ainvoke(lg: Imports) -> None:
    """LangGraph: under ``ainvoke``, an ``async def`` node's run and its model's ``ainvoke``, its child."""

    async def chat(state: State) -> dict[str, Any]:
        model = GenericFakeChatModel(messages=iter([AIMessage("hey")]))
        return {"seen": [(await model.ainvoke("q")).text]}

    builder = lg.StateGraph(State)
    builder.add_node("chat", chat)
    builder.add_edge(lg.START, "chat")
    recorder = Recorder()
    assert asyncio.run(builder.compile().ainvoke({"seen": []}, {"callbacks": [recorder]})) == {
        "seen": ["hey"]
    }
    assert [(e[0], e[1], e[2], e[3], e[4], e[6]) for e in recorder.events] == [
        ("on_chain_start", "LangGraph", 0, None, [], {"seen": []}),
        ("on_chain_start", "chat", 1, 0, ["graph:step:1"], {"seen": []}),
        ("on_chat_model_start", None, 2, 1, ["seq:step:1"], ["q"]),
        ("on_llm_end", None, 2, 1, ["seq:step:1"], "hey"),
        ("on_chain_end", None, 1, 0, ["graph:step:1"], {"seen": ["hey"]}),
        ("on_chain_end", None, 0, None, [], {"seen": ["hey"]}),
    ]


def test_a_pause_ends_the_node_run_with_an_error_and_the_graph_run_with_the_state(lg: Imports) -> None:
    """LangGraph: a node (here in a subgraph) that pauses in ``interrupt()`` ends its run, the subgraph's and
    the subgraph node's with ``on_chain_error`` (``GraphInterrupt``); the graph's run ends with the state;
    the resuming call is a new graph run whose node runs end with what they return."""

    def ask(state: State) -> dict[str, Any]:
        return {"seen": [lg.interrupt("name?")]}

    inner = lg.StateGraph(State)
    inner.add_node("ask", ask)
    inner.add_edge(lg.START, "ask")
    builder = lg.StateGraph(State)
    builder.add_node("sub", inner.compile())
    builder.add_edge(lg.START, "sub")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    recorder = Recorder()
    config = {"callbacks": [recorder], "configurable": {"thread_id": "t1"}}
    graph.invoke({"seen": []}, config)
    assert [(e[0], e[1], e[2], e[3], e[6]) for e in recorder.events] == [
        ("on_chain_start", "LangGraph", 0, None, {"seen": []}),
        ("on_chain_start", "sub", 1, 0, {"seen": []}),
        ("on_chain_start", "LangGraph", 2, 1, {"seen": []}),
        ("on_chain_start", "ask", 3, 2, {"seen": []}),
        ("on_chain_error", None, 3, 2, "GraphInterrupt"),
        ("on_chain_error", None, 2, 1, "GraphInterrupt"),
        ("on_chain_error", None, 1, 0, "GraphInterrupt"),
        ("on_chain_end", None, 0, None, {"seen": []}),
    ]
    recorder.events.clear()
    assert graph.invoke(lg.Command(resume="ada"), config) == {"seen": ["ada"]}
    assert [(e[0], e[1], e[2] - 4, None if e[3] is None else e[3] - 4, e[6]) for e in recorder.events] == [
        ("on_chain_start", "LangGraph", 0, None, lg.Command(resume="ada")),
        ("on_chain_start", "sub", 1, 0, {"seen": []}),
        ("on_chain_start", "LangGraph", 2, 1, {"seen": []}),
        ("on_chain_start", "ask", 3, 2, {"seen": []}),
        ("on_chain_end", None, 3, 2, {"seen": ["ada"]}),
        ("on_chain_end", None, 2, 1, {"seen": ["ada"]}),
        ("on_chain_end", None, 1, 0, {"seen": ["ada"]}),
        ("on_chain_end", None, 0, None, {"seen": ["ada"]}),
    ]


def test_astream_events_reports_the_same_runs(lg: Imports) -> None:
    """LangGraph: ``astream_events`` is made of the same runs (one mechanism): the subgraph's own run inside
    its node's, the model's inside its node's, with the same tags."""

    async def events() -> list[tuple[Any, ...]]:
        ids: dict[str, int] = {}
        shown = []
        async for e in _graph(lg).astream_events({"seen": []}, {"tags": ["t0"]}, version="v2"):
            run = ids.setdefault(e["run_id"], len(ids))
            if not e["event"].endswith("_stream"):
                parents = [ids[p] for p in e["parent_ids"]]
                shown.append((e["event"], e["name"], run, parents, sorted(e["tags"])))
        return shown

    assert asyncio.run(events()) == [
        ("on_chain_start", "LangGraph", 0, [], ["t0"]),
        ("on_chain_start", "chat", 1, [0], ["graph:step:1", "t0"]),
        ("on_chat_model_start", "GenericFakeChatModel", 2, [0, 1], ["seq:step:1", "t0"]),
        ("on_chat_model_end", "GenericFakeChatModel", 2, [0, 1], ["seq:step:1", "t0"]),
        ("on_chain_end", "chat", 1, [0], ["graph:step:1", "t0"]),
        ("on_chain_start", "sub", 3, [0], ["graph:step:2", "t0"]),
        ("on_chain_start", "LangGraph", 4, [0, 3], ["seq:step:1", "t0"]),
        ("on_chain_start", "inner", 5, [0, 3, 4], ["graph:step:1", "t0"]),
        ("on_chain_end", "inner", 5, [0, 3, 4], ["graph:step:1", "t0"]),
        ("on_chain_end", "LangGraph", 4, [0, 3], ["seq:step:1", "t0"]),
        ("on_chain_end", "sub", 3, [0], ["graph:step:2", "t0"]),
        ("on_chain_end", "LangGraph", 0, [], ["t0"]),
    ]


def _route(state: State) -> str:
    return "b" if len(state["seen"]) < 2 else "__end__"


def _fan(state: State) -> list[str]:
    return ["c"]


def _stop(state: State) -> str:
    return "__end__"


def _routed(lg: Imports, route: Any = _route) -> Any:
    """``a`` → ``route`` (to ``b``); ``b`` → ``c`` (an edge), ``_fan`` (to ``c``, a list) and ``_stop``
    (``b``'s routers come after that edge's write in LangGraph's sequence)."""
    builder = lg.StateGraph(State)
    for name in "abc":
        builder.add_node(name, lambda state, name=name: {"seen": [name]})
    builder.add_edge(lg.START, "a")
    builder.add_edge("b", "c")
    builder.add_conditional_edges("a", route)
    builder.add_conditional_edges("b", _fan, ["c"])
    builder.add_conditional_edges("b", _stop)
    return builder.compile()


def _expected_routed(route: str = "_route") -> list[tuple[Any, ...]]:
    """LangGraph's sequence for ``_routed`` run with tags ``["t0"]`` and metadata ``{"k": 1}``: each
    router's run (named as its function, with what it is passed and what it returned) is a child of its
    node's run, tagged ``seq:step:<k>`` (after the node, its writes, and one write per edge to a node)."""
    graph_md = {"ls_integration": "langgraph", "k": 1}
    a = _node_md("a", 1, "a", ("branch:to:a",))
    b = _node_md("b", 2, "b", ("branch:to:b",))
    c = _node_md("c", 3, "c", ("branch:to:c",))
    return [
        ("on_chain_start", "LangGraph", 0, None, ["t0"], graph_md, {"seen": []}),
        ("on_chain_start", "a", 1, 0, ["graph:step:1", "t0"], a, {"seen": []}),
        ("on_chain_start", route, 2, 1, ["seq:step:3", "t0"], a, {"seen": ["a"]}),
        ("on_chain_end", None, 2, 1, ["seq:step:3", "t0"], {}, "b"),
        ("on_chain_end", None, 1, 0, ["graph:step:1", "t0"], {}, {"seen": ["a"]}),
        ("on_chain_start", "b", 3, 0, ["graph:step:2", "t0"], b, {"seen": ["a"]}),
        ("on_chain_start", "_fan", 4, 3, ["seq:step:4", "t0"], b, {"seen": ["a", "b"]}),
        ("on_chain_end", None, 4, 3, ["seq:step:4", "t0"], {}, ["c"]),
        ("on_chain_start", "_stop", 5, 3, ["seq:step:5", "t0"], b, {"seen": ["a", "b"]}),
        ("on_chain_end", None, 5, 3, ["seq:step:5", "t0"], {}, "__end__"),
        ("on_chain_end", None, 3, 0, ["graph:step:2", "t0"], {}, {"seen": ["b"]}),
        ("on_chain_start", "c", 6, 0, ["graph:step:3", "t0"], c, {"seen": ["a", "b"]}),
        ("on_chain_end", None, 6, 0, ["graph:step:3", "t0"], {}, {"seen": ["c"]}),
        ("on_chain_end", None, 0, None, ["t0"], {}, {"seen": ["a", "b", "c"]}),
    ]


@pytest.mark.parametrize("call", sorted(CALLS))
def test_each_router_call_is_a_run_in_its_node_run(lg: Imports, call: str) -> None:
    """LangGraph: a conditional edge's router is a chain run, child of the run of the node it routes."""
    recorder = Recorder()
    CALLS[call](_routed(lg), {"callbacks": [recorder], "tags": ["t0"], "metadata": {"k": 1}})
    assert recorder.events == _expected_routed()


def test_an_async_router_under_ainvoke_is_a_run_too(lg: Imports) -> None:
    """LangGraph: an ``async def`` router's run, as a sync one's."""

    async def aroute(state: State) -> str:
        return _route(state)

    recorder = Recorder()
    config = {"callbacks": [recorder], "tags": ["t0"], "metadata": {"k": 1}}
    asyncio.run(_routed(lg, aroute).ainvoke({"seen": []}, config))
    assert recorder.events == _expected_routed("aroute")


def test_a_router_that_raises_ends_its_run_with_the_error_and_its_model_call_is_its_child(
    lg: Imports,
) -> None:
    """LangGraph: a LangChain call in a router is a child of the router's run; a router that raises ends its
    run, its node's and the graph's with ``on_chain_error``."""

    def route(state: State) -> str:
        GenericFakeChatModel(messages=iter([AIMessage("hm")])).invoke("where?")
        raise KeyError("lost")

    builder = lg.StateGraph(State)
    builder.add_node("a", lambda state: {"seen": ["a"]})
    builder.add_edge(lg.START, "a")
    builder.add_conditional_edges("a", route)
    recorder = Recorder()
    with pytest.raises(KeyError):
        builder.compile().invoke({"seen": []}, {"callbacks": [recorder]})
    assert [(e[0], e[1], e[2], e[3], e[4], e[6]) for e in recorder.events] == [
        ("on_chain_start", "LangGraph", 0, None, [], {"seen": []}),
        ("on_chain_start", "a", 1, 0, ["graph:step:1"], {"seen": []}),
        ("on_chain_start", "route", 2, 1, ["seq:step:3"], {"seen": ["a"]}),
        ("on_chat_model_start", None, 3, 2, [], ["where?"]),
        ("on_llm_end", None, 3, 2, [], "hm"),
        ("on_chain_error", None, 2, 1, ["seq:step:3"], "KeyError"),
        ("on_chain_error", None, 1, 0, ["graph:step:1"], "KeyError"),
        ("on_chain_error", None, 0, None, [], "KeyError"),
    ]


class _ToolCallingFake(GenericFakeChatModel):
    """A fake chat model an agent can bind tools to (it replies with its messages all the same)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> "_ToolCallingFake":
        return self


def _weather(city: str) -> str:
    """The weather of a city."""
    return f"{city}: sunny"


def _shown(data: Any) -> Any:
    """``data`` with each message as ``(type, content, name)`` and each Send as ``("Send", node)`` (their
    ids differ between runs)."""
    if hasattr(data, "type") and hasattr(data, "content"):
        return (data.type, data.content, data.name)
    if type(data).__name__ == "Send":
        return ("Send", data.node)
    if isinstance(data, dict):
        return {k: _shown(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [_shown(v) for v in data]
    return data


def test_create_react_agent_reports_its_model_call_and_its_router(lg: Imports) -> None:
    """LangGraph: in the ``agent`` node's run, ``call_model`` (the node's input and update), beside it the
    prompt piped into the model (``RunnableSequence``: ``Prompt``, then the model), and the router
    ``should_continue``; the ``tools`` node's run per tool call."""
    model = _ToolCallingFake(
        messages=iter(
            [
                AIMessage("", tool_calls=[{"name": "_weather", "args": {"city": "sf"}, "id": "c1"}]),
                AIMessage("done"),
            ]
        )
    )
    with warnings.catch_warnings():  # LangGraph's: create_react_agent moved to langchain.agents
        warnings.simplefilter("ignore")
        agent = lg.create_react_agent(model, [_weather], prompt="Be brief.", name="bot")
    recorder = Recorder()
    out = agent.invoke({"messages": [("user", "hi")]}, {"callbacks": [recorder]})
    assert [m.content for m in out["messages"]] == ["hi", "", "sf: sunny", "done"]
    user, system = ("human", "hi", None), ("system", "Be brief.", None)
    asked, said, answer = ("ai", "", "bot"), ("tool", "sf: sunny", "_weather"), ("ai", "done", "bot")
    first = {"messages": [user], "remaining_steps": 10006}
    second = {"messages": [user, asked, said], "remaining_steps": 10004}
    call = {"name": "_weather", "args": {"city": "sf"}, "id": "c1", "type": "tool_call"}
    events = [(e[0], e[1], e[2], e[3], e[4], _shown(e[6])) for e in recorder.events]
    events[13][5].pop("state")  # None on graphq's side: docs, "LangGraph differences"
    assert events == [
        ("on_chain_start", "bot", 0, None, [], {"messages": [["user", "hi"]]}),
        ("on_chain_start", "agent", 1, 0, ["graph:step:1"], first),
        ("on_chain_start", "call_model", 2, 1, ["seq:step:1"], first),
        ("on_chain_start", "RunnableSequence", 3, 1, ["seq:step:1"], first),
        ("on_chain_start", "Prompt", 4, 3, ["seq:step:1"], first),
        ("on_chain_end", None, 4, 3, ["seq:step:1"], [system, user]),
        ("on_chat_model_start", None, 5, 3, ["seq:step:2"], ["Be brief.", "hi"]),
        ("on_llm_end", None, 5, 3, ["seq:step:2"], ""),
        ("on_chain_end", None, 3, 1, ["seq:step:1"], asked),
        ("on_chain_end", None, 2, 1, ["seq:step:1"], {"messages": [asked]}),
        ("on_chain_start", "should_continue", 6, 1, ["seq:step:3"], {**first, "messages": [user, asked]}),
        ("on_chain_end", None, 6, 1, ["seq:step:3"], [("Send", "tools")]),
        ("on_chain_end", None, 1, 0, ["graph:step:1"], {"messages": [asked]}),
        (
            "on_chain_start",
            "tools",
            7,
            0,
            ["graph:step:2"],
            {"__type": "tool_call_with_context", "tool_call": call},
        ),
        ("on_chain_end", None, 7, 0, ["graph:step:2"], {"messages": [said]}),
        ("on_chain_start", "agent", 8, 0, ["graph:step:3"], second),
        ("on_chain_start", "call_model", 9, 8, ["seq:step:1"], second),
        ("on_chain_start", "RunnableSequence", 10, 8, ["seq:step:1"], second),
        ("on_chain_start", "Prompt", 11, 10, ["seq:step:1"], second),
        ("on_chain_end", None, 11, 10, ["seq:step:1"], [system, user, asked, said]),
        ("on_chat_model_start", None, 12, 10, ["seq:step:2"], ["Be brief.", "hi", "", "sf: sunny"]),
        ("on_llm_end", None, 12, 10, ["seq:step:2"], "done"),
        ("on_chain_end", None, 10, 8, ["seq:step:1"], answer),
        ("on_chain_end", None, 9, 8, ["seq:step:1"], {"messages": [answer]}),
        (
            "on_chain_start",
            "should_continue",
            13,
            8,
            ["seq:step:3"],
            {**second, "messages": [*second["messages"], answer]},
        ),
        ("on_chain_end", None, 13, 8, ["seq:step:3"], "__end__"),
        ("on_chain_end", None, 8, 0, ["graph:step:3"], {"messages": [answer]}),
        ("on_chain_end", None, 0, None, [], {"messages": [user, asked, said, answer]}),
    ]
