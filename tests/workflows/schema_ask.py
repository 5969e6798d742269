"""A workflow whose node asks with ``interrupt(value, response_schema=...)``
(tests/test_cli_response_schema.py).

``schema-asking``: ``ask`` asks ``"ok?"`` expecting a :class:`Decision` (``ok`` required, ``note`` not) and
keeps the answer's repr in ``items``.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from pydantic import BaseModel

from graphcore import START, StateGraph, interrupt


class Items(TypedDict, total=False):
    items: Annotated[list[str], operator.add]


class Decision(BaseModel):
    ok: bool
    note: str = ""


DECISION_SCHEMA = {
    "properties": {
        "ok": {"title": "Ok", "type": "boolean"},
        "note": {"default": "", "title": "Note", "type": "string"},
    },
    "required": ["ok"],
    "title": "Decision",
    "type": "object",
}
""":class:`Decision`'s JSON Schema, as pydantic makes it: what a request stores and shows."""


def ask(state: Items) -> dict[str, Any]:
    return {"items": [repr(interrupt("ok?", response_schema=Decision))]}


_g = StateGraph(Items)
_g.add_node("ask", ask)
_g.add_edge(START, "ask")
schema_asking = _g.compile(name="schema-asking")
