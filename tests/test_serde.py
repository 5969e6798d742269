"""Tests for graphcore.checkpoints.serde: exact round-trips of the allow-list, error paths, refusing crafted
payloads."""

from __future__ import annotations

import dataclasses
import math
import os
import socket
import uuid
from collections import OrderedDict, defaultdict
from datetime import UTC, date, datetime, time, timedelta, timezone, tzinfo
from decimal import Decimal
from enum import Enum, Flag, IntEnum, IntFlag, StrEnum, auto
from typing import Any
from zoneinfo import ZoneInfo

import msgpack
import pytest
from pydantic import BaseModel, ConfigDict, RootModel

from graphcore.checkpoints import serde
from graphcore.checkpoints.serde import dumps, loads
from graphcore.errors import SerializationError

PARIS = ZoneInfo("Europe/Paris")

# ---------------------------------------------------------------------------------------- module-level types


class Color(Enum):
    RED = 1
    GREEN = "green"
    BLUE = (3, "tuple value")
    CRIMSON = 1  # alias of RED


class Mood(StrEnum):
    HAPPY = auto()
    SAD = auto()


class Level(IntEnum):
    LOW = 1
    HIGH = 2


class Perm(Flag):
    R = auto()
    W = auto()
    X = auto()


class Bits(IntFlag):
    A = 1
    B = 2


class Opaque(Enum):
    THING = object()  # the value itself is not serializable: members are stored by name


class Item(BaseModel):
    sku: str
    qty: int = 1


class Order(BaseModel):
    class Status(Enum):
        OPEN = "open"
        SHIPPED = "shipped"

    id: uuid.UUID
    status: Status
    items: list[Item]
    when: datetime
    coords: tuple[int, int]
    tags: frozenset[str] = frozenset()
    total: Decimal = Decimal("0")


class Loose(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str


class FrozenKey(BaseModel):
    model_config = ConfigDict(frozen=True)

    a: int
    b: str


class Counted(BaseModel):
    value: int

    def model_post_init(self, context: Any, /) -> None:
        pass


class Scores(RootModel[list[int]]):
    pass


class AnyHolder(BaseModel):
    payload: Any = None


@dataclasses.dataclass
class Event:
    at: datetime
    kind: Color
    data: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: int


@dataclasses.dataclass(slots=True)
class Slotted:
    a: int
    b: tuple[int, ...]


@dataclasses.dataclass
class WithDerived:
    base: int
    scale: dataclasses.InitVar[int]
    derived: int = dataclasses.field(init=False)
    calls: int = dataclasses.field(init=False, default=0)

    def __post_init__(self, scale: int) -> None:
        self.derived = self.base * scale
        self.calls += 1


@dataclasses.dataclass
class Box:
    value: Any


class MyStr(str):
    pass


class MyInt(int):
    pass


class MyList(list[Any]):
    pass


class MyDict(dict[str, Any]):
    pass


class Plain:
    pass


class HashableKey:
    def __repr__(self) -> str:
        return "HashableKey()"


class OddTz(tzinfo):
    def utcoffset(self, dt: datetime | None) -> timedelta:
        return timedelta(hours=1)

    def dst(self, dt: datetime | None) -> timedelta:
        return timedelta(0)

    def tzname(self, dt: datetime | None) -> str:
        return "ODD"


# No workflow's state schema names these test classes: allow them explicitly (Order.Status and Item come
# with Order, as the classes its fields name). See tests/test_serde_allowlist.py for the rule itself.
serde.allow_classes(
    Color, Mood, Level, Perm, Bits, Opaque, Order, Loose, FrozenKey, Counted, Scores, AnyHolder,
    Event, Point, Slotted, WithDerived, Box,
)  # fmt: skip


# --------------------------------------------------------------------------------------------------- helpers


def assert_same(a: Any, b: Any) -> None:
    """Deep equality that also checks every type, tzinfo and fold."""
    assert type(a) is type(b), f"{type(a)!r} is not {type(b)!r} ({a!r} vs {b!r})"
    if type(a) is float and math.isnan(a):
        assert math.isnan(b)
    elif type(a) in (list, tuple, dict, set, frozenset):
        assert_same_container(a, b)
    else:
        assert_same_object(a, b)


def assert_same_container(a: Any, b: Any) -> None:
    assert len(a) == len(b)
    if type(a) in (set, frozenset):
        assert {(type(x), x) for x in a} == {(type(y), y) for y in b}
    elif type(a) is dict:
        for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=True):
            assert_same(ka, kb)
            assert_same(va, vb)
    else:
        for x, y in zip(a, b, strict=True):
            assert_same(x, y)


