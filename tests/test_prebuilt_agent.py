"""graphcore.prebuilt beyond LangGraph's behaviour (tests/compat/test_agent.py has that): ToolNode's calls as
parallel tasks with an interrupt each, and the agent-loop state, reducers and routers (DESIGN G8)."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Annotated, Any

import pytest
from langchain_core.tools import tool as lc_tool

from graphcore import END, START, Command, InMemorySaver, MessagesState, StateGraph, interrupt
from graphcore.checkpoints import InMemoryCheckpointStore, serde
from graphcore.messages import AIMessage, HumanMessage, ToolMessage
from graphcore.prebuilt import (
    AgentLoopState,
    InjectedState,
    Spent,
    ToolNode,
    budget_exhausted,
    create_react_agent,
    first_of,
    has_tool_calls,
    is_final_answer,
    iteration_exceeds,
    model_turn,
    spend,
    terminate_requested,
)
from tests.workflows.lc_agent import ToolCallingFakeModel

RUNS: Counter[str] = Counter()


def approve(action: str) -> str:
    """Ask a human about ``action``."""
    RUNS[action] += 1
    return f"{action}: {interrupt({'approve': action})}"


def quick(x: str) -> str:
    """Answer ``x`` at once."""
    RUNS["quick"] += 1
    return x


def calls(*specs: tuple[str, dict[str, Any]]) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": n, "args": a, "id": f"c{i}"} for i, (n, a) in enumerate(specs)])


def tools_graph(*tools: Any, **options: Any) -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode(list(tools), **options))
    builder.add_edge(START, "tools")
    return builder.compile(checkpointer=InMemoryCheckpointStore())


def test_each_tool_call_is_its_own_task_and_they_run_in_parallel() -> None:
    """Two calls wait for each other at a barrier: they finish only if they run at the same time."""
    barrier = threading.Barrier(2, timeout=5)

    def meet(x: str) -> str:
        barrier.wait()
        return x

    graph = tools_graph(meet)
    out = graph.invoke({"messages": [calls(("meet", {"x": "a"}), ("meet", {"x": "b"}))]}, {"thread_id": "p"})
    assert [(m.content, m.tool_call_id) for m in out["messages"][1:]] == [("a", "c0"), ("b", "c1")]


def test_parallel_calls_interrupt_each_with_its_own_request_and_finished_calls_do_not_rerun() -> None:
    """LangGraph's ToolNode surfaces only the first of two interrupting calls (and a resume by id loses the
    results); graphq's calls are tasks, so each asks its own question and is answered by id."""
    RUNS.clear()
    graph = tools_graph(approve, quick)
    config = {"configurable": {"thread_id": "two-asks"}}
    ai = calls(("approve", {"action": "pay"}), ("quick", {"x": "z"}), ("approve", {"action": "ship"}))
    paused = graph.invoke({"messages": [ai]}, config)
    asks = paused["__interrupt__"]
    assert sorted(i.value["approve"] for i in asks) == ["pay", "ship"]
    assert RUNS == {"pay": 1, "quick": 1, "ship": 1}
    out = graph.invoke(Command(resume={i.id: f"ok-{i.value['approve']}" for i in asks}), config)
    assert [(m.type, m.content, m.tool_call_id) for m in out["messages"][1:]] == [
        ("tool", "pay: ok-pay", "c0"),
        ("tool", "z", "c1"),
        ("tool", "ship: ok-ship", "c2"),
    ]
    assert RUNS == {"pay": 2, "quick": 1, "ship": 2}  # the finished call kept its result (pending writes)


def test_a_v1_agents_tools_task_asks_once_per_asking_call() -> None:
    """``create_react_agent(version="v1")`` runs all calls in one ``tools`` task (LangGraph's v1), whose
    ToolNode runs them as tasks of its inner graph: each asking call is its own request (LangGraph's v1
    surfaces only the first), answered by id, and the finished call is not run again."""
    from tests.workflows.lc_agent import ToolCallingFakeModel

    RUNS.clear()
    ai = calls(("approve", {"action": "pay"}), ("quick", {"x": "z"}), ("approve", {"action": "ship"}))
    model = ToolCallingFakeModel(responses=[ai, AIMessage("done")])
    agent = create_react_agent(model, [approve, quick], version="v1", checkpointer=InMemoryCheckpointStore())
    config = {"configurable": {"thread_id": "v1"}}
    asks = agent.invoke({"messages": [HumanMessage("go")]}, config)["__interrupt__"]
    assert sorted(i.value["approve"] for i in asks) == ["pay", "ship"]
    assert agent.get_state(config).next == ("tools",)
    out = agent.invoke(Command(resume={i.id: f"ok-{i.value['approve']}" for i in asks}), config)
    assert [(m.type, m.content) for m in out["messages"][2:]] == [
        ("tool", "pay: ok-pay"),
        ("tool", "z"),
        ("tool", "ship: ok-ship"),
        ("ai", "done"),
    ]
    assert RUNS == {"pay": 2, "quick": 1, "ship": 2}


