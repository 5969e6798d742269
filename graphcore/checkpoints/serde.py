"""msgpack serialization with an explicit allow-list of types (invariant I5: no pickle anywhere).

Checkpoints, channel values and pending writes are stored in Redis as bytes produced by :func:`dumps` and
read back by :func:`loads`. Every value comes back with its exact type and value (``==`` and
``type(x) is type(y)``).

Format (version 1)
------------------
The first byte is the format version (``0x01``, which is also the msgpack encoding of the integer 1),
followed by exactly one msgpack object. ``None``, ``bool``, ``int`` (64-bit), ``float``, ``str``, ``bytes``,
``list`` and ``dict`` are plain msgpack; dict keys may be any allow-listed hashable value and keep their type.
Every other allowed type is a msgpack extension whose payload is itself msgpack (unless noted):

====  ==============================  ==================================================================
code  type                            payload
====  ==============================  ==================================================================
1     ``tuple``                       array of items
2     ``set``                         array of items
3     ``frozenset``                   array of items
4     ``int`` beyond 64 bits          raw big-endian two's complement bytes (not msgpack)
5     ``datetime.datetime``           ``[year, month, day, hour, minute, second, microsecond, fold, tz]``
6     ``datetime.date``               ``[year, month, day]``
7     ``datetime.time``               ``[hour, minute, second, microsecond, fold, tz]``
8     ``datetime.timedelta``          ``[days, seconds, microseconds]``
9     ``decimal.Decimal``             raw ASCII of ``str(value)`` (not msgpack; keeps NaN, sign, exponent)
10    ``uuid.UUID``                   raw 16 bytes (not msgpack)
11    ``enum.Enum`` member            ``[module, qualname, name]``; for ``enum.Flag`` the int value
12    pydantic ``BaseModel``          ``[module, qualname, {field: value}, extra or nil, [fields_set]]``
13    dataclass instance              ``[module, qualname, {field: value}]``
14    chat message                    ``[type, {field: value}]`` (fields and extras, without ``type``)
====  ==============================  ==================================================================

A chat message (langchain-core's or graphq's lightweight classes, see :mod:`graphcore.messages`) is stored
by its ``type`` (``"human"``, ``"ai"``, ..., ``"AIMessageChunk"``), not by its class, and loads as the class
of that ``type`` in :data:`graphcore.messages.MESSAGE_CLASSES`: langchain-core's when the loading process
has it installed, graphq's otherwise. Messages written before code 14 (graphq's classes as code 12 named
``graphcore.messages:HumanMessage``, ...) load the same way. A subclass of a message class is not a chat
message here: it is a pydantic model (code 12) and must be allowed like any other.

``tz`` is ``nil`` (naive), a string (``zoneinfo.ZoneInfo`` key) or ``[offset_microseconds, name or nil]``
(``datetime.timezone``). Codes are stable: never renumber them; add new codes and bump the version only for
incompatible changes.

Classes (enums, models, dataclasses) are stored by ``__module__`` and ``__qualname__`` and must be defined at
module level (a class defined inside a function is rejected when dumping). Loading never imports anything: a
stored name is looked up in a map of *allowed classes*, keyed by ``(module, qualname)``, and anything not in
it fails with a :class:`SerializationError` naming the class and the setting, so a record written to Redis
by someone else cannot make a worker import a module. A class is allowed when

* a state schema names it: building a graph (:class:`~graphcore.engine.schema.StateSchema`) walks the schema's
  annotations, through ``list[...]``, ``dict[...]``, ``tuple[...]``, unions / ``Optional``, ``Annotated[...,
  reducer]``, ``Literal`` enum members, type aliases and ``NewType``, into the fields of nested pydantic
  models, dataclasses and TypedDicts (:func:`allow_types`). Loading a process's workflows therefore allows
  their classes;
* it is one of graphq's own stored values (:class:`~graphcore.types.Interrupt`,
  :class:`~graphcore.types.Overwrite`; chat messages need no allowing, see code 14);
* it is passed to :func:`allow_classes` (in-process code, tests), or
* it is named in the ``GRAPHQ_SERDE_ALLOWED_CLASSES`` setting (comma-separated ``module:QualName``). Those
  entries are the only names graphq imports: when the workflows are loaded (``Registry.load``) and, in a
  process that loads none, on the first lookup that misses the map. A bad entry fails with a
  :class:`~graphcore.errors.ConfigError` naming the setting.

A class that moved keeps its stored values loading: the name an earlier graphq wrote is an alias of the
class it became (``_MOVED``, consulted only when the name is not allowed): ``graphcore.engine.channels:
RemoveMessage`` (a dataclass ``{id}``, in pending writes and Send payloads graphq wrote before) loads as
:class:`graphcore.messages.RemoveMessage` (a pydantic model). Moving or renaming a stored class adds an
entry there; entries are never removed.

Allowing a class also allows the classes its fields name; a subclass of an allowed class is not allowed by
it. Dumping refuses a class that is not allowed (a value that could not be read back would be lost): the
error names the value's state path and the setting. The map only grows; a class registered again under the
same name (a reloaded module) replaces the old one. Loading checks the class kind (Enum / BaseModel /
dataclass) by which table it sits in, so the fast path is one dict lookup; nothing else is ever instantiated.
Subclasses of built-in types (``class MyStr(str)``) are rejected instead of decaying to the base type.
Pydantic private attributes are not stored (they get their defaults back on load).

Known gaps, kept so the common case stays in msgpack's C code with no Python pre-walk: msgpack packs
``bytearray`` and ``memoryview`` itself (``default`` never sees them), so they load back as ``bytes``; raw
``msgpack.ExtType`` / ``msgpack.Timestamp`` values inside the state are passed through as is.
"""

