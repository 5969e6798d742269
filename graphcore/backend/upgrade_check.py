"""The upgrade check before a deploy: would the threads with active runs go on under new code?

For every thread of a workflow with a run that is queued, running, awaiting input or stopped at a
breakpoint (:func:`active_runs`), the thread's newest checkpoint — the root namespace's, and that of each
subgraph its next tasks run (``node:task_id``, stateful ``node``, level by level) — is compared with the
new code of the workflow:

a. the nodes its next tasks name (a ``Send``'s target too) and those its open human requests name exist in
   the new graph;
b. every channel holding a value is a channel of the new state schema, and the new schema accepts the
   stored value as it is, checked by the engine's own input checks
   (:func:`graphcore.engine.inputs.check_types`, as ``update_state`` checks a write; a value the new type
   takes only converted from its JSON form is refused: the stored value is not converted);
c. in the root namespace, every channel of the old version (the catalog's description of the run's
   ``version``) that the new schema still has keeps its kind and its reducer. A description of format 1
   records only whether a channel has a reducer: a reducer gained or lost is found, a changed one is not
   ("reducer not recorded"). Without the old description (the run records no version, or the catalog has
   pruned it) the verdict says so and (c) is skipped;
d. each subgraph namespace is still reachable: its node exists in the new graph and runs a subgraph.

A channel the new schema added, a new node and a removed channel that holds no value pass. Reads are
pipelined a page of threads at a time (a fixed number of round trips per page, none per thread), each value
decoded once.
"""

from __future__ import annotations

import json
import typing
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from graphcore import keys
from graphcore.backend.connection import retry_transient
from graphcore.backend.runs import TERMINAL, RunStatus
from graphcore.checkpoints import serde
from graphcore.checkpoints.layout import Record, decode_record
from graphcore.engine.algo import task_id
from graphcore.engine.checkpointer import stateful_ns, task_ns
from graphcore.engine.compiled import GraphSpec
from graphcore.engine.describe import channel_entry, describe, subgraph_of, version_of
from graphcore.engine.inputs import check_types
from graphcore.engine.schema import ROOT, StateSchema
from graphcore.errors import InvalidUpdateError, SerializationError

__all__ = ["PAGE", "ActiveRun", "ThreadVerdict", "UpgradeReport", "active_runs", "check_upgrade", "pinned"]

PAGE = 500
"""Runs (listing) and threads (checking) read per pipelined page, by default."""

_FIELDS = ["workflow", "status", "version", "head", "breakpoint", "pinned"]
"""The run hash fields the listing reads."""

_CHECKER = "__upgrade_check__"
"""The writer the stored values are checked as (any node's name but START: the state schema's keys)."""

Where = tuple[str, str]
"""(thread id, checkpoint namespace)."""


@dataclass(frozen=True)
class ActiveRun:
    """A run that has not ended, as the check reads it.

    Attributes:
        at_breakpoint: awaiting input at a static breakpoint it was not let past yet.
        version: the workflow's catalog version it started with (64 hex digits); None in older records.
        head: the newest checkpoint it committed, None before its input was applied.
        pinned: its steps run only on workers serving ``version``
            (:attr:`graphcore.backend.runs.RunRecord.pinned`).
    """

    id: str
    thread_id: str
    workflow: str
    status: RunStatus
    version: str | None
    head: str | None
    at_breakpoint: bool
    pinned: bool = False

    @property
    def label(self) -> str:
        """``run R queued | running | awaiting_input | at a breakpoint``."""
        return f"run {self.id} {'at a breakpoint' if self.at_breakpoint else self.status.value}"


def active_runs(kv: Any, workflow: str | None = None, page: int = PAGE) -> list[ActiveRun]:
    """The runs that have not ended (queued, running, awaiting input: a breakpoint stop is one), oldest
    first; only those of ``workflow`` when given. Pages of ``page`` runs: the ids, their threads, then
    their fields, each one pipelined round trip; transient Redis errors are retried.

    Raises:
        redis.RedisError: Redis failed permanently, or transiently through every retry.
    """
    found: list[ActiveRun] = []
    start = 0
    while True:
        runs = retry_transient(_run_page, kv, start, page, workflow)
        if runs is None:
            return found
        found += runs
        start += page


