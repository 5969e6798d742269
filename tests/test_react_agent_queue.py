"""``create_react_agent`` on a ``graphq worker`` subprocess: as LangGraph's v2 in process
(tests/compat/test_react_agent_tasks.py), the router after the model sends one ``tools`` task per tool
call, so the step-1 checkpoint of a queued thread schedules 3 ``tools`` tasks for 3 calls, each given its
call; calls that ask pause the run with one request each, answered by id; the call that finished before
the pause is not run again."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import HumanMessage

from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from tests.workers import burst, worker_env

MODULE = "tests.workflows.react_tasks"
REGISTRY = Registry.load([MODULE])


def test_each_tool_call_is_its_own_task_on_a_worker(client: Client, redis_url: str, tmp_path: Path) -> None:
    env = worker_env(redis_url, MODULE, test_dir=tmp_path)
    run_id = client.enqueue("react-approvals", {"messages": [HumanMessage("go", id="h")]}, thread_id="t")
    burst(env)
    assert client.get_run(run_id).status == RunStatus.AWAITING_INPUT
    asks = client.requests(run_id)
    assert sorted(r.value["approve"] for r in asks) == ["pay", "ship"]
    client.answer(run_id, {r.id: f"ok-{r.value['approve']}" for r in asks})
    burst(env)
    run = client.get_run(run_id)
    assert run.status == RunStatus.COMPLETED and run.result is not None
    assert [(m.type, m.content, getattr(m, "tool_call_id", None)) for m in run.result["messages"][2:]] == [
        ("tool", "pay: ok-pay", "c-pay"),
        ("tool", "z", "c-quick"),
        ("tool", "ship: ok-ship", "c-ship"),
        ("ai", "done", None),
    ]
    assert (tmp_path / "quick.log").read_text() == "z\n"
    history = [
        (cp.step, [(t.node, t.send, t.arg["tool_call"]["id"] if t.send else None) for t in cp.next_tasks])
        for cp in client.get_history("t")
    ]
    assert history == [
        (3, []),
        (2, [("agent", False, None)]),
        (1, [("tools", True, "c-pay"), ("tools", True, "c-quick"), ("tools", True, "c-ship")]),
        (0, [("agent", False, None)]),
        (-1, [("__start__", False, None)]),
    ]
