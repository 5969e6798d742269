"""Workflows whose nodes invoke graphs in their bodies (not as subgraph nodes): a nested graph that asks, a
node that calls a counting graph twice before an asking one, an inner node that records its idempotency
key, a retried node whose first try fails after its graph call, a node asking around its graph call, and
a node asking from two threads. Each run of an inner node leaves a line
in ``$GRAPHQ_TEST_DIR/nested.log`` (worker subprocesses)."""

from __future__ import annotations

import contextvars
import operator
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Annotated, Any, TypedDict

from graphcore import START, RetryPolicy, StateGraph, get_config, interrupt


class Items(TypedDict, total=False):
    items: Annotated[list[str], operator.add]


def _log(line: str) -> None:
    with (Path(os.environ["GRAPHQ_TEST_DIR"]) / "nested.log").open("a") as log:
        log.write(f"{line}\n")


def ask(state: Items) -> dict[str, Any]:
    key = get_config().configurable["__graphq_idempotency_key"]
    _log(f"ask {key}")
    return {"items": [f"answer:{interrupt('ok?')}"]}


def work(state: Items) -> dict[str, Any]:
    _log(f"work {state['items'][0]}")
    return {"items": ["done"]}


def _one(name: str, fn: Any) -> Any:
    builder = StateGraph(Items)
    builder.add_node(name, fn)
    builder.add_edge(START, name)
    return builder


asker = _one("ask", ask).compile(name="nested-asker")
worker = _one("work", work).compile(name="nested-worker")


def call_asker(state: Items) -> dict[str, Any]:
    """Invokes the asking graph in its body and reports what it returned."""
    return {"items": [f"inner:{asker.invoke({'items': ['x']})['items']}"]}


def call_three(state: Items) -> dict[str, Any]:
    """Two calls of one graph, then an asking one: each call has a namespace of its own."""
    one, two = worker.invoke({"items": ["one"]}), worker.invoke({"items": ["two"]})
    return {"items": one["items"] + two["items"] + asker.invoke({})["items"]}


nested_ask = _one("call", call_asker).compile(name="nested-ask")
nested_three = _one("call", call_three).compile(name="nested-three")


def call_then_fail_once(state: Items) -> dict[str, Any]:
    """Invokes the counting graph, then fails its first try (its retry policy runs it again)."""
    out = worker.invoke({"items": ["x"]})
    tries = Path(os.environ["GRAPHQ_TEST_DIR"]) / "tries.log"
    with tries.open("a") as log:
        log.write("try\n")
    if len(tries.read_text().splitlines()) == 1:
        raise ValueError("the first try fails")
    return {"items": out["items"]}


_retried = StateGraph(Items)
_retried.add_node(
    "call",
    call_then_fail_once,
    retry=RetryPolicy(max_attempts=2, initial_interval_s=0.01, jitter=False, retry_on=ValueError),
)
_retried.add_edge(START, "call")
nested_retry = _retried.compile(name="nested-retry")


def ask_around(state: Items) -> dict[str, Any]:
    """Asks, invokes the asking graph, asks again."""
    first = interrupt("outer?")
    middle = asker.invoke({})["items"]
    return {"items": [first, *middle, interrupt("last?")]}


nested_around = _one("call", ask_around).compile(name="nested-around")


def ask_from_threads(state: Items) -> dict[str, Any]:
    """Asks from two threads of its task (refused: ConcurrentInterruptError)."""
    both = threading.Barrier(2)

    def ask(question: str) -> Any:
        both.wait(5)  # the two threads ask at once
        return interrupt(question)

    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(contextvars.copy_context().run, ask, q) for q in ("q1", "q2")]
    return {"items": [f.result() for f in futures]}


nested_threads = _one("call", ask_from_threads).compile(name="nested-threads")
