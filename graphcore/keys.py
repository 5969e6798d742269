"""Every Redis key graphq uses, built here and nowhere else (I8).

A thread's keys carry the hash tag ``{<thread>}`` so they share one cluster slot; the fenced commit touches
only keys of one thread. The run index keys are global (one slot) and never part of a commit.

Key map (``T`` = thread id, ``NS`` = checkpoint namespace, ``""`` at the root)::

    graphq:{T}:cp:NS              hash   checkpoint id -> checkpoint record (msgpack)
    graphq:{T}:hist:NS            list   checkpoint ids, oldest first
    graphq:{T}:ch:NS:CHANNEL      hash   channel version -> value (msgpack)
    graphq:{T}:log:NS:CHANNEL:GEN list   items of an append-only list channel (msgpack each)
    graphq:{T}:writes:NS:CP       hash   task id -> pending writes of the step after CP (I2)
    graphq:{T}:answers:NS:CP      hash   interrupt id -> a human's answer, for the step after CP (G6)
    graphq:{T}:run:RUN            hash   run record
    graphq:{T}:requests:RUN       hash   interrupt id -> where a human request was made (R16)
    graphq:{T}:events:RUN         stream run events (C6)
    graphq:{T}:lease:RUN          string lease token of the step being run (R18)
    graphq:{T}:split:CP           hash   a split step's record: its batches, their leases, what is done
                                         (graphq.worker.step.split; the step that follows CP)
    graphq:{T}:split-done:CP      list   batches of that split step done, to wake its owner
    graphq:{T}:runs               zset   run ids of the thread by creation time
    graphq:{T}:active             string the thread's active run (I3)
    graphq:{T}:waiting            list   runs waiting for the thread, in order
    graphq:{T}:keys               set    the thread's key names, while a thread TTL applies (K3): the
                                         refresh expires them together; its own expiry is the thread's
    graphq:runs                   zset   all run ids by creation time
    graphq:run-thread             hash   run id -> thread id
    graphq:run-create:RUN         string never kept: WATCHed by the transaction that creates run RUN under
                                         an id its caller chose, and set and deleted in it, so that of two
                                         concurrent creates of one id one commits
    graphq:leases                 zset   lease_member(T, RUN) -> lease deadline, ms since the epoch (R18)
    graphq:busy-threads           zset   thread id -> when it became busy or was last checked (ms): the
                                         reaper hands a thread whose active run ended on (its worker died
                                         between the run's end and the hand-over)
    graphq:steps                  zset   step_member(T, RUN, STEP) -> when its job was enqueued (ms): step
                                         jobs not yet claimed (a job a worker took and died with is found)
    graphq:recovery               zset   recovery_member(kind, T, RUN) -> when staged: reaped runs whose job
                                         (kind "enqueue") or thread hand-over ("handover") is still to do
    graphq:reaper:lock            string owner token of the active reaper
    graphq:retention              zset   T and lease_member(T, RUN) of each of its runs -> when the
                                         thread's keys expire, ms (K3): the sweep clears shared indexes
    graphq:NAME:lock              string owner token of the active instance of housekeeping loop NAME
                                         (request-expiry, retention, ...; the reaper's is graphq:reaper:lock)
    graphq:request-deadlines      zset   lease_member(T, RUN) -> the deadline of the earliest open request of
                                         a run awaiting input, ms (R13); only runs whose requests have one
    graphq:api:idempotency:SHA    string JSON {digest, run_ids}: the runs a ``POST /api/runs`` with header
                                         ``Idempotency-Key`` (SHA = its SHA-256) enqueues; kept 24 h
    graphq:webhooks               hash   delivery id RUN:STATUS:N -> a webhook delivery (JSON: the run, its
                                         status, the URL, attempts; graphcore.backend.webhooks), from its
                                         status change until it is delivered (kept while dead)
    graphq:webhooks:due           zset   delivery id -> when it is due (ms): added by the status change,
                                         pushed back by a claim (a lapsed claim is due again) and a retry
    graphq:webhooks:dead          zset   delivery id -> when it was given up (ms): dead letters
    graphq:disabled               string the kill switch (R6): present = off; JSON {reason, since}
    rq:suspended                  string RQ's own worker suspension, set and cleared with graphq:disabled
    graphq:adm:waiting            zset   runs waiting for a slot (R8), score 0, lex members
                                         TENANT\0WORKFLOW\0SEQ\0T:RUN: one lane per (tenant, workflow)
    graphq:adm:lanes              zset   score 0, TENANT\0SEQ\0WORKFLOW: each lane by its oldest run
    graphq:adm:tenants            zset   tenant -> pass (fair turns): tenants with a waiting run
    graphq:adm:passes             hash   tenant -> pass; graphq:adm:state hash: seq, vtime
    graphq:adm:entries            hash   T:RUN -> a waiting run's entry (its limits, deadline, RQ job)
    graphq:adm:deadlines          zset   T:RUN -> a waiting run's deadline, ms (R15)
    graphq:adm:holders            hash   T:RUN -> TENANT\0WORKFLOW of each run holding a slot
    graphq:adm:counts             hash   g, t\0TENANT, w\0WORKFLOW, x\0WORKFLOW\0TENANT -> runs holding
                                         a slot; q\0TENANT -> runs waiting
    graphq:adm:limits             hash   the limits the workers published (g, t, weights, by, at)
    graphq:adm:debug              string present: the admission script records graphq:adm:stats (the
                                         highest counts it saw) and graphq:adm:log (each admission)
    graphq:workers                zset   worker id -> heartbeat expiry, ms since the epoch
    graphq:worker:ID              hash   a live worker's record (expires with its heartbeat)
    graphq:catalog                zset   workflow name -> when a worker last published it (ms), R9
    graphq:catalog:W:versions     hash   version hash -> the workflow's description (canonical JSON)
    graphq:catalog:W:seen         zset   version hash -> when a worker last published it (ms)
    graphq:catalog:W:workers      zset   catalog_member(VERSION, WORKER) -> when published (ms); read
                                         through the worker registry's liveness (a dead worker drops out)
    graphq:schedules              hash   schedule name -> the schedule (JSON, graphq.scheduler.schedules), K1
    graphq:schedule:NAME:state    string JSON {cursor, last_run, last_thread, buffered}: the newest fire
                                         handled (ms), the schedule's latest run, a fire kept waiting
    graphq:schedule:NAME:fires    list   fire history, newest first (JSON each), capped
    graphq:scheduler:lock         string owner token of the scheduler making a pass
    graphq:scheduler:ID           string a live scheduler's heartbeat (JSON), expires
    graphq:schedulers             zset   scheduler id -> when its heartbeat expires (ms, its clock): the index
                                         of the heartbeats (an expired one is dropped by the next heartbeat)
    graphq:{store}:namespaces     zset   score 0, every namespace of the long-term store that holds items,
                                         dotted (labels cannot hold '.'): prefix ranges by ZRANGEBYLEX
    graphq:{store}:keys:NS        zset   key -> when the item expires, ms (+inf: never); NS dotted
    graphq:{store}:item:JSON      hash   one item (value JSON, created_at, updated_at, ttl, vectors JSON);
                                         JSON = [*namespace, key]; expires with its TTL (PEXPIREAT)

The long-term store's keys share the hash tag ``{store}`` (one slot): its Lua script prunes the
namespace index together with the namespaces' key sets.

The lease, recovery and worker keys are global (one slot), like the run index: the lease index is kept
by the claim, renewal, release and commit scripts, which therefore touch one global key besides the
thread's (fine on one Redis; a Redis Cluster deployment would need one index per slot).
"""

