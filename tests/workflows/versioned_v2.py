"""Release 2 of the ``versioned`` workflow (:mod:`tests.workflows.versioned`)."""

from __future__ import annotations

from typing import Any

from tests.workflows.versioned import State, asking, build, mark


def a(state: State) -> dict[str, Any]:
    return mark("v2", "a", state)


def ask(state: State) -> dict[str, Any]:
    return asking("v2", state)


def c(state: State) -> dict[str, Any]:
    return mark("v2", "c", state)


versioned = build(a, ask, c)
