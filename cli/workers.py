"""``graphq workers``: the live workers (R18), and ``graphq reaper``: the housekeeping loops (the reaper, the
request-expiry scan, the retention sweep) as a standalone process."""

from __future__ import annotations

import signal
import threading
from datetime import UTC, datetime
from types import FrameType

import click

from graphcore.backend.connection import redact_url
from graphcore.backend.reaper import iso_ms, server_ms
from graphcore.backend.workers import WorkerRecord, live_workers
from graphq.cli.context import AppContext
from graphq.cli.output import output_option, print_json, print_table, when
from graphq.worker.housekeeping.loops import loops, start_housekeeping

__all__ = ["reaper", "workers"]


def _json(w: WorkerRecord) -> dict[str, object]:
    return {
        "id": w.id,
        "host": w.host,
        "pid": w.pid,
        "queues": w.queues,
        "started_at": w.started_at,
        "run_id": w.run_id,
        "thread_id": w.thread_id,
        "step": w.step,
        "thread_step": w.thread_step,
        "heartbeat_at": iso_ms(w.heartbeat_ms),
    }


@click.command(short_help="List the live workers.")
@output_option
@click.pass_obj
def workers(app: AppContext, output: str) -> None:
    """List the live workers: id, host, pid, queues, the run and step each holds, started and last
    heartbeat (UTC). A worker whose heartbeat stopped (killed, stopped) drops out within
    GRAPHQ_LEASE_TTL_S, and the reaper removes it from RQ's worker registry within one more
    GRAPHQ_REAPER_INTERVAL_S. The run and step are as of the worker's last heartbeat; the step is the
    thread's, as `graphq runs show` prints it (--output json: "thread_step"; "step" is the run's own count,
    the steps it had done when the worker claimed this one, as "step" in `graphq runs show -o json`)."""
    kv = app.kv()
    found = live_workers(kv, server_ms(kv))
    if output == "json":
        print_json([_json(w) for w in found])
        return
    rows = [
        (
            w.id,
            w.host,
            w.pid,
            ",".join(w.queues),
            w.run_id or "",
            "" if w.thread_step is None else w.thread_step,
            when(w.started_at),
            when(iso_ms(w.heartbeat_ms)),
        )
        for w in found
    ]
    print_table(
        ("worker", "host", "pid", "queues", "run", "step", "started (UTC)", "heartbeat (UTC)"),
        rows,
        no_wrap=("worker", "run", "started (UTC)", "heartbeat (UTC)"),
    )


@click.command(short_help="Run the housekeeping loops: reaper, request expiry, retention, webhooks.")
@click.option("--once", is_flag=True, help="Make one pass of each loop no other instance runs, and exit.")
@click.pass_obj
def reaper(app: AppContext, once: bool) -> None:
    """Run the housekeeping loops until SIGTERM or Ctrl-C, each with one active instance per cluster (a
    lock per loop):

    the reaper: every GRAPHQ_REAPER_INTERVAL_S it acts on steps whose lease lapsed (their worker died):
    with GRAPHQ_RESUME_INTERRUPTED_RUNS on, the run is closed failed (WorkerLost) and continued by a new
    run from its latest checkpoint, up to GRAPHQ_MAX_RESUME_ATTEMPTS per chain; off, it starts again from
    its beginning;

    the request-expiry scan: every GRAPHQ_REQUEST_EXPIRATION_SCAN_INTERVAL_S it closes canceled
    (RequestExpired) the runs whose human request passed its deadline (interrupt timeout_s or the
    workflow's request_timeout_s), at most GRAPHQ_MAX_REQUEST_EXPIRATIONS_PER_SCAN a scan;

    the retention sweep: every GRAPHQ_RETENTION_SWEEP_INTERVAL_S it clears the shared-index entries of
    threads whose keys expired (GRAPHQ_THREAD_TTL_S);

    the webhooks loop: every GRAPHQ_WEBHOOK_INTERVAL_S it POSTs the webhook deliveries that are due (runs
    enqueued with --webhook that ended or wait for input), retrying failed ones.

    Every graphq worker (and graphq scheduler) runs these loops too; this command is for a worker-less
    setup.

    --once makes one pass of each loop and prints one line per run acted on (the reaper's: run, what
    happened; the scan's: run and "expired"), or that another reaper is active.
    """
    kv = app.kv()
    settings = app.settings
    if once:
        for loop in loops(kv, settings):
            ran, done = loop.once(kv)
            if not ran and loop.name == "reaper":
                click.echo("another reaper is active; nothing done")
            for line in _done_lines(done):
                click.echo(line)
        return
    click.echo(
        f"graphq reaper: the housekeeping loops (reaper every {settings.reaper_interval_s:g} s, request "
        f"expiry every {settings.request_expiration_scan_interval_s:g} s, retention every "
        f"{settings.retention_sweep_interval_s:g} s, webhooks every {settings.webhook_interval_s:g} s) on "
        f"{redact_url(app.redis_url())} "
        f"(started {datetime.now(UTC).isoformat(timespec='seconds')})",
        err=True,
    )
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    threads = start_housekeeping(kv, settings, stop)
    while not stop.wait(0.2):
        pass
    for thread in threads:
        thread.join(timeout=5)


def _done_lines(done: object) -> list[str]:
    """The lines of ``reaper --once`` for one loop's pass: ``RUN VERDICT [DETAIL]`` per reaped run (the
    reaper's ``(run id, outcome)`` pairs), ``RUN expired`` per run the request-expiry scan closed."""
    if not isinstance(done, list):
        return []
    lines = []
    for item in done:
        if isinstance(item, tuple):
            run_id, outcome = item
            lines.append(f"{run_id} {outcome.verdict}{' ' + outcome.detail if outcome.detail else ''}")
        else:
            lines.append(f"{item} expired")
    return lines
