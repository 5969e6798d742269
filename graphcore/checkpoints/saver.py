"""LangGraph's checkpoint saver API over a graphq checkpoint store (``langgraph.checkpoint.base``).

A LangGraph program reads a thread's checkpoints through its saver: ``saver.list(config)``,
``saver.get_tuple(config).checkpoint["channel_values"]``, ``saver.delete_thread(thread_id)``. graphq's stores
(:class:`~graphcore.checkpoints.kv.KVCheckpointStore`, so ``InMemorySaver`` and the Redis store) answer these
with LangGraph's shapes: a :class:`CheckpointTuple` whose ``checkpoint`` is a dict with ``v``, ``id``,
``ts``, ``channel_values``, ``channel_versions``, ``versions_seen`` and ``updated_channels``.

graphq's own store methods have the same names with other arguments (``list(thread_id, *, ns, limit)``,
``get(thread_id, checkpoint_id, *, ns)``, ``put(thread_id, checkpoint, *, ns)``, ``put_writes(thread_id,
checkpoint_id, writes, *, ns)``). :func:`or_config` tells the two forms apart by the first argument: a
config mapping (or None) is LangGraph's form, a thread id string graphq's.

A checkpoint dict also carries graphq's ``next_tasks`` and ``barriers`` (what the next super-step runs), so
``put`` of a dict that ``get_tuple`` returned stores the same checkpoint.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple, Protocol, TypeVar, cast

from graphcore.checkpoints.layout import failure_entry
from graphcore.checkpoints.model import Checkpoint, task_id
from graphcore.checkpoints.protocol import CheckpointStore
from graphcore.errors import ConfigError, ConfigKeyError
from graphcore.types import Interrupt, TaskWrites

__all__ = [
    "CheckpointTuple",
    "Listing",
    "get_checkpoint",
    "get_tuple",
    "list_tuples",
    "matching",
    "older_than",
    "or_config",
    "put_checkpoint",
    "put_task_writes",
]

F = TypeVar("F", bound=Callable[..., Any])

INTERRUPT = "__interrupt__"
RESUME = "__resume__"
ERROR = "__error__"


class Listing(CheckpointStore, Protocol):
    """A checkpoint store that can name its threads and a thread's namespaces (for ``list``)."""

    def threads(self) -> list[str]:
        """The threads that have checkpoints."""

    def namespaces(self, thread_id: str) -> list[str]:
        """The namespaces of ``thread_id`` that have checkpoints, the root's (``""``) first."""


class CheckpointTuple(NamedTuple):
    """A checkpoint with what a saver keeps beside it (LangGraph's ``CheckpointTuple``).

    Attributes:
        config: ``{"configurable": {"thread_id", "checkpoint_ns", "checkpoint_id"}}`` of this checkpoint.
        checkpoint: ``{"v", "id", "ts", "channel_values", "channel_versions", "versions_seen",
            "updated_channels"}`` (LangGraph's keys; ``updated_channels`` is None: graphq does not record it),
            plus graphq's ``next_tasks`` and ``barriers``.
        metadata: ``source`` (input | loop | update | fork), ``step``, ``parents`` (namespace → checkpoint
            id of the graphs it runs in: a subgraph checkpoint's ``{"": <root checkpoint id>}``, a root
            checkpoint's ``{}``), and graphq's ``run_id`` and ``writes``.
        parent_config: the config of the checkpoint it came from; None for a thread's first.
        pending_writes: ``(task_id, channel, value)`` of the tasks of the next super-step that finished,
            asked (``__interrupt__``, with their answers so far as ``__resume__``) or failed
            (``__error__``, the error's text), in task order.
    """

    config: dict[str, Any]
    checkpoint: dict[str, Any]
    metadata: dict[str, Any]
    parent_config: dict[str, Any] | None = None
    pending_writes: list[tuple[str, str, Any]] | None = None


def or_config(saver_form: Callable[..., Any]) -> Callable[[F], F]:
    """Decorate a store method so that a call whose first argument is a config mapping or None (LangGraph's
    form) goes to ``saver_form(store, config, ...)`` instead; a thread id (graphq's form) goes to the
    method. The one place where the two forms are told apart."""

    def decorate(method: F) -> F:
        @functools.wraps(method)
        def either(self: Any, first: Any, *args: Any, **kwargs: Any) -> Any:
            if first is None or isinstance(first, Mapping):
                return saver_form(self, first, *args, **kwargs)
            return method(self, first, *args, **kwargs)

        return cast(F, either)

    return decorate


