"""Managed values: state keys the run computes for each super-step instead of storing them, as LangGraph's
``langgraph.managed``.

``remaining_steps: RemainingSteps`` is the number of super-steps the run may still take, this one included:
a node of the run's k-th super-step (k from 1, counted per ``invoke``/``stream`` call in process and per
run on the queue) sees ``max_super_steps + 1 - k`` (LangGraph's ``recursion_limit - k``), so the last
allowed super-step sees 1. ``is_last_step: IsLastStep`` is True in that last super-step. A call that
applies no input (an answer, on the queue the steps after one; ``invoke(None)``) counts from 2 more, as
LangGraph's (:func:`graphcore.engine.config.budget_from`).

A managed key is no channel: nodes and routers read it, but it is never checkpointed, a write to it is
ignored, and it is in neither the run's result nor its ``values`` events.
"""

from __future__ import annotations

import typing
from typing import Annotated, Any

from graphcore.types import unwrap_required

__all__ = [
    "IsLastStep",
    "IsLastStepManager",
    "ManagedValue",
    "RemainingSteps",
    "RemainingStepsManager",
    "managed_of",
]


class ManagedValue:
    """A managed value's kind: :meth:`get` computes it from the super-steps left."""

    @staticmethod
    def get(remaining: int) -> Any:
        """The value in a super-step that leaves ``remaining`` super-steps to the run (this one included,
        at least 1)."""
        raise NotImplementedError


class RemainingStepsManager(ManagedValue):
    """The super-steps left, this one included (an int, 1 in the last allowed super-step)."""

    @staticmethod
    def get(remaining: int) -> int:
        return remaining


class IsLastStepManager(ManagedValue):
    """Whether this super-step is the last the run may take (a bool)."""

    @staticmethod
    def get(remaining: int) -> bool:
        return remaining == 1


RemainingSteps = Annotated[int, RemainingStepsManager]
"""A state key annotated with it holds the super-steps left (see the module docstring)."""

IsLastStep = Annotated[bool, IsLastStepManager]
"""A state key annotated with it is True in the run's last allowed super-step."""


def managed_of(annotation: Any) -> type[ManagedValue] | None:
    """The managed value kind of a state key's annotation (``RemainingSteps``, ``IsLastStep``, also inside
    ``NotRequired[...]`` / ``Required[...]``), or None for a channel."""
    annotation = unwrap_required(annotation)
    if typing.get_origin(annotation) is not Annotated:
        return None
    return next(
        (m for m in typing.get_args(annotation)[1:] if isinstance(m, type) and issubclass(m, ManagedValue)),
        None,
    )
