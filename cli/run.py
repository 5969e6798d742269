"""``graphq run``: the one-command local run — Redis (embedded unless configured), enqueue, work, report.

The worker runs in the main thread (RQ installs its signal handlers there); a background thread follows the
run's event stream and prints one line per super-step.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.text import Text

from cli.context import AppContext
from cli.errors import EXIT_FAILURE, EXIT_INTERRUPTED, fail
from cli.inputs import parse_input
from cli.output import err_console, output_option, print_json, to_json
from cli.runs import record_json
from cli.state import tasks_text
from graphcore import keys
from graphcore.client import Client, RunRequest
from graphcore.connection import connect, redact_url
from graphcore.embedded import EmbeddedRedis
from graphcore.errors import GraphqError
from graphcore.events import Event, read_events
from graphcore.executor import CompiledGraph
from graphcore.registry import Registry
from graphcore.runs import RunRecord, RunStatus
from worker.process import run_worker

__all__ = ["run"]

_POLL_MS = 200


class _Follower(threading.Thread):
    """Prints a run's progress from its event stream until the run ends or :meth:`finish` is called."""

    def __init__(self, kv: Any, run: RunRecord, console: Console, started: float) -> None:
        super().__init__(name="graphq-follow", daemon=True)
        self.kv, self.run_record, self.console = kv, run, console
        self.started = self.last = started
        self.nodes: dict[int, list[str]] = {}
        self._finishing = threading.Event()
        self._ended = False

    def finish(self, timeout_s: float = 5.0) -> None:
        """Print what is left of the stream, then stop the thread and close its connection."""
        self._finishing.set()
        self.join(timeout_s)
        self.kv.close()

    def run(self) -> None:
        """Follow the stream (the thread's body)."""
        after = "0-0"
        try:
            while not self._ended:
                events = list(read_events(self.kv, self.run_record.thread_id, self.run_record.id, after,
                                          block_ms=_POLL_MS))
                for event in events:
                    after = event.id
                    self._show(event)
                if not events and self._finishing.is_set():
                    return
        except Exception as exc:  # a display problem must never stop the run itself
            self.console.print(f"(progress display stopped: {type(exc).__name__}: {exc})", markup=False)

    def _show(self, event: Event) -> None:
        if event.mode == "updates" and isinstance(event.data, dict):
            self.nodes.setdefault(event.step, []).extend(event.data)
        elif event.mode == "values" and event.step >= 0:
            self._step_line(event.step)
        elif event.mode == "status" and isinstance(event.data, dict):
            self._status_line(event.data)

    def _step_line(self, step: int) -> None:
        now = time.monotonic()
        names = self.nodes.pop(step, [])
        tasks = f"{len(names)} task" + ("" if len(names) == 1 else "s")
        self.console.print(Text.assemble(
            (f"step {step:>3}", "bold"), f"  {tasks_text(names) or '-'}  ({tasks})  ",
            (f"{now - self.last:.2f} s", "cyan"), f"  total {now - self.started:.2f} s",
        ))
        self.last = now

    def _status_line(self, data: dict[str, Any]) -> None:
        status = str(data.get("status"))
        total = f"{time.monotonic() - self.started:.2f} s"
        if status == RunStatus.RUNNING:
            self.console.print(Text(f"run {self.run_record.id} running", style="dim"))
        elif status in (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELED):
            style = "green" if status == RunStatus.COMPLETED else "red"
            error = f": {data['error']}" if data.get("error") else ""
            self.console.print(Text(f"{status} after {total}{error}", style=style))
            self._ended = True


@contextmanager
def _redis(app: AppContext, console: Console) -> Iterator[str]:
    """The configured Redis URL, or an embedded server's (append-only, stopped on exit and on Ctrl-C)."""
    if app.settings.redis_url:
        console.print(f"redis: {redact_url(app.settings.redis_url)} (configured)", markup=False)
        yield app.settings.redis_url
        return
    server = EmbeddedRedis(data_dir=app.settings.data_dir, appendonly=True)
    server.start()
    try:
        console.print(f"redis: {server.url} (embedded; data in {Path(server.data_dir)})", markup=False)
        yield server.url
    finally:
        server.stop()


def _stop_requested() -> bool:
    """Whether RQ saw SIGINT/SIGTERM: its handler then swaps itself for ``request_force_stop``."""
    handler = signal.getsignal(signal.SIGINT)
    return getattr(handler, "__name__", "") == "request_force_stop"


