"""What a stored record may make a process load (I5): only allowed classes, looked up, never imported.

A record names its classes by ``module:qualname``. Anyone who can write to Redis can write such a name, so
loading must never import it: only the classes named by the workflows' state schemas, graphq's own stored
values, ``serde.allow_classes()`` and the ``GRAPHQ_SERDE_ALLOWED_CLASSES`` setting load.
"""

from __future__ import annotations

import builtins
import dataclasses
import importlib
import operator
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Literal, NewType, Optional, TypedDict

import msgpack
import pytest
import redis
from pydantic import BaseModel

from graphcore import END, START, StateGraph
from graphcore.backend.client import Client
from graphcore.backend.store import RedisCheckpointStore
from graphcore.checkpoints import serde
from graphcore.checkpoints.layout import decode_writes, encode_writes
from graphcore.engine.channels import RemoveMessage
from graphcore.engine.registry import Registry
from graphcore.errors import ConfigError, SerializationError
from graphcore.settings import Settings, get_settings, load_settings
from graphcore.types import Interrupt, Overwrite, PendingTask, TaskWrites
from graphq.worker.queue import RQStepQueue
from tests.envs import clean_env
from tests.workflows.hitl import Order

ROOT = Path(__file__).resolve().parent.parent

SETTING = "GRAPHQ_SERDE_ALLOWED_CLASSES"

# --------------------------------------------------------------------- classes named by the workflow schema
# Only test_classes_named_by_a_compiled_schema_load_nested_ones_too builds a graph over these: nothing
# else in the session may allow them, so that the test can show they are refused before and load after.


class Priority(Enum):
    LOW = "low"
    HIGH = "high"


class Region(Enum):
    EU = "eu"
    US = "us"


class Channel(Enum):
    MAIL = "mail"
    PHONE = "phone"


class Tag(BaseModel):
    label: str
    region: Region | None = None  # an enum only a nested model names


@dataclasses.dataclass(frozen=True)
class Note:
    text: str
    channel: Channel  # an enum only a dataclass field names


@dataclasses.dataclass(frozen=True)
class Spot:
    x: int
    y: int


class TreeNode(BaseModel):
    name: str
    children: list[TreeNode] = []  # recursive: the walk must end


class Ticket(BaseModel):
    id: int
    tags: list[Tag]
    notes: dict[str, Note] = {}
    priority: Optional[Priority] = None  # noqa: UP045 - typing.Optional is walked too
    where: tuple[Spot, ...] = ()
    tree: TreeNode | None = None


class Owner(BaseModel):
    name: str


class Shade(Enum):
    DARK = 1
    LIGHT = 2


class Stage(Enum):
    NEW = 1
    DONE = 2


OwnerId = NewType("OwnerId", str)


class Inner(TypedDict):
    stage: Stage  # an enum only a nested TypedDict names


class TicketState(TypedDict, total=False):
    tickets: Annotated[list[Ticket], operator.add]
    owners: dict[OwnerId, Optional[Owner]]  # noqa: UP045
    shade: Literal[Shade.DARK]
    inner: Inner
    when: datetime


SCHEMA_CLASSES: list[type] = [
    Priority,
    Region,
    Channel,
    Tag,
    Note,
    Spot,
    TreeNode,
    Ticket,
    Owner,
    Shade,
    Stage,
]


class Leaf(BaseModel):
    value: int


class ModelState(BaseModel):
    """A pydantic state schema: the model itself and the classes its fields name are allowed."""

    leaves: list[Leaf] = []


# --------------------------------------------------------------------------------- classes nothing allows


class Unlisted(BaseModel):
    x: int = 1


class UnlistedColor(Enum):
    RED = 1


@dataclasses.dataclass
class UnlistedBox:
    value: Any


# -------------------------------------------------------------------------------------- explicitly allowed


class Explicit(Enum):
    ON = "on"


class Holder(BaseModel):
    inner: ExplicitInner


@dataclasses.dataclass
class ExplicitInner:
    level: ExplicitLevel


class ExplicitLevel(Enum):
    ONE = 1


Holder.model_rebuild()


# --------------------------------------------------------------------------------------------------- helpers


