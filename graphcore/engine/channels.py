"""Channels: how each state key takes the writes of one super-step (G2).

* :class:`LastValue` — at most one write per super-step; two writes raise :class:`InvalidUpdateError`
  naming the key and the writing nodes.
* :class:`ReducerChannel` — folds every write into the value with a binary operator
  (``Annotated[list, operator.add]``, ``Annotated[int, max]``, :func:`add_messages`, ...).
* :class:`DeltaChannel` — LangGraph's batch reducer channel: ``reducer(value, [writes])`` once per step.
* :class:`UntrackedValue` — one value per super-step, never checkpointed (LangGraph's): a run sees it in
  the super-steps after the write, in this process; a run loaded from a checkpoint does not (a resume, and
  on the queue every step job).
* :class:`Overwrite` bypasses a reducer for one write and wins its super-step: the channel's other writes of
  that step are not folded in (one Overwrite per channel and step). Its JSON forms, ``{"__overwrite__": v}``
  and ``{"type": "__overwrite__", "value": v}``, are one too in a reducer channel's write
  (:func:`overwrite_of`), as LangGraph's.

Channels are stateless descriptors: values live in checkpoints, so the same graph serves many threads.
"""

from __future__ import annotations

import collections.abc
import inspect
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from graphcore.errors import InvalidGraphError, InvalidUpdateError
from graphcore.messages import RemoveMessage, add_messages  # re-exported; their home is graphcore.messages
from graphcore.types import Overwrite, unwrap_required

