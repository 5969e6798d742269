"""Per-node retry policies (G9) and node timeouts (G10), with exact values; pure in-process, no Redis."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypedDict

import pytest

from graphcore import (
    END,
    START,
    CancelToken,
    CompiledGraph,
    ConfigError,
    NodeError,
    StateGraph,
    get_cancel_token,
    get_stream_writer,
)
from graphcore.engine.algo import Task, apply_input
from graphcore.engine.retry import RetryPolicy, default_retry_on
from graphcore.engine.step import StepResult, run_step
from graphcore.errors import Cancelled, NodeTimeoutError, RedisUnavailableError, StepLimitError
from tests.workers import wait_for

FAST = RetryPolicy(initial_interval_s=0.01, jitter=False)
"""Three tries, pauses of 0.01 s then 0.02 s."""


class S(TypedDict, total=False):
    x: int


def flaky(failures: Sequence[BaseException], calls: list[int]) -> Callable[[S], dict[str, Any]]:
    """A node that raises the given errors in turn, then doubles ``x``; it appends to ``calls`` each time."""

    def node(state: S) -> dict[str, Any]:
        calls.append(len(calls) + 1)
        if len(calls) <= len(failures):
            raise failures[len(calls) - 1]
        return {"x": state["x"] * 2}

    return node


def one_node(fn: Callable[..., Any], **options: Any) -> CompiledGraph:
    g = StateGraph(S)
    g.add_node("work", fn, **options)
    g.add_edge(START, "work")
    g.add_edge("work", END)
    return g.compile(name="retry-test")


def step_once(graph: CompiledGraph, cancel: CancelToken | None = None, **kwargs: Any) -> StepResult:
    """Run the single super-step after the input checkpoint of ``{"x": 5}`` with ``run_step``."""
    cp = apply_input(graph, None, {"x": 5}, {"run_id": "r1"})
    return run_step(graph, cp, graph.config_for(None), cancel=cancel, **kwargs)


# --------------------------------------------------------------------------------------------------------
# G9 retry policy
# --------------------------------------------------------------------------------------------------------


def test_two_failures_then_success_with_three_attempts() -> None:
    calls: list[int] = []
    graph = one_node(flaky([ConnectionError("down"), ConnectionError("down")], calls), retry=FAST)
    assert graph.invoke({"x": 5}) == {"x": 10}
    assert calls == [1, 2, 3]


def test_attempts_used_up_raise_node_error_with_the_last_error() -> None:
    calls: list[int] = []
    errors = [ConnectionError("first"), ConnectionError("second")]
    graph = one_node(
        flaky(errors, calls), retry=RetryPolicy(initial_interval_s=0.01, max_attempts=2, jitter=False)
    )
    with pytest.raises(NodeError) as info:
        graph.invoke({"x": 5})
    assert calls == [1, 2]
    assert info.value.node == "work"
    assert info.value.error is errors[1]
    assert str(info.value) == "node 'work' raised ConnectionError: second (after 2 attempts)"


def test_programming_errors_are_not_retried_by_default() -> None:
    calls: list[int] = []
    graph = one_node(flaky([ValueError("bad input")], calls), retry=FAST)
    with pytest.raises(NodeError) as info:
        graph.invoke({"x": 5})
    assert calls == [1]
    assert isinstance(info.value.error, ValueError)


def test_no_policy_means_one_try() -> None:
    calls: list[int] = []
    graph = one_node(flaky([ConnectionError("down")], calls))
    with pytest.raises(NodeError):
        graph.invoke({"x": 5})
    assert calls == [1]


def test_custom_retry_on_tuple() -> None:
    calls: list[int] = []
    policy = RetryPolicy(initial_interval_s=0.01, jitter=False, retry_on=(KeyError, TimeoutError))
    graph = one_node(flaky([KeyError("k"), TimeoutError("t")], calls), retry=policy)
    assert graph.invoke({"x": 5}) == {"x": 10}
    assert calls == [1, 2, 3]
    calls.clear()  # ConnectionError is not in the tuple: one try
    graph = one_node(flaky([ConnectionError("down")], calls), retry=policy)
    with pytest.raises(NodeError):
        graph.invoke({"x": 5})
    assert calls == [1]


def test_custom_retry_on_class_and_predicate() -> None:
    calls: list[int] = []
    graph = one_node(
        flaky([ValueError("v")], calls), retry=RetryPolicy(0.01, jitter=False, retry_on=ValueError)
    )
    assert graph.invoke({"x": 5}) == {"x": 10}
    assert calls == [1, 2]
    seen: list[str] = []

    def only_retryable(exc: BaseException) -> bool:
        seen.append(str(exc))
        return "retryable" in str(exc)

    calls.clear()
    policy = RetryPolicy(initial_interval_s=0.01, max_attempts=5, jitter=False, retry_on=only_retryable)
    errors = [RuntimeError("retryable 1"), RuntimeError("fatal 2")]
    graph = one_node(flaky(errors, calls), retry=policy)
    with pytest.raises(NodeError) as info:
        graph.invoke({"x": 5})
    assert calls == [1, 2]
    assert seen == ["retryable 1", "fatal 2"]
    assert info.value.error is errors[1]


def test_on_retry_reports_each_failed_attempt_and_the_wait() -> None:
    calls: list[int] = []
    errors = [ConnectionError("one"), OSError("two")]
    graph = one_node(flaky(errors, calls), retry=FAST)
    reports: list[tuple[str, int, BaseException, float]] = []

    def on_retry(task: Task, attempt: int, error: BaseException, wait_s: float) -> None:
        reports.append((task.node, attempt, error, wait_s))

    outcome = step_once(graph, on_retry=on_retry)
    assert outcome.error is None
    assert [r.writes for r in outcome.results] == [[("x", 10)]]
    assert reports == [("work", 1, errors[0], 0.01), ("work", 2, errors[1], 0.02)]
    assert calls == [1, 2, 3]


def test_waits_back_off_up_to_the_cap_and_jitter_adds_at_most_one_second() -> None:
    capped = RetryPolicy(
        initial_interval_s=1.0, backoff_factor=3.0, max_interval_s=5.0, max_attempts=5, jitter=False
    )
    wait = capped.wait()
    assert [wait(_state(n)) for n in (1, 2, 3, 4)] == [1.0, 3.0, 5.0, 5.0]
    jittered = RetryPolicy(initial_interval_s=0.5).wait()
    samples = [jittered(_state(1)) for _ in range(50)]
    assert all(0.5 <= s <= 1.5 for s in samples)
    assert len(set(samples)) > 1


def test_cancel_during_the_wait_stops_retrying() -> None:
    """The cancel comes once the first try failed: the 30 s wait before the second ends long before."""
    calls: list[int] = []
    policy = RetryPolicy(initial_interval_s=30.0, max_attempts=3, jitter=False)
    errors = [ConnectionError("down")] * 3
    graph = one_node(flaky(errors, calls), retry=policy)
    run_token = _cancel_when(lambda: calls == [1], "run canceled")
    started = time.monotonic()
    outcome = step_once(graph, cancel=run_token)
    assert time.monotonic() - started < 15
    assert calls == [1]
    assert isinstance(outcome.error, NodeError) and outcome.error.error is errors[0]
    assert outcome.results == []


def test_no_node_starts_once_the_run_is_cancelled() -> None:
    started: list[str] = []

    def node(state: S) -> dict[str, Any]:
        started.append("node")
        return {"x": 1}

    run_token = CancelToken()
    run_token.cancel("stop")
    with pytest.raises(Cancelled, match="stop"):
        step_once(one_node(node), cancel=run_token)
    assert started == []


def test_cancel_reaches_the_node_through_a_child_token() -> None:
    tokens: list[CancelToken] = []

    def node(state: S) -> dict[str, Any]:
        token = get_cancel_token()
        tokens.append(token)
        token.wait(30)
        token.raise_if_cancelled()
        return {"x": 1}

    run_token = _cancel_when(lambda: len(tokens) == 1, "stop")  # the node runs
    with pytest.raises(Cancelled, match="stop"):
        step_once(one_node(node), cancel=run_token)
    assert len(tokens) == 1 and tokens[0].parent is run_token and tokens[0].reason == "stop"


def test_failure_in_on_retry_propagates_unwrapped() -> None:
    graph = one_node(flaky([ConnectionError("down")], []), retry=FAST)

    def on_retry(task: Task, attempt: int, error: BaseException, wait_s: float) -> None:
        raise RedisUnavailableError("cannot reach Redis")

    outcome = step_once(graph, on_retry=on_retry)
    assert isinstance(outcome.error, RedisUnavailableError)


def test_default_retry_on() -> None:
    retried = [
        ConnectionError(),
        TimeoutError(),
        OSError(),
        RuntimeError(),
        RedisUnavailableError("x"),
        Exception(),
    ]
    kept = [
        ValueError(),
        TypeError(),
        KeyError(),
        IndexError(),
        AttributeError(),
        NameError(),
        SyntaxError(),
        NotImplementedError(),
        ZeroDivisionError(),
        AssertionError(),
        ArithmeticError(),
        LookupError(),
        StepLimitError("x"),
        NodeTimeoutError("n", 1.0),
        Cancelled("x"),
        KeyboardInterrupt(),
    ]
    assert [default_retry_on(e) for e in retried] == [True] * len(retried)
    assert [default_retry_on(e) for e in kept] == [False] * len(kept)


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"max_attempts": 0}, "max_attempts"),
        ({"max_attempts": 2.5}, "max_attempts"),
        ({"initial_interval_s": -0.5}, "initial_interval_s"),
        ({"initial_interval_s": float("nan")}, "initial_interval_s"),
        ({"max_interval_s": -1.0}, "max_interval_s"),
        ({"backoff_factor": 0.5}, "backoff_factor"),
    ],
)
def test_invalid_policy_names_the_field(options: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError, match=f"RetryPolicy.{field} "):
        RetryPolicy(**options)


def test_add_node_checks_its_options() -> None:
    g = StateGraph(S)
    with pytest.raises(ConfigError, match="node 'a': timeout must be above 0 s"):
        g.add_node("a", lambda s: None, timeout=0)
    with pytest.raises(ConfigError, match="node 'a': retry must be a RetryPolicy"):
        g.add_node("a", lambda s: None, retry={"max_attempts": 2})  # type: ignore[arg-type]
    g.add_node("a", lambda s: None, timeout=1.5, retry=FAST)
    assert (g.nodes["a"].timeout_s, g.nodes["a"].retry) == (1.5, FAST)


# --------------------------------------------------------------------------------------------------------
# G10 node timeout
# --------------------------------------------------------------------------------------------------------


def test_node_past_its_timeout_fails_its_step_and_sees_its_token_set() -> None:
    observed: list[bool] = []
    reasons: list[str] = []
    finished = threading.Event()

    def slow(state: S) -> dict[str, Any]:
        token = get_cancel_token()
        token.wait(30)
        observed.append(get_cancel_token().cancelled)
        reasons.append(token.reason)
        finished.set()
        return {"x": 99}

    graph = one_node(slow, timeout=0.2)
    started = time.monotonic()
    with pytest.raises(NodeTimeoutError) as info:
        graph.invoke({"x": 5})
    assert time.monotonic() - started < 15  # the node would wait 30 s
    assert str(info.value) == "node 'work' timed out after 0.2 s (timeout=0.2 set on add_node)"
    assert (info.value.node, info.value.timeout_s) == ("work", 0.2)
    assert finished.wait(10)
    assert observed == [True]
    assert reasons == ["node 'work' timed out after 0.2 s"]


def test_timeout_in_a_parallel_step_fails_the_step_while_the_other_task_completes() -> None:
    g = StateGraph(S)
    g.add_node("fast", lambda s: {"x": 1})
    g.add_node("slow", lambda s: get_cancel_token().wait(30) and None, timeout=0.1)
    g.add_edge(START, "fast")
    g.add_edge(START, "slow")
    graph = g.compile(name="parallel-timeout")
    done: list[str] = []
    started = time.monotonic()
    outcome = step_once(graph, on_task_done=lambda writes: done.append(writes.node))
    assert time.monotonic() - started < 15  # the slow node would wait 30 s
    assert isinstance(outcome.error, NodeTimeoutError) and outcome.error.node == "slow"
    assert done == ["fast"]


def test_node_within_its_timeout_runs_normally() -> None:
    def quick(state: S) -> dict[str, Any]:
        get_stream_writer()({"cancelled": get_cancel_token().cancelled})
        return {"x": state["x"] + 1}

    graph = one_node(quick, timeout=2.0)
    assert graph.invoke({"x": 5}) == {"x": 6}
    events = list(graph.stream({"x": 1}, stream_mode=["custom", "updates"]))
    assert events == [("custom", {"cancelled": False}), ("updates", {"work": {"x": 2}})]


def test_timeout_is_per_try_and_not_retried_by_default() -> None:
    calls: list[int] = []

    def slow_once(state: S) -> dict[str, Any]:
        calls.append(len(calls) + 1)
        if len(calls) == 1:
            get_cancel_token().wait(30)
        return {"x": 7}

    graph = one_node(slow_once, timeout=0.1, retry=FAST)
    with pytest.raises(NodeTimeoutError):
        graph.invoke({"x": 5})
    assert calls == [1]
    calls.clear()  # a policy that retries timeouts: the second try gets a fresh token and a fresh 1 s
    retry_timeouts = RetryPolicy(initial_interval_s=0.01, jitter=False, retry_on=NodeTimeoutError)
    graph = one_node(slow_once, timeout=1.0, retry=retry_timeouts)
    assert graph.invoke({"x": 5}) == {"x": 7}
    assert calls == [1, 2]


# --------------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------------


def _cancel_when(ready: Callable[[], bool], reason: str) -> CancelToken:
    """A token cancelled with ``reason`` from another thread once ``ready()`` (waits up to 10 s)."""
    token = CancelToken()

    def cancel() -> None:
        wait_for(ready, 10, "the node to get there")
        token.cancel(reason)

    threading.Thread(target=cancel, daemon=True).start()
    return token


def _state(attempt: int) -> Any:
    from tenacity import RetryCallState

    state = RetryCallState(retry_object=None, fn=None, args=(), kwargs={})  # type: ignore[arg-type]
    state.attempt_number = attempt
    return state
