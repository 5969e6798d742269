"""What a caller hands a run, checked before anything is stored: the input's types against the workflow's
state schema, and the size of inputs and answers (``GRAPHQ_MAX_INPUT_BYTES``).

Types (G1). A TypedDict state's nodes receive the stored values as they are, so each input key is validated
in pydantic's strict mode against its declared type: ``"120"`` is not an ``int``, ``1`` is not a ``bool``
(an ``int`` is a ``float``). The input is stored as given, with one exception: a value that JSON cannot
carry as its declared type — a datetime, date, time, UUID, Decimal, enum member, tuple or set, given in its
JSON form (e.g. an ISO string from ``graphq enqueue --input``) — is accepted when its JSON text validates,
strictly, and that key is stored as the validated value (the datetime, the enum member). Reducer channels
are type-checked only for ``operator.add``, whose writes have the channel's type; other reducers take what
they take.

Reducers (G2). Each reducer channel's write is then folded by its reducer onto the channel's empty value, as
a new thread's input is, on a copy: an input the reducer refuses (``add_messages``: a message dict without
``content``) is refused here rather than failing the run's first step. A custom reducer thus runs once more,
at enqueue; ``add_messages``' removals are left out of that fold (they name messages of the thread). A
channel without an empty value (``Annotated[T, r]`` of no builtin ``T``) takes its first write as it is.

A key whose type pydantic cannot check (e.g. a nested ``typing.TypedDict`` on Python 3.11) is not
checked. A root-channel state's input (``StateGraph(Annotated[list, operator.add])``, ``StateGraph(int)``)
is checked whole, by the same rules, as the one write it is. A pydantic-model state validates itself, with
its own config, as nodes will see it; errors about keys the input does not set are ignored (an input is a
partial update), and the input is stored as given.
"""

from __future__ import annotations

import copy
import json
import operator
import typing
from collections.abc import Mapping
from datetime import datetime, time, timezone
from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError
from pydantic.errors import PydanticSchemaGenerationError, PydanticUserError

from graphcore.checkpoints import serde
from graphcore.engine.channels import AnyChannel, LastValue, ReducerChannel
from graphcore.engine.schema import ROOT, StateSchema, fields_of
from graphcore.errors import InvalidUpdateError, PermanentError, SerializationError
from graphcore.messages import coerce_message, is_add_messages
from graphcore.settings import get_settings
from graphcore.types import START, Overwrite, unwrap_required

__all__ = [
    "MAX_NESTING",
    "TOO_DEEP",
    "InputTooLargeError",
    "InputTypeError",
    "check_answer",
    "check_nesting",
    "check_size",
    "check_types",
    "nesting_problem",
]

_BRIEF = 60
"""Characters of a refused value quoted in an error message."""

MAX_NESTING = 200
"""Levels of lists, dicts, tuples and sets one inside another that an input, a state update, an answer or a
run's options may have (pydantic's JSON parser, which validates inputs given in JSON form, reads as many).
Deeper values exhaust Python's recursion limit in the checks, in reducers and in nodes."""

_CONTAINERS = frozenset({list, tuple, dict, set, frozenset, Overwrite})
"""The types :func:`nesting_problem` looks into (exactly these: serde refuses their subclasses)."""
TOO_DEEP = f"nested more than {MAX_NESTING} levels deep (lists, dicts, tuples or sets one inside another)"
"""What is wrong with a value nested deeper than :data:`MAX_NESTING`."""


class InputTooLargeError(PermanentError):
    """An input or answer is larger than ``GRAPHQ_MAX_INPUT_BYTES`` (serialized); nothing was stored.

    Attributes:
        size: its serialized size, bytes.
        limit: the setting's value, bytes.
    """

    def __init__(self, what: str, size: int, limit: int) -> None:
        super().__init__(
            f"{what} is {size} bytes serialized, above the limit GRAPHQ_MAX_INPUT_BYTES={limit}; pass a "
            "reference (a path, a URL, an id) to large data instead"
        )
        self.size = size
        self.limit = limit