def crafted(code: int, payload: list[Any]) -> bytes:
    """A stored record written by hand: the format version byte, then one msgpack extension value."""
    return b"\x01" + msgpack.packb(msgpack.ExtType(code, msgpack.packb(payload)))


def enum_record(module: str, qualname: str, member: Any = "A") -> bytes:
    return crafted(serde.EXT_ENUM, [module, qualname, member])


def model_record(module: str, qualname: str, fields: dict[str, Any]) -> bytes:
    return crafted(serde.EXT_MODEL, [module, qualname, fields, None, sorted(fields)])


def dataclass_record(module: str, qualname: str, fields: dict[str, Any]) -> bytes:
    return crafted(serde.EXT_DATACLASS, [module, qualname, fields])


def refused(data: bytes, name: str) -> SerializationError:
    """Load ``data`` with every import made impossible; it must fail naming ``name`` and the setting."""
    get_settings()  # built before imports are blocked (the miss path reads the setting)

    def no_import(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"loads tried to import {args[0]!r}")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(importlib, "import_module", no_import)
        mp.setattr(builtins, "__import__", no_import)
        with pytest.raises(SerializationError) as info:
            serde.loads(data)
    error = info.value
    assert error.path == "<stored>"
    assert name in str(error)
    assert SETTING in str(error)
    assert "refusing" in str(error)
    return error


def ref(cls: type) -> tuple[str, str]:
    return cls.__module__, cls.__qualname__


