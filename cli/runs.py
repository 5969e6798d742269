"""``graphq runs``: run records (``list``, ``show``), a run's events (``watch``, see :mod:`graphq.cli.watch`)
and steering runs (``requests``, ``answer``, ``cancel``, ``resume``; see :mod:`graphq.cli.control`)."""

from __future__ import annotations

from typing import Any

import click

from graphcore.backend.client import Client
from graphcore.backend.json_forms import listed_json, shown_json
from graphcore.backend.reaper import iso_ms
from graphcore.backend.run_fields import (
    SHORT,
    request_deadline,
    run_fields,
    slot_deadline_ms,
    version_text,
)
from graphcore.backend.runs import RunFilter, RunRecord, RunStatus
from graphcore.errors import RunNotFoundError
from graphq.cli.bounds import LIMIT
from graphq.cli.bulk import filter_options, run_filter
from graphq.cli.context import AppContext
from graphq.cli.control import answer, cancel, requests, resume
from graphq.cli.migrate import migrate_runs
from graphq.cli.output import output_option, print_json, print_table, short, when
from graphq.cli.records import (
    again_command,
    print_all_requests,
    print_answer_hint,
    print_resume_hint,
)
from graphq.cli.watch import watch
from graphq.worker.pinned import unserved, waiting_runs

__all__ = ["runs"]

_SHOWN = 200
"""Characters shown of a value in ``runs show``: ids (at most 200) whole, long values cut."""


@click.group()
def runs() -> None:
    """Inspect runs (list the newest, show one, watch one's events live) and steer them: answer a paused
    run's requests, cancel a run, resume an ended one."""


@runs.command("list", short_help="List the newest runs.")
@click.option(
    "--limit",
    "-n",
    type=LIMIT,
    default=20,
    show_default=True,
    metavar="N",
    help="How many runs, newest first.",
)
@click.option(
    "--chain",
    "chain_of",
    metavar="RUN",
    help="List the chain RUN belongs to instead, first run first: the runs it continues and those that "
    "continue it (a worker died, the reaper continued the run; or a resume).",
)
@filter_options
@click.option(
    "--stuck",
    is_flag=True,
    help="Only runs that have not ended and cannot go on now: their lease lapsed (their worker died, or "
    "stopped renewing it, and the reaper has not acted on them yet; longest lapsed first, with the worker "
    "and when), then those whose next step waits for a worker serving the version they are pinned to.",
)
@output_option
@click.pass_obj
def list_runs(
    app: AppContext,
    limit: int,
    chain_of: str | None,
    tenant: str | None,
    status: str | None,
    workflow: str | None,
    schedule: str | None,
    stuck: bool,
    output: str,
) -> None:
    """List the newest runs (id, workflow, status, steps done, thread, tenant, created), or only those of
    --tenant, --status and --workflow; --stuck lists the runs whose lease lapsed (an operator's first
    question after an incident). With --chain RUN the runs of RUN's chain in order (with each one's attempt
    and the run it continues), at most --limit of them (the last ones; a note on stderr says when some are
    left out). --output json prints each run's record without its result, which would be one more read per
    run, maybe large: `runs show RUN -o json` has it."""
    reader = app.reader()
    where = run_filter(reader, tenant, status, workflow, schedule)
    if chain_of is not None and (stuck or where != RunFilter()):
        raise click.UsageError(
            "--chain lists one chain; it does not combine with --tenant, --status, --workflow, --schedule or "
            "--stuck"
        )
    if stuck:
        _list_stuck(reader, app.settings.queue, limit, where, output)
        return
    if chain_of is not None:
        _list_chain(reader.chain(chain_of), limit, output)
        return
    records = reader.list_runs(limit, None if where == RunFilter() else where)
    if output == "json":
        print_json([listed_json(r) for r in records])
        return
    rows = [
        (r.id, r.workflow, r.status.value, r.step, r.thread_id, r.tenant, when(r.created_at), version_text(r))
        for r in records
    ]
    print_table(
        ("run", "workflow", "status", "steps", "thread", "tenant", "created (UTC)", "version"),
        rows,
        no_wrap=("run", "thread", "tenant", "created (UTC)", "version"),
    )


def _list_chain(chain: list[RunRecord], limit: int, output: str) -> None:
    """The table (or JSON) of ``runs list --chain``: the chain's last ``limit`` runs, said on stderr when
    that leaves some out (never cut silently)."""
    if len(chain) > limit:
        click.echo(
            f"the chain has {len(chain)} runs; showing the last {limit} (--limit {len(chain)}: all)", err=True
        )
        chain = chain[-limit:]
    if output == "json":
        print_json([listed_json(r) for r in chain])
        return
    print_table(
        ("run", "attempt", "status", "continues", "error", "created (UTC)"),
        [
            (
                r.id,
                r.attempt,
                r.status.value,
                r.continued_from_run_id or "",
                f"{r.error.type}: {r.error.message}" if r.error else "",
                when(r.created_at),
            )
            for r in chain
        ],
        no_wrap=("run", "continues", "created (UTC)"),
    )


