"""``graphq runs watch``: a run's events (C6), replayed from its Redis stream and then followed live until the
run ends or waits for input.

The stream keeps ``values`` events as checkpoint ids (I4); the watch expands them into the state values (and
the ``checkpoints`` mode) by reading the checkpoint, and derives ``tasks`` from ``updates``. Reads block up to
a second at a time. A transient Redis error (a dropped connection, a restarting server) is retried with
backoff from the last event printed, so no event is printed twice and none is lost; once the retries are used
up, the error names the ``--after`` id to continue from.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import click
import redis.exceptions as rex
from redis.backoff import NoBackoff
from redis.retry import Retry

from graphcore import keys
from graphcore.backend.client import Client, at_breakpoint
from graphcore.backend.connection import connect, is_transient, redis_retrying
from graphcore.backend.event_lines import (
    ENDED,
    EventLines,
    Line,
    ending,
    event_id_problem,
    newest,
    seen,
    stream_id,
)
from graphcore.backend.events import EVENTS_MAXLEN, Event, read_events
from graphcore.backend.runs import RunRecord, RunStatus
from graphq.cli.context import AppContext
from graphq.cli.errors import EXIT_FAILURE, EXIT_WAITING, fail
from graphq.cli.output import FORMATS, err_console
from graphq.cli.progress import StepBars
from graphq.cli.records import graphq_prefix

__all__ = ["MODES", "Line", "Watch", "watch"]

MODES = (
    "values",
    "updates",
    "custom",
    "messages",
    "checkpoints",
    "tasks",
    "status",
    "interrupt",
    "retry",
    "progress",
)
"""What ``--mode`` selects; ``values``/``checkpoints`` expand checkpoint ids, ``tasks`` comes from updates;
``progress`` is printed only when asked for (a terminal shows it as live bars, see
:mod:`graphq.cli.progress`)."""

_BLOCK_MS = 1000
_COUNT = 500
_T = TypeVar("_T")


@dataclass
class Watch:
    """Prints the events of ``run`` after stream id ``after`` until the run ends or waits for input.

    Args:
        client: a read-only client whose connection does not retry by itself (this class does).
        run: the run to watch.
        modes: the modes to print; empty means all but ``progress`` (unknown stored modes included).
        after: print only events after this stream id.
        output: ``table`` or ``json`` (JSON Lines).
        bars: live bars of wide steps (on a terminal), fed by ``progress`` events; None shows none.
    """

    client: Client
    run: RunRecord
    modes: frozenset[str]
    after: str = "0-0"
    output: str = "table"
    block_ms: int = _BLOCK_MS
    bars: StepBars | None = None
    _grace: bool = field(default=False, init=False, repr=False)

    @property
    def _lines(self) -> EventLines:
        return EventLines(self.client, self.run, self.modes)

    def follow(self) -> RunStatus:
        """Print events until the run ends or waits for input; returns that status.

        Raises:
            CliError: Redis stayed unreachable through every retry (exit 1, naming the ``--after`` id).
        """
        note = self.retried(self._capped)
        if note is not None:
            click.echo(note, err=True)
        peek = False
        while True:
            events = self.retried(self._read, None if peek else self.block_ms)
            for event in events:
                self._show(event)
            if events:
                ended = ending(events[-1])
                if ended is not None and ended != RunStatus.AWAITING_INPUT:
                    return ended
                peek = ended == RunStatus.AWAITING_INPUT  # paused: stop once nothing follows the pause
                continue
            ended = self.retried(self._settled)
            if ended is not None:
                return ended
            peek = False

    def _capped(self) -> str | None:
        """The note that events after ``after`` were dropped by the stream's cap (:data:`EVENTS_MAXLEN`),
        or None: the stream's first event is not the run's first (Redis 7+ counts the events ever added;
        Redis 6 only shows that the stream is full, then how many is not known)."""
        try:
            info = self.client.kv.xinfo_stream(keys.run_events(self.run.thread_id, self.run.id))
        except rex.ResponseError:  # no stream (yet)
            return None
        first, length = info.get("first-entry"), int(info.get("length") or 0)
        if not first or stream_id(first[0].decode()) <= stream_id(self.after):
            return None
        added = info.get("entries-added")
        start = f"run {self.run.id}: replaying from event {first[0].decode()}"
        cap = f"the stream keeps about the newest {EVENTS_MAXLEN} (EVENTS_MAXLEN)"
        if added is not None and int(added) > length:
            return f"{start}: its first {int(added) - length} events were dropped; {cap}"
        if added is None and length >= EVENTS_MAXLEN:
            return f"{start}: its earlier events were dropped; {cap}"
        return None

    def _read(self, block_ms: int | None) -> list[Event]:
        return list(
            read_events(
                self.client.kv, self.run.thread_id, self.run.id, self.after, block_ms=block_ms, count=_COUNT
            )
        )

    def _show(self, event: Event) -> None:
        """Print what ``event`` gives in the selected modes, then move past it."""
        if self.bars is not None and event.mode == "progress":
            self.bars.update(self.run.id, event.step, event.data)
        elif self.bars is not None and event.mode == "values":
            self.bars.step_done(self.run.id, event.step)
        echo = click.echo if self.bars is None else self.bars.echo
        for line in self.retried(self._lines.lines, event):
            echo(line.render(self.output))
        self.after = event.id

    def _settled(self) -> RunStatus | None:
        """After a read found nothing new: the run's status if it has ended or paused with every event up to
        that seen, else None (keep following).

        A run whose end left no event in its stream ends by its record, after one more read (its final events
        may be written just after the record changes).
        """
        record = self.client.get_run(self.run.id)
        if record.status not in ENDED:
            self._grace = False
            return None
        last = newest(self.client.kv, self.run)
        if last is not None and ending(last) == record.status and seen(last.id, self.after):
            return record.status
        if record.status == RunStatus.AWAITING_INPUT:
            return None  # its pause events are on their way
        if self._grace:
            return record.status
        self._grace = True
        return None

    def retried(self, fn: Callable[..., _T], *args: Any) -> _T:
        """``fn(*args)``; after a transient Redis error, again under the retry policy (reconnecting)."""
        try:
            return fn(*args)
        except rex.RedisError as exc:
            if not is_transient(exc):
                raise
            click.echo(
                f"lost the connection to Redis ({_one_line(exc)}); reconnecting, resuming after event "
                f"{self.after}",
                err=True,
            )
        try:
            result: _T = redis_retrying()(fn, *args)
        except rex.RedisError as exc:
            if not is_transient(exc):
                raise
            fail(
                f"lost the connection to Redis: {_one_line(exc)}; continue with "
                f"`{graphq_prefix()} runs watch {self.run.id} --after {self.after}`",
                EXIT_FAILURE,
            )
        return result


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()).rstrip(".") or type(exc).__name__


def _check_after(ctx: click.Context, param: click.Parameter, value: str | None) -> str:
    if value is None:
        return "0-0"
    problem = event_id_problem(value)
    if problem is not None:
        raise click.BadParameter(problem)
    return value


def _end(record: RunRecord, status: RunStatus, after: str, step: int | None) -> None:
    """Stop with the exit code of ``status``: 0 completed, 1 failed or canceled (in thread step ``step``), 3
    waiting for input."""
    if status in (RunStatus.FAILED, RunStatus.CANCELED):
        error = f": {record.error.type}: {record.error.message}" if record.error else ""
        at = "" if step is None else f" at step {step}"
        fail(f"run {record.id} {status.value}{at}{error}", EXIT_FAILURE)
    if status == RunStatus.AWAITING_INPUT:
        prefix = graphq_prefix()
        stop = at_breakpoint(record)
        what = (
            f"{stop}; let it go on with `{prefix} runs resume {record.id}`"
            if stop
            else f"run {record.id} is waiting for input; answer with `{prefix} runs answer {record.id} "
            "--value JSON`"
        )
        click.echo(f"{what}, then follow it with `{prefix} runs watch {record.id} --after {after}`", err=True)
        click.get_current_context().exit(EXIT_WAITING)


def _watch_client(app: AppContext) -> Client:
    """A read-only client on a connection of its own that does not retry by itself: :class:`Watch` retries,
    from the last event it printed."""
    kv = connect(app.url(local=True, share=True))
    kv.set_retry(Retry(NoBackoff(), 0))
    click.get_current_context().call_on_close(kv.close)
    return Client(kv, app.loaded())  # the workflows, when they load: a root-channel state's values


@click.command("watch", short_help="Print a run's events, following it live.")
@click.argument("run_id", metavar="RUN")
@click.option(
    "--mode",
    "-m",
    "modes",
    multiple=True,
    type=click.Choice(MODES),
    help="Only these modes (repeatable). Default: all but progress.",
)
@click.option(
    "--after",
    "-a",
    callback=_check_after,
    metavar="EVENT_ID",
    help="Start after this event id (the last one a watch printed, to continue it).",
)
@click.option(
    "--output",
    "-o",
    type=click.Choice(FORMATS),
    default="table",
    show_default=True,
    help="table: one line per event for people; json: one JSON object per line (JSON Lines).",
)
@click.pass_obj
def watch(app: AppContext, run_id: str, modes: Sequence[str], after: str, output: str) -> None:
    """Print the events of RUN, one line per event: the ones so far, then new ones as they happen, until
    the run ends or waits for input.

    \b
    Line: EVENT_ID  step N  MODE  PAYLOAD (JSON)
    --output json: {"id", "mode", "step", "data"} per line (JSON Lines)
    Modes:
      status       running, completed, failed (with the error), canceled, awaiting_input
      values       the state after each super-step (read from its checkpoint)
      checkpoints  each checkpoint as graph.stream(subgraphs=True) shows it: config, parent_config,
                   values, metadata (source, step, parents), next nodes, tasks; the input
                   checkpoint first, a step's subgraph checkpoints before its root checkpoint
      updates      {node: writes} of each finished task (null when it wrote nothing)
      tasks        {"node", "writes"} of each finished task
      custom       {"node", "chunk"} written with get_stream_writer()
      messages     [message, metadata]: LLM tokens of chat models called in nodes and the
                   messages nodes write (only for a run enqueued with the run option
                   stream_mode ["messages"])
      interrupt    the requests of a node that asked a human
      retry        {"node", "attempt", "error", "wait_s"} of a node retried
      progress     {"done", "total"}: a step of several tasks, as they finish (throttled; only with
                   --mode progress; on a terminal, stderr shows live bars whatever the modes)

    A run continued after its worker died or was stopped (its chain, `graphq runs list --chain RUN`) is
    followed into its continuation, said on stderr; the exit code is the chain's last run's.

    A dropped connection is retried from the last event printed (no event twice, none lost), within
    GRAPHQ_REDIS_RETRY_ATTEMPTS tries; to continue a watch that stopped, pass the last id it printed to
    --after.

    Exit codes: 0 completed, 1 failed or canceled (or Redis lost), 2 unknown run or bad option, 3 waiting
    for input, 130 interrupted.
    """
    client = _watch_client(app)
    bars = StepBars(err_console())
    run = client.get_run(run_id)
    _check_messages_recorded(run, modes)
    watcher = Watch(client, run, frozenset(modes), after, output, bars=bars)
    try:
        while True:
            status = watcher.follow()
            record = watcher.retried(client.get_run, watcher.run.id)
            if status not in _CONTINUED or not record.continued_by_run_id:
                break
            watcher = _follow_continuation(watcher, record)
    finally:
        bars.close()
    _end(record, status, watcher.after, watcher.retried(client.thread_step, record))


def _check_messages_recorded(run: RunRecord, modes: Sequence[str]) -> None:
    """Refuse ``--mode messages`` alone for a run that records no ``messages`` events (it was enqueued
    without the run option ``stream_mode``); with other modes, say so on stderr.

    Raises:
        CliError: only ``messages`` was asked for (exit 2).
    """
    stream_mode = run.config.get("stream_mode") or []
    if "messages" not in modes or "messages" in stream_mode:
        return
    why = (
        f"run {run.id} records no messages events: it was enqueued without the run option stream_mode "
        """["messages"] (graphq enqueue --config '{"stream_mode": ["messages"]}')"""
    )
    if set(modes) == {"messages"}:
        fail(f"--mode messages: {why}")
    click.echo(f"note: {why}", err=True)


_CONTINUED = (RunStatus.FAILED, RunStatus.CANCELED)
"""Statuses a run is continued from (its worker died or was stopped, R14): the watch follows the chain."""


def _follow_continuation(watcher: Watch, record: RunRecord) -> Watch:
    """Say that ``record`` was continued and watch its continuation from its first event."""
    assert record.continued_by_run_id is not None
    error = f" ({record.error.type}: {record.error.message})" if record.error else ""
    click.echo(
        f"run {record.id} {record.status.value}{error}; continued by run {record.continued_by_run_id}, "
        "following it",
        err=True,
    )
    nxt = watcher.retried(watcher.client.get_run, record.continued_by_run_id)
    return Watch(watcher.client, nxt, watcher.modes, "0-0", watcher.output, bars=watcher.bars)
