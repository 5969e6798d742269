"""``graphq worker``: run step jobs from the queue, in one or several processes."""

from __future__ import annotations

import signal
from types import FrameType

import click

from cli.context import AppContext
from cli.errors import EXIT_FAILURE, fail
from graphcore.backend.connection import redact_url
from worker.process import run_worker, run_workers

__all__ = ["worker"]

_STOPPED_BY_SIGTERM = -signal.SIGTERM
"""A child's exit code after SIGTERM arrived before RQ installed its handler: a stop, not a failure."""


class _StopBeforeStart(Exception):
    """SIGTERM arrived before RQ installed its own handler (nothing was running yet)."""


def _stop_before_start(signum: int, frame: FrameType | None) -> None:
    raise _StopBeforeStart


def _run_one(app: AppContext, kv: object, burst: bool, level: str) -> None:
    """One worker in this process; a SIGTERM during start-up is a clean stop too (RQ's handler comes late)."""
    signal.signal(signal.SIGTERM, _stop_before_start)
    try:
        run_worker(app.settings, burst=burst, registry=app.registry, kv=kv, log_level=level)
    except _StopBeforeStart:
        click.echo("graphq worker: stopped by SIGTERM while starting", err=True)


@click.command(short_help="Run workers that execute step jobs.")
@click.option("--burst", "-b", is_flag=True, help="Stop when the queue is empty instead of waiting for jobs.")
@click.option(
    "--concurrency",
    "-c",
    type=click.IntRange(min=1, max=256),
    default=1,
    show_default=True,
    metavar="N",
    help="Worker processes (each runs one step job at a time).",
)
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"], case_sensitive=False),
    default="warning",
    show_default=True,
    help="Log level of the workers.",
)
@click.pass_obj
def worker(app: AppContext, burst: bool, concurrency: int, log_level: str) -> None:
    """Run workers that execute super-steps (one RQ job per step) until SIGTERM or Ctrl-C.

    SIGTERM / Ctrl-C stop taking jobs and let the current step finish (warm shutdown).
    Needs GRAPHQ_REDIS_URL (or --redis-url) and the workflow modules (--workflows or GRAPHQ_WORKFLOWS).
    """
    kv = app.kv()
    registry = app.registry
    names = ", ".join(registry.names()) or "none"
    click.echo(
        f"graphq worker: {concurrency} process(es) on {redact_url(app.redis_url())}, "
        f"queue {app.settings.queue!r}; workflows: {names}",
        err=True,
    )
    level = log_level.upper()
    if concurrency == 1:
        _run_one(app, kv, burst, level)
        return
    kv.close()
    codes = run_workers(concurrency, burst=burst, log_level=level)
    failed = [c for c in codes if c not in (0, _STOPPED_BY_SIGTERM)]
    if failed:
        fail(f"{len(failed)} of {concurrency} worker processes exited with an error: {failed}", EXIT_FAILURE)
