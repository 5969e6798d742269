"""Managed values: ``RemainingSteps`` and ``IsLastStep`` state keys, computed for each super-step
from the run's limit (LangGraph's ``recursion_limit`` R, graphq's ``max_super_steps`` R - 1) and never
stored; with them ``create_react_agent`` answers "Sorry, need more steps..." where the limit would stop
the run. Each case runs with LangGraph's imports and with graphq's, and the queued cases give the same."""

import operator
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from pydantic import BaseModel
from typing_extensions import TypedDict

from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from tests.compat.conftest import Imports
from tests.workers import work
from tests.workflows.lc_agent import ToolCallingFakeModel
from tests.workflows.managed import build, build_asking, build_entry, build_reader

pytestmark = pytest.mark.filterwarnings("ignore:create_react_agent has been moved")

REGISTRY = Registry.load(["tests.workflows.managed", "tests.workflows.lc_agent"])

COUNTED_AT_5 = [[4, False], [3, False], [2, False], [1, True]]
"""What the loop records under LangGraph's ``recursion_limit=5`` (graphq's ``max_super_steps=4``)."""

SORRY = "Sorry, need more steps to process this request."


def test_remaining_steps_count_down_to_the_last_step(lg: Imports) -> None:
    """LangGraph: the k-th super-step of a call sees ``remaining_steps`` R - k and ``is_last_step`` only
    when that is 1; a router reads them too (the loop ends at the last step, no recursion error)."""
    graph = build(lg).compile(checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 5}
    assert graph.invoke({"seen": []}, config) == {"seen": COUNTED_AT_5}
    assert graph.invoke({"seen": []}, config) == {"seen": COUNTED_AT_5 * 2}  # each call counts afresh


@pytest.mark.parametrize(("limit", "seen"), [(5, ["big"]), (4, ["small"])])
def test_a_router_from_start_sees_the_input_steps_count(lg: Imports, limit: int, seen: list[str]) -> None:
    """LangGraph: a router from START (the input's step, before the first super-step) sees
    ``remaining_steps`` R."""
    graph = build_entry(lg).compile()
    assert graph.invoke({"seen": []}, {"recursion_limit": limit}) == {"seen": seen}


def test_managed_values_are_never_stored_nor_streamed(lg: Imports) -> None:
    """LangGraph: a managed key is no channel: not in the saved state, the ``values`` events or the
    result; an input giving one is ignored."""
    graph = build(lg).compile(checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 3}
    given = {"seen": [], "remaining_steps": 99, "is_last_step": True}
    assert list(graph.stream(given, config, stream_mode="values")) == [
        {"seen": []},
        {"seen": [[2, False]]},
        {"seen": [[2, False], [1, True]]},
    ]
    assert graph.get_state(config).values == {"seen": [[2, False], [1, True]]}


def test_a_pydantic_state_gets_the_remaining_steps(lg: Imports) -> None:
    """LangGraph: a model field annotated ``RemainingSteps`` (its default unused) holds the steps left."""

    class Model(BaseModel):
        seen: Annotated[list[int], operator.add] = []
        remaining_steps: lg.RemainingSteps = 25  # type: ignore[name-defined]

    builder = lg.StateGraph(Model)
    builder.add_node("n", lambda state: {"seen": [state.remaining_steps]})
    builder.add_edge(lg.START, "n")
    assert builder.compile().invoke({"seen": []}, {"recursion_limit": 7}) == {"seen": [6]}


def test_a_node_with_an_input_schema_reads_them(lg: Imports) -> None:
    """LangGraph: a node whose own input schema declares the managed key reads it."""

    class State(TypedDict):
        seen: Annotated[list[int], operator.add]

    class Reads(TypedDict):
        remaining_steps: lg.RemainingSteps  # type: ignore[name-defined]

    builder = lg.StateGraph(State)
    builder.add_node("n", lambda state: {"seen": [state["remaining_steps"]]}, input_schema=Reads)
    builder.add_edge(lg.START, "n")
    assert builder.compile().invoke({"seen": []}, {"recursion_limit": 4}) == {"seen": [3]}