def _run_page(kv: Any, start: int, page: int, workflow: str | None) -> list[ActiveRun] | None:
    ids = [i.decode() for i in kv.zrange(keys.runs_index(), start, start + page - 1)]
    if not ids:
        return None
    pairs = [(r, t.decode()) for r, t in zip(ids, kv.hmget(keys.run_threads(), ids), strict=True) if t]
    pipe = kv.pipeline(transaction=False)
    for run_id, thread in pairs:
        pipe.hmget(keys.run(thread, run_id), _FIELDS)
    found = []
    for (run_id, thread), values in zip(pairs, pipe.execute(), strict=True):
        flow, status, version, head, mark, pin = (None if v is None else v.decode() for v in values)
        if flow is None or status is None or status in TERMINAL or workflow not in (None, flow):
            continue
        stop = json.loads(mark) if mark else {}
        stopped = status == RunStatus.AWAITING_INPUT and bool(stop) and not stop.get("continued")
        found.append(ActiveRun(run_id, thread, flow, RunStatus(status), version, head, stopped, pin == "1"))
    return found


def pinned(runs: Iterable[ActiveRun]) -> Counter[tuple[str, str]]:
    """(workflow, version) → how many of ``runs`` are pinned to that version (runs not pinned, and runs
    without a version yet, left out)."""
    return Counter((r.workflow, r.version) for r in runs if r.version is not None and r.pinned)


