"""A step that asks a human (G6) or stops at a static breakpoint: its tasks' outcomes kept as pending
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
from graphcore.backend.runs import CANCEL_ERROR, RunRecord, RunStatus, now_iso
from graphcore.checkpoints import serde
from graphcore.checkpoints.model import Checkpoint
from graphcore.engine.algo import task_id
from graphcore.engine.breakpoints import Stop as Breakpoint
from graphcore.engine.interrupts import interrupt_id, schema_fields
from graphcore.types import TaskWrites
from graphq.worker.step.breakpoints import stopped
from graphq.worker.step.context import WorkerContext
from graphq.worker.step.endings import end_run, release_thread
from graphq.worker.step.fenced_writes import fenced_hset, put_writes, set_status
from graphq.worker.step.lease import Lease

__all__ = ["pause", "seed_answers", "step_answers"]


def step_answers(ctx: WorkerContext, run: RunRecord, cp: Checkpoint) -> dict[str, Any]:
    """Interrupt id → answer, as given with ``graphq runs answer`` for the step after ``cp``."""
    raw = ctx.kv.hgetall(keys.answers(run.thread_id, "", cp.id))
    return {k.decode(): serde.loads(v) for k, v in raw.items()}


def pause(
    ctx: WorkerContext,
    run: RunRecord,
    lease: Lease,
    cp: Checkpoint,
    results: list[TaskWrites],
    persisted: bool,
    stop: Breakpoint | None = None,
) -> str:
    """A node asked a human (G6): keep every task's outcome as pending writes, then AwaitingInput, unless a
    cancel request arrived during the step (X1): then the run ends Canceled, nobody is asked. With ``stop``
    the run stopped at a static breakpoint instead (:mod:`graphq.worker.step.breakpoints`): its own (no
    ``results``), or one of a graph a task ran (that task's result is not kept: it runs again when the run
    goes on)."""
    if not persisted:
        for tw in results:
            if tw.stopped is None:
                put_writes(ctx, run, cp, lease, tw)
    if _cancel_requested(ctx, run):
        end_run(ctx, run, lease, RunStatus.CANCELED, _PAUSE_CANCEL)
        return "canceled: a cancel request arrived during the step"
    requests = [
        {"id": i.id, "node": i.node, "value": i.value, "created_at": i.created_at, **schema_fields(i)}
        for r in results
        for i in r.interrupts
    ]
    _record_requests(ctx, run, lease, cp, results)
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
    if set_status(ctx, run, lease, RunStatus.AWAITING_INPUT, **options):
        lease.dropped()
        outlast(free_slot, ctx.kv, ctx.queue, run.thread_id, run.id)  # R8: the answer waits for a slot
    if _cancel_requested(ctx, run):  # requested just before the pause (later ones end the waiting run)
        _cancel_paused(ctx, run, cp.step + 1)
        return "canceled: a cancel request arrived during the step"
    if stop is not None:
        return f"stopped at a breakpoint: {stop.when} {list(stop.nodes)}"
    return f"awaiting input: {len(requests)} request(s)"


def _cancel_paused(ctx: WorkerContext, run: RunRecord, step: int) -> None:
    """End a run that just paused, Canceled (a cancel request came in while it paused). Its lease went back
    with the pause; from AwaitingInput only this compare-and-set or an answer moves the run on."""
    fields = {"error": _PAUSE_CANCEL.model_dump_json(), "ended_at": now_iso()}
    event = {"status": "canceled", "error": f"{_PAUSE_CANCEL.type}: {_PAUSE_CANCEL.message}"}
    waiting = (RunStatus.AWAITING_INPUT,)
    options: dict[str, Any] = {"allowed": waiting, "fields": fields, "events": [("status", step, event)]}
    if outlast(ctx.runs.set_status, run, RunStatus.CANCELED, **options):
        release_thread(ctx, run)


_PAUSE_CANCEL = CANCEL_ERROR.model_copy(
    update={"message": "canceled by request during the step that asked for input; nobody is asked"}
)


def _cancel_requested(ctx: WorkerContext, run: RunRecord) -> bool:
    """Whether a cancel request is recorded on the run (``cancel`` asked while a step of it ran)."""
    return bool(outlast(ctx.kv.hexists, keys.run(run.thread_id, run.id), "cancel"))


def _record_requests(
    ctx: WorkerContext, run: RunRecord, lease: Lease, cp: Checkpoint, results: list[TaskWrites]
) -> None:
    """Remember where each request of the run was made (checkpoint, task index, call index), so that a
    second answer can start a branch there (R16). Requests made inside subgraphs are not recorded."""
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
        fenced_hset(ctx, run, lease, "requests", (keys.requests(run.thread_id, run.id), records))


def seed_answers(ctx: WorkerContext, run: RunRecord, lease: Lease, cp: Checkpoint) -> None:
    """A branch run (R16): store its preset answers under the interrupt ids of the branch's tasks."""
    answers = {}
    for where, value in run.preset_answers.items():
        task_index, call = (int(part) for part in where.split(":"))
        node = cp.next_tasks[task_index].node
        answers[interrupt_id(task_id(cp.id, task_index, node), call)] = serde.dumps(value, path="answer")
    fenced_hset(ctx, run, lease, "answers", (keys.answers(run.thread_id, "", cp.id), answers))