def _configurable(config: Any, what: str) -> dict[str, Any]:
    """``config["configurable"]``, which must name a thread.

    Raises:
        ConfigKeyError: ``config`` is not a mapping with ``configurable.thread_id``, naming ``what`` (a
            ConfigError and a KeyError).
    """
    conf = config.get("configurable") if isinstance(config, Mapping) else None
    if not isinstance(conf, Mapping) or not isinstance(conf.get("thread_id"), str):
        raise ConfigKeyError(
            f"{what} needs a thread: config={{'configurable': {{'thread_id': ...}}}}, got {config!r}"
        )
    return dict(conf)


def _config(thread_id: str, ns: str, checkpoint_id: str | None) -> dict[str, Any] | None:
    if checkpoint_id is None:
        return None
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}}


def _as_dict(cp: Checkpoint) -> dict[str, Any]:
    """``cp`` as LangGraph's checkpoint dict (with graphq's ``next_tasks`` and ``barriers``)."""
    return {
        "v": cp.v,
        "id": cp.id,
        "ts": cp.created_at,
        "channel_values": dict(cp.channel_values),
        "channel_versions": dict(cp.channel_versions),
        "versions_seen": {node: dict(seen) for node, seen in cp.versions_seen.items()},
        "updated_channels": None,
        "next_tasks": list(cp.next_tasks),
        "barriers": {key: list(sources) for key, sources in cp.barriers.items()},
    }


def _task_ids(cp: Checkpoint) -> list[tuple[str, str]]:
    """(task id, node) of the tasks of the step after ``cp``, in order."""
    return [(task_id(cp.id, i, t.node), t.node) for i, t in enumerate(cp.next_tasks)]


def _pending(store: CheckpointStore, thread_id: str, ns: str, cp: Checkpoint) -> list[tuple[str, str, Any]]:
    """LangGraph's ``pending_writes`` of ``cp``: each task's writes, in task order (tasks the checkpoint
    does not name last, by id)."""
    finished, errors = store.get_writes_and_errors(thread_id, cp.id, ns=ns)
    order = {tid: i for i, (tid, _) in enumerate(_task_ids(cp))}
    found: list[tuple[str, str, Any]] = []
    for tid in sorted({*finished, *errors}, key=lambda t: (order.get(t, len(order)), t)):
        tw = finished.get(tid)
        if tw is None:
            found.append((tid, ERROR, errors[tid]))
            continue
        if tw.resume:
            found.append((tid, RESUME, list(tw.resume)))
        if tw.interrupts:
            found.append((tid, INTERRUPT, list(tw.interrupts)))
        found += [(tid, channel, value) for channel, value in tw.writes]
    return found


def _tuple(store: CheckpointStore, thread_id: str, ns: str, cp: Checkpoint) -> CheckpointTuple:
    return CheckpointTuple(
        _config(thread_id, ns, cp.id) or {},
        _as_dict(cp),
        _metadata(cp),
        _config(thread_id, ns, cp.parent_id),
        _pending(store, thread_id, ns, cp),
    )


def get_tuple(store: CheckpointStore, config: Mapping[str, Any]) -> CheckpointTuple | None:
    """The checkpoint ``config`` names (``configurable.checkpoint_id``), or the thread's newest in
    ``configurable.checkpoint_ns`` (default ``""``); None when there is none (LangGraph's ``get_tuple``).

    Raises:
        ConfigKeyError: ``config`` names no thread.
    """
    conf = _configurable(config, "get_tuple")
    thread_id, ns = conf["thread_id"], str(conf.get("checkpoint_ns") or "")
    cp = store.get(thread_id, conf.get("checkpoint_id"), ns=ns)
    return None if cp is None else _tuple(store, thread_id, ns, cp)


def get_checkpoint(store: CheckpointStore, config: Mapping[str, Any]) -> dict[str, Any] | None:
    """:func:`get_tuple`'s checkpoint dict (LangGraph's ``get``), None when there is none."""
    found = get_tuple(store, config)
    return None if found is None else found.checkpoint