from __future__ import annotations

import hashlib
import json
import re

from graphcore.errors import ArgumentTypeError, ConfigError

__all__ = [
    "ADMISSION_PARTS",
    "PREFIX",
    "admission",
    "answers",
    "api_idempotency",
    "busy_threads",
    "catalog",
    "catalog_member",
    "catalog_seen",
    "catalog_versions",
    "catalog_workers",
    "channel_log",
    "channel_values",
    "checkpoints",
    "history",
    "history_thread",
    "housekeeping_lock",
    "lease",
    "lease_index",
    "lease_member",
    "parse_member",
    "pending_writes",
    "reaper_lock",
    "recovery",
    "recovery_member",
    "request_deadlines",
    "requests",
    "retention",
    "root_histories",
    "rq_suspended",
    "run",
    "run_create",
    "run_events",
    "run_threads",
    "runs_index",
    "schedule_fires",
    "schedule_state",
    "scheduler",
    "scheduler_lock",
    "schedulers",
    "schedules",
    "split",
    "split_done",
    "step_member",
    "steps_index",
    "store_item",
    "store_keys",
    "store_namespaces",
    "switch",
    "thread_active",
    "thread_keys",
    "thread_pattern",
    "thread_runs",
    "thread_waiting",
    "validate_id",
    "validate_run_id",
    "webhooks",
    "webhooks_dead",
    "webhooks_due",
    "worker",
    "workers",
]

