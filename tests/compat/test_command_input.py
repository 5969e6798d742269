"""A ``Command`` given as a run's input on a thread that has a checkpoint: LangGraph goes on from
the thread's head, the command's ``update`` applied to the state first (the step's tasks see it) and its
``goto`` added to the step's tasks; nothing starts over. The update is kept with the head (LangGraph's null
task writes), so ``get_state`` shows it and a later call applies it. Each case runs with LangGraph's imports
and with graphq's; LangGraph's values are the expected ones."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

import pytest

from graphcore import InvalidUpdateError
from tests.compat.conftest import Imports


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def _graph(lg: Imports, *, asynchronous: bool = False, **compiled: Any) -> Any:
    """START → a → b → END; b asks ``q<len(log)>`` (so the question shows the state it saw) and logs
    ``b:<answer>``; c is reached only by a ``goto``."""

    def a(state: State) -> dict[str, Any]:
        return {"log": ["a"]}

    def b(state: State) -> dict[str, Any]:
        return {"log": ["b:" + lg.interrupt(f"q{len(state['log'])}")]}

    async def b_async(state: State) -> dict[str, Any]:
        await asyncio.sleep(0)
        return b(state)

    builder = lg.StateGraph(State)
    builder.add_node("a", a)
    builder.add_node("b", b_async if asynchronous else b)
    builder.add_node("c", lambda state: {"log": ["c"]})
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", lg.END)
    builder.add_edge("c", lg.END)
    return builder.compile(checkpointer=lg.InMemorySaver(), **compiled)


def _paused(lg: Imports, **compiled: Any) -> tuple[Any, dict[str, Any]]:
    """The graph and a thread paused at b's question ``q1``."""
    graph, config = _graph(lg, **compiled), {"configurable": {"thread_id": "1"}}
    graph.invoke({"log": []}, config)
    return graph, config


def _shown(result: dict[str, Any]) -> dict[str, Any]:
    """``invoke``'s result with each open request as its value (interrupt ids differ between the two)."""
    return {k: [i.value for i in v] if k == "__interrupt__" else v for k, v in result.items()}


def _history(graph: Any, config: dict[str, Any]) -> list[tuple[int, str, tuple[str, ...], Any]]:
    return [
        (s.metadata["step"], s.metadata["source"], s.next, s.values) for s in graph.get_state_history(config)
    ]


_RUN_BEFORE = [(0, "loop", ("a",), {"log": []}), (-1, "input", ("__start__",), {"log": []})]


def test_an_answer_with_an_update_applies_the_update_before_the_answered_step(lg: Imports) -> None:
    """LangGraph's human-in-the-loop edit-and-answer: ``Command(resume="x", update=...)`` on a paused thread;
    the update is in the state before b's writes, in the step b's answer commits, and in the head it
    went on from."""
    graph, config = _paused(lg)
    assert graph.invoke(lg.Command(resume="x", update={"log": ["u"]}), config) == {"log": ["a", "u", "b:x"]}
    assert _history(graph, config) == [
        (2, "loop", (), {"log": ["a", "u", "b:x"]}),
        (1, "loop", ("b",), {"log": ["a", "u"]}),
        *_RUN_BEFORE,
    ]


def test_an_answer_with_an_update_under_ainvoke(lg: Imports) -> None:
    """The same with an async b, awaited by ``ainvoke`` (graphq steps it on the caller's loop)."""
    graph, config = _graph(lg, asynchronous=True), {"configurable": {"thread_id": "1"}}

    async def main() -> Any:
        await graph.ainvoke({"log": []}, config)
        return await graph.ainvoke(lg.Command(resume="x", update={"log": ["u"]}), config)

    assert asyncio.run(main()) == {"log": ["a", "u", "b:x"]}
    assert [s.values for s in graph.get_state_history(config)][:2] == [
        {"log": ["a", "u", "b:x"]},
        {"log": ["a", "u"]},
    ]


def test_an_update_without_an_answer_is_seen_by_the_question_asked_again(lg: Imports) -> None:
    """``Command(update=...)`` at an open question: a runs not again; b runs again on the updated state and
    asks again (``q2``); no checkpoint is committed, but ``get_state`` shows the update, and the answer
    given next goes on from it."""
    graph, config = _paused(lg)
    assert _shown(graph.invoke(lg.Command(update={"log": ["u"]}), config)) == {
        "log": ["a", "u"],
        "__interrupt__": ["q2"],
    }
    state = graph.get_state(config)
    assert (state.values, state.next, [i.value for i in state.interrupts]) == (
        {"log": ["a", "u"]},
        ("b",),
        ["q2"],
    )
    assert _history(graph, config) == [(1, "loop", ("b",), {"log": ["a", "u"]}), *_RUN_BEFORE]
    assert graph.invoke(lg.Command(resume="x"), config) == {"log": ["a", "u", "b:x"]}
    assert _history(graph, config)[0] == (2, "loop", (), {"log": ["a", "u", "b:x"]})


