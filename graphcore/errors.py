"""The graphq error hierarchy.

Every error graphq raises derives from :class:`GraphqError`. Retryability is data, not a guess: errors under
:class:`TransientError` may succeed when tried again (tenacity retries exactly those); everything else is
permanent and fails fast. The shape follows Temporal's ``ApplicationError(non_retryable=...)``.
"""

from __future__ import annotations

import os
import sys
import warnings
from types import FrameType
from typing import Any

__all__ = [
    "AmbiguousAnswerError",
    "AppendConflictError",
    "ArgumentTypeError",
    "Cancelled",
    "CheckpointNotFoundError",
    "CheckpointerError",
    "ColdStop",
    "ConfigError",
    "ConfigKeyError",
    "ConfigValueError",
    "DisabledError",
    "EmptyInputError",
    "GraphDrained",
    "GraphRecursionError",
    "GraphqError",
    "InvalidGraphError",
    "InvalidUpdateError",
    "LeaseLostError",
    "NoCheckpointerError",
    "NodeError",
    "NodeTimeoutError",
    "OutsideRunError",
    "ParentCommand",
    "PermanentError",
    "RedisUnavailableError",
    "RetryOnError",
    "RunExistsError",
    "RunNotFoundError",
    "SerializationError",
    "StepLimitError",
    "ThreadRequiredError",
    "TransientError",
    "UnknownWorkflowError",
    "node_error",
    "where",
]


class GraphqError(Exception):
    """Root of every error raised by graphq."""


class TransientError(GraphqError):
    """A failure that may pass when retried (a dropped Redis connection, a lost race)."""


class PermanentError(GraphqError):
    """A failure that retrying cannot fix (bad input, a bug in a node, a broken graph).

    Attributes:
        param: the field of the run request at fault when the client's request check raised it
            (:func:`graphcore.backend.client.check_request`): ``workflow``, ``input``, ``thread_id``,
            ``tenant``, ``config``, ``checkpoint_id``, ``run_id``, ``continued_from_run_id``,
            ``preset_answers``, ``webhook`` or ``request``; None otherwise. The CLI names its option from it.
    """

    param: str | None = None


class InvalidGraphError(PermanentError, ValueError):
    """The graph cannot be compiled: unknown node, no entry point, edge to nowhere (G1).
    Also a ``ValueError``, which LangGraph raises for an invalid graph."""


class InvalidUpdateError(PermanentError, ValueError):
    """A node's writes cannot be applied, e.g. two writes to one LastValue channel in one super-step (G2).
    Also a ``ValueError``, as LangGraph's invalid updates are caught.

    Attributes:
        node: the node whose writes a channel's reducer refused, when they were one node's (the message
            names the writers either way); None otherwise.
    """

    node: str | None = None


class StepLimitError(PermanentError, RecursionError):
    """The run needed more super-steps than ``max_super_steps`` allows (C1, R12). Also a ``RecursionError``,
    as LangGraph's ``GraphRecursionError`` (its recursion limit) is; :data:`GraphRecursionError` names it."""


GraphRecursionError = StepLimitError
"""LangGraph's name for the step-limit error: ``except GraphRecursionError`` catches graphq's."""


class AmbiguousAnswerError(InvalidUpdateError, RuntimeError):
    """A plain answer (``Command(resume=value)``, ``graphq runs answer RUN VALUE``) while several requests
    are pending: answer them by id. Also a ``RuntimeError``, as LangGraph's, and LangGraph's words first:
    "When there are multiple pending interrupts, you must specify the interrupt id when resuming"."""


class CheckpointerError(PermanentError, TypeError):
    """``compile(checkpointer=...)`` got something that is not a graphq checkpoint store, True, False or None
    (a LangGraph checkpointer among them). Also a ``TypeError``, as LangGraph's ``compile`` raises."""


class NoCheckpointerError(PermanentError, ValueError, RuntimeError):
    """There is no checkpoint store to use: the state API (``get_state``, ``update_state``, ...) of a graph
    compiled without one (a ``ValueError``, as LangGraph's "No checkpointer set"), or a root graph run with
    ``checkpointer=True``, which is for subgraphs (a ``RuntimeError``, as LangGraph's)."""


class SerializationError(PermanentError):
    """A value cannot be stored: its type is not on the serde allow-list (I5).

    Attributes:
        path: where the value sits in the state, e.g. ``state.items[3].when``.
    """

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path


