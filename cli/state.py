"""``graphq state``: a thread's newest (or a given) checkpoint, or its whole history."""

from __future__ import annotations

from collections import Counter

import click

from graphcore import keys
from graphcore.backend.json_forms import branches, history_json, state_json, thread_checkpoint, thread_history
from graphcore.checkpoints.model import Checkpoint
from graphq.cli.bounds import LIMIT
from graphq.cli.context import AppContext
from graphq.cli.output import output_option, print_json, print_table, when

__all__ = ["state", "tasks_text"]

_SHORT = 12
"""Characters of a parent id shown in the history table: its end, since ids begin with their millisecond
timestamp (checkpoints made in the same millisecond share their first 12 characters)."""


def tasks_text(names: list[str]) -> str:
    """Node names with counts, e.g. ``square x3, total``."""
    return ", ".join(n if c == 1 else f"{n} x{c}" for n, c in Counter(names).items())


def _short(checkpoint_id: str | None) -> str:
    return "…" + checkpoint_id[-_SHORT:] if checkpoint_id else ""


def _branch_cell(cp: Checkpoint, labels: dict[str, str]) -> str:
    """The branch column: ``b1 <- main`` on the fork that starts a branch, else the branch's name."""
    if cp.source == "fork":
        return f"{labels[cp.id]} <- {labels.get(cp.parent_id or '', '?')}"
    return labels[cp.id]


def _history(app: AppContext, thread: str, limit: int | None, output: str) -> None:
    reader = app.reader()
    history = thread_history(reader, thread)  # all of it: branches are told from the oldest on
    if output == "json":
        print_json(history_json(history, limit))
        return
    labels = branches(history)
    shown = history[:limit]
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
    cp = thread_checkpoint(reader, thread, checkpoint_id)
    if output == "json":
        print_json(state_json(reader, thread, cp))
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
