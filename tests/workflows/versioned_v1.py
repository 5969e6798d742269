"""Release 1 of the ``versioned`` workflow (:mod:`tests.workflows.versioned`)."""

from __future__ import annotations

from typing import Any

from tests.workflows.versioned import State, asking, build, mark


def a(state: State) -> dict[str, Any]:
    return mark("v1", "a", state)


def ask(state: State) -> dict[str, Any]:
    return asking("v1", state)


def c(state: State) -> dict[str, Any]:
    return mark("v1", "c", state)


versioned = build(a, ask, c)