def older_than(cps: list[Checkpoint], checkpoint_id: str | None) -> list[Checkpoint]:
    """The checkpoints listed after ``checkpoint_id`` in ``cps`` (newest first: the older ones); all of
    them for None (ids of one millisecond are not ordered, so its position decides when it is listed)."""
    if checkpoint_id is None:
        return cps
    ids = [c.id for c in cps]
    if checkpoint_id in ids:
        return cps[ids.index(checkpoint_id) + 1 :]
    return [c for c in cps if c.id < checkpoint_id]


def matching(cps: list[Checkpoint], filter: Mapping[str, Any], limit: int | None) -> list[Checkpoint]:
    """The first ``limit`` of ``cps`` whose metadata (with ``parents``) holds every key → value of
    ``filter``."""
    found = [c for c in cps if all(_metadata(c).get(k) == v for k, v in filter.items())]
    return found[:limit]


def _metadata(cp: Checkpoint) -> dict[str, Any]:
    """``cp``'s metadata as a saver and ``get_state_history`` show it: with ``parents`` (namespace →
    checkpoint id of the graphs it runs in, as stored: a subgraph's; ``{}`` for a root checkpoint's)."""
    return {**cp.metadata, "parents": dict(cp.metadata.get("parents") or {})}


def list_tuples(
    store: Listing,
    config: Mapping[str, Any] | None,
    *,
    filter: Mapping[str, Any] | None = None,
    before: Mapping[str, Any] | None = None,
    limit: int | None = None,
) -> Iterator[CheckpointTuple]:
    """Checkpoints as :class:`CheckpointTuple`, each namespace's newest first (LangGraph's ``list``).

    Args:
        config: the thread (None: every thread); with ``checkpoint_ns`` only that namespace (else the root's,
            then the subgraphs'); with ``checkpoint_id`` only that checkpoint.
        filter: metadata key → value that each checkpoint's metadata must hold (``{"source": "loop"}``).
        before: a checkpoint config: only checkpoints older than it.
        limit: at most this many in all (after ``filter`` and ``before``).

    Raises:
        ConfigKeyError: ``config`` is not None and names no thread.
    """
    conf = None if config is None else _configurable(config, "list")
    older = (before or {}).get("configurable", {}).get("checkpoint_id")
    left = limit
    for thread_id in store.threads() if conf is None else [conf["thread_id"]]:
        given = None if conf is None else conf.get("checkpoint_ns")
        for ns in store.namespaces(thread_id) if given is None else [str(given)]:
            if left is not None and left <= 0:
                return
            checkpoint_id = None if conf is None else conf.get("checkpoint_id")
            if checkpoint_id is not None:  # that one checkpoint, read alone (not the whole thread)
                named = store.get(thread_id, str(checkpoint_id), ns=ns)
                cps = [] if named is None else [named]
            else:
                cps = store.list(thread_id, ns=ns, limit=None if filter or before else left)
            cps = matching(older_than(cps, older), filter or {}, left)
            left = None if left is None else left - len(cps)
            yield from (_tuple(store, thread_id, ns, cp) for cp in cps)


def _version(value: Any, where: str) -> int:
    """A channel version as graphq counts them: an int, or the leading number of LangGraph's version
    strings (``"00000000000000000000000000000002.0.1435..."`` → 2).

    Raises:
        ConfigError: neither, naming ``where``.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    head = str(value).split(".")[0]
    if isinstance(value, (str, float)) and head.isdigit():
        return int(head)
    raise ConfigError(f"put: {where} {value!r} is not a channel version (an int)")


def _from_dict(
    conf: Mapping[str, Any], checkpoint: Mapping[str, Any], metadata: Mapping[str, Any]
) -> Checkpoint:
    """The graphq checkpoint that ``put(config, checkpoint, metadata, ...)`` stores: its parent is the
    config's ``checkpoint_id``, its step ``metadata["step"]``."""
    for key in ("id", "channel_values"):
        if key not in checkpoint:
            raise ConfigKeyError(f"put: checkpoint[{key!r}] is missing (LangGraph's checkpoint dict has it)")
    step = metadata.get("step", -1)
    if not isinstance(step, int) or isinstance(step, bool):
        raise ConfigError(f"put: metadata['step'] must be an int, got {step!r}")
    versions = checkpoint.get("channel_versions") or {}
    seen = checkpoint.get("versions_seen") or {}
    return Checkpoint(
        id=str(checkpoint["id"]),
        parent_id=conf.get("checkpoint_id"),
        step=step,
        channel_values=dict(checkpoint["channel_values"]),
        channel_versions={k: _version(v, f"channel_versions[{k!r}]") for k, v in versions.items()},
        versions_seen={
            node: {k: _version(v, f"versions_seen[{node!r}][{k!r}]") for k, v in by.items()}
            for node, by in seen.items()
        },
        next_tasks=list(checkpoint.get("next_tasks") or []),
        barriers={key: list(sources) for key, sources in (checkpoint.get("barriers") or {}).items()},
        metadata={k: v for k, v in metadata.items() if k != "parents" or v},  # stored as a run stores it
        created_at=str(checkpoint.get("ts") or Checkpoint.now()),
    )


