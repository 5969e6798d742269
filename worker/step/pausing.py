"""A step attempt that asks a human (G6) or stops at a static breakpoint: its tasks' outcomes kept as pending
writes, the run AwaitingInput with its requests recorded (R13, R16), the lease and the run's slot given back;
a cancel request that arrived during the step ends the run Canceled instead (X1). Also the answers a step
reads, and the preset answers of a branch run.
"""

from __future__ import annotations

from typing import Any

from graphcore import keys
from graphcore.backend.admission import release as free_slot
from graphcore.backend.connection import outlast
from graphcore.backend.expiry import DEADLINE_FIELD, deadline_fields, request_deadline
from graphcore.backend.runs import CANCEL_ERROR, RunStatus, now_iso
from graphcore.checkpoints import serde
from graphcore.checkpoints.model import Checkpoint
from graphcore.engine.algo import task_id
from graphcore.engine.breakpoints import Stop as Breakpoint
from graphcore.engine.interrupts import interrupt_id, schema_fields
from graphcore.types import TaskWrites
from graphq.worker.step.attempt import StepAttempt
from graphq.worker.step.breakpoints import stopped
from graphq.worker.step.ending import end

__all__ = ["pause", "seed_answers", "step_answers"]


def step_answers(attempt: StepAttempt) -> dict[str, Any]:
    """Interrupt id → answer, as given with ``graphq runs answer`` for the step after the attempt's head."""
    raw = attempt.ctx.kv.hgetall(keys.answers(attempt.run.thread_id, "", attempt.head.id))
    return {k.decode(): serde.loads(v) for k, v in raw.items()}


def pause(
    attempt: StepAttempt, results: list[TaskWrites], persisted: bool, stop: Breakpoint | None = None
) -> str:
    """A node asked a human (G6): keep every task's outcome as pending writes, then AwaitingInput, unless a
    cancel request arrived during the step (X1): then the run ends Canceled, nobody is asked. With ``stop``
    the run stopped at a static breakpoint instead (:mod:`graphq.worker.step.breakpoints`): its own (no
    ``results``), or one of a graph a task ran (that task's result is not kept: it runs again when the run
    goes on). Returns the job's outcome, in words."""
    ctx, run, lease, cp = attempt.ctx, attempt.run, attempt.lease, attempt.head
    if not persisted:
        for tw in results:
            if tw.stopped is None:
                attempt.put_writes(tw)
    if _cancel_requested(attempt):
        end(attempt, RunStatus.CANCELED, _PAUSE_CANCEL)
        return "canceled: a cancel request arrived during the step"
    requests = [
        {"id": i.id, "node": i.node, "value": i.value, "created_at": i.created_at, **schema_fields(i)}
        for r in results
        for i in r.interrupts
    ]
    _record_requests(attempt, results)
    where, fields = stopped(stop, cp)
    events = [
        ("interrupt", cp.step + 1, {"requests": requests, **where}),
        ("status", cp.step + 1, {"status": "awaiting_input"}),
    ]
    # The lease goes back in the same script as the status: an answer's job can claim the step at once.
    # The same script indexes the run under its earliest request deadline, if a request has one (R13).
    lease.dropping()
    release = (keys.lease_index(), lease.member)
    waiting = (RunStatus.RUNNING,)
    due = request_deadline([i for r in results for i in r.interrupts], cp.step + 1)
    options: dict[str, Any] = {"allowed": waiting, "events": events, "release": release, "fields": fields}
    if due is not None:
        options |= {"deadline_ms": due[0], "fields": {DEADLINE_FIELD: due[1]}}
    if attempt.set_status(RunStatus.AWAITING_INPUT, **options):
        lease.dropped()
        outlast(free_slot, ctx.kv, ctx.queue, run.thread_id, run.id)  # R8: the answer waits for a slot
    if _cancel_requested(attempt):  # requested just before the pause (later ones end the waiting run)
        _cancel_paused(attempt, cp.step + 1)
        return "canceled: a cancel request arrived during the step"
    if stop is not None:
        return f"stopped at a breakpoint: {stop.when} {list(stop.nodes)}"
    return f"awaiting input: {len(requests)} request(s)"


def _cancel_paused(attempt: StepAttempt, step: int) -> None:
    """End a run that just paused, Canceled (a cancel request came in while it paused). Its lease went back
    with the pause; from AwaitingInput only this compare-and-set or an answer moves the run on."""
    fields = {"error": _PAUSE_CANCEL.model_dump_json(), "ended_at": now_iso()}
    event = {"status": "canceled", "error": f"{_PAUSE_CANCEL.type}: {_PAUSE_CANCEL.message}"}
    waiting = (RunStatus.AWAITING_INPUT,)
    options: dict[str, Any] = {"allowed": waiting, "fields": fields, "events": [("status", step, event)]}
    if outlast(attempt.ctx.runs.set_status, attempt.run, RunStatus.CANCELED, **options):
        attempt.release_thread()


_PAUSE_CANCEL = CANCEL_ERROR.model_copy(
    update={"message": "canceled by request during the step that asked for input; nobody is asked"}
)


def _cancel_requested(attempt: StepAttempt) -> bool:
    """Whether a cancel request is recorded on the run (``cancel`` asked while a step of it ran)."""
    run = attempt.run
    return bool(outlast(attempt.ctx.kv.hexists, keys.run(run.thread_id, run.id), "cancel"))


def _record_requests(attempt: StepAttempt, results: list[TaskWrites]) -> None:
    """Remember where each request of the run was made (checkpoint, task index, call index), so that a
    second answer can start a branch there (R16). Requests made inside subgraphs are not recorded."""
    run, cp = attempt.run, attempt.head
    order = {task_id(cp.id, i, t.node): i for i, t in enumerate(cp.next_tasks)}
    records = {
        i.id: serde.dumps(
            {
                "checkpoint_id": cp.id,
                "task": order[r.task_id],
                "call": i.index,
                "node": i.node,
                "value": i.value,
                **deadline_fields(i.deadline_ms),
                **schema_fields(i),
            },
            path="request",
        )
        for r in results
        for i in r.interrupts
        if i.task_id == r.task_id
    }
    if records:
        attempt.hset("requests", (keys.requests(run.thread_id, run.id), records))


def seed_answers(attempt: StepAttempt, cp: Checkpoint) -> None:
    """A branch run (R16): store its preset answers under the interrupt ids of the tasks of ``cp`` (the
    branch's start, before it is the attempt's head)."""
    run = attempt.run
    answers = {}
    for where, value in run.preset_answers.items():
        task_index, call = (int(part) for part in where.split(":"))
        node = cp.next_tasks[task_index].node
        answers[interrupt_id(task_id(cp.id, task_index, node), call)] = serde.dumps(value, path="answer")
    attempt.hset("answers", (keys.answers(run.thread_id, "", cp.id), answers))
