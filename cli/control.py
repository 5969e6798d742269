"""``graphq runs requests | answer | cancel | resume``: steer runs — human in the loop, cancel, continue.

Without a Redis URL these commands use the local data of ``graphq run`` (``GRAPHQ_DATA_DIR``). Nothing else
works the queues of that data, so ``answer`` and ``resume`` then continue the run in this process until it
ends or waits for input again, and print the outcome like ``graphq run`` (``--wait`` does the same on a
configured Redis, helping its workers).
"""

from __future__ import annotations

import time
from typing import Any

import click

from graphcore import keys
from graphcore.backend import switch
from graphcore.backend.bulk import BulkResult, needs_filter
from graphcore.backend.client import Client, at_breakpoint
from graphcore.backend.json_forms import record_json, request_json, request_record_json
from graphcore.backend.runs import RunFilter, RunRecord
from graphcore.backend.switch import refuse_if_off
from graphcore.engine.inputs import check_answer
from graphcore.engine.interrupts import NotAwaitingInputError
from graphcore.errors import PermanentError
from graphq.cli.bulk import FILTERS, bulk_options, filter_options, perform, run_filter
from graphq.cli.context import AppContext
from graphq.cli.errors import fail
from graphq.cli.inputs import parse_input
from graphq.cli.output import err_console, output_option, print_json
from graphq.cli.records import (
    again_command,
    graphq_prefix,
    print_all_requests,
    print_requests,
)
from graphq.cli.run import (
    follow_and_work,
    last_event_id,
    processes_option,
    processes_used,
    redis_line,
    report,
)
from graphq.worker.pinned import SHORT, unserved

__all__ = ["answer", "cancel", "requests", "resume"]

_WAIT_HELP = (
    "Continue the run in this process until it ends or waits for input again, showing progress, "
    "and print the outcome like `graphq run`. Always so without a Redis URL (local data)."
)


def refuse_other_version(app: AppContext, record: RunRecord) -> None:
    """Refuse to continue ``record``'s run in this process when it is pinned to a version of its workflow
    other than the code loaded here (its steps run only on workers of that version).

    Raises:
        CliError: exit 2, naming both versions and how the run goes on.
    """
    pinned = record.pinned_version
    here = app.registry.version(record.workflow)
    if pinned is not None and pinned != here:
        fail(
            f"run {record.id} is pinned to version {pinned[:SHORT]} of {record.workflow}; the code here is "
            f"version {here[:SHORT]} and cannot continue it (nothing changed): a worker of version "
            f"{pinned[:SHORT]} continues it, or `graphq runs migrate` moves it"
        )


def _continue_here(
    app: AppContext,
    client: Client,
    record: RunRecord,
    note: str,
    output: str,
    processes: int | None,
    after: str = "0-0",
) -> None:
    """Work ``record``'s run here to its end or next pause, then report it (exit 0, 1 or 3);
    ``processes``: ``--processes``."""
    console = err_console()
    started = time.monotonic()
    console.print(redis_line(app, app.url(local=True)), markup=False)
    count, workers = processes_used(app, processes)
    console.print(workers, markup=False)
    console.print(note, markup=False)
    final = follow_and_work(app, client, record, console, after=after, started=started, processes=count)
    report(client, final, output)


