"""Per-node retry policies (G9), carried out by tenacity.

A node added with ``add_node(..., retry=RetryPolicy(...))`` is tried again when it raises an error that the
policy's ``retry_on`` accepts; the pause before try ``n + 1`` is
``min(initial_interval_s * backoff_factor ** (n - 1), max_interval_s)`` seconds, plus up to one second of
random jitter. Field names, defaults and the formula follow LangGraph's ``RetryPolicy``
(``langgraph.types.RetryPolicy``, ``langgraph/pregel/_retry.py``), with ``_s`` suffixes for the units.

Unlike LangGraph's, the default predicate retries ``OSError`` and ``RuntimeError`` (network and library
failures), while programming errors stay permanent: see :func:`default_retry_on`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import InitVar, dataclass
from typing import TypeAlias

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
    wait_random,
)
from tenacity.wait import wait_base

from graphcore.errors import Cancelled, ConfigError, ParentCommand, PermanentError, RetryOnError

__all__ = ["NodeRetry", "RetryOn", "RetryPolicies", "RetryPolicy", "default_retry_on"]

RetryOn: TypeAlias = type[BaseException] | tuple[type[BaseException], ...] | Callable[[BaseException], bool]
"""What a policy retries: an exception class, a tuple of classes, or a predicate on the raised error."""

_JITTER_S = 1.0
"""Largest random pause added to each wait when ``jitter`` is on, seconds (LangGraph: ``uniform(0, 1)``)."""

_NOT_RETRIED: tuple[type[BaseException], ...] = (
    ValueError,
    TypeError,
    KeyError,
    IndexError,
    AttributeError,
    NameError,
    SyntaxError,
    NotImplementedError,
    ZeroDivisionError,
    AssertionError,
    ArithmeticError,
    LookupError,
    PermanentError,
    Cancelled,
)
"""Programming errors and graphq's permanent errors: trying again gives the same result."""


def default_retry_on(exc: BaseException) -> bool:
    """The default ``retry_on``: retry anything except programming errors.

    Args:
        exc: the error a node raised.

    Returns:
        False for programming errors (``ValueError``, ``TypeError``, ``LookupError``, ``AttributeError``,
        ``NameError``, ``SyntaxError``, ``NotImplementedError``, ``ArithmeticError``, ``AssertionError`` and
        their subclasses), graphq's :class:`~graphcore.errors.PermanentError` family (e.g. a node timeout),
        :class:`~graphcore.errors.Cancelled` and any other non-``Exception``; True for the rest, e.g.
        ``ConnectionError``, ``TimeoutError``, ``OSError``, ``RuntimeError`` or a graphq ``TransientError``.
    """
    return isinstance(exc, Exception) and not isinstance(exc, _NOT_RETRIED)


def _matches(retry_on: object, exc: BaseException) -> bool:
    """Whether ``retry_on`` accepts ``exc``, read when a node fails, as LangGraph reads it.

    Raises:
        RetryOnError: ``retry_on`` is no exception class, list or tuple of them, or callable.
    """
    if isinstance(retry_on, Sequence) and not isinstance(retry_on, str):
        if all(isinstance(c, type) and issubclass(c, BaseException) for c in retry_on):
            return isinstance(exc, tuple(retry_on))
    elif isinstance(retry_on, type) and issubclass(retry_on, BaseException):
        return isinstance(exc, retry_on)
    elif callable(retry_on) and not isinstance(retry_on, type):
        return bool(retry_on(exc))
    raise RetryOnError(
        "retry_on must be an Exception class, a list or tuple of Exception classes, or a callable "
        f"(got {retry_on!r})"
    )


def sleep(seconds: float) -> None:
    """A pause between two tries of a sync node, through ``time.sleep`` as LangGraph's (looked up at each
    call: a program or test that patches ``time.sleep`` sees the pauses)."""
    time.sleep(seconds)