from __future__ import annotations

import dataclasses
import importlib
import typing
import uuid
from collections.abc import Callable, Iterable, Mapping
from datetime import date, datetime, time, timedelta, timezone, tzinfo
from decimal import Decimal
from enum import Enum, Flag
from typing import Any
from zoneinfo import ZoneInfo

import msgpack
import typing_extensions
from pydantic import BaseModel

from graphcore import messages
from graphcore.errors import ConfigError, SerializationError
from graphcore.settings import class_entries, get_settings
from graphcore.types import Command, Interrupt, Overwrite, Send, TimeoutPolicy

__all__ = [
    "ALLOWED_CLASSES_SETTING",
    "FORMAT_VERSION",
    "allow_classes",
    "allow_configured_classes",
    "allow_types",
    "dumps",
    "loads",
]

FORMAT_VERSION = 1
"""Version of the stored format; the first byte of every payload."""

EXT_TUPLE = 1
EXT_SET = 2
EXT_FROZENSET = 3
EXT_BIGINT = 4
EXT_DATETIME = 5
EXT_DATE = 6
EXT_TIME = 7
EXT_TIMEDELTA = 8
EXT_DECIMAL = 9
EXT_UUID = 10
EXT_ENUM = 11
EXT_MODEL = 12
EXT_DATACLASS = 13
EXT_MESSAGE = 14

_STORED = "<stored>"
_NESTED_BUF = 256
_TOP_BUF = 4096
_ONE_US = timedelta(microseconds=1)
_MISSING = object()
_LITE_MESSAGES = "graphcore.lite_messages"  # graphq's lightweight messages, stored as messages of their type
_NATIVE = frozenset({type(None), bool, int, float, str, bytes})
_ALLOWED = (
    "allowed types: None, bool, int, float, str, bytes, list, dict, tuple, set, frozenset, datetime, date, "
    "time, timedelta, Decimal, UUID, Enum members, pydantic BaseModel and dataclass instances of "
    "module-level classes"
)
# Checked in order, so datetime comes before its base class date.
_BUILTIN_BASES: tuple[type, ...] = (
    bool, int, float, str, bytes, list, dict, tuple, set, frozenset,
    datetime, date, time, timedelta, Decimal, uuid.UUID,
)  # fmt: skip

ALLOWED_CLASSES_SETTING = "GRAPHQ_SERDE_ALLOWED_CLASSES"
"""The setting naming extra classes that may be stored (comma-separated ``module:QualName``)."""

_Encoder = Callable[[Any], msgpack.ExtType]
_ClassTable = dict[tuple[str, str], type]
_CLASS_REFS: dict[type, tuple[str, str]] = {}  # dumps: classes checked allowed
# The allowed classes, one table per kind, keyed by (module, qualname). Loads look classes up here only.
_ENUMS: _ClassTable = {}
_MODELS: _ClassTable = {}
_DATACLASSES: _ClassTable = {}
_KINDS: dict[int, tuple[str, _ClassTable]] = {
    EXT_ENUM: ("an Enum class", _ENUMS),
    EXT_MODEL: ("a pydantic BaseModel class", _MODELS),
    EXT_DATACLASS: ("a dataclass", _DATACLASSES),
}
_MOVED: dict[tuple[str, str], Callable[[dict[str, Any]], Any]] = {
    ("graphcore.engine.channels", "RemoveMessage"): lambda fields: messages.RemoveMessage(**fields),
}
"""Dataclass names an earlier graphq stored that are gone → the value their stored fields load as now."""
_applied_setting: list[str] = [""]  # the GRAPHQ_SERDE_ALLOWED_CLASSES value whose classes were allowed
_HOW_TO_ALLOW = (
    "allowed are the classes named by the state schemas of the workflows this process loaded (entry "
    "points, GRAPHQ_WORKFLOWS), graphq's own, those passed to graphcore.checkpoints.serde.allow_classes() "
    f"and those listed in {ALLOWED_CLASSES_SETTING} (comma-separated module:QualName)"
)