__all__ = [
    "MISSING",
    "AnyChannel",
    "Channel",
    "DeltaChannel",
    "LastValue",
    "ReducerChannel",
    "RemoveMessage",
    "UntrackedValue",
    "add_messages",
    "channel_for",
    "is_channel_meta",
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
        overwrite = _overwrite(key, writes)
        if overwrite is not None:  # the Overwrite wins its super-step: no other write is folded in
            return overwrite.value
        value = current
        for _, write in writes:
            value = write if value is MISSING else self.reducer(value, write)
        return value


_CONCRETE: dict[Any, type] = {
    collections.abc.Sequence: list,
    collections.abc.MutableSequence: list,
    collections.abc.Set: set,
    collections.abc.MutableSet: set,
    collections.abc.Mapping: dict,
    collections.abc.MutableMapping: dict,
}
"""Abstract collection types → the concrete type a reducer channel of one starts from, as LangGraph's."""


def _overwrite(key: str, writes: Sequence[tuple[str, Any]]) -> Overwrite | None:
    """The :class:`Overwrite` among a reducer channel's ``writes`` of one step, None without one (LangGraph's
    rule: it wins its step).

    Raises:
        InvalidUpdateError: more than one Overwrite.
    """
    overwrites = [(node, value) for node, value in writes if isinstance(value, Overwrite)]
    if len(overwrites) > 1:
        raise InvalidUpdateError(
            "Can receive only one Overwrite value per super-step: "  # LangGraph's words
            f"channel {key!r} received {len(overwrites)} (from {', '.join(node for node, _ in overwrites)})"
        )
    return overwrites[0][1] if overwrites else None


class DeltaChannel(ReducerChannel):
    """LangGraph's ``DeltaChannel``: ``Annotated[list, DeltaChannel(reducer)]`` folds one super-step's writes
    with a single ``reducer(value, [write, ...])`` call (from ``T()``, ``T`` the annotation's type or
    ``typ``), an :class:`Overwrite` winning its step as in any reducer channel.

    LangGraph stores such a channel's value as deltas, replayed through the reducer on load. graphq stores
    every reducer channel that way already: an append to a list writes only the new items, and an unchanged
    value is not written again (:mod:`graphcore.checkpoints.layout`). ``snapshot_frequency`` is accepted and
    unused.

    Raises:
        ValueError: ``snapshot_frequency`` is not a positive int (LangGraph's error).
    """

    snapshot_frequency: int

    def __init__(
        self, reducer: Callable[[Any, Sequence[Any]], Any], typ: Any = None, *, snapshot_frequency: int = 100
    ) -> None:
        if snapshot_frequency <= 0:
            raise ValueError(f"snapshot_frequency must be a positive int, got {snapshot_frequency}")
        super().__init__(reducer, _factory_for(typ) if typ is not None else None)
        object.__setattr__(self, "snapshot_frequency", snapshot_frequency)

    def typed(self, typ: Any) -> DeltaChannel:
        """This channel starting from ``typ()`` (the annotation's type) when it was given no ``typ``."""
        if self.factory is not None:
            return self
        return DeltaChannel(self.reducer, typ, snapshot_frequency=self.snapshot_frequency)

    def update(self, key: str, current: Any, writes: Sequence[tuple[str, Any]]) -> Any:
        overwrite = _overwrite(key, writes)
        if overwrite is not None:
            return overwrite.value
        start = current if current is not MISSING else self.initial()
        return self.reducer(None if start is MISSING else start, [write for _, write in writes])


@dataclass(frozen=True)
class UntrackedValue:
    """LangGraph's ``UntrackedValue``: ``Annotated[T, UntrackedValue]`` (or ``UntrackedValue(T,
    guard=False)``) keeps the last value written and is never checkpointed. A run sees it in its later
    super-steps while it runs in this process (``invoke``'s result and ``values`` events hold it);
    ``get_state``, a resumed run and a queued run's next step (each step job loads the run from its
    checkpoint) do not.

    Attributes:
        typ: the value's type (unused).
        guard: refuse more than one write in a super-step (LangGraph's default); False keeps the last.
    """

    typ: Any = None
    guard: bool = True

    def initial(self) -> Any:
        return MISSING

    def update(self, key: str, current: Any, writes: Sequence[tuple[str, Any]]) -> Any:
        if len(writes) > 1 and self.guard:
            raise InvalidUpdateError(
                f"At key '{key}': UntrackedValue(guard=True) can receive only one value per step. Use "
                "guard=False if you want to store any one of multiple values."
            )
        return writes[-1][1]


def _factory_for(tp: Any) -> Callable[[], Any] | None:
    """The starting value's factory of a reducer channel whose value type is ``tp``, as LangGraph's
    ``BinaryOperatorAggregate``: the type itself (its origin, for ``list[int]``), or the concrete type of
    an abstract collection (``Sequence`` → ``list``, ``Set`` → ``set``, ``Mapping`` → ``dict``) when it can
    be called without arguments; None (the channel starts empty) for any other type (``Iterable``, a union,
    a class that needs arguments)."""
    origin = typing.get_origin(tp) or tp
    origin = _CONCRETE.get(origin, origin)
    if not isinstance(origin, type):
        return None
    try:
        origin()
    except Exception:  # an abstract class, or one that needs arguments: no starting value, as LangGraph's
        return None
    return typing.cast(Callable[[], Any], origin)


AnyChannel = LastValue | ReducerChannel | UntrackedValue
"""A state key's channel (:class:`DeltaChannel` is a :class:`ReducerChannel`)."""


def is_channel_meta(meta: Any) -> bool:
    """Whether ``meta``, an item of ``Annotated[T, ...]``, says how the key takes writes: a reducer, a
    :class:`DeltaChannel`, or :class:`UntrackedValue` (the class or one)."""
    return callable(meta) or isinstance(meta, DeltaChannel | UntrackedValue)


def channel_for(annotation: Any, key: str = "") -> AnyChannel:
    """Build the channel for state key ``key`` from its type annotation.

    ``Annotated[T, reducer]`` (the last callable in the metadata) gives a :class:`ReducerChannel` starting
    from ``T()`` when ``T`` is a builtin container or number; ``Annotated[T, DeltaChannel(reducer)]`` a
    :class:`DeltaChannel`; ``Annotated[T, UntrackedValue]`` an :class:`UntrackedValue`; anything else a
    :class:`LastValue`. ``Required[...]`` / ``NotRequired[...]`` around it are looked through.

    Raises:
        InvalidGraphError: (a ValueError) the reducer does not take two positional arguments (LangGraph's
            "Invalid reducer signature" text, naming the key).
    """
    annotation = unwrap_required(annotation)
    if typing.get_origin(annotation) is typing.Annotated:
        base, *meta = typing.get_args(annotation)
        marks = [m for m in meta if is_channel_meta(m)]
        if marks:
            return _channel_of(base, marks[-1], key)
    return LastValue()


def _channel_of(base: Any, mark: Any, key: str) -> AnyChannel:
    """The channel ``Annotated[base, mark]`` declares for ``key`` (``mark``: :func:`is_channel_meta`)."""
    if mark is UntrackedValue:
        return UntrackedValue(base)
    if isinstance(mark, UntrackedValue):
        return mark
    if isinstance(mark, DeltaChannel):
        return mark.typed(base)
    _check_reducer(mark, key)
    return ReducerChannel(mark, _factory_for(base))


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
