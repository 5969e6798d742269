"""``graphq health``: a probe for Kubernetes (O2), exit 0 when healthy, 1 with one line saying why."""

from __future__ import annotations

import click
import redis

from cli.context import AppContext
from cli.errors import EXIT_FAILURE, fail
from worker.health import check

__all__ = ["health"]

_PROBE_TIMEOUT_S = 3.0
"""The probe's Redis connect and read timeout, seconds (one try: a probe is retried by its caller)."""


@click.command(short_help="Probe: exit 0 when healthy, 1 (saying why) when not.")
@click.option("--worker", "role", flag_value="worker", help="Check this host's graphq worker.")
@click.option("--scheduler", "role", flag_value="scheduler", help="Check this host's graphq scheduler.")
@click.option("--ready", is_flag=True, help="Readiness: also not draining (SIGTERM received).")
@click.pass_obj
def health(app: AppContext, role: str | None, ready: bool) -> None:
    """Exit 0 when Redis answers PING and, with --worker or --scheduler, when that process runs on this
    host (pod), its main loop ran within GRAPHQ_LEASE_TTL_S and (workers) one of its worker processes has
    a fresh heartbeat; with --ready, also when it is not draining. Else exit 1 with one line saying why.
    One try, a 3 s timeout: for liveness and readiness probes (`graphq health --worker --ready`).
    """
    url = app.redis_url()
    kv = redis.Redis.from_url(url, socket_timeout=_PROBE_TIMEOUT_S, socket_connect_timeout=_PROBE_TIMEOUT_S)
    try:
        why = check(kv, app.settings, role, ready, url)
    finally:
        kv.close()
    if why is not None:
        fail(f"unhealthy: {why}", EXIT_FAILURE)
    click.echo("ok" if role is None else f"ok: {role}{' ready' if ready else ''}")