@click.command("requests", short_help="List a run's open requests (--all: every request it made).")
@click.argument("run_id", metavar="RUN")
@click.option(
    "--all",
    "-a",
    "every",
    is_flag=True,
    help="Every request the run made, open and answered, "
    "with the answers: the ids to answer again with `graphq runs answer RUN --request ID --again`.",
)
@output_option
@click.pass_obj
def requests(app: AppContext, run_id: str, every: bool, output: str) -> None:
    """List the open requests of RUN, a run waiting for input: id, node, created, deadline, value (JSON).

    A request with a deadline (interrupt(value, timeout_s=...) or the workflow's request_timeout_s) that is
    still unanswered then ends the run canceled (RequestExpired) at the next request-expiry scan (every
    GRAPHQ_REQUEST_EXPIRATION_SCAN_INTERVAL_S). A run that is not waiting for input has none (an empty
    list). --output json prints every field: id, value, node, task_id, index, created_at, deadline_ms,
    deadline (ISO; null without one).

    With --all: every request RUN made, in the order asked: id, step (the thread's super-step that asked),
    node, status (open, answered, or unanswered when the run ended without an answer), deadline, value and
    answer. --output json: id, node, value, status, answer, step, checkpoint_id, created_at, answered_at,
    again_of (for the request a second answer starts a branch run with: the run that first made it),
    deadline, deadline_ms.
    """
    reader = app.reader()
    record = reader.get_run(run_id)
    if every:
        made = reader.run_requests(run_id)
        if output == "json":
            print_json([request_record_json(r) for r in made])
        elif not made:
            click.echo(f"run {run_id} is {record.status.value} and made no requests", err=True)
        else:
            print_all_requests(made)
        return
    open_requests = reader.requests(run_id)
    if output == "json":
        print_json([request_json(r) for r in open_requests])
    elif not open_requests and (stop := at_breakpoint(record)):
        click.echo(
            f"{stop}, with no open requests; let it go on with `{graphq_prefix()} runs resume {run_id}`",
            err=True,
        )
    elif not open_requests:
        click.echo(
            f"run {run_id} is {record.status.value}: no open requests (every request it made: "
            f"`{graphq_prefix()} runs requests {run_id} --all`)",
            err=True,
        )
    else:
        print_requests(open_requests)


_update_option = click.option(
    "--update",
    "update_text",
    metavar="JSON|@FILE",
    help="State updates applied before the step it goes on with runs (a JSON object, through the "
    "reducers): LangGraph's Command(update=...).",
)
_goto_option = click.option(
    "--goto",
    multiple=True,
    metavar="NODE",
    help="A node the step it goes on with runs too (repeatable): LangGraph's Command(goto=...).",
)


@click.command("answer", short_help="Answer a paused run's open request(s).")
@click.argument("run_id", metavar="RUN")
@click.option(
    "--value",
    "value_text",
    required=True,
    metavar="JSON|@FILE",
    help="The answer: JSON text (a string is quoted: '\"yes\"'), or @path of a JSON file. With "
    "several open requests and no --request, an object keyed by request ids answers them.",
)
@click.option(
    "--request",
    "-r",
    "request_id",
    metavar="ID",
    help="Answer only this request (an id from `graphq runs requests`).",
)
@click.option(
    "--again",
    is_flag=True,
    help="Answer a request that was already answered (with --request): "
    "a new run branches off the thread where the request was made, with this answer; the first "
    "branch stays in the history. Prints the new run's id.",
)
@_update_option
@_goto_option
@click.option("--wait", "-w", is_flag=True, help=_WAIT_HELP)
@processes_option
@output_option
@click.pass_obj
def answer(
    app: AppContext,
    run_id: str,
    value_text: str,
    request_id: str | None,
    again: bool,
    update_text: str | None,
    goto: tuple[str, ...],
    wait: bool,
    processes: int | None,
    output: str,
) -> None:
    """Answer the open request(s) of RUN, a run waiting for input, and let it continue.

    Prints the ids of the requests answered, one per line (--output json: a list); a worker continues the
    run. Requests left unanswered stay open and the run pauses again. Without a Redis URL, or with --wait,
    the run continues here instead and its outcome is printed like `graphq run`.

    \b
    Examples:
      graphq runs answer RUN --value '"yes"'
      graphq runs answer RUN --value '{"decision": "no", "note": "over budget"}'
      graphq runs answer RUN --request ID --value @answer.json
      graphq runs answer RUN --request ID --value '"no"' --again    # a second answer: a new branch
      graphq runs answer RUN --value '"yes"' --update '{"amount": 50}' --goto audit   # edit and answer

    With --update and --goto the answer is LangGraph's Command(resume=..., update=..., goto=...): the
    update and the goto are saved with the answer, and the answered step applies them.

    Exit codes: 0 answered (with --wait: completed), 1 failed or canceled, 2 bad input (malformed JSON,
    unknown request id, an --update key the state lacks, a --goto node the workflow lacks, several
    requests open and the answer not keyed by their ids, a run not waiting for input: nothing is
    changed), 3 waiting for input again, 130 interrupted (Ctrl-C: the run is
    canceled after its step in flight, as in `graphq run --help`).
    """
    value = parse_input(value_text, "--value")
    try:  # before any Redis is started
        check_answer(value)
    except PermanentError as exc:
        fail(f"--value: {exc}")
    update = None if update_text is None else parse_input(update_text, "--update")
    if again and (update is not None or goto):
        fail("--update and --goto go with a first answer, not with --again (a branch of the thread)")
    if again:
        _answer_again(app, run_id, request_id, value, wait, output, processes)
        return
    here = wait or app.local
    client = app.client(local=True)
    record = client.get_run(run_id)
    if here:  # the code to continue it must be here before anything changes
        refuse_other_version(app, record)
    after = last_event_id(client.kv, record)
    if app.private:  # local data: nothing else would work the answered step while the switch is off (R6)
        refuse_if_off(
            client.kv.get(keys.switch()), app.settings.enabled, what=f"run {run_id} is not answered:"
        )
    try:
        answered = client.answer(run_id, value, request_id, update=update, goto=list(goto))
    except NotAwaitingInputError as exc:
        fail(_again_hint(exc, client.keeps_history()))
    if here:
        note = f"answered {', '.join(answered)}; continuing run {run_id} here"
        _continue_here(app, client, client.get_run(run_id), note, output, processes, after)
        return
    if output == "json":
        print_json(answered)
    else:
        click.echo("\n".join(answered))
    state = switch.read(client.kv)
    where = "on a worker" if state.on else f"once `graphq enable` turns graphq on (it is {state.describe()})"
    record = client.get_run(run_id)
    pinned = record.pinned_version
    if state.on and pinned is not None and unserved(client.kv, app.settings.queue, record):
        where = f"once a worker serving its version {pinned[:SHORT]} is live (none is now)"
    loaded = app.registry.version(record.workflow) if record.workflow in app.registry.names() else None
    can_wait = loaded is not None and record.pinned_version in (None, loaded)  # else --wait refuses
    hint = " (or answer with --wait to continue it here)" if can_wait else ""
    click.echo(f"run {run_id} continues {where}; follow it with `graphq runs show {run_id}`{hint}", err=True)


