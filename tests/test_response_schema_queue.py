"""``interrupt(value, response_schema=...)`` on the queue: the request is stored with the JSON
Schema of its answer (a type given to ``interrupt()`` is stored as its JSON Schema, never as the class), the
open request, the request record and the ``interrupt`` event carry it, and the answer is validated by the
type when the asking node runs again. A ``response_schema`` that is neither is refused, naming it."""

from __future__ import annotations

from typing import Any

import pytest

from graphcore import START, StateGraph, interrupt
from graphcore.backend.client import Client
from graphcore.backend.events import read_events
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from graphcore.errors import ConfigError, InvalidUpdateError
from tests.workers import work
from tests.workflows.schema_ask import DECISION_SCHEMA, Items, ask


def _asking(schema_node: Any, name: str) -> Any:
    builder = StateGraph(Items)
    builder.add_node("ask", schema_node)
    builder.add_edge(START, "ask")
    return builder.compile(name=name)


REGISTRY = Registry({"schema-ask": _asking(ask, "schema-ask")})


def test_a_queued_request_keeps_its_response_schema_and_the_answer_is_validated(client: Client) -> None:
    run_id = client.enqueue("schema-ask", {"items": []}, thread_id="q")
    work(client)
    assert client.get_run(run_id).status == RunStatus.AWAITING_INPUT
    (asked,) = client.requests(run_id)
    assert (asked.value, asked.response_schema) == ("ok?", DECISION_SCHEMA)
    (record,) = client.run_requests(run_id)
    assert (record.status, record.response_schema) == ("open", DECISION_SCHEMA)
    (event,) = [e.data for e in read_events(client.kv, "q", run_id) if e.mode == "interrupt"]
    assert [r["response_schema"] for r in event["requests"]] == [DECISION_SCHEMA]
    client.answer(run_id, {"ok": True, "note": "fine"})
    work(client)
    done = client.get_run(run_id)
    assert (done.status, done.result) == (RunStatus.COMPLETED, {"items": ["Decision(ok=True, note='fine')"]})
    (record,) = client.run_requests(run_id)
    assert (record.status, record.response_schema) == ("answered", DECISION_SCHEMA)


def test_a_response_schema_that_is_no_schema_is_refused_naming_it() -> None:
    def bad(state: Items) -> dict[str, Any]:
        return {"items": [interrupt("ok?", response_schema=42)]}

    graph = _asking(bad, "schema-bad")
    with pytest.raises(ConfigError) as info:
        graph.invoke({"items": []})
    assert str(info.value) == (
        "interrupt(response_schema=...): must be a JSON Schema dict or a type pydantic validates (a model, a "
        "dataclass, a TypedDict); got 42 (PydanticSchemaGenerationError)"
    )


def test_a_wrong_answer_is_refused_before_it_is_stored_and_the_request_stays_open(client: Client) -> None:
    """In process the call that answers wrongly raises and the request stays open (LangGraph's); on the
    queue too: ``answer`` checks the answer against the request's JSON Schema before it stores it (it used
    to store it, and the asking node failed the run when it ran again). The same for a second answer."""
    run_id = client.enqueue("schema-ask", {"items": []}, thread_id="q")
    work(client)
    (asked,) = client.requests(run_id)
    with pytest.raises(InvalidUpdateError) as refused:
        client.answer(run_id, {"ok": "maybe"})
    assert str(refused.value) == f"answer to {asked.id} at $.ok: 'maybe' is not of type 'boolean'"
    with pytest.raises(InvalidUpdateError) as missing:
        client.answer(run_id, {"note": "n"})
    assert str(missing.value) == f"answer to {asked.id} at $: 'ok' is a required property"
    assert client.get_run(run_id).status == RunStatus.AWAITING_INPUT
    assert [r.id for r in client.requests(run_id)] == [asked.id]
    client.answer(run_id, {"ok": True})
    work(client)
    assert client.get_run(run_id).result == {"items": ["Decision(ok=True, note='')"]}
    with pytest.raises(InvalidUpdateError) as again:
        client.answer_again(run_id, asked.id, {"ok": 3})
    assert str(again.value) == f"answer to {asked.id} at $.ok: 3 is not of type 'boolean'"
    branch = client.answer_again(run_id, asked.id, {"ok": False, "note": "no"})
    work(client)
    assert client.get_run(branch).result == {"items": ["Decision(ok=False, note='no')"]}
