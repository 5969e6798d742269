"""Expected errors become one ``error: ...`` line on stderr and an exit code; no tracebacks.

Exit codes: 0 success, 1 a failure (a run failed or was canceled, Redis unreachable or refusing writes, a wait
timed out), 2 bad input (unknown workflow, malformed JSON, invalid ids, bad settings, unknown run or thread,
an answer to a run that is not waiting for one), 3 a run is waiting for input (not an error: no ``error:``
line), 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import logging
from typing import IO, Any, NoReturn

import click
import redis.exceptions as rex

from graphcore.backend.connection import REDIS_FULL, refuses_writes
from graphcore.errors import GraphqError, PermanentError
from graphq.worker.logs import json_line

__all__ = [
    "EXIT_FAILURE",
    "EXIT_INTERRUPTED",
    "EXIT_USAGE",
    "EXIT_WAITING",
    "CliError",
    "GraphqGroup",
    "fail",
]

EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_WAITING = 3
"""A run paused for a human's answer (``interrupt()``); see ``graphq runs answer``."""
EXIT_INTERRUPTED = 130


class CliError(click.ClickException):
    """An expected error: printed as ``error: <message>`` on stderr, then exit with ``exit_code``."""

    def __init__(self, message: str, exit_code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.exit_code = exit_code  # type: ignore[misc]  # click declares it on the class; per error here

    def show(self, file: IO[Any] | None = None) -> None:
        """Print the one-line error on stderr: ``error: <message>``, or with ``GRAPHQ_LOG_FORMAT=json`` one
        JSON log line (level ERROR, logger ``graphq.cli``, ``message``: the message)."""
        line = json_line(self.format_message(), "graphq.cli", logging.ERROR)
        click.echo(f"error: {self.format_message()}" if line is None else line, err=True)


def fail(message: str, exit_code: int = EXIT_USAGE) -> NoReturn:
    """Stop the command with an expected error (see :class:`CliError`)."""
    raise CliError(message, exit_code)


def _translate(exc: BaseException) -> CliError | None:
    """The :class:`CliError` for an expected library error, or None for a bug (shown with its traceback)."""
    if isinstance(exc, PermanentError):
        return CliError(str(exc), EXIT_USAGE)
    if isinstance(exc, GraphqError):
        return CliError(str(exc), EXIT_FAILURE)
    if isinstance(exc, rex.ConnectionError | rex.TimeoutError):
        return CliError(f"lost the connection to Redis: {exc}", EXIT_FAILURE)
    if refuses_writes(exc):  # nothing of the refused write was written
        return CliError(f"{REDIS_FULL}; free memory or raise maxmemory", EXIT_FAILURE)
    if isinstance(exc, TimeoutError):
        return CliError(str(exc), EXIT_FAILURE)
    return None


class GraphqGroup(click.Group):
    """A click group that turns expected errors of any subcommand into :class:`CliError`."""

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        """Parse the group's own options; a usage error there is one line too (``graphq --bogus``)."""
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            raise _one_line(exc) from None

    def invoke(self, ctx: click.Context) -> Any:
        """Run the group and its subcommand; translate graphq, Redis and timeout errors."""
        try:
            return super().invoke(ctx)
        except (GraphqError, rex.RedisError, TimeoutError) as exc:
            translated = _translate(exc)
            if translated is None:
                raise
            raise translated from None
        except KeyboardInterrupt:
            raise CliError("interrupted", EXIT_INTERRUPTED) from None
        except click.UsageError as exc:
            raise _one_line(exc) from None


def _one_line(exc: click.UsageError) -> click.UsageError | CliError:
    """click prints usage, a hint and the error: make it one line; a group called without its command
    (``graphq runs``) shows its help, as click does (exit 2)."""
    if isinstance(exc, click.exceptions.NoArgsIsHelpError):
        return exc
    return CliError(_usage_line(exc), EXIT_USAGE)


def _usage_line(exc: click.UsageError) -> str:
    """What, where, and where to read more, e.g. ``graphq runs answer: Missing option '--value' (see graphq
    runs answer --help)``."""
    path = exc.ctx.command_path if exc.ctx is not None else "graphq"
    if isinstance(exc, click.NoSuchOption) and exc.ctx is not None and exc.ctx.parent is not None:
        root = exc.ctx.find_root()
        if any(exc.option_name in p.opts for p in root.command.params):
            return (
                f"{path}: {exc.option_name} is an option of {root.command_path} itself: put it before the "
                f"command ({root.command_path} {exc.option_name} ... {path.split(' ', 1)[1]} ...)"
            )
    return f"{path}: {exc.format_message().rstrip('.')} (see {path} --help)"
