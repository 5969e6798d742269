"""Values at rest written by older graphq versions still load. The bytes are built here by hand in the
exact layout graphq wrote at 87099eb (serde format 1; pending writes as graphcore.checkpoints.layout's
``[task_id, node, writes, goto, interrupts, resume]``), not with today's ``dumps``:

* ``RemoveMessage`` was the dataclass ``graphcore.engine.channels:RemoveMessage`` ``{id}``; it is now the
  pydantic model ``graphcore.messages.RemoveMessage``, and the old name loads as it (serde ``_MOVED``);
* ``Interrupt`` kept its name and its seven fields (since then its graphq-own fields have defaults and stay
  out of ``==``): the old layout loads with every field, and one written before it had
  ``deadline_ms`` with that field's default."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, TypedDict

import msgpack
import pytest

from graphcore import START, StateGraph
from graphcore.checkpoints import serde
from graphcore.checkpoints.layout import decode_writes
from graphcore.errors import SerializationError
from graphcore.messages import AnyMessage, HumanMessage, RemoveMessage, add_messages
from graphcore.types import Interrupt, TaskWrites

EXT_DATACLASS = 13
INTERRUPT_FIELDS = {
    "id": "0123456789abcdef",
    "value": {"q": "ok?"},
    "node": "ask",
    "task_id": "task-1",
    "index": 0,
    "created_at": "2026-01-01T00:00:00+00:00",
    "deadline_ms": 5,
}


def _stored(obj: Any) -> bytes:
    """Serde format 1: the version byte 0x01, then one msgpack object."""
    return b"\x01" + msgpack.packb(obj, use_bin_type=True)


def _old_dataclass(module: str, qualname: str, fields: dict[str, Any]) -> msgpack.ExtType:
    return msgpack.ExtType(EXT_DATACLASS, msgpack.packb([module, qualname, fields], use_bin_type=True))


OLD_REMOVE = _old_dataclass("graphcore.engine.channels", "RemoveMessage", {"id": "m1"})
OLD_INTERRUPT = _old_dataclass("graphcore.types", "Interrupt", INTERRUPT_FIELDS)


def test_an_old_remove_message_loads_as_the_new_class() -> None:
    loaded = serde.loads(_stored(OLD_REMOVE))
    assert type(loaded) is RemoveMessage
    assert loaded == RemoveMessage(id="m1")
    assert (loaded.id, loaded.type, loaded.content) == ("m1", "remove", "")
    assert serde.loads(serde.dumps(loaded)) == loaded  # written again under its new name


def test_an_old_pending_write_with_a_remove_message_and_an_interrupt_loads() -> None:
    blob = _stored(
        ["task-1", "ask", [["messages", _stored(OLD_REMOVE)]], [], [_stored(OLD_INTERRUPT)], _stored(None)]
    )
    loaded = decode_writes(blob)
    assert loaded == TaskWrites(
        "task-1",
        "ask",
        [("messages", RemoveMessage(id="m1"))],
        [],
        [Interrupt(id="0123456789abcdef", value={"q": "ok?"})],
        None,
    )
    assert [type(v) for _, v in loaded.writes] == [RemoveMessage]
    (interrupt,) = loaded.interrupts
    assert type(interrupt) is Interrupt
    # graphq's own fields too, not only == ones; response_schema loads with its default
    assert dataclasses.asdict(interrupt) == {**INTERRUPT_FIELDS, "response_schema": None}


def test_an_old_remove_message_still_removes_the_message() -> None:
    class S(TypedDict):
        messages: Annotated[list[AnyMessage], add_messages]

    removal = serde.loads(_stored(OLD_REMOVE))
    g = StateGraph(S)
    g.add_node("drop", lambda s: {"messages": [removal]})
    g.add_edge(START, "drop")
    result = g.compile().invoke({"messages": [HumanMessage("hi", id="m1"), HumanMessage("yo", id="m2")]})
    assert result == {"messages": [HumanMessage("yo", id="m2")]}


def test_an_interrupt_stored_before_deadline_ms_existed_loads_with_its_default() -> None:
    fields = {k: v for k, v in INTERRUPT_FIELDS.items() if k != "deadline_ms"}
    loaded = serde.loads(_stored(_old_dataclass("graphcore.types", "Interrupt", fields)))
    assert dataclasses.asdict(loaded) == {**fields, "deadline_ms": None, "response_schema": None}


def test_only_the_moved_name_is_an_alias() -> None:
    with pytest.raises(SerializationError) as info:
        serde.loads(_stored(_old_dataclass("graphcore.engine.channels", "Overwrite", {"value": 1})))
    assert "class graphcore.engine.channels:Overwrite (a dataclass) is not allowed" in str(info.value)


# An Interrupt as ``serde.dumps`` wrote it before ``value`` became its first field: stored by
# field name, so the new field order loads it unchanged. Hex of the old code's output, not rebuilt with dumps.
OLD_DUMPED_INTERRUPT = bytes.fromhex(
    "01c78b0d93af6772617068636f72652e7479706573a9496e7465727275707487a26964b030313233343536373839616263646566"
    "a576616c756581a171a36f6b3fa46e6f6465a361736ba77461736b5f6964a3742d31a5696e64657802aa637265617465645f6174"
    "b9323032362d30312d30315430303a30303a30302b30303a3030ab646561646c696e655f6d7305"
)


def test_an_interrupt_dumped_before_value_came_first_loads_with_every_field() -> None:
    loaded = serde.loads(OLD_DUMPED_INTERRUPT)
    assert type(loaded) is Interrupt
    assert dataclasses.asdict(loaded) == {
        "value": {"q": "ok?"},
        "id": "0123456789abcdef",
        "node": "ask",
        "task_id": "t-1",
        "index": 2,
        "created_at": "2026-01-01T00:00:00+00:00",
        "deadline_ms": 5,
        "response_schema": None,
    }
    assert loaded == Interrupt({"q": "ok?"}, id="0123456789abcdef")
    assert serde.loads(serde.dumps(loaded)) == loaded
