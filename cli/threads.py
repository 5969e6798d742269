"""``graphq threads``: threads as a whole; ``graphq threads delete THREAD`` removes one now (K3)."""

from __future__ import annotations

import click

from graphcore import keys
from graphq.cli.context import AppContext
from graphq.cli.errors import fail

__all__ = ["threads"]


@click.group(short_help="Threads: delete one now.")
def threads() -> None:
    """Threads: the lines of checkpoints that runs share (see also graphq state THREAD)."""


@threads.command("delete", short_help="Remove a thread's keys and index entries now.")
@click.argument("thread")
@click.option(
    "--force",
    is_flag=True,
    help="Also while the thread's active run awaits input (that run goes with the thread).",
)
@click.pass_obj
def delete(app: AppContext, thread: str, force: bool) -> None:
    """Remove THREAD now: its checkpoints, channel values and logs, pending writes, answers, run records,
    request records and event streams, and its entries in shared indexes (run lists, leases, admission,
    retention), in one transaction. GRAPHQ_THREAD_TTL_S does the same by itself once a thread has not been
    used for that long.

    Refused (exit 2) while a run is active on the thread: queued or running, or waiting for it in line; a
    run awaiting input counts as active too, unless --force. Exit 2 also for a thread with no keys.
    """
    keys.validate_id("thread id", thread)
    done = app.client(local=True).delete_thread(thread, force)
    if done.keys == 0:
        fail(f"no thread {thread!r}: it has no keys (never used, deleted or expired)")
    click.echo(f"deleted thread {thread}: {_count(done.keys, 'key')}, {_count(done.runs, 'run')}")


def _count(n: int, noun: str) -> str:
    """``1 run``, ``2 runs``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"
