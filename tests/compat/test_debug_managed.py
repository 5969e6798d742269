"""``stream_mode="debug"`` and ``"tasks"``: a task's start payload shows its input as the node gets
it, managed values included (``remaining_steps``, ``is_last_step``), and the input checkpoint's debug event
comes before the first ``values`` event, as LangGraph's. Each case runs with LangGraph's imports and with
graphq's; LangGraph's values are the expected ones."""

from typing import Annotated, Any, TypedDict

import pytest

from tests.compat.conftest import Imports
from tests.workflows.lc_agent import ScriptedModel

pytestmark = pytest.mark.filterwarnings("ignore:create_react_agent has been moved")


def _row(mode: str, chunk: Any) -> tuple[Any, ...]:
    """A ``(mode, chunk)`` item as ``(values, n messages)``, ``(step, "checkpoint")``, ``(step, "task",
    node, input keys, remaining_steps)`` (a ``tools`` task: of the state sent with its call) or ``(step,
    "task_result")``."""
    if mode == "values":
        return ("values", len(chunk["messages"]))
    if chunk["type"] != "task":
        return (chunk["step"], chunk["type"])
    given = chunk["payload"]["input"]
    state = given.get("state", given)
    return (chunk["step"], "task", chunk["payload"]["name"], sorted(state), state["remaining_steps"])


def test_a_react_agents_debug_tasks_show_remaining_steps(lg: Imports) -> None:
    """LangGraph: the step -1 checkpoint first; the agent's input and the state sent to each tools task
    (a tool with the state injected) hold ``remaining_steps`` (the run's ``recursion_limit`` 7, less the
    super-steps taken)."""
    calls = [{"name": "count", "args": {}, "id": "c1"}]
    model = ScriptedModel(
        responses=[lg.AIMessage("", id="a1", tool_calls=calls), lg.AIMessage("done", id="a2")]
    )

    def count(state: Annotated[dict[str, Any], lg.InjectedState]) -> int:
        """Count the messages."""
        return len(state["messages"])

    agent = lg.create_react_agent(model, [count], checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 7}
    items = agent.stream({"messages": [("user", "hi")]}, config, stream_mode=["values", "debug"])
    assert [_row(*item) for item in items] == [
        (-1, "checkpoint"),
        ("values", 1),
        (0, "checkpoint"),
        (1, "task", "agent", ["messages", "remaining_steps"], 6),
        (1, "task_result"),
        ("values", 2),
        (1, "checkpoint"),
        (2, "task", "tools", ["messages", "remaining_steps"], 6),
        (2, "task_result"),
        ("values", 3),
        (2, "checkpoint"),
        (3, "task", "agent", ["messages", "remaining_steps"], 4),
        (3, "task_result"),
        ("values", 4),
        (3, "checkpoint"),
    ]


def test_tasks_start_payloads_hold_managed_values_on_a_resume(lg: Imports) -> None:
    """LangGraph: a ``tasks`` start payload's input holds the managed values the node gets, at a run's
    first steps and after a resume (which LangGraph counts from the checkpoint's step: 4 left)."""

    class State(TypedDict):
        log: list[str]
        left: lg.RemainingSteps
        last: lg.IsLastStep

    def ask(state: State) -> dict[str, Any]:
        return {"log": [lg.interrupt("go?")]}

    builder = lg.StateGraph(State)
    builder.add_node("a", lambda state: {"log": ["a"]})
    builder.add_node("ask", ask)
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "ask")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 3}

    def starts(given: Any) -> list[tuple[str, dict[str, Any]]]:
        items = graph.stream(given, config, stream_mode="tasks")
        return [(c["name"], c["input"]) for c in items if "input" in c]

    assert starts({"log": []}) == [
        ("a", {"log": [], "left": 2, "last": False}),
        ("ask", {"log": ["a"], "left": 1, "last": True}),
    ]
    assert starts(lg.Command(resume="yes")) == [("ask", {"log": ["a"], "left": 4, "last": False})]


def test_the_input_checkpoint_comes_before_the_first_values(lg: Imports) -> None:
    """LangGraph: with ``checkpoints`` and ``values``, the step -1 checkpoint, then the input's ``values``,
    then the step 0 checkpoint (on a thread that has run before too)."""

    class State(TypedDict):
        log: list[str]

    builder = lg.StateGraph(State)
    builder.add_node("a", lambda state: {"log": [*state["log"], "a"]})
    builder.add_edge(lg.START, "a")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}

    def rows(given: Any) -> list[Any]:
        items = graph.stream(given, config, stream_mode=["values", "checkpoints"])
        return [c["metadata"]["step"] if mode == "checkpoints" else c["log"] for mode, c in items]

    assert rows({"log": ["x"]}) == [-1, ["x"], 0, ["x", "a"], 1]
    assert rows({"log": ["y"]}) == [2, ["y"], 3, ["y", "a"], 4]
