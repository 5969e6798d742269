"""Channels: how each state key takes the writes of one super-step (G2).

* :class:`LastValue` — at most one write per super-step; two writes raise :class:`InvalidUpdateError`
  naming the key and the writing nodes.
* :class:`ReducerChannel` — folds every write into the value with a binary operator
  (``Annotated[list, operator.add]``, ``Annotated[int, max]``, :func:`add_messages`, ...).
* :class:`Overwrite` bypasses a reducer for one write and wins its super-step: the channel's other writes of
  that step are not folded in (one Overwrite per channel and step). Its JSON forms, ``{"__overwrite__": v}``
  and ``{"type": "__overwrite__", "value": v}``, are one too in a reducer channel's write
  (:func:`overwrite_of`), as LangGraph's.

Channels are stateless descriptors: values live in checkpoints, so the same graph serves many threads.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from graphcore.errors import InvalidGraphError, InvalidUpdateError
from graphcore.messages import RemoveMessage, add_messages  # re-exported; their home is graphcore.messages
from graphcore.types import Overwrite

__all__ = [
    "MISSING",
    "Channel",
    "LastValue",
    "ReducerChannel",
    "RemoveMessage",
    "add_messages",
    "channel_for",
    "overwrite_of",
]

OVERWRITE = "__overwrite__"
"""The key (or ``type``) of an :class:`Overwrite`'s JSON form."""


def overwrite_of(value: Any) -> Any:
    """``value`` as a reducer channel's write: an :class:`Overwrite` for its JSON forms
    (``{"__overwrite__": v}`` or ``{"type": "__overwrite__", "value": v}``, as LangGraph reads them), else
    ``value`` itself."""
    if isinstance(value, dict):
        if len(value) == 1 and OVERWRITE in value:
            return Overwrite(value[OVERWRITE])
        if value.get("type") == OVERWRITE and "value" in value:
            return Overwrite(value["value"])
    return value


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""Sentinel for a channel that has no value yet."""


class Channel(Protocol):
    """Update rule of one state key."""

    def initial(self) -> Any:
        """The value before any write, or MISSING."""

    def update(self, key: str, current: Any, writes: Sequence[tuple[str, Any]]) -> Any:
        """Fold one super-step's ``(node, value)`` writes into ``current``; returns the new value.

        Raises:
            InvalidUpdateError: the writes conflict.
        """


@dataclass(frozen=True)
class LastValue:
    """Keeps the last value written; more than one write in a super-step is a conflict. It starts
    without a value (a pydantic field's default fills the model a node receives, not the channel)."""

    def initial(self) -> Any:
        return MISSING

    def update(self, key: str, current: Any, writes: Sequence[tuple[str, Any]]) -> Any:
        if len(writes) > 1:
            nodes = ", ".join(node for node, _ in writes)
            raise InvalidUpdateError(
                f"At key {key!r}: Can receive only one value per step ({len(writes)} writes in one "
                f"super-step, from {nodes}). Use an Annotated key to handle multiple values: "
                "Annotated[T, reducer]"
            )
        value = writes[0][1]
        return value.value if isinstance(value, Overwrite) else value


@dataclass(frozen=True)
class ReducerChannel:
    """Folds each write into the value with ``reducer(current, write)`` in write order.

    Attributes:
        reducer: any binary function, e.g. ``operator.add``.
        default: the starting value, e.g. ``[]`` for a list (built fresh per thread by ``factory``).
    """

    reducer: Callable[[Any, Any], Any]
    factory: Callable[[], Any] | None = None

    def initial(self) -> Any:
        return self.factory() if self.factory is not None else MISSING

    def update(self, key: str, current: Any, writes: Sequence[tuple[str, Any]]) -> Any:
        overwrites = [node for node, value in writes if isinstance(value, Overwrite)]
        if len(overwrites) > 1:
            raise InvalidUpdateError(
                f"channel {key!r} received {len(overwrites)} Overwrite writes in one super-step "
                f"(from {', '.join(overwrites)})"
            )
        if overwrites:  # the Overwrite wins its super-step: no other write is folded in (LangGraph's rule)
            return next(write.value for _, write in writes if isinstance(write, Overwrite))
        value = current
        for _, write in writes:
            value = write if value is MISSING else self.reducer(value, write)
        return value


def _factory_for(tp: Any) -> Callable[[], Any] | None:
    origin = typing.get_origin(tp) or tp
    if origin in (list, dict, set, tuple, int, float, str, frozenset):
        return typing.cast(Callable[[], Any], origin)
    return None


def _unwrap_required(annotation: Any) -> Any:
    """``Required[T]`` / ``NotRequired[T]`` (TypedDict key markers) → ``T``; anything else unchanged."""
    while typing.get_origin(annotation) in (typing.Required, typing.NotRequired):
        annotation = typing.get_args(annotation)[0]
    return annotation


def channel_for(annotation: Any, key: str = "") -> LastValue | ReducerChannel:
    """Build the channel for state key ``key`` from its type annotation.

    ``Annotated[T, reducer]`` (the last callable in the metadata) gives a :class:`ReducerChannel` starting
    from ``T()`` when ``T`` is a builtin container or number; anything else a :class:`LastValue`.
    ``Required[...]`` / ``NotRequired[...]`` around it are looked through.

    Raises:
        InvalidGraphError: (a ValueError) the reducer does not take two positional arguments (LangGraph's
            "Invalid reducer signature" text, naming the key).
    """
    annotation = _unwrap_required(annotation)
    if typing.get_origin(annotation) is typing.Annotated:
        base, *meta = typing.get_args(annotation)
        reducers = [m for m in meta if callable(m)]
        if reducers:
            _check_reducer(reducers[-1], key)
            return ReducerChannel(reducers[-1], _factory_for(base))
    return LastValue()


def _check_reducer(reducer: Callable[..., Any], key: str) -> None:
    """Refuse a reducer that does not take exactly two positional arguments (LangGraph's rule); one whose
    signature Python cannot read (some builtins) is taken as it is."""
    try:
        sig = inspect.signature(reducer)
    except (TypeError, ValueError):
        return
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if sum(p.kind in positional for p in sig.parameters.values()) != 2:
        raise InvalidGraphError(
            f"Invalid reducer signature. Expected (a, b) -> c. Got {sig} (state key {key!r})"
        )
