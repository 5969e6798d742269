"""Workflows whose state declares types, for the input checks at enqueue (``graphcore.engine.inputs``)."""

from __future__ import annotations

import operator
from datetime import datetime
from enum import Enum
from typing import Annotated, Any, TypedDict

from pydantic import BaseModel, field_validator

from graphcore import START, StateGraph


class Color(Enum):
    RED = "red"
    GREEN = "green"


class Typed(TypedDict, total=False):
    amount: int
    ratio: float
    flag: bool
    when: datetime
    color: Color
    nested: dict[str, list[int]]
    tags: Annotated[list[str], operator.add]
    best: Annotated[int, max]
    anything: Any
    seen: str


def describe(state: Typed) -> dict[str, Any]:
    return {"seen": ", ".join(f"{k}={type(v).__name__}" for k, v in sorted(state.items()) if k != "seen")}


_t = StateGraph(Typed)
_t.add_node("describe", describe)
_t.add_edge(START, "describe")
typed = _t.compile(name="typed")


class Priced(BaseModel):
    amount: int
    currency: str = "EUR"
    note: str = ""

    @field_validator("currency")
    @classmethod
    def _three_letters(cls, value: str) -> str:
        if len(value) != 3:
            raise ValueError("a currency is three letters")
        return value


def price(state: Priced) -> dict[str, Any]:
    return {"note": f"{state.amount} {state.currency}"}


_p = StateGraph(Priced)
_p.add_node("price", price)
_p.add_edge(START, "price")
priced = _p.compile(name="priced")