PREFIX = "graphq"


def validate_id(kind: str, value: str) -> str:
    """Check a thread/run id (or a tenant) for use in keys: a str of 1–200 characters, no braces, colons,
    glob characters (``*``, ``?``, brackets), whitespace or other control characters.

    Raises:
        ArgumentTypeError: ``value`` is not a str (``tenant=123``), naming ``kind``.
        ConfigError: naming ``kind`` and the offending value.
    """
    if not isinstance(value, str):
        raise ArgumentTypeError(kind, "a str", value)
    refused = any(c in "{}:*?[]" or c.isspace() or not c.isprintable() for c in value)
    if not value or len(value) > 200 or refused:
        raise ConfigError(
            f"{kind} {value!r} is invalid: use 1-200 characters without braces, brackets, ':', '*', '?', "
            "spaces or control characters"
        )
    return value


def validate_run_id(kind: str, value: str) -> str:
    """Check a run id: as :func:`validate_id`, and made only of letters, digits, ``_`` and ``-``, as RQ's
    job ids are (a run's step jobs are named after it: ``graphq-<run id>-<step>``; RQ 3 refuses any other
    character, and a worker that met one quit).

    Raises:
        ArgumentTypeError: ``value`` is not a str, naming ``kind``.
        ConfigError: naming ``kind`` and the offending value.
    """
    validate_id(kind, value)
    if not _RUN_ID.fullmatch(value):
        raise ConfigError(f"{kind} {value!r} is invalid: use letters, digits, '_' and '-' only")
    return value


_RUN_ID = re.compile(r"[A-Za-z0-9_-]+")
"""What a run id is made of: RQ's job id pattern (``rq.job.JOB_ID_PATTERN``)."""


def _t(thread: str) -> str:
    return f"{PREFIX}:{{{thread}}}"


def checkpoints(thread: str, ns: str = "") -> str:
    """Hash of checkpoint records of ``thread`` in namespace ``ns``."""
    return f"{_t(thread)}:cp:{ns}"


def history(thread: str, ns: str = "") -> str:
    """List of checkpoint ids of ``thread`` in ``ns``, oldest first."""
    return f"{_t(thread)}:hist:{ns}"


def root_histories() -> str:
    """A SCAN pattern matching the root-namespace :func:`history` of every thread."""
    return f"{PREFIX}:{{*}}:hist:"


def history_thread(name: str) -> str | None:
    """The thread of a root-namespace :func:`history` key name; None for any other key."""
    head, tail = f"{PREFIX}:{{", "}:hist:"
    if not (name.startswith(head) and name.endswith(tail)) or len(name) <= len(head) + len(tail):
        return None
    return name[len(head) : -len(tail)]


def channel_values(thread: str, ns: str, channel: str) -> str:
    """Hash version → value of one channel."""
    return f"{_t(thread)}:ch:{ns}:{channel}"


def channel_log(thread: str, ns: str, channel: str, generation: str) -> str:
    """List of the items of one generation of an append-only channel."""
    return f"{_t(thread)}:log:{ns}:{channel}:{generation}"


def pending_writes(thread: str, ns: str, checkpoint_id: str) -> str:
    """Hash task id → writes, for the super-step that follows ``checkpoint_id``."""
    return f"{_t(thread)}:writes:{ns}:{checkpoint_id}"


