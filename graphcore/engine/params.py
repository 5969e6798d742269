"""What a node function (or a router) is passed besides the state, read once from its signature at
``add_node`` / ``add_conditional_edges`` time, as LangGraph's ``StateGraph`` reads it.

* ``config``: a parameter of that name (positional-or-keyword or keyword-only) gets the task's run config
  (:class:`~graphcore.engine.config.RunConfig`, which reads like LangGraph's ``RunnableConfig`` dict).
* ``writer``: gets the task's stream writer (LangGraph's ``StreamWriter``: ``writer(chunk)`` emits a
  ``custom`` stream event, as :func:`~graphcore.engine.config.get_stream_writer` does).
* ``store``: gets the run's long-term store (:func:`~graphcore.engine.runtime.get_store`; None without
  one), as LangGraph's.
* ``runtime``: gets the run's :class:`~graphcore.engine.runtime.Runtime` (``runtime.context``,
  ``runtime.stream_writer``), as LangGraph's.
* ``error``, in an error handler only (``add_node(..., error_handler=...)``): the
  :class:`~graphcore.errors.NodeError` of the node it handles (LangGraph's ``error: NodeError``).
* graphq's own form: a second required positional parameter of any other name gets the config
  (``fn(state, cfg)``), passed positionally; LangGraph would not fill it.

LangGraph matches ``config`` and ``writer`` only with no annotation or the expected one
(``RunnableConfig``, ``StreamWriter``); graphq matches the name whatever the annotation. ``**kwargs`` gets
nothing.

A node's input schema (the keys it sees) is the annotation of its first parameter when that is a TypedDict
or a pydantic model, as LangGraph infers it.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any

from graphcore.engine.config import NODE_ERROR_KEY, current_task
from graphcore.engine.runtime import run_store, runtime_of
from graphcore.engine.schema import is_schema
from graphcore.types import Command

__all__ = [
    "HANDLER_INJECTED",
    "INJECTED",
    "command_destinations",
    "injected",
    "input_schema_of",
    "keyword_args",
    "literal_returns",
    "takes_positional_config",
]

INJECTED = ("config", "writer", "store", "runtime")
"""The parameter names filled by keyword, in LangGraph's order."""
HANDLER_INJECTED = (*INJECTED, "error")
"""An error handler's (:mod:`graphcore.engine.handlers`): also ``error``, the node's failure."""

_KEYWORD_KINDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
_POSITIONAL_KINDS = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def keyword_args(names: Sequence[str], config: Any = None) -> dict[str, Any]:
    """The keyword arguments ``names`` of one call inside a running task: ``config`` (the task's, unless
    given), the stream ``writer``, the long-term ``store`` and the ``runtime``
    (:class:`~graphcore.engine.runtime.Runtime`).

    Raises:
        OutsideRunError: called outside a running task.
    """
    task = current_task("a node or router taking config, writer, store or runtime")
    values: dict[str, Callable[[], Any]] = {
        "config": lambda: task.config if config is None else config,
        "writer": lambda: task.stream_writer,
        "store": run_store,
        "runtime": lambda: runtime_of(task),
        "error": lambda: task.config.configurable.get(NODE_ERROR_KEY),
    }
    return {name: values[name]() for name in names}


def _signature(fn: Callable[..., Any]) -> list[inspect.Parameter] | None:
    try:
        return list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # a builtin or a callable without a signature
        return None


def injected(fn: Callable[..., Any], names: Sequence[str] = INJECTED) -> tuple[str, ...]:
    """The ``names`` (:data:`INJECTED`, or :data:`HANDLER_INJECTED` for an error handler) ``fn`` takes by
    keyword, e.g. ``("config", "writer")``."""
    params = _signature(fn) or []
    return tuple(n for n in names if any(p.name == n and p.kind in _KEYWORD_KINDS for p in params))


def takes_positional_config(fn: Callable[..., Any], names: Sequence[str] = INJECTED) -> bool:
    """Whether ``fn`` has a second required positional parameter not named as one of ``names`` (graphq's
    ``fn(state, cfg)``)."""
    params, keywords = _signature(fn) or [], injected(fn, names)
    return any(
        p.kind in _POSITIONAL_KINDS and p.default is p.empty and p.name not in keywords for p in params[1:]
    )


def input_schema_of(fn: Callable[..., Any]) -> type[Any] | None:
    """The TypedDict or pydantic model annotating ``fn``'s first parameter (its input schema), or None.

    An annotation that does not resolve (a forward reference) gives None, as in LangGraph.
    """
    target = fn if inspect.isfunction(fn) or inspect.ismethod(fn) else type(fn).__call__
    try:
        hints = typing.get_type_hints(target)
        first = next(iter(inspect.signature(fn).parameters))
    except (NameError, TypeError, ValueError, StopIteration, AttributeError):
        return None
    hint = hints.get(first)
    return hint if is_schema(hint) else None


def literal_returns(fn: Callable[..., Any]) -> list[str] | None:
    """The names of ``fn``'s return annotation ``Literal["a", "b"]`` (a router's possible destinations,
    as LangGraph reads them), or None without one."""
    return _literal_names(_return_hint(fn))


def command_destinations(fn: Callable[..., Any]) -> tuple[str, ...]:
    """The node names of ``fn``'s return annotation ``Command[Literal["a", "b"]]`` (LangGraph's way of
    declaring a node's ``Command(goto=...)`` destinations), also inside a union (``Command[...] | dict``);
    () without one or when it cannot be read."""
    returns = _return_hint(fn)
    if typing.get_origin(returns) in (typing.Union, types.UnionType):
        returns = next((a for a in typing.get_args(returns) if typing.get_origin(a) is Command), None)
    if typing.get_origin(returns) is not Command:
        return ()
    (goes,) = typing.get_args(returns) or (None,)
    return tuple(_literal_names(goes) or ())


def _return_hint(fn: Callable[..., Any]) -> Any:
    """``fn``'s return annotation, resolved; None without one or when it does not resolve."""
    try:
        return typing.get_type_hints(fn).get("return")
    except Exception:  # a forward reference that does not resolve, a callable object without hints, ...
        return None


def _literal_names(hint: Any) -> list[str] | None:
    """The values of a ``Literal[...]`` annotation as strings; None for any other annotation."""
    if typing.get_origin(hint) is not typing.Literal:
        return None
    return [str(name) for name in typing.get_args(hint)]
