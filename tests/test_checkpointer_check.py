"""compile(checkpointer=...) takes an object with every CheckpointStore method, and refuses one without."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest

from graphcore import START, InMemorySaver, StateGraph
from graphcore.errors import CheckpointerError


class S(TypedDict):
    n: int


def _builder() -> StateGraph:
    builder = StateGraph(S)
    builder.add_node("a", lambda s: {"n": s["n"] + 1})
    builder.add_edge(START, "a")
    return builder


class FiveMethods:
    """A store of the protocol before get_writes_and_errors (get_state needs it for a failed step's tasks)."""

    def __init__(self) -> None:
        self.inner = InMemorySaver()

    def put(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner.put(*args, **kwargs)

    def get(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner.get(*args, **kwargs)

    def list(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner.list(*args, **kwargs)

    def put_writes(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner.put_writes(*args, **kwargs)

    def get_writes(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner.get_writes(*args, **kwargs)


def test_a_store_without_get_writes_and_errors_is_refused_at_compile() -> None:
    """Before: it compiled and ran, and get_state of a paused (or failed) thread raised AttributeError."""
    with pytest.raises(CheckpointerError) as info:
        _builder().compile(checkpointer=FiveMethods())  # type: ignore[arg-type]
    assert str(info.value) == (
        "Invalid checkpointer provided. Expected a graphq checkpoint store (such as "
        "graphcore.InMemorySaver()), True, False, or None. Received "
        f"{FiveMethods.__module__}.FiveMethods, which is not a checkpoint store (no get_writes_and_errors)"
    )


def test_a_store_with_every_method_runs_and_shows_its_state() -> None:
    class Full(FiveMethods):
        def get_writes_and_errors(self, *args: Any, **kwargs: Any) -> Any:
            return self.inner.get_writes_and_errors(*args, **kwargs)

    graph = _builder().compile(checkpointer=Full())
    config = {"configurable": {"thread_id": "t"}}
    assert graph.invoke({"n": 1}, config) == {"n": 2}
    state = graph.get_state(config)
    assert (state.values, state.next) == ({"n": 2}, ())