class _Unsupported(Exception):
    """Internal: a value cannot be encoded. :func:`dumps` turns it into a SerializationError with a path."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# ------------------------------------------------------------------------------------------ allowed classes


def _table_of(cls: type) -> _ClassTable | None:
    """The allowed-class table for ``cls``'s kind (same order as the encoder's choice), or None."""
    if issubclass(cls, Enum):
        return _ENUMS
    if issubclass(cls, BaseModel):
        return _MODELS
    if dataclasses.is_dataclass(cls):
        return _DATACLASSES
    return None


def _is_dotted_name(name: str) -> bool:
    return all(part.isidentifier() for part in name.split("."))


def _storable_name(cls: type) -> bool:
    """True when ``cls`` has a name a stored value can refer to (module level, identifiers only)."""
    return _is_dotted_name(cls.__module__) and _is_dotted_name(cls.__qualname__)


def _field_types(cls: type) -> list[Any]:
    """The annotations of the fields of a model, dataclass or TypedDict (unresolvable ones are skipped)."""
    if issubclass(cls, BaseModel):
        return [info.annotation for info in cls.model_fields.values()]
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except Exception:  # a forward reference that does not resolve: use what is already a type
        hints = {}
    if dataclasses.is_dataclass(cls):
        return [hints.get(f.name, f.type) for f in dataclasses.fields(cls)]
    return list(hints.values())


def _inner_annotations(tp: Any) -> list[Any] | None:
    """The annotations nested in ``tp`` when it is not a plain class (``list[X]``, ``X | None``, ...)."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return [tp.__origin__]  # the metadata (a reducer, ...) names no stored class
    if origin is typing.Literal:
        return [type(value) for value in typing.get_args(tp) if isinstance(value, Enum)]
    if origin is not None:  # list[X], dict[K, V], tuple[X, ...], X | Y, Optional[X], a user generic Box[X]
        return [origin, *typing.get_args(tp)]
    if type(tp).__name__ == "TypeAliasType":  # `type Alias = ...`
        return [tp.__value__]
    if isinstance(tp, typing.NewType):
        return [tp.__supertype__]
    if isinstance(tp, typing.TypeVar):
        return [tp.__bound__, *tp.__constraints__]
    return None


def _walk(tp: Any, found: list[type], seen: set[type]) -> None:
    """Collect the enum, model and dataclass classes that annotation ``tp`` names, nested ones included."""
    inner = _inner_annotations(tp)
    if inner is not None:
        for arg in inner:
            _walk(arg, found, seen)
        return
    if not isinstance(tp, type) or tp in seen:
        return  # a forward reference, Any, None, ... or a class already walked (recursive models)
    seen.add(tp)
    if _table_of(tp) is not None:
        found.append(tp)
    elif not typing_extensions.is_typeddict(tp):  # typing.TypedDict or typing_extensions.TypedDict
        return
    if not issubclass(tp, Enum):
        for field_type in _field_types(tp):
            _walk(field_type, found, seen)


def _register(classes: Iterable[type]) -> None:
    for cls in classes:
        table = _table_of(cls)
        if table is not None and _storable_name(cls):
            table[(cls.__module__, cls.__qualname__)] = cls


def allow_types(*annotations: Any) -> list[type]:
    """Allow every enum, pydantic model and dataclass that these type annotations name, nested ones included.

    Building a graph calls this with its state schema. Classes defined inside a function are skipped (they
    can never be stored); anything that names no class (``int``, ``Any``, a forward reference) adds nothing.

    Args:
        annotations: types or annotations: a TypedDict or model class, ``list[Item]``,
            ``Annotated[list[Msg], add_messages]``, ``dict[str, Order] | None``, ...

    Returns:
        The classes found, in the order they were found.
    """
    found: list[type] = []
    seen: set[type] = set()
    for annotation in annotations:
        _walk(annotation, found, seen)
    _register(found)
    return found