@click.command("cancel", short_help="Cancel a run, or every run the filters match.")
@click.argument("run_id", metavar="[RUN]", required=False)
@click.option(
    "--interrupt",
    is_flag=True,
    help="Also signal the running nodes' cancel tokens (within about "
    "a second), instead of letting the step in flight finish.",
)
@filter_options
@bulk_options
@output_option
@click.pass_obj
def cancel(
    app: AppContext,
    run_id: str | None,
    interrupt: bool,
    tenant: str | None,
    status: str | None,
    workflow: str | None,
    schedule: str | None,
    dry_run: bool,
    yes: bool,
    output: str,
) -> None:
    """Cancel RUN and print what happened; or, with filters instead of RUN (--status, --workflow, --tenant,
    --schedule, as `graphq runs list` takes them), every run they match.

    A queued run, or one waiting for input, ends canceled at once. A running run stops before its next
    super-step; with --interrupt its running nodes are also told to stop (best effort: a node must check
    its cancel token). Checkpoints are kept: `graphq runs resume RUN` continues the thread. A run that has
    already ended is left as it is (the message says so; exit 0).

    \b
    With filters: the matching runs are counted, then, once confirmed (--yes: without asking; needed
    without a terminal), canceled 500 at a time, with progress on stderr and a one-line summary
    (`canceled 996 runs; 4 skipped: already ended`; --output json: matched, done, requested, skipped by
    reason). --dry-run prints the count, how many would be canceled and skipped by reason, and the first
    ids, and changes nothing. Runs that ended, and running runs whose cancel was requested already, are
    skipped: the same command again cancels nothing more. Ctrl-C ends the work after the batch in flight,
    prints what was done and exits 130.

    \b
    Examples:
      graphq runs cancel RUN
      graphq runs cancel --status queued --tenant acme --dry-run
      graphq runs cancel --status queued --workflow W --tenant acme --yes
    """
    filters = dict(tenant=tenant, status=status, workflow=workflow, schedule=schedule)
    if run_id is None:
        client = app.client(local=True, share=True)
        where = _bulk_filter(client, "cancel", filters)

        def work(**kw: Any) -> BulkResult:
            return client.cancel_runs(where, interrupt=interrupt, **kw)

        perform(
            work, verb="canceled", infinitive="cancel", noun="run", dry_run=dry_run, yes=yes, output=output
        )
        return
    _one_run_only(run_id, filters, dry_run, yes, output)
    # A client with a step queue: ending a queued or paused run starts the next run waiting for its thread.
    click.echo(app.client(local=True, share=True).cancel(run_id, interrupt=interrupt))