@pytest.fixture
def module_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory on sys.path for modules the tests write; the modules are dropped from sys.modules after."""
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        if sys.modules[name].__file__ and str(tmp_path) in str(sys.modules[name].__file__):
            del sys.modules[name]


def marker_module(module_dir: Path) -> tuple[str, Path]:
    """Write a module whose import creates a marker file; returns its (unique) name and the marker path."""
    name = f"graphq_evil_{uuid.uuid4().hex[:8]}"
    marker = module_dir / f"{name}.imported"
    (module_dir / f"{name}.py").write_text(
        "import dataclasses, enum, pathlib\n"
        f"pathlib.Path({str(marker)!r}).write_text('imported')\n"
        "class Thing(enum.Enum):\n"
        "    A = 'a'\n"
        "@dataclasses.dataclass\n"
        "class Data:\n"
        "    command: str = ''\n",
        encoding="utf-8",
    )
    return name, marker


# ------------------------------------------------------------------------------- never an import on loads


@pytest.mark.parametrize("kind", ["enum", "model", "dataclass"])
def test_a_record_naming_an_importable_module_is_refused_without_importing_it(
    kind: str, module_dir: Path
) -> None:
    name, marker = marker_module(module_dir)
    records = {
        "enum": enum_record(name, "Thing", "A"),
        "model": model_record(name, "Thing", {"command": "echo pwned"}),
        "dataclass": dataclass_record(name, "Data", {"command": "echo pwned"}),
    }
    qualname = "Data" if kind == "dataclass" else "Thing"
    error = refused(records[kind], f"{name}:{qualname}")
    assert "nothing was imported" in str(error)
    assert not marker.exists()
    assert name not in sys.modules
    # The module was importable all along: the refusal is the allow-list, not a failed import.
    importlib.import_module(name)
    assert marker.exists()


@pytest.mark.parametrize(
    ("module", "qualname"),
    [("antigravity", "x"), ("this", "s"), ("webbrowser", "open"), ("subprocess", "Popen"), ("os", "system")],
)
@pytest.mark.parametrize("code", [serde.EXT_ENUM, serde.EXT_MODEL, serde.EXT_DATACLASS])
def test_well_known_stdlib_names_are_refused_without_import(module: str, qualname: str, code: int) -> None:
    imported_before = module in sys.modules
    payloads = {
        serde.EXT_ENUM: enum_record(module, qualname, "x"),
        serde.EXT_MODEL: model_record(module, qualname, {"args": ["true"]}),
        serde.EXT_DATACLASS: dataclass_record(module, qualname, {"command": "true"}),
    }
    refused(payloads[code], f"{module}:{qualname}")
    assert (module in sys.modules) == imported_before  # antigravity / this / webbrowser stay unimported


def test_a_garbage_class_name_is_refused_and_printed_safely() -> None:
    refused(enum_record("a\nb", "x" * 500), SETTING)
    with pytest.raises(SerializationError, match="refusing"):
        serde.loads(crafted(serde.EXT_ENUM, [[1], {"x": 1}, "A"]))  # unhashable parts: no lookup at all


def test_an_allowed_class_named_under_the_wrong_kind_is_refused() -> None:
    serde.allow_classes(Explicit)
    with pytest.raises(SerializationError, match="is an Enum class, not a pydantic BaseModel class"):
        serde.loads(model_record(*ref(Explicit), {}))
    with pytest.raises(SerializationError, match="is an Enum class, not a dataclass"):
        serde.loads(dataclass_record(*ref(Explicit), {}))


# ------------------------------------------------------------------------ classes named by a state schema


def test_classes_named_by_a_compiled_schema_load_nested_ones_too() -> None:
    for cls in SCHEMA_CLASSES:  # not allowed before a graph names them
        refused(enum_record(*ref(cls)), f"{cls.__module__}:{cls.__qualname__}")

    g = StateGraph(TicketState)
    g.add_node("noop", lambda state: None)
    g.add_edge(START, "noop")
    g.add_edge("noop", END)
    g.compile(name="tickets")

    assert serde.loads(enum_record(*ref(Priority), "HIGH")) is Priority.HIGH
    assert serde.loads(enum_record(*ref(Region), "EU")) is Region.EU  # Ticket.tags -> Tag.region
    assert serde.loads(enum_record(*ref(Channel), "MAIL")) is Channel.MAIL  # Ticket.notes -> Note.channel
    assert serde.loads(enum_record(*ref(Shade), "DARK")) is Shade.DARK  # a Literal's member
    assert serde.loads(enum_record(*ref(Stage), "DONE")) is Stage.DONE  # a nested TypedDict's field
    assert type(serde.loads(model_record(*ref(Owner), {"name": "o"}))) is Owner  # dict[NewType, Optional]
    assert serde.loads(dataclass_record(*ref(Spot), {"x": 1, "y": 2})) == Spot(1, 2)  # tuple[Spot, ...]
    tree = serde.loads(model_record(*ref(TreeNode), {"name": "root"}))
    assert type(tree) is TreeNode
    # The TypedDict itself is not a stored class (its values are plain dicts).
    refused(dataclass_record(*ref(TicketState), {}), "TicketState")

    ticket = Ticket(
        id=1,
        tags=[Tag(label="t", region=Region.US)],
        notes={"n": Note("hi", Channel.PHONE)},
        priority=Priority.LOW,
        where=(Spot(1, 2),),
        tree=TreeNode(name="r", children=[TreeNode(name="c")]),
    )
    assert serde.loads(serde.dumps({"tickets": [ticket]})) == {"tickets": [ticket]}


def test_a_pydantic_schema_allows_itself_and_its_field_classes() -> None:
    g = StateGraph(ModelState)
    g.add_node("noop", lambda state: None)
    g.add_edge(START, "noop")
    g.add_edge("noop", END)
    g.compile(name="leaves")
    assert type(serde.loads(model_record(*ref(Leaf), {"value": 3}))) is Leaf
    assert type(serde.loads(model_record(*ref(ModelState), {"leaves": []}))) is ModelState


class Carrier(Enum):
    POST = "post"


@dataclasses.dataclass(frozen=True)
class Stop:
    city: str
    carrier: Carrier


class Shipment(BaseModel):
    id: int
    stops: list[Stop]


class RunState(TypedDict, total=False):
    shipment: Shipment
    log: Annotated[list[Stop], operator.add]


def _ship(state: RunState) -> dict[str, Any]:
    stop = Stop("Lyon", Carrier.POST)
    return {"shipment": Shipment(id=7, stops=[stop]), "log": [stop]}


def test_a_workflows_checkpoint_with_schema_classes_reads_back_from_redis(redis_client: redis.Redis) -> None:
    g = StateGraph(RunState)
    g.add_node("ship", _ship)
    g.add_edge(START, "ship")
    g.add_edge("ship", END)
    graph = g.compile(name="run-state", checkpointer=RedisCheckpointStore(redis_client))
    graph.invoke({}, {"thread_id": "t-allow"})
    cp = RedisCheckpointStore(redis_client).get("t-allow")  # a fresh store: values come from Redis
    assert cp is not None
    stop = Stop("Lyon", Carrier.POST)
    assert cp.channel_values == {"shipment": Shipment(id=7, stops=[stop]), "log": [stop]}
    assert type(cp.channel_values["shipment"].stops[0]) is Stop
    assert cp.channel_values["log"][0].carrier is Carrier.POST


# --------------------------------------------------------------------------------------- graphq's own values


def test_graphqs_own_stored_values_load() -> None:
    tw = TaskWrites(
        "task-1",
        "node",
        writes=[("messages", RemoveMessage("m1")), ("total", Overwrite(3))],
        goto=[PendingTask("other", True, {"x": 1})],
        interrupts=[
            Interrupt(
                {"q": "ok?"},
                "0123456789abcdef",
                "node",
                "task-1",
                0,
                "2026-01-01T00:00",
                5,
                response_schema={"type": "string"},
            )
        ],
        resume=["yes"],
    )
    loaded = decode_writes(encode_writes(tw))
    assert loaded == tw
    # Interrupt compares by value and id only (LangGraph's): its other fields must load back too
    assert [dataclasses.astuple(i) for i in loaded.interrupts] == [
        ({"q": "ok?"}, "0123456789abcdef", "node", "task-1", 0, "2026-01-01T00:00", 5, {"type": "string"})
    ]


# ---------------------------------------------------------------------------------------- dumps refuse too


def test_dumping_a_class_that_would_not_load_back_fails_naming_path_and_setting() -> None:
    for value, name in [
        (Unlisted(), "Unlisted"),
        (UnlistedColor.RED, "UnlistedColor"),
        (UnlistedBox(1), "UnlistedBox"),
    ]:
        with pytest.raises(SerializationError) as info:
            serde.dumps({"items": [1, {"v": value}]})
        assert info.value.path == "state.items[1].v"
        assert f"{value.__module__}:{name}" in str(info.value)
        assert SETTING in str(info.value)
        assert "allow_classes" in str(info.value)


def test_a_node_writing_a_class_no_schema_names_fails_the_write_naming_the_key(
    redis_client: redis.Redis,
) -> None:
    class AnyState(TypedDict, total=False):
        payload: Any

    g = StateGraph(AnyState)
    g.add_node("write", lambda state: {"payload": [UnlistedBox(1)]})
    g.add_edge(START, "write")
    g.add_edge("write", END)
    graph = g.compile(name="any-state", checkpointer=RedisCheckpointStore(redis_client))
    with pytest.raises(SerializationError) as info:
        graph.invoke({}, {"thread_id": "t-unlisted"})
    assert info.value.path.startswith("state.payload")
    assert SETTING in str(info.value)


# -------------------------------------------------------------------------------------------- allow_classes


def test_allow_classes_allows_the_class_and_what_its_fields_name() -> None:
    refused(enum_record(*ref(ExplicitLevel), "ONE"), "ExplicitLevel")
    serde.allow_classes(Holder)
    value = Holder(inner=ExplicitInner(ExplicitLevel.ONE))
    assert serde.loads(serde.dumps(value)) == value
    assert serde.loads(enum_record(*ref(ExplicitLevel), "ONE")) is ExplicitLevel.ONE


def test_allow_classes_refuses_what_can_never_be_stored() -> None:
    class Local(Enum):
        A = 1

    for bad in (int, dict, object, "pkg:Thing", TicketState):
        with pytest.raises(TypeError, match="Enum, pydantic BaseModel or dataclass"):
            serde.allow_classes(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not defined at module level"):
        serde.allow_classes(Local)


def test_loading_an_allowed_class_is_a_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    serde.allow_classes(Explicit, Leaf)
    data = serde.dumps([Explicit.ON, Leaf(value=1)] * 3)

    def no_import(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("loads imported something")

    monkeypatch.setattr(importlib, "import_module", no_import)
    monkeypatch.setattr(serde, "_apply_setting", no_import)  # a hit never reaches the miss path
    assert serde.loads(data) == [Explicit.ON, Leaf(value=1)] * 3


# ------------------------------------------------------------------------------ GRAPHQ_SERDE_ALLOWED_CLASSES


def allowed_module(module_dir: Path) -> str:
    name = f"graphq_allowed_{uuid.uuid4().hex[:8]}"
    (module_dir / f"{name}.py").write_text(
        "import enum\n"
        "import pydantic\n"
        "class Mode(enum.Enum):\n"
        "    FAST = 'fast'\n"
        "class Part(enum.Enum):\n"
        "    X = 'x'\n"
        "class Order(pydantic.BaseModel):\n"
        "    class Size(enum.Enum):\n"
        "        S = 's'\n"
        "    size: Size\n"
        "class Other(enum.Enum):\n"
        "    Y = 'y'\n",
        encoding="utf-8",
    )
    return name


def test_a_class_in_the_setting_loads(module_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = allowed_module(module_dir)
    monkeypatch.setenv(SETTING, f" {name}:Mode , {name}:Order,")
    get_settings.cache_clear()
    assert name not in sys.modules
    mode = serde.loads(enum_record(name, "Mode", "FAST"))  # first miss: the setting's entries are imported
    assert type(mode).__qualname__ == "Mode"
    assert mode.value == "fast"
    assert serde.loads(enum_record(name, "Order.Size", "S")).value == "s"  # nested in a named model
    assert serde.loads(serde.dumps(mode)) is mode
    refused(enum_record(name, "Other", "Y"), f"{name}:Other")  # same module, not named


def test_workflow_loading_imports_the_setting_at_startup(
    module_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = allowed_module(module_dir)
    monkeypatch.setenv(SETTING, f"{name}:Part")
    get_settings.cache_clear()
    Registry.load([])
    part = sys.modules[name].Part
    data = enum_record(name, "Part", "X")
    monkeypatch.setattr(serde, "_apply_setting", lambda: pytest.fail("already applied at startup"))
    assert serde.loads(data) is part.X


@pytest.mark.parametrize("value", ["no_colon", "a:b:c", "pkg.:X", "pkg:1x", "os path:X", ":X", "pkg:"])
def test_a_malformed_entry_fails_when_settings_are_read(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SETTING, f"os:PathLike,{value}")
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert str(info.value).startswith(f"{SETTING}: ")
    assert "module:QualName" in str(info.value)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("graphq_no_such_module_xyz:Thing", "cannot import module 'graphq_no_such_module_xyz'"),
        ("enum:NoSuchThing", "module 'enum' has no 'NoSuchThing'"),
        ("os:system", "is not an Enum, a pydantic BaseModel or a dataclass class"),
        ("graphcore:Interrupt", "is class graphcore.types:Interrupt; name it by its own module"),
    ],
)
def test_a_bad_entry_fails_naming_the_setting(
    entry: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SETTING, entry)
    get_settings.cache_clear()
    with pytest.raises(ConfigError) as info:
        Registry.load([])
    assert str(info.value).startswith(f"{SETTING}: entry '{entry}'")
    assert message in str(info.value)
    with pytest.raises(ConfigError, match=SETTING):  # and in a process that loads no workflows
        serde.loads(enum_record("graphq_unknown_mod", "Thing"))


# ------------------------------------------------------------------------------------ another process reads


def test_a_reading_process_needs_the_workflow_to_show_its_classes(
    redis_client: redis.Redis, redis_url: str
) -> None:
    """`graphq runs show` in a fresh process: the run's input holds a model of the workflow's schema."""
    registry = Registry.load(["tests.workflows.hitl"])
    client = Client(redis_client, registry, RQStepQueue(redis_client, Settings(redis_url=redis_url)))
    run_id = client.enqueue("ordering", {"order": Order(id=3)})

    def show(*options: str) -> subprocess.CompletedProcess[str]:
        env = clean_env(GRAPHQ_REDIS_URL=redis_url)
        argv = [sys.executable, "-m", "graphq.cli", *options, "runs", "show", run_id, "--output", "json"]
        return subprocess.run(
            argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
        )

    blind = show()
    assert blind.returncode == 2
    assert f"{Order.__module__}:Order" in blind.stderr
    assert SETTING in blind.stderr
    seeing = show("--workflows", "tests.workflows.hitl")
    assert seeing.returncode == 0, seeing.stderr
    assert '"id": 3' in seeing.stdout