def _list_stuck(reader: Client, base: str, limit: int, where: RunFilter, output: str) -> None:
    """The table (or JSON, with ``lease_lapsed_at`` and ``waiting_for_version``) of ``runs list --stuck``:
    runs whose lease lapsed, then runs waiting for a worker serving their version, at most ``limit``."""
    lapsed = [(r, iso_ms(at), None) for r, at in reader.stuck_runs(limit, where)]
    pinned = [(r, None, r.version) for r in _unserved(reader, base, limit - len(lapsed), where)]
    found = lapsed + pinned
    if output == "json":
        print_json([listed_json(r) | {"lease_lapsed_at": at, "waiting_for_version": v} for r, at, v in found])
        return
    rows = [
        (
            r.id,
            r.workflow,
            r.status.value,
            r.step,
            r.tenant,
            r.worker or "",
            "" if at is None else when(at),
            "" if v is None else f"a worker serving version {v[:SHORT]}",
        )
        for r, at, v in found
    ]
    print_table(
        ("run", "workflow", "status", "steps", "tenant", "worker", "lease lapsed (UTC)", "waiting for"),
        rows,
        no_wrap=("run", "tenant", "worker", "lease lapsed (UTC)"),
    )


def _unserved(reader: Client, base: str, limit: int, where: RunFilter) -> list[RunRecord]:
    """Up to ``limit`` runs matching ``where`` whose next step waits for a worker serving their version."""
    found: list[RunRecord] = []
    for run_id, _ in waiting_runs(reader.kv, base):
        if len(found) >= limit:
            break
        try:
            record = reader.get_run(run_id)
        except RunNotFoundError:  # its thread expired or was deleted meanwhile
            continue
        if where.record_matches(record) and unserved(reader.kv, base, record):
            found.append(record)
    return found


def _summary(result: Any) -> list[tuple[str, str]]:
    if not isinstance(result, dict):
        return [("result", short(result))]
    return [(f"result.{key}", short(value)) for key, value in result.items()]


@runs.command("show", short_help="Show one run: error, result, open requests.")
@click.argument("run_id", metavar="RUN")
@output_option
@click.pass_obj
def show_run(app: AppContext, run_id: str, output: str) -> None:
    """Show one run: status, workflow, thread, tenant, step, times, the run it continues and the run that
    continues it (its chain: `graphq runs list --chain RUN`), the worker that last held it, error with
    traceback, result summary (long values cut; --output json has them whole); the requests it made
    (open and answered, with the answers), and for a run waiting for input how to answer.

    step is the thread's super-step the run is at, numbered like `graphq state THREAD --history`: the
    step it runs next, waits for input in, or failed in; for a completed run its last. steps done counts
    the super-steps this run committed.

    A run pinned to a version of its workflow (version ... (pinned)) whose next step no live worker can
    take, as none serves that version, says "waiting for a worker serving version X".

    --output json prints the whole record, result and error included ("step" is its steps done,
    "thread_step" the step above, "waiting_for_slot_until" the deadline of a run waiting for a slot,
    "waiting_for_version" the version of a run waiting for a worker serving it),
    "all_requests" (every request it made, as `graphq runs requests RUN --all -o json`) and "requests" (the
    open ones) when it waits.
    """
    reader = app.reader()
    record = reader.get_run(run_id)
    if output == "json":
        print_json(shown_json(reader, record, unserved(reader.kv, app.settings.queue, record)))
        return
    waiting = record.status == RunStatus.AWAITING_INPUT
    open_requests = reader.requests(run_id) if waiting else []
    made = reader.run_requests(run_id)
    fields = run_fields(
        record,
        reader.thread_step(record),
        slot_deadline_ms(reader.kv, record),
        unserved(reader.kv, app.settings.queue, record),
        shown=short,
    )
    print_table(
        ("field", "value"),
        fields + _summary(record.result) + request_deadline(open_requests),
        no_wrap=("field",),
        limit=_SHOWN,
    )
    if record.error is not None and record.error.traceback:
        click.echo("\ntraceback:")
        click.echo(record.error.traceback.rstrip())
    if made:
        click.echo("\nrequests:")
        print_all_requests(made)
    if waiting and not print_resume_hint(record):
        print_answer_hint(record.id, open_requests)
    elif any(r.status == "answered" for r in made) and reader.keeps_history():
        click.echo(f"answer one again, on a new branch, with: {again_command(record.id)}")


for _command in (watch, requests, answer, cancel, resume, migrate_runs):
    runs.add_command(_command)