def allow_classes(*classes: type) -> None:
    """Allow these classes to be stored and loaded back, with the classes their fields name.

    For values outside any state schema (a Send's payload, an interrupt's value, an answer held in ``Any``).
    A process that loads the values must allow the classes too: a worker by importing code that calls
    this, or through the ``GRAPHQ_SERDE_ALLOWED_CLASSES`` setting.

    Raises:
        TypeError: a class is not an Enum, a pydantic BaseModel or a dataclass, or is defined inside a
            function.
    """
    for cls in classes:
        if not isinstance(cls, type) or _table_of(cls) is None:
            raise TypeError(
                f"allow_classes() takes Enum, pydantic BaseModel or dataclass classes; got {cls!r}"
            )
        if not _storable_name(cls):
            raise TypeError(
                f"class {cls.__module__}.{cls.__qualname__} is not defined at module level; "
                "it can never be stored"
            )
    allow_types(*classes)


def _import_entry(module_name: str, qualname: str) -> type:
    """Import one ``module:QualName`` entry of the setting (the operator named it)."""
    where = f"{ALLOWED_CLASSES_SETTING}: entry '{module_name}:{qualname}'"
    try:
        target: object = importlib.import_module(module_name)
    except Exception as exc:
        raise ConfigError(
            f"{where}: cannot import module {module_name!r}: {type(exc).__name__}: {exc}"
        ) from exc
    for part in qualname.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ConfigError(f"{where}: module {module_name!r} has no {qualname!r}") from None
    if not isinstance(target, type) or _table_of(target) is None:
        raise ConfigError(f"{where} is not an Enum, a pydantic BaseModel or a dataclass class")
    if (target.__module__, target.__qualname__) != (module_name, qualname):
        raise ConfigError(
            f"{where} is class {target.__module__}:{target.__qualname__}; "
            "name it by its own module and qualname"
        )
    return target


def allow_configured_classes(entries: str | None = None) -> list[type]:
    """Import and allow the classes named by ``GRAPHQ_SERDE_ALLOWED_CLASSES`` (or by ``entries``).

    These are the only names graphq ever imports for the serde. Called when workflows are loaded
    (``Registry.load``), so a bad entry fails a worker at startup; otherwise on the first class lookup
    that misses the allowed map. Entries already applied are not imported again.

    Args:
        entries: comma-separated ``module:QualName``; None reads the setting.

    Returns:
        The classes named.

    Raises:
        ConfigError: an entry is malformed, cannot be imported or is not an Enum / BaseModel / dataclass;
            the message names the setting and the entry.
    """
    value = get_settings().serde_allowed_classes if entries is None else entries
    try:
        names = class_entries(value)
    except ValueError as exc:
        raise ConfigError(f"{ALLOWED_CLASSES_SETTING}: {exc}") from None
    classes = [_import_entry(module, qualname) for module, qualname in names]
    allow_classes(*classes)
    if entries is None:
        _applied_setting[0] = value
    return classes


def _apply_setting() -> bool:
    """On a miss: allow the setting's classes if its value changed since last applied; True if it did."""
    value = get_settings().serde_allowed_classes
    if value == _applied_setting[0]:
        return False
    allow_configured_classes(value)
    _applied_setting[0] = value
    return True


# --------------------------------------------------------------------------------------------------- dumping


def _pack(obj: Any) -> bytes:
    out: bytes = msgpack.Packer(default=_default, strict_types=True, buf_size=_NESTED_BUF).pack(obj)
    return out


def _enc_tuple(obj: tuple[Any, ...]) -> msgpack.ExtType:
    return msgpack.ExtType(EXT_TUPLE, _pack(list(obj)))


def _enc_set(obj: set[Any]) -> msgpack.ExtType:
    return msgpack.ExtType(EXT_SET, _pack(list(obj)))


def _enc_frozenset(obj: frozenset[Any]) -> msgpack.ExtType:
    return msgpack.ExtType(EXT_FROZENSET, _pack(list(obj)))


