"""``graphq runs watch --mode checkpoints`` shows what LangGraph's ``stream_mode="checkpoints"`` with
``subgraphs=True`` shows: the run's input checkpoint (step -1), then each root checkpoint, with the
checkpoints of a step's subgraph (its namespace in the config, with ``checkpoint_map``, and the root
checkpoint in metadata ``parents``) before the root checkpoint of that step."""

from __future__ import annotations

import json
from typing import Any

from graphcore import InMemorySaver
from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from graphq.worker.process.rq_worker import run_worker
from tests.cli_helpers import invoke, ok
from tests.workflows.watched_subgraph import builder

WORKFLOWS = "tests.workflows.watched_subgraph"


def _shape(payload: dict[str, Any], ids: dict[str, str]) -> tuple[Any, ...]:
    """A checkpoint payload with its checkpoint ids and task ids named by order of appearance."""

    def named(text: str) -> str:
        for part in text.replace("|", ":").split(":"):
            if len(part) >= 16 and part not in ids:
                ids[part] = f"#{len(ids)}"
        for raw, name in ids.items():
            text = text.replace(raw, name)
        return text

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {named(k): walk(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [walk(v) for v in value]
        return named(value) if isinstance(value, str) else value

    return (
        walk(payload["config"]),
        walk(payload["parent_config"]),
        walk(payload["metadata"]),
        payload["next"],
        payload["values"],
    )


def test_watch_checkpoints_shows_the_input_checkpoint_and_the_subgraphs(redis_url: str) -> None:
    given = json.dumps({"topic": "owls", "steps": []})
    run_id = ok(invoke(WORKFLOWS, redis_url, "enqueue", "watched-writer", "--input", given)).stdout.strip()
    run_worker(Settings(redis_url=redis_url), burst=True, registry=Registry.load([WORKFLOWS]))
    result = ok(invoke(WORKFLOWS, redis_url, "runs", "watch", run_id, "--mode", "checkpoints", "-o", "json"))
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    watched = [(e["mode"], e["step"], e["data"]["metadata"]["step"], e["data"]["next"]) for e in lines]
    assert watched == [
        ("checkpoints", -1, -1, ["__start__"]),
        ("checkpoints", 0, 0, ["plan"]),
        ("checkpoints", 1, 1, ["writer"]),
        ("checkpoints", 2, -1, ["__start__"]),
        ("checkpoints", 2, 0, ["sub_a"]),
        ("checkpoints", 2, 1, ["sub_b"]),
        ("checkpoints", 2, 2, []),
        ("checkpoints", 2, 2, ["polish"]),
        ("checkpoints", 3, 3, []),
    ]
    in_process = builder().compile(checkpointer=InMemorySaver())
    streamed = in_process.stream(
        {"topic": "owls", "steps": []},
        {"configurable": {"thread_id": "t"}},
        stream_mode="checkpoints",
        subgraphs=True,
    )
    thread = lines[0]["data"]["config"]["configurable"]["thread_id"]
    ids: dict[str, str] = {thread: "t"}
    expected_ids: dict[str, str] = {"t": "t"}
    assert [_shape(e["data"], ids) for e in lines] == [_shape(p, expected_ids) for _, p in streamed]
