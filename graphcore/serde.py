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
====  ==============================  ==================================================================

``tz`` is ``nil`` (naive), a string (``zoneinfo.ZoneInfo`` key) or ``[offset_microseconds, name or nil]``
(``datetime.timezone``). Codes are stable: never renumber them; add new codes and bump the version only for
incompatible changes.

Classes (enums, models, dataclasses) are stored by ``__module__`` and ``__qualname__`` and must be importable
at module level (a class defined inside a function is rejected when dumping). On load the class is re-imported
and checked to be an Enum / BaseModel / dataclass before anything is called on it; nothing else is ever
instantiated. Subclasses of built-in types (``class MyStr(str)``) are rejected instead of decaying to the base
type. Pydantic private attributes are not stored (they get their defaults back on load).

Known gaps, kept so the common case stays in msgpack's C code with no Python pre-walk: msgpack packs
``bytearray`` and ``memoryview`` itself (``default`` never sees them), so they load back as ``bytes``; raw
``msgpack.ExtType`` / ``msgpack.Timestamp`` values inside the state are passed through as is.
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
import uuid
from collections.abc import Callable
from datetime import date, datetime, time, timedelta, timezone, tzinfo
from decimal import Decimal
from enum import Enum, Flag
from typing import Any
from zoneinfo import ZoneInfo

import msgpack
from pydantic import BaseModel

from graphcore.errors import SerializationError

__all__ = ["FORMAT_VERSION", "dumps", "loads"]

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

_STORED = "<stored>"
_NESTED_BUF = 256
_TOP_BUF = 4096
_ONE_US = timedelta(microseconds=1)
_MISSING = object()
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

_Encoder = Callable[[Any], msgpack.ExtType]
_CLASS_REFS: dict[type, tuple[str, str]] = {}  # dumps: classes checked importable
_LOADED_CLASSES: dict[tuple[str, str, str], type] = {}  # loads: (module, qualname, kind) -> checked class


class _Unsupported(Exception):
    """Internal: a value cannot be encoded. :func:`dumps` turns it into a SerializationError with a path."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


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
    if issubclass(cls, Enum):
        return _enc_enum
    if issubclass(cls, BaseModel):
        return _enc_model
    if dataclasses.is_dataclass(cls):
        return _enc_dataclass
    return None


def _class_ref(cls: type) -> tuple[str, str]:
    """Return ``(module, qualname)`` of a class, checking (once per class) that loads can import it back."""
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
    if _resolve(module, qualname) is not cls:
        raise _Unsupported(f"class {module}.{qualname} cannot be imported back by its module and qualname")
    return module, qualname


def _classify(obj: Any) -> _Encoder:
    cls = type(obj)
    encoder = _ENCODERS.get(cls)
    if encoder is not None:
        return encoder
    encoder = _class_encoder(cls)
    if encoder is None:
        raise _Unsupported(_unsupported_message(cls))
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
            subclass of a built-in type, a class defined inside a function, an unsupported tzinfo, ...).
            ``.path`` says where it sits, e.g. ``state.items[1].when``.
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


def _is_dotted_name(name: object) -> bool:
    return isinstance(name, str) and all(part.isidentifier() for part in name.split("."))


def _resolve(module: str, qualname: str) -> object | None:
    """Import ``module`` and walk ``qualname``; None if either is missing."""
    if not (_is_dotted_name(module) and _is_dotted_name(qualname)):
        return None
    try:
        target: object = sys.modules.get(module) or importlib.import_module(module)
        for part in qualname.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError):
        return None
    return target


def _load_class(module: object, qualname: object, kind: str, check: Callable[[type], bool]) -> Any:
    """Resolve a stored class reference, refusing anything that is not a class of the expected kind."""
    if isinstance(module, str) and isinstance(qualname, str):
        key = (module, qualname, kind)
        cached = _LOADED_CLASSES.get(key)
        if cached is not None:
            return cached
        target = _resolve(module, qualname)
        if isinstance(target, type) and check(target):
            _LOADED_CLASSES[key] = target  # only classes that passed the check are cached
            return target
    raise SerializationError(_STORED, f"{module}:{qualname} is not {kind}; refusing to load it")


def _is_enum_class(cls: type) -> bool:
    return issubclass(cls, Enum)


def _is_model_class(cls: type) -> bool:
    return issubclass(cls, BaseModel)


def _is_dataclass_class(cls: type) -> bool:
    return dataclasses.is_dataclass(cls)


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
    cls = _load_class(module, qualname, "an Enum class", _is_enum_class)
    try:
        member: Enum = cls(key) if issubclass(cls, Flag) else cls[key]
    except (KeyError, ValueError, TypeError) as exc:
        raise SerializationError(_STORED, f"enum {module}:{qualname} has no member {key!r}") from exc
    return member


def _dec_model(data: bytes) -> BaseModel:
    module, qualname, fields, extra, fields_set = _unpack(data)
    cls = _load_class(module, qualname, "a pydantic BaseModel class", _is_model_class)
    model: BaseModel = cls.model_construct(_fields_set=set(fields_set), **fields, **(extra or {}))
    return model


def _dec_dataclass(data: bytes) -> Any:
    module, qualname, values = _unpack(data)
    cls = _load_class(module, qualname, "a dataclass", _is_dataclass_class)
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
            code, names a class that cannot be imported or is not an Enum / BaseModel / dataclass (it is never
            called), or is otherwise corrupt. ``.path`` is ``"<stored>"``.
    """
    if not data:
        raise SerializationError(_STORED, "empty payload")
    if data[0] != FORMAT_VERSION:
        raise SerializationError(
            _STORED, f"unknown serde format version {data[0]} (this graphq reads version {FORMAT_VERSION})"
        )
    try:
        return _unpack(memoryview(data)[1:])
    except SerializationError:
        raise
    except Exception as exc:
        raise SerializationError(_STORED, f"corrupt payload: {type(exc).__name__}: {exc}") from exc
