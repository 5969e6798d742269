"""State schemas: a TypedDict or a pydantic model becomes one channel per key (G1, G2).

Reading a schema also allows the classes it names to be stored and loaded
(:func:`graphcore.checkpoints.serde.allow_types`): loading a process's workflows is what lets its workers
read their checkpoints (I5).
"""

from __future__ import annotations

import copy
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import typing_extensions
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from graphcore.checkpoints import serde
from graphcore.engine.channels import MISSING, LastValue, ReducerChannel, channel_for
from graphcore.errors import InvalidGraphError, InvalidUpdateError
from graphcore.types import START

__all__ = ["StateSchema"]


@dataclass(frozen=True)
class StateSchema:
    """The channels of a state schema and how nodes see the state.

    Attributes:
        schema: the TypedDict or pydantic model class.
        channels: key → channel, in declaration order.
    """

    schema: type[Any]
    channels: Mapping[str, LastValue | ReducerChannel]

    @classmethod
    def of(cls, schema: type[Any]) -> StateSchema:
        """Read the channels of ``schema`` and allow the classes it names to be stored (I5).

        Raises:
            InvalidGraphError: ``schema`` is neither a TypedDict nor a pydantic model.
        """
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            channels = _pydantic_channels(schema)
        elif typing_extensions.is_typeddict(schema):  # typing.TypedDict and typing_extensions.TypedDict
            hints = typing.get_type_hints(schema, include_extras=True)
            channels = {key: channel_for(tp) for key, tp in hints.items()}
        else:
            raise InvalidGraphError(f"state schema {schema!r} must be a TypedDict or a pydantic BaseModel")
        serde.allow_types(schema)
        return cls(schema, channels)

    @property
    def is_model(self) -> bool:
        """True when nodes receive a pydantic model instance rather than a dict."""
        return issubclass(self.schema, BaseModel)

    def is_reducer(self, key: str) -> bool:
        """Whether channel ``key`` folds its writes with a reducer (the checkpoint layout stores such lists
        as append-only logs)."""
        return isinstance(self.channels.get(key), ReducerChannel)

    def initial_values(self) -> dict[str, Any]:
        """Values of a new thread: each channel's default, fresh per call; keys without one are absent."""
        values = {key: ch.initial() for key, ch in self.channels.items()}
        return {key: copy.copy(v) for key, v in values.items() if v is not MISSING}

    def view(self, values: Mapping[str, Any]) -> Any:
        """The state as a node receives it: a dict copy, or a model instance for a pydantic schema."""
        if self.is_model:
            return self.schema.model_validate(dict(values))
        return dict(values)

    def writes_of(self, node: str, update: Any) -> list[tuple[str, Any]]:
        """Normalise a node's state update into ``(channel, value)`` writes.

        Args:
            node: the writer's name, for error messages.
            update: a mapping, a pydantic model of the schema (its explicitly set fields), or None.

        Raises:
            InvalidUpdateError: unknown keys or an update of the wrong shape.
        """
        who, wrote = ("the input", "has") if node == START else (f"node {node!r}", "wrote")
        if update is None:
            return []
        if isinstance(update, BaseModel):
            update = {k: getattr(update, k) for k in update.model_fields_set}
        if not isinstance(update, Mapping):
            kind = type(update).__name__
            raise InvalidUpdateError(
                f"the input is a {kind}; expected a dict of state updates"
                if node == START
                else f"node {node!r} returned {kind}; expected a dict of state updates, a Command or None"
            )
        unknown = [k for k in update if k not in self.channels]
        if unknown:
            raise InvalidUpdateError(
                f"{who} {wrote} unknown state key(s) {unknown}; known keys: {list(self.channels)}"
            )
        return list(update.items())


def _copier(default: Any) -> Callable[[], Any] | None:
    """A factory returning a fresh shallow copy of ``default`` (None when there is no default)."""
    if default is MISSING:
        return None
    return lambda: copy.copy(default)


def _pydantic_channels(model: type[BaseModel]) -> dict[str, LastValue | ReducerChannel]:
    channels: dict[str, LastValue | ReducerChannel] = {}
    for name, info in model.model_fields.items():
        default = MISSING if info.default is PydanticUndefined else info.default
        if info.default_factory is not None:
            default = info.default_factory()  # type: ignore[call-arg]
        reducers = [m for m in info.metadata if callable(m)]
        if reducers:
            channels[name] = ReducerChannel(reducers[-1], _copier(default))
        else:
            channels[name] = channel_for(info.annotation, default)
    return channels