def test_updates_given_one_after_the_other_are_all_kept(lg: Imports) -> None:
    """Two ``Command(update=...)`` at the same open question: both are applied, in order."""
    graph, config = _paused(lg)
    graph.invoke(lg.Command(update={"log": ["u1"]}), config)
    assert _shown(graph.invoke(lg.Command(update={"log": ["u2"]}), config)) == {
        "log": ["a", "u1", "u2"],
        "__interrupt__": ["q3"],
    }
    assert graph.invoke(lg.Command(resume="x"), config) == {"log": ["a", "u1", "u2", "b:x"]}


def test_an_update_with_a_goto_runs_the_target_beside_the_open_question(lg: Imports) -> None:
    """``Command(update=..., goto="c")`` at an open question: c runs in the step beside b, which asks again
    on the updated state; c's writes wait with the step, which the answer commits (c not run again)."""
    graph, config = _paused(lg)
    assert _shown(graph.invoke(lg.Command(update={"log": ["u"]}, goto="c"), config)) == {
        "log": ["a", "u", "c"],
        "__interrupt__": ["q2"],
    }
    assert graph.invoke(lg.Command(resume="x"), config) == {"log": ["a", "u", "b:x", "c"]}
    assert _history(graph, config) == [
        (2, "loop", (), {"log": ["a", "u", "b:x", "c"]}),
        (1, "loop", ("b",), {"log": ["a", "u"]}),
        *_RUN_BEFORE,
    ]


def test_a_goto_alone_runs_the_target_beside_the_open_question(lg: Imports) -> None:
    """``Command(goto="c")`` at an open question: c runs beside b; a does not run again."""
    graph, config = _paused(lg)
    assert _shown(graph.invoke(lg.Command(goto="c"), config)) == {"log": ["a", "c"], "__interrupt__": ["q1"]}
    assert graph.invoke(lg.Command(resume="x"), config) == {"log": ["a", "b:x", "c"]}


def test_an_update_at_a_static_breakpoint_goes_on_past_it(lg: Imports) -> None:
    """``interrupt_before=["b"]``: ``Command(update=...)`` at the stop goes on from there (past the
    breakpoint): b runs on the updated state and asks; the answer then finishes the run."""
    graph, config = _graph(lg, interrupt_before=["b"]), {"configurable": {"thread_id": "1"}}
    assert graph.invoke({"log": []}, config) == {"log": ["a"]}
    assert _shown(graph.invoke(lg.Command(update={"log": ["u"]}), config)) == {
        "log": ["a", "u"],
        "__interrupt__": ["q2"],
    }
    assert _history(graph, config) == [(1, "loop", ("b",), {"log": ["a", "u"]}), *_RUN_BEFORE]
    assert graph.invoke(lg.Command(resume="y"), config) == {"log": ["a", "u", "b:y"]}
    assert _history(graph, config)[0] == (2, "loop", (), {"log": ["a", "u", "b:y"]})


def _ended(lg: Imports) -> tuple[Any, dict[str, Any]]:
    """START → a → END, and a thread whose run ended."""
    builder = lg.StateGraph(State)
    builder.add_node("a", lambda state: {"log": ["a"]})
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", lg.END)
    graph, config = builder.compile(checkpointer=lg.InMemorySaver()), {"configurable": {"thread_id": "1"}}
    assert graph.invoke({"log": []}, config) == {"log": ["a"]}
    return graph, config


def test_an_update_on_an_ended_thread_runs_nothing_and_is_kept(lg: Imports) -> None:
    """``Command(update=...)`` on a thread whose run ended: nothing runs (no checkpoint is written), the
    state with the update is returned and shown; a later call without input returns it again, and the
    thread's next run starts from it."""
    graph, config = _ended(lg)
    assert graph.invoke(lg.Command(update={"log": ["u"]}), config) == {"log": ["a", "u"]}
    assert graph.get_state(config).values == {"log": ["a", "u"]}
    assert [(step, source, next_) for step, source, next_, _ in _history(graph, config)] == [
        (1, "loop", ()),
        (0, "loop", ("a",)),
        (-1, "input", ("__start__",)),
    ]
    assert graph.invoke(None, config) == {"log": ["a", "u"]}
    assert graph.invoke({"log": ["n"]}, config) == {"log": ["a", "u", "n", "a"]}


def test_an_update_on_a_fresh_thread_is_applied_once() -> None:
    """graphq (a deliberate difference, docs): ``Command(update=...)`` on a thread without a checkpoint
    starts the run with the update applied once, as its input (LangGraph applies it twice:
    ``['u', 'u', 'a']``)."""
    gq = Imports("graphq")
    graph, _ = _ended(gq)
    fresh = {"configurable": {"thread_id": "2"}}
    assert graph.invoke(gq.Command(update={"log": ["u"]}), fresh) == {"log": ["u", "a"]}
    assert [(step, source, values) for step, source, _, values in _history(graph, fresh)] == [
        (1, "loop", {"log": ["u", "a"]}),
        (0, "loop", {"log": ["u"]}),
        (-1, "input", {"log": []}),
    ]