class InputTypeError(InvalidUpdateError):
    """An input value does not have the type the state schema declares; nothing was stored.

    Attributes:
        path: where the value sits, e.g. ``input.amount`` or ``input.items[2]``.
    """

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path


def check_size(what: str, size: int) -> None:
    """Refuse a serialized input or answer of ``size`` bytes when that is above ``GRAPHQ_MAX_INPUT_BYTES``.

    Args:
        what: what it is, for the message (``"input"``, ``"answer"``).
        size: its serialized size (:func:`graphcore.checkpoints.serde.dumps`), bytes.

    Raises:
        InputTooLargeError: naming the size and the setting.
    """
    limit = get_settings().max_input_bytes
    if size > limit:
        raise InputTooLargeError(what, size, limit)


def _inner(container: Any) -> list[Any]:
    """The containers directly inside ``container`` (a dict's keys and values, an Overwrite's value)."""
    if type(container) is dict:
        items = (*container, *container.values())
    else:
        items = (container.value,) if type(container) is Overwrite else container
    return [item for item in items if type(item) in _CONTAINERS]


def nesting_problem(value: Any, levels: int = MAX_NESTING) -> str | None:
    """What is wrong with how ``value`` nests, or None: lists, dicts, tuples and sets more than ``levels``
    deep (``[1]`` is one level), or a container inside itself. One pass over the containers, without
    recursion (a value too deep for Python's recursion limit is reported too); other objects (models,
    dataclasses) are not looked into.

    Args:
        levels: :data:`MAX_NESTING`, plus the levels of what ``value`` wraps the checked value in (a batch
            file's line: one); the message speaks of MAX_NESTING."""
    if type(value) not in _CONTAINERS:
        return None
    path = {id(value): None}  # ids of the containers from the top down to the one being looked into
    pending = [_inner(value)]  # for each of them, what is left to look into
    while pending:
        left = pending[-1]
        if not left:
            pending.pop()
            path.popitem()
            continue
        child = left.pop()
        if id(child) in path:
            return "cyclic reference: the value contains itself"
        if len(path) >= levels:
            return TOO_DEEP
        path[id(child)] = None
        pending.append(_inner(child))
    return None


def check_nesting(value: Any, path: str) -> None:
    """Refuse ``value`` when it nests too deeply or contains itself (:func:`nesting_problem`).

    Args:
        path: what it is, for the message (``input``, ``answer``, ``config``).

    Raises:
        SerializationError: ``<path>: nested more than 200 levels deep (...)``; nothing was stored.
    """
    problem = nesting_problem(value)
    if problem is not None:
        raise SerializationError(path, problem)


def check_answer(value: Any) -> None:
    """Refuse an answer that cannot be stored: nested too deeply (:func:`check_nesting`), outside the serde
    allow-list, or above the size limit.

    Raises:
        SerializationError: it nests too deeply, or a value inside it is not on the allow-list (the path
            starts ``answer``).
        InputTooLargeError: it is larger than ``GRAPHQ_MAX_INPUT_BYTES`` serialized.
    """
    check_nesting(value, "answer")
    check_size("answer", len(serde.dumps(value, path="answer")))


def check_types(schema: StateSchema, value: Any, path: str = "input", writer: str = START) -> Any:
    """Validate an input against ``schema``'s types (see the module docstring).

    Args:
        schema: the workflow's state schema.
        value: the input; anything but a non-empty mapping is left to
            :meth:`~graphcore.engine.schema.StateSchema.writes_of` (None, a model instance, a wrong shape),
            but for a root-channel state, whose input is checked whole against its type (the error path is
            ``path`` itself: ``input: Input should be a valid list (got {'a': 1})``). Keys are checked
            against the graph's input schema (by default its state schema).
        path: the root of error paths.
        writer: who writes ``value``: START for a run's input; a node for a state update written as that
            node (``update_state``'s ``as_node``), whose keys are checked against the state schema (the keys
            it declares; not those only a node's own input schema has) and whose unknown keys are refused
            as that node's.

    Returns:
        The value to store: ``value`` itself, or a copy whose JSON-form values were validated into their
        declared types (datetimes, enums, ...).

    Raises:
        SerializationError: the value nests too deeply or contains itself (:func:`check_nesting`).
        InputTypeError: a value does not match its key's type, or its channel's reducer refuses it on the
            channel's empty value; the message names its path
            (``input.messages: add_messages refused it: a message dict must have ...``).
    """
    check_nesting(value, path)
    stored = _typed(schema, value, path, writer)
    _check_reducers(schema, stored, path, writer)
    return stored


