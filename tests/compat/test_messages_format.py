"""``add_messages(format="langchain-openai")`` (LangGraph's ``test_messages_state_format_openai``):
the channel keeps its messages in OpenAI's format (content a string or ``text`` / ``image_url`` blocks, tool
results as ``ToolMessage``s), in process and on the queue; an unknown format is a ValueError, and without
langchain-core graphq refuses the format with an ImportError naming what to install."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Annotated, Any, TypedDict

import pytest

from graphcore.backend.client import Client
from graphcore.engine.registry import Registry
from tests.compat.conftest import Imports
from tests.workers import work
from tests.workflows.openai_format import reply

REGISTRY = Registry.load(["tests.workflows.openai_format"])
IMAGE_URL = {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,1234"}}


def _expected(lg: Imports) -> list[Any]:
    """LangGraph's result for the input "meow" and ``reply``'s messages, ids cleared."""
    return [
        lg.HumanMessage(content="meow"),
        lg.HumanMessage(content=[{"type": "text", "text": "look:"}, IMAGE_URL]),
        lg.AIMessage(
            content="", tool_calls=[{"name": "foo", "type": "tool_call", "args": {"bar": "baz"}, "id": "1"}]
        ),
        lg.ToolMessage(content=[IMAGE_URL], tool_call_id="1"),
    ]


def _without_ids(messages: list[Any]) -> list[Any]:
    for m in messages:
        m.id = None
    return messages


def test_the_channel_keeps_messages_in_openais_format(lg: Imports) -> None:
    reducer = lg.add_messages(format="langchain-openai")
    State = TypedDict("State", {"messages": Annotated[list[lg.AnyMessage], reducer]})  # type: ignore[misc]  # noqa: UP013 (lg is local)
    builder = lg.StateGraph(State)
    builder.add_node("reply", reply)
    builder.add_edge(lg.START, "reply")
    result = builder.compile().invoke({"messages": [("user", "meow")]})
    assert _without_ids(result["messages"]) == _expected(lg)


def test_the_reducer_called_with_a_format(lg: Imports) -> None:
    """LangGraph: ``add_messages(left, right, format=...)`` merges, then formats (one text block: a
    string)."""
    left = [lg.HumanMessage(content="a", id="1")]
    right = [lg.AIMessage(content=[{"type": "text", "text": "b"}], id="2")]
    merged = lg.add_messages(left, right, format="langchain-openai")
    assert [(type(m).__name__, m.content) for m in merged] == [
        ("HumanMessage", "a"),
        ("AIMessage", "b"),
    ]


def test_an_unknown_format_is_a_value_error(lg: Imports) -> None:
    with pytest.raises(ValueError):
        lg.add_messages([("user", "a")], [("user", "b")], format="openai")


def test_the_format_on_the_queue(client: Client) -> None:
    run_id = client.enqueue("openai-format", {"messages": [("user", "meow")]})
    work(client)
    from tests.compat.conftest import Imports

    assert _without_ids(client.get_run(run_id).result["messages"]) == _expected(Imports("graphq"))


WITHOUT_LANGCHAIN = """
import json, sys
sys.modules["langchain_core"] = None
from graphcore import add_messages
for call in (lambda: add_messages(format="langchain-openai"),
             lambda: add_messages([("user", "a")], [("user", "b")], format="langchain-openai")):
    try:
        call()
    except ImportError as exc:
        print(json.dumps([type(exc).__name__, str(exc)]))
"""


def test_without_langchain_core_the_format_is_refused() -> None:
    """graphq only (LangGraph needs langchain-core): an ImportError naming the extra to install."""
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_LANGCHAIN], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    message = (
        "add_messages(format='langchain-openai') needs langchain-core (its convert_to_openai_messages): "
        "pip install graphq[langchain]"
    )
    assert [json.loads(line) for line in done.stdout.splitlines()] == [["ImportError", message]] * 2
