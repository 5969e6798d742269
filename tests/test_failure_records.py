"""A failed run's error names where it failed: for each way a queued run fails, the
record's type, node, step and message, and the same as ``graphq runs show`` prints them."""

from __future__ import annotations

from typing import Any

import pytest

from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from graphcore.errors import NodeError
from graphq.cli.output import clip
from tests.cli_helpers import invoke, ok
from tests.workers import work
from tests.workflows import run_errors

FLOWS = "tests.workflows.run_errors"
REGISTRY = Registry.load([FLOWS])

_UNSTORABLE = (
    "node 'unserialisable' wrote state.bad.inner[1]: type 'object' is not serializable; allowed types: "
    "None, bool, int, float, str, bytes, list, dict, tuple, set, frozenset, datetime, date, time, "
    "timedelta, Decimal, UUID, Enum members, pydantic BaseModel and dataclass instances of module-level "
    "classes"
)

CASES = [
    # workflow, input, then the error: type, node, thread step, message
    ("err-node", {}, "NodeError", "lookup", 2, "node 'lookup' raised KeyError: 'words'"),
    ("err-router", {}, "NodeError", "ok", 1, "router 'pick' after node 'ok' raised KeyError: 'words'"),
    (
        "err-send",
        {},
        "InvalidUpdateError",
        "ok",
        1,
        "router 'nowhere' after node 'ok' sent to unknown node 'missing'",
    ),
    (
        "err-conflict",
        {},
        "InvalidUpdateError",
        None,
        1,
        "At key 'n': Can receive only one value per step (2 writes in one super-step, from also, ok). Use an "
        "Annotated key to handle multiple values: Annotated[T, reducer]",
    ),
    (
        "err-reducer",
        {"seen": [1]},
        "InvalidUpdateError",
        "repeat",
        1,
        "reducer of channel 'seen' raised ValueError: [1] already there (writes from repeat)",
    ),
    ("err-input", {}, "NodeError", "__start__", 0, "router 'fan_out' after START raised KeyError: 'words'"),
    ("err-serialization", {}, "SerializationError", "unserialisable", 1, _UNSTORABLE),
    (
        "err-timeout",
        {},
        "NodeTimeoutError",
        "slow",
        1,
        "node 'slow' timed out after 0.5 s (timeout=0.5 set on add_node)",
    ),
    (
        "err-retries",
        {},
        "NodeError",
        "flaky",
        1,
        "node 'flaky' raised ConnectionError: upstream unavailable (after 2 attempts)",
    ),
]


def shown_rows(text: str) -> dict[str, str]:
    """The ``field │ value`` rows of ``graphq runs show``'s table (the lines of a wrapped value joined)."""
    rows: dict[str, str] = {}
    last = ""
    for line in text.splitlines():
        if "│" not in line:
            continue
        field, _, value = (part.strip() for part in line.partition("│"))
        if field:
            last, rows[field] = field, value
        else:
            rows[last] += f" {value}"
    return rows


@pytest.mark.parametrize(
    ("workflow", "given", "kind", "node", "step", "message"), CASES, ids=[case[0] for case in CASES]
)
def test_a_failed_runs_error_names_its_type_node_and_step(
    client: Client,
    redis_url: str,
    workflow: str,
    given: dict[str, Any],
    kind: str,
    node: str | None,
    step: int,
    message: str,
) -> None:
    run_id = client.enqueue(workflow, given)
    work(client)
    run = client.get_run(run_id)
    assert run.status == RunStatus.FAILED and run.error is not None
    assert (run.error.type, run.error.node, run.error.step, run.error.message) == (kind, node, step, message)
    rows = shown_rows(ok(invoke(FLOWS, redis_url, "runs", "show", run_id)).stdout)
    shown = clip(message, 200)  # runs show cuts a cell at 200 characters (-o json has it whole)
    assert (rows["step"], rows["error type"], rows["error"]) == (str(step), kind, shown)


def test_enqueue_without_input_fails_at_the_input_step_naming_the_router(
    client: Client, redis_url: str
) -> None:
    """``graphq enqueue err-input`` (no --input) is accepted; the run fails at step 0 (its input applied,
    after the input checkpoint at -1) and ``graphq runs show`` says which router raised what (it said
    ``'words'``, with a blank step)."""
    run_id = ok(invoke(FLOWS, redis_url, "enqueue", "err-input")).stdout.strip()
    work(client)
    rows = shown_rows(ok(invoke(FLOWS, redis_url, "runs", "show", run_id)).stdout)
    assert (rows["status"], rows["step"], rows["error type"], rows["error"]) == (
        "failed",
        "0",
        "NodeError",
        "router 'fan_out' after START raised KeyError: 'words'",
    )


@pytest.mark.parametrize(
    ("graph", "node", "message"),
    [
        (run_errors.input_failing, "__start__", "router 'fan_out' after START raised KeyError: 'words'"),
        (run_errors.router_failing, "ok", "router 'pick' after node 'ok' raised KeyError: 'words'"),
    ],
    ids=["start", "node"],
)
def test_a_routers_error_in_process_is_its_own_type_naming_the_router(
    graph: Any, node: str, message: str
) -> None:
    """In process, a router's KeyError is still caught as a KeyError (LangGraph raises the KeyError
    itself), and is a NodeError naming the router and its node."""
    with pytest.raises(KeyError) as info:
        graph.invoke({})
    assert isinstance(info.value, NodeError)
    assert (info.value.node, info.value.args, str(info.value)) == (node, ("words",), message)
