"""Workflow ``upgrade`` whose channel ``items`` folds its writes with another reducer (newest first)."""

from __future__ import annotations

from typing import Annotated, TypedDict

from tests.workflows.upgrade_v1 import build


def newest_first(value: list[str], write: list[str]) -> list[str]:
    return write + value


class State(TypedDict, total=False):
    count: int
    items: Annotated[list[str], newest_first]
    notes: str


graph = build(State).compile(name="upgrade")
