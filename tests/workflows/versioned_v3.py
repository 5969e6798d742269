"""Release 3 of the ``versioned`` workflow (:mod:`tests.workflows.versioned`): node ``ask`` renamed
``review``, so a run paused at ``ask`` cannot go on (the upgrade check says so)."""

from __future__ import annotations

from typing import Any

from tests.workflows.versioned import State, asking, build, mark


def a(state: State) -> dict[str, Any]:
    return mark("v3", "a", state)


def review(state: State) -> dict[str, Any]:
    return asking("v3", state)


def c(state: State) -> dict[str, Any]:
    return mark("v3", "c", state)


versioned = build(a, review, c, asks="review")