def _typed(schema: StateSchema, value: Any, path: str, writer: str) -> Any:
    """The type checks of :func:`check_types`; returns the value to store."""
    if schema.root:
        return _check_root(schema, value, path)
    if not isinstance(value, Mapping) or not value or isinstance(value, BaseModel):
        return value
    keys = schema.input_keys if writer == START else schema.state_keys
    checked = {k: v for k, v in value.items() if k in keys and _is_checked(schema.channels.get(k))}
    # the state schema unless the graph has an input schema of its own
    against = schema.input_schema if writer == START else schema.schema
    if isinstance(against, type) and issubclass(against, BaseModel):
        _check_model(against, checked, path)
        return value
    converted: dict[str, Any] = {}
    for key, item in checked.items():
        adapter = _adapter(against, key)
        if adapter is None:
            continue
        changed, result = _stored(adapter, item, f"{path}.{key}")
        if changed:
            converted[key] = result
    return {**value, **converted} if converted else value


def _check_reducers(schema: StateSchema, value: Any, path: str, writer: str) -> None:
    """Fold each reducer channel's write onto the channel's empty value (see the module docstring); a
    value of the wrong shape is left to ``writes_of``."""
    if not (schema.root or isinstance(value, Mapping | BaseModel) or fields_of(value) is not None):
        return
    for key, write in schema.writes_of(writer, value):
        channel = schema.channels.get(key)
        if isinstance(channel, ReducerChannel):
            _fold(channel, key, write, path if key == ROOT else f"{path}.{key}")


def _fold(channel: ReducerChannel, key: str, write: Any, where: str) -> None:
    """``channel``'s update with ``write`` from its empty value, on a copy (``add_messages`` sets ids on the
    messages it is given); any error of the reducer is the input's."""
    try:
        given = copy.deepcopy(write)
        if is_add_messages(channel.reducer) and not isinstance(given, Overwrite):
            items = given if isinstance(given, list) else [given]
            given = [m for m in map(coerce_message, items) if m.type != "remove"]
        channel.update(key, channel.initial(), [(START, given)])
    except Exception as exc:
        reducer = channel.reducer
        name = "add_messages" if is_add_messages(reducer) else getattr(reducer, "__name__", repr(reducer))
        raise InputTypeError(where, f"{name} refused it: {' '.join(str(exc).split())}") from None


def _check_root(schema: StateSchema, value: Any, path: str) -> Any:
    """A root-channel state's input is one write of its type (a reducer's only for ``operator.add``),
    checked as a TypedDict key's value is; None writes nothing."""
    if value is None or not _is_checked(schema.channels[ROOT]):
        return value
    adapter = _adapter(schema.schema, ROOT)
    return value if adapter is None else _stored(adapter, value, path)[1]


def _stored(adapter: TypeAdapter[Any], item: Any, where: str) -> tuple[bool, Any]:
    """:func:`_validate` of ``item``, an ``Overwrite``'s value looked into (and the result wrapped again)."""
    inner = item.value if isinstance(item, Overwrite) else item
    changed, result = _validate(adapter, inner, where)
    if not changed:
        return False, item
    return True, Overwrite(result) if isinstance(item, Overwrite) else result