def always_calls_a_tool() -> ToolCallingFakeModel:
    calls = [{"name": "lookup", "args": {"city": "sf"}, "id": "c1"}]
    return ToolCallingFakeModel(responses=[AIMessage("", id=f"a{n}", tool_calls=calls) for n in (1, 2, 3)])


def lookup(city: str) -> str:
    """Look a city's weather up."""
    return f"sunny in {city}"


def test_the_react_agent_says_it_needs_more_steps(lg: Imports) -> None:
    """LangGraph: when fewer than 2 super-steps are left for a reply that calls tools, the agent's reply is
    "Sorry, need more steps..." (the reply's id, no tool calls) and the run ends instead of failing."""
    agent = lg.create_react_agent(always_calls_a_tool(), [lookup])
    out = agent.invoke({"messages": [HumanMessage("weather?", id="h1")]}, {"recursion_limit": 4})
    assert [(m.type, m.content, m.id, getattr(m, "tool_calls", None)) for m in out["messages"]] == [
        ("human", "weather?", "h1", None),
        ("ai", "", "a1", [{"name": "lookup", "args": {"city": "sf"}, "id": "c1", "type": "tool_call"}]),
        ("tool", "sunny in sf", out["messages"][2].id, None),
        ("ai", SORRY, "a2", []),
    ]
    assert list(out) == ["messages"]


def test_without_a_limit_the_first_step_has_langgraphs_default_budget(lg: Imports) -> None:
    """LangGraph 1.x's default ``recursion_limit`` is 10007: a run's first super-step has 10006 steps left
    (graphq's default ``GRAPHQ_MAX_SUPER_STEPS``, the same bound)."""
    graph = build_reader(lg).compile()
    assert graph.invoke({"seen": []}) == {"seen": [10006]}


def test_a_queued_run_without_a_limit_has_the_same_default_budget(client: Client) -> None:
    """On the queue too: no ``max_super_steps`` in the run's config, LangGraph's default budget."""
    run_id = client.enqueue("managed_reader", {"seen": []})
    work(client)
    run = client.get_run(run_id)
    assert run.status == RunStatus.COMPLETED, run.error
    assert run.result == {"seen": [10006]}


def test_a_queued_run_counts_down_from_its_limit(client: Client) -> None:
    """On the queue the run option ``max_super_steps`` (LangGraph's ``recursion_limit`` R - 1) is the
    budget: the same values as in process, and none stored."""
    run_id = client.enqueue("managed_loop", {"seen": []}, config={"max_super_steps": 4})
    work(client)
    run = client.get_run(run_id)
    assert run.status == RunStatus.COMPLETED, run.error
    assert run.result == {"seen": COUNTED_AT_5}


@pytest.mark.parametrize(("steps", "seen"), [(4, ["big"]), (3, ["small"])])
def test_a_queued_runs_router_from_start_sees_its_count(client: Client, steps: int, seen: list[str]) -> None:
    """On the queue a router from START sees ``max_super_steps`` + 1, as in process."""
    run_id = client.enqueue("managed_entry", {"seen": []}, config={"max_super_steps": steps})
    work(client)
    run = client.get_run(run_id)
    assert run.status == RunStatus.COMPLETED, run.error
    assert run.result == {"seen": seen}


def test_a_queued_react_agent_says_it_needs_more_steps(client: Client) -> None:
    """graphq's ``create_react_agent`` on the queue, its run allowed one super-step
    (``recursion_limit`` 2): the model's tool-calling reply becomes the "need more steps" answer."""
    question = {"messages": [HumanMessage("2+3?", id="h1")]}
    run_id = client.enqueue("lc_react", question, config={"recursion_limit": 2})
    work(client)
    run = client.get_run(run_id)
    assert run.status == RunStatus.COMPLETED, run.error
    assert run.result is not None
    assert [
        (m.type, m.content, m.tool_calls if m.type == "ai" else None) for m in run.result["messages"]
    ] == [
        ("human", "2+3?", None),
        ("ai", SORRY, []),
    ]
    assert list(run.result) == ["messages"]


