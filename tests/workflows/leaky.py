"""A workflow whose node fails with a message that quotes a Redis URL and a secret (tests of masking)."""

from __future__ import annotations

from typing import Any, TypedDict

from graphcore import START, StateGraph


class Leak(TypedDict, total=False):
    says: str


def leak(state: Leak) -> dict[str, Any]:
    raise RuntimeError(f"kaboom {state.get('says', '')}")


_g = StateGraph(Leak)
_g.add_node("leak", leak)
_g.add_edge(START, "leak")
leaky = _g.compile(name="leaky")