def test_a_stateful_subgraph_given_a_command_goes_on_to_answer_it_on_each_turn() -> None:
    """graphq: a ``checkpointer=True`` subgraph invoked in a node with ``Command(update=..., goto="ask")``
    whose ``ask`` pauses; each turn of the parent is answered and the subgraph goes on from the command's
    view. Before, the second turn's answer was never matched (the view the command makes was not where the
    subgraph looked for its open question): it asked the same question forever. (LangGraph applies such an
    update once per call that reaches it: ``['u', 'u', 'u', 'ans:x']``.)"""
    gq = Imports("graphq")

    def ask(state: State) -> dict[str, Any]:
        return {"log": [f"ans:{gq.interrupt('q')}"]}

    inner = gq.StateGraph(State)
    inner.add_node("ask", ask)
    inner.add_edge(gq.START, "ask")
    sub = inner.compile(checkpointer=True)

    def outer(state: State) -> dict[str, Any]:
        return {"log": [str(sub.invoke(gq.Command(update={"log": ["u"]}, goto="ask"))["log"])]}

    builder = gq.StateGraph(State)
    builder.add_node("outer", outer)
    builder.add_edge(gq.START, "outer")
    graph, config = builder.compile(checkpointer=gq.InMemorySaver()), {"configurable": {"thread_id": "t"}}
    assert [i.value for i in graph.invoke({"log": []}, config)["__interrupt__"]] == ["q"]
    assert graph.invoke(gq.Command(resume="x"), config) == {"log": ["['u', 'ans:x']"]}
    assert [i.value for i in graph.invoke({"log": []}, config)["__interrupt__"]] == ["q"]
    assert graph.invoke(gq.Command(resume="y"), config) == {
        "log": ["['u', 'ans:x']", "['u', 'ans:x', 'u', 'ans:y']"]
    }


def test_a_goto_at_an_input_checkpoint_runs_beside_the_entry_nodes() -> None:
    """graphq (a deliberate difference, docs): ``Command(goto="c")`` on a thread whose last checkpoint is
    a run's input not applied yet (``update_state(..., as_node="__input__")``): the input is applied and c
    runs in the first super-step beside the entry node a (LangGraph runs c with its ``__start__`` task,
    before a: ``['i', 'c', 'a']``)."""
    gq = Imports("graphq")
    builder = gq.StateGraph(State)
    builder.add_node("a", lambda state: {"log": ["a"]})
    builder.add_node("c", lambda state: {"log": ["c"]})
    builder.add_edge(gq.START, "a")
    builder.add_edge("a", gq.END)
    builder.add_edge("c", gq.END)
    graph, config = builder.compile(checkpointer=gq.InMemorySaver()), {"configurable": {"thread_id": "1"}}
    graph.update_state(config, {"log": ["i"]}, as_node="__input__")
    assert graph.invoke(gq.Command(goto="c"), config) == {"log": ["i", "a", "c"]}
    assert [(step, source, next_) for step, source, next_, _ in _history(graph, config)] == [
        (1, "loop", ()),
        (0, "loop", ("a", "c")),
        (-1, "input", ("__start__",)),
    ]


def test_a_goto_to_no_node_is_ignored_and_the_update_applies(lg: Imports) -> None:
    """LangGraph: an input Command's goto to a node the graph does not have is dropped (a logged warning)
    and its update applies: the paused question is asked again on the updated state. graphq does the same
    and warns (UserWarning); it refused the whole command before. The queue's client refuses it
    (tests/test_command_queue.py)."""
    graph, config = _paused(lg)
    with lg.graphq_warns(r"^input Command\(goto=\.\.\.\) to unknown node\(s\) \['nope'\]: ignored$"):
        result = graph.invoke(lg.Command(update={"log": ["u"]}, goto="nope"), config)
    assert _shown(result) == {"log": ["a", "u"], "__interrupt__": ["q2"]}


def test_a_malformed_input_command_is_refused_and_nothing_is_saved() -> None:
    """graphq (a deliberate difference, docs): an input Command whose update is not a dict of state
    updates is refused (LangGraph ignores it with a warning); nothing of it is kept, so the answer given
    next goes on as if it had not been given."""
    gq = Imports("graphq")
    graph, config = _paused(gq)
    with pytest.raises(InvalidUpdateError) as no_dict:
        graph.invoke(gq.Command(update=5, goto="c"), config)
    assert str(no_dict.value) == "the input Command's update is a int; expected a dict of state updates"
    assert graph.get_state(config).values == {"log": ["a"]}
    assert graph.invoke(gq.Command(resume="x"), config) == {"log": ["a", "b:x"]}
