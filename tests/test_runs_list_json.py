"""``graphq runs list -o json`` prints each run's record without its result (a result is one more read per
run, maybe large); ``runs show RUN -o json`` has it."""

from __future__ import annotations

import json

import redis

from graphcore.backend.runs import RunRecord
from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from graphq.worker.process.rq_worker import run_worker
from graphq.worker.queue import connect_client
from tests.cli_helpers import invoke, ok

WORKFLOWS = "tests.workflows.reducer_inputs"
REGISTRY = Registry.load([WORKFLOWS])


def test_list_json_leaves_the_result_out_show_has_it(redis_url: str, redis_client: redis.Redis) -> None:
    client = connect_client(redis_url, registry=REGISTRY)
    run_id = client.enqueue("counted", {"numbers": 3})
    run_worker(Settings(redis_url=redis_url), burst=True, registry=REGISTRY)
    fields = set(RunRecord.model_fields) - {"result"}
    [listed] = json.loads(ok(invoke(WORKFLOWS, redis_url, "runs", "list", "-o", "json")).stdout)
    assert (set(listed), listed["id"], listed["status"]) == (fields, run_id, "completed")
    [chained] = json.loads(
        ok(invoke(WORKFLOWS, redis_url, "runs", "list", "--chain", run_id, "-o", "json")).stdout
    )
    assert chained == listed
    shown = json.loads(ok(invoke(WORKFLOWS, redis_url, "runs", "show", run_id, "-o", "json")).stdout)
    assert shown["result"] == {"numbers": [3], "note": "numbers=[3]"}
    assert {k: v for k, v in shown.items() if k in fields} == listed
