"""State schemas: a TypedDict, a pydantic model, a dataclass or a plain class with annotated fields
becomes one channel per key (G1, G2); any other type is a root-channel state (LangGraph's ``__root__``):
the state is the value itself.

A graph's channels are the union of the keys of its state schema, its input and output schemas and the
input schemas of its nodes (a key declared only by a node's schema is a private channel). Each node reads
the keys of its own input schema (:class:`Reader`); the graph's input is checked against the input schema
and its result is narrowed to the output schema, as LangGraph's ``StateGraph`` does.

Reading a schema also allows the classes it names to be stored and loaded
(:func:`graphcore.checkpoints.serde.allow_types`): loading a process's workflows is what lets its workers
read their checkpoints (I5).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import logging
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import typing_extensions
from pydantic import BaseModel, RootModel, TypeAdapter, create_model

from graphcore.checkpoints import serde
from graphcore.engine.channels import (
    MISSING,
    AnyChannel,
    LastValue,
    ReducerChannel,
    UntrackedValue,
    channel_for,
    overwrite_of,
)
from graphcore.errors import InvalidGraphError, InvalidUpdateError, warn_caller
from graphcore.managed import ManagedValue, managed_of
from graphcore.types import START

log = logging.getLogger(__name__)

__all__ = [
    "COMMAND_WRITER",
    "ROOT",
    "Reader",
    "StateSchema",
    "Strictness",
    "context_json_schema",
    "is_schema",
    "json_schema",
    "stored_values",
]

ROOT = "__root__"
"""The one channel of a root-channel state (``StateGraph(int)``, ``StateGraph(Annotated[list, add])``)."""

Channels = Mapping[str, AnyChannel]


def stored_values(values: Mapping[str, Any]) -> Any:
    """Channel values as shown where the graph's schema is not at hand (its code is not loaded): the value
    itself for a root-channel state (its one channel is :data:`ROOT`), else a dict copy of the channels.
    With the schema, :meth:`StateSchema.values_of` shows them."""
    return values[ROOT] if ROOT in values else dict(values)


def is_schema(tp: Any) -> bool:
    """Whether ``tp`` is a keyed schema a node's first parameter may be annotated with: a TypedDict
    (``typing`` or ``typing_extensions``), a pydantic model class or a dataclass."""
    return (
        (isinstance(tp, type) and issubclass(tp, BaseModel))
        or typing_extensions.is_typeddict(tp)
        or (isinstance(tp, type) and dataclasses.is_dataclass(tp))
    )


def fields_of(value: Any) -> dict[str, Any] | None:
    """A dataclass instance as a state update, as LangGraph reads one: every field (defaults too), not
    copied; None for any other value."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    return None


def json_schema(schema: type[Any], title: str) -> dict[str, Any]:
    """The JSON schema of a graph's input or output schema, as LangGraph's ``get_input_jsonschema`` gives it:
    a pydantic model's ``model_json_schema()``, a TypedDict's through pydantic's ``TypeAdapter``, a model
    titled ``title`` of a dataclass's or plain class's fields (reducers dropped), and for a root-channel
    state the value's type (reducer dropped) as a nullable root titled ``title``.

    Raises:
        pydantic.errors.PydanticUserError: a ``typing.TypedDict`` on Python < 3.12 (pydantic needs
            ``typing_extensions.TypedDict``), as in LangGraph.
    """
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema.model_json_schema()
    if typing_extensions.is_typeddict(schema):
        return TypeAdapter(schema).json_schema()
    if _has_fields(schema):  # a dataclass or a plain class: a model of its fields, titled ``title``
        hints = typing.get_type_hints(schema)
        fields: Any = {
            key: (hints[key], _field_default(schema, key, hints[key])) for key in _key_list(schema)
        }
        model: type[BaseModel] = create_model(title, **fields)
        return model.model_json_schema()
    value_type = typing.get_args(schema)[0] if typing.get_origin(schema) is typing.Annotated else schema
    root: Any = (value_type, None)
    return create_model(title, __base__=RootModel, root=root).model_json_schema()


