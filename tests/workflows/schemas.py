"""Workflows of the state-schema queue tests (tests/test_schemas_queue.py); module-level, so workers import
them.

``root-list``: a root-channel state ``Annotated[list, operator.add]`` (each node appends). ``root-int``: a
root ``int`` state (each node returns the new value). ``narrowed``: input schema ``In`` (question), output
schema ``Out`` (answer), a private channel ``secret`` declared only by node ``b``'s input schema, and node
``a`` sees only ``In``'s keys. ``deferred``: a deferred join of a short and a long branch (it runs once,
last). ``injected``: a node taking ``config`` and ``writer``, and a router taking ``config``.
``contextual``: a node reading its run context (a dataclass ``Ctx``, the graph's ``context_schema``) through
``runtime``. ``misspelt``: a node returning a key that is no channel (``lgo``) beside ``log``.
``undeclared``: node ``b`` reached only by an undeclared ``Command(goto="b")`` (it compiles with a warning).
``dataclass-state``: a dataclass state schema ``Point``.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

from graphcore import END, START, Command, Runtime, StateGraph


def _append(name: str) -> Any:
    return lambda s: [name, len(s)]


_root = StateGraph(Annotated[list, operator.add])
_root.add_node("a", _append("a"))
_root.add_node("b", _append("b"))
_root.add_edge(START, "a")
_root.add_edge("a", "b")
root_list = _root.compile(name="root-list")

_int = StateGraph(int)
_int.add_node("inc", lambda n: n + 1)
_int.add_node("double", lambda n: n * 2)
_int.add_edge(START, "inc")
_int.add_edge("inc", "double")
root_int = _int.compile(name="root-int")


class Overall(TypedDict, total=False):
    question: str
    answer: str
    notes: str


class In(TypedDict):
    question: str


class Out(TypedDict):
    answer: str


class Private(TypedDict):
    secret: str


def a(state: In) -> dict[str, str]:
    return {"notes": ",".join(sorted(state)), "secret": state["question"][::-1]}


def b(state: Private) -> dict[str, str]:
    return {"answer": f"{sorted(state)}:{state['secret']}"}


_narrow = StateGraph(Overall, input_schema=In, output_schema=Out)
_narrow.add_node("a", a)
_narrow.add_node("b", b)
_narrow.add_edge(START, "a")
_narrow.add_edge("a", "b")
_narrow.add_edge("b", END)
narrowed = _narrow.compile(name="narrowed")


class Log(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def _say(name: str) -> Any:
    return lambda s: {"log": [name]}


_defer = StateGraph(Log)
for _name in ("a", "a2", "a3", "b"):
    _defer.add_node(_name, _say(_name))
_defer.add_node("join", lambda s: {"log": [f"join:{len(s['log'])}"]}, defer=True)
_defer.add_edge(START, "a")
_defer.add_edge("a", "a2")
_defer.add_edge("a2", "a3")
_defer.add_edge("a3", "join")
_defer.add_edge(START, "b")
_defer.add_edge("b", "join")
deferred = _defer.compile(name="deferred")


def who(state: Log, config, writer) -> dict[str, list[str]]:
    writer({"who": config["configurable"]["user"]})
    return {"log": [config["configurable"]["user"], config["metadata"]["team"]]}


def route(state: Log, config) -> str:
    return "again" if config["configurable"].get("twice") else END


_inject = StateGraph(Log)
_inject.add_node("who", who, metadata={"team": "red"})
_inject.add_node("again", _say("again"))
_inject.add_edge(START, "who")
_inject.add_conditional_edges("who", route)
injected = _inject.compile(name="injected")


@dataclass
class Ctx:
    user: str
    n: int = 1


def greet(state: Log, runtime: Runtime[Ctx]) -> dict[str, list[str]]:
    return {"log": [f"{runtime.context.user}:{runtime.context.n}", type(runtime.context).__name__]}


_context = StateGraph(Log, context_schema=Ctx)
_context.add_node("greet", greet)
_context.add_edge(START, "greet")
contextual = _context.compile(name="contextual")


_misspelt = StateGraph(Log)
_misspelt.add_node("typo", lambda s: {"log": ["typo"], "lgo": ["lost"]})
_misspelt.add_edge(START, "typo")
misspelt = _misspelt.compile(name="misspelt")


_undeclared = StateGraph(Log)
_undeclared.add_node("a", lambda s: Command(update={"log": ["a"]}, goto="b"))
_undeclared.add_node("b", _say("b"))
_undeclared.add_edge(START, "a")
undeclared = _undeclared.compile(name="undeclared")


@dataclass
class Point:
    """``dataclass-state``: a dataclass state schema (node ``move`` receives a ``Point``, defaults filled)."""

    trail: Annotated[list[str], operator.add] = field(default_factory=list)
    x: int = 0
    label: str = "p"


def move(state: Point) -> dict[str, Any]:
    return {"trail": [f"{type(state).__name__}:{state.label}:{state.x}"], "x": state.x + 1}


_point = StateGraph(Point)
_point.add_node("move", move)
_point.add_edge(START, "move")
dataclass_state = _point.compile(name="dataclass-state")
