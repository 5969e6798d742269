"""Live progress inside wide super-steps, on a terminal: one rich bar per running step of several tasks —
finished/total tasks, rate, elapsed — fed by the ``progress`` events the step job writes
(:mod:`graphq.worker.step.progress`: when the step's tasks start, then throttled as they finish, and at the
last one).

``graphq run``, ``graphq enqueue --wait`` and ``graphq runs watch`` show them on stderr when stderr is a
terminal; elsewhere (pipes, files, tests) nothing is shown, and the commands print what they printed before:
``graphq run`` its line per super-step, ``watch`` its event lines (``progress`` events only with
``--mode progress``). A bar goes once its step is committed (the step's ``values`` event) or its run stops.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from typing import Any

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from graphcore import keys
from graphcore.backend.connection import connect
from graphcore.checkpoints import serde

__all__ = ["ProgressFollower", "RateColumn", "StepBars", "progress_of", "step_columns"]

_STOPPED = {"completed", "failed", "canceled", "awaiting_input"}
_BLOCK_MS = 200


def progress_of(data: Any) -> tuple[int, int] | None:
    """``(done, total)`` of a ``progress`` event's data, or None when it is not one."""
    if not isinstance(data, dict):
        return None
    done, total = data.get("done"), data.get("total")
    if not isinstance(done, int) or not isinstance(total, int) or total < 1:
        return None
    return done, total


class RateColumn(ProgressColumn):
    """Tasks finished per second since the bar appeared (blank for bars that are not steps)."""

    def render(self, task: Task) -> Text:
        first = task.fields.get("first_done")
        elapsed = task.elapsed
        if first is None or not elapsed:
            return Text("")
        rate = (task.completed - first) / elapsed
        return Text(f"{rate:.1f}/s" if rate < 10 else f"{rate:,.0f}/s", style="cyan")


def step_columns() -> tuple[ProgressColumn, ...]:
    """The columns of a step bar: description, bar, done/total, rate, elapsed."""
    return (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        RateColumn(),
        TimeElapsedColumn(),
    )


class StepBars:
    """The bars of running steps, keyed by (run, step); a no-op unless ``console`` is a terminal.

    Args:
        console: where the bars go (stderr).
        progress: an already running rich progress to add the bars to (``enqueue --wait`` has one for its
            runs); None: one is started at the first bar, with :func:`step_columns`, and stopped by
            :meth:`close`.
        label_runs: name the run in each bar (several runs at once).
    """

    def __init__(self, console: Console, progress: Progress | None = None, label_runs: bool = False) -> None:
        self.console = console
        self.live = console.is_terminal
        self.progress = progress
        self._own = progress is None
        self.label_runs = label_runs
        self.bars: dict[tuple[str, int], TaskID] = {}
        self._lock = threading.Lock()

    def update(self, run_id: str, step: int, data: Any) -> None:
        """Show a ``progress`` event of ``run_id``'s step ``step``."""
        counts = progress_of(data)
        if not self.live or counts is None:
            return
        done, total = counts
        with self._lock:
            progress = self._progress()
            bar = self.bars.get((run_id, step))
            if bar is None:
                label = f"run {run_id[:8]} step {step}" if self.label_runs else f"step {step:>3}"
                bar = progress.add_task(label, total=total, completed=done, first_done=done)
                self.bars[run_id, step] = bar
            else:
                progress.update(bar, total=total, completed=done)
            progress.refresh()

    def step_done(self, run_id: str, step: int) -> None:
        """Step ``step`` of ``run_id`` was committed: its bar goes."""
        with self._lock:
            bar = self.bars.pop((run_id, step), None)
            if bar is not None and self.progress is not None:
                self.progress.remove_task(bar)
                self.progress.refresh()

    def run_done(self, run_id: str) -> None:
        """``run_id`` stopped (ended or waiting for input): its bars go."""
        with self._lock:
            steps = [k for k in self.bars if k[0] == run_id]
        for run, step in steps:
            self.step_done(run, step)

    def echo(self, line: str) -> None:
        """Print a line for stdout: above the bars when stdout is the terminal they are on, else as is."""
        if self.progress is not None and self.progress.live.is_started and sys.stdout.isatty():
            self.progress.console.print(line, markup=False, highlight=False, soft_wrap=True)
        else:
            click.echo(line)

    def close(self) -> None:
        """Remove every bar, and stop the display this object started."""
        with self._lock:
            steps = list(self.bars)
        for run, step in steps:
            self.step_done(run, step)
        if self._own and self.progress is not None:
            self.progress.stop()

    def _progress(self) -> Progress:
        if self.progress is None:
            self.progress = Progress(
                *step_columns(),
                console=self.console,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self.progress.start()
        return self.progress


class ProgressFollower(threading.Thread):
    """Feeds :class:`StepBars` from the event streams of some runs, one blocking XREAD over all of them,
    until every run stopped, or :meth:`stop` was called and no event is left. Only ``progress``, ``values``
    and ``status`` events are decoded (a step's ``updates`` may be large).

    Args:
        url: the Redis URL (the thread reads on a connection of its own).
        runs: ``(thread id, run id)`` of each run.
    """

    def __init__(self, url: str, runs: Sequence[tuple[str, str]], bars: StepBars) -> None:
        super().__init__(name="graphq-progress", daemon=True)
        self.url = url
        self.streams = {keys.run_events(thread, run): run for thread, run in runs}
        self.bars = bars
        self._halt = threading.Event()

    def stop(self, timeout_s: float = 2.0) -> None:
        """Stop once the events written so far are shown, and wait for the thread (at most ``timeout_s``)."""
        self._halt.set()
        self.join(timeout_s)

    def run(self) -> None:
        """Follow the streams (the thread's body)."""
        try:
            kv: Any = connect(self.url, attempts=1)
        except Exception:
            return
        after = dict.fromkeys(self.streams, "0-0")
        try:
            while after:
                reply = kv.xread(after, count=500, block=_BLOCK_MS)
                if not reply and self._halt.is_set():
                    return  # stopped, and every event so far was shown
                for key, entries in reply or []:
                    stream = key.decode()
                    for entry_id, fields in entries:
                        after[stream] = entry_id.decode()
                        if self._show(self.streams[stream], fields):
                            after.pop(stream)
                            break
        except Exception:  # the display only: the command goes on without it
            return
        finally:
            kv.close()

    def _show(self, run_id: str, fields: dict[bytes, bytes]) -> bool:
        """Show one event; True when the run stopped with it."""
        mode, step = fields[b"mode"], int(fields[b"step"])
        if mode == b"progress":
            self.bars.update(run_id, step, serde.loads(fields[b"data"]))
        elif mode == b"values":
            self.bars.step_done(run_id, step)
        elif mode == b"status":
            data = serde.loads(fields[b"data"])
            if isinstance(data, dict) and data.get("status") in _STOPPED:
                self.bars.run_done(run_id)
                return True
        return False
