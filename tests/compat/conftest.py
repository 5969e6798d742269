"""The ``lg`` fixture: one case runs with LangGraph's imports and with graphq's.

A case takes ``lg`` and builds its graph from ``lg.StateGraph``, ``lg.START``, ``lg.interrupt``, ... — the
names of :data:`tests.compat.imports.NAMES`, imported from LangGraph's module or from graphq's. The LangGraph
run is skipped when LangGraph is not installed (it is in the ``test`` extra that ``make test`` installs).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
from collections.abc import Iterator
from typing import Any

import pytest

from tests.compat.imports import NAMES


class Imports:
    """The names a LangGraph program imports, from one side of the map.

    Attributes:
        side: ``"langgraph"`` or ``"graphq"``.
    """

    def __init__(self, side: str) -> None:
        self.side = side

    @property
    def is_langgraph(self) -> bool:
        return self.side == "langgraph"

    @contextlib.contextmanager
    def graphq_warns(self, match: str) -> Iterator[None]:
        """Where graphq warns of what LangGraph takes silently (a typo it accepts): on graphq's side a
        UserWarning whose message matches ``match``; on LangGraph's nothing is asserted."""
        if self.is_langgraph:
            yield
            return
        with pytest.warns(UserWarning, match=match):
            yield

    def __getattr__(self, name: str) -> Any:
        if name not in NAMES:
            raise AttributeError(f"{name!r} is not in the import map (tests/compat/imports.py)")
        source, target = NAMES[name]
        return getattr(importlib.import_module(source if self.is_langgraph else target), name)

    def __repr__(self) -> str:
        return self.side


@pytest.fixture(params=["langgraph", "graphq"])
def lg(request: pytest.FixtureRequest) -> Imports:
    if request.param == "langgraph":
        pytest.importorskip("langgraph", reason="LangGraph is not installed (pip install -e '.[test]')")
    return Imports(request.param)


def streamed(graph: Any, given: Any, run_async: bool, **kwargs: Any) -> list[Any]:
    """The items of ``graph.stream(given, **kwargs)``, or of ``astream`` (run to its end) when
    ``run_async``."""
    if not run_async:
        return list(graph.stream(given, **kwargs))

    async def items_of() -> list[Any]:
        return [item async for item in graph.astream(given, **kwargs)]

    return asyncio.run(items_of())
