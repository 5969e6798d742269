"""A run's step timeline, read from its event stream (stream ids are milliseconds of Redis's clock).

Each super-step the run worked is a :class:`Step`: the nodes that wrote (``updates`` events), the retries
of its nodes (``retry`` events), how it ended (its checkpoint, ``values``; or a status: awaiting_input,
failed, canceled, completed), and when. A step's span runs from the event before it — the previous
checkpoint, or the run's ``running`` status as its step job was first taken (leased) — to its checkpoint:
it holds the step job's time in the queue and its run. The events do not say which worker leased each
step: the run record's ``worker`` is the last one that held the run.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from graphcore.backend.events import Event

__all__ = ["Step", "timeline"]

_STOPS = frozenset({"awaiting_input", "failed", "canceled", "completed"})


@dataclass
class Step:
    """One super-step of a run, as its events tell it.

    Attributes:
        step: the thread's super-step number.
        began_ms: when it could begin: the previous checkpoint, or the run's ``running`` status (ms since
            the epoch).
        ended_ms: when its checkpoint (or its stop) was written; None while it runs.
        nodes: the nodes that wrote in it, in the order their updates came.
        retries: how many times a node of it was retried.
        checkpoint_id: the checkpoint it made, if any.
        outcome: ``checkpoint``; ``asked`` (a node asked a human); or the status the run stopped with in
            it (awaiting_input, failed, canceled, completed); "" while it runs.
    """

    step: int
    began_ms: int
    ended_ms: int | None = None
    nodes: list[str] = field(default_factory=list)
    retries: int = 0
    checkpoint_id: str | None = None
    outcome: str = ""

    @property
    def duration_ms(self) -> int | None:
        """From :attr:`began_ms` to :attr:`ended_ms` (queue wait and run); None while it runs."""
        return None if self.ended_ms is None else self.ended_ms - self.began_ms


def timeline(events: Iterable[Event]) -> list[Step]:
    """The super-steps the run worked, in order (see the module docstring); a step that asked a human and
    ran again once answered is two rows: the one that stopped (``awaiting_input``) and the one after.

    Args:
        events: the run's events, oldest first (:func:`graphcore.backend.events.read_events`).
    """
    rows: list[Step] = []
    steps: dict[int, Step] = {}  # the row each step number adds to now
    mark: int | None = None  # when the next step could begin
    for event in events:
        data = event.data if isinstance(event.data, dict) else {}
        at = int(event.id.split("-")[0])
        status = data.get("status") if event.mode == "status" else None
        if status == "running":
            mark = at  # a step job taken: a step that stopped (asked) and goes on is a row of its own
            steps = {n: one for n, one in steps.items() if one.outcome not in _STOPS}
            continue
        if event.mode == "values" and event.step not in steps:
            mark = at  # the input's checkpoint: no node ran
            continue
        if event.mode not in ("updates", "retry", "values", "interrupt") and status not in _STOPS:
            continue
        if event.step not in steps:
            steps[event.step] = Step(event.step, at if mark is None else mark)
            rows.append(steps[event.step])
        one = steps[event.step]
        if event.mode == "values":
            one.ended_ms, one.checkpoint_id, one.outcome = at, data.get("checkpoint_id"), "checkpoint"
            mark = at
        else:
            _note(one, event.mode, data, at)
    return rows


def _note(one: Step, mode: str, data: dict[str, Any], at: int) -> None:
    """What an ``updates``, ``retry``, ``interrupt`` or stopping ``status`` event says of its step."""
    if mode == "updates":
        one.nodes += [str(node) for node in data]
    elif mode == "retry":
        one.retries += 1
    elif mode == "interrupt":
        one.outcome = "asked"
    else:
        one.ended_ms = one.ended_ms or at
        one.outcome = str(data["status"])
