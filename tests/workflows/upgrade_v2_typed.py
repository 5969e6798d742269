"""Workflow ``upgrade`` whose channel ``count`` holds a ``str`` instead of an ``int``."""

from __future__ import annotations

import operator
from typing import Annotated, TypedDict

from tests.workflows.upgrade_v1 import build


class State(TypedDict, total=False):
    count: str
    items: Annotated[list[str], operator.add]
    notes: str


graph = build(State).compile(name="upgrade")
