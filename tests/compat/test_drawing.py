"""``app.get_graph()``: the nodes, edges and mermaid text LangGraph gives for the same graph."""

from __future__ import annotations

import importlib.util
import operator
from typing import Annotated, Any, Literal, TypedDict

import pytest

from tests.compat.conftest import Imports


class State(TypedDict):
    v: Annotated[list[str], operator.add]
    kind: str


def _node(name: str) -> Any:
    return lambda s: {"v": [name]}


def _edges(graph: Any) -> list[tuple[Any, ...]]:
    return [(e.source, e.target, e.data, e.conditional) for e in graph.edges]


STYLES = (
    "\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n"
    "\tclassDef last fill:#bfb6fc\n"
)
HEAD = "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n"


def _sequence(lg: Imports) -> Any:
    builder = lg.StateGraph(State)
    builder.add_node("a", _node("a"))
    builder.add_node("b", _node("b"))
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", lg.END)
    return builder.compile()


def test_a_sequence_has_start_its_nodes_and_end(lg: Imports) -> None:
    """LangGraph: a sequence's drawing has __start__, its nodes, __end__, plain edges in order."""
    graph = _sequence(lg).get_graph()
    assert list(graph.nodes) == ["__start__", "a", "b", "__end__"]
    assert [(n.id, n.name, n.metadata) for n in graph.nodes.values()][1] == ("a", "a", None)
    assert graph.nodes["__end__"].data is None
    assert _edges(graph) == [
        ("__start__", "a", None, False),
        ("a", "b", None, False),
        ("b", "__end__", None, False),
    ]


def test_a_sequences_mermaid_text(lg: Imports) -> None:
    """LangGraph: draw_mermaid() writes the front matter, stadium START/END classed first/last, the edges."""
    assert _sequence(lg).get_graph().draw_mermaid() == (
        HEAD + "\t__start__([<p>__start__</p>]):::first\n\ta(a)\n\tb(b)\n\t__end__([<p>__end__</p>]):::last\n"
        "\t__start__ --> a;\n\ta --> b;\n\tb --> __end__;\n" + STYLES
    )
    assert _sequence(lg).get_graph().draw_mermaid(with_styles=False) == (
        "graph TD;\n\t__start__ --> a;\n\ta --> b;\n\tb --> __end__;\n"
    )


def _path_map(lg: Imports) -> Any:
    builder = lg.StateGraph(State)
    for name in ("start", "p", "q", "fan"):
        builder.add_node(name, _node(name))
    builder.add_edge(lg.START, "start")
    builder.add_conditional_edges(
        "start", lambda s: "yes" if s["kind"] == "y" else "no", {"yes": "p", "no": "fan"}
    )
    builder.add_conditional_edges("fan", lambda s: ["p", "q"])
    builder.add_edge("p", lg.END)
    builder.add_edge("q", lg.END)
    return builder.compile()


def test_a_path_maps_keys_label_its_conditional_edges(lg: Imports) -> None:
    """LangGraph: path_map keys label dotted edges; a router without a path_map draws no edge (found by a
    new-user trial)."""
    app = _path_map(lg)
    assert app.invoke({"v": [], "kind": "n"}) == {"v": ["start", "fan", "p", "q"], "kind": "n"}
    graph = app.get_graph()
    assert sorted(graph.nodes) == ["__end__", "__start__", "fan", "p", "q", "start"]
    assert _edges(graph) == [
        ("__start__", "start", None, False),
        ("start", "fan", "no", True),
        ("start", "p", "yes", True),
        ("fan", "__end__", None, False),
        ("p", "__end__", None, False),
    ]
    assert graph.draw_mermaid() == (
        HEAD + "\t__start__(<p>__start__</p>)\n\tstart(start)\n\tp(p)\n\tq(q)\n\tfan(fan)\n"
        "\t__end__(<p>__end__</p>)\n\t__start__ --> start;\n\tstart -. &nbsp;no&nbsp; .-> fan;\n"
        "\tstart -. &nbsp;yes&nbsp; .-> p;\n\tfan --> __end__;\n\tp --> __end__;\n" + STYLES
    )


def test_a_join_draws_an_edge_from_each_source(lg: Imports) -> None:
    """LangGraph: add_edge(["a", "b"], "c") draws a -> c and b -> c, then c -> __end__."""
    builder = lg.StateGraph(State)
    for name in "abc":
        builder.add_node(name, _node(name))
    builder.add_edge(lg.START, "a")
    builder.add_edge(lg.START, "b")
    builder.add_edge(["a", "b"], "c")
    graph = builder.compile().get_graph()
    assert _edges(graph) == [
        ("__start__", "a", None, False),
        ("__start__", "b", None, False),
        ("a", "c", None, False),
        ("b", "c", None, False),
        ("c", "__end__", None, False),
    ]