def test_a_langchain_style_tool_object_is_invoked_with_the_args() -> None:
    """An object with ``name`` and ``invoke(args)`` (a langchain tool) is called with the call's args."""

    class Search:
        name = "search"

        def invoke(self, args: dict[str, Any]) -> list[dict[str, str]]:
            return [{"type": "text", "text": f"found {args['q']}"}]

    out = tools_graph(Search()).invoke({"messages": [calls(("search", {"q": "x"}))]}, {"thread_id": "o"})
    assert out["messages"][-1].content == [{"type": "text", "text": "found x"}]


def test_an_async_tool_runs_under_invoke_and_may_interrupt() -> None:
    """LangGraph refuses a sync ``invoke`` of an async tool (NotImplementedError); graphq awaits it."""

    async def confirm(x: str) -> str:
        """Ask, asynchronously."""
        return f"{x}: {interrupt(f'confirm {x}?')}"

    graph = tools_graph(confirm)
    config = {"configurable": {"thread_id": "async-tool"}}
    paused = graph.invoke({"messages": [calls(("confirm", {"x": "a"}))]}, config)
    assert [i.value for i in paused["__interrupt__"]] == ["confirm a?"]
    out = graph.invoke(Command(resume="sure"), config)
    assert out["messages"][-1].content == "a: sure"


def test_a_tool_returning_a_command_is_applied_as_the_nodes() -> None:
    """A plain function tool's Command is the ToolNode's (tests/compat/test_langchain.py has LangGraph's
    case): its goto to a node the graph lacks is refused naming it."""

    def jump(x: str) -> Command:
        return Command(goto="elsewhere")

    with pytest.raises(
        Exception, match=r"returned Command\(goto=\.\.\.\) to unknown node\(s\) \['elsewhere'\]"
    ):
        tools_graph(jump).invoke({"messages": [calls(("jump", {"x": "a"}))]}, {"thread_id": "c"})


def test_record_outcome_writes_the_last_result_and_error() -> None:
    builder = StateGraph(AgentLoopState)
    builder.add_node("tools", ToolNode([quick], record_outcome=True))
    builder.add_edge(START, "tools")
    ai = calls(("quick", {"x": "first"}), ("nope", {}), ("quick", {"x": "second"}))
    out = builder.compile().invoke({"messages": [ai]})
    assert out["last_result"] == "second"
    assert out["last_error"] == "Error: nope is not a valid tool, try one of [quick]."
    again = builder.compile().invoke({"messages": [calls(("quick", {"x": "ok"}))]})
    assert (again["last_result"], again["last_error"]) == ("ok", None)


# -- the agent-loop state -----------------------------------------------------------------------------------


def test_spend_sets_a_budget_and_takes_spent_tokens_off_it() -> None:
    assert spend(None, 100) == 100
    assert spend(100, Spent(30)) == 70
    assert spend(None, Spent(30)) is None  # no budget: nothing to spend from
    assert spend(70, 500) == 500  # a new budget replaces the old
    assert serde.loads(serde.dumps(Spent(4))) == Spent(4)


def test_model_turn_counts_the_iteration_parses_the_decision_and_spends_the_usage() -> None:
    usage = {"input_tokens": 12, "output_tokens": 8, "total_tokens": 20}
    asks = AIMessage("", tool_calls=[{"name": "add", "args": {}, "id": "1"}], usage_metadata=usage)
    update = model_turn({"tokens_left": 100}, asks)
    assert update == {
        "messages": [asks],
        "iterations": 1,
        "decision": {"action": "call_tools", "names": ["add"], "answer": None},
        "tokens_left": Spent(20),
    }
    final = model_turn({}, AIMessage("42"))
    assert final == {
        "messages": [AIMessage("42")],
        "iterations": 1,
        "decision": {"action": "answer", "names": [], "answer": "42"},
    }


