"""Run context, as LangGraph's ``context_schema`` and ``Runtime``: immutable values of one run (a user id, a
model name) that every node can read, given with ``invoke(input, context=...)`` (``stream``, ``ainvoke``,
``astream`` too) or, for a queued run, in its config (``client.enqueue(wf, input, config={"context":
{...}})``).

The context travels in the run config (:attr:`~graphcore.engine.config.RunConfig.context`): graphs invoked
inside a node (and subgraphs) inherit it, and a queued run stores it with its config, as JSON (a dataclass or
pydantic context is stored as its fields). When the graph has a ``context_schema`` that is a dataclass or a
pydantic model, a dict context is turned into it (LangGraph's rule), so a node reads ``runtime.context.user``
in process and on a worker alike.

A node or router parameter named ``runtime`` gets a :class:`Runtime` (:mod:`graphcore.engine.params`);
:func:`get_runtime` returns the same inside a node.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from graphcore.engine.config import RunConfig, TaskContext, current_scope, current_task, merge_config
from graphcore.errors import ConfigError

__all__ = [
    "Runtime",
    "StreamWriter",
    "coerce_context",
    "get_runtime",
    "get_store",
    "run_store",
    "runtime_of",
    "with_context",
]

ContextT = TypeVar("ContextT")

StreamWriter = Callable[[Any], None]
"""LangGraph's ``StreamWriter``: what a node's ``writer`` parameter is (``writer(chunk)`` emits a ``custom``
stream event)."""


@dataclass(frozen=True)
class Runtime(Generic[ContextT]):
    """What a node is given besides its state and config (LangGraph's ``Runtime``).

    Attributes:
        context: the run's context (None when the run was given none).
        stream_writer: ``stream_writer(chunk)`` emits a ``custom`` stream event.
        store: the run's long-term store (``compile(store=...)``; on the queue, the workers' Redis store;
            :mod:`graphcore.checkpoints.store_base`), or None.
        previous: LangGraph's functional-API return value; always None here.
    """

    context: ContextT = None  # type: ignore[assignment]
    stream_writer: StreamWriter = lambda chunk: None
    store: Any = None
    previous: Any = None


def coerce_context(schema: Any, context: Any, *, wrap: bool = True) -> Any:
    """``context`` as the run's context: a dict made into ``schema`` when that is a dataclass or pydantic
    model (as LangGraph's ``invoke`` does), anything else unchanged.

    Args:
        schema: the graph's ``context_schema``, or None.
        context: the run's context.
        wrap: raise a dict that does not fit as a ConfigError (enqueue, the workers); False raises the
            schema's own error, as LangGraph's ``invoke`` does (in process).

    Raises:
        ConfigError: the dict does not fit the schema (naming the schema and the error), when ``wrap``.
        TypeError: it does not fit a dataclass schema (its ``__init__``'s error), unless ``wrap``.
        pydantic.ValidationError: it does not fit a pydantic schema, unless ``wrap``.
    """
    if context is None or schema is None or not isinstance(context, dict):
        return context
    if not (dataclasses.is_dataclass(schema) or (isinstance(schema, type) and issubclass(schema, BaseModel))):
        return context
    make: Any = schema
    try:
        return make(**context)
    except Exception as exc:  # TypeError for a dataclass, ValidationError for a model
        if not wrap:
            raise
        name = getattr(schema, "__name__", repr(schema))
        raise ConfigError(f"run option context: does not fit the context schema {name}: {exc}") from None


def runtime_of(task: TaskContext) -> Runtime[Any]:
    """The :class:`Runtime` of a running task."""
    return Runtime(context=task.config.context, stream_writer=task.stream_writer, store=run_store())


def run_store() -> Any:
    """The long-term store of the graph running now (:attr:`~graphcore.engine.config.Scope.memory`), or
    None."""
    scope = current_scope()
    return None if scope is None else scope.memory


def get_store() -> Any:
    """The running graph's long-term store (LangGraph's ``get_store()``): the one given to
    ``compile(store=...)``, a parent graph's for a graph invoked inside a node, the workers' Redis store on
    the queue; None when the graph has none.

    Raises:
        OutsideRunError: called outside a running node.
    """
    current_task("get_store")
    return run_store()


def get_runtime() -> Runtime[Any]:
    """The running node's :class:`Runtime` (LangGraph's ``get_runtime()``).

    Raises:
        OutsideRunError: called outside a running node.
    """
    return runtime_of(current_task("get_runtime"))


def with_context(config: Any, context: Any) -> Any:
    """``config`` (a mapping, a :class:`RunConfig` or None) with the run option ``context`` set, when
    ``context`` is not None (``invoke(..., context=...)``).

    Raises:
        ConfigError: as :func:`~graphcore.engine.config.merge_config`.
    """
    if context is None:
        return config
    cfg: RunConfig = merge_config(config, {"context": context})
    return cfg