def test_a_call_that_answers_counts_from_the_limit_plus_one(lg: Imports) -> None:
    """LangGraph: a call that answers an interrupt (``Command(resume=...)``) spends no input checkpoint nor
    ``__start__`` step: its first super-step sees ``remaining_steps`` R + 1, its last 1 (``is_last_step``),
    R + 1 super-steps; the call before counted as any first call."""
    graph = build_asking(lg).compile(checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 4}
    assert graph.invoke({"seen": []}, config)["seen"] == []
    assert graph.invoke(lg.Command(resume="yes"), config) == {"seen": ANSWERED_AT_4}
    assert graph.invoke({"seen": []}, config) == {"seen": [*ANSWERED_AT_4, [3, False], [2, False], [1, True]]}


ANSWERED_AT_4 = [[5, False], [4, False], [3, False], [2, False], [1, True]]
"""What the loop records in the call that answers, under ``recursion_limit=4`` (``max_super_steps=3``)."""


def test_a_call_that_answers_runs_out_of_steps_after_the_limit_plus_one(lg: Imports) -> None:
    """LangGraph: an endless loop in a call that answers runs R + 1 super-steps (the first seeing R + 1, the
    last 1) and ends with the recursion error, naming the limit."""

    class State(TypedDict):
        seen: Annotated[list[int], operator.add]
        remaining_steps: lg.RemainingSteps  # type: ignore[name-defined]

    def ask_once(state: State) -> dict[str, list[int]]:
        if not state["seen"]:
            lg.interrupt("go on?")
        return {"seen": [state["remaining_steps"]]}

    builder = lg.StateGraph(State)
    builder.add_node("n", ask_once)
    builder.add_edge(lg.START, "n")
    builder.add_edge("n", "n")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 4}
    graph.invoke({"seen": []}, config)
    with pytest.raises(lg.GraphRecursionError) as caught:
        graph.invoke(lg.Command(resume="yes"), config)
    seen = graph.get_state(config).values["seen"]
    assert seen[:5] == [5, 4, 3, 2, 1]  # LangGraph then runs one seeing 0 before it raises, as in any call
    if not lg.is_langgraph:
        assert str(caught.value).startswith(
            "run needs more than max_super_steps=3 super-steps (5 in a call without input) "
            "(next tasks: ['n'])"
        )


def test_a_subgraph_counts_with_its_parents_limit(lg: Imports) -> None:
    """LangGraph: a graph invoked in a node, or run as a node, counts its own super-steps with its parent's
    ``recursion_limit``; one that goes on where it asked, in the call that answers, counts from R + 1."""

    class State(TypedDict):
        seen: Annotated[list[Any], operator.add]

    reader, asking = build_reader(lg).compile(), build_asking(lg).compile()
    invoking = lg.StateGraph(State)
    invoking.add_node("read", lambda state: {"seen": reader.invoke({"seen": []})["seen"]})
    invoking.add_node("ask", lambda state: {"seen": asking.invoke({"seen": []})["seen"]})
    invoking.add_edge(lg.START, "read")
    invoking.add_edge("read", "ask")
    as_node = lg.StateGraph(State)
    as_node.add_node("ask", asking)
    as_node.add_edge(lg.START, "ask")
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 4}
    for builder, first in ((invoking, [3]), (as_node, [])):
        graph = builder.compile(checkpointer=lg.InMemorySaver())
        assert graph.invoke({"seen": []}, config)["seen"] == first
        assert graph.invoke(lg.Command(resume="yes"), config) == {"seen": [*first, *ANSWERED_AT_4]}


