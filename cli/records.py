"""How runs and their open human requests are shown: JSON forms, the requests table, the answer command."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

import click
from click.core import ParameterSource

from graphcore.backend.client import Client, at_breakpoint
from graphcore.backend.connection import redact_url
from graphcore.backend.json_forms import deadline_iso, to_json
from graphcore.backend.run_fields import schema_text
from graphcore.backend.runs import RunRecord
from graphcore.engine.interrupts import RequestRecord
from graphcore.types import Interrupt
from graphq.cli.output import clip, print_table, when

__all__ = [
    "again_command",
    "answer_commands",
    "at_step",
    "graphq_prefix",
    "print_all_requests",
    "print_answer_hint",
    "print_requests",
    "print_resume_hint",
    "print_waiting",
    "schema_text",
]


def at_step(client: Client, record: RunRecord) -> str:
    """`` at step N``: the thread step the run is at, failed or was canceled in (see
    :meth:`Client.thread_step`), or "" before it has one."""
    step = client.thread_step(record)
    return "" if step is None else f" at step {step}"


def print_requests(requests: Sequence[Interrupt]) -> None:
    """The open requests as a table: id, node, created (UTC), value (compact JSON, cut when long); with a
    deadline (UTC) column after created when one of them has a deadline (R13), and an expects column (the
    answer expected, :func:`schema_text`) when one of them has a ``response_schema``."""
    timed = any(r.deadline_ms is not None for r in requests)
    typed = any(r.response_schema is not None for r in requests)
    rows = [
        (
            r.id,
            r.node,
            when(r.created_at),
            *_if(timed, when(deadline_iso(r.deadline_ms))),
            to_json(r.value, indent=None),
            *_if(typed, schema_text(r.response_schema)),
        )
        for r in requests
    ]
    headers = (
        "request",
        "node",
        "created (UTC)",
        *_if(timed, "deadline (UTC)"),
        "value",
        *_if(typed, "expects"),
    )
    print_table(headers, rows, no_wrap=("request", "created (UTC)", "deadline (UTC)"))


def _if(shown: bool, cell: str) -> tuple[str, ...]:
    """``(cell,)`` in a column that is shown (a request in the table has a deadline), else ``()``."""
    return (cell,) if shown else ()


def print_all_requests(records: Sequence[RequestRecord]) -> None:
    """Every request a run made as a table: id, step, node, status, value and answer (compact JSON, cut
    when long), with a deadline (UTC) column after status when one of them has a deadline (R13) and an
    expects column before the answer (:func:`schema_text`) when one of them has a ``response_schema``; the
    request a branch run answers again says so."""
    timed = any(r.deadline is not None for r in records)
    typed = any(r.response_schema is not None for r in records)
    rows = [
        (
            r.id,
            r.step,
            r.node,
            r.status if r.again_of is None else f"{r.status} (again)",
            *_if(timed, when(r.deadline)),
            to_json(r.value, indent=None),
            *_if(typed, schema_text(r.response_schema)),
            "" if r.status != "answered" else to_json(r.answer, indent=None),
        )
        for r in records
    ]
    headers = (
        "request",
        "step",
        "node",
        "status",
        *_if(timed, "deadline (UTC)"),
        "value",
        *_if(typed, "expects"),
        "answer",
    )
    print_table(headers, rows, no_wrap=("request", "deadline (UTC)"))


def graphq_prefix() -> str:
    """``graphq`` plus the global options given on this command line, so that a printed command works as is
    (``--redis-url`` is shown without its password)."""
    words = ["graphq"]
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return "graphq"
    root = ctx.find_root()
    for name, flag in (("redis_url", "--redis-url"), ("workflows", "--workflows")):
        value = root.params.get(name)
        if value and root.get_parameter_source(name) == ParameterSource.COMMANDLINE:
            words += [flag, shlex.quote(redact_url(value) if name == "redis_url" else value)]
    return " ".join(words)


def answer_commands(run_id: str, requests: Sequence[Interrupt]) -> list[str]:
    """The commands that answer ``requests`` (``<JSON>`` stands for the answer): one command for a single
    request; for several, one answering all (keyed by request id), then one per request."""
    base = f"{graphq_prefix()} runs answer {run_id}"
    if len(requests) == 1:
        return [f"{base} --value '<JSON>'"]
    keyed = ", ".join(f'"{r.id}": <JSON>' for r in requests)
    return [f"{base} --value '{{{keyed}}}'"] + [f"{base} --request {r.id} --value '<JSON>'" for r in requests]


def again_command(run_id: str, request_id: str = "ID") -> str:
    """The command that answers ``request_id`` of ``run_id`` again, on a new branch."""
    return f"{graphq_prefix()} runs answer {run_id} --request {request_id} --value '<JSON>' --again"


def print_waiting(record: RunRecord, requests: Sequence[Interrupt], step: int | None) -> None:
    """Say that a run waits for input in thread step ``step``: its open requests (id, node, value cut when
    long, and under it the answer it expects when it has a ``response_schema``) and how to answer them."""
    count = f"{len(requests)} open request" + ("" if len(requests) == 1 else "s")
    at = "" if step is None else f" at step {step}"
    if print_resume_hint(record, at):  # a static breakpoint: nothing to answer
        return
    click.echo(f"run {record.id} is waiting for input{at} ({count}):")
    for r in requests:
        click.echo(f"  {r.id}  {r.node}  {clip(to_json(r.value, indent=None))}")
        if r.response_schema is not None:
            click.echo(f"    expects: {schema_text(r.response_schema)}")
    print_answer_hint(record.id, requests)


def print_resume_hint(record: RunRecord, at: str = "") -> bool:
    """When ``record`` waits at a static breakpoint, say so (``at``: where) and print the command that lets it
    go on; returns whether it does."""
    stop = at_breakpoint(record)
    if stop:
        click.echo(f"{stop}{at}; let it go on with:\n  {graphq_prefix()} runs resume {record.id}")
    return bool(stop)


def print_answer_hint(run_id: str, requests: Sequence[Interrupt]) -> None:
    """Print the commands that answer ``requests`` (see :func:`answer_commands`)."""
    commands = answer_commands(run_id, requests)
    click.echo("answer with:" if len(commands) == 1 else "answer all with (or one by one, with --request):")
    for command in commands:
        click.echo(f"  {command}")