def _is_checked(channel: AnyChannel | None) -> bool:
    """Plain channels and ``operator.add`` reducers have writes of the declared type."""
    return isinstance(channel, LastValue) or (
        isinstance(channel, ReducerChannel) and channel.reducer is operator.add
    )


def _validate(adapter: TypeAdapter[Any], value: Any, where: str) -> tuple[bool, Any]:
    """Strict validation of ``value``; else of its JSON text. Returns (converted, the value to store).

    When both refuse for different reasons, the JSON one is reported: it speaks of the value as written
    (``Input should be 'red' or 'green'`` rather than ``an instance of Color``).
    """
    try:
        adapter.validate_python(value, strict=True)
        return False, value
    except ValidationError as exc:
        error = exc.errors()[0]
    text = _json_text(value)
    if text is not None:
        try:
            return True, _plain_zones(adapter.validate_json(text, strict=True))
        except ValidationError as exc:
            from_json = exc.errors()[0]
            if from_json["type"] != error["type"]:
                error = from_json
    raise _type_error(error, where)


def _plain_zones(value: Any) -> Any:
    """``value`` with pydantic's own ``TzInfo`` zones replaced by ``datetime.timezone`` (the serde allow-list
    has the standard zones only), inside dicts, lists, tuples and sets."""
    if isinstance(value, datetime | time):
        offset = value.utcoffset()
        if offset is None or isinstance(value.tzinfo, timezone):
            return value
        return value.replace(tzinfo=timezone(offset))
    if isinstance(value, dict):
        return {k: _plain_zones(v) for k, v in value.items()}
    if type(value) in (list, tuple, set, frozenset):
        return type(value)(_plain_zones(v) for v in value)
    return value


def _json_text(value: Any) -> str | None:
    """``value`` as JSON text when it is made of JSON types only, else None."""
    try:
        return json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None


def _check_model(model: type[BaseModel], values: dict[str, Any], path: str) -> None:
    """A pydantic-model state validates the keys the input sets (missing keys are not its business)."""
    plain = {k: v.value if isinstance(v, Overwrite) else v for k, v in values.items()}
    try:
        model.model_validate(plain)
    except ValidationError as exc:
        for error in exc.errors():
            loc = error["loc"]
            if error["type"] != "missing" and loc and loc[0] in plain:
                raise _type_error(error, path) from None
    except Exception:  # a validator that cannot judge a partial state: the run will tell
        return


def _type_error(error: Any, root: str) -> InputTypeError:
    where = root + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error["loc"])
    given = repr(error.get("input"))
    brief = given if len(given) <= _BRIEF else given[:_BRIEF] + "…"
    return InputTypeError(where, f"{error['msg']} (got {brief})")


def _declared(annotation: Any) -> Any:
    """The type an input value must have: Required/NotRequired looked through, a reducer dropped."""
    annotation = unwrap_required(annotation)
    if typing.get_origin(annotation) is typing.Annotated:
        base, *meta = typing.get_args(annotation)
        rest = [m for m in meta if not callable(m)]
        annotation = typing.Annotated[(base, *rest)] if rest else base
    return annotation


_ADAPTERS: dict[tuple[type[Any], str], TypeAdapter[Any] | None] = {}
"""Validators built so far, by (schema, key): a schema's types do not change."""


def _adapter(schema: type[Any], key: str) -> TypeAdapter[Any] | None:
    """A validator for ``schema``'s ``key`` (:data:`ROOT`: a root-channel state's type itself), or None when
    pydantic cannot build one for its type."""
    if (schema, key) not in _ADAPTERS:
        declared = schema if key == ROOT else typing.get_type_hints(schema, include_extras=True)[key]
        _ADAPTERS[(schema, key)] = _build(_declared(declared))
    return _ADAPTERS[(schema, key)]


def _build(declared: Any) -> TypeAdapter[Any] | None:
    for config in (ConfigDict(arbitrary_types_allowed=True), None):
        try:
            return TypeAdapter(declared, config=config)
        except (PydanticSchemaGenerationError, PydanticUserError, TypeError, NameError):
            continue
    return None