def _field_default(schema: type[Any], key: str, tp: Any) -> Any:
    """A field's default in LangGraph's JSON schema: the dataclass's default (or its factory's value), else
    None for an optional type, else required (``...``)."""
    found = {f.name: f for f in dataclasses.fields(schema)} if dataclasses.is_dataclass(schema) else {}
    spec = found.get(key)
    if spec is not None and spec.default is not dataclasses.MISSING:
        return spec.default
    factory: Any = None if spec is None else spec.default_factory
    if factory is not None and factory is not dataclasses.MISSING:
        return factory()
    return None if type(None) in typing.get_args(tp) else ...


def context_json_schema(schema: type[Any] | None) -> dict[str, Any] | None:
    """The JSON schema of a context schema, as LangGraph's ``get_context_jsonschema``: None without one.

    Raises:
        ValueError: the schema is not a pydantic model, a TypedDict or a dataclass.
    """
    if schema is None:
        return None
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema.model_json_schema()
    if typing_extensions.is_typeddict(schema) or dataclasses.is_dataclass(schema):
        return TypeAdapter(schema).json_schema()
    raise ValueError(
        f"context_schema {schema!r}: its JSON schema needs a pydantic model, a TypedDict or a dataclass"
    )


@dataclass(frozen=True)
class Reader:
    """How a node sees the state: the keys of its input schema, as a dict or as a model instance.

    Attributes:
        keys: the keys it sees; None for every key the values hold.
        model: the pydantic model or dataclass it receives (made from its keys), or None for a dict.
        root: a root-channel state: the node receives the value itself.
    """

    keys: frozenset[str] | None = None
    model: type[Any] | None = None
    root: bool = False

    def view(self, values: Mapping[str, Any]) -> Any:
        """The state as the node receives it: a dict copy of its keys, a model instance, or the root value
        (None when it has none yet)."""
        if self.root:
            return values.get(ROOT)
        picked = dict(values) if self.keys is None else {k: v for k, v in values.items() if k in self.keys}
        if self.model is None:
            return picked
        if issubclass(self.model, BaseModel):
            return self.model.model_validate(picked)
        return self.model(**picked)  # a dataclass: its defaults fill the keys without a value