def _bulk_filter(client: Client, command: str, filters: dict[str, str | None]) -> RunFilter:
    """The filter of ``runs <command>`` without RUN: at least one filter option (exit 2 without)."""
    if all(v is None for v in filters.values()):
        given = needs_filter(command, FILTERS)
        fail(f"runs {command}: give RUN, or {given} (see graphq runs {command} --help)")
    return run_filter(client, **filters)


def _one_run_only(run_id: str, filters: dict[str, str | None], dry_run: bool, yes: bool, output: str) -> None:
    """Refuse the options of many runs with RUN (exit 2)."""
    given = [f"--{k}" for k, v in filters.items() if v is not None]
    given += [o for o, on in (("--dry-run", dry_run), ("--yes", yes), ("--output", output != "table")) if on]
    if given:
        fail(f"RUN {run_id} names one run; {', '.join(given)} go with filters instead of RUN, not with it")


@click.command(
    "resume", short_help="Continue an ended run's thread in a new run (or every one the filters match)."
)
@click.argument("run_id", metavar="[RUN]", required=False)
@_update_option
@_goto_option
@click.option("--wait", "-w", is_flag=True, help=_WAIT_HELP)
@processes_option
@filter_options
@bulk_options
@output_option
@click.pass_obj
def resume(
    app: AppContext,
    run_id: str | None,
    update_text: str | None,
    goto: tuple[str, ...],
    wait: bool,
    processes: int | None,
    tenant: str | None,
    status: str | None,
    workflow: str | None,
    schedule: str | None,
    dry_run: bool,
    yes: bool,
    output: str,
) -> None:
    """Continue RUN: an ended run's thread in a new run, from its latest checkpoint (a failed or canceled
    run; a completed one only when its thread has tasks left), or a run stopped at a static breakpoint,
    itself, past that breakpoint.

    The new run has RUN's workflow, thread, tenant and options and no input (RUN's own input when RUN
    ended before it began, e.g. canceled while queued); its id is printed (--output json: its record, with
    continued_from_run_id). A failed step runs again (its finished tasks are
    kept). A completed run's thread has tasks left only when an update (client.update_state with as_node)
    gave it next tasks again; else its resume is refused. Without a Redis URL, or with --wait, the new
    run is worked here and its outcome printed like `graphq run`.

    A run stopped at a static breakpoint (a workflow compiled with interrupt_before / interrupt_after: it
    waits for input with no request) goes on itself instead, past that breakpoint, and its own id is
    printed (LangGraph's invoke(None, config)); a second resume of the same stop is refused, also when
    two race. A run waiting in interrupt() is continued by `graphq runs answer`, not by resume.

    With --update and --goto (a run stopped at a breakpoint only) the resume is LangGraph's
    invoke(Command(update=..., goto=...)) there: the step it goes on with applies them.

    \b
    With filters instead of RUN (--status, --workflow, --tenant, --schedule, as `graphq runs list` takes
    them): every ended run they match is continued in a new run, as above, once confirmed (--yes: without
    asking; needed without a terminal), 500 at a time, with progress on stderr and a one-line summary
    (`resumed 40 runs; 2 skipped: its thread has a newer run`; --output json: matched, done, skipped by
    reason). The runs RUN's resume refuses are skipped, by reason: not ended, continued already (the same
    command again resumes nothing more), its thread has a newer run, nothing left to run. --dry-run prints
    the count, how many would be resumed and skipped by reason, and the first ids. Ctrl-C ends the work
    after the batch in flight, exit 130.

    \b
    Examples:
      graphq runs resume RUN
      graphq runs resume --status failed --workflow W --dry-run
      graphq runs resume --status failed --workflow W --tenant acme --yes

    Exit codes: 0 enqueued (with --wait: completed), 1 failed or canceled, 2 refused (the run is
    unknown, queued or running, waits for an answer, went on past its breakpoint already, its thread has a
    newer run, or its thread has nothing left to run; an invalid --update or --goto, or one for a run not
    stopped at a breakpoint: nothing is changed), 3 waiting for input, 130 interrupted (Ctrl-C: the run is
    canceled after its step in flight, as in `graphq run --help`).
    """
    filters = dict(tenant=tenant, status=status, workflow=workflow, schedule=schedule)
    if run_id is None:
        one_run = [o for o, on in (("--update", update_text), ("--goto", goto), ("--wait", wait)) if on]
        if one_run:
            fail(f"{', '.join(one_run)} go with RUN, one run; not with filters")
        _resume_all(app, filters, dry_run, yes, output)
        return
    _one_run_only(run_id, filters, dry_run, yes, "table")
    update = None if update_text is None else parse_input(update_text, "--update")
    client = app.client(local=True)
    if wait or app.local:
        refuse_other_version(app, client.get_run(run_id))
    new_id = client.resume(run_id, update=update, goto=list(goto))
    thread = client.get_run(new_id).thread_id
    note = f"run {new_id} continues run {run_id} on thread {thread}"
    if new_id == run_id:
        note = f"run {run_id} goes on past its breakpoint on thread {thread}"
    _started(app, client, new_id, note, wait, output, processes)