def assert_same_object(a: Any, b: Any) -> None:
    if isinstance(a, BaseModel):
        assert_same(a.__dict__, b.__dict__)
        assert_same(a.__pydantic_extra__, b.__pydantic_extra__)
        assert a.model_fields_set == b.model_fields_set
        assert a == b
    elif dataclasses.is_dataclass(a):
        for field in dataclasses.fields(a):
            assert_same(getattr(a, field.name), getattr(b, field.name))
    elif type(a) in (datetime, time):
        assert a == b
        assert a.fold == b.fold
        assert_same_tz(a.tzinfo, b.tzinfo)
    elif type(a) is Decimal:
        assert str(a) == str(b)
    else:
        assert a == b


def assert_same_tz(a: tzinfo | None, b: tzinfo | None) -> None:
    assert type(a) is type(b)
    if isinstance(a, ZoneInfo):
        assert isinstance(b, ZoneInfo)
        assert a.key == b.key
    elif a is not None:
        assert b is not None
        assert a.utcoffset(None) == b.utcoffset(None)
        assert a.tzname(None) == b.tzname(None)


def roundtrip(value: Any) -> Any:
    data = dumps(value)
    assert isinstance(data, bytes)
    assert data[:1] == b"\x01"
    back = loads(data)
    assert_same(value, back)
    return back


def crafted(code: int, payload: Any) -> bytes:
    inner: bytes = msgpack.packb(payload)
    outer: bytes = msgpack.packb(msgpack.ExtType(code, inner))
    return b"\x01" + outer


def order() -> Order:
    return Order(
        id=uuid.UUID("12345678-1234-5678-1234-567812345678"),
        status=Order.Status.SHIPPED,
        items=[Item(sku="a"), Item(sku="b", qty=3)],
        when=datetime(2024, 3, 31, 2, 30, tzinfo=PARIS),
        coords=(4, 2),
        tags=frozenset({"x", "y"}),
        total=Decimal("12.50"),
    )


# ------------------------------------------------------------------------------------------------ round-trips

SCALARS: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    2**63 - 1,
    2**64 - 1,
    -(2**63),
    2**64,
    -(2**63) - 1,
    2**100,
    -(2**70),
    -(2**1000) + 7,
    1.5,
    float("inf"),
    float("-inf"),
    float("nan"),
    "",
    "héllo ✓ 𝄞",
    b"",
    b"\x00\xff",
]

TEMPORAL: list[Any] = [
    datetime(2024, 1, 2, 3, 4, 5, 678901),
    datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC),
    datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=5, minutes=30))),
    datetime(2024, 1, 2, tzinfo=timezone(timedelta(hours=-3), "BRT")),
    datetime(2024, 1, 2, tzinfo=timezone(timedelta(hours=1, microseconds=7))),
    datetime(2024, 7, 14, 12, 0, tzinfo=PARIS),
    datetime(2021, 10, 31, 2, 30, fold=1, tzinfo=PARIS),
    datetime(2021, 10, 31, 2, 30, fold=1),
    datetime.min,
    datetime.max,
    date(2024, 2, 29),
    date.min,
    time(),
    time(23, 59, 59, 999999),
    time(1, 2, 3, tzinfo=timezone(timedelta(hours=2))),
    time(1, 2, 3, tzinfo=PARIS),
    time(1, 2, 3, fold=1),
    timedelta(),
    timedelta(days=-3, microseconds=1),
    timedelta(days=999999999, seconds=86399, microseconds=999999),
    timedelta.min,
]

OTHERS: list[Any] = [
    Decimal("1.10"),
    Decimal("-0"),
    Decimal("1E+3"),
    Decimal("Infinity"),
    Decimal("-Infinity"),
    Decimal("3.14159265358979323846264338327950288419716939937510"),
    uuid.UUID("12345678-1234-5678-1234-567812345678"),
    uuid.uuid4(),
    Color.RED,
    Color.GREEN,
    Color.BLUE,
    Mood.SAD,
    Level.HIGH,
    Perm.R,
    Perm.R | Perm.X,
    Perm(0),
    Bits.A | Bits.B,
    Opaque.THING,
    Order.Status.OPEN,
]