@dataclass(frozen=True)
class StateSchema:
    """The channels of a graph's schemas and how nodes, the input and the result see the state.

    Attributes:
        schema: the state schema: a TypedDict, pydantic model, dataclass or plain class with annotated
            fields, or the type of a root-channel state.
        channels: key → channel, in declaration order (the state schema's keys first; ``{ROOT: ...}`` for a
            root-channel state).
        input_schema: the schema the graph's input is checked against (the state schema by default).
        output_schema: the schema the result is narrowed to (the state schema by default).
        extra: the further schemas whose keys are channels (nodes' input schemas), in the order added.
        managed: key → managed value kind (``RemainingSteps``, ``IsLastStep``: :mod:`graphcore.managed`):
            keys nodes read but no channel holds.
    """

    schema: type[Any]
    channels: Channels
    input_schema: type[Any]
    output_schema: type[Any]
    extra: tuple[type[Any], ...] = ()
    managed: Mapping[str, type[ManagedValue]] = field(default_factory=dict)
    _readers: dict[Any, Reader] = field(default_factory=dict, init=False, compare=False, repr=False)

    @classmethod
    def of(
        cls,
        schema: type[Any],
        input_schema: type[Any] | None = None,
        output_schema: type[Any] | None = None,
        extra: Sequence[type[Any]] = (),
    ) -> StateSchema:
        """Read the channels of ``schema`` (and of the other schemas) and allow the classes they name to be
        stored (I5).

        Raises:
            InvalidGraphError: a root-channel state (a type without fields) is mixed with keyed schemas, or
                two schemas declare one key with different reducers.
        """
        inputs, outputs = input_schema or schema, output_schema or schema
        channels: dict[str, AnyChannel] = {}
        managed: dict[str, type[ManagedValue]] = {}
        for each in dict.fromkeys((schema, inputs, outputs, *extra)):
            annotations = _annotations(each)
            managed.update({k: m for k, a in annotations.items() if (m := managed_of(a)) is not None})
            _merge(channels, each, {k: channel_for(a, k) for k, a in annotations.items() if k not in managed})
            serde.allow_types(each)
        if (ROOT in channels) and len(channels) > 1:
            raise InvalidGraphError(
                f"state schema {schema!r}: a root-channel state (a type without fields) and keyed schemas "
                f"({inputs!r}, {outputs!r}) cannot be mixed"
            )
        return cls(schema, channels, inputs, outputs, tuple(extra), managed)

    def including(self, schema: type[Any]) -> StateSchema:
        """This schema with ``schema``'s keys as channels too (a node's input schema).

        Raises:
            InvalidGraphError: as :meth:`of`.
        """
        if schema in (self.schema, self.input_schema, self.output_schema, *self.extra):
            return self
        return StateSchema.of(self.schema, self.input_schema, self.output_schema, (*self.extra, schema))

    @property
    def root(self) -> bool:
        """True for a root-channel state: nodes receive and return the value itself."""
        return ROOT in self.channels

    @functools.cached_property
    def input_keys(self) -> frozenset[str]:
        """The keys the graph's input may set (not the managed ones)."""
        return _keys(self.input_schema) - set(self.managed)

    def with_managed(self, values: Mapping[str, Any], remaining: int) -> Mapping[str, Any]:
        """``values`` with each managed key's value in a super-step that leaves ``remaining`` super-steps
        to the run (this one included); ``values`` itself when the schema has no managed key."""
        if not self.managed:
            return values
        return {**values, **{key: kind.get(remaining) for key, kind in self.managed.items()}}

    @functools.cached_property
    def state_keys(self) -> frozenset[str]:
        """The keys the state schema itself declares (not those of the nodes' own input schemas)."""
        return _keys(self.schema)

    @functools.cached_property
    def _result_order(self) -> tuple[str, ...]:
        """The result's keys in LangGraph's order: the output schema's declaration order."""
        return tuple(k for k in _key_list(self.output_schema) if k in self.channels)

    def reader_of(self, schema: type[Any] | None = None) -> Reader:
        """How a node whose input schema is ``schema`` (None: the state schema) sees the state; built once
        per schema."""
        found = self._readers.get(schema)
        if found is None:
            found = self._readers[schema] = self._reader(self.schema if schema is None else schema)
        return found

    def _reader(self, schema: type[Any]) -> Reader:
        if self.root:
            return Reader(root=True)
        keys = _keys(schema)
        if isinstance(schema, type) and dataclasses.is_dataclass(schema):  # made from its own fields only
            return Reader(keys, schema)
        model = schema if isinstance(schema, type) and issubclass(schema, BaseModel) else None
        return Reader(None if keys >= set(self.channels) else keys, model)

    @functools.cached_property
    def untracked(self) -> frozenset[str]:
        """The keys of :class:`UntrackedValue` channels: never stored in a checkpoint."""
        return frozenset(key for key, ch in self.channels.items() if isinstance(ch, UntrackedValue))

    def is_reducer(self, key: str) -> bool:
        """Whether channel ``key`` folds its writes with a reducer (the checkpoint layout stores such lists
        as append-only logs)."""
        return isinstance(self.channels.get(key), ReducerChannel)

    def initial_values(self) -> dict[str, Any]:
        """Values of a new thread: each reducer channel's start (``T()`` of ``Annotated[T, reducer]``),
        fresh per call; other keys are absent. As LangGraph's, a pydantic field's default is not a channel
        value: it fills the model a node receives (:meth:`Reader.view`), not the state, the result or
        ``values`` events."""
        values = {key: ch.initial() for key, ch in self.channels.items()}
        return {key: copy.copy(v) for key, v in values.items() if v is not MISSING}

    def view(self, values: Mapping[str, Any]) -> Any:
        """The state as a node without its own input schema (and a router) receives it: a dict copy of the
        state schema's keys, a model instance for a pydantic schema, or the root value."""
        return self.reader_of(None).view(values)

    def result(self, values: Mapping[str, Any], extra: Mapping[str, Any] | None = None) -> Any:
        """A run's result (``invoke``'s, a queued run's) from its final channel values, as LangGraph's:
        the output schema's keys that have a value, in its declaration order (None when none has), or the
        root value. With ``extra`` (the open interrupts of a paused run), a dict: the output's keys (none
        for a root state) and ``extra``'s."""
        if self.root:
            out = values.get(ROOT)
        else:
            out = {k: values[k] for k in self._result_order if k in values} or None
        if extra:
            return {**(out if isinstance(out, dict) and not self.root else {}), **extra}
        return out

    def v2_coercion(self, schema: type[Any]) -> Callable[[Any], Any]:
        """How ``version="v2"`` shows state values of ``schema`` (the output or the state schema), as
        LangGraph's: a dict made into ``schema(**values)`` for a pydantic model or a dataclass; as it is for
        another schema or a root-channel state."""
        if self.root or not isinstance(schema, type):
            return _as_is
        if issubclass(schema, BaseModel) or dataclasses.is_dataclass(schema):
            return lambda values: schema(**values)
        return _as_is

    def values_of(self, values: Mapping[str, Any]) -> Any:
        """A ``values`` stream event (and a snapshot's values): every channel's value (a dict) in channel
        declaration order, as LangGraph's, or the root value."""
        return values.get(ROOT) if self.root else self.in_order(values)

    def in_order(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """A copy of ``values`` with its keys in channel declaration order (LangGraph reads channels in
        that order); keys that are no channel (of an older version of the graph) last."""
        ordered = {k: values[k] for k in self.channels if k in values}
        return ordered if len(ordered) == len(values) else {**ordered, **values}

    def update_of(self, writes: Sequence[tuple[str, Any]]) -> Any:
        """An ``updates`` stream event's payload for one task, as LangGraph's: its writes as a dict, or,
        when a key is written more than once (a node's list of Commands), a list of one-key dicts in write
        order; for a root-channel state the value written, or a list of the values when there are several."""
        if self.root:
            values = [value for _, value in writes]
            return values[0] if len(values) == 1 else values
        keys = [key for key, _ in writes]
        if len(set(keys)) < len(keys):
            return [{key: value} for key, value in writes]
        return dict(writes)

    def writes_of(self, node: str, update: Any, *, strict: Strictness = True) -> list[tuple[str, Any]]:
        """Normalise a node's state update (or the input, ``node == START``) into ``(channel, value)``
        writes.

        Args:
            node: the writer's name, for error messages.
            update: a mapping, a pydantic model (each field, defaults too, but one that is None while
                neither set nor None by default, as LangGraph's), a dataclass instance (each field), or None
                (no writes); for a root-channel
                state, the value itself (None: no write).
            strict: what becomes of unknown keys (:data:`Strictness`): True refuses them (the queue's
                enqueue and ``update_state``); ``"warn"`` drops them with a UserWarning (``update_state`` in
                process, as LangGraph drops them); False drops them as LangGraph does when a run applies
                them: input keys outside the input schema silently, a node's keys that are no channel with a
                warning on the logger ``graphcore.engine.schema``.

        Raises:
            InvalidUpdateError: unknown keys when ``strict`` (for the input: keys outside the input
                schema), or an update of the wrong shape.
        """
        if update is None:
            return []
        if self.root:
            return [(ROOT, update)]
        if isinstance(update, BaseModel):
            update = _model_update(update)
        fields = fields_of(update)
        update = update if fields is None else fields
        if not isinstance(update, Mapping):
            raise InvalidUpdateError(_shape_error(node, type(update).__name__))
        if node == START:
            outside = self._outside_input(update) if strict else None
            if outside:
                _unknown_keys(outside, strict)
            return self._overwrites({k: v for k, v in update.items() if k in self.input_keys})
        unknown = [k for k in update if k not in self.channels]
        if unknown:
            known = list(self.channels)
            who = "the input Command's update has" if node == COMMAND_WRITER else f"node {node!r} wrote"
            _unknown_keys(f"{who} unknown state key(s) {unknown}; known keys: {known}", strict)
            return self._overwrites({k: v for k, v in update.items() if k in self.channels})
        return self._overwrites(update)

    def _overwrites(self, update: Mapping[str, Any]) -> list[tuple[str, Any]]:
        """``update``'s writes, the JSON form of an ``Overwrite`` to a reducer channel made one."""
        return [(k, overwrite_of(v) if self.is_reducer(k) else v) for k, v in update.items()]

    def _outside_input(self, update: Mapping[str, Any]) -> str | None:
        """What is wrong with ``update``'s keys outside the input schema, None when it has none."""
        allowed = self.input_keys
        outside = [k for k in update if k not in allowed]
        if not outside:
            return None
        known = [k for k in self.channels if k in allowed]
        if self.input_schema is self.schema:
            return f"the input has unknown state key(s) {outside}; known keys: {known}"
        name = getattr(self.input_schema, "__name__", repr(self.input_schema))
        return f"the input has key(s) {outside} outside the graph's input schema {name}; its keys: {known}"


Strictness = bool | typing.Literal["warn"]
"""What :meth:`StateSchema.writes_of` does with unknown keys: True refuses them, ``"warn"`` drops them with
a UserWarning, False drops them (a node's with a log warning)."""


def _unknown_keys(message: str, strict: Strictness) -> None:
    """Unknown keys that ``message`` describes, by ``strict``: refused, warned of, or logged (all but refused
    are then dropped).

    Raises:
        InvalidUpdateError: ``strict`` is True.
    """
    if strict == "warn":
        warn_caller(f"update_state: {message}: ignored")
    elif strict:
        raise InvalidUpdateError(message)
    else:
        log.warning("%s: ignored", message)


def _as_is(value: Any) -> Any:
    return value


def _model_update(model: BaseModel) -> dict[str, Any]:
    """A model instance as a state update, as LangGraph reads it: every field in declaration order but one
    that is None while neither set explicitly nor None by default (its defaults are written too)."""
    fields, given = type(model).model_fields, model.model_fields_set
    return {
        k: v
        for k in fields
        if (v := getattr(model, k)) is not None or k in given or fields[k].default is not None
    }


def _keys(schema: type[Any]) -> frozenset[str]:
    """The keys of a keyed schema (``{ROOT}`` for a root-channel type)."""
    return frozenset(_key_list(schema))


def _key_list(schema: type[Any]) -> list[str]:
    """The keys of a keyed schema in declaration order (``[ROOT]`` for a root-channel type)."""
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return list(schema.model_fields)
    if isinstance(schema, type) and dataclasses.is_dataclass(schema):
        return [f.name for f in dataclasses.fields(schema)]
    if typing_extensions.is_typeddict(schema) or _has_fields(schema):
        return list(typing.get_type_hints(schema))
    return [ROOT]


def _has_fields(schema: Any) -> bool:
    """Whether ``schema`` is a plain class with annotated fields (read as LangGraph reads a TypedDict's)."""
    return isinstance(schema, type) and bool(getattr(schema, "__annotations__", None))


def _annotations(schema: type[Any]) -> dict[str, Any]:
    """Key → annotation of a schema's keys, in declaration order (with their ``Annotated`` metadata; a
    pydantic field's metadata put back around its type), or ``{ROOT: schema}`` for a root-channel type."""
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return {
            name: typing.Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
            for name, info in schema.model_fields.items()
        }
    if typing_extensions.is_typeddict(schema) or _has_fields(schema):  # also a dataclass, a plain class
        hints = typing.get_type_hints(schema, include_extras=True)
        return {key: hints[key] for key in _key_list(schema)}
    return {ROOT: schema}


def _merge(channels: dict[str, AnyChannel], schema: type[Any], new: Channels) -> None:
    """Add ``schema``'s channels; a key already declared keeps its channel (a plain redeclaration is
    fine, a different reducer is refused), as LangGraph's ``StateGraph`` does."""
    for key, channel in new.items():
        if key not in channels:
            channels[key] = channel
        elif channels[key] != channel and not isinstance(channel, LastValue):
            raise InvalidGraphError(
                f"schema {getattr(schema, '__name__', schema)!r} declares channel {key!r} with a different "
                "reducer than an earlier schema of the graph"
            )


COMMAND_WRITER = "__input__"
"""The writer of an input ``Command``'s update (LangGraph's ``INPUT``), in messages."""


def _shape_error(node: str, kind: str) -> str:
    """The message for an update of type ``kind`` (no mapping) written by ``node``."""
    if node == START:
        return f"the input is a {kind}; expected a dict of state updates"
    if node == COMMAND_WRITER:
        return f"the input Command's update is a {kind}; expected a dict of state updates"
    return f"node {node!r} returned {kind}; expected a dict of state updates, a Command or None"
