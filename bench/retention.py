"""Redis memory of one 2,000-step run's thread, with checkpoint history (the default) and without
(``GRAPHQ_ENABLE_CHECKPOINTING=false``, R5), and after completion with
``GRAPHQ_KEEP_CHECKPOINTS_AFTER_COMPLETION=false`` (R7). Not a P target: ``python -m bench.retention``.

Two graphs of one node looping 2,000 times: ``append`` adds 1 KB to an append-only list (P2's graph: the
state itself grows to 2 MB), ``overwrite`` replaces a 1 KB LastValue string (the state stays 1 KB, so
history is all that grows). Memory is P2's measure, ``MEMORY USAGE key SAMPLES 0`` summed over the
thread's keys, split into its checkpoint keys (records, history, values, logs, pending writes, answers),
the run record (where the result is copied when the checkpoints go) and the rest (the run's event stream,
about 1.3 KB per step here, kept whatever these settings say).
"""

from __future__ import annotations

from typing import Any, TypedDict

from bench.common import fmt_bytes, install_context, private_redis, run_burst
from bench.p2_growth import STEPS, growth_graph, item
from graphcore import END, START, StateGraph, keys
from graphcore.backend.client import Client
from graphcore.engine.executor import CompiledGraph
from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from graphq.worker.queue import RQStepQueue, queue_name

QUEUE = "bench-retention"


class Note(TypedDict, total=False):
    note: str
    n: int


def rewrite(state: Note) -> dict[str, Any]:
    """Replace the 1 KB note and count the step."""
    n = state.get("n", 0) + 1
    return {"note": item(n), "n": n}


def _again(state: Note) -> str:
    return "rewrite" if state.get("n", 0) < STEPS else END


def overwrite_graph() -> CompiledGraph:
    """One node that rewrites a 1 KB LastValue channel, looping until ``STEPS`` steps."""
    g = StateGraph(Note)
    g.add_node("rewrite", rewrite)
    g.add_edge(START, "rewrite")
    g.add_conditional_edges("rewrite", _again, ["rewrite", END])
    return g.compile(name="bench-overwrite")


_CHECKPOINT_KINDS = ("cp", "hist", "ch", "log", "writes", "answers")


def thread_split(kv: Any, thread_id: str) -> tuple[int, int, int, int]:
    """(bytes of the thread's checkpoint keys, how many, bytes of its run records (a result copied there
    included), bytes of its other keys: event streams, the thread's run index)."""
    ours = records = other = count = 0
    for key in kv.scan_iter(match=keys.thread_pattern(thread_id), count=1000):
        size = int(kv.memory_usage(key, samples=0) or 0)
        kind = key.decode().split("}:", 1)[1].split(":", 1)[0]
        if kind in _CHECKPOINT_KINDS:
            ours, count = ours + size, count + 1
        elif kind == "run":
            records += size
        else:
            other += size
    return ours, count, records, other


def measure(graph: CompiledGraph, **settings: Any) -> tuple[int, int, int, int]:
    """Run ``graph`` once on the queue with ``settings``; :func:`thread_split` once it completed."""
    with private_redis() as (kv, url):
        config = Settings(redis_url=url, queue=QUEUE, resume_interrupted_runs=False, **settings)
        install_context(kv, config, [graph])
        client = Client(kv, Registry({graph.name: graph}), RQStepQueue(kv, config))
        run_id = client.enqueue(graph.name, {}, config={"max_super_steps": STEPS + 100})
        run_burst(kv, queue_name(QUEUE, graph.name))
        run = client.get_run(run_id)
        if run.status.value != "completed":
            raise RuntimeError(f"run {run_id} ended {run.status.value} at step {run.step}")
        return thread_split(kv, run.thread_id)


def main() -> None:
    """Print one line per graph and setting."""
    variants = {
        "history (default)": {},
        "GRAPHQ_ENABLE_CHECKPOINTING=false": {"enable_checkpointing": False},
        "GRAPHQ_KEEP_CHECKPOINTS_AFTER_COMPLETION=false": {"keep_checkpoints_after_completion": False},
        "both off": {"enable_checkpointing": False, "keep_checkpoints_after_completion": False},
    }
    for graph in (growth_graph(), overwrite_graph()):
        for name, settings in variants.items():
            memory, nkeys, records, other = measure(graph, **settings)
            print(
                f"{graph.name} {STEPS} steps, {name}: checkpoints {fmt_bytes(memory)} in {nkeys} keys, "
                f"run record {fmt_bytes(records)}, events {fmt_bytes(other)}",
                flush=True,
            )


if __name__ == "__main__":
    main()