CONTAINERS: list[Any] = [
    [],
    {},
    (),
    (1,),
    ((1, 2), [3, (4,)], {"t": (5,)}),
    [1, "a", None, [2, [3]]],
    set(),
    {1, "a", (1, 2), frozenset({3})},
    frozenset(),
    frozenset({b"x", 2.5}),
    {"a": 1, "b": [1, 2], "c": {"d": None}},
    {1: "int key", 2.5: "float", None: "none", b"k": "bytes"},
    {True: "bool key", False: 0},
    {(1, "a"): "tuple key", Color.RED: "enum key", frozenset({1}): "frozenset key"},
    {Level.LOW: 1, 1.5: Mood.HAPPY},
    [(1, 2)] * 3,
]


def stable_id(value: Any) -> str:
    """A value's test id, the same in every process (pytest-xdist's two processes must collect the same
    tests): its repr, but not a random uuid4's, an object's address (an enum member's value) nor a set's
    order (string and bytes hashes differ between processes)."""
    if isinstance(value, uuid.UUID):
        return f"UUID-v{value.version}" if value.version == 4 else repr(value)
    if isinstance(value, Enum) and value.name is not None:
        return f"{type(value).__name__}.{value.name}"
    if isinstance(value, set | frozenset):
        return f"{type(value).__name__}({{{', '.join(sorted(map(stable_id, value)))}}})"
    return repr(value)


@pytest.mark.parametrize("value", SCALARS + TEMPORAL + OTHERS + CONTAINERS, ids=stable_id)
def test_roundtrip_exact(value: Any) -> None:
    roundtrip(value)


@pytest.mark.parametrize("value", SCALARS + TEMPORAL + OTHERS, ids=stable_id)
def test_roundtrip_nested_everywhere(value: Any) -> None:
    roundtrip([value, (value,), {"k": value}, {"t": (1, [value])}, Box(value)])
    if value.__hash__ is not None and not (type(value) is float and math.isnan(value)):
        roundtrip({value: value, (value, 1): [value]})
        roundtrip({value})
        roundtrip(frozenset({value}))


def test_tuple_stays_tuple_and_list_stays_list() -> None:
    back = roundtrip({"t": (1, [2, (3,)]), "l": [(4,)]})
    assert type(back["t"]) is tuple
    assert type(back["t"][1]) is list
    assert type(back["t"][1][1]) is tuple
    assert type(back["l"][0]) is tuple


def test_big_ints() -> None:
    assert loads(dumps(2**100)) == 2**100
    assert loads(dumps(-(2**70))) == -(2**70)
    assert loads(dumps([2**64, -(2**63) - 1])) == [2**64, -(2**63) - 1]


def test_negative_zero_float() -> None:
    back = loads(dumps(-0.0))
    assert type(back) is float
    assert math.copysign(1.0, back) == -1.0


def test_zoneinfo_key_kept() -> None:
    back = roundtrip(datetime(2024, 7, 14, 12, 0, tzinfo=PARIS))
    assert isinstance(back.tzinfo, ZoneInfo)
    assert back.tzinfo.key == "Europe/Paris"
    # The zone, not a fixed offset: arithmetic across the DST change still follows Paris rules.
    assert (back + timedelta(days=180)).utcoffset() == timedelta(hours=1)


def test_fold_kept() -> None:
    first = datetime(2021, 10, 31, 2, 30, fold=0, tzinfo=PARIS)
    second = first.replace(fold=1)
    assert loads(dumps(first)).fold == 0
    back = loads(dumps(second))
    assert back.fold == 1
    assert back.utcoffset() == timedelta(hours=1)
    assert loads(dumps(time(2, 30, fold=1))).fold == 1


def test_fixed_offsets_kept() -> None:
    assert loads(dumps(datetime(2024, 1, 1, tzinfo=UTC))).tzinfo is UTC
    ist = timezone(timedelta(hours=5, minutes=30))
    back = loads(dumps(datetime(2024, 1, 1, tzinfo=ist)))
    assert back.tzinfo == ist
    assert back.utcoffset() == timedelta(hours=5, minutes=30)
    assert back.tzname() == "UTC+05:30"
    named = loads(dumps(datetime(2024, 1, 1, tzinfo=timezone(timedelta(hours=-3), "BRT"))))
    assert named.tzname() == "BRT"


