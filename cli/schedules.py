"""``graphq schedules ...`` (add, update, list, show, pause, resume, remove, trigger, next, history) and
``graphq scheduler``, the process that starts the runs on their schedules (K1)."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from types import FrameType
from typing import Any

import click

from graphcore import keys
from graphcore.backend.connection import redact_url
from graphcore.engine.inputs import InputTooLargeError
from graphcore.errors import InvalidUpdateError, SerializationError
from graphq.cli.bounds import LIMIT, PORT
from graphq.cli.context import AppContext
from graphq.cli.errors import fail
from graphq.cli.inputs import check_ids, parse_input
from graphq.cli.output import output_option, print_json, print_table, short
from graphq.scheduler.api import Schedules, check_schedule, due_time, utc_text
from graphq.scheduler.cron import Cron, parse_zone
from graphq.scheduler.hooks import clock_from_env
from graphq.scheduler.loop import Scheduler
from graphq.scheduler.schedules import (
    CATCHUP,
    OVERLAP,
    Fire,
    Schedule,
    parse_duration,
    parse_time,
)
from graphq.worker.health import publish_status
from graphq.worker.housekeeping.loops import start_housekeeping
from graphq.worker.logs import announce
from graphq.worker.metrics import cluster_collector, serve

__all__ = ["scheduler", "schedules"]


def _api(app: AppContext) -> Schedules:
    return Schedules(app.client())


def _zoned(moment: datetime, zone: str) -> str:
    """``moment`` in ``zone``, ISO-8601 with its offset."""
    return moment.astimezone(parse_zone(zone)).isoformat()


@click.group()
def schedules() -> None:
    """Cron schedules: start a workflow's run at every fire time of a cron expression in a time zone.
    `graphq scheduler` (one or more replicas) starts the runs; schedules change while it runs."""


def _definition_options(update: bool) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The options of a schedule's definition: with defaults for ``add``; for ``update`` none (an option not
    given keeps the schedule's value)."""

    def default(value: str) -> dict[str, Any]:
        return {} if update else {"default": value, "show_default": True}

    options = [
        click.option("--workflow", required=not update, metavar="W", help="The workflow each fire starts."),
        click.option(
            "--cron", "cron", required=not update, metavar="EXPR", help="5 cron fields or @hourly, ..."
        ),
        click.option("--tz", metavar="ZONE", help="IANA time zone of the fields.", **default("UTC")),
        click.option(
            "--input", "input_", metavar="JSON|@FILE", help="The input of every run (JSON, or @file)."
        ),
        click.option("--tenant", metavar="T", help="The runs' tenant.", **default("default")),
        click.option("--thread", metavar="T", help="Every run on thread T (they queue on it)."),
        click.option("--new-thread", is_flag=True, help="Each run on a new thread (the default)."),
        click.option("--overlap", type=click.Choice(OVERLAP), **default("skip")),
        click.option("--catchup", type=click.Choice(CATCHUP), **default("latest")),
        click.option("--catchup-window", metavar="DURATION", **default("1h")),
        click.option("--jitter", metavar="DURATION", help="Start each fire up to this late.", **default("0")),
        click.option(
            "--start", metavar="TIME", help="No fire before TIME (ISO-8601; in --tz without an offset)."
        ),
        click.option(
            "--end", metavar="TIME", help="No fire after TIME (ISO-8601; in --tz without an offset)."
        ),
    ]

    def apply(command: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(options):
            command = option(command)
        return command

    return apply


_POLICIES = """
    \b
    --overlap (the schedule's previous run still active): skip records the fire skipped-overlap, allow
      starts it anyway, buffer_one keeps one waiting and starts it when the previous run ends.
    --catchup (fires missed while no scheduler ran, within --catchup-window): skip records them missed;
      latest starts one run for them, the newest (caught-up; the others missed), and the next fire still
      starts on time as usual: with GRAPHQ_SCHEDULER_GRACE_S=10, an every-minute schedule and no scheduler
      from 14:32:30 to 14:35:50, 14:33 and 14:34 are missed, 14:35 starts at 14:35:50 (caught-up) and 14:36
      on time, back to back (--overlap skip skips 14:36 while that run is active); all starts each.
    DURATION: 90s, 5m, 2h, 1d, 1h30m, at most 3650d; --jitter 0 (or 0s) is none; --catchup-window
      is above 0.
    A local time that does not exist (spring forward) fires at the first instant after the gap (an hourly
    schedule's 02:00 merges into 03:00: one fire); a repeated one (fall back) at its first occurrence.
    --start, --end and next --after without an offset are read the same way (02:15 in the gap is 03:00).
    """


_NO_WINDOW = "every fire found late would be missed; --catchup skip runs no missed fire"


def _fields(opts: dict[str, Any], zone: str | Callable[[], str]) -> dict[str, Any]:
    """The schedule fields of the options given (None: not given), exit 2 naming a malformed one, each option
    checked on its own (without Redis); ``zone`` (or the function that returns it: update reads the stored
    one) reads --start and --end without an offset."""
    if opts["thread"] is not None and opts["new_thread"]:
        raise click.UsageError("--thread and --new-thread exclude each other")
    check_ids(opts["thread"], opts["tenant"])
    if opts["tz"] is not None:
        parse_zone(opts["tz"])
    if opts["cron"] is not None:
        Cron.parse(opts["cron"])  # the fields' errors do not depend on the zone
    given = {
        k: opts[k] for k in ("workflow", "cron", "tz", "tenant", "overlap", "catchup") if opts[k] is not None
    }
    if opts["input_"] is not None:
        given["input"] = parse_input(opts["input_"])
    if opts["thread"] is not None or opts["new_thread"]:
        given["thread"] = opts["thread"]
    if opts["catchup_window"] is not None:
        given["catchup_window_s"] = parse_duration(opts["catchup_window"], "--catchup-window", _NO_WINDOW)
    if opts["jitter"] is not None:
        given["jitter_s"] = parse_duration(opts["jitter"], "--jitter")
    for option in ("start", "end"):  # last: zone() may read Redis
        if opts[option] is not None:
            given[option] = parse_time(opts[option], zone, f"--{option}")
    return given


_INPUT_ERRORS = (InvalidUpdateError, InputTooLargeError, SerializationError)
"""What :meth:`Schedules.add` / ``update`` raise for an input the workflow refuses (InputTypeError is an
InvalidUpdateError): reported as ``--input: ...``, as graphq enqueue does."""


def _first_fire(app: AppContext, schedule: Schedule) -> str:
    upcoming = Schedules(app.client()).next(schedule.name, 1)
    return f"; first fire {_zoned(upcoming[0], schedule.tz)} ({utc_text(upcoming[0])})" if upcoming else ""


@schedules.command(
    "add",
    short_help="Add a schedule.",
    help=f"""Add schedule NAME: start --workflow at every
    fire time of --cron in --tz.
{_POLICIES}""",
)
@click.argument("name")
@_definition_options(update=False)
@click.pass_obj
def add(app: AppContext, /, name: str, **opts: Any) -> None:
    fields = _fields(opts, opts["tz"])
    app.workflow(opts["workflow"])  # unknown here but published by workers: the message says how to load it
    now = datetime.now(UTC)
    try:
        check_schedule(app.registry, Schedule.build(name=name, created_at=now, **fields), now)  # before Redis
        schedule = _api(app).add(name, **fields)
    except _INPUT_ERRORS as exc:
        fail(f"--input: {exc}")
    click.echo(f"added schedule {schedule.name}{_first_fire(app, schedule)}")


@schedules.command(
    "update",
    short_help="Change a schedule in place.",
    help=f"""Change schedule NAME in place:
    the options given change, the others keep their values. Its state is kept: the cursor (the newest fire
    handled: fires already handled are not run again), its latest run (--overlap still sees a run that is
    active) and a buffered fire, and its history. A new --cron, --tz or --start moves the cursor to now: the
    new timetable's fires from now on (none is caught up).
{_POLICIES}""",
)
@click.argument("name")
@_definition_options(update=True)
@click.pass_obj
def update(app: AppContext, /, name: str, **opts: Any) -> None:
    fields = _fields(opts, lambda: opts["tz"] or _api(app).stored(name).get("tz", "UTC"))
    if not fields:
        fail(f"schedules update {name!r}: nothing to change: give at least one option (see --help)")
    if "workflow" in fields:
        app.workflow(fields["workflow"])
    try:
        schedule = _api(app).update(name, **fields)
    except _INPUT_ERRORS as exc:
        fail(f"--input: {exc}")
    click.echo(f"updated schedule {schedule.name}{_first_fire(app, schedule).replace('first', 'next')}")


_PROBLEM_LIMIT = 300
"""Characters shown of a cell of ``schedules list``: a problem whole (one line of why and what to do)."""


@schedules.command("list", short_help="List the schedules.")
@output_option
@click.pass_obj
def list_schedules(app: AppContext, output: str) -> None:
    """Every schedule: name, workflow, expression and zone, policies, paused, next fire (UTC); a schedule
    that cannot be read or planned here (an expression that never matches, a zone this host lacks) with the
    problem (the scheduler skips it), and so is one whose workflow a running scheduler cannot load (its
    fires are recorded missed)."""
    found = Schedules(app.reader()).summaries()
    if output == "json":
        print_json(found)
        return
    columns = ["name", "workflow", "cron", "tz", "overlap", "catchup", "paused", "next_fire"]
    headers = ["schedule", "workflow", "cron", "zone", "overlap", "catch-up", "paused", "next fire (UTC)"]
    if any(s["problem"] for s in found):
        columns, headers = [*columns, "problem"], [*headers, "problem"]
    print_table(
        tuple(headers),
        [tuple(s.get(c) for c in columns) for s in found],
        no_wrap=("schedule", "cron", "zone", "next fire (UTC)"),
        limit=_PROBLEM_LIMIT,
    )


@schedules.command("show", short_help="Show one schedule.")
@click.argument("name")
@output_option
@click.pass_obj
def show(app: AppContext, name: str, output: str) -> None:
    """One schedule: its definition, its latest run (its chain followed: the reaper's continuation of a run
    whose worker was lost), a fire kept waiting, its next fire still to come (next_fire, UTC) and when it is
    due (next_due: plus its jitter; with --jitter a fire whose time passed can still be to come), and a
    problem: it cannot be planned here, or a running scheduler cannot load its workflow. The lag in
    `schedules history` is measured from the due time: the jitter asked for is not lag."""
    found = Schedules(app.reader()).shown(name)
    if output == "json":
        print_json(found)
        return
    state = found.pop("state") or {"buffered_ms": None}
    rows = [(k, short(v)) for k, v in found.items() if k != "latest_run"] + [
        ("latest run", found["latest_run"]),
        (
            "buffered fire",
            state["buffered_ms"] and utc_text(datetime.fromtimestamp(state["buffered_ms"] / 1000, UTC)),
        ),
    ]
    print_table(("field", "value"), rows, no_wrap=("field",))


def _simple(verb: str, act: Callable[[Schedules, str], Any], help_text: str) -> click.Command:
    @click.command(verb, short_help=help_text, help=help_text)
    @click.argument("name")
    @click.pass_obj
    def command(app: AppContext, name: str) -> None:
        act(Schedules(app.client()), name)
        click.echo(f"schedule {name}: {verb}d")

    return command


schedules.add_command(_simple("pause", Schedules.pause, "Stop a schedule firing (until resume)."))
schedules.add_command(
    _simple("resume", Schedules.resume, "Let a paused schedule fire again (fires while paused are not run).")
)
schedules.add_command(
    _simple("remove", Schedules.remove, "Delete a schedule and its history (its runs stay).")
)


@schedules.command("trigger", short_help="Fire a schedule now.")
@click.argument("name")
@click.pass_obj
def trigger(app: AppContext, name: str) -> None:
    """Start a run of NAME now, outside its timetable, also while it is paused; prints the run id. Its
    --overlap applies: while its latest run is active, skip starts nothing (exit 2, recorded skipped-overlap),
    buffer_one keeps the fire waiting until that run ends (not while paused; says so, exit 0), allow starts
    it anyway."""
    api = Schedules(app.client())
    run_id = api.trigger(name)
    if run_id is not None:
        click.echo(run_id)
        return
    click.echo(api.buffered_text(name))


@schedules.command("next", short_help="The next fire times.")
@click.argument("name")
@click.option("-n", "count", type=click.IntRange(1, 1000), default=5, show_default=True, metavar="N")
@click.option(
    "--after",
    metavar="TIME",
    help="After TIME instead of now (ISO-8601; in the zone without offset: a time in a DST gap is the "
    "instant after it, whose fires are listed).",
)
@output_option
@click.pass_obj
def next_fires(app: AppContext, name: str, count: int, after: str | None, output: str) -> None:
    """The next N fire times of NAME after now (or --after TIME), in its zone and in UTC (one column for a
    UTC schedule); with --jitter also when each is due (its time plus its offset, UTC)."""
    api = Schedules(app.reader())
    schedule = api.get(name)
    moment = None if after is None else parse_time(after, schedule.tz, "--after", after=True)
    fires = api.next(name, count, moment)
    found = [
        {
            "local": _zoned(f, schedule.tz),
            "utc": utc_text(f),
            "zone": schedule.tz,
            "due": utc_text(due_time(schedule, f)),
        }
        for f in fires
    ]
    if output == "json":
        print_json(found)
        return
    columns = ["utc"] if schedule.tz == "UTC" else ["local", "utc"]
    columns += ["due"] if schedule.jitter_s > 0 else []
    names = {"local": f"fire ({schedule.tz})", "utc": "fire (UTC)", "due": "due (UTC, jitter added)"}
    headers = tuple(names[c] for c in columns)
    print_table(headers, [tuple(f[c] for c in columns) for f in found], no_wrap=headers)


@schedules.command("history", short_help="A schedule's fires.")
@click.argument("name")
@click.option("--limit", "-n", type=LIMIT, default=20, show_default=True, metavar="N")
@output_option
@click.pass_obj
def history(app: AppContext, name: str, limit: int, output: str) -> None:
    """NAME's fires, newest first: fire time, outcome (started, skipped-overlap, missed, caught-up,
    buffered), run id, lag."""
    fires: list[Fire] = Schedules(app.reader()).history(name, limit)
    if output == "json":
        print_json([f.model_dump() for f in fires])
        return
    rows = [
        (f.fire_time, f.outcome, f.run_id or "", "" if f.lag_s is None else f"{f.lag_s:.3f}", f.note)
        for f in fires
    ]
    print_table(("fire (UTC)", "outcome", "run", "lag (s)", "note"), rows, no_wrap=("fire (UTC)", "run"))


@click.command(short_help="Start runs on their schedules (and run the housekeeping loops).")
@click.option(
    "--metrics-port",
    type=PORT,
    default=0,
    show_default=True,
    metavar="PORT",
    help="Serve /metrics, /healthz and /readyz on PORT (0: none).",
)
@click.pass_obj
def scheduler(app: AppContext, metrics_port: int) -> None:
    """Run the scheduler until SIGTERM or Ctrl-C: every GRAPHQ_SCHEDULER_INTERVAL_S a pass over the
    schedules starts the runs that are due. Run two or more replicas: each fire is claimed once. Also runs
    the housekeeping loops (reaper, request expiry, retention; one active instance of each per cluster)."""
    kv = app.kv()
    settings = app.settings
    clock = clock_from_env() or time.time
    instance = Scheduler(app.client(kv), settings, clock)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    def live() -> bool:  # /healthz, as graphq health --scheduler: the loop ran within GRAPHQ_LEASE_TTL_S
        return time.time() - instance.ticked_at <= settings.lease_ttl_s  # not Redis: an outage restarts none

    def ready() -> bool:  # /readyz, as graphq health --scheduler --ready: also Redis answers, not stopping
        return not stop.is_set() and bool(kv.ping()) and not instance.unloadable  # and the workflows load

    cluster = [cluster_collector(kv, settings, app.registry.names())]  # queue depth, runs: with no worker
    server = serve(metrics_port, ready, live, collectors=cluster) if metrics_port else None
    helpers = start_housekeeping(kv, settings, stop)
    problem = instance.look()
    announce(
        f"graphq scheduler {instance.id}: every {settings.scheduler_interval_s:g} s on "
        f"{redact_url(app.redis_url())} (started {datetime.now(UTC).isoformat(timespec='seconds')})"
        + (f"; {problem}" if problem else ""),
        "graphq.scheduler",
    )
    status = publish_status(
        "scheduler",
        settings.heartbeat_interval_s,
        draining=stop.is_set,
        loop_at=lambda: instance.ticked_at,
        heartbeat_key=keys.scheduler(instance.id),
    )
    try:
        with status:
            instance.run(stop)
    finally:
        stop.set()
        for thread in helpers:
            thread.join(timeout=5)
        if server is not None:
            server.shutdown()
    announce(f"graphq scheduler {instance.id}: stopped", "graphq.scheduler")