def answers(thread: str, ns: str, checkpoint_id: str) -> str:
    """Hash interrupt id → answer, for the super-step that follows ``checkpoint_id``."""
    return f"{_t(thread)}:answers:{ns}:{checkpoint_id}"


def run(thread: str, run_id: str) -> str:
    """Hash holding the run record."""
    return f"{_t(thread)}:run:{run_id}"


def requests(thread: str, run_id: str) -> str:
    """Hash interrupt id → the record of a human request the run made (checkpoint, task and call index)."""
    return f"{_t(thread)}:requests:{run_id}"


def run_events(thread: str, run_id: str) -> str:
    """Stream of the run's events."""
    return f"{_t(thread)}:events:{run_id}"


def split(thread: str, checkpoint_id: str) -> str:
    """Hash: the record of the split super-step that follows ``checkpoint_id`` (root namespace): its
    batches, their leases and what is done (:mod:`graphq.worker.step.split`)."""
    return f"{_t(thread)}:split:{checkpoint_id}"


def split_done(thread: str, checkpoint_id: str) -> str:
    """List: the batches of the split step after ``checkpoint_id`` done so far, in the order they ended (its
    owner waits on it)."""
    return f"{_t(thread)}:split-done:{checkpoint_id}"


def lease(thread: str, run_id: str) -> str:
    """The lease token of the run's current step."""
    return f"{_t(thread)}:lease:{run_id}"


def thread_runs(thread: str) -> str:
    """Sorted set of the thread's run ids, scored by creation time (epoch seconds)."""
    return f"{_t(thread)}:runs"


def thread_active(thread: str) -> str:
    """The id of the thread's active run (one per thread, I3)."""
    return f"{_t(thread)}:active"


def thread_waiting(thread: str) -> str:
    """List of run ids waiting for the thread, first in line first."""
    return f"{_t(thread)}:waiting"


def thread_keys(thread: str) -> str:
    """Set of the names of ``thread``'s keys, kept while a thread TTL applies (K3,
    :mod:`graphcore.backend.ttl`): the scripts that create a key add it and give it the set's expiry; a
    refresh expires every member and the set together. Absent when no TTL applies."""
    return f"{_t(thread)}:keys"


def thread_pattern(thread: str) -> str:
    """A SCAN pattern matching every key of ``thread`` (glob characters in ids are refused)."""
    return f"{_t(thread)}:*"


def runs_index() -> str:
    """Sorted set of all run ids, scored by creation time (epoch seconds)."""
    return f"{PREFIX}:runs"


def run_threads() -> str:
    """Hash run id → thread id."""
    return f"{PREFIX}:run-thread"


def run_create(run_id: str) -> str:
    """A key never kept: the transaction that creates a run under an id its caller chose (a schedule's fire,
    ``client.enqueue(..., run_id=X)``) WATCHes it and sets and deletes it, so that of two such transactions
    racing with one id, whatever their threads, the second's EXEC fails (its check then finds the run)."""
    return f"{PREFIX}:run-create:{run_id}"


def lease_index() -> str:
    """Sorted set of held leases, scored by deadline (ms since the epoch, Redis's clock): the reaper reads
    the lapsed ones with ZRANGEBYSCORE (R18), never a SCAN."""
    return f"{PREFIX}:leases"


def lease_member(thread: str, run_id: str) -> str:
    """The member of :func:`lease_index` for a run's lease (ids hold no ``:``, see :func:`validate_id`)."""
    return f"{thread}:{run_id}"


def parse_member(member: str) -> tuple[str, str]:
    """``(thread, run id)`` of a :func:`lease_member`; ``(kind, thread, run)`` members of
    :func:`recovery` parse with ``member.split(":")``."""
    thread, _, run_id = member.rpartition(":")
    return thread, run_id


def busy_threads() -> str:
    """Sorted set of threads that have an active run (I3), scored by when they became busy or the reaper
    last looked (ms since the epoch): a thread whose active run ended without handing it over (the process
    died in between) is handed over by the reaper."""
    return f"{PREFIX}:busy-threads"


def steps_index() -> str:
    """Sorted set of step jobs enqueued and not yet claimed, scored by when (ms since the epoch): the
    reaper finds a job that no RQ registry holds any more (its worker took it off the queue and died
    before claiming the step) and enqueues it again."""
    return f"{PREFIX}:steps"