@pytest.mark.parametrize(
    ("state", "holds"),
    [
        ({"messages": [calls(("add", {}))]}, {"has_tool_calls"}),
        ({"messages": [HumanMessage("q"), AIMessage("done")]}, {"is_final_answer"}),
        ({"messages": [ToolMessage("3", tool_call_id="c")]}, set()),
        ({"messages": [], "iterations": 3}, {"iteration_exceeds(2)"}),
        ({"messages": [], "iterations": 2}, set()),
        ({"messages": [], "tokens_left": 0}, {"budget_exhausted"}),
        ({"messages": [], "tokens_left": -5}, {"budget_exhausted"}),
        ({"messages": [], "tokens_left": 1}, set()),
        ({"messages": [], "tokens_left": None}, set()),
        ({"messages": [], "should_terminate": True}, {"terminate_requested"}),
    ],
)
def test_each_condition_applies_its_rule(state: dict[str, Any], holds: set[str]) -> None:
    conditions = [
        has_tool_calls,
        is_final_answer,
        iteration_exceeds(2),
        budget_exhausted,
        terminate_requested,
    ]
    assert {c.__name__ for c in conditions if c(state)} == holds


def test_first_of_routes_on_the_first_condition_that_holds() -> None:
    route = first_of(
        (budget_exhausted, "summarize"), iteration_exceeds(4), is_final_answer, otherwise="tools"
    )
    asking = calls(("add", {}))
    assert route({"messages": [asking], "iterations": 1, "tokens_left": 50}) == "tools"
    assert route({"messages": [AIMessage("done")], "iterations": 1}) == END
    assert route({"messages": [asking], "iterations": 5}) == END
    assert route({"messages": [asking], "iterations": 5, "tokens_left": 0}) == "summarize"
    with pytest.raises(ValueError, match="at least one condition"):
        first_of(otherwise="tools")
    with pytest.raises(ValueError, match="n must be 0 or more"):
        iteration_exceeds(-1)


def test_an_agent_loop_stops_when_its_budget_runs_out() -> None:
    """A model that always asks for a tool: the loop ends once 3 turns of 40 tokens used a 100 budget."""

    def model(state: AgentLoopState) -> dict[str, Any]:
        n = state.get("iterations", 0)
        reply = AIMessage(
            "",
            tool_calls=[{"name": "quick", "args": {"x": f"t{n}"}, "id": f"call-{n}"}],
            usage_metadata={"input_tokens": 30, "output_tokens": 10, "total_tokens": 40},
        )
        return model_turn(state, reply)

    builder = StateGraph(AgentLoopState)
    builder.add_node("model", model)
    builder.add_node("tools", ToolNode([quick], record_outcome=True))
    builder.add_edge(START, "model")
    builder.add_conditional_edges(
        "model", first_of(budget_exhausted, iteration_exceeds(10), otherwise="tools"), ["tools", END]
    )
    builder.add_edge("tools", "model")
    out = builder.compile().invoke({"messages": "go", "tokens_left": 100})
    assert (out["iterations"], out["tokens_left"], out["last_result"]) == (3, -20, "t1")
    assert [m.type for m in out["messages"]] == ["human", "ai", "tool", "ai", "tool", "ai"]
    assert out["decision"] == {"action": "call_tools", "names": ["quick"], "answer": None}


@lc_tool
def plain(x: str) -> str:
    """Echo x."""
    return x


@lc_tool
def reading(x: str, state: Annotated[dict[str, Any], InjectedState]) -> str:
    """Count the messages."""
    return f"{x}:{len(state['messages'])}"


def _stored_states(*tools: Any) -> list[Any]:
    """The ``state`` of each per-call ``tools`` task stored with the step-1 checkpoint of an agent whose
    model calls each of ``tools`` once."""
    calls = [{"name": t.name, "args": {"x": t.name}, "id": f"c-{t.name}"} for t in tools]
    model = ToolCallingFakeModel(responses=[AIMessage("", id="a1", tool_calls=calls), AIMessage("ok")])
    saver = InMemorySaver()
    app = create_react_agent(model, list(tools), checkpointer=saver)
    app.invoke({"messages": [HumanMessage("go", id="h")]}, {"configurable": {"thread_id": "t"}})
    step1 = next(cp for cp in saver.list("t") if cp.step == 1)
    return [task.arg["state"] for task in step1.next_tasks]


def test_a_per_call_tools_task_stores_the_state_only_when_a_tool_injects_it() -> None:
    """create_react_agent v2 sends one ``tools`` task per call. LangGraph copies the whole state into each
    task's input; graphq gives it only when a tool has it injected (``InjectedState``, ``ToolRuntime``), so
    a stored tools step costs its calls, not N copies of the conversation (O(change))."""
    assert _stored_states(plain, plain) == [None, None]
    states = _stored_states(plain, reading)
    assert [[m.id for m in s["messages"]] for s in states] == [["h", "a1"], ["h", "a1"]]
