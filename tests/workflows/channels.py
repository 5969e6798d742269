"""Workflows of the LangGraph channel tests (tests/compat/test_channels.py); module-level, so workers
import them. Built from the ``lg`` names of either side (:func:`build`); the module's graphs are graphq's.

``untracked``: ``a`` writes the untracked key ``scratch`` (and ``d``), ``b`` logs what it sees of it, then
``c`` asks a question (``interrupt``) and logs what it sees after the answer. ``d`` is a
:class:`DeltaChannel` list that ``a`` and ``b`` append to.

``paused`` (:func:`build_paused`): ``a`` writes ``scratch`` while ``b``, in the same super-step, asks a
question; after the answer ``c`` logs what it sees of ``scratch``, then sends ``{"scratch": "sent"}`` to
``d``, which logs it.
"""

import operator
from collections.abc import Sequence
from typing import Annotated, Any

from typing_extensions import TypedDict

import graphcore


def concat(value: list[str], writes: Sequence[list[str]]) -> list[str]:
    """A batch reducer (LangGraph's ``DeltaChannel`` form): every write's items after ``value``'s."""
    return [*value, *(item for write in writes for item in write)]


def build(lg: Any, checkpointer: Any = None, *, ask: bool = True) -> Any:
    """The ``untracked`` graph (see the module docstring) from ``lg``'s names; ``ask``: with node ``c``."""

    class State(TypedDict, total=False):
        log: Annotated[list[str], operator.add]
        scratch: Annotated[str, lg.UntrackedValue]
        d: Annotated[list[str], lg.DeltaChannel(concat)]

    def a(state: State) -> dict[str, Any]:
        return {"scratch": "tmp", "log": ["a"], "d": ["x"]}

    def b(state: State) -> dict[str, Any]:
        return {"log": [f"b saw {state.get('scratch')}"], "d": ["y"]}

    def c(state: State) -> dict[str, Any]:
        answer = lg.interrupt("q")
        return {"log": [f"c saw {state.get('scratch')} and {answer}"]}

    builder = lg.StateGraph(State)
    builder.add_node("a", a)
    builder.add_node("b", b)
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    if ask:
        builder.add_node("c", c)
        builder.add_edge("b", "c")
    return builder.compile(checkpointer=checkpointer, name="untracked")


def build_paused(lg: Any, checkpointer: Any = None) -> Any:
    """The ``paused`` graph (see the module docstring) from ``lg``'s names."""

    class State(TypedDict, total=False):
        log: Annotated[list[str], operator.add]
        scratch: Annotated[str, lg.UntrackedValue]

    def a(state: State) -> dict[str, Any]:
        return {"scratch": "tmp", "log": ["a"]}

    def b(state: State) -> dict[str, Any]:
        return {"log": [f"b {lg.interrupt('q')}"]}

    def c(state: State) -> dict[str, Any]:
        return {"log": [f"c saw {state.get('scratch')}"]}

    def d(state: State) -> dict[str, Any]:
        return {"log": [f"d got {state.get('scratch')}"]}

    builder = lg.StateGraph(State)
    for name, node in (("a", a), ("b", b), ("c", c), ("d", d)):
        builder.add_node(name, node)
    builder.add_edge(lg.START, "a")
    builder.add_edge(lg.START, "b")
    builder.add_edge(["a", "b"], "c")
    builder.add_conditional_edges("c", lambda state: [lg.Send("d", {"log": [], "scratch": "sent"})])
    return builder.compile(checkpointer=checkpointer, name="paused")


untracked = build(graphcore, ask=False)
paused = build_paused(graphcore)