@dataclass(frozen=True)
class ThreadVerdict:
    """What the check found on one thread.

    Attributes:
        runs: the thread's active runs.
        problems: what would break, each naming where (namespace, node or channel, the stored value's type
            and the type expected); empty: the thread would go on.
        notes: what was not checked and why (no old description to compare reducers with).
    """

    thread_id: str
    runs: list[ActiveRun]
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when nothing would break."""
        return not self.problems

    def line(self) -> str:
        """``thread T (run R status, ...): ok`` or ``...: would break: A; B``, then the notes in brackets."""
        head = f"thread {self.thread_id} ({', '.join(r.label for r in self.runs)}): "
        verdict = "ok" if self.ok else "would break: " + "; ".join(self.problems)
        return head + verdict + (f" ({'; '.join(self.notes)})" if self.notes else "")


@dataclass(frozen=True)
class UpgradeReport:
    """The check of one workflow's threads against its new code.

    Attributes:
        version: the new code's catalog version (64 hex digits).
        threads: one verdict per thread with an active run, in the order their runs were created.
    """

    workflow: str
    version: str
    threads: list[ThreadVerdict]

    @property
    def broken(self) -> int:
        """How many threads would break."""
        return sum(not t.ok for t in self.threads)

    def summary(self) -> str:
        """``N threads checked: X ok, Y would break``."""
        n = len(self.threads)
        return f"{n} threads checked: {n - self.broken} ok, {self.broken} would break"


def check_upgrade(
    kv: Any, graph: GraphSpec, runs: Sequence[ActiveRun] | None = None, page: int = PAGE
) -> UpgradeReport:
    """Check every thread of ``graph``'s workflow that has an active run against ``graph``, the new code
    (see the module docstring). Transient Redis errors are retried.

    Args:
        graph: the new code of the workflow (its name is the workflow's).
        runs: the active runs (:func:`active_runs`), when the caller read them already; others' workflows
            are left out.
        page: threads (and runs, when ``runs`` is None) read per pipelined page.

    Raises:
        redis.RedisError: Redis failed permanently, or transiently through every retry.
        SerializationError: a stored checkpoint cannot be read (a format or class this process cannot read).
    """
    found = (
        active_runs(kv, graph.name, page) if runs is None else [r for r in runs if r.workflow == graph.name]
    )
    by_thread: dict[str, list[ActiveRun]] = {}
    for run in found:
        by_thread.setdefault(run.thread_id, []).append(run)
    olds = retry_transient(_old_descriptions, kv, graph.name, {r.version for r in found if r.version})
    threads = list(by_thread.items())
    verdicts: list[ThreadVerdict] = []
    for start in range(0, len(threads), page):
        verdicts += retry_transient(_check_page, kv, graph, dict(threads[start : start + page]), olds)
    return UpgradeReport(graph.name, version_of(describe(graph)), verdicts)


def _old_descriptions(kv: Any, workflow: str, versions: set[str]) -> dict[str, dict[str, Any]]:
    """Version → its description in the catalog (versions the catalog no longer has left out)."""
    wanted = sorted(versions)
    texts = kv.hmget(keys.catalog_versions(workflow), wanted) if wanted else []
    return {v: json.loads(t) for v, t in zip(wanted, texts, strict=True) if t is not None}


def _check_page(
    kv: Any, graph: GraphSpec, page: Mapping[str, list[ActiveRun]], olds: Mapping[str, dict[str, Any]]
) -> list[ThreadVerdict]:
    """The verdicts of one page of threads: their heads level by level, their values, their requests."""
    records = _heads(kv, [(t, "") for t in page])
    level = dict(records)
    while level:
        level = _heads(kv, [child for where, rec in level.items() for child in _children(where, rec)])
        records.update(level)
    values = _values(kv, records)
    requests = _open_requests(kv, [r for runs in page.values() for r in runs])
    namespaces: dict[str, list[str]] = {}
    for thread, ns in records:
        namespaces.setdefault(thread, []).append(ns)
    verdicts = []
    for thread, runs in page.items():
        verdict = ThreadVerdict(thread, runs)
        for ns in namespaces.get(thread, []):
            _check_namespace(verdict, graph, ns, records[(thread, ns)], values[(thread, ns)])
        _check_requests(verdict, graph, requests)
        _check_reducers(verdict, graph.schema, olds)
        verdicts.append(verdict)
    return verdicts


def _heads(kv: Any, places: Sequence[Where]) -> dict[Where, Record]:
    """The newest checkpoint record of each (thread, namespace) that has one: two pipelined round trips."""
    if not places:
        return {}
    pipe = kv.pipeline(transaction=False)
    for thread, ns in places:
        pipe.lindex(keys.history(thread, ns), -1)
    ids = dict(zip(places, pipe.execute(), strict=True))
    present = [(where, cid.decode()) for where, cid in ids.items() if cid is not None]
    for (thread, ns), cid in present:
        pipe.hget(keys.checkpoints(thread, ns), cid)
    raws = pipe.execute() if present else []
    return {where: decode_record(raw) for (where, _), raw in zip(present, raws, strict=True) if raw}


def _children(where: Where, record: Record) -> list[Where]:
    """The namespaces the next tasks of ``record`` run subgraphs in (per call, and stateful)."""
    thread, ns = where
    cid = record.fields["id"]
    found: list[Where] = []
    for index, (node, *_) in enumerate(record.fields["next_tasks"]):
        child = task_ns(ns, node, task_id(cid, index, node))
        found += [(thread, child), (thread, stateful_ns(child))]
    return list(dict.fromkeys(found))


def _values(kv: Any, records: Mapping[Where, Record]) -> dict[Where, dict[str, Any]]:
    """The channel values of each record: one pipelined round trip, each value decoded once (an
    :class:`Unreadable` in place of one that cannot be)."""
    pipe = kv.pipeline(transaction=False)
    fetches: list[tuple[Where, str]] = []
    for (thread, ns), record in records.items():
        for channel, ref in record.refs.items():
            if ref[0] == "v":
                pipe.hget(keys.channel_values(thread, ns, channel), str(ref[1]))
            else:
                pipe.lrange(keys.channel_log(thread, ns, channel, ref[1]), 0, ref[2] - 1)
            fetches.append(((thread, ns), channel))
    out: dict[Where, dict[str, Any]] = {where: {} for where in records}
    for (where, channel), raw in zip(fetches, pipe.execute() if fetches else [], strict=True):
        kind = records[where].refs[channel][0]
        try:
            out[where][channel] = serde.loads(raw) if kind == "v" else [serde.loads(b) for b in raw]
        except SerializationError as exc:  # e.g. a class the new code no longer allows
            out[where][channel] = Unreadable(str(exc))
    return out


@dataclass(frozen=True)
class Unreadable:
    """A stored value this process cannot load, and why (:func:`graphcore.checkpoints.serde.loads`)."""

    reason: str


def _open_requests(kv: Any, runs: Sequence[ActiveRun]) -> dict[str, list[tuple[str, str]]]:
    """Thread → (request id, node) of the open requests of its runs awaiting input: asked at the run's head
    and not answered (one pipelined round trip)."""
    waiting = [r for r in runs if r.status == RunStatus.AWAITING_INPUT and r.head is not None]
    pipe = kv.pipeline(transaction=False)
    for run in waiting:
        pipe.hgetall(keys.requests(run.thread_id, run.id))
    found: dict[str, list[tuple[str, str]]] = {}
    for run, raw in zip(waiting, pipe.execute() if waiting else [], strict=True):
        for rid, blob in raw.items():
            rec = serde.loads(blob)
            if "answered_at" not in rec and rec.get("checkpoint_id") == run.head:
                found.setdefault(run.thread_id, []).append((rid.decode(), rec["node"]))
    return found


def _graph_at(verdict: ThreadVerdict, graph: GraphSpec, ns: str) -> GraphSpec | None:
    """The new code's graph that runs in namespace ``ns`` (None, with the problem noted, when the new code
    cannot reach it: (d))."""
    current = graph
    for part in ns.split("|") if ns else []:
        node = part.split(":")[0]
        spec = current.nodes.get(node)
        sub = None if spec is None else subgraph_of(spec)
        if sub is None:
            what = "is not in the new graph" if spec is None else "no longer runs a subgraph"
            verdict.problems.append(f"subgraph namespace {ns!r}: node {node!r} {what}")
            return None
        current = sub
    return current


def _check_namespace(
    verdict: ThreadVerdict, graph: GraphSpec, ns: str, record: Record, values: Mapping[str, Any]
) -> None:
    """(a), (b) and (d) for the checkpoint of one namespace."""
    target = _graph_at(verdict, graph, ns)
    if target is None:
        return
    where = f"in subgraph namespace {ns!r}: " if ns else ""
    for node, send, *_ in record.fields["next_tasks"]:
        if node not in target.nodes:
            what = "a Send's target" if send else "next task"
            verdict.problems.append(f"{where}{what} {node!r} is not a node of the new graph")
    for channel, value in values.items():
        problem = _value_problem(target.schema, channel, value)
        if problem is not None:
            verdict.problems.append(where + problem)


def _value_problem(schema: StateSchema, channel: str, value: Any) -> str | None:
    """What is wrong with ``value`` stored in ``channel`` under the new ``schema``; None: nothing."""
    if isinstance(value, Unreadable):
        return f"channel {channel!r} holds a value the new code cannot load: {value.reason}"
    held = type(value).__name__
    if channel not in schema.channels:
        return f"channel {channel!r} holds a value ({held}) but the new state schema has no such channel"
    given = value if schema.root else {channel: value}
    try:
        stored = check_types(schema, given, path="state", writer=_CHECKER)
    except (InvalidUpdateError, SerializationError) as exc:
        refused = f"refuses: {exc}"
    else:
        if stored is given:
            return None
        refused = "takes only from its JSON form"
    expected = _type_name(schema, channel)
    return f"channel {channel!r} holds a value of type {held}, which the new type {expected} {refused}"


def _type_name(schema: StateSchema, channel: str) -> str:
    """The type the new state schema declares for ``channel``, as written (``int``, ``list[str]``)."""
    if channel == ROOT:
        declared: Any = schema.schema
    else:
        try:
            declared = typing.get_type_hints(schema.schema).get(channel, Any)
        except Exception:  # a hint that does not resolve here: name the schema's annotation as written
            declared = getattr(schema.schema, "__annotations__", {}).get(channel, Any)
    if isinstance(declared, type) and not typing.get_args(declared):
        return declared.__name__
    return str(declared).replace("typing.", "")


def _check_requests(verdict: ThreadVerdict, graph: GraphSpec, requests: Mapping[str, Any]) -> None:
    """(a) for the open human requests of the thread's runs (root namespace)."""
    for rid, node in requests.get(verdict.thread_id, []):
        if node not in graph.nodes:
            verdict.problems.append(
                f"open request {rid} was asked by node {node!r}, not a node of the new graph"
            )