def test_a_loop_with_end_in_its_literal_router(lg: Imports) -> None:
    """LangGraph: a router's Literal targets are dotted, unlabelled edges, END among them; breakpoints are
    node metadata (``__interrupt``), with add_node's metadata."""

    def route(s: State) -> Literal["a", "__end__"]:
        return "__end__"

    builder = lg.StateGraph(State)
    builder.add_node("a", _node("a"), metadata={"k": 1})
    builder.add_node("b", _node("b"))
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    builder.add_conditional_edges("b", route)
    graph = builder.compile(interrupt_before=["b"], interrupt_after=["b"]).get_graph()
    assert _edges(graph) == [
        ("__start__", "a", None, False),
        ("a", "b", None, False),
        ("b", "__end__", None, True),
        ("b", "a", None, True),
    ]
    assert {k: n.metadata for k, n in graph.nodes.items() if n.metadata} == {
        "a": {"k": 1},
        "b": {"__interrupt": "before,after"},
    }
    assert "\ta(a<hr/><small><em>k = 1</em></small>)\n" in graph.draw_mermaid()


def test_a_commands_destinations_are_dotted_edges(lg: Imports) -> None:
    """LangGraph: a node's ``-> Command[Literal[...]]`` targets (or destinations=) are dotted edges."""

    def a(s: State) -> Any:
        return lg.Command(goto="b")

    a.__annotations__["return"] = lg.Command[Literal["b", "__end__"]]  # each side's Command

    builder = lg.StateGraph(State)
    builder.add_node("a", a)
    builder.add_node("b", _node("b"))
    builder.add_edge(lg.START, "a")
    assert _edges(builder.compile().get_graph()) == [
        ("__start__", "a", None, False),
        ("a", "__end__", None, True),
        ("a", "b", None, True),
        ("b", "__end__", None, False),
    ]
    builder = lg.StateGraph(State)
    builder.add_node("a", lambda s: lg.Command(goto="b"), destinations=("b",))
    builder.add_node("b", _node("b"))
    builder.add_edge(lg.START, "a")
    assert _edges(builder.compile().get_graph())[1] == ("a", "b", None, True)


def _with_subgraph(lg: Imports) -> tuple[Any, Any]:
    inner = lg.StateGraph(State)
    inner.add_node("x", _node("x"))
    inner.add_node("y", _node("y"))
    inner.add_edge(lg.START, "x")
    inner.add_edge("x", "y")
    sub = inner.compile()
    builder = lg.StateGraph(State)
    builder.add_node("pre", _node("pre"))
    builder.add_node("sub", sub)
    builder.add_node("post", _node("post"))
    builder.add_edge(lg.START, "pre")
    builder.add_edge("pre", "sub")
    builder.add_edge("sub", "post")
    return builder.compile(), sub


def test_a_subgraph_is_one_node_without_xray(lg: Imports) -> None:
    """LangGraph: without xray a subgraph is one node whose data is the compiled subgraph."""
    app, sub = _with_subgraph(lg)
    graph = app.get_graph()
    assert list(graph.nodes) == ["__start__", "pre", "sub", "post", "__end__"]
    assert graph.nodes["sub"].data is sub
    assert _edges(graph)[1:3] == [("pre", "sub", None, False), ("sub", "post", None, False)]


@pytest.mark.parametrize("xray", [True, 1])
def test_xray_draws_a_subgraphs_own_nodes(lg: Imports, xray: Any) -> None:
    """LangGraph: xray replaces the subgraph node by its nodes (ids sub:x), its START/END trimmed, and
    draw_mermaid() boxes them in a ``subgraph`` block."""
    graph = _with_subgraph(lg)[0].get_graph(xray=xray)
    assert list(graph.nodes) == ["__start__", "pre", "post", "__end__", "sub:x", "sub:y"]
    assert (graph.nodes["sub:x"].id, graph.nodes["sub:x"].name) == ("sub:x", "x")
    assert _edges(graph) == [
        ("__start__", "pre", None, False),
        ("pre", "sub:x", None, False),
        ("sub:y", "post", None, False),
        ("post", "__end__", None, False),
        ("sub:x", "sub:y", None, False),
    ]
    assert graph.draw_mermaid() == (
        HEAD + "\t__start__([<p>__start__</p>]):::first\n\tpre(pre)\n\tpost(post)\n"
        "\t__end__([<p>__end__</p>]):::last\n\t__start__ --> pre;\n\tpre --> sub\\3ax;\n"
        "\tsub\\3ay --> post;\n"
        "\tpost --> __end__;\n\tsubgraph sub\n\tsub\\3ax(x)\n\tsub\\3ay(y)\n\tsub\\3ax --> sub\\3ay;\n\tend\n"
        + STYLES
    )