def _enc_bigint(obj: int) -> msgpack.ExtType:
    return msgpack.ExtType(EXT_BIGINT, obj.to_bytes(obj.bit_length() // 8 + 1, "big", signed=True))


def _enc_tz(tz: tzinfo | None) -> str | list[Any] | None:
    if tz is None:
        return None
    if type(tz) is ZoneInfo:
        if tz.key is None:
            raise _Unsupported("a ZoneInfo built from a file (no key) cannot be stored; use ZoneInfo(key)")
        return tz.key
    if type(tz) is timezone:
        offset = tz.utcoffset(None)
        name = tz.tzname(None)
        return [offset // _ONE_US, None if name == timezone(offset).tzname(None) else name]
    raise _Unsupported(
        f"tzinfo of type {_type_name(type(tz))} is not allowed; use zoneinfo.ZoneInfo or datetime.timezone"
    )


def _enc_datetime(obj: datetime) -> msgpack.ExtType:
    fields: list[Any] = [obj.year, obj.month, obj.day, obj.hour, obj.minute, obj.second, obj.microsecond]
    fields += [obj.fold, _enc_tz(obj.tzinfo)]
    return msgpack.ExtType(EXT_DATETIME, _pack(fields))


def _enc_date(obj: date) -> msgpack.ExtType:
    return msgpack.ExtType(EXT_DATE, _pack([obj.year, obj.month, obj.day]))


def _enc_time(obj: time) -> msgpack.ExtType:
    fields = [obj.hour, obj.minute, obj.second, obj.microsecond, obj.fold, _enc_tz(obj.tzinfo)]
    return msgpack.ExtType(EXT_TIME, _pack(fields))


def _enc_timedelta(obj: timedelta) -> msgpack.ExtType:
    return msgpack.ExtType(EXT_TIMEDELTA, _pack([obj.days, obj.seconds, obj.microseconds]))


def _enc_decimal(obj: Decimal) -> msgpack.ExtType:
    return msgpack.ExtType(EXT_DECIMAL, str(obj).encode("ascii"))


def _enc_uuid(obj: uuid.UUID) -> msgpack.ExtType:
    return msgpack.ExtType(EXT_UUID, obj.bytes)


def _enc_enum(obj: Enum) -> msgpack.ExtType:
    module, qualname = _class_ref(type(obj))
    key = obj.value if isinstance(obj, Flag) else obj.name
    return msgpack.ExtType(EXT_ENUM, _pack([module, qualname, key]))


def _model_fields(obj: BaseModel) -> dict[str, Any]:
    return obj.__dict__


def _enc_model(obj: BaseModel) -> msgpack.ExtType:
    module, qualname = _class_ref(type(obj))
    fields_set = sorted(obj.__pydantic_fields_set__)
    payload = [module, qualname, _model_fields(obj), obj.__pydantic_extra__, fields_set]
    return msgpack.ExtType(EXT_MODEL, _pack(payload))


def _message_fields(obj: BaseModel) -> dict[str, Any]:
    """A chat message's fields and extras, ``type`` included."""
    extra = obj.__pydantic_extra__
    return {**obj.__dict__, **extra} if extra else dict(obj.__dict__)


def _enc_message(obj: BaseModel) -> msgpack.ExtType:
    fields = _message_fields(obj)
    kind = fields.pop("type")
    return msgpack.ExtType(EXT_MESSAGE, _pack([kind, fields]))


def _dataclass_fields(obj: Any) -> dict[str, Any]:
    values = {}
    for field in dataclasses.fields(obj):
        value = getattr(obj, field.name, _MISSING)
        if value is not _MISSING:  # an init=False field that was never set stays unset
            values[field.name] = value
    return values


def _enc_dataclass(obj: Any) -> msgpack.ExtType:
    module, qualname = _class_ref(type(obj))
    return msgpack.ExtType(EXT_DATACLASS, _pack([module, qualname, _dataclass_fields(obj)]))


# Keyed by exact type. Enum, model and dataclass classes are added on first use, once found importable.
_ENCODERS: dict[type, _Encoder] = {
    tuple: _enc_tuple,
    set: _enc_set,
    frozenset: _enc_frozenset,
    int: _enc_bigint,  # msgpack calls `default` for ints that overflow 64 bits
    datetime: _enc_datetime,
    date: _enc_date,
    time: _enc_time,
    timedelta: _enc_timedelta,
    Decimal: _enc_decimal,
    uuid.UUID: _enc_uuid,
    # the chat messages of this process (graphcore.messages); graphq's lightweight ones: _class_encoder
    **dict.fromkeys(messages.MESSAGE_CLASSES.values(), _enc_message),
}


def _type_name(cls: type) -> str:
    if cls.__module__ == "builtins":
        return repr(cls.__qualname__)
    return repr(f"{cls.__module__}.{cls.__qualname__}")


def _unsupported_message(cls: type) -> str:
    base = next((b for b in _BUILTIN_BASES if issubclass(cls, b)), None)
    if base is not None:
        return (
            f"type {_type_name(cls)} is a subclass of {base.__qualname__} and would load back as a plain "
            f"{base.__qualname__}; {_ALLOWED}"
        )
    return f"type {_type_name(cls)} is not serializable; {_ALLOWED}"


def _class_encoder(cls: type) -> _Encoder | None:
    if cls.__module__ == _LITE_MESSAGES and issubclass(cls, BaseModel):  # without importing them
        return _enc_message
    if issubclass(cls, Enum):
        return _enc_enum
    if issubclass(cls, BaseModel):
        return _enc_model
    if dataclasses.is_dataclass(cls):
        return _enc_dataclass
    return None


def _class_ref(cls: type) -> tuple[str, str]:
    """Return ``(module, qualname)`` of a class, checking (once per class) that loads will accept it."""
    ref = _CLASS_REFS.get(cls)
    if ref is None:
        ref = _CLASS_REFS[cls] = _check_class_ref(cls)
    return ref


def _check_class_ref(cls: type) -> tuple[str, str]:
    module, qualname = cls.__module__, cls.__qualname__
    if "<locals>" in qualname:
        raise _Unsupported(
            f"class {module}.{qualname} is defined inside a function and could never be loaded back; "
            "define it at module level"
        )
    table = _table_of(cls)
    allowed = _lookup(table, module, qualname) if table is not None else None
    if allowed is None and table is not None and _apply_setting():
        allowed = _lookup(table, module, qualname)
    if allowed is not None and allowed is not cls:
        raise _Unsupported(
            f"class {module}:{qualname} could not be loaded back (another class is allowed under that name); "
            f"{_HOW_TO_ALLOW}"
        )
    if allowed is None:
        raise _Unsupported(_how_to_allow(module, qualname))
    return module, qualname


def _how_to_allow(module: str, qualname: str) -> str:
    """The refusal of a class that is not allowed, saying the three ways to allow exactly this one."""
    return (
        f"class {module}:{qualname} could not be loaded back (it is not allowed: graphq loads only allowed "
        f"classes, never pickle); allow it by naming it in the state schema (a key annotated {qualname}), "
        f"by calling graphcore.checkpoints.serde.allow_classes({qualname}) in the module that defines it, "
        f"or with the setting {ALLOWED_CLASSES_SETTING}={module}:{qualname}"
    )


def _classify(obj: Any) -> _Encoder:
    cls = type(obj)
    encoder = _ENCODERS.get(cls)
    if encoder is not None:
        return encoder
    encoder = _class_encoder(cls)
    if encoder is None:
        raise _Unsupported(_unsupported_message(cls))
    if encoder is not _enc_message:
        _class_ref(cls)
    _ENCODERS[cls] = encoder
    return encoder


def _default(obj: Any) -> msgpack.ExtType:
    """msgpack ``default=`` hook: called only for values msgpack does not pack natively."""
    return _classify(obj)(obj)


# ---------------------------------------------------------------- dumping, slow path: locate the bad value


def _dict_children(obj: dict[Any, Any], path: str) -> list[tuple[str, Any]]:
    children: list[tuple[str, Any]] = []
    for key, value in obj.items():
        if type(key) is str:
            children.append((f"{path}.{key}", value))
        else:
            key_path = f"{path}[{key!r}]"
            children.append((key_path, key))
            children.append((key_path, value))
    return children


def _children(obj: Any, path: str) -> list[tuple[str, Any]]:
    """Values held by ``obj`` with their paths; raises _Unsupported if ``obj`` itself cannot be stored."""
    cls = type(obj)
    if cls is list or cls is tuple or cls is set or cls is frozenset:
        return [(f"{path}[{i}]", item) for i, item in enumerate(obj)]
    if cls is dict:
        return _dict_children(obj, path)
    encoder = _classify(obj)
    if encoder is _enc_model:
        fields = {**_model_fields(obj), **(obj.__pydantic_extra__ or {})}
        return [(f"{path}.{name}", value) for name, value in fields.items()]
    if encoder is _enc_dataclass:
        return [(f"{path}.{name}", value) for name, value in _dataclass_fields(obj).items()]
    if encoder is _enc_message:
        return [(f"{path}.{name}", value) for name, value in _message_fields(obj).items()]
    encoder(obj)  # a leaf: encoding it checks it (e.g. its tzinfo)
    return []


def _check_native(obj: Any, path: str) -> SerializationError | None:
    if type(obj) is str:
        try:
            obj.encode("utf-8")
        except UnicodeEncodeError as exc:
            return SerializationError(path, f"str is not valid UTF-8: {exc.reason}")
    return None


def _locate(obj: Any, path: str, ancestors: set[int]) -> SerializationError | None:
    """Walk ``obj`` like the encoder does and return an error for the first value that cannot be stored."""
    if type(obj) in _NATIVE:
        return _check_native(obj, path)
    if id(obj) in ancestors:
        return SerializationError(path, "cyclic reference: the value contains itself")
    try:
        children = _children(obj, path)
    except _Unsupported as exc:
        return SerializationError(path, exc.message)
    ancestors.add(id(obj))
    for child_path, child in children:
        error = _locate(child, child_path, ancestors)
        if error is not None:
            return error
    ancestors.discard(id(obj))
    return None


def _dumps_error(obj: Any, path: str, exc: Exception) -> SerializationError:
    try:
        error = _locate(obj, path, set())
    except RecursionError:
        error = None
    if error is None:
        error = SerializationError(path, f"cannot serialize: {type(exc).__name__}: {exc}")
    return error


def dumps(obj: Any, *, path: str = "state") -> bytes:
    """Serialize a value made only of allow-listed types.

    Args:
        obj: The value to store; see the module docstring for the allowed types.
        path: Name of the value, used as the root of the path in error messages (e.g. ``"state"``).

    Returns:
        The format version byte followed by the msgpack encoding of ``obj``.

    Raises:
        SerializationError: Some value inside ``obj`` is not allow-listed (a plain object, a function, a
            subclass of a built-in type, a class defined inside a function or not allowed to load, an
            unsupported tzinfo, ...). ``.path`` says where it sits, e.g. ``state.items[1].when``.
        ConfigError: ``GRAPHQ_SERDE_ALLOWED_CLASSES`` (read on the first class not yet allowed) has a bad
            entry.
    """
    packer = msgpack.Packer(default=_default, strict_types=True, autoreset=False, buf_size=_TOP_BUF)
    try:
        packer.pack(FORMAT_VERSION)
        packer.pack(obj)
    except (_Unsupported, TypeError, ValueError, OverflowError, RecursionError) as exc:
        raise _dumps_error(obj, path, exc) from (None if isinstance(exc, _Unsupported) else exc)
    out: bytes = packer.bytes()
    return out


# --------------------------------------------------------------------------------------------------- loading


def _unpack(data: bytes | memoryview) -> Any:
    return msgpack.unpackb(data, ext_hook=_ext_hook, raw=False, strict_map_key=False, use_list=True)


def _lookup(table: Mapping[tuple[str, str], Any], module: object, qualname: object) -> Any:
    try:
        return table.get((module, qualname))  # type: ignore[arg-type]
    except TypeError:  # unhashable parts: not a class name
        return None


def _stored_name(module: object, qualname: object) -> str:
    if type(module) is str and type(qualname) is str:
        name = f"{module}:{qualname}"
    else:
        name = f"{module!r}:{qualname!r}"
    if not name.isprintable() or len(name) > 200:
        name = repr(name[:200])
    return name


def _load_class(table: _ClassTable, code: int, module: object, qualname: object) -> Any:
    """The allowed class stored as ``module:qualname``: a dict lookup, never an import."""
    try:
        cls = table.get((module, qualname))  # type: ignore[arg-type]
    except TypeError:  # unhashable parts: not a class name
        cls = None
    if cls is None:
        if _apply_setting():
            cls = _lookup(table, module, qualname)
        if cls is None:
            raise _refused(code, module, qualname)
    return cls


def _refused(code: int, module: object, qualname: object) -> SerializationError:
    kind = _KINDS[code][0]
    name = _stored_name(module, qualname)
    for other_code, (other_kind, table) in _KINDS.items():
        if other_code != code and _lookup(table, module, qualname) is not None:
            return SerializationError(
                _STORED, f"class {name} is {other_kind}, not {kind}; refusing to load it"
            )
    return SerializationError(
        _STORED,
        f"class {name} ({kind}) is not allowed; refusing to load it (nothing was imported); {_HOW_TO_ALLOW}",
    )


def _dec_tz(raw: Any) -> tzinfo | None:
    if raw is None:
        return None
    if type(raw) is str:
        return ZoneInfo(raw)
    offset_us, name = raw
    offset = timedelta(microseconds=offset_us)
    return timezone(offset) if name is None else timezone(offset, name)


def _dec_datetime(data: bytes) -> datetime:
    year, month, day, hour, minute, second, micro, fold, tz = _unpack(data)
    return datetime(year, month, day, hour, minute, second, micro, tzinfo=_dec_tz(tz), fold=fold)


def _dec_time(data: bytes) -> time:
    hour, minute, second, micro, fold, tz = _unpack(data)
    return time(hour, minute, second, micro, tzinfo=_dec_tz(tz), fold=fold)


def _dec_date(data: bytes) -> date:
    year, month, day = _unpack(data)
    return date(year, month, day)


def _dec_timedelta(data: bytes) -> timedelta:
    days, seconds, micro = _unpack(data)
    return timedelta(days=days, seconds=seconds, microseconds=micro)


def _dec_enum(data: bytes) -> Enum:
    module, qualname, key = _unpack(data)
    cls = _load_class(_ENUMS, EXT_ENUM, module, qualname)
    try:
        member: Enum = cls(key) if issubclass(cls, Flag) else cls[key]
    except (KeyError, ValueError, TypeError) as exc:
        raise SerializationError(_STORED, f"enum {module}:{qualname} has no member {key!r}") from exc
    return member


def _dec_model(data: bytes) -> BaseModel:
    module, qualname, fields, extra, fields_set = _unpack(data)
    cls = _load_class(_MODELS, EXT_MODEL, module, qualname)
    model: BaseModel = cls.model_construct(_fields_set=set(fields_set), **fields, **(extra or {}))
    return model


def _dec_message(data: bytes) -> Any:
    kind, fields = _unpack(data)
    cls = messages.MESSAGE_CLASSES.get(kind) if type(kind) is str else None
    if cls is None:
        raise SerializationError(
            _STORED, f"unknown chat message type {kind!r}; known: {', '.join(messages.MESSAGE_CLASSES)}"
        )
    return cls.model_construct(**fields)


def _dec_dataclass(data: bytes) -> Any:
    module, qualname, values = _unpack(data)
    cls = _lookup(_DATACLASSES, module, qualname)
    if cls is None:
        moved = _lookup(_MOVED, module, qualname)
        if moved is not None:  # stored under a class's earlier name
            return moved(values)
        cls = _load_class(_DATACLASSES, EXT_DATACLASS, module, qualname)
    obj = cls.__new__(cls)  # like unpickling: __init__ / __post_init__ already ran when the value was made
    for field in dataclasses.fields(cls):
        value = values.get(field.name, _MISSING)
        if value is _MISSING:  # a field added to the class since the value was stored
            if field.default is not dataclasses.MISSING:
                value = field.default
            elif field.default_factory is not dataclasses.MISSING:
                value = field.default_factory()
            else:
                continue
        object.__setattr__(obj, field.name, value)
    return obj


_DECODERS: dict[int, Callable[[bytes], Any]] = {
    EXT_TUPLE: lambda data: tuple(_unpack(data)),
    EXT_SET: lambda data: set(_unpack(data)),
    EXT_FROZENSET: lambda data: frozenset(_unpack(data)),
    EXT_BIGINT: lambda data: int.from_bytes(data, "big", signed=True),
    EXT_DATETIME: _dec_datetime,
    EXT_DATE: _dec_date,
    EXT_TIME: _dec_time,
    EXT_TIMEDELTA: _dec_timedelta,
    EXT_DECIMAL: lambda data: Decimal(data.decode("ascii")),
    EXT_UUID: lambda data: uuid.UUID(bytes=data),
    EXT_ENUM: _dec_enum,
    EXT_MODEL: _dec_model,
    EXT_DATACLASS: _dec_dataclass,
    EXT_MESSAGE: _dec_message,
}


def _ext_hook(code: int, data: bytes) -> Any:
    decoder = _DECODERS.get(code)
    if decoder is None:
        raise SerializationError(_STORED, f"unknown extension code {code} (written by a newer graphq?)")
    return decoder(data)


def loads(data: bytes) -> Any:
    """Deserialize bytes produced by :func:`dumps`.

    Args:
        data: A stored payload: the format version byte followed by one msgpack object.

    Returns:
        The stored value, with the exact types it was dumped with.

    Raises:
        SerializationError: The payload is empty, has an unknown format version, uses an unknown extension
            code, names a class that is not allowed or not of the stored kind (nothing is imported or
            called), or is otherwise corrupt. ``.path`` is ``"<stored>"``.
        ConfigError: ``GRAPHQ_SERDE_ALLOWED_CLASSES`` (read on the first miss) has a bad entry.
    """
    if not data:
        raise SerializationError(_STORED, "empty payload")
    if data[0] != FORMAT_VERSION:
        raise SerializationError(
            _STORED, f"unknown serde format version {data[0]} (this graphq reads version {FORMAT_VERSION})"
        )
    try:
        return _unpack(memoryview(data)[1:])
    except (SerializationError, ConfigError):
        raise
    except Exception as exc:
        raise SerializationError(_STORED, f"corrupt payload: {type(exc).__name__}: {exc}") from exc


# graphq's own values found in pending writes and events (a Command: a tool's, in ToolNode's inner graph)
allow_classes(Interrupt, Overwrite, Command, Send, TimeoutPolicy)
# Messages graphq stored before code 14: its own classes as pydantic models (code 12), by their old names.
_MODELS.update(
    (("graphcore.messages", name), messages.MESSAGE_CLASSES[kind])
    for kind, name in (
        ("human", "HumanMessage"),
        ("ai", "AIMessage"),
        ("system", "SystemMessage"),
        ("tool", "ToolMessage"),
        ("remove", "RemoveMessage"),
    )
)