def test_decimals_exact() -> None:
    assert loads(dumps(Decimal("NaN"))).is_nan()
    assert loads(dumps(Decimal("-NaN"))).is_nan()
    assert loads(dumps(Decimal("sNaN"))).is_snan()
    assert str(loads(dumps(Decimal("1.10")))) == "1.10"
    assert str(loads(dumps(Decimal("-0")))) == "-0"
    assert str(loads(dumps(Decimal("1E+3")))) == "1E+3"
    assert loads(dumps(Decimal("-Infinity"))) == Decimal("-Infinity")


def test_timedelta_exact_microseconds() -> None:
    value = timedelta(days=2, seconds=3, microseconds=4)
    back = loads(dumps(value))
    assert back == value
    assert back // timedelta(microseconds=1) == value // timedelta(microseconds=1)


def test_enums_come_back_as_members() -> None:
    assert loads(dumps(Color.CRIMSON)) is Color.RED
    assert loads(dumps(Mood.SAD)) is Mood.SAD
    assert loads(dumps(Level.HIGH)) is Level.HIGH
    assert loads(dumps(Perm.R | Perm.W)) == Perm.R | Perm.W
    assert loads(dumps(Order.Status.SHIPPED)) is Order.Status.SHIPPED
    assert loads(dumps(Opaque.THING)) is Opaque.THING


def test_model_with_nested_class_enum() -> None:
    value = order()
    back = roundtrip(value)
    assert back.status is Order.Status.SHIPPED
    assert type(back.items[0]) is Item
    assert type(back.coords) is tuple
    assert type(back.tags) is frozenset
    assert back.when.tzinfo.key == "Europe/Paris"
    assert str(back.total) == "12.50"


def test_model_fields_set_kept() -> None:
    back = roundtrip(Item(sku="a"))
    assert back.model_fields_set == {"sku"}
    assert back.model_dump(exclude_unset=True) == {"sku": "a"}


def test_model_extra_fields_kept() -> None:
    value = Loose(name="n", extra_tuple=(1, 2), extra_enum=Color.GREEN)  # type: ignore[call-arg]
    back = roundtrip(value)
    assert back.model_extra == {"extra_tuple": (1, 2), "extra_enum": Color.GREEN}
    assert type(back.model_extra["extra_tuple"]) is tuple


def test_frozen_model_as_dict_key_and_root_model() -> None:
    roundtrip({FrozenKey(a=1, b="x"): [FrozenKey(a=2, b="y")]})
    roundtrip(Scores([1, 2, 3]))
    roundtrip(Counted(value=3))


def test_dataclasses_with_datetimes_in_dict_with_tuple_keys() -> None:
    events = [
        Event(at=datetime(2024, 1, 1, tzinfo=PARIS), kind=Color.RED, data={"n": (1, 2)}),
        Event(at=datetime(2024, 1, 2, 3, 4), kind=Color.BLUE),
    ]
    back = roundtrip({("run", 1): events, ("run", 2): []})
    first = back[("run", 1)][0]
    assert type(first) is Event
    assert isinstance(first.at.tzinfo, ZoneInfo)
    assert first.at.tzinfo.key == "Europe/Paris"


def test_frozen_and_slotted_dataclasses() -> None:
    back = roundtrip(Point(1, 2))
    with pytest.raises(dataclasses.FrozenInstanceError):
        back.x = 3
    roundtrip({Point(1, 2): Point(3, 4)})
    roundtrip(Slotted(1, (2, 3)))


def test_dataclass_init_false_and_initvar_not_rerun() -> None:
    value = WithDerived(base=2, scale=10)
    back = roundtrip(value)
    assert back.derived == 20
    assert back.calls == 1  # __post_init__ is not run again on load


def test_dataclass_field_added_after_dump_gets_default() -> None:
    data = crafted(serde.EXT_DATACLASS, [Event.__module__, "Event", {"at": 1, "kind": 2}])
    back = loads(data)
    assert back == Event(at=1, kind=2, data={})  # type: ignore[arg-type]


def test_mixed_big_structure() -> None:
    roundtrip(
        {
            "orders": [order(), order()],
            "index": {(1, "a"): Order.Status.OPEN, Level.LOW: frozenset({Mood.HAPPY})},
            "events": (Event(at=datetime(2020, 1, 1), kind=Color.GREEN),),
            "seen": {uuid.UUID(int=1), uuid.UUID(int=2)},
            "limits": [2**80, Decimal("1.10"), timedelta(seconds=1)],
        }
    )