def test_a_call_past_a_breakpoint_counts_from_the_limit_plus_one(lg: Imports) -> None:
    """LangGraph: ``invoke(None)`` past a static breakpoint goes on without input: it counts from R + 1."""
    graph = build(lg).compile(checkpointer=lg.InMemorySaver(), interrupt_before=["count"])
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 4}
    assert graph.invoke({"seen": []}, config) == {"seen": []}
    assert graph.invoke(None, config) == {"seen": [[5, False]]}  # it stops before the next `count` again


@pytest.mark.parametrize(("build_it", "seen"), [(build_reader, [4]), (build_entry, ["big"])])
def test_a_call_applying_a_stored_input_counts_from_the_limit_plus_one(
    lg: Imports, build_it: Any, seen: list[Any]
) -> None:
    """LangGraph: ``invoke(None)`` on an input checkpoint (``update_state(..., as_node="__input__")``) spends
    its ``__start__`` step but no input checkpoint: a router from START sees R + 1, the first node R."""
    graph = build_it(lg).compile(checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 4}
    graph.update_state(config, {"seen": []}, as_node="__input__")
    assert graph.invoke(None, config) == {"seen": seen}


@pytest.mark.parametrize(
    ("workflow", "seen"), [("managed_reader", [3, 4]), ("managed_entry", ["small", "big"])]
)
def test_a_queued_run_applying_a_stored_input_counts_as_in_process(
    client: Client, workflow: str, seen: list[Any]
) -> None:
    """On the queue a run without input on a thread whose head is an input checkpoint (written by
    ``update_state`` after a first run) counts as in process."""
    config = {"max_super_steps": 3}
    client.enqueue(workflow, {"seen": []}, thread_id="q", config=config)
    work(client)
    client.update_state(workflow, "q", {"seen": []}, as_node="__input__")
    run_id = client.enqueue(workflow, None, thread_id="q", config=config)
    work(client)
    run = client.get_run(run_id)
    assert run.status == RunStatus.COMPLETED, run.error
    assert run.result == {"seen": seen}  # the first run's, then this one's


def test_a_queued_run_let_past_a_breakpoint_counts_from_the_limit_plus_one(client: Client) -> None:
    """On the queue a resume past a breakpoint continues the run: its step counts as LangGraph's
    ``invoke(None)`` does, then the run stops before the next ``count`` again."""
    run_id = client.enqueue("managed_stops", {"seen": []}, thread_id="q", config={"max_super_steps": 3})
    work(client)
    assert client.get_run(run_id).status == RunStatus.AWAITING_INPUT
    assert client.resume(run_id) == run_id
    work(client)
    assert client.get_run(run_id).status == RunStatus.AWAITING_INPUT
    assert client.get_state("q").channel_values == {"seen": [[5, False]]}
    for _ in range(2):  # later resumes go on at run steps 1 and 2: each counts from the limit plus one too
        client.resume(run_id)
        work(client)
        assert client.get_run(run_id).status == RunStatus.AWAITING_INPUT
    assert client.get_state("q").channel_values == {"seen": [[5, False]] * 3}  # LangGraph's invoke(None)s


def test_a_queued_run_counts_the_steps_after_an_answer_from_the_limit_plus_one(client: Client) -> None:
    """On the queue an answer continues the run: its steps from there count as LangGraph's call that
    answers does (from ``max_super_steps`` + 3, its R + 1)."""
    run_id = client.enqueue("managed_asking", {"seen": []}, thread_id="q", config={"max_super_steps": 3})
    work(client)
    assert client.get_run(run_id).status == RunStatus.AWAITING_INPUT
    client.answer(run_id, "yes")
    work(client)
    run = client.get_run(run_id)
    assert run.status == RunStatus.COMPLETED, run.error
    assert run.result == {"seen": ANSWERED_AT_4}