def _resume_all(
    app: AppContext, filters: dict[str, str | None], dry_run: bool, yes: bool, output: str
) -> None:
    """``runs resume`` with filters: every ended run they match, continued in a new run; workers run them."""
    client = app.client(local=True)
    where = _bulk_filter(client, "resume", filters)

    def work(**kw: Any) -> BulkResult:
        return client.resume_runs(where, **kw)

    perform(work, verb="resumed", infinitive="resume", noun="run", dry_run=dry_run, yes=yes, output=output)


def _again_hint(exc: NotAwaitingInputError, history: bool) -> str:
    """The refusal of an answer to a run that waits for none, with the command that answers one of its
    answered requests again, on a new branch (not offered without checkpoint ``history``, R5)."""
    message = exc.refusal
    if not history:
        return message
    if len(exc.answered) == 1:
        command = again_command(exc.run_id, exc.answered[0])
        return f"{message}; to answer its request again, on a new branch: {command}"
    if exc.answered:
        command = again_command(exc.run_id)
        ids = ", ".join(exc.answered)
        return f"{message}; to answer one of its requests again, on a new branch: {command} (ids: {ids})"
    return message


def _answer_again(
    app: AppContext,
    run_id: str,
    request_id: str | None,
    value: Any,
    wait: bool,
    output: str,
    processes: int | None,
) -> None:
    """R16: a second answer to an answered request starts a branch run."""
    client = app.client(local=True)
    if request_id is None:
        made = [r.id for r in client.run_requests(run_id)]
        listed = f"; run {run_id} made: {', '.join(made)}" if made else f"; run {run_id} made no requests"
        fail(f"--again needs --request ID (the request to answer again){listed}")
    if wait or app.local:
        refuse_other_version(app, client.get_run(run_id))
    new_id = client.answer_again(run_id, request_id, value)
    note = f"run {new_id} branches off run {run_id} with a new answer"
    _started(app, client, new_id, note, wait, output, processes)


def _started(
    app: AppContext,
    client: Client,
    new_id: str,
    note: str,
    wait: bool,
    output: str,
    processes: int | None,
) -> None:
    """A new run was enqueued: work it here (no Redis URL, or --wait; ``processes``: ``--processes``), else
    print its id or record."""
    record = client.get_run(new_id)
    raw = client.kv.get(keys.thread_active(record.thread_id))
    active = new_id if raw is None else raw.decode()
    line = (
        ""
        if active == new_id
        else (
            f"run {new_id} waits until run {active}, active on thread {record.thread_id}, ends (`graphq runs "
            "cancel` ends a run waiting for input)"
        )
    )
    if wait or app.local:
        _continue_here(app, client, record, f"{note}\n{line}" if line else note, output, processes)
        return
    if line:
        click.echo(line, err=True)
    if output == "json":
        print_json(record_json(record))
    else:
        click.echo(new_id)
