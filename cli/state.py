"""``graphq state``: a thread's newest (or a given) checkpoint, or its whole history."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import click

from graphcore import keys
from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.checkpoints.model import Checkpoint
from graphcore.errors import CheckpointNotFoundError
from graphq.cli.bounds import LIMIT
from graphq.cli.context import AppContext
from graphq.cli.output import output_option, print_json, print_table, when

__all__ = ["branches", "checkpoint_json", "state", "tasks_text"]

MAIN_BRANCH = "main"
"""The branch of a thread's first checkpoints; each fork (C3) starts another, ``b1``, ``b2``, ..."""
_SHORT = 12
"""Characters of a parent id shown in the history table: its end, since ids begin with their millisecond
timestamp (checkpoints made in the same millisecond share their first 12 characters)."""


def tasks_text(names: list[str]) -> str:
    """Node names with counts, e.g. ``square x3, total``."""
    return ", ".join(n if c == 1 else f"{n} x{c}" for n, c in Counter(names).items())


def checkpoint_json(cp: Checkpoint) -> dict[str, Any]:
    """A checkpoint as JSON-ready data, without its state."""
    return {
        "checkpoint_id": cp.id,
        "parent_id": cp.parent_id,
        "step": cp.step,
        "source": cp.source,
        "writes": list(cp.metadata.get("writes", [])),
        "next": [t.node for t in cp.next_tasks],
        "created_at": cp.created_at,
        "metadata": cp.metadata,
    }


def branches(history: Sequence[Checkpoint]) -> dict[str, str]:
    """Checkpoint id → the branch it is on: ``main`` from the thread's first checkpoint, then ``b1``, ``b2``,
    ... from each fork (``source: fork``) in the order they were made; a checkpoint is on its parent's
    branch.

    Args:
        history: a thread's checkpoints, newest first (as :meth:`Client.get_history` lists them).
    """
    labels: dict[str, str] = {}
    forks = 0
    for cp in reversed(history):
        if cp.source == "fork":
            forks += 1
            labels[cp.id] = f"b{forks}"
        else:
            labels[cp.id] = labels.get(cp.parent_id or "", MAIN_BRANCH)
    return labels


def _short(checkpoint_id: str | None) -> str:
    return "…" + checkpoint_id[-_SHORT:] if checkpoint_id else ""


def _branch_cell(cp: Checkpoint, labels: dict[str, str]) -> str:
    """The branch column: ``b1 <- main`` on the fork that starts a branch, else the branch's name."""
    if cp.source == "fork":
        return f"{labels[cp.id]} <- {labels.get(cp.parent_id or '', '?')}"
    return labels[cp.id]


def _why_none(reader: Client, thread: str) -> str:
    """Why a thread has no checkpoint, when it has runs: they were removed after completion (R7)."""
    completed = [r for r in reader.thread_runs(thread) if r.status == RunStatus.COMPLETED]
    if not completed:
        return ""
    return (
        f"; {len(completed)} of its runs completed, and checkpoints are removed when a run completes with "
        "GRAPHQ_KEEP_CHECKPOINTS_AFTER_COMPLETION=false (`graphq runs show RUN` keeps each run's result)"
    )


def _history(app: AppContext, thread: str, limit: int | None, output: str) -> None:
    reader = app.reader()
    history = reader.get_history(thread)  # all of it: branches are told from the oldest on
    if not history:
        raise CheckpointNotFoundError(f"thread {thread!r} has no checkpoints{_why_none(reader, thread)}")
    labels = branches(history)
    shown = history[:limit]
    if output == "json":
        print_json([checkpoint_json(cp) | {"branch": labels[cp.id]} for cp in shown])
        return
    rows = [
        (
            cp.step,
            cp.id,
            _short(cp.parent_id),
            _branch_cell(cp, labels),
            cp.source,
            tasks_text(cp.metadata.get("writes", [])),
            tasks_text([t.node for t in cp.next_tasks]),
            when(cp.created_at),
        )
        for cp in shown
    ]
    forks = len(set(labels.values())) - 1
    title = f"thread {thread}" + (f" ({forks + 1} branches)" if forks else "")
    print_table(
        ("step", "checkpoint", "parent", "branch", "source", "writes", "next", "created (UTC)"),
        rows,
        title=title,
        no_wrap=("checkpoint", "parent", "branch", "created (UTC)"),
    )


def _show(app: AppContext, thread: str, checkpoint_id: str | None, output: str) -> None:
    reader = app.reader()
    try:
        cp = reader.get_state(thread, checkpoint_id)
    except CheckpointNotFoundError as exc:
        if checkpoint_id is not None:
            raise
        raise CheckpointNotFoundError(f"{exc}{_why_none(reader, thread)}") from None
    if output == "json":
        print_json({"thread_id": thread} | checkpoint_json(cp) | {"values": reader.shown_values(thread, cp)})
        return
    next_tasks = tasks_text([t.node for t in cp.next_tasks]) or "(none: finished)"
    click.echo(
        f"thread {thread}  checkpoint {cp.id}  step {cp.step}  source {cp.source}  "
        f"created {cp.created_at}\nnext: {next_tasks}",
        err=True,
    )
    print_json(reader.shown_values(thread, cp))


@click.command(short_help="Show a thread's state or checkpoint history.")
@click.argument("thread")
@click.option(
    "--history",
    "-H",
    is_flag=True,
    help="List every checkpoint instead, newest first, with parents and branches.",
)
@click.option(
    "--checkpoint", "-c", "checkpoint_id", metavar="ID", help="Show this checkpoint, not the newest."
)
@click.option("--limit", "-n", type=LIMIT, metavar="N", help="With --history: at most this many.")
@output_option
@click.pass_obj
def state(
    app: AppContext, thread: str, history: bool, checkpoint_id: str | None, limit: int | None, output: str
) -> None:
    """Show the state of THREAD: the newest checkpoint's values (JSON), or with --history one row per
    checkpoint, newest first: step, checkpoint id, parent (its last 12 characters), branch, source, nodes
    that wrote, next tasks, created. Each run with input adds its input checkpoint (source "input", the
    state before the input, next "__start__"; step -1 on a new thread), then the input applied (source
    "loop", written by "__start__"), then one per super-step: a 3-step run shows 5 rows, steps -1..3.

    Branches: the thread's first line is "main"; a run started from an older checkpoint (`graphq enqueue
    --thread T --checkpoint ID`) forks it: its first checkpoint has source "fork" and starts branch b1
    (shown "b1 <- main"), the next fork b2, and so on; every other checkpoint is on its parent's branch.

    --output json prints the checkpoint (values included) or the history as JSON (with parent_id and
    branch).
    """
    keys.validate_id("thread id", thread)
    if history:
        if checkpoint_id is not None:
            raise click.UsageError("--history and --checkpoint exclude each other")
        _history(app, thread, limit, output)
    elif limit is not None:
        raise click.UsageError("--limit goes with --history (one checkpoint is shown without it)")
    else:
        _show(app, thread, checkpoint_id, output)