def _check_reducers(verdict: ThreadVerdict, schema: StateSchema, olds: Mapping[str, dict[str, Any]]) -> None:
    """(c) against the old description of each version the thread's runs started with."""
    for version in dict.fromkeys(r.version for r in verdict.runs):
        old = olds.get(version) if version else None
        if old is None:
            why = "records no version" if version is None else f"version {version[:12]} is not in the catalog"
            run = next(r.id for r in verdict.runs if r.version == version)
            verdict.notes.append(f"reducers not compared: run {run} {why}")
            continue
        for entry in old["channels"]:
            channel = schema.channels.get(entry["name"])
            if channel is not None:
                _compare_channel(verdict, entry, channel_entry(entry["name"], channel))


def _compare_channel(verdict: ThreadVerdict, old: dict[str, Any], new: dict[str, Any]) -> None:
    """A channel's old entry against its new one; format 1 (``reducer: bool``) only as far as it goes."""
    name, was, now = old["name"], old["reducer"], new["reducer"]
    if isinstance(was, bool):  # format 1
        if was and now is not None:
            verdict.notes.append(f"channel {name!r}: reducer not recorded")
            return
        was = "a reducer" if was else None
    if was == now and old.get("kind", new["kind"]) == new["kind"]:
        return
    if was is None:
        verdict.problems.append(f"channel {name!r} gained a reducer ({now}), it had none")
    elif now is None:
        verdict.problems.append(f"channel {name!r} lost its reducer ({was})")
    elif was != now:
        verdict.problems.append(f"channel {name!r} changed its reducer from {was} to {now}")
    else:
        verdict.problems.append(f"channel {name!r} changed its kind from {old['kind']} to {new['kind']}")