def put_checkpoint(
    store: CheckpointStore,
    config: Mapping[str, Any],
    checkpoint: Mapping[str, Any],
    metadata: Mapping[str, Any],
    new_versions: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Store a checkpoint dict as the newest of the thread in ``configurable.checkpoint_ns`` (LangGraph's
    ``put``); its parent is ``configurable.checkpoint_id``. ``new_versions`` is accepted and not needed
    (graphq finds what changed itself). A dict without graphq's ``next_tasks`` has no tasks to run.

    Returns:
        The stored checkpoint's config, ``{"configurable": {"thread_id", "checkpoint_ns",
        "checkpoint_id"}}``.

    Raises:
        ConfigKeyError: no thread in ``config``; a checkpoint without ``id`` or ``channel_values``.
        ConfigError: a step or channel version that is not an int.
        SerializationError: a value is not on the serde allow-list; nothing is written.
    """
    conf = _configurable(config, "put")
    thread_id, ns = conf["thread_id"], str(conf.get("checkpoint_ns") or "")
    cp = _from_dict(conf, checkpoint, metadata)
    store.put(thread_id, cp, ns=ns)
    return _config(thread_id, ns, cp.id) or {}


def put_task_writes(
    store: CheckpointStore,
    config: Mapping[str, Any],
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str = "",
) -> None:
    """Store one task's writes for the step after ``configurable.checkpoint_id`` (LangGraph's
    ``put_writes``): ``(channel, value)`` pairs, ``__interrupt__`` (a list of Interrupts) and
    ``__resume__`` (a list of answers) as a paused task's; ``task_path`` is accepted and not used. They
    replace what the task had stored.

    Raises:
        ConfigKeyError: no thread or no ``checkpoint_id`` in ``config``.
        ConfigError: an ``__interrupt__`` write that is not a list of Interrupts.
        SerializationError: a value is not on the serde allow-list, naming its state path.
    """
    conf = _configurable(config, "put_writes")
    thread_id, ns = conf["thread_id"], str(conf.get("checkpoint_ns") or "")
    checkpoint_id = conf.get("checkpoint_id")
    if not isinstance(checkpoint_id, str):
        raise ConfigKeyError(
            f"put_writes: config needs the checkpoint's configurable.checkpoint_id, got {config!r}"
        )
    cp = store.get(thread_id, checkpoint_id, ns=ns)
    node = dict(_task_ids(cp)).get(task_id, "") if cp is not None else ""
    tw = TaskWrites(task_id, node)
    for channel, value in writes:
        if channel == ERROR:
            failed = failure_entry(task_id, node, value if isinstance(value, str) else repr(value))
            store.put_writes(thread_id, checkpoint_id, failed, ns=ns)
        elif channel in (INTERRUPT, RESUME):
            (tw.interrupts if channel == INTERRUPT else tw.resume).extend(_listed(value, channel))
        else:
            tw.writes.append((channel, value))
    if tw.writes or tw.interrupts or tw.resume or not writes:
        store.put_writes(thread_id, checkpoint_id, tw, ns=ns)


def _listed(value: Any, channel: str) -> list[Any]:
    """The items of a ``__interrupt__`` or ``__resume__`` write (a list; a lone Interrupt is one)."""
    if isinstance(value, Interrupt):
        return [value]
    if channel == INTERRUPT and not (
        isinstance(value, list) and all(isinstance(v, Interrupt) for v in value)
    ):
        raise ConfigError(f"put_writes: a {INTERRUPT} write is a list of Interrupts, got {value!r}")
    return list(value) if isinstance(value, (list, tuple)) else [value]
