"""Workflows of the LangGraph channel tests (tests/compat/test_channels.py); module-level, so workers
import them. Built from the ``lg`` names of either side (:func:`build`); the module's graphs are graphq's.

``untracked``: ``a`` writes the untracked key ``scratch`` (and ``d``), ``b`` logs what it sees of it, then
``c`` asks a question (``interrupt``) and logs what it sees after the answer. ``d`` is a
:class:`DeltaChannel` list that ``a`` and ``b`` append to.
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


untracked = build(graphcore, ask=False)
