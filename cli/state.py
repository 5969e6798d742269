"""``graphq state``: a thread's newest (or a given) checkpoint, or its whole history."""

from __future__ import annotations

from collections import Counter
from typing import Any

import click

from cli.context import AppContext
from cli.output import output_option, print_json, print_table, when
from graphcore import keys
from graphcore.checkpoint import Checkpoint
from graphcore.errors import CheckpointNotFoundError

__all__ = ["checkpoint_json", "state", "tasks_text"]


def tasks_text(names: list[str]) -> str:
    """Node names with counts, e.g. ``square x3, total``."""
    return ", ".join(n if c == 1 else f"{n} x{c}" for n, c in Counter(names).items())


def checkpoint_json(cp: Checkpoint, values: bool) -> dict[str, Any]:
    """A checkpoint as JSON-ready data; with ``values``, the state too."""
    data: dict[str, Any] = {
        "checkpoint_id": cp.id, "parent_id": cp.parent_id, "step": cp.step, "source": cp.source,
        "writes": list(cp.metadata.get("writes", [])), "next": [t.node for t in cp.next_tasks],
        "created_at": cp.created_at, "metadata": cp.metadata,
    }
    if values:
        data["values"] = cp.channel_values
    return data


def _history(app: AppContext, thread: str, limit: int | None, output: str) -> None:
    history = app.reader().get_history(thread, limit=limit)
    if not history:
        raise CheckpointNotFoundError(f"thread {thread!r} has no checkpoints")
    if output == "json":
        print_json([checkpoint_json(cp, values=False) for cp in history])
        return
    rows = [(cp.step, cp.id, cp.source, tasks_text(cp.metadata.get("writes", [])),
             tasks_text([t.node for t in cp.next_tasks]), when(cp.created_at)) for cp in history]
    print_table(("step", "checkpoint", "source", "writes", "next", "created (UTC)"), rows,
                title=f"thread {thread}", no_wrap=("checkpoint", "created (UTC)"))


def _show(app: AppContext, thread: str, checkpoint_id: str | None, output: str) -> None:
    cp = app.reader().get_state(thread, checkpoint_id)
    if output == "json":
        print_json({"thread_id": thread} | checkpoint_json(cp, values=True))
        return
    next_tasks = tasks_text([t.node for t in cp.next_tasks]) or "(none: finished)"
    click.echo(f"thread {thread}  checkpoint {cp.id}  step {cp.step}  source {cp.source}  "
               f"created {cp.created_at}\nnext: {next_tasks}", err=True)
    print_json(cp.channel_values)


@click.command(short_help="Show a thread's state or checkpoint history.")
@click.argument("thread")
@click.option("--history", "-H", is_flag=True, help="List every checkpoint instead, newest first.")
@click.option("--checkpoint", "-c", "checkpoint_id", metavar="ID",
              help="Show this checkpoint, not the newest.")
@click.option("--limit", "-n", type=click.IntRange(min=1), metavar="N",
              help="With --history: at most this many.")
@output_option
@click.pass_obj
def state(app: AppContext, thread: str, history: bool, checkpoint_id: str | None, limit: int | None,
          output: str) -> None:
    """Show the state of THREAD: the newest checkpoint's values (JSON), or with --history one row per
    checkpoint (step, checkpoint id, source, nodes that wrote, next tasks, created), newest first.

    --output json prints the checkpoint (values included) or the history as JSON.
    """
    keys.validate_id("thread id", thread)
    if history:
        if checkpoint_id is not None:
            raise click.UsageError("--history and --checkpoint exclude each other")
        _history(app, thread, limit, output)
    else:
        _show(app, thread, checkpoint_id, output)
