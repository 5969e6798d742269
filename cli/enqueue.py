"""``graphq enqueue``: put one run or a batch of runs on the queue, optionally waiting for them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, TypeVar, cast

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from graphcore.backend.client import Client, RunRequest, queue_config
from graphcore.backend.json_forms import request_json
from graphcore.backend.runs import RunRecord, RunStatus
from graphcore.backend.threads import Multitask
from graphcore.errors import ConfigError, PermanentError
from graphq.cli.bounds import WAIT_S
from graphq.cli.context import AppContext
from graphq.cli.errors import EXIT_FAILURE, EXIT_WAITING, fail
from graphq.cli.inputs import check_ids, checked, fail_at, parse_input, read_batch
from graphq.cli.output import err_console, output_option, print_json
from graphq.cli.progress import ProgressFollower, StepBars, step_columns
from graphq.cli.records import at_step, print_waiting

__all__ = ["enqueue", "multitask_option", "wait_for_runs"]

_F = TypeVar("_F", bound=Callable[..., Any])


def multitask_option(fn: _F) -> _F:
    """Decorator: add ``--multitask [enqueue|reject]`` (default ``enqueue``) to a command as ``multitask``."""
    option = click.option(
        "--multitask",
        type=click.Choice(("enqueue", "reject")),
        default="enqueue",
        show_default=True,
        help="One active run per thread: a run on a busy thread waits behind the active one (enqueue), or "
        "is refused with reject (exit 2, nothing enqueued).",
    )
    return option(fn)


def _fork_request(
    workflow: str, input_text: str | None, thread: str | None, tenant: str, checkpoint: str
) -> RunRequest:
    """A run starting from ``checkpoint`` of ``thread`` (C3); without --input it continues the checkpoint's
    next tasks."""
    if thread is None:
        fail("--checkpoint needs --thread (the thread the checkpoint belongs to)")
    value = None if input_text is None else parse_input(input_text)
    return RunRequest(workflow, value, thread_id=thread, tenant=tenant, config={"checkpoint_id": checkpoint})


def _requests(
    workflow: str,
    input_text: str | None,
    input_file: str | None,
    thread: str | None,
    tenant: str,
    checkpoint: str | None = None,
) -> list[tuple[RunRequest, str]]:
    """The runs to enqueue, each with where its input came from (for error messages)."""
    if input_file is not None and checkpoint is not None:
        fail("--checkpoint starts one run on --thread; it does not go with --input-file")
    if checkpoint is not None:
        return [(_fork_request(workflow, input_text, thread, tenant, checkpoint), "--input")]
    if input_file is None:
        return [(RunRequest(workflow, parse_input(input_text), thread_id=thread, tenant=tenant), "--input")]
    if input_text is not None:
        fail("use either --input or --input-file, not both")
    check_ids(thread, tenant)  # the defaults of the lines: wrong even where every line names its own
    lines = read_batch(input_file)
    return [
        (
            RunRequest(
                workflow,
                line.input,
                thread_id=thread if line.thread is None else line.thread,
                tenant=tenant if line.tenant is None else line.tenant,
                config={} if line.webhook is None else {"webhook": line.webhook},
            ),
            line.where,
        )
        for line in lines
    ]


def _with_webhook(
    requests: list[tuple[RunRequest, str]], webhook: str | None
) -> list[tuple[RunRequest, str]]:
    """``requests`` with ``--webhook`` as their webhook, but where a batch line names its own (the client
    checks it, :func:`~graphcore.backend.webhooks.check_webhook`); ``--config``'s comes last."""
    if webhook is None:
        return requests
    return [(replace(r, config={"webhook": webhook, **r.config}), where) for r, where in requests]


def _with_config(
    requests: list[tuple[RunRequest, str]], config_text: str | None, checkpoint: str | None
) -> list[tuple[RunRequest, str]]:
    """``requests`` with the run options of ``--config`` under their own (a fork's checkpoint_id wins); the
    client checks them (:func:`~graphcore.backend.client.check_request`, a thread id there too).

    Raises:
        CliError: ``--config`` is not a JSON object, or names another checkpoint than ``--checkpoint``.
    """
    if config_text is None:
        return requests
    config = parse_input(config_text, "--config")
    if not isinstance(config, dict):
        fail(f"--config: must be a JSON object of run options (got {type(config).__name__})")
    if checkpoint is not None:
        _refuse_two_checkpoints(config, checkpoint)
    return [(replace(r, config={**config, **r.config}), where) for r, where in requests]