def step_member(thread: str, run_id: str, step: int) -> str:
    """The member of :func:`steps_index` for ``run_id``'s step job ``step``."""
    return f"{thread}:{run_id}:{step}"


def recovery() -> str:
    """Sorted set of work the reaper staged in a script and still has to do outside it (an RQ enqueue,
    a thread hand-over), scored by when it was staged; an entry goes in the same MULTI as its work."""
    return f"{PREFIX}:recovery"


def recovery_member(kind: str, thread: str, run_id: str) -> str:
    """A :func:`recovery` entry: ``kind`` is ``enqueue`` (the run's current step job) or ``handover``
    (``reap_run.lua`` gets these in ARGV; its ``abandoned`` entries, the dead worker's step job, add
    ``:STEP``, the step the script reads)."""
    return f"{kind}:{thread}:{run_id}"


def retention() -> str:
    """Sorted set of the threads with a TTL (K3), members the thread id and :func:`lease_member` of each of
    its runs, scored by when the thread's keys expire (ms since the epoch, Redis's clock): the sweep reads
    the expired ones with ZRANGEBYSCORE, never a SCAN, and clears their entries in shared indexes."""
    return f"{PREFIX}:retention"


def reaper_lock() -> str:
    """The owner token of the one active reaper (compare-and-expire to renew, compare-and-delete)."""
    return housekeeping_lock("reaper")


def housekeeping_lock(name: str) -> str:
    """The owner token of the one active instance of housekeeping loop ``name`` (``reaper``,
    ``request-expiry``, ``retention``; :mod:`graphq.worker.housekeeping.loops`), an owner-token lock
    (:class:`graphcore.backend.locks.OwnerLock`)."""
    return f"{PREFIX}:{name}:lock"


def request_deadlines() -> str:
    """Sorted set of the runs awaiting input whose open requests have a deadline (R13): member
    :func:`lease_member` ``(T, RUN)``, score the earliest deadline (ms since the epoch). Written by the
    script that pauses the run, cleared by the answer, the cancel and the expiry scan; absent while no
    request has a deadline."""
    return f"{PREFIX}:request-deadlines"


def api_idempotency(key: str) -> str:
    """String (JSON ``{digest, run_ids}``): what a ``POST /api/runs`` sent with header ``Idempotency-Key:
    key`` enqueues (the body's SHA-256 and the run ids), so that a repeat returns the same runs; the key is
    hashed (SHA-256 hex): any header value makes a short, safe name."""
    return f"{PREFIX}:api:idempotency:{hashlib.sha256(key.encode()).hexdigest()}"


def webhooks() -> str:
    """Hash delivery id (``RUN:STATUS:N``) → a webhook delivery waiting to be delivered, or given up (JSON;
    :mod:`graphcore.backend.webhooks`): written with the run's status change (``_webhook.lua``), deleted
    once delivered."""
    return f"{PREFIX}:webhooks"


def webhooks_due() -> str:
    """Sorted set of the webhook deliveries to make: member the delivery id, score when it is due (ms since
    the epoch; a claim pushes it back by its hold, a failed try by its back-off)."""
    return f"{PREFIX}:webhooks:due"


def webhooks_dead() -> str:
    """Sorted set of the webhook deliveries given up (dead letters): member the delivery id, score when
    (ms since the epoch); their records stay in :func:`webhooks` until retried."""
    return f"{PREFIX}:webhooks:dead"


def schedules() -> str:
    """Hash schedule name → the schedule's definition (JSON of ``graphq.scheduler.schedules.Schedule``)."""
    return f"{PREFIX}:schedules"


def schedule_state(name: str) -> str:
    """String (JSON) of a schedule's progress: the newest fire time handled (ms, the claim's cursor), its
    latest run and that run's thread, and the fire a ``buffer_one`` schedule keeps waiting."""
    return f"{PREFIX}:schedule:{name}:state"


def schedule_fires(name: str) -> str:
    """List of a schedule's fires, newest first (JSON: fire time, run id, outcome), capped in length."""
    return f"{PREFIX}:schedule:{name}:fires"