def _work_once(app: AppContext, url: str, kv: Any, workflow: str) -> tuple[bool, bool]:
    """One burst of the in-process worker on ``workflow``'s queue only; returns (worked a job, stop
    requested)."""
    saved = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    settings = app.settings.model_copy(update={"redis_url": url})
    try:
        only = Registry({workflow: app.registry.get(workflow)})
        worked = run_worker(settings, burst=True, registry=only, kv=kv)
    except SystemExit:  # RQ's cold shutdown: a second Ctrl-C while a step ran
        return True, True
    finally:
        stopped = _stop_requested()
        signal.signal(signal.SIGINT, saved[0])
        signal.signal(signal.SIGTERM, saved[1])
    return worked, stopped


def _drive(app: AppContext, client: Client, url: str, run: RunRecord, embedded: bool) -> bool:
    """Work the queue until the run ends (or waits for input); returns True when interrupted.

    Raises:
        GraphqError: with the embedded server, the queue ran dry while the run was not finished.
    """
    run_id = run.id
    while True:
        worked, stopped = _work_once(app, url, client.kv, run.workflow)
        if stopped:
            return True
        record = client.get_run(run_id)
        if record.terminal or record.status == RunStatus.AWAITING_INPUT:
            return False
        if embedded and not worked:
            raise GraphqError(f"run {run_id} is {record.status.value} at step {record.step} but its queue is "
                              "empty; see `graphq runs show`")
        time.sleep(0.2)  # another worker holds the run's step; help with the next one


def _execute(app: AppContext, url: str, request: RunRequest, console: Console, started: float) -> RunRecord:
    kv = connect(url)
    client = app.client(kv)
    run_id = client.enqueue_many([request])[0]
    record = client.get_run(run_id)
    console.print(f"run {run_id}: {request.workflow} on thread {record.thread_id}", markup=False)
    follower = _Follower(connect(url), record, console, started)
    follower.start()
    try:
        interrupted = _drive(app, client, url, record, embedded=not app.settings.redis_url)
    finally:
        follower.finish()
    record = client.get_run(run_id)
    if interrupted:
        fail(f"interrupted: run {run_id} is {record.status.value} after {record.step} step(s); its "
             "checkpoints and next step job are kept, and any worker on this Redis (the next `graphq run` on "
             "the same data dir) continues it", EXIT_INTERRUPTED)
    return record


def _print_result(graph: CompiledGraph, record: RunRecord, output: str) -> None:
    if output == "json":
        print_json(record_json(record))
    elif record.status == RunStatus.COMPLETED:
        if graph.formatter is not None:
            click.echo(graph.formatter(record.result))
        else:
            click.echo(to_json(record.result))
    elif record.status == RunStatus.AWAITING_INPUT:
        click.echo(f"run {record.id} is waiting for input at step {record.step}", err=True)
    if record.status in (RunStatus.FAILED, RunStatus.CANCELED):
        error = f": {record.error.type}: {record.error.message}" if record.error else ""
        fail(f"run {record.id} {record.status.value} at step {record.step}{error}", EXIT_FAILURE)


@click.command()
@click.argument("workflow")
@click.option("--input", "-i", "input_text", metavar="JSON|@FILE",
              help="The run's input: JSON text, or @path of a JSON file. Default {}.")
@click.option("--thread", "-t", metavar="ID", help="Thread id (default: a new thread).")
@click.option("--tenant", default="default", show_default=True, help="Tenant the run is for.")
@output_option
@click.pass_obj
def run(app: AppContext, workflow: str, input_text: str | None, thread: str | None, tenant: str,
        output: str) -> None:
    """Run WORKFLOW to the end in this process and print its result.

    Uses GRAPHQ_REDIS_URL when set; otherwise starts an embedded redis-server with its append-only file in
    GRAPHQ_DATA_DIR (default .graphq), so runs and checkpoints survive. Progress (one line per super-step)
    goes to stderr; the result goes to stdout: the workflow's formatted report when it has one, else the
    final state as JSON (--output json: the whole run record). With GRAPHQ_REDIS_URL the in-process
    worker also helps with other queued steps of the same workflow until this run ends.

    \b
    Examples:
      graphq run code-inventory
      graphq run code-inventory --input '{"root": "src"}'
      graphq --workflows mypkg.flows run my-flow --input @input.json

    Exit codes: 0 completed, 1 failed or canceled, 2 bad input, 130 interrupted (state kept).
    """
    request = RunRequest(workflow, parse_input(input_text), thread_id=thread, tenant=tenant)
    graph = app.registry.get(workflow)
    keys.validate_id("tenant", tenant)
    if thread is not None:
        keys.validate_id("thread id", thread)
    console = err_console()
    started = time.monotonic()
    try:
        with _redis(app, console) as url:
            record = _execute(app, url, request, console, started)
    except KeyboardInterrupt:
        fail("interrupted", EXIT_INTERRUPTED)
    _print_result(graph, record, output)