def _refuse_two_checkpoints(config: dict[str, Any], checkpoint: str) -> None:
    """``--checkpoint`` would win over a different checkpoint_id of ``--config`` without a word: refuse.

    Raises:
        CliError: the config is invalid, or names another checkpoint.
    """
    try:
        start = queue_config(config).checkpoint_id
    except ConfigError as exc:
        fail(f"--config: {exc}")
    if start is not None and start != checkpoint:
        fail(f"--config: checkpoint_id {start!r} differs from --checkpoint {checkpoint!r}; give one of them")


def _given(**options: str | None) -> set[str]:
    """The run options given on the command line, as ``--name`` (``--tenant`` always: it has a default)."""
    return {"--tenant", *(f"--{name}" for name, value in options.items() if value is not None)}


def wait_for_runs(
    client: Client, run_ids: Sequence[str], timeout_s: float | None, url: str | None = None
) -> list[RunRecord]:
    """Wait until every run has ended or waits for input; returns their final records. When stderr is a
    terminal it shows a progress bar of the runs there (with ``url``, also a live bar per running step of
    several tasks); elsewhere (a pipe, a file) it draws nothing.

    Raises:
        TimeoutError: some runs were still queued or running after ``timeout_s`` seconds.
    """
    console = err_console()
    if not console.is_terminal:
        return client.wait(run_ids, timeout_s=timeout_s, poll_s=0.1)
    stopped: set[str] = set()
    columns = (
        step_columns()
        if url is not None
        else (TextColumn("runs"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    )
    with Progress(*columns, console=console, transient=False) as progress:
        bar = progress.add_task("runs", total=len(run_ids))
        follower = None
        if url is not None:
            runs = [(client.runs.get(r).thread_id, r) for r in run_ids]
            follower = ProgressFollower(url, runs, StepBars(console, progress, label_runs=len(runs) > 1))
            follower.start()

        def on_change(record: RunRecord) -> None:
            if record.terminal or record.status == RunStatus.AWAITING_INPUT:
                stopped.add(record.id)
            else:
                stopped.discard(record.id)  # answered meanwhile: going again
            progress.update(bar, completed=len(stopped))

        try:
            return client.wait(run_ids, timeout_s=timeout_s, poll_s=0.1, on_change=on_change)
        finally:
            if follower is not None:
                follower.stop()


def _print_records(client: Client, records: Sequence[RunRecord]) -> None:
    """``--output json``: the final records; one waiting for input with its open ``requests``."""
    print_json(
        [
            r.model_dump()
            | (
                {"requests": [request_json(i) for i in client.requests(r.id)]}
                if r.status == RunStatus.AWAITING_INPUT
                else {}
            )
            for r in records
        ]
    )


def _report(client: Client, records: Sequence[RunRecord], output: str) -> None:
    """How the runs stopped: a run waiting for input is printed like `graphq run` prints it (its open
    requests and the commands answering them; not with --output json), a failed or canceled one on stderr.
    Exit 1 when any failed or was canceled, else 3 when any waits for input."""
    waiting = [r for r in records if r.status == RunStatus.AWAITING_INPUT]
    if output != "json":
        for r in waiting:
            print_waiting(r, client.requests(r.id), client.thread_step(r))
    bad = [r for r in records if r.status in (RunStatus.FAILED, RunStatus.CANCELED)]
    for r in bad:
        reason = f": {r.error.type}: {r.error.message}" if r.error else ""
        chain = (
            f", attempt {r.attempt} of its chain, continues {r.continued_from_run_id}"
            if r.attempt > 1
            else ""
        )
        click.echo(f"run {r.id} ({r.workflow}{chain}) {r.status.value}{at_step(client, r)}{reason}", err=True)
    if bad:
        also = f"; {len(waiting)} waiting for input" if waiting else ""
        fail(f"{len(bad)} of {len(records)} runs did not complete{also}", EXIT_FAILURE)
    if waiting:
        click.get_current_context().exit(EXIT_WAITING)


@click.command()
@click.argument("workflow")
@click.option(
    "--input",
    "-i",
    "input_text",
    metavar="JSON|@FILE",
    help="The run's input: JSON text, or @path of a JSON file. Default {}.",
)
@click.option(
    "--input-file",
    "-f",
    metavar="RUNS.JSONL",
    help="Batch mode: one run per non-blank line, each a JSON object "
    '{"input": {...}, "thread": "...", "tenant": "...", "webhook": "..."} (only input is required). '
    "All lines are checked first; a bad line is reported with its line number (PATH:LINE) "
    "and nothing is enqueued. - reads stdin.",
)
@click.option(
    "--thread",
    "-t",
    metavar="ID",
    help="Thread id (default: a new thread per run); the default for batch lines without one.",
)
@click.option("--tenant", default="default", show_default=True, help="Tenant (default for batch lines).")
@click.option(
    "--checkpoint",
    "-c",
    metavar="ID",
    help="Start from this checkpoint of --thread (an id from `graphq state THREAD --history`) instead of "
    "its latest: a fork, a new branch of the thread. Without --input the run continues the checkpoint's "
    "next tasks; with --input the input is applied to the checkpoint's state and the workflow starts over.",
)
@click.option(
    "--config",
    "config_text",
    metavar="JSON|@FILE",
    help="Run options of every run, a JSON object: LangGraph's config as it is "
    '(\'{"configurable": {"thread_id": "t-1"}, "recursion_limit": 10, "tags": ["nightly"]}\') or graphq\'s '
    "(max_super_steps, run_timeout_s, ...). Not run_id: the queue names each run (the id printed).",
)
@click.option(
    "--webhook",
    metavar="URL",
    help="POST each run's summary to URL (http or https) when it ends or waits for input; a batch line's "
    '"webhook" wins. Signed with GRAPHQ_WEBHOOK_SECRET; see the webhooks guide.',
)
@multitask_option
@click.option(
    "--wait",
    "-w",
    is_flag=True,
    help="Wait until every run ends or waits for input (a bar of the runs on stderr when it is a terminal); "
    "exit 1 if any failed, 3 if any waits.",
)
@click.option(
    "--timeout",
    type=WAIT_S,
    metavar="S",
    help="With --wait: give up after S seconds (exit 1).",
)
@output_option
@click.pass_obj
def enqueue(
    app: AppContext,
    workflow: str,
    input_text: str | None,
    input_file: str | None,
    thread: str | None,
    tenant: str,
    checkpoint: str | None,
    config_text: str | None,
    webhook: str | None,
    multitask: str,
    wait: bool,
    timeout: float | None,
    output: str,
) -> None:
    """Enqueue runs of WORKFLOW and print their run ids, one per line.

    \b
    Examples:
      graphq enqueue code-inventory --input '{"root": "src"}' --wait
      graphq enqueue code-inventory --input @input.json --thread t-1
      graphq enqueue code-inventory --input-file runs.jsonl --wait
      graphq enqueue code-inventory --thread t-1 --checkpoint ID --multitask reject
      graphq enqueue code-inventory --config '{"configurable": {"thread_id": "t-1"}}'
      graphq enqueue code-inventory --webhook https://example.com/hooks/graphq

    With --output json, prints a JSON list of run ids (with --wait, the final run records).
    --wait ends when every run has ended or waits for input (a node asked a human): those are printed with
    their open requests and the command answering them, as `graphq run` does.

    Exit codes: 0 ok, 1 a run failed or the wait timed out, 2 bad input (nothing enqueued; also a busy
    thread with --multitask reject, or an unknown --checkpoint or config checkpoint_id), 3 (with --wait) a
    run waits for input.
    """
    if timeout is not None and not wait:
        raise click.UsageError("--timeout needs --wait (it bounds the wait)")
    requests = _with_config(
        _with_webhook(_requests(workflow, input_text, input_file, thread, tenant, checkpoint), webhook),
        config_text,
        checkpoint,
    )
    app.workflow(workflow)  # an unknown name: the catalog's hint (the only Redis read before the checks)
    given = _given(thread=thread, checkpoint=checkpoint, config=config_text, webhook=webhook)
    valid = [checked(app.registry, r, where, given) for r, where in requests]  # before any Redis starts
    client = app.client()
    try:  # reads a fork's checkpoint once
        run_ids = client.enqueue_many(valid, cast(Multitask, multitask))
    except PermanentError as exc:
        if exc.param is None:  # not of a request: a busy thread, the kill switch
            raise
        fail_at(exc, "--input", given)
    if output == "table":
        click.echo("\n".join(run_ids))
    if not wait:
        if output == "json":
            print_json(run_ids)
        return
    records = wait_for_runs(client, run_ids, timeout, app.url())
    if output == "json":
        _print_records(client, records)
    _report(client, records, output)
