"""Health (O2): what ``graphq health`` and the ``/healthz`` ``/readyz`` endpoints check.

A long-running graphq process (the ``graphq worker`` supervisor, ``graphq scheduler``) publishes its status
for the probes of its pod in a small JSON file in the temporary directory (``$TMPDIR``, else ``/tmp``):
``graphq-<role>.<pid>.json`` = ``{"role", "pid", "redis", "draining", "loop_at", "children", "heartbeat_key",
"written_at"}`` (``redis``: the Redis it serves, ``host:port/db`` or ``unix:path/db``, never the password
(:func:`served`); ``loop_at``: when its main loop last ran, seconds since the epoch; ``children``: its worker
processes' pids; ``heartbeat_key``: a Redis key the process keeps alive with a time-to-live, e.g. the
scheduler's ``keys.scheduler(id)``, or null), rewritten every ``GRAPHQ_HEARTBEAT_INTERVAL_S`` and when it
starts draining, removed at exit. A file left by a killed process (the directory may outlive it: a pod's
``emptyDir`` survives a container restart) is ignored once its pid is gone or it has not been rewritten for
``GRAPHQ_LEASE_TTL_S`` (its pid may have been reused), and removed when the next process of its role starts.

:func:`check` is the probe. Liveness (a role, not ``ready``) reads the status files only, never Redis: a
process of that role runs on this host (its file's pid is alive) and serves the probe's Redis (the files of
processes serving another Redis are not looked at: another deployment's, or another session's on a shared
host), its file was rewritten and its loop ran within ``GRAPHQ_LEASE_TTL_S``, and (workers) one of its
worker processes is alive. A Redis outage of any length then restarts no pod: the processes retry until Redis
is back and their loops go on. Readiness (``ready``) adds what needs Redis: it answers PING, the
process's heartbeat key (if it names one) exists and its record (JSON) names no ``problem`` (the
scheduler's: schedules whose workflow it cannot load, :func:`graphq.scheduler.loop.cannot_load`), (workers)
at least one of its worker processes has a fresh heartbeat in the worker registry
(:mod:`graphcore.backend.workers`,
by host and pid), and it is not draining. Without a role the probe is Redis's PING alone. Liveness does not
look at the problem: a restart would not load the workflow.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis.exceptions as rex
from redis.connection import parse_url

from graphcore.backend.connection import is_transient, redact_url, unavailable
from graphcore.backend.reaper import server_ms
from graphcore.backend.workers import live_workers
from graphcore.settings import Settings, get_settings

__all__ = ["ROLES", "Status", "StatusFile", "check", "pid_alive", "publish_status", "served", "statuses"]

ROLES = ("worker", "scheduler")


@dataclass(frozen=True)
class Status:
    """What a process published (see the module's docstring)."""

    role: str
    pid: int
    draining: bool
    loop_at: float
    children: list[int]
    heartbeat_key: str | None = None
    written_at: float = 0.0
    redis: str = ""


def served(url: str) -> str:
    """Which Redis ``url`` names, without its credentials: ``host:port/db`` (defaults ``localhost``,
    ``6379``, ``0``), or ``unix:<path>/db``; ``""`` for an empty or unparsable URL."""
    if not url:
        return ""
    try:
        parts: dict[str, Any] = parse_url(url)  # type: ignore[no-untyped-call]
    except ValueError:
        return ""
    db = parts.get("db", 0)
    if "path" in parts:
        return f"unix:{parts['path']}/{db}"
    return f"{parts.get('host') or 'localhost'}:{parts.get('port') or 6379}/{db}"


def _directory() -> Path:
    return Path(tempfile.gettempdir())


class StatusFile:
    """This process's status file for ``role`` (``worker`` or ``scheduler``)."""

    def __init__(self, role: str, redis: str = "") -> None:
        self.path = _directory() / f"graphq-{role}.{os.getpid()}.json"
        self.role = role
        self.redis = redis

    def write(
        self, *, draining: bool, loop_at: float, children: list[int], heartbeat_key: str | None = None
    ) -> None:
        """Replace the file (atomically: a probe never reads half of it)."""
        body = {
            "role": self.role,
            "pid": os.getpid(),
            "redis": self.redis,
            "draining": draining,
            "loop_at": loop_at,
            "children": children,
            "heartbeat_key": heartbeat_key,
            "written_at": time.time(),
        }
        partial = self.path.with_suffix(".tmp")
        partial.write_text(json.dumps(body))
        partial.replace(self.path)

    def remove(self) -> None:
        """Remove the file (a clean exit)."""
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


@contextlib.contextmanager
def publish_status(
    role: str,
    interval_s: float,
    draining: Callable[[], bool],
    loop_at: Callable[[], float],
    children: Callable[[], list[int]] = list,
    heartbeat_key: str | None = None,
    redis_url: str | None = None,
) -> Iterator[Callable[[], None]]:
    """Publish this process's status for ``role`` every ``interval_s`` from a daemon thread while the
    block runs (removed after); yields the function that rewrites it now (call it when draining starts).
    ``heartbeat_key``: a Redis key this process keeps alive with a TTL (``graphq scheduler``:
    ``keys.scheduler(id)``): the probe fails once it has expired. ``redis_url``: the Redis this process
    serves (None: ``GRAPHQ_REDIS_URL``); the file records only :func:`served` of it."""
    for left in _files(role):  # left by killed processes of this role
        with contextlib.suppress(OSError):
            if not pid_alive(_pid_of(left)):
                left.unlink()
    url = get_settings().redis_url if redis_url is None else redis_url
    status = StatusFile(role, served(url or ""))
    lock = threading.Lock()

    def write() -> None:
        with lock, contextlib.suppress(OSError):
            status.write(
                draining=draining(), loop_at=loop_at(), children=children(), heartbeat_key=heartbeat_key
            )

    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(interval_s):
            write()

    write()
    thread = threading.Thread(target=loop, name=f"graphq-{role}-status", daemon=True)
    thread.start()
    try:
        yield write
    finally:
        stop.set()
        thread.join(timeout=2)
        status.remove()


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists on this host (maybe another user's)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _files(role: str) -> list[Path]:
    return sorted(_directory().glob(f"graphq-{role}.*.json"))


def _pid_of(path: Path) -> int:
    """The pid in a status file's name (``graphq-worker.<pid>.json``); 0 when there is none."""
    digits = path.name.split(".")[-2]
    return int(digits) if digits.isdigit() else 0


def statuses(role: str, redis: str | None = None) -> list[Status]:
    """The statuses published on this host for ``role`` by processes still alive (with ``redis``, only
    those of processes serving that Redis, a :func:`served` value)."""
    found = []
    for path in _files(role):
        try:
            raw: dict[str, Any] = json.loads(path.read_text())
            key = raw.get("heartbeat_key")
            status = Status(
                role,
                int(raw["pid"]),
                bool(raw["draining"]),
                float(raw["loop_at"]),
                list(raw["children"]),
                str(key) if key else None,
                float(raw.get("written_at") or 0.0),
                str(raw.get("redis") or ""),
            )
        except (OSError, ValueError, KeyError, TypeError):
            continue  # being replaced, or not ours
        if pid_alive(status.pid) and redis in (None, status.redis):
            found.append(status)
    return found


def check(kv: Any, settings: Settings, role: str | None, ready: bool, url: str = "") -> str | None:
    """The probe: None when healthy, else why, in one line (see the module's docstring).

    Args:
        kv: redis-py client (its reads should time out in a few seconds).
        role: ``worker``, ``scheduler``, or None (Redis only).
        ready: readiness (Redis answers, heartbeats fresh, not draining) rather than liveness (the status
            files alone: no Redis call).
        url: the Redis URL, for the message (redacted).
    """
    if role is None or ready:
        why = _unreachable(kv, url)
        if why is not None or role is None:
            return why
    found = statuses(role, served(url))
    if not found:
        return (
            f"no graphq {role} for Redis {served(url)} runs on this host "
            f"(no live {_directory()}/graphq-{role}.<pid>.json of it)"
        )
    now = time.time()
    current = [s for s in found if now - s.written_at <= settings.lease_ttl_s]
    if not current:
        newest = max(found, key=lambda s: s.written_at)
        late = now - newest.written_at
        return f"the {role} (pid {newest.pid}) last wrote its status {late:.1f} s ago"
    for status in current:
        why = _unwell(kv, settings, status, ready, now)
        if why is not None:
            return why
    return None


def _unreachable(kv: Any, url: str) -> str | None:
    """Why Redis does not answer PING (a password missing or refused said so), or None."""
    try:
        kv.ping()
    except Exception as exc:
        if isinstance(exc, rex.RedisError) and not is_transient(exc):  # a password missing or refused
            with_password = kv.connection_pool.connection_kwargs.get("password") is not None
            return str(unavailable(redact_url(url), exc, with_password))
        return f"Redis unreachable at {redact_url(url) or 'GRAPHQ_REDIS_URL'}: {exc}"
    return None


def _unwell(kv: Any, settings: Settings, status: Status, ready: bool, now: float) -> str | None:
    """Why the process of ``status`` is not live (or, ``ready``, not ready), or None."""
    role = status.role
    late = now - status.loop_at
    if late > settings.lease_ttl_s:
        return f"the {role} (pid {status.pid}) main loop last ran {late:.1f} s ago"
    if role == "worker" and not any(pid_alive(pid) for pid in status.children):
        pids = ", ".join(map(str, status.children)) or "none"
        return f"the worker (pid {status.pid}) has no worker process alive (processes: {pids})"
    if not ready:
        return None
    if status.draining:
        return f"the {role} (pid {status.pid}) is draining (SIGTERM received)"
    if status.heartbeat_key is not None:
        beat = kv.get(status.heartbeat_key)
        if beat is None:
            return f"the {role} (pid {status.pid}) has no fresh heartbeat ({status.heartbeat_key} expired)"
        problem = _problem_of(beat)
        if problem:
            return f"the {role} (pid {status.pid}) {problem}"
    return _stale_workers(kv, status) if role == "worker" else None


def _problem_of(beat: bytes) -> str | None:
    """The ``problem`` a heartbeat record (JSON) names, or None (also for a record that is no JSON object)."""
    with contextlib.suppress(ValueError):
        record = json.loads(beat)
        if isinstance(record, dict) and record.get("problem"):
            return str(record["problem"])
    return None


def _stale_workers(kv: Any, status: Status) -> str | None:
    """Why the worker supervisor ``status`` has no worker process with a fresh heartbeat, or None."""
    host = socket.gethostname()
    fresh = {w.pid for w in live_workers(kv, server_ms(kv)) if w.host == host}
    if fresh & set(status.children):
        return None
    pids = ", ".join(map(str, status.children)) or "none"
    return f"no worker process of the worker (pid {status.pid}) has a fresh heartbeat (processes: {pids})"
