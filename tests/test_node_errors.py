"""A node's exception is raised as a NodeError that is also the exception's own type (G4)."""

from __future__ import annotations

import copy
from typing import Any, TypedDict

import pytest
import redis

from graphcore import START, NodeError, StateGraph
from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from graphcore.errors import node_error
from graphcore.settings import Settings
from graphq.worker.process.rq_worker import run_worker

REGISTRY = Registry.load(["tests.workflows.node_errors"])


class S(TypedDict, total=False):
    n: int


class MyAppError(Exception):
    def __init__(self, code: int, *, where: str = "here") -> None:
        super().__init__(f"code {code} at {where}")
        self.code, self.where = code, where


def _raising(error: BaseException) -> Any:
    def boom(state: S) -> dict[str, Any]:
        raise error

    builder = StateGraph(S)
    builder.add_node("boom", boom)
    builder.add_edge(START, "boom")
    return builder.compile()


@pytest.mark.parametrize(
    ("error", "kind", "text"),
    [
        (KeyError("k"), KeyError, "node 'boom' raised KeyError: 'k'"),
        (MyAppError(7, where="db"), MyAppError, "node 'boom' raised MyAppError: code 7 at db"),
        (
            FileNotFoundError(2, "gone", "/x"),
            OSError,
            "node 'boom' raised FileNotFoundError: [Errno 2] gone: '/x'",
        ),
    ],
)
def test_the_raised_error_is_a_node_error_and_the_nodes_type(error: Exception, kind: type, text: str) -> None:
    with pytest.raises(NodeError) as info:
        _raising(error).invoke({})
    raised = info.value
    assert isinstance(raised, kind) and isinstance(raised, type(error))
    assert (raised.node, raised.error, raised.__cause__) == ("boom", error, error)
    assert str(raised) == text
    assert repr(raised) == f"NodeError({text!r})"
    assert type(raised).__name__ == "NodeError" and raised.args == error.args
    assert vars(error).items() <= vars(raised).items()  # the user class's attributes (code, where)


def test_an_os_error_keeps_errno_strerror_and_filename() -> None:
    with pytest.raises(FileNotFoundError) as info:
        _raising(FileNotFoundError(2, "gone", "/x")).invoke({})
    assert (info.value.errno, info.value.strerror, info.value.filename) == (2, "gone", "/x")


def test_one_combined_class_per_exception_type() -> None:
    first, second = node_error("a", KeyError("1")), node_error("b", KeyError("2"))
    assert type(first) is type(second) and type(first) is not NodeError
    assert type(node_error("a", ValueError())) is not type(first)


class Final(Exception):
    def __init_subclass__(cls, **kwargs: Any) -> None:
        raise TypeError("Final takes no subclasses")


@pytest.mark.parametrize("error", [Final("f"), StopIteration(3)], ids=["final-class", "stop-iteration"])
def test_a_type_that_cannot_be_combined_raises_a_plain_node_error(error: Exception) -> None:
    """A final class cannot be combined; a StopIteration raised in the stream's generator would become a
    RuntimeError (PEP 479): both are raised as a plain NodeError, in invoke and in stream."""
    with pytest.raises(NodeError) as info:
        _raising(error).invoke({})
    assert type(info.value) is NodeError and info.value.error is error
    with pytest.raises(NodeError):
        list(_raising(error).stream({}))


def test_a_node_error_copies_as_itself() -> None:
    made = node_error("n", MyAppError(3))
    copied = copy.copy(made)
    assert type(copied) is type(made) and (copied.node, copied.error, str(copied)) == (
        "n",
        made.error,
        str(made),
    )


def test_a_graph_invoked_in_a_node_raises_its_inner_nodes_error() -> None:
    """The inner graph's error passes through the outer node unchanged: the inner node's name, the type."""
    inner = _raising(KeyError("deep"))

    def outer(state: S) -> dict[str, Any]:
        return inner.invoke({})  # type: ignore[no-any-return]

    builder = StateGraph(S)
    builder.add_node("outer", outer)
    builder.add_edge(START, "outer")
    with pytest.raises(KeyError) as info:
        builder.compile().invoke({})
    assert isinstance(info.value, NodeError) and info.value.node == "boom"


def _work(redis_client: redis.Redis, redis_url: str) -> None:
    run_worker(Settings(redis_url=redis_url), burst=True, registry=REGISTRY, kv=redis_client)


def test_a_queued_runs_error_record_reads_as_before(
    client: Client, redis_client: Any, redis_url: str
) -> None:
    run_id = client.enqueue("keyerror", {})
    _work(redis_client, redis_url)
    run = client.get_run(run_id)
    assert run.status == RunStatus.FAILED and run.error is not None
    assert (run.error.type, run.error.message) == ("NodeError", "node 'lookup' raised KeyError: 'k'")
    assert run.error.traceback.endswith("graphcore.errors.NodeError: node 'lookup' raised KeyError: 'k'\n")


def test_a_nodes_own_redis_error_fails_the_run(client: Client, redis_client: Any, redis_url: str) -> None:
    """The node's redis ConnectionError arrives as a NodeError that is also a ConnectionError: the worker
    does not take it for graphq's own Redis going away (it would run the step again for as long as that
    lasts); the run fails naming the node."""
    run_id = client.enqueue("redisdown", {})
    _work(redis_client, redis_url)
    run = client.get_run(run_id)
    assert run.status == RunStatus.FAILED and run.error is not None
    assert (run.error.type, run.error.message) == (
        "NodeError",
        "node 'redis_down' raised ConnectionError: down",
    )
