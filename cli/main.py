"""The ``graphq`` command: global options and the command tree.

\b
graphq [--redis-url URL] [--workflows MODULES]
  run WORKFLOW            run to the end locally (embedded Redis unless configured)
  enqueue WORKFLOW        enqueue one run or a JSON-lines batch; --wait for them (--multitask,
                          --checkpoint ID forks a thread)
  worker                  execute step jobs (--burst, --concurrency N)
  runs list | show RUN    run records (--tenant, --status, --workflow; --stuck: lapsed leases)
  runs watch RUN          a run's events (--mode, --after ID), live until it ends or pauses
  runs requests | answer  a paused run's open requests; answer them (human in the loop)
  runs cancel | resume    cancel a run; continue an ended run's thread in a new run
  runs migrate            move the runs pinned to one version of a workflow to another (--dry-run)
  state THREAD            a thread's state (--history with branches, --checkpoint ID)
  workflows list | show   the workflow catalog: what the workers serve (no workflow code needed)
  workflows check NAME    the upgrade check: would the threads in flight go on under new code?
  workers                 the live workers (the run and step each holds)
  tenants                 per tenant: running, queued, limit, oldest wait (R8)
  reaper                  act on lapsed leases: continue interrupted runs (--once)
  disable | enable        the kill switch: refuse new runs, take no step (--reason); on again
  enabled                 whether graphq is on or off, and why
  schedules add | list    cron schedules (update, show, pause, resume, remove, trigger, next, history)
  scheduler               start runs on their schedules, and the housekeeping loops (--metrics-port)
  health                  probe: exit 0 healthy, 1 not (--worker | --scheduler, --ready)
  ui                      the operator console and HTTP API in a browser (--host, --port, --read-only)
  webhooks list | retry   webhook deliveries waiting or given up (--dead); retry a dead letter
"""

from __future__ import annotations

import logging
import os

import click

from graphq.cli.context import AppContext
from graphq.cli.enqueue import enqueue
from graphq.cli.errors import GraphqGroup, fail
from graphq.cli.health import health
from graphq.cli.output import mask_output
from graphq.cli.run import run
from graphq.cli.runs import runs
from graphq.cli.schedules import scheduler, schedules
from graphq.cli.state import state
from graphq.cli.store import store
from graphq.cli.switch import disable, enable, enabled
from graphq.cli.tenants import tenants
from graphq.cli.threads import threads
from graphq.cli.ui import ui
from graphq.cli.webhooks import webhooks
from graphq.cli.worker import worker
from graphq.cli.workers import reaper, workers
from graphq.cli.workflows import workflows
from graphq.worker.logs import configure

__all__ = ["main"]


_CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(cls=GraphqGroup, context_settings=_CONTEXT)
@click.option(
    "--redis-url",
    envvar="GRAPHQ_REDIS_URL",
    metavar="URL",
    help="Redis to use, redis://[:password@]host:port/db [env GRAPHQ_REDIS_URL]. "
    "`graphq run` starts an embedded Redis when it is unset.",
)
@click.option(
    "--workflows",
    envvar="GRAPHQ_WORKFLOWS",
    metavar="MODULES",
    help="Comma-separated Python modules (importable from the current directory) to import "
    "for workflows, besides the graphq.workflows entry points [env GRAPHQ_WORKFLOWS].",
)
@click.option("--verbose", "-v", is_flag=True, help="Log more (Redis retries, worker activity) on stderr.")
@click.version_option(package_name="graphq", prog_name="graphq")
@click.pass_context
def main(ctx: click.Context, redis_url: str | None, workflows: str | None, verbose: bool) -> None:
    """graphq: durable graph workflows on Redis and RQ, one queue job per super-step.

    \b
    Quick start (embedded Redis, data in .graphq/):
      graphq run code-inventory
    Distributed:
      export GRAPHQ_REDIS_URL=redis://localhost:6379/0 GRAPHQ_WORKFLOWS=my.module
      graphq worker --concurrency 4 &
      graphq enqueue my-flow --input-file runs.jsonl --wait

    Every command with tabular output takes --output json. Exit codes: 0 ok, 1 failure (run failed or
    canceled, Redis unreachable), 2 bad input (unknown workflow, malformed JSON, invalid id, bad setting,
    a run not awaiting input), 3 a run is waiting for input, 130 interrupted. Settings come from GRAPHQ_*
    environment variables.
    """
    _configure_logging(verbose, redis_url)
    mask_output()
    given = ctx.get_parameter_source("redis_url") is click.core.ParameterSource.COMMANDLINE
    if given and not redis_url:  # an unset variable in a script: not the local data without a word
        fail("--redis-url is empty: give a redis:// URL, or leave the option out to use the local data")
    ctx.obj = AppContext.from_options(redis_url, workflows, "--redis-url" if given else "GRAPHQ_REDIS_URL")
    ctx.call_on_close(ctx.obj.close)


def _configure_logging(verbose: bool, redis_url: str | None) -> None:
    """Warnings on stderr, as ``GRAPHQ_LOG_FORMAT`` says (text or json; :mod:`graphq.worker.logs`), with the
    Redis password masked; Redis retry notices only with ``--verbose`` (the final error says it all)."""
    log_format = "json" if os.environ.get("GRAPHQ_LOG_FORMAT", "").strip().lower() == "json" else "text"
    configure(logging.INFO if verbose else logging.WARNING, log_format, redis_url)
    logging.getLogger("graphcore.backend.connection").setLevel(logging.INFO if verbose else logging.ERROR)
    # a workflow module's compile notices (a node no edge reaches) are its author's, not every command's
    logging.getLogger("graphcore.engine.validate").setLevel(logging.WARNING if verbose else logging.ERROR)


main.add_command(run)
main.add_command(enqueue)
main.add_command(worker)
main.add_command(runs)
main.add_command(state)
main.add_command(workflows)
main.add_command(workers)
main.add_command(tenants)
main.add_command(threads)
main.add_command(store)
main.add_command(reaper)
main.add_command(disable)
main.add_command(enable)
main.add_command(enabled)
main.add_command(schedules)
main.add_command(scheduler)
main.add_command(health)
main.add_command(ui)
main.add_command(webhooks)


if __name__ == "__main__":  # pragma: no cover
    main(prog_name="graphq")
