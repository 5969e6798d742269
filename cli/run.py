"""``graphq run``: the one-command local run — Redis (embedded unless configured), enqueue, work, report.

The worker runs in the main thread (RQ installs its signal handlers there); a background thread follows the
run's event stream and prints one line per super-step. With ``--processes N`` (N > 1) a pool of N-1 more
worker processes serves the run's workflow beside it (:class:`~graphq.worker.process.supervisor.Supervisor`,
from a thread). :func:`follow_and_work` and :func:`report` are shared with ``graphq runs answer`` and
``graphq runs resume``, which continue a run the same way.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import click
from rich.console import Console
from rich.text import Text

from graphcore import keys
from graphcore.backend.client import Client, RunRequest, ValidRun
from graphcore.backend.connection import connect, redact_url
from graphcore.backend.events import Event, read_events
from graphcore.backend.json_forms import record_json, request_json, to_json
from graphcore.backend.runs import RunRecord, RunStatus
from graphcore.backend.switch import refuse_if_off
from graphcore.backend.threads import Multitask
from graphcore.errors import GraphqError
from graphcore.settings import MAX_PROCESSES, Settings
from graphq.cli.bounds import PROCESSES
from graphq.cli.context import AppContext
from graphq.cli.ctrl_c import CtrlC, how_left
from graphq.cli.enqueue import multitask_option
from graphq.cli.errors import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_WAITING, fail
from graphq.cli.inputs import checked, make_data_dir, parse_input
from graphq.cli.output import err_console, output_option, print_json
from graphq.cli.progress import StepBars
from graphq.cli.records import at_step, print_waiting
from graphq.cli.state import tasks_text
from graphq.worker.housekeeping.loops import reap_now
from graphq.worker.process.rq_worker import run_worker
from graphq.worker.process.supervisor import Supervisor

__all__ = [
    "follow_and_work",
    "last_event_id",
    "processes_option",
    "processes_used",
    "redis_line",
    "report",
    "run",
]

_POLL_MS = 200


class _Follower(threading.Thread):
    """Prints a run's progress from its event stream (after stream id ``after``) until the run ends or
    pauses, or :meth:`finish` is called."""

    def __init__(self, kv: Any, run: RunRecord, console: Console, started: float, after: str) -> None:
        super().__init__(name="graphq-follow", daemon=True)
        self.kv, self.run_record, self.console = kv, run, console
        self.started = self.last = started
        self.after = after
        self.nodes: dict[int, list[str]] = {}
        self.bars = StepBars(console)  # on a terminal: live counts inside wide steps
        self._finishing = threading.Event()
        self._ended = False

    def finish(self, timeout_s: float = 5.0) -> None:
        """Print what is left of the stream, then stop the thread and close its connection."""
        self._finishing.set()
        self.join(timeout_s)
        self.bars.close()
        self.kv.close()

    def run(self) -> None:
        """Follow the stream (the thread's body)."""
        try:
            while not self._ended:
                events = list(
                    read_events(
                        self.kv, self.run_record.thread_id, self.run_record.id, self.after, block_ms=_POLL_MS
                    )
                )
                for event in events:
                    self.after = event.id
                    self._show(event)
                if not events and self._finishing.is_set():
                    return
        except Exception as exc:  # a display problem must never stop the run itself
            self.console.print(f"(progress display stopped: {type(exc).__name__}: {exc})", markup=False)

    def _show(self, event: Event) -> None:
        if event.mode == "progress":
            self.bars.update(self.run_record.id, event.step, event.data)
        elif event.mode == "updates" and isinstance(event.data, dict):
            self.nodes.setdefault(event.step, []).extend(event.data)
        elif event.mode == "values" and event.step in self.nodes:
            self._step_line(event.step)  # a checkpoint without updates starts the run (input, fork): no line
        elif event.mode == "status" and isinstance(event.data, dict):
            self._status_line(event.data)

    def _step_line(self, step: int) -> None:
        self.bars.step_done(self.run_record.id, step)
        now = time.monotonic()
        names = self.nodes.pop(step, [])
        tasks = f"{len(names)} task" + ("" if len(names) == 1 else "s")
        self.console.print(
            Text.assemble(
                (f"step {step:>3}", "bold"),
                f"  {tasks_text(names) or '-'}  ({tasks})  ",
                (f"{now - self.last:.2f} s", "cyan"),
                f"  total {now - self.started:.2f} s",
            )
        )
        self.last = now

    def _status_line(self, data: dict[str, Any]) -> None:
        status = str(data.get("status"))
        total = f"{time.monotonic() - self.started:.2f} s"
        if status == RunStatus.RUNNING:
            self.console.print(Text(f"run {self.run_record.id} running", style="dim"))
        elif status == RunStatus.AWAITING_INPUT:
            self.console.print(Text(f"waiting for input after {total}", style="yellow"))
            self._ended = True
        elif status in (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELED):
            style = "green" if status == RunStatus.COMPLETED else "red"
            error = f": {data['error']}" if data.get("error") else ""
            self.console.print(Text(f"{status} after {total}{error}", style=style))
            self._ended = True


def redis_line(app: AppContext, url: str) -> str:
    """Which Redis a command works on: the configured URL (no password) or the local embedded server."""
    if not app.local:
        return f"redis: {redact_url(url)} (configured)"
    where = "embedded" if app.private else "embedded, shared with another graphq command"
    return f"redis: {url} ({where}; data in {Path(app.settings.data_dir).resolve()})"


def last_event_id(kv: Any, run: RunRecord) -> str:
    """The id of the run's newest event ("0-0" when it has none): follow a continued run from there."""
    newest = kv.xrevrange(keys.run_events(run.thread_id, run.id), count=1)
    return str(newest[0][0].decode()) if newest else "0-0"


processes_option = click.option(
    "--processes",
    type=PROCESSES,
    default=None,
    metavar="N",
    help="Worker processes that work the run: this one and N-1 more, which serve only its workflow and "
    "stop with the command [env GRAPHQ_RUN_PROCESSES; default: one per core].",
)
"""``--processes N`` of the commands that work a run here (``graphq run``, ``runs answer``/``resume``)."""


def _cores() -> int:
    """The cores this process may run on: its CPU affinity where the platform tells it (a container limited
    to fewer cores), else every core."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def processes_used(app: AppContext, processes: int | None) -> tuple[int, str]:
    """How many worker processes work the run — ``processes`` (``--processes``), else
    ``GRAPHQ_RUN_PROCESSES``, else one per core (at most 256) — and the line saying so on stderr, e.g.
    ``workers: 2 processes (one per core; --processes N)``."""
    if processes is not None:
        count, why = processes, f"--processes {processes}"
    elif app.settings.run_processes is not None:
        count, why = app.settings.run_processes, f"GRAPHQ_RUN_PROCESSES={app.settings.run_processes}"
    else:
        count, why = min(_cores(), MAX_PROCESSES), "one per core; --processes N"
    return count, f"workers: {count} process{'' if count == 1 else 'es'} ({why})"


def _quieted() -> dict[str, str]:
    """Loggers whose lines this command says itself, and their level in its workers: the run's end (its
    ``error:`` line), unless ``--verbose``."""
    return {} if logging.getLogger().isEnabledFor(logging.INFO) else {"graphq.runs": "ERROR"}


def _settings(app: AppContext, url: str, run: RunRecord) -> Settings:
    """The settings of this command's workers for ``run``: on ``url``; taking new runs' first steps only
    when ``run``'s next step is one of those (not pinned to a version yet), so that on a shared Redis they
    do not start, and pin to the code here, other runs."""
    return app.settings.model_copy(update={"redis_url": url, "take_new_runs": run.pinned_version is None})


def _work_once(app: AppContext, url: str, kv: Any, run: RunRecord, ctrl_c: CtrlC) -> bool:
    """One burst of the in-process worker on the queues of ``run``'s workflow only; returns whether it
    worked a job."""
    settings = _settings(app, url, run)
    workflow = run.workflow
    quieted = _quieted()
    saved = {name: logging.getLogger(name).level for name in quieted}
    for name, quiet in quieted.items():
        logging.getLogger(name).setLevel(quiet)
    try:
        only = app.registry.only([workflow])
        return run_worker(settings, burst=True, registry=only, kv=kv, worker_class=ctrl_c.worker_class())
    finally:
        for name, level in saved.items():
            logging.getLogger(name).setLevel(level)


@contextlib.contextmanager
def _pool(app: AppContext, url: str, run: RunRecord, processes: int, ctrl_c: CtrlC) -> Iterator[bool]:
    """Beside the in-process worker, ``processes`` - 1 worker processes (none for 1) serving only
    ``run``'s workflow on ``url`` (:func:`_settings`), with this command's log level, while the block
    runs; yields whether there are any. On the way out they drain (their steps in flight finish) before
    this returns: the embedded Redis stops after them. They are SIGKILLed when this process dies (even by
    SIGKILL); Ctrl-C: see :class:`CtrlC`."""
    if processes <= 1:
        yield False
        return
    pool = Supervisor(
        connect(url),
        _settings(app, url, run),
        processes - 1,
        log_level=logging.getLevelName(logging.getLogger().getEffectiveLevel()),
        workflows=[run.workflow],
        log_levels=_quieted(),
        parent_death=signal.SIGKILL,
        housekeeping=False,  # the in-process worker's
    )
    ctrl_c.pool = pool
    supervising = pool.start()
    try:
        yield True
    finally:
        pool.drain()
        supervising.join()
        pool.kv.close()


def _lost(client: Client, record: RunRecord) -> bool:
    """Whether ``record``'s step job is neither queued nor held under a lease (a process of the pool may
    hold it). A step committed meanwhile is not taken for lost: the run is read again and must not have
    moved on."""
    member = keys.step_member(record.thread_id, record.id, record.step)
    queued = client.kv.zscore(keys.steps_index(), member) is not None
    held = bool(client.kv.exists(keys.lease(record.thread_id, record.id)))
    again = client.get_run(record.id)
    return not (queued or held) and (again.step, again.status) == (record.step, record.status)


def _drive(app: AppContext, client: Client, url: str, run: RunRecord, ctrl_c: CtrlC, pooled: bool) -> bool:
    """Work the queue until the run ends (or waits for input); returns True when interrupted (Ctrl-C).
    ``pooled``: a pool of worker processes works it too.

    Raises:
        GraphqError: on a Redis of this command only, the queue ran dry while the run was not finished
            (and, with a pool, no process holds its step).
    """
    run_id = run.id
    while True:
        worked = _work_once(app, url, client.kv, run, ctrl_c)
        if ctrl_c.stop.is_set():
            return True
        record = client.get_run(run_id)
        if record.terminal or record.status == RunStatus.AWAITING_INPUT:
            return False
        if app.private and not worked:
            refuse_if_off(client.kv.get(keys.switch()), app.settings.enabled, what=f"run {run_id} waits:")
        if app.private and not worked and (not pooled or _lost(client, record)):
            raise GraphqError(
                f"run {run_id} is {record.status.value}{at_step(client, record)} but its queue is "
                "empty; see `graphq runs show`"
            )
        time.sleep(0.2)  # another worker holds the run's step; help with the next one


def follow_and_work(
    app: AppContext,
    client: Client,
    run: RunRecord,
    console: Console,
    *,
    after: str = "0-0",
    started: float | None = None,
    processes: int = 1,
) -> RunRecord:
    """Work ``run``'s steps in this process, printing progress from its events after ``after``, until it
    ends or waits for input; returns its final record. ``processes``: how many worker processes work it,
    this one and a pool of ``processes`` - 1 (see :func:`_pool`).

    Ctrl-C (or SIGTERM): see :mod:`graphq.cli.ctrl_c` (the run is canceled after its step in flight; a second
    Ctrl-C exits at once).

    Raises:
        CliError: interrupted (exit 130), with how the run is left and how it goes on.
        GraphqError: see :func:`_drive`.
    """
    url = app.url(local=True)
    follower = _Follower(connect(url), run, console, time.monotonic() if started is None else started, after)
    follower.start()
    ctrl_c = CtrlC(client, run, console, url)
    try:
        with ctrl_c.installed():
            with _pool(app, url, run, processes, ctrl_c) as pooled:
                interrupted = _drive(app, client, url, run, ctrl_c, pooled)
            ctrl_c.wait()
            if interrupted:
                ctrl_c.settle()
    finally:
        follower.finish()
    record = client.get_run(run.id)
    if interrupted:
        fail(f"interrupted: {how_left(record, ctrl_c.asked)}", EXIT_INTERRUPTED)
    return record


def _print_json(client: Client, record: RunRecord, waiting: bool) -> None:
    data = record_json(record)
    if waiting:
        data["requests"] = [request_json(r) for r in client.requests(record.id)]
    print_json(data)


def report(client: Client, record: RunRecord, output: str) -> None:
    """Print how a run ended (like ``graphq run``) and stop with its exit code.

    Completed: the workflow's formatted report, else the final state as JSON (exit 0). Waiting for input:
    the open requests and the command answering them (exit 3). Failed or canceled: an ``error:`` line (exit
    1). ``--output json``: the run record, with its open ``requests`` when it waits.
    """
    waiting = record.status == RunStatus.AWAITING_INPUT
    if output == "json":
        _print_json(client, record, waiting)
    elif record.status == RunStatus.COMPLETED:
        formatter = client.registry.get(record.workflow).formatter
        click.echo(formatter(record.result) if formatter is not None else to_json(record.result))
    elif waiting:
        print_waiting(record, client.requests(record.id), client.thread_step(record))
    if record.status in (RunStatus.FAILED, RunStatus.CANCELED):
        error = f": {record.error.type}: {record.error.message}" if record.error else ""
        fail(f"run {record.id} {record.status.value}{at_step(client, record)}{error}", EXIT_FAILURE)
    if waiting:
        click.get_current_context().exit(EXIT_WAITING)


def _execute(
    app: AppContext,
    client: Client,
    request: ValidRun,
    console: Console,
    started: float,
    multitask: Multitask = "enqueue",
    processes: int = 1,
) -> RunRecord:
    """Enqueue the run and work it here to its end (or first pause). On a shared Redis (a URL given) a
    pinned run is pinned to the code here from its first step: it runs here, and this command's workers
    start no other run (:func:`_settings`)."""
    if not app.local and request.record.pinned:
        pinned = {"version": app.registry.version(request.record.workflow)}
        request = replace(request, record=request.record.model_copy(update=pinned))
    run_id = client.enqueue_many([request], multitask)[0]
    record = client.get_run(run_id)
    console.print(f"run {run_id}: {record.workflow} on thread {record.thread_id}", markup=False)
    active = client.kv.get(keys.thread_active(record.thread_id))
    if active is not None and active.decode() != run_id:
        console.print(
            f"thread {record.thread_id} is busy with run {active.decode()}: this run waits until "
            "that one ends (--multitask reject refuses it instead)",
            markup=False,
        )
    return follow_and_work(app, client, record, console, started=started, processes=processes)


@click.command()
@click.argument("workflow")
@click.option(
    "--input",
    "-i",
    "input_text",
    metavar="JSON|@FILE",
    help="The run's input: JSON text, or @path of a JSON file. Default {}.",
)
@click.option("--thread", "-t", metavar="ID", help="Thread id (default: a new thread).")
@click.option("--tenant", default="default", show_default=True, help="Tenant the run is for.")
@multitask_option
@processes_option
@output_option
@click.pass_obj
def run(
    app: AppContext,
    workflow: str,
    input_text: str | None,
    thread: str | None,
    tenant: str,
    multitask: str,
    processes: int | None,
    output: str,
) -> None:
    """Run WORKFLOW to the end in this process and print its result.

    Uses GRAPHQ_REDIS_URL when set; otherwise starts an embedded redis-server with its append-only file in
    GRAPHQ_DATA_DIR (default .graphq), so runs and checkpoints survive. Progress (one line per super-step)
    goes to stderr; the result goes to stdout: the workflow's formatted report when it has one, else the
    final state as JSON (--output json: the whole run record). With GRAPHQ_REDIS_URL the in-process
    worker also helps with other queued steps of the same workflow until this run ends.

    The run is worked by one worker process per core (--processes N, or GRAPHQ_RUN_PROCESSES): this one
    and a pool of N-1 more, which serve only WORKFLOW, on the same Redis. A line on stderr says how
    many. The pool stops with the command: at the run's end once its steps in flight finish, at
    Ctrl-C with the run, and at once if the command is killed. --processes 1: this process only.

    When a node asks a human (interrupt()), the run pauses: the open requests are printed with the
    command that answers them (`graphq runs answer RUN --value JSON`), which continues the run.

    \b
    Examples:
      graphq run code-inventory
      graphq run code-inventory --input '{"root": "src"}'
      graphq --workflows mypkg.flows run my-flow --input @input.json

    Ctrl-C (or SIGTERM) cancels the run after its step in flight, and says so at once: the running
    nodes' cancel tokens are set (a node that checks get_cancel_token() stops early), the run ends
    canceled with its checkpoints kept (`graphq runs resume RUN` continues it), exit 130. A second
    Ctrl-C exits 130 at once, cutting the step: the run stays running until crash recovery acts on it
    (its lease lapses; a worker's reaper, on the local data the next `graphq run`, ends it canceled).

    Exit codes: 0 completed, 1 failed or canceled, 2 bad input (also a busy --thread with --multitask
    reject), 3 waiting for input, 130 interrupted (Ctrl-C; checkpoints kept).
    """
    request = RunRequest(workflow, parse_input(input_text), thread_id=thread, tenant=tenant)
    given = {"--tenant"} if thread is None else {"--thread", "--tenant"}
    valid = checked(app.registry, request, "--input", given)  # before any Redis is started or data dir made
    console = err_console()
    started = time.monotonic()
    if app.local:
        make_data_dir(app.settings.data_dir)
    try:
        url = app.url(local=True)
        refuse_if_off(app.kv(local=True).get(keys.switch()), app.settings.enabled)  # before any output (R6)
        console.print(redis_line(app, url), markup=False)
        count, workers = processes_used(app, processes)
        console.print(workers, markup=False)
        client = app.client(local=True)
        if app.private:  # the runs an earlier `graphq run` left (a second Ctrl-C) end as promised
            reap_now(client.kv, app.settings.model_copy(update={"redis_url": url}))
        record = _execute(app, client, valid, console, started, cast(Multitask, multitask), count)
    except KeyboardInterrupt:
        fail("interrupted", EXIT_INTERRUPTED)
    report(client, record, output)
