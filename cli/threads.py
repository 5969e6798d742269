"""``graphq threads``: threads as a whole; ``graphq threads delete THREAD`` removes one now (K3),
``graphq threads delete --older-than 30d`` every thread unused that long."""

from __future__ import annotations

from typing import Any

import click

from graphcore import keys
from graphcore.backend.bulk import BulkResult, count_of
from graphcore.backend.runs import RunFilter
from graphcore.errors import ConfigError
from graphq.cli.bulk import bulk_options, perform
from graphq.cli.context import AppContext
from graphq.cli.errors import fail
from graphq.cli.inputs import check_ids
from graphq.cli.output import output_option
from graphq.scheduler.schedules import parse_duration

__all__ = ["threads"]


@click.group(short_help="Threads: delete one now, or every one unused for a while.")
def threads() -> None:
    """Threads: the lines of checkpoints that runs share (see also graphq state THREAD)."""


@threads.command("delete", short_help="Remove a thread now, or every thread unused for a while.")
@click.argument("thread", required=False)
@click.option(
    "--force",
    is_flag=True,
    help="Also while the thread's active run awaits input (that run goes with the thread).",
)
@click.option(
    "--older-than",
    metavar="DURATION",
    help="Instead of THREAD: every thread last used longer ago than DURATION (30d, 12h, 90m, 45s).",
)
@click.option("--tenant", metavar="TENANT", help="With --older-than: only threads of TENANT's runs.")
@click.option("--workflow", metavar="NAME", help="With --older-than: only threads of runs of workflow NAME.")
@bulk_options
@output_option
@click.pass_obj
def delete(
    app: AppContext,
    thread: str | None,
    force: bool,
    older_than: str | None,
    tenant: str | None,
    workflow: str | None,
    dry_run: bool,
    yes: bool,
    output: str,
) -> None:
    """Remove THREAD now: its checkpoints, channel values and logs, pending writes, answers, run records,
    request records and event streams, and its entries in shared indexes (run lists, leases, admission,
    retention), in one transaction. GRAPHQ_THREAD_TTL_S does the same by itself once a thread has not been
    used for that long.

    Refused (exit 2) while a run is active on the thread: queued or running, or waiting for it in line; a
    run awaiting input counts as active too, unless --force. Exit 2 also for a thread with no keys.

    \b
    With --older-than DURATION instead of THREAD: every thread last used longer ago than that (when its
    newest run ended; was created, for one that has not), or only those of --tenant's or --workflow's runs.
    They are counted, then, once confirmed (--yes: without asking; needed without a terminal), deleted one
    by one as above, with progress on stderr and a one-line summary (`deleted 120 threads; 3 skipped: a run
    is active on it`; --output json: matched, done, skipped by reason). --dry-run prints the count, how many
    would be deleted and skipped by reason, and the first thread ids. Ctrl-C ends the work after the batch
    in flight, exit 130.

    \b
    Examples:
      graphq threads delete THREAD
      graphq threads delete --older-than 30d --tenant acme --dry-run
      graphq threads delete --older-than 12h --workflow W --yes
    """
    if thread is None:
        _delete_old(app, older_than, tenant, workflow, force, dry_run, yes, output)
        return
    if older_than is not None:
        fail(f"give THREAD ({thread}) or --older-than DURATION, not both")
    given = [o for o, on in (("--tenant", tenant), ("--workflow", workflow), ("--dry-run", dry_run)) if on]
    given += [o for o, on in (("--yes", yes), ("--output", output != "table")) if on]
    if given:
        fail(f"THREAD {thread} names one thread; {', '.join(given)} go with --older-than DURATION instead")
    keys.validate_id("thread id", thread)
    done = app.client(local=True).delete_thread(thread, force)
    if done.keys == 0:
        fail(f"no thread {thread!r}: it has no keys (never used, deleted or expired)")
    click.echo(f"deleted thread {thread}: {count_of(done.keys, 'key')}, {count_of(done.runs, 'run')}")


def _delete_old(
    app: AppContext,
    older_than: str | None,
    tenant: str | None,
    workflow: str | None,
    force: bool,
    dry_run: bool,
    yes: bool,
    output: str,
) -> None:
    """``threads delete --older-than``: every thread unused that long (of --tenant's, --workflow's runs)."""
    if older_than is None:
        fail(
            "threads delete: give THREAD, or --older-than DURATION (e.g. 30d) to delete every thread unused "
            "that long"
        )
    try:
        seconds = parse_duration(older_than, "--older-than", "a thread used just now is not old")
    except ConfigError as exc:
        fail(str(exc))
    check_ids(None, tenant)
    client = app.client(local=True)
    where = RunFilter(tenant=tenant, workflow=workflow)

    def work(**kw: Any) -> BulkResult:
        return client.delete_threads(seconds, where, force=force, **kw)

    perform(work, verb="deleted", infinitive="delete", noun="thread", dry_run=dry_run, yes=yes, output=output)
