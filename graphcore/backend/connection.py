"""Redis connections: one retry policy, one error predicate, and URLs that never show a password.

Transient Redis errors (connection dropped or refused, timeouts, a server still loading its data, cluster
``TRYAGAIN``, a full server refusing writes with ``OOM``) are retried with tenacity, exponential backoff with
jitter; everything else, notably authentication failures and other ``ResponseError`` replies, is permanent
and fails on the first try.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar
from urllib.parse import urlsplit

import redis
import redis.exceptions as rex
from redis.connection import parse_url
from tenacity import (
    RetryCallState,
    Retrying,
    before_sleep_log,
    retry_if_exception,
    stop_after_attempt,
    stop_never,
    wait_exponential,
    wait_random_exponential,
)
from tenacity.stop import stop_base

from graphcore.errors import ConfigError, PermanentError, RedisUnavailableError
from graphcore.settings import get_settings

__all__ = [
    "REDIS_FULL",
    "TRANSIENT_REDIS_ERRORS",
    "FailureStreak",
    "check_url",
    "connect",
    "is_transient",
    "on_retry",
    "outage_retrying",
    "outlast",
    "redact_url",
    "redis_retry",
    "redis_retrying",
    "refuses_writes",
    "retry_transient",
    "unavailable",
]

_P = ParamSpec("_P")
_R = TypeVar("_R")

logger = logging.getLogger(__name__)

_try_again: tuple[type[rex.RedisError], ...] = (rex.TryAgainError,) if hasattr(rex, "TryAgainError") else ()

TRANSIENT_REDIS_ERRORS: tuple[type[rex.RedisError], ...] = (
    rex.ConnectionError,
    rex.TimeoutError,
    rex.BusyLoadingError,
    *_try_again,
)
"""redis-py errors worth retrying. Subclasses listed in ``_PERMANENT`` (authentication) are excluded by
:func:`is_transient`, which is the predicate to use."""

# Subclasses of ConnectionError that no retry can fix.
_PERMANENT: tuple[type[rex.RedisError], ...] = (
    rex.AuthenticationError,
    *((rex.AuthorizationError,) if hasattr(rex, "AuthorizationError") else ()),
)

_REDIS_SCHEMES = ("redis://", "rediss://", "unix://")
_EXPECTED = "expected redis://[[user]:password@]host[:port][/db], rediss://... or unix:///path/to/socket"
_INITIAL_WAIT_S = 0.05
_QUERY_PASSWORD = re.compile(r"([?&;]password=)[^&#;]*", re.IGNORECASE)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def redact_url(url: str) -> str:
    """Replace the password of a Redis URL with ``***``.

    ``redis://:secret@h:6379/0`` becomes ``redis://:***@h:6379/0`` and ``redis://user:pw@h/1`` becomes
    ``redis://user:***@h/1``; a ``password=`` query argument is masked too. ``rediss://`` and ``unix://`` URLs
    are handled alike; a URL without a password comes back unchanged.

    Args:
        url: any string; a string that is not a URL is returned as it is.

    Returns:
        The URL with every password replaced by ``***``.
    """
    url = _QUERY_PASSWORD.sub(r"\1***", url)
    match = _SCHEME.match(url)
    if match is None:
        return url
    head, rest = url[: match.end()], url[match.end() :]
    # The userinfo ends at the last "@": a host, a db number or a socket path holds none, while a password
    # that was not percent-encoded may hold "@", "/", "?" or "#" (urllib would misread it; mask all of it).
    userinfo, at, after = rest.rpartition("@")
    if not at or ":" not in userinfo:
        return url
    user = userinfo.split(":", 1)[0]
    return f"{head}{user}:***@{after}"


_OOM = "OOM command not allowed"
"""How Redis words a write it refuses for want of memory; inside a Lua script redis-py raises a plain
``ResponseError`` whose text quotes it (``Error running script ...: -OOM command not allowed ...``)."""

REDIS_FULL = (
    "Redis refuses writes: OOM command not allowed when used memory > 'maxmemory' (maxmemory reached)"
)
"""What a write refused for want of memory (:func:`refuses_writes`) is called in logs and on the command
line."""


def refuses_writes(exc: BaseException) -> bool:
    """Whether ``exc`` is Redis refusing a write because it is full: used memory above ``maxmemory`` under
    a policy that evicts nothing it could (``noeviction``). Nothing of the refused command (or script, or
    MULTI) was written; reads and deletes still work, and writes do again once memory is freed.

    Args:
        exc: the raised error.

    Returns:
        True for redis-py's ``OutOfMemoryError`` and for a ``ResponseError`` whose text holds Redis's
        ``OOM command not allowed`` (the refusal of a write inside a Lua script); False for anything else.
    """
    return isinstance(exc, rex.OutOfMemoryError) or (isinstance(exc, rex.ResponseError) and _OOM in str(exc))


def is_transient(exc: BaseException) -> bool:
    """Whether a Redis error may pass when the operation is tried again.

    Args:
        exc: the raised error.

    Returns:
        True for connection errors, timeouts, ``LOADING``, ``TRYAGAIN`` and writes refused by a full Redis
        (:func:`refuses_writes`: waited out like an outage, until memory is freed or ``maxmemory``
        raised); False for authentication and authorization failures, any other ``ResponseError``, every
        non-Redis error and every graphq :class:`~graphcore.errors.PermanentError` (a node's redis
        ``ConnectionError`` arrives as a ``NodeError`` that is also one: the node failed, retrying the
        step would not fix it).
    """
    if isinstance(exc, (PermanentError, *_PERMANENT)):
        return False
    return isinstance(exc, TRANSIENT_REDIS_ERRORS) or refuses_writes(exc)


class FailureStreak:
    """The failures of a call made again at intervals (a heartbeat, a lease renewal, a housekeeping pass),
    logged once a streak, not once a try: the first transient one (Redis away, or full and refusing writes)
    at WARNING with its reason, the next ones at DEBUG, and the first success after them at WARNING; any
    other error at WARNING each time. One per repeated call (not thread-safe).

    Args:
        log: the logger of the lines.
        what: the call, as the lines name it (``worker w1 heartbeat``).
        about: returns the ``extra=`` of the lines (log context, :mod:`graphq.worker.logs`), when one is
        logged.
    """

    def __init__(
        self, log: logging.Logger, what: str, about: Callable[[], dict[str, Any]] | None = None
    ) -> None:
        self.log, self.what, self.about = log, what, about
        self.failing = False
        """Whether the call failed with a transient error and has not worked since."""

    def failed(self, exc: BaseException) -> None:
        """The call failed with ``exc``; it is tried again at its next turn."""
        extra = None if self.about is None else self.about()
        if not is_transient(exc):
            self.log.warning("%s failed: %s", self.what, exc, extra=extra)
            return
        reason = REDIS_FULL if refuses_writes(exc) else str(exc)
        level = logging.DEBUG if self.failing else logging.WARNING
        self.log.log(level, "%s failed, trying again until it works: %s", self.what, reason, extra=extra)
        self.failing = True

    def worked(self) -> None:
        """The call worked: a streak of failures is over."""
        if self.failing:
            self.failing = False
            self.log.warning("%s works again", self.what, extra=None if self.about is None else self.about())


_retry_listeners: list[Callable[[], None]] = []


def on_retry(listener: Callable[[], None]) -> None:
    """Call ``listener()`` (no arguments, must not raise) each time a Redis call is tried again after a
    transient error, in this process (the metrics count them); a listener added twice is called once."""
    if listener not in _retry_listeners:
        _retry_listeners.append(listener)


def _retried() -> None:
    for listener in _retry_listeners:
        listener()


def _before_sleep(level: int) -> Callable[[RetryCallState], None]:
    """Log each retry at ``level`` (tenacity's line) and tell the retry listeners."""
    log_sleep = before_sleep_log(logger, level)

    def before_sleep(state: RetryCallState) -> None:
        log_sleep(state)
        _retried()

    return before_sleep


def _max_wait(max_wait_s: float | None) -> float:
    cap = get_settings().redis_retry_max_wait_s if max_wait_s is None else max_wait_s
    if cap <= 0:
        raise ConfigError(f"redis retry max wait must be above 0 s (got {cap})")
    return cap


def _retrying(stop: stop_base, max_wait_s: float, level: int = logging.WARNING) -> Retrying:
    """Transient errors only, pauses from ~0.05 s doubling up to ``max_wait_s`` (half fixed, half jitter),
    each retry logged at ``level``."""
    half = max_wait_s / 2
    return Retrying(
        stop=stop,
        wait=wait_exponential(multiplier=_INITIAL_WAIT_S, max=half)
        + wait_random_exponential(multiplier=_INITIAL_WAIT_S, max=half),
        retry=retry_if_exception(is_transient),
        before_sleep=_before_sleep(level),
        reraise=True,
    )


def redis_retrying(attempts: int | None = None, max_wait_s: float | None = None) -> Retrying:
    """The retry policy for Redis calls, as a tenacity ``Retrying`` (``redis_retrying()(fn, *args)``).

    Args:
        attempts: tries in all, including the first; None means ``GRAPHQ_REDIS_RETRY_ATTEMPTS``.
        max_wait_s: longest pause between two tries, seconds; None means ``GRAPHQ_REDIS_RETRY_MAX_WAIT_S``.
            Pauses start near 0.05 s and double, half fixed and half random (jitter).

    Returns:
        A ``Retrying`` that retries only errors for which :func:`is_transient` holds and re-raises the last
        error once the tries are used up.

    Raises:
        ConfigError: ``attempts`` is below 1 or ``max_wait_s`` is not positive, or the settings are invalid.
    """
    tries = get_settings().redis_retry_attempts if attempts is None else attempts
    if tries < 1:
        raise ConfigError(f"redis retry attempts must be at least 1 (got {tries})")
    return _retrying(stop_after_attempt(tries), _max_wait(max_wait_s))


def outage_retrying(max_wait_s: float | None = None) -> Retrying:
    """The retry policy of worker processes: transient Redis errors are retried for as long as they last.

    A worker outlives a Redis outage of any length (a restart, a failover): it keeps trying with capped
    backoff and carries on once Redis answers again. Everything it writes for a step is fenced by the
    step's lease (I1), so a retry after a long outage whose lease lapsed meanwhile changes nothing.

    Args:
        max_wait_s: longest pause between two tries, seconds; None means ``GRAPHQ_REDIS_RETRY_MAX_WAIT_S``.

    Returns:
        A ``Retrying`` with no limit on attempts that retries only errors for which :func:`is_transient`
        holds (any other error is raised at once). Its retries are logged at DEBUG: the wait is logged once,
        as it begins, by the caller (:func:`outlast`), however many tries it takes.
    """
    return _retrying(stop_never, _max_wait(max_wait_s), logging.DEBUG)


def _after_first_try(
    policy: Callable[[], Retrying],
    message: Callable[[str, BaseException], str],
    fn: Callable[_P, _R],
    /,
    *args: _P.args,
    **kwargs: _P.kwargs,
) -> _R:
    """Call ``fn`` once; after a transient Redis error (logged as ``message(fn's name, error)``), go on under
    ``policy()``. The common path (no error) builds no retry machinery."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:
        if not is_transient(exc):
            raise
        logger.warning("%s", message(getattr(fn, "__qualname__", str(fn)), exc))
    _retried()
    result: _R = policy()(fn, *args, **kwargs)
    return result


def _waiting(call: str, exc: BaseException) -> str:
    """The line :func:`outlast` logs as its wait for ``call`` begins, with its reason."""
    if refuses_writes(exc):
        return f"{REDIS_FULL}, retrying {call} until it accepts them (free memory or raise maxmemory)"
    return f"Redis unavailable, retrying {call} until it is back: {exc}"


def outlast(fn: Callable[_P, _R], *args: _P.args, **kwargs: _P.kwargs) -> _R:
    """Call ``fn`` once; after a transient Redis error (an outage, or a full Redis refusing writes), go on
    under :func:`outage_retrying` (no limit on tries): the call returns once Redis is back or accepts writes
    again, however long that takes. The wait is logged once, with its reason, as it begins. For worker
    processes, whose writes are fenced; the common path (no error) builds no retry machinery."""
    return _after_first_try(outage_retrying, _waiting, fn, *args, **kwargs)


def retry_transient(fn: Callable[_P, _R], *args: _P.args, **kwargs: _P.kwargs) -> _R:
    """Call ``fn`` once; only after a transient Redis error, go on under :func:`redis_retrying`'s policy.

    Same behaviour as ``redis_retrying()(fn, ...)`` with one more try, but the common path (no error)
    builds no retry machinery: for calls on the hot path of a super-step.
    """

    def message(call: str, exc: BaseException) -> str:
        return f"transient Redis error, retrying {call}: {exc}"

    return _after_first_try(redis_retrying, message, fn, *args, **kwargs)


def redis_retry(
    attempts: int | None = None, max_wait_s: float | None = None
) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """Decorator factory: retry the decorated function on transient Redis errors (see :func:`redis_retrying`).

    Example::

        @redis_retry()
        def load(client: redis.Redis, key: str) -> bytes | None:
            return client.get(key)

    Args:
        attempts: tries in all; None means ``GRAPHQ_REDIS_RETRY_ATTEMPTS``.
        max_wait_s: longest pause between tries, seconds; None means ``GRAPHQ_REDIS_RETRY_MAX_WAIT_S``.

    Returns:
        A decorator. The wrapped function re-raises the last error once the tries are used up, and permanent
        errors at once.

    Raises:
        ConfigError: the arguments or the settings are out of range.
    """
    policy = redis_retrying(attempts, max_wait_s)

    def decorate(fn: Callable[_P, _R]) -> Callable[_P, _R]:
        @functools.wraps(fn)
        def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            return policy.copy()(fn, *args, **kwargs)

        return wrapper

    return decorate


def connect(url: str, *, attempts: int | None = None, max_wait_s: float | None = None) -> redis.Redis:
    """A client for ``url``, checked with PING under the retry policy.

    Args:
        url: a ``redis://``, ``rediss://`` or ``unix://`` URL.
        attempts: tries in all; None means ``GRAPHQ_REDIS_RETRY_ATTEMPTS``.
        max_wait_s: longest pause between tries, seconds; None means ``GRAPHQ_REDIS_RETRY_MAX_WAIT_S``.

    Returns:
        A connected ``redis.Redis`` returning bytes (``decode_responses=False``).

    Raises:
        ConfigError: the URL is malformed; the message names ``GRAPHQ_REDIS_URL`` and the redacted URL (not
            even that when the value is not a Redis URL at all, see :func:`check_url`).
        RedisUnavailableError: Redis stayed unreachable through every try, or refused the connection (it
            needs a password the URL does not give, refused the one it gives, or sent another error reply),
            which fails at once. The message is one line and shows the URL without its password.
    """
    check_url(url)
    safe = redact_url(url)
    client = redis.Redis.from_url(
        url, decode_responses=False, socket_connect_timeout=5, health_check_interval=30
    )
    try:
        redis_retrying(attempts, max_wait_s)(client.ping)
    except rex.RedisError as exc:
        credentials = client.connection_pool.connection_kwargs
        client.close()
        raise unavailable(safe, exc, credentials.get("password") is not None) from exc
    return client


def check_url(url: str, source: str = "GRAPHQ_REDIS_URL") -> str:
    """Refuse a value that is not a valid Redis URL, as redis-py parses it (``redis.connection.parse_url``),
    and a database in its path that is not a number (redis-py ignores one: ``redis://h/abc`` used db 0);
    ``source`` names where the value came from (``--redis-url`` when the CLI's option gave it).

    Returns:
        ``url``.

    Raises:
        ConfigError: ``url`` does not start with ``redis://``, ``rediss://`` or ``unix://`` (the message names
            ``source``, not the value: it may be a secret, e.g. a password set where the URL belongs); or it
            does not parse, or names no numeric db (the message shows it without its password, and redis-py's
            reason only when it has none: the reason may quote part of the URL).
    """
    if not url.lower().startswith(_REDIS_SCHEMES):
        raise ConfigError(
            f"{source} is not a redis:// URL (its value is not shown: it may hold a secret); {_EXPECTED}"
        )
    safe = redact_url(url)
    try:
        parse_url(url)  # type: ignore[no-untyped-call]  # redis-py leaves it unannotated
    except ValueError as exc:
        reason = f" ({exc})" if safe == url else ""
        raise ConfigError(f"{source}={safe} is not a valid Redis URL{reason}; {_EXPECTED}") from None
    db = urlsplit(url).path.strip("/")
    if not url.lower().startswith("unix://") and db and not db.isdigit():
        raise ConfigError(f"{source}={safe}: its path {db!r} is not a database number; {_EXPECTED}")
    return url


def unavailable(safe_url: str, exc: rex.RedisError, with_password: bool) -> RedisUnavailableError:
    """The error for Redis at ``safe_url`` (already redacted) failing a PING with ``exc``, in one line: a
    refused or missing password is said so (``needs a password: give it in the URL ...``), not in Redis's
    words (``HELLO must be called with the client already authenticated ...``); ``with_password``: whether
    the URL gives one."""
    if isinstance(exc, _PERMANENT):
        if not with_password:
            return RedisUnavailableError(
                f"Redis at {safe_url} needs a password: give it in the URL, redis://:PASSWORD@HOST:PORT/DB "
                "(or redis://USER:PASSWORD@... for an ACL user)"
            )
        return RedisUnavailableError(
            f"Redis at {safe_url} refused the password in the URL (authentication failed: a wrong password, "
            "or a user it does not know)"
        )
    reason = " ".join(str(exc).split()) or type(exc).__name__
    if is_transient(exc):
        return RedisUnavailableError(f"cannot reach Redis at {safe_url}: {reason}")
    return RedisUnavailableError(f"Redis at {safe_url} refused the connection: {reason}")