@pytest.mark.skipif(importlib.util.find_spec("grandalf") is not None, reason="grandalf is installed")
def test_draw_ascii_without_grandalf_names_it(lg: Imports) -> None:
    """LangGraph: draw_ascii() without the grandalf package raises ImportError saying to install it."""
    with pytest.raises(ImportError) as caught:
        _sequence(lg).get_graph().draw_ascii()
    assert str(caught.value) == "Install grandalf to draw graphs: `pip install grandalf`."


def test_images_need_a_renderer(lg: Imports) -> None:
    """LangGraph: draw_mermaid_png() calls the mermaid.ink web service (ValueError without network) and
    draw_png() needs pygraphviz (ImportError); graphq renders no images and names draw_mermaid()."""
    graph = _sequence(lg).get_graph()
    if lg.is_langgraph:  # its png would go to the network: only check the methods are there
        assert callable(graph.draw_mermaid_png) and callable(graph.draw_png)
        return
    with pytest.raises(ValueError) as png:
        graph.draw_mermaid_png()
    assert str(png.value) == (
        "draw_mermaid_png: graphq renders no images (LangGraph sends the mermaid text to the mermaid.ink web "
        "service or runs graphviz): draw the text with draw_mermaid() and render it with any mermaid tool"
    )
    with pytest.raises(ImportError, match=r"^draw_png: graphq renders no images .* draw_mermaid\(\)"):
        graph.draw_png()


# --------------------------------------------------------------------------------------------------------
# get_graph().to_json()


def _without_code_paths(drawn: dict[str, Any]) -> dict[str, Any]:
    """``to_json()`` with each node's ``data.id`` left out: LangGraph names its own wrapper class there."""
    nodes = [{**n, "data": {"name": n["data"]["name"]}} if "data" in n else n for n in drawn["nodes"]]
    return {"nodes": nodes, "edges": drawn["edges"]}


def test_to_json_gives_nodes_and_edges_in_langgraphs_shape(lg: Imports) -> None:
    """LangGraph: nodes {id, type, data: {id, name}, metadata?} (END only its id), edges {source, target,
    data?, conditional?}."""
    builder = lg.StateGraph(State)
    builder.add_node("a", _node("a"), metadata={"team": "t"})
    builder.add_node("b", _node("b"))
    builder.add_node("c", _node("c"))
    builder.add_edge(lg.START, "a")
    builder.add_conditional_edges("a", lambda s: "go", {"go": "b", "c": "c"})
    drawn = builder.compile(interrupt_before=["b"]).get_graph().to_json()
    runnable = {"type": "runnable"}
    assert _without_code_paths(drawn) == {
        "nodes": [
            {"id": "__start__", **runnable, "data": {"name": "__start__"}},
            {"id": "a", **runnable, "data": {"name": "a"}, "metadata": {"team": "t"}},
            {"id": "b", **runnable, "data": {"name": "b"}, "metadata": {"__interrupt": "before"}},
            {"id": "c", **runnable, "data": {"name": "c"}},
            {"id": "__end__"},
        ],
        "edges": [
            {"source": "__start__", "target": "a"},
            {"source": "a", "target": "b", "data": "go", "conditional": True},
            {"source": "a", "target": "c", "conditional": True},
            {"source": "b", "target": "__end__"},
            {"source": "c", "target": "__end__"},
        ],
    }
    code = [n["data"]["id"] for n in drawn["nodes"][:3]]
    if lg.is_langgraph:
        assert code == [["langgraph", "_internal", "_runnable", "RunnableCallable"]] * 3
    else:  # graphq names the node's own code
        lambda_path = [*_node.__module__.split("."), "_node.<locals>.<lambda>"]
        assert code == [["graphcore", "types", "START"], lambda_path, lambda_path]


def test_to_json_of_a_subgraph_node(lg: Imports) -> None:
    """LangGraph: a subgraph node is a runnable named after the node; graphq's code path is its class."""
    drawn = _with_subgraph(lg)[0].get_graph().to_json()
    assert [n["id"] for n in drawn["nodes"]] == ["__start__", "pre", "sub", "post", "__end__"]
    assert drawn["nodes"][2]["data"]["name"] == "sub"
    expected = ["langgraph", "graph", "state", "CompiledStateGraph"]
    if not lg.is_langgraph:
        expected = ["graphcore", "engine", "executor", "CompiledGraph"]
    assert drawn["nodes"][2]["data"]["id"] == expected