def test_fast_path_does_not_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: Any) -> None:
        raise AssertionError("the slow path ran on a valid value")

    monkeypatch.setattr(serde, "_locate", boom)
    roundtrip({"orders": [order()] * 5, "t": (1, 2), "n": list(range(100))})


# ------------------------------------------------------------------------------------------ dumps rejections


def rejected(value: Any, path: str = "state") -> SerializationError:
    with pytest.raises(SerializationError) as info:
        dumps(value, path=path)
    error = info.value
    assert "\n" not in str(error)
    return error


def test_rejects_plain_object_with_path() -> None:
    error = rejected({"items": [1, {"when": object()}]})
    assert error.path == "state.items[1].when"
    assert "'object'" in str(error)
    assert "allowed types:" in str(error)
    assert str(error).startswith("state.items[1].when: ")


@pytest.mark.parametrize(
    ("value", "path", "type_name"),
    [
        ([1, 2, Plain()], "state[2]", "Plain"),
        ((1, (2, Plain())), "state[1][1]", "Plain"),
        ({"a": {"b c": [Plain()]}}, "state.a.b c[0]", "Plain"),
        ({1: {"a": Plain()}}, "state[1].a", "Plain"),
        ({(1, "x"): Plain()}, "state[(1, 'x')]", "Plain"),
        ({HashableKey(): 1}, "state[HashableKey()]", "HashableKey"),
        ({"m": AnyHolder(payload=Plain())}, "state.m.payload", "Plain"),
        ({"m": AnyHolder(payload=[1, {"deep": Plain()}])}, "state.m.payload[1].deep", "Plain"),
        ({"dc": Box(value=Plain())}, "state.dc.value", "Plain"),
        ([Box(value=Box(value=(1, Plain())))], "state[0].value.value[1]", "Plain"),
        ({"s": {Plain()}}, "state.s[0]", "Plain"),
        ({"f": lambda: 0}, "state.f", "function"),
        ({"g": (i for i in range(3))}, "state.g", "generator"),
        ({"t": type}, "state.t", "type"),
        ({"c": 1j}, "state.c", "complex"),
        ({"e": Color}, "state.e", "EnumType"),
    ],
)
def test_rejection_paths(value: Any, path: str, type_name: str) -> None:
    error = rejected(value)
    assert error.path == path
    assert type_name in str(error)
    assert "allowed types:" in str(error)


def test_bytearray_and_memoryview_load_as_bytes() -> None:
    # Documented gap: msgpack's C packer handles these before `default` could reject them.
    assert loads(dumps(bytearray(b"x"))) == b"x"
    assert type(loads(dumps(memoryview(b"ab")))) is bytes


def test_rejects_model_extra_field_with_path() -> None:
    error = rejected({"l": Loose(name="n", other=Plain())})  # type: ignore[call-arg]
    assert error.path == "state.l.other"


def test_rejects_socket() -> None:
    with socket.socket() as sock:
        error = rejected({"conn": sock})
    assert error.path == "state.conn"
    assert "socket" in str(error)


def test_custom_root_path() -> None:
    assert rejected([Plain()], path="writes").path == "writes[0]"


def test_rejects_classes_defined_in_functions() -> None:
    class LocalEnum(Enum):
        A = 1

    class LocalModel(BaseModel):
        x: int = 1

    @dataclasses.dataclass
    class LocalData:
        x: int = 1

    for value in (LocalEnum.A, LocalModel(), LocalData()):
        error = rejected({"v": [value]})
        assert error.path == "state.v[0]"
        assert "<locals>" in str(error)
        assert "inside a function" in str(error)


@pytest.mark.parametrize(
    ("value", "base"),
    [
        (MyStr("x"), "str"),
        (MyInt(3), "int"),
        (MyList([1]), "list"),
        (MyDict(a=1), "dict"),
        (OrderedDict(a=1), "dict"),
        (defaultdict(list), "dict"),
    ],
)
def test_rejects_subclasses_of_builtins(value: Any, base: str) -> None:
    error = rejected({"x": value})
    assert error.path == "state.x"
    assert f"subclass of {base}" in str(error)


def test_rejects_unsupported_tzinfo() -> None:
    error = rejected({"when": datetime(2024, 1, 1, tzinfo=OddTz())})
    assert error.path == "state.when"
    assert "OddTz" in str(error)


