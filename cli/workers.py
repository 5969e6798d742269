"""``graphq workers``: the live workers (R18), and ``graphq reaper``: the reaper as a standalone process."""

from __future__ import annotations

import signal
import threading
from datetime import UTC, datetime
from types import FrameType

import click

from cli.context import AppContext
from cli.output import output_option, print_json, print_table, when
from graphcore.backend.connection import redact_url
from graphcore.backend.reaper import iso_ms, server_ms
from graphcore.backend.workers import WorkerRecord, live_workers
from worker.reaper import Reaper

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
        "heartbeat_at": iso_ms(w.heartbeat_ms),
    }


@click.command(short_help="List the live workers.")
@output_option
@click.pass_obj
def workers(app: AppContext, output: str) -> None:
    """List the live workers: id, host, pid, queues, the run and step each holds, started and last
    heartbeat (UTC). A worker whose heartbeat stopped (killed, stopped) drops out within
    GRAPHQ_LEASE_TTL_S, and the reaper removes it from RQ's worker registry within one more
    GRAPHQ_REAPER_INTERVAL_S. The run and step are as of the worker's last heartbeat; the step is the run's
    own (the steps it had done when the worker claimed this one, "step" in `graphq runs show -o json`), not
    the thread's step that `graphq runs show` prints."""
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
            "" if w.step is None else w.step,
            when(w.started_at),
            when(iso_ms(w.heartbeat_ms)),
        )
        for w in found
    ]
    print_table(
        ("worker", "host", "pid", "queues", "run", "run step", "started (UTC)", "heartbeat (UTC)"),
        rows,
        no_wrap=("worker", "run", "started (UTC)", "heartbeat (UTC)"),
    )


@click.command(short_help="Run the reaper (lapsed leases, interrupted runs).")
@click.option("--once", is_flag=True, help="Make one pass (if no other reaper is active) and exit.")
@click.pass_obj
def reaper(app: AppContext, once: bool) -> None:
    """Run the reaper until SIGTERM or Ctrl-C: every GRAPHQ_REAPER_INTERVAL_S it acts on steps whose
    lease lapsed (their worker died): with GRAPHQ_RESUME_INTERRUPTED_RUNS on, the run is closed failed
    (WorkerLost) and continued by a new run from its latest checkpoint, up to GRAPHQ_MAX_RESUME_ATTEMPTS
    per chain; off, it starts again from its beginning. Every worker process runs a reaper too; one
    instance at a time acts (a lock), so this command is for a scheduler pod or a worker-less setup.

    --once prints one line per run acted on (run, what happened), or that another reaper is active.
    """
    kv = app.kv()
    settings = app.settings
    instance = Reaper(kv, settings)
    if once:
        done = instance.tick()
        instance.lock.release()
        if done is None:
            click.echo("another reaper is active; nothing done")
            return
        for run_id, outcome in done:
            click.echo(f"{run_id} {outcome.verdict}{' ' + outcome.detail if outcome.detail else ''}")
        return
    click.echo(
        f"graphq reaper: every {settings.reaper_interval_s:g} s on {redact_url(app.redis_url())} "
        f"(started {datetime.now(UTC).isoformat(timespec='seconds')})",
        err=True,
    )
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    instance.run(stop)