def scheduler_lock() -> str:
    """The owner token of the scheduler instance making a pass (compare-and-expire, compare-and-delete)."""
    return f"{PREFIX}:scheduler:lock"


def scheduler(instance_id: str) -> str:
    """A live scheduler instance's heartbeat (JSON: id, host, pid, last pass, the workflows it can load and
    what it cannot do), written each tick with a time-to-live; ``graphq health --scheduler`` reads it."""
    return f"{PREFIX}:scheduler:{instance_id}"


def schedulers() -> str:
    """Sorted set of the scheduler instances' ids, scored by when their heartbeat expires (ms since the
    epoch, the scheduler's clock): how ``schedules list``/``show`` find the live heartbeats (never a SCAN)."""
    return f"{PREFIX}:schedulers"


def switch() -> str:
    """The kill switch (R6): absent = on; present = off, holding JSON ``{"reason", "since"}``. Clients read it
    in the transaction that creates runs; workers before they take a job."""
    return f"{PREFIX}:disabled"


def rq_suspended() -> str:
    """RQ's worker suspension key (``rq.suspension.WORKERS_SUSPENDED``, named here so that graphcore need not
    import rq): ``graphq disable`` sets it with :func:`switch`, so RQ's own tools see the suspension too."""
    return "rq:suspended"


def workers() -> str:
    """Sorted set of worker ids scored by when their heartbeat expires (ms since the epoch)."""
    return f"{PREFIX}:workers"


def worker(worker_id: str) -> str:
    """Hash of a live worker's record (id, host, pid, queues, started, current run and step)."""
    return f"{PREFIX}:worker:{worker_id}"


def catalog() -> str:
    """Sorted set of the workflow names in the workflow catalog, scored by when a worker last published one
    (ms since the epoch, Redis's clock)."""
    return f"{PREFIX}:catalog"


def catalog_versions(workflow: str) -> str:
    """Hash version hash → the description of that version of ``workflow`` (canonical JSON)."""
    return f"{PREFIX}:catalog:{workflow}:versions"


def catalog_seen(workflow: str) -> str:
    """Sorted set of ``workflow``'s version hashes, scored by when a worker last published each (ms)."""
    return f"{PREFIX}:catalog:{workflow}:seen"


def catalog_workers(workflow: str) -> str:
    """Sorted set of :func:`catalog_member` (which worker published which version of ``workflow``), scored
    by when (ms); only members whose worker is live in :func:`workers` count as serving."""
    return f"{PREFIX}:catalog:{workflow}:workers"


def catalog_member(version: str, worker_id: str) -> str:
    """The member of :func:`catalog_workers` for ``worker_id`` serving ``version`` (a hex hash: no ``:``)."""
    return f"{version}:{worker_id}"


ADMISSION_PARTS = (
    "waiting",
    "lanes",
    "tenants",
    "passes",
    "state",
    "entries",
    "deadlines",
    "holders",
    "counts",
    "limits",
    "debug",
    "stats",
    "log",
)
"""The admission keys (R8), in the order ``admission.lua`` takes them (see the key map above)."""


def admission(part: str) -> str:
    """One of the admission keys, ``graphq:adm:<part>``; ``part`` is one of :data:`ADMISSION_PARTS`.

    Raises:
        ValueError: an unknown part.
    """
    if part not in ADMISSION_PARTS:
        raise ValueError(f"unknown admission key {part!r}; known: {', '.join(ADMISSION_PARTS)}")
    return f"{PREFIX}:adm:{part}"


def store_namespaces() -> str:
    """The long-term store's namespace index (zset of dotted namespaces, score 0)."""
    return f"{PREFIX}:{{store}}:namespaces"


def store_keys(dotted_ns: str) -> str:
    """The long-term store's keys of one namespace (zset key -> expiry ms)."""
    return f"{PREFIX}:{{store}}:keys:{dotted_ns}"


def store_item(namespace: tuple[str, ...], key: str) -> str:
    """One item of the long-term store (a hash)."""
    return f"{PREFIX}:{{store}}:item:" + json.dumps(
        [*namespace, key], ensure_ascii=False, separators=(",", ":")
    )