def test_rejects_cycles_and_bad_strings() -> None:
    cyclic: list[Any] = [1]
    cyclic.append(cyclic)
    assert rejected({"c": cyclic}).path == "state.c[1]"
    error = rejected({"s": ["ok", "\ud800"]})
    assert error.path == "state.s[1]"


def test_error_is_permanent_serialization_error() -> None:
    error = rejected(Plain())
    assert error.path == "state"
    assert isinstance(error, SerializationError)


# ------------------------------------------------------------------------------------------- loads rejections


def load_rejected(data: bytes) -> SerializationError:
    with pytest.raises(SerializationError) as info:
        loads(data)
    return info.value


def test_unknown_format_version_rejected() -> None:
    good = dumps({"a": 1})
    error = load_rejected(b"\x02" + good[1:])
    assert "version 2" in str(error)
    assert error.path == "<stored>"
    assert "version" in str(load_rejected(msgpack.packb({"a": 1})))
    assert "empty" in str(load_rejected(b""))


def test_unknown_extension_code_rejected() -> None:
    error = load_rejected(b"\x01" + msgpack.packb([msgpack.ExtType(99, b"")]))
    assert "99" in str(error)


def test_corrupt_payload_rejected() -> None:
    data = dumps({"orders": [order()]})
    load_rejected(data[:-3])
    load_rejected(data + b"\x00")
    load_rejected(crafted(serde.EXT_DATETIME, [2024, 13, 1, 0, 0, 0, 0, 0, None]))
    load_rejected(crafted(serde.EXT_DATETIME, [2024, 1, 1, 0, 0, 0, 0, 0, "No/Such_Zone"]))
    load_rejected(crafted(serde.EXT_ENUM, [Color.__module__, "Color", "PURPLE"]))
    load_rejected(crafted(serde.EXT_ENUM, "not a list"))


@pytest.fixture
def spied_system(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    calls: list[Any] = []
    monkeypatch.setattr(os, "system", lambda *args: calls.append(args))
    return calls


@pytest.mark.parametrize("code", [serde.EXT_ENUM, serde.EXT_MODEL, serde.EXT_DATACLASS])
def test_refuses_non_allowed_callables(code: int, spied_system: list[Any]) -> None:
    payloads = {
        serde.EXT_ENUM: ["os", "system", "echo pwned"],
        serde.EXT_MODEL: ["os", "system", {"command": "echo pwned"}, None, []],
        serde.EXT_DATACLASS: ["os", "system", {"command": "echo pwned"}],
    }
    error = load_rejected(crafted(code, payloads[code]))
    assert "os:system" in str(error)
    assert "refusing" in str(error)
    assert spied_system == []


@pytest.mark.parametrize(
    ("code", "payload"),
    [
        (serde.EXT_MODEL, ["builtins", "dict", {"a": 1}, None, []]),
        (serde.EXT_DATACLASS, ["builtins", "dict", {"a": 1}]),
        (serde.EXT_ENUM, ["builtins", "dict", "a"]),
        (serde.EXT_ENUM, ["builtins", "int", 1]),
        (serde.EXT_MODEL, ["subprocess", "Popen", {"args": ["true"]}, None, []]),
        (serde.EXT_ENUM, ["enum", "Enum", "x"]),  # Enum itself: no members
        (serde.EXT_MODEL, [Color.__module__, "Color", {}, None, []]),  # an Enum is not a model
        (serde.EXT_DATACLASS, [Color.__module__, "Item", {"sku": "a"}]),  # a model is not a dataclass
        (serde.EXT_ENUM, ["no_such_module_xyz", "Thing", "A"]),
        (serde.EXT_ENUM, [Color.__module__, "NoSuchClass", "A"]),
        (serde.EXT_ENUM, ["..evil", "Thing", "A"]),
        (serde.EXT_ENUM, [Color.__module__, "f.<locals>.E", "A"]),
        (serde.EXT_ENUM, [1, 2, "A"]),
    ],
    ids=repr,
)
def test_refuses_non_allowed_classes(code: int, payload: list[Any]) -> None:
    error = load_rejected(crafted(code, payload))
    assert error.path == "<stored>"


def test_loads_class_nested_in_an_allowed_model_without_dumping_it_first() -> None:
    data = crafted(serde.EXT_ENUM, [Order.__module__, "Order.Status", "OPEN"])
    assert loads(data) is Order.Status.OPEN
