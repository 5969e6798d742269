"""The layered layout of a workflow's graph (graphq.console.diagram): ranks by longest path from START, rank
rows centred, edges straight to the next rank and around on the right otherwise, dashed when conditional."""

from __future__ import annotations

from typing import Any

from graphcore.engine.describe import describe
from graphcore.engine.registry import Registry
from graphq.console.diagram import GAP, HEIGHT, MARGIN, RANK_GAP, layout

REGISTRY = Registry.load(["tests.workflows.basic"])


def graph(nodes: list[str], *edges: tuple[str, list[str], list[str] | None]) -> dict[str, Any]:
    """A description with ``nodes`` and edges ``(kind, sources, targets)``."""
    return {
        "nodes": [{"name": n} for n in nodes],
        "edges": [{"kind": k, "sources": s, "targets": t, "router": None} for k, s, t in edges],
    }


def top(rank: int) -> float:
    return MARGIN + rank * (HEIGHT + RANK_GAP)


def test_ranks_are_the_longest_path_from_start_and_end_comes_last() -> None:
    d = layout(
        graph(
            ["a", "b", "c"],
            ("edge", ["__start__"], ["a"]),
            ("edge", ["a"], ["b"]),
            ("edge", ["b"], ["c"]),
            ("edge", ["__start__"], ["c"]),
            ("edge", ["a"], ["__end__"]),
            ("edge", ["c"], ["__end__"]),
        )
    )
    assert [(b.name, b.rank, b.y) for b in d.boxes] == [
        ("__start__", 0, top(0)),
        ("a", 1, top(1)),
        ("b", 2, top(2)),
        ("c", 3, top(3)),
        ("__end__", 4, top(4)),
    ]
    assert d.height == 2 * MARGIN + 5 * HEIGHT + 4 * RANK_GAP
    straight = {(a.source, a.target): a.around for a in d.arrows}
    assert straight == {
        ("__start__", "a"): False,
        ("a", "b"): False,
        ("b", "c"): False,
        ("__start__", "c"): True,  # skips ranks: around on the right, not through a and b
        ("a", "__end__"): True,
        ("c", "__end__"): False,
    }
    a, b = d.boxes[1], d.boxes[2]
    assert [x.path for x in d.arrows if (x.source, x.target) == ("a", "b")] == [
        f"M {a.cx:g} {a.y + HEIGHT:g} L {b.cx:g} {b.y:g}"
    ]


def test_a_rank_is_centred_and_its_nodes_keep_their_order() -> None:
    d = layout(
        graph(
            ["left", "right", "join"],
            ("edge", ["__start__"], ["left"]),
            ("edge", ["__start__"], ["right"]),
            ("join", ["left", "right"], ["join"]),
        )
    )
    boxes = {b.name: b for b in d.boxes}
    left, right = boxes["left"], boxes["right"]
    assert (left.rank, right.rank, boxes["join"].rank) == (1, 1, 2)
    assert left.x == MARGIN
    assert right.x == left.x + left.width + GAP
    widest = left.width + GAP + right.width
    assert boxes["__start__"].cx == MARGIN + widest / 2 == boxes["join"].cx
    assert [(a.source, a.target, a.dashed) for a in d.arrows] == [
        ("__start__", "left", False),
        ("__start__", "right", False),
        ("left", "join", False),
        ("right", "join", False),
    ]


def test_a_cycle_is_ranked_without_its_back_edge_which_curves_on_the_right() -> None:
    d = layout(
        graph(
            ["agent", "tools"],
            ("edge", ["__start__"], ["agent"]),
            ("conditional", ["agent"], ["tools", "__end__"]),
            ("edge", ["tools"], ["agent"]),
        )
    )
    assert [(b.name, b.rank) for b in d.boxes] == [
        ("__start__", 0),
        ("agent", 1),
        ("tools", 2),
        ("__end__", 3),
    ]
    back = [a for a in d.arrows if (a.source, a.target) == ("tools", "agent")]
    assert [(a.dashed, a.around) for a in back] == [(False, True)]
    tools, agent = d.boxes[2], d.boxes[1]
    lane = max(tools.x + tools.width, agent.x + agent.width) + 44 + 14  # after one other lane (agent→END)
    assert back[0].path == (
        f"M {tools.x + tools.width:g} {tools.cy:g} C {lane:g} {tools.cy:g}, {lane:g} {agent.cy:g}, "
        f"{agent.x + agent.width:g} {agent.cy:g}"
    )
    assert [(a.target, a.dashed) for a in d.arrows if a.source == "agent"] == [
        ("tools", True),
        ("__end__", True),
    ]


def test_a_self_loop_an_open_router_and_an_unreached_node() -> None:
    counter = layout(describe(REGISTRY.get("counter")))
    bump = counter.boxes[1]
    loop = [a for a in counter.arrows if a.source == a.target == "bump"]
    right = bump.x + bump.width
    assert [a.path for a in loop] == [
        f"M {right:g} {bump.cy - 8:g} C {right + 36:g} {bump.cy - 26:g}, {right + 36:g} {bump.cy + 26:g}, "
        f"{right:g} {bump.cy + 8:g}"
    ]
    fanout = layout(describe(REGISTRY.get("fanout")))  # START's router returns Send: no path_map
    assert fanout.open_routers == ["__start__"]
    assert [(b.name, b.rank) for b in fanout.boxes] == [("__start__", 0), ("square", 1), ("total", 2)]
    assert [(a.source, a.target) for a in fanout.arrows] == [("square", "total")]


def test_labels_are_kept_as_text_for_the_template_to_escape() -> None:
    d = layout(graph(["<b>x</b>"], ("edge", ["__start__"], ["<b>x</b>"])))
    assert [b.label for b in d.boxes] == ["START", "<b>x</b>"]
