"""A run's events as ``graphq runs watch`` and the HTTP API show them (C6).

The stream keeps ``values`` events as checkpoint ids (I4): :class:`EventLines` expands them into the state
values (and the ``checkpoints`` mode) by reading the checkpoint, and derives ``tasks`` from ``updates``.
:func:`ending` and :func:`newest` tell whether a run's stream has reached its end or pause.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from graphcore import keys
from graphcore.backend.client import Client
from graphcore.backend.events import Event, decode_event
from graphcore.backend.json_forms import to_json
from graphcore.backend.retention import step_namespaces
from graphcore.backend.runs import RunRecord, RunStatus
from graphcore.checkpoints.model import Checkpoint
from graphcore.engine.schema import stored_values
from graphcore.engine.stream import checkpoint_payload
from graphcore.errors import CheckpointNotFoundError

__all__ = ["ENDED", "EventLines", "Line", "ending", "event_id_problem", "newest", "seen", "stream_id"]

ENDED = (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELED, RunStatus.AWAITING_INPUT)
"""The statuses a watch stops at: the run ended, or paused (waits for input)."""


@dataclass(frozen=True)
class Line:
    """One shown event: the stream id it comes from, its mode, step and (expanded) payload."""

    id: str
    mode: str
    step: int
    data: Any

    def render(self, output: str) -> str:
        """The line as printed: ``ID  step N  MODE  JSON``, or (``json``) one compact JSON object."""
        if output == "json":
            return to_json({"id": self.id, "mode": self.mode, "step": self.step, "data": self.data}, None)
        return f"{self.id}  step {self.step:<3}  {self.mode:<11}  {to_json(self.data, indent=None)}"


_STREAM_ID = re.compile(r"^\d+(-\d+)?$")
_MAX_ID_PART = 2**64 - 1
"""Redis's bound of each part of a stream entry id (a larger one was a ResponseError traceback)."""


def event_id_problem(text: str) -> str | None:
    """Why ``text`` is not an event id to read after (``MS-SEQ`` or ``MS``, each part at most 2**64-1, as
    Redis takes it), or None when it is one."""
    if not _STREAM_ID.match(text):
        return f"{text!r} is not an event id (MILLISECONDS-SEQUENCE: 1712345678901-0)"
    if any(int(part) > _MAX_ID_PART for part in text.split("-")):
        return f"{text!r} is not an event id: MILLISECONDS and SEQUENCE are at most {_MAX_ID_PART}"
    return None


def stream_id(text: str) -> tuple[int, int]:
    """A Redis stream id ``MS-SEQ`` (or ``MS``) as a comparable pair."""
    ms, _, seq = text.partition("-")
    return int(ms), int(seq or 0)


def seen(event_id: str, after: str) -> bool:
    """Whether stream id ``event_id`` is ``after`` or before it."""
    return stream_id(event_id) <= stream_id(after)


@dataclass(frozen=True)
class EventLines:
    """The lines of ``run``'s stored events in ``modes`` (empty: all but ``progress``), read with ``client``
    (its checkpoints, for ``values`` and ``checkpoints``)."""

    client: Client
    run: RunRecord
    modes: frozenset[str] = frozenset()

    def wants(self, mode: str) -> bool:
        """Whether lines of ``mode`` are shown."""
        return mode in self.modes if self.modes else mode != "progress"

    def lines(self, event: Event) -> list[Line]:
        """The lines of one stored event, in the order of the in-process ``graph.stream``."""
        if event.mode == "values":
            return self._checkpoint_lines(event)
        if event.mode == "updates" and isinstance(event.data, dict):
            return self._update_lines(event, event.data)
        if self.wants(event.mode):
            return [Line(event.id, event.mode, event.step, event.data)]
        return []

    def _update_lines(self, event: Event, updates: dict[str, Any]) -> list[Line]:
        """``tasks`` lines (one per node that wrote) and the ``updates`` line of an ``updates`` event."""
        lines = (
            [
                Line(event.id, "tasks", event.step, {"node": node, "writes": writes})
                for node, writes in updates.items()
            ]
            if self.wants("tasks")
            else []
        )
        if self.wants("updates"):
            lines.append(Line(event.id, "updates", event.step, updates))
        return lines

    def _checkpoint_lines(self, event: Event) -> list[Line]:
        """``checkpoints`` and ``values`` lines of a ``values`` event, read from its checkpoint."""
        wanted = [m for m in ("checkpoints", "values") if self.wants(m)]
        if not wanted:
            return []
        checkpoint_id = event.data.get("checkpoint_id") if isinstance(event.data, dict) else None
        try:
            if not isinstance(checkpoint_id, str):
                raise CheckpointNotFoundError("a values event without a checkpoint id")
            cp = self.client.get_state(self.run.thread_id, checkpoint_id)
        except CheckpointNotFoundError:  # trimmed or deleted meanwhile: show the id, do not stop
            missing = {"checkpoint_id": checkpoint_id, "error": "checkpoint not found"}
            return [Line(event.id, mode, event.step, missing) for mode in wanted]
        values = self.client.shown_values(self.run.thread_id, cp, self.run.workflow)  # root state: the value
        lines = self._earlier_checkpoint_lines(event, cp) if "checkpoints" in wanted else []
        payloads = {
            "checkpoints": checkpoint_payload(cp, self.run.thread_id) | {"values": values},
            "values": values,
        }
        return lines + [Line(event.id, mode, event.step, payloads[mode]) for mode in wanted]

    def _earlier_checkpoint_lines(self, event: Event, cp: Checkpoint) -> list[Line]:
        """The ``checkpoints`` lines LangGraph's ``stream_mode="checkpoints"`` (``subgraphs=True``) gives
        before root checkpoint ``cp``, read from the store (no event holds them): the run's input checkpoint
        (step -1 on a new thread) when ``cp`` is its input applied, else the checkpoints of the subgraphs
        the step's tasks ran, namespace by namespace (level by level, each oldest first). Checkpoints
        removed meanwhile are not shown."""
        thread = self.run.thread_id
        parent = self.client.checkpoints.get(thread, cp.parent_id) if cp.parent_id else None
        if parent is None:
            return []
        meta = parent.metadata
        if meta.get("source") == "input" and meta.get("run_id") == self.run.id:
            values = self.client.shown_values(thread, parent, self.run.workflow)
            return [Line(event.id, "checkpoints", parent.step, self._payload(parent, "", values))]
        return [
            Line(
                event.id, "checkpoints", event.step, self._payload(sub, ns, stored_values(sub.channel_values))
            )
            for ns in step_namespaces(self.client.kv, thread, parent)
            for sub in reversed(self.client.checkpoints.list(thread, ns=ns))
        ]

    def _payload(self, cp: Checkpoint, ns: str, values: Any) -> dict[str, Any]:
        """``cp`` (in namespace ``ns``) as a ``checkpoints`` line shows it: with its stored ``parents`` and
        ``values`` as given."""
        payload = checkpoint_payload(cp, self.run.thread_id, ns, parents=cp.metadata.get("parents"))
        return payload | {"values": values}


def ending(event: Event) -> RunStatus | None:
    """The status a ``status`` event reports when the run ended or paused with it, else None."""
    if event.mode != "status" or not isinstance(event.data, dict):
        return None
    status = event.data.get("status")
    return next((s for s in ENDED if s.value == status), None)


def newest(kv: Any, run: RunRecord) -> Event | None:
    """The newest event of the run's stream (None: no stream)."""
    reply = kv.xrevrange(keys.run_events(run.thread_id, run.id), count=1)
    if not reply:
        return None
    entry_id, fields = reply[0]
    return decode_event(entry_id, fields)
