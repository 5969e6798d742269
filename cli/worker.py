"""``graphq worker``: run step jobs from the queue, in one or several processes."""

from __future__ import annotations

import click

from graphcore.backend.connection import redact_url
from graphcore.errors import ConfigError
from graphq.cli.bounds import PORT, PROCESSES
from graphq.cli.context import AppContext
from graphq.cli.errors import EXIT_FAILURE, fail
from graphq.worker.logs import announce
from graphq.worker.process.supervisor import supervise
from graphq.worker.queue import queue_name

__all__ = ["worker"]


@click.command(short_help="Run workers that execute step jobs.")
@click.option("--burst", "-b", is_flag=True, help="Stop when the queue is empty instead of waiting for jobs.")
@click.option(
    "--concurrency",
    "-c",
    type=PROCESSES,
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
@click.option(
    "--metrics-port",
    type=PORT,
    default=None,
    metavar="PORT",
    help="Serve /metrics (Prometheus; every worker process's, summed), /healthz and /readyz on this port "
    "(0 or unset: none).",
)
@click.pass_obj
def worker(app: AppContext, burst: bool, concurrency: int, log_level: str, metrics_port: int | None) -> None:
    """Run workers that execute super-steps (one RQ job per step) until SIGTERM or Ctrl-C.

    A supervising process runs N worker processes, renews their leases and kills a process whose step
    outlives its deadline by GRAPHQ_KILL_GRACE_S (a new one takes its place). SIGTERM: stop taking jobs,
    finish the steps in flight within GRAPHQ_DRAIN_TIMEOUT_S, else give them up (the run ends Canceled,
    checkpoints kept, and is continued). A second SIGTERM or Ctrl-C: give them up at once. Exit status 0
    when every step in flight finished, 1 when one was given up or a worker process failed.
    Each workflow's version (its catalog version) decides which pinned runs' steps the worker takes;
    GRAPHQ_TAKE_NEW_RUNS=false makes it take only those, no new run (a release being retired).
    Needs GRAPHQ_REDIS_URL (or --redis-url) and the workflow modules (--workflows or GRAPHQ_WORKFLOWS).
    """
    kv = app.kv()
    registry = app.registry
    names = ", ".join(registry.names()) or "none"
    base = app.settings.queue
    queues = repr(queue_name(base, "<workflow>", "<version>"))
    if app.settings.take_new_runs:
        queues = f"{queue_name(base, '<workflow>')!r} and {queues}"
    announce(
        f"graphq worker: {concurrency} process(es) on {redact_url(app.redis_url())}, queues {queues}; "
        f"workflows: {names}",
        "graphq.worker",
    )
    if not registry.names():
        raise ConfigError("no workflows to work on: register some (entry points) or pass --workflows")
    port = metrics_port or None
    level = log_level.upper()
    names_ = registry.names()
    if supervise(concurrency, burst=burst, log_level=level, kv=kv, metrics_port=port, workflows=names_):
        fail("stopped: a step in flight was given up, or a worker process failed (see above)", EXIT_FAILURE)
