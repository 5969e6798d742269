"""Workflow ``upgrade`` without channel ``notes``."""

from __future__ import annotations

import operator
from typing import Annotated, TypedDict

from tests.workflows.upgrade_v1 import build


class State(TypedDict, total=False):
    count: int
    items: Annotated[list[str], operator.add]


graph = build(State).compile(name="upgrade")