class ConfigError(PermanentError):
    """A setting or run option is out of range or unknown; the message names the setting."""


class ArgumentTypeError(ConfigError, TypeError):
    """An argument has the wrong type (``tenant=123``, ``config="nope"``, one run id where a list of them is
    expected); the message names the parameter and what it must be. Also a ``TypeError``, as Python raises
    for an argument of the wrong type.

    Attributes:
        name: the parameter, e.g. ``tenant`` or ``requests[2]``.
    """

    def __init__(self, name: str, expected: str, value: Any) -> None:
        given = repr(value)
        brief = given if len(given) <= 60 else given[:60] + "…"
        super().__init__(f"{name} must be {expected} (got {type(value).__name__} {brief})")
        self.name = name


class ConfigKeyError(ConfigError, KeyError):
    """A config or checkpoint given to a saver method lacks a key it needs (``configurable.thread_id``,
    ``checkpoint_id``, a checkpoint's ``id``); the message names it. Also a ``KeyError``, as LangGraph's
    savers raise; printed as its message (not quoted, as a plain ``KeyError`` is)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class ConfigValueError(ConfigError, ValueError):
    """A run option's value is out of its range (``recursion_limit=0``). Also a ``ValueError``, as
    LangGraph raises for it."""


class ThreadRequiredError(ConfigError, ValueError):
    """A graph compiled with a checkpointer was run outside any node without a thread id. Also a
    ``ValueError``, as LangGraph's ("Checkpointer requires one or more of the following 'configurable'
    keys")."""


class EmptyInputError(PermanentError):
    """A run got no input (``invoke(None, ...)``) and has nothing to continue: no checkpointer, or a thread
    without a checkpoint. LangGraph's ``langgraph.errors.EmptyInputError`` (an ``Exception``), same message:
    ``Received no input for __start__``."""


class GraphDrained(GraphqError):
    """A run stopped before a super-step because its :class:`~graphcore.engine.runtime.RunControl` was asked
    to drain (LangGraph's ``langgraph.errors.GraphDrained``, same message: ``Graph drained: <reason>``).
    Every finished super-step is committed; ``invoke(None, config)`` on the thread goes on.

    Attributes:
        reason: the reason given to ``request_drain`` (``"shutdown"`` by default).
    """

    def __init__(self, reason: str = "shutdown") -> None:
        super().__init__(f"Graph drained: {reason}")
        self.reason = reason


class DisabledError(PermanentError):
    """New runs are refused: the kill switch is off (R6), cluster-wide (``graphq disable``) or in this
    process (``GRAPHQ_ENABLED=false``); the message names which, and how to turn it on again."""


