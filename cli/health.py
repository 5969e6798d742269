"""``graphq health``: a probe for Kubernetes (O2), exit 0 when healthy, 1 with one line saying why."""

from __future__ import annotations

import click
import redis

from graphq.cli.context import AppContext
from graphq.cli.errors import EXIT_FAILURE, fail
from graphq.worker.health import check

__all__ = ["health"]

_PROBE_TIMEOUT_S = 3.0
"""The probe's Redis connect and read timeout, seconds (one try: a probe is retried by its caller)."""


@click.command(short_help="Probe: exit 0 when healthy, 1 (saying why) when not.")
@click.option("--worker", is_flag=True, help="Check this pod's graphq worker (liveness, see above).")
@click.option("--scheduler", is_flag=True, help="Check this pod's graphq scheduler (liveness, see above).")
@click.option(
    "--ready", is_flag=True, help="Readiness: also Redis answers, heartbeats fresh, not draining (SIGTERM)."
)
@click.pass_obj
def health(app: AppContext, worker: bool, scheduler: bool, ready: bool) -> None:
    """Without a role: exit 0 when Redis answers PING. With --worker or --scheduler (not both), liveness:
    exit 0 when that process runs in this pod, its status file is fresh, its main loop ran within
    GRAPHQ_LEASE_TTL_S and (workers) one of its worker processes is alive; Redis is not asked, so an outage
    restarts no pod (the processes retry until Redis is back). With --ready, readiness: also Redis answers
    PING, its heartbeats are fresh (the scheduler's key; for workers, one worker process's) and it is not
    draining. Else exit 1 with one line saying why. One try, a 3 s timeout: for liveness
    (`graphq health --worker`) and readiness (`graphq health --worker --ready`) probes.

    "This pod": the graphq processes on this host that share its temporary directory ($TMPDIR, else /tmp:
    each writes a status file there) and serve the same Redis as GRAPHQ_REDIS_URL (host, port and db);
    processes serving another Redis are not looked at.
    """
    if worker and scheduler:
        fail(
            "graphq health: --worker and --scheduler exclude each other: probe one process (see graphq "
            "health --help)"
        )
    role = "worker" if worker else "scheduler" if scheduler else None
    url = app.redis_url()
    kv = redis.Redis.from_url(url, socket_timeout=_PROBE_TIMEOUT_S, socket_connect_timeout=_PROBE_TIMEOUT_S)
    try:
        why = check(kv, app.settings, role, ready, url)
    finally:
        kv.close()
    if why is not None:
        fail(f"unhealthy: {why}", EXIT_FAILURE)
    click.echo("ok" if role is None else f"ok: {role}{' ready' if ready else ''}")
