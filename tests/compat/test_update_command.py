"""``update_state`` / ``bulk_update_state`` with a ``Command`` as the values (LangGraph's
``test_batch_update_as_input``): the update is what the node returning that Command would write, its
``goto`` (names or Sends) the next tasks. The same on the queue (``client.update_state``)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

from graphcore.backend.client import Client
from graphcore.engine.registry import Registry
from tests.compat.conftest import Imports
from tests.workers import work
from tests.workflows import mapping

REGISTRY = Registry.load(["tests.workflows.mapping"])


class State(TypedDict):
    foo: str
    tasks: Annotated[list[int], operator.add]


def _mapping(lg: Imports) -> Any:
    """LangGraph's test graph: agent → map, map returns a Command sending three ``task``s."""

    def map_(state: State) -> Any:
        return _fan(lg, "map")

    builder = lg.StateGraph(State)
    builder.add_node("agent", lambda s: {"foo": "agent"})
    builder.add_node("map", map_)
    builder.add_node("task", lambda s: {"tasks": [s["index"]]})
    builder.add_edge(lg.START, "agent")
    builder.add_edge("agent", "map")
    return builder.compile(checkpointer=lg.InMemorySaver())


def _fan(lg: Imports, foo: str) -> Any:
    return lg.Command(goto=[lg.Send("task", {"index": i}) for i in range(3)], update={"foo": foo})


def test_bulk_update_with_a_command_as_the_node_that_returns_it(lg: Imports) -> None:
    """LangGraph: a super-step's StateUpdate holding a Command writes its update and schedules its Sends;
    the next super-step's updates as ``task`` finish the run's state."""
    graph, config = _mapping(lg), {"configurable": {"thread_id": "2"}}
    graph.bulk_update_state(
        config,
        [
            [lg.StateUpdate({"foo": "agent", "tasks": []}, "agent")],
            [lg.StateUpdate(_fan(lg, "map"), "map")],
        ],
    )
    state = graph.get_state(config)
    assert (state.values, state.next) == ({"foo": "map", "tasks": []}, ("task", "task", "task"))
    graph.bulk_update_state(config, [[lg.StateUpdate({"tasks": [i]}, "task") for i in range(3)]])
    assert graph.get_state(config).values == {"foo": "map", "tasks": [0, 1, 2]}


def test_update_state_with_a_command_runs_its_sends_next(lg: Imports) -> None:
    """LangGraph: update_state(config, Command(...), as_node="map") after agent ran; invoke(None) runs the
    Sends' tasks."""
    graph, config = _mapping(lg), {"configurable": {"thread_id": "1"}}
    graph.update_state(config, {"foo": "agent", "tasks": []}, as_node="agent")
    graph.update_state(config, _fan(lg, "edited"), as_node="map")
    assert graph.get_state(config).next == ("task", "task", "task")
    assert graph.invoke(None, config) == {"foo": "edited", "tasks": [0, 1, 2]}


def test_a_command_going_to_a_node_by_name(lg: Imports) -> None:
    """LangGraph: ``Command(goto="agent", update=...)`` as ``map``: agent runs next, then map again."""
    graph, config = _mapping(lg), {"configurable": {"thread_id": "3"}}
    graph.update_state(config, {"foo": "x", "tasks": [9]}, as_node="agent")
    graph.update_state(config, lg.Command(goto="agent", update={"tasks": [7]}), as_node="map")
    state = graph.get_state(config)
    assert (state.values, state.next) == ({"foo": "x", "tasks": [9, 7]}, ("agent",))
    assert graph.invoke(None, config) == {"foo": "map", "tasks": [9, 7, 0, 1, 2]}


def test_a_command_to_a_node_the_graph_does_not_have_is_refused() -> None:
    """graphq only: InvalidUpdateError naming it, as for a node that returns it (LangGraph drops the goto
    with a warning)."""
    from graphcore import Command, InvalidUpdateError
    from tests.compat.conftest import Imports

    graph, config = _mapping(Imports("graphq")), {"configurable": {"thread_id": "4"}}
    graph.update_state(config, {"foo": "x", "tasks": []}, as_node="agent")
    with pytest.raises(InvalidUpdateError) as refused:
        graph.update_state(config, Command(goto="nope"), as_node="map")
    assert str(refused.value) == "node 'map' returned Command(goto=...) to unknown node(s) ['nope']"


def test_update_state_with_a_command_on_the_queue(client: Client) -> None:
    """graphq's queue: ``client.update_state`` with a Command writes its update and its Sends, the next
    queued run (no input) runs them."""
    client.enqueue("mapping", {"foo": "start", "tasks": []}, thread_id="q")
    work(client)
    client.update_state("mapping", "q", {"foo": "agent"}, as_node="agent")
    cp = client.update_state("mapping", "q", mapping.fan("q"), as_node="map")
    assert (cp.channel_values, [t.node for t in cp.next_tasks]) == (
        {"foo": "q", "tasks": [0, 1, 2]},
        ["task", "task", "task"],
    )
    again = client.enqueue("mapping", None, thread_id="q")
    work(client)
    assert client.get_run(again).result == {"foo": "q", "tasks": [0, 1, 2, 0, 1, 2]}


def test_a_commands_update_is_type_checked_on_the_queue(client: Client) -> None:
    """graphq's queue: a Command's update is checked as an update's values are (path ``values.update``);
    nothing is written."""
    from graphcore import Command
    from graphcore.engine.inputs import InputTypeError

    client.enqueue("mapping", {"foo": "start", "tasks": []}, thread_id="t")
    work(client)
    head = client.get_state("t")
    with pytest.raises(InputTypeError) as refused:
        client.update_state("mapping", "t", Command(update={"tasks": "no"}, goto="agent"), "map")
    assert str(refused.value) == "values.update.tasks: Input should be a valid list (got 'no')"
    assert client.get_state("t").id == head.id


def test_bulk_update_without_supersteps_or_updates_is_refused(lg: Imports) -> None:
    """LangGraph: ValueErrors saying "No supersteps provided" / "No updates provided" (LangGraph's
    ``test_bulk_state_updates`` matches these words)."""
    graph, config = _mapping(lg), {"configurable": {"thread_id": "5"}}
    with pytest.raises(ValueError, match="No supersteps provided"):
        graph.bulk_update_state(config, [])
    with pytest.raises(ValueError, match="No updates provided"):
        graph.bulk_update_state(config, [[], []])
