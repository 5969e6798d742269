"""Static breakpoints (LangGraph's ``interrupt_before`` / ``interrupt_after``): a run stops between two
super-steps, its state saved, and continues when it is invoked again without input.

Semantics follow LangGraph 1.x:

* ``interrupt_before``: the run stops before a super-step whose tasks include one of the nodes (``"*"``: any
  node); ``interrupt_after``: after a super-step that ran one of them.
* The first super-step of a run that continues a thread (no input: ``invoke(None, config)``, an answer
  ``Command(resume=...)``) passes the breakpoint it stopped at: it does not stop there again.
* Per call (``invoke(..., interrupt_before=[...])``) the given list replaces the compiled one; a name there
  that is no node is ignored (with a UserWarning). At ``compile`` it is refused (InvalidGraphError).
* A graph run inside a node (a subgraph node, ``inner.invoke(...)``) that stops at one of its breakpoints
  stops its node, and so its parent run, at the root too (the stop is shown there as ``{"__interrupt__":
  ()}``); when the run goes on, the node runs again and its graph, continuing where it stopped, passes it.

Both loops use :meth:`Breakpoints.stop`: the in-process executor before each super-step (and once after the
last), the step job before the step it runs (an ``interrupt_after`` stop is seen on the checkpoint the
step after it starts from: the nodes its step ran are in its metadata ``writes``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Literal

from graphcore.checkpoints.model import Checkpoint
from graphcore.errors import InvalidGraphError, warn_caller
from graphcore.types import START, Stop, TaskWrites

__all__ = ["ALL", "NO_BREAKPOINTS", "Breakpoints", "Stop", "nodes_of", "stop_of"]

ALL = "*"
"""Every node."""

Nodes = tuple[str, ...] | Literal["*"]
"""Breakpoint nodes: names, or ``"*"``."""


def nodes_of(
    value: Sequence[str] | str | None, nodes: Collection[str], what: str, *, strict: bool = True
) -> Nodes:
    """``interrupt_before`` / ``interrupt_after`` as given (names, one name, ``"*"`` or None) as a tuple of
    node names or ``"*"``. A name that is no node of the graph is refused when ``strict`` (``compile``, as
    LangGraph's), else left out with a UserWarning (a call's, which LangGraph ignores).

    Raises:
        InvalidGraphError: an unknown name when ``strict`` (naming ``what`` and the names).
    """
    if value is None:
        return ()
    if value == ALL:
        return "*"
    names = (value,) if isinstance(value, str) else tuple(value)
    unknown = [n for n in names if n not in nodes]
    if unknown and strict:
        raise InvalidGraphError(f"{what}: unknown node(s) {unknown}; nodes: {sorted(nodes)}")
    if unknown:
        warn_caller(f"{what}: unknown node(s) {unknown} never stop the run; nodes: {sorted(nodes)}")
    return tuple(n for n in names if n in nodes)


@dataclass(frozen=True)
class Breakpoints:
    """A run's static breakpoints (empty: falsy)."""

    before: Nodes = ()
    after: Nodes = ()

    def __bool__(self) -> bool:
        return bool(self.before or self.after)

    def stop(self, cp: Checkpoint, passed: bool) -> Stop | None:
        """Whether the run stops at ``cp`` before running its next tasks.

        Args:
            cp: the checkpoint the next super-step starts from.
            passed: ``cp`` is where the run continues (it stopped there or it continues the thread there):
                no breakpoint stops it.

        Returns:
            The stop, an ``after`` one first; None to go on.
        """
        if passed:
            return None
        ran = (cp.metadata.get("writes") or []) if cp.metadata.get("source") == "loop" else []
        ran = [node for node in ran if node != START]  # the input applied: no node ran
        after = _matching(self.after, ran)
        if after:
            return Stop("after", after)
        before = _matching(self.before, [t.node for t in cp.next_tasks])
        return Stop("before", before) if before and cp.next_tasks else None

    def with_call(
        self, before: Sequence[str] | str | None, after: Sequence[str] | str | None, nodes: Collection[str]
    ) -> Breakpoints:
        """These breakpoints with a call's own (``invoke(..., interrupt_before=...)``), which replace them
        when given (as LangGraph's do); an unknown node name is ignored, as LangGraph's, with a
        UserWarning."""
        if not before and not after:
            return self
        return Breakpoints(
            nodes_of(before, nodes, "interrupt_before", strict=False) if before else self.before,
            nodes_of(after, nodes, "interrupt_after", strict=False) if after else self.after,
        )


NO_BREAKPOINTS = Breakpoints()


def stop_of(results: Sequence[TaskWrites]) -> Stop | None:
    """Where a graph that one of a step's tasks ran stopped at a breakpoint (the first such task's), None
    when none did: the step stops there."""
    return next((r.stopped for r in results if r.stopped is not None), None)


def _matching(nodes: Nodes, names: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(n for n in names if nodes == ALL or n in nodes))
