"""A workflow with a node no edge reaches (``c``: only a ``Command(goto=...)`` could go there): compiling it
logs the compile notice of graphcore.engine.validate (tests/test_cli_compile_notices.py)."""

from __future__ import annotations

import operator
from typing import Annotated

from typing_extensions import TypedDict

from graphcore import END, START, StateGraph


class State(TypedDict):
    log: Annotated[list[str], operator.add]


builder = StateGraph(State)
builder.add_node("a", lambda state: {"log": ["a"]})
builder.add_node("c", lambda state: {"log": ["c"]})
builder.add_edge(START, "a")
builder.add_edge("a", END)
unreached = builder.compile(name="unreached")