class ParentCommand(PermanentError):
    """A node returned ``Command(graph=Command.PARENT, ...)``: raised out of its graph's run and taken by the
    node of the parent graph that ran it (a subgraph node, or a node calling ``invoke``) as that node's
    Command. Raised to the caller from a root graph, which has no parent (LangGraph's
    ``langgraph.errors.ParentCommand`` escapes the same way).

    Its only argument is the command, as LangGraph's (``exc.args[0]``); ``str()`` says what went wrong.

    Attributes:
        node: the node that returned the command.
        command: the command, ``graph`` still ``Command.PARENT`` (``args[0]``).
    """

    def __init__(self, node: str, command: Any) -> None:
        super().__init__(command)
        self.node = node
        self.command = command

    def __str__(self) -> str:
        return (
            f"node {self.node!r} returned Command(graph=Command.PARENT) but its graph is not a subgraph: "
            f"there is no parent graph to update or go to (goto={self.command.goto!r})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.node, self.command)


class RetryOnError(ConfigError, TypeError):
    """A node failed and its ``RetryPolicy.retry_on`` is neither an exception class, a list or tuple of
    them, nor a callable: the run fails with it (not the node's error), when the node fails, as LangGraph's
    (a ``TypeError``, LangGraph's message)."""


class OutsideRunError(GraphqError, RuntimeError):
    """``get_config()`` / ``get_stream_writer()`` was called outside a running node (C5)."""


class NodeError(PermanentError):
    """A node, or one of its routers (conditional edge functions), raised; wraps the original error with
    where it came from.

    Built by :func:`node_error`, the raised error is also an instance of the original error's type (as
    LangGraph raises the node's exception itself), so ``except KeyError`` / ``except MyAppError`` around
    ``invoke`` catch it as ``except NodeError`` does.

    Attributes:
        node: the node's name (``"__start__"`` for a router of START).
        error: the exception the node (or router) raised; in an error handler of a continued run that
            runs only the handler, the text of that exception saved before the handler first ran
            (``"KeyError('x')"``, as LangGraph's).

    Its message also names the router that raised, and the node's tries when it had several (kept in
    underscored attributes: the combined type must not shadow fields of the node's own error class).
    """

    _router: str | None = None
    _attempts: int = 1

    def __init__(
        self, node: str, error: BaseException | str, router: str | None = None, attempts: int = 1
    ) -> None:
        super().__init__(_node_message(node, error, router, attempts))
        self.node = node
        self.error = error
        self._router = router
        self._attempts = attempts

    def __str__(self) -> str:  # not the combined type's (KeyError's would quote it)
        return _node_message(self.node, self.error, self._router, self._attempts)

    def __repr__(self) -> str:
        return f"NodeError({str(self)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return node_error, (self.node, self.error, self._router, self._attempts)


def where(node: str, router: str | None = None) -> str:
    """How errors name the code that raised: ``node 'a'``, or ``router 'pick' after node 'a'`` for a router
    of node ``a`` (``router 'pick' after START`` for one of START, ``"__start__"``)."""
    if router is None:
        return f"node {node!r}"
    return f"router {router!r} after {'START' if node == '__start__' else f'node {node!r}'}"


def _node_message(node: str, error: BaseException | str, router: str | None, attempts: int) -> str:
    tries = f" (after {attempts} attempts)" if attempts > 1 else ""
    if isinstance(error, str):  # a saved failure's text: its type is in it (``KeyError('x')``)
        return f"{where(node, router)} raised {error}{tries}"
    text = str(error)
    return f"{where(node, router)} raised {type(error).__name__}{': ' if text else ''}{text}{tries}"


_UNCOMBINED = (NodeError, StopIteration, StopAsyncIteration)
"""Errors raised as a plain NodeError: a StopIteration raised in a generator (the stream) would become a
RuntimeError (PEP 479). So is every error that is not an ``Exception`` (``SystemExit``, ``KeyboardInterrupt``,
``asyncio.CancelledError``): the NodeError must stay an ``Exception``, a task failure like any other."""


_COMBINED: dict[type[BaseException], type[NodeError] | None] = {}


def _combined(kind: type[BaseException]) -> type[NodeError] | None:
    """The NodeError subclass that is also a ``kind`` (named NodeError, so error records and tracebacks read
    as before), made once per type, or None when the two cannot be combined (a layout conflict, a class
    that takes no subclasses)."""
    if kind in _COMBINED:
        return _COMBINED[kind]
    made: type[NodeError] | None
    try:
        made = type("NodeError", (NodeError, kind), {"__module__": __name__, "__qualname__": "NodeError"})
    except Exception:  # TypeError for a layout conflict or a final class; a metaclass may raise anything
        made = None
    return _COMBINED.setdefault(kind, made)


def node_error(node: str, error: BaseException, router: str | None = None, attempts: int = 1) -> NodeError:
    """The error a run raises when node ``node`` (or its router ``router``) raised ``error``, after
    ``attempts`` tries: a :class:`NodeError` (``.node``, ``.error``, ``str()``
    ``node '<name>' raised <Type>: <error>``, ``router '<name>' after node '<name>' raised ...``, with
    `` (after <n> attempts)`` when it was tried more than once) that is also an instance of ``type(error)``,
    with its ``args`` and attributes (``errno``, a user class's fields); a plain NodeError when the types
    cannot be combined or the combined one cannot be made, and for an error that is not an ``Exception``."""
    plain = isinstance(error, _UNCOMBINED) or not isinstance(error, Exception)
    kind = None if plain else _combined(type(error))
    if kind is None:
        return NodeError(node, error, router, attempts)
    try:
        made = kind.__new__(kind, *error.args)
        for attr in ("errno", "strerror", "filename", "filename2") if isinstance(error, OSError) else ():
            setattr(made, attr, getattr(error, attr))
        vars(made).update(vars(error))
    except Exception:
        return NodeError(node, error, router, attempts)
    made.args = error.args
    made.node, made.error, made._router, made._attempts = node, error, router, attempts
    return made


class NodeTimeoutError(PermanentError):
    """A node's try ran longer than the ``timeout`` set on ``add_node`` (G10) or on the task's ``Send``, or
    went its ``idle_timeout`` without progress; its task's cancel token was set.

    Attributes:
        node: the node's name.
        timeout_s: the timeout it exceeded, in seconds (LangGraph's ``timeout``, also readable as that).
        kind: ``"run"`` (the cap on a try) or ``"idle"`` (no progress), as LangGraph's.
        run_timeout: the try's cap in seconds, None without one (LangGraph's).
        idle_timeout: the try's idle timeout in seconds, None without one (LangGraph's).
        reason: what the try's cancel token says (the message without where it was set).
    """

    def __init__(
        self,
        node: str,
        timeout_s: float,
        kind: str = "run",
        *,
        run_timeout: float | None = None,
        idle_timeout: float | None = None,
        set_on: str = "add_node",
    ) -> None:
        shown = f"{timeout_s:g}"  # as it was set: timeout=1, not 1.0
        if kind == "idle":
            self.reason = f"node {node!r} made no progress for {shown} s"
            super().__init__(f"{self.reason} (TimeoutPolicy(idle_timeout={shown}) set on {set_on})")
        else:
            self.reason = f"node {node!r} timed out after {shown} s"
            super().__init__(f"{self.reason} (timeout={shown} set on {set_on})")
        self.node = node
        self.timeout_s = self.timeout = timeout_s
        self.kind = kind
        self.run_timeout = timeout_s if kind == "run" else run_timeout
        self.idle_timeout = timeout_s if kind == "idle" else idle_timeout


class UnknownWorkflowError(PermanentError):
    """No workflow is registered under the requested name."""


class RunNotFoundError(PermanentError):
    """No run record exists for the given run id."""


class RunExistsError(PermanentError):
    """A run was to be created under an id that names a run already (``client.enqueue(..., run_id=X)``, a
    schedule's fire), or under an id given to two runs of one request; nothing was written.

    Attributes:
        run_id: the id.
        thread_id: the thread of the run that has it; None for an id given twice in one request.
    """

    def __init__(self, run_id: str, thread_id: str | None) -> None:
        where = f"run {run_id} exists already (thread {thread_id!r})"
        if thread_id is None:
            where = f"run id {run_id!r} is given to two runs of one request"
        super().__init__(f"{where}; nothing was enqueued: a run id names one run, give a new one or none")
        self.run_id = run_id
        self.thread_id = thread_id


class CheckpointNotFoundError(PermanentError):
    """No checkpoint exists for the given thread (and checkpoint id)."""


class RedisUnavailableError(TransientError):
    """Redis could not be reached after bounded retries; the message names the URL without its password."""


class AppendConflictError(TransientError):
    """A checkpoint's log append found its log grown by another branch (the append guard of
    :mod:`graphcore.checkpoints.layout`); nothing was written. The store plans again with a new generation."""


class LeaseLostError(TransientError):
    """This worker no longer holds the lease of the step it ran; its commit is rejected (I1)."""


class Cancelled(BaseException):
    """Raised inside a node by ``get_cancel_token().raise_if_cancelled()`` once its run or task is cancelled.

    A BaseException, like rq's ``ShutDownImminentException``: a node's ``except Exception`` cannot swallow
    it, so the task stops.
    """


class ColdStop(SystemExit):
    """A worker process stopping at once on a signal (RQ's cold stop: the second Ctrl-C or SIGTERM to a worker
    run in process by :func:`graphq.worker.process.rq_worker.run_worker`), raised by its signal handler
    wherever the main thread is, possibly inside a node. Never the node's failure: the step is left as a
    killed worker's is, to crash recovery (its lease lapses, R18). A ``SystemExit``, as RQ's own."""


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep
"""graphcore's folder: warnings point past its frames (:func:`warn_caller`)."""


def warn_caller(message: str, category: type[Warning] = UserWarning) -> None:
    """Issue ``warnings.warn(message, category)`` pointing at the first frame outside graphcore: the user's
    line that called ``invoke``, ``stream``, ``update_state``, ... (Python 3.12's ``skip_file_prefixes``, done
    by walking the stack so that it works on 3.11 too)."""
    level = 2
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