async def asleep(seconds: float) -> None:
    """A pause between two tries of an async node, through ``asyncio.sleep`` as LangGraph's (looked up at
    each call, as :func:`sleep`)."""
    await asyncio.sleep(seconds)


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a node is tried again after an error (G9).

    Attributes:
        initial_interval_s: pause before the second try, in seconds (0 or more: 0 tries again at once).
        backoff_factor: each further pause is this many times the previous one (at least 1).
        max_interval_s: upper bound of a pause before jitter, in seconds (0 or more).
        max_attempts: tries in all, the first one included (at least 1; 1 means no retry).
        jitter: add a random pause of 0 to 1 s to each wait, so that many failing tasks do not retry in step.
        retry_on: the errors to retry: an exception class, a tuple (or list) of classes, or a predicate; by
            default :func:`default_retry_on`. Errors that are not ``Exception`` (``Cancelled``,
            ``KeyboardInterrupt``, ``SystemExit``) and a node's ``Command(graph=Command.PARENT)`` are never
            retried, whatever it says. It is read when the node fails, as LangGraph reads it: anything
            else then fails the run with :class:`~graphcore.errors.RetryOnError` (a ``TypeError``).

    LangGraph's field names are accepted too (``RetryPolicy(initial_interval=0.1, max_interval=5)``, keyword
    only; the positional order is LangGraph's): they set ``initial_interval_s`` and ``max_interval_s``.

    Raises:
        ConfigError: a field is out of range (a negative interval); the message names the field.
    """

    initial_interval_s: float = 0.5
    backoff_factor: float = 2.0
    max_interval_s: float = 128.0
    max_attempts: int = 3
    jitter: bool = True
    retry_on: RetryOn = default_retry_on
    initial_interval: InitVar[float | None] = None
    max_interval: InitVar[float | None] = None

    def __post_init__(self, initial_interval: float | None, max_interval: float | None) -> None:
        for name, value in (("initial_interval_s", initial_interval), ("max_interval_s", max_interval)):
            if value is not None:  # LangGraph's name for the field
                object.__setattr__(self, name, value)
        if isinstance(self.retry_on, list):
            object.__setattr__(self, "retry_on", tuple(self.retry_on))
        if isinstance(self.max_attempts, bool) or not isinstance(self.max_attempts, int):
            raise ConfigError(f"RetryPolicy.max_attempts must be an integer (got {self.max_attempts!r})")
        if self.max_attempts < 1:
            raise ConfigError(f"RetryPolicy.max_attempts must be at least 1 (got {self.max_attempts})")
        for name in ("initial_interval_s", "max_interval_s"):
            value = getattr(self, name)
            if not value >= 0:  # also rejects NaN
                raise ConfigError(f"RetryPolicy.{name} must be 0 s or more (got {value})")
        if not self.backoff_factor >= 1:
            raise ConfigError(f"RetryPolicy.backoff_factor must be at least 1 (got {self.backoff_factor})")

    def should_retry(self, exc: BaseException) -> bool:
        """Whether ``exc`` is worth another try under this policy (attempts left aside): never a
        :class:`~graphcore.errors.ParentCommand` (a ``Command.PARENT`` on its way up, as LangGraph's).

        Raises:
            RetryOnError: ``retry_on`` is of no accepted kind.
        """
        return (
            isinstance(exc, Exception) and not isinstance(exc, ParentCommand) and _matches(self.retry_on, exc)
        )

    def wait(self) -> wait_base:
        """The tenacity wait strategy: exponential backoff, capped, plus jitter when enabled."""
        backoff = wait_exponential(
            multiplier=self.initial_interval_s, exp_base=self.backoff_factor, max=self.max_interval_s
        )
        return backoff + wait_random(0, _JITTER_S) if self.jitter else backoff

    def retrying(
        self,
        *,
        retry_on: Callable[[BaseException], bool] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        before_sleep: Callable[[RetryCallState], None] | None = None,
    ) -> Retrying:
        """A tenacity ``Retrying`` carrying out this policy; it re-raises the last error when it gives up.

        Args:
            retry_on: the predicate to use instead of :meth:`should_retry` (e.g. one that also checks a
                cancel token).
            sleep: called with the pause in seconds between two tries.
            before_sleep: called before each pause; ``state.attempt_number`` is the try that failed,
                ``state.outcome`` holds its error and ``state.upcoming_sleep`` the pause in seconds.

        Returns:
            A fresh ``Retrying``: call it as ``retrying(fn, *args)``.
        """
        return Retrying(
            stop=stop_after_attempt(self.max_attempts),
            wait=self.wait(),
            retry=retry_if_exception(retry_on or self.should_retry),
            sleep=sleep,
            before_sleep=before_sleep,
            reraise=True,
        )


@dataclass(frozen=True)
class RetryPolicies:
    """LangGraph's ``retry_policy=[p1, p2]``: an error is retried under the first policy whose ``retry_on``
    accepts it (that policy's ``max_attempts`` and pauses), the tries counted across all of them, as
    LangGraph's ``run_with_retry``; an error no policy accepts ends the tries.

    Attributes:
        policies: the policies in the order given (at least two; one is a plain :class:`RetryPolicy`).
    """

    policies: tuple[RetryPolicy, ...]

    def matching(self, exc: BaseException) -> RetryPolicy | None:
        """The first policy that retries ``exc`` (attempts left aside), or None."""
        return next((p for p in self.policies if p.should_retry(exc)), None)

    def should_retry(self, exc: BaseException) -> bool:
        """Whether some policy retries ``exc`` (attempts left aside)."""
        return self.matching(exc) is not None

    def _policy(self, state: RetryCallState) -> RetryPolicy | None:
        exc = state.outcome.exception() if state.outcome is not None else None
        return None if exc is None else self.matching(exc)

    def _stop(self, state: RetryCallState) -> bool:
        policy = self._policy(state)
        return policy is None or state.attempt_number >= policy.max_attempts

    def _wait(self, state: RetryCallState) -> float:
        policy = self._policy(state)
        return 0.0 if policy is None else policy.wait()(state)

    def retrying(
        self,
        *,
        retry_on: Callable[[BaseException], bool] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        before_sleep: Callable[[RetryCallState], None] | None = None,
    ) -> Retrying:
        """A tenacity ``Retrying`` carrying out these policies; the arguments are
        :meth:`RetryPolicy.retrying`'s."""
        return Retrying(
            stop=self._stop,
            wait=self._wait,
            retry=retry_if_exception(retry_on or self.should_retry),
            sleep=sleep,
            before_sleep=before_sleep,
            reraise=True,
        )


NodeRetry: TypeAlias = RetryPolicy | RetryPolicies
"""A node's retry setting: one policy, or LangGraph's list of them."""
