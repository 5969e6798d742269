"""Why a run cannot be resumed: the refusals of :meth:`graphcore.backend.client.Client.resume`, each one
line naming the run, what it is doing and the command that does apply to it (R14, static breakpoints).

``resume`` continues an ended run's thread in a new run, or lets a run stopped at a static breakpoint go
on. It refuses a run waiting for an answer (``interrupt()``: ``graphq runs answer`` continues it), a run
already let past its breakpoint (a second resume of one stop, also when two race), and a completed run
whose thread has nothing left to run (its latest checkpoint has no next tasks: the new run could only be
empty). A failed or canceled run is resumed even then: its new run completes with the thread's result. It
refuses an ended run whose thread has a newer run too (the thread went on from there: resume that one).
"""

from __future__ import annotations

from graphcore.backend.runs import RunRecord, RunStatus
from graphcore.checkpoints.model import Checkpoint
from graphcore.errors import InvalidUpdateError

__all__ = ["gone_on", "newer_run", "not_ended", "nothing_left"]


def not_ended(run: RunRecord, open_requests: int) -> InvalidUpdateError:
    """The refusal to resume ``run``, which has not ended and is not stopped at a breakpoint: waiting for
    an answer to ``open_requests`` requests, let past its breakpoint already, or queued / running."""
    if run.status == RunStatus.AWAITING_INPUT:
        asked = "its request" if open_requests == 1 else f"its {open_requests} requests"
        return InvalidUpdateError(
            f"run {run.id} is awaiting_input: it waits for an answer to {asked}, not a resume; answer it "
            f"(graphq runs answer {run.id} --value JSON; its requests: graphq runs requests {run.id})"
        )
    if run.breakpoint is not None and run.breakpoint.get("continued"):
        return gone_on(run, run)
    return InvalidUpdateError(
        f"run {run.id} is {run.status.value}; only an ended run, or one stopped at a breakpoint, can be "
        "resumed"
    )


def gone_on(stopped: RunRecord, now: RunRecord) -> InvalidUpdateError:
    """The refusal of a second resume of ``stopped``'s breakpoint (``now``: the run as it is since): another
    resume let it go on first, or a cancel ended it."""
    mark = stopped.breakpoint or {}
    if now.status == RunStatus.CANCELED:
        return InvalidUpdateError(
            f"run {stopped.id} stopped at a breakpoint ({mark.get('when')} {mark.get('nodes')}) was canceled "
            "meanwhile; resume it again to continue its thread in a new run"
        )
    return InvalidUpdateError(
        f"run {stopped.id} went on past its breakpoint ({mark.get('when')} {mark.get('nodes')}) already "
        f"(another resume); it is {now.status.value} now"
    )


def nothing_left(run: RunRecord, head: Checkpoint) -> InvalidUpdateError:
    """The refusal to resume ``run``, completed, whose thread's latest checkpoint ``head`` has no next
    tasks."""
    return InvalidUpdateError(
        f"run {run.id} is {run.status.value} and thread {run.thread_id!r} has nothing left to run (its "
        f"latest checkpoint, step {head.step}, has no next tasks): a resume would be an empty run; start a "
        f"run with input on the thread (graphq enqueue {run.workflow} --thread {run.thread_id} --input JSON)"
    )


def newer_run(run: RunRecord, newest: str) -> InvalidUpdateError:
    """The refusal to resume ``run``, ended, whose thread went on with a newer run ``newest``: a new run
    would go on from the checkpoints that one wrote, not from ``run``'s."""
    return InvalidUpdateError(
        f"run {run.id} is not the newest run of thread {run.thread_id!r}: run {newest} came after it; a "
        f"resume continues a thread from its newest run (graphq runs resume {newest}, once it ended)"
    )
