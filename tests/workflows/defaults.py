"""Workflows of the state-defaults queue tests (tests/test_state_defaults_queue.py); module-level, so
workers import them.

``defaults``: a pydantic state whose ``extra`` and ``items`` defaults fill the model the node sees (not the
state), and a reducer field ``log`` with a default that starts from ``[]`` as LangGraph's does. ``jokes``: a
TypedDict state whose reducer key ``jokes`` has a value (``[]``) before the keys declared ahead of it.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from pydantic import BaseModel, Field

from graphcore import END, START, StateGraph


class Doc(BaseModel):
    q: str
    extra: str = "dflt"
    items: list[str] = []
    log: Annotated[list[str], operator.add] = Field(default_factory=lambda: ["ignored"])


def _exclaim(s: Doc) -> dict[str, Any]:
    return {"q": s.q + "!" + s.extra, "log": [f"items={s.items}"]}


_doc = StateGraph(Doc)
_doc.add_node("exclaim", _exclaim)
_doc.add_edge(START, "exclaim")
_doc.add_edge("exclaim", END)
defaults = _doc.compile(name="defaults")


class Jokes(TypedDict):
    subjects: list[str]
    jokes: Annotated[list[str], operator.add]
    best: str


_jokes = StateGraph(Jokes)
_jokes.add_node("gen", lambda s: {"subjects": ["a", "b"]})
_jokes.add_node("joke", lambda s: {"jokes": [f"joke {x}" for x in s["subjects"]]})
_jokes.add_node("pick", lambda s: {"best": s["jokes"][-1]})
_jokes.add_edge(START, "gen")
_jokes.add_edge("gen", "joke")
_jokes.add_edge("joke", "pick")
jokes = _jokes.compile(name="jokes")
