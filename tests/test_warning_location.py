"""graphq's warnings point at the user's line (graphcore.errors.warn_caller), not into graphcore."""

from __future__ import annotations

import operator
import warnings
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

from graphcore import END, START, Command, InMemorySaver, StateGraph


class S(TypedDict):
    log: Annotated[list[str], operator.add]


def _app() -> Any:
    g = StateGraph(S)
    g.add_node("a", lambda s: {"log": ["a"]})
    g.add_edge(START, "a")
    g.add_edge("a", END)
    return g.compile(checkpointer=InMemorySaver())


CONFIG = {"configurable": {"thread_id": "t"}}


@pytest.mark.parametrize(
    ("call", "text"),
    [
        (lambda app: app.invoke({"log": []}, CONFIG, bogus=1), "invoke() ignores unknown keyword"),
        (lambda app: list(app.stream({"log": []}, CONFIG, stream_mode="valus")), "unknown stream mode"),
        (lambda app: app.update_state(CONFIG, {"zz": 1}), "update_state: node 'a' wrote unknown"),
        (lambda app: app.invoke(Command(resume=1), CONFIG), "Command(resume=...) on thread 't'"),
        (lambda app: app.invoke({"log": []}, CONFIG, durability="x"), "durability='x' is not one of"),
    ],
)
def test_a_warning_names_the_callers_line(call: Any, text: str) -> None:
    app = _app()
    app.invoke({"log": []}, CONFIG)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call(app)
    found = [w for w in caught if str(w.message).startswith(text)]
    assert len(found) == 1
    assert found[0].filename == __file__
