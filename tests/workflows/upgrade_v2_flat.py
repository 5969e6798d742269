"""Workflow ``upgrade_nested`` whose node ``inner`` is a function instead of a subgraph."""

from __future__ import annotations

from typing import Any

from tests.workflows.upgrade_v1 import inner_ask, nested


def flat(state: Any) -> dict[str, Any]:
    return inner_ask(state)


nested_graph = nested(flat).compile(name="upgrade_nested")
