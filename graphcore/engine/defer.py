"""Deferred nodes (LangGraph's ``add_node(..., defer=True)``): a node that runs only when nothing else is
pending, e.g. the join of map-reduce branches of different lengths.

An edge, a router, a ``Command(goto=...)`` or a join that triggers a deferred node does not schedule it:
the node is held (in the checkpoint's ``barriers`` under :data:`HELD`, so a queued run keeps it from one
step job to the next) until a step would start with no other node triggered by an edge, a router or a
goto. It then runs in that step (once, however often it was triggered), alongside any pending ``Send``
tasks, as LangGraph's deferred channels become available only at that "finish". A ``Send`` to a deferred
node is not held (as in LangGraph).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from graphcore.types import PendingTask

__all__ = ["HELD", "hold"]

HELD = "__deferred__"
"""The ``barriers`` entry listing the deferred nodes triggered and not run yet, in trigger order."""


def hold(
    deferred: frozenset[str], tasks: Sequence[PendingTask], barriers: Mapping[str, list[str]]
) -> tuple[list[PendingTask], dict[str, list[str]]]:
    """The next step's tasks and barriers once deferred nodes are held or released.

    Args:
        deferred: the graph's deferred nodes.
        tasks: the tasks the step's edges, routers, gotos and joins scheduled (each node once).
        barriers: the barrier state after the step (``HELD`` as the previous step left it).

    Returns:
        The tasks to run, and the barriers with ``HELD`` updated (absent when nothing is held).
    """
    held = list(barriers.get(HELD, ()))
    now: list[PendingTask] = []
    for pending in tasks:
        if pending.send or pending.node not in deferred:
            now.append(pending)
        elif pending.node not in held:
            held.append(pending.node)
    state = {key: list(done) for key, done in barriers.items() if key != HELD}
    if held and all(pending.send for pending in now):  # nothing else triggered: the run would finish
        return [*now, *(PendingTask(node) for node in held)], state
    if held:
        state[HELD] = held
    return now, state
