"""Log lines (O4): each carries the workflow, run, thread, step and tenant where known, as text or JSON,
and never a password.

The step job binds its run and thread (then workflow and tenant, once the run is read, and the step, the
thread's as in ``graphq state --history``, once its head checkpoint is: :func:`at_step`) for its duration
(:func:`bind`, a context variable: the node threads of the step see it too, the engine runs them in a copy
of the job's context). RQ's lines about a step job get its run from the job's id. :func:`configure`
installs one stderr handler on the root logger (RQ's loggers then add none of their own) whose format is
``GRAPHQ_LOG_FORMAT``:

- ``text``: ``2026-12-01 14:00:00,123 WARNING graphq.step: message [workflow=w run=r thread=t step=2
  tenant=a]`` (the bracket lists only what is known);
- ``json``: one object per line, ``{"time": ISO-8601 UTC, "level", "logger", "message", "workflow",
  "run", "thread", "step", "tenant", "exception"}`` (unknown fields left out).

Every line is redacted: the password of a URL (``scheme://user:pass@``) becomes ``***``
(:func:`redact_urls`; Redis URLs by :func:`~graphcore.backend.connection.redact_url`), and so does the
password of ``GRAPHQ_REDIS_URL`` wherever it appears when it has at least :data:`MIN_BARE_SECRET`
characters (:func:`redact`): a log line is for people, and so long a string in one is that password, while a
short one (``s``, ``default``, ``wrong``) would be masked inside words and values. What the CLI prints as
its output is data and gets only :func:`redact_urls`.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
import sys
import threading
from datetime import UTC, datetime
from types import TracebackType
from typing import Any
from urllib.parse import unquote, urlsplit

from graphcore.backend.connection import redact_url

__all__ = [
    "FIELDS",
    "MIN_BARE_SECRET",
    "JsonFormatter",
    "TextFormatter",
    "about",
    "announce",
    "at_step",
    "bind",
    "configure",
    "json_line",
    "redact",
    "redact_urls",
    "unbind",
]

FIELDS = ("workflow", "run", "thread", "step", "tenant")
"""The context fields of a log line, in order."""

_context: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("graphq_log", default=None)

_URL = re.compile(r"\b[a-z][a-z0-9+.\-]*://[^\s'\"<>]+", re.IGNORECASE)
_USERINFO = re.compile(r"^([a-z][a-z0-9+.\-]*://[^\s:/@]*:)[^\s/]*@", re.IGNORECASE)
"""A URL's ``scheme://user:`` and password, up to the last ``@`` before its path (a password may hold one)."""
_secrets: list[str] = []

MIN_BARE_SECRET = 12
"""Characters a configured password needs for :func:`redact` to mask it outside a URL too."""


def bind(**fields: Any) -> tuple[dict[str, Any], contextvars.Token[dict[str, Any] | None]]:
    """Give this context's log lines ``fields`` (of :data:`FIELDS`) until :func:`unbind`; returns the
    dictionary (add to it as more becomes known) and the token for :func:`unbind`."""
    current = dict(fields)
    return current, _context.set(current)


def at_step(step: int) -> None:
    """Give this context's log lines (bound by :func:`bind`) the thread's super-step ``step``, numbered like
    its checkpoints (``graphq state --history``), once it is known; a no-op where nothing is bound."""
    fields = _context.get()
    if fields is not None:
        fields["step"] = step


def unbind(token: contextvars.Token[dict[str, Any] | None]) -> None:
    """Forget what :func:`bind` set."""
    _context.reset(token)


def redact_urls(text: str) -> str:
    """``text`` with the password of every URL in it replaced by ``***``: ``scheme://user:pass@host``
    becomes ``scheme://user:***@host`` (any scheme; for Redis URLs a ``password=`` argument too); nothing
    else changes, so JSON stays the same JSON (placeholders such as ``:PASSWORD@`` are kept)."""
    return _URL.sub(_redacted, text)


def redact(text: str) -> str:
    """A log line's :func:`redact_urls`, and the configured Redis password (:func:`configure`) replaced by
    ``***`` wherever it appears when it has at least :data:`MIN_BARE_SECRET` characters."""
    text = redact_urls(text)
    for secret in _secrets:
        text = text.replace(secret, "***")
    return text


_PLACEHOLDER = re.compile(r":(?:PASSWORD@(?:HOST\b|\.\.\.)|password@\]|\*\*\*@)")
"""A URL whose password is a placeholder of help and error texts (``redis://:PASSWORD@HOST``,
``redis://USER:PASSWORD@...``, ``redis://[[user]:password@]host``, one masked already): case-sensitive,
so that a real password ``password`` (``redis://:password@redis:6379``) is masked."""


def _redacted(match: re.Match[str]) -> str:
    url = match.group(0)
    if _PLACEHOLDER.search(url):
        return url
    if url.lower().startswith(("redis://", "rediss://", "unix://")):
        return redact_url(url)
    return _USERINFO.sub(r"\1***@", url)


def about(**fields: Any) -> dict[str, Any]:
    """``extra=`` for a log call about a run outside its step (the supervisor, the reaper, the lease
    keeper): ``log.warning("...", run_id, extra=about(run=run_id, thread=thread_id))``."""
    return {_EXTRA: fields}


_EXTRA = "graphq_context"


def _context_of(record: logging.LogRecord) -> dict[str, Any]:
    """The record's context fields: those bound (:func:`bind`) where it was logged, then those given with
    ``extra=about(...)``, in :data:`FIELDS` order, known ones only (not plain record attributes:
    ``thread`` is the logging module's own)."""
    known = {**(_context.get() or {}), **getattr(record, _EXTRA, {})}
    if "run" not in known and record.name.startswith("rq"):  # RQ's lines about a job name its id
        job = _RQ_JOB.search(record.getMessage())
        if job is not None:  # its number is the run's count of steps, not the thread's step: not given
            known = {"run": job.group(1), **known}
    return {name: known[name] for name in FIELDS if known.get(name) not in (None, "")}


_RQ_JOB = re.compile(r"\bgraphq-([0-9a-f]{32})-\d+\b")
"""A step job's id, ``graphq-<run>-<step>`` (:func:`graphq.worker.queue.job_id`), in a line RQ logs about
it."""


class TextFormatter(logging.Formatter):
    """``time LEVEL logger: message [field=value ...]``, redacted."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        fields = _context_of(record)
        if fields:
            first, newline, rest = line.partition("\n")
            tail = " ".join(f"{k}={v}" for k, v in fields.items())
            line = f"{first} [{tail}]{newline}{rest}"
        return redact(line)


class JsonFormatter(logging.Formatter):
    """One JSON object per line (see the module's docstring), redacted."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": redact(record.getMessage()),
        }
        entry.update(_context_of(record))
        if record.exc_info:
            entry["exception"] = redact(self.formatException(record.exc_info))
        elif record.exc_text:
            entry["exception"] = redact(record.exc_text)
        return json.dumps(entry, default=str, ensure_ascii=False)


def _url_secrets(url: str | None) -> list[str]:
    """The password of ``url`` (raw and percent-decoded), if it has one of :data:`MIN_BARE_SECRET`
    characters or more."""
    if not url:
        return []
    try:
        password = urlsplit(url).password
    except ValueError:
        return []
    if not password:
        return []
    found = {password, unquote(password)}
    return sorted((p for p in found if len(p) >= MIN_BARE_SECRET), key=len, reverse=True)


_format = ["text"]
"""The format :func:`configure` set last."""


def announce(message: str, logger: str = "graphq") -> None:
    """Print a process's start or stop line (``graphq worker: 2 process(es) on ...``) on stderr whatever
    the log level: as it is with the ``text`` format, as one JSON line (level INFO, ``logger``) with
    ``json``; redacted."""
    line = json_line(message, logger, logging.INFO)
    print(redact(message) if line is None else line, file=sys.stderr, flush=True)


def json_line(message: str, logger: str, level: int) -> str | None:
    """``message`` as one JSON log line of ``logger`` at ``level`` (see the module's docstring; redacted)
    when :func:`configure` set the ``json`` format; None with ``text`` (print the line as it is)."""
    if _format[0] != "json":
        return None
    record = logging.LogRecord(logger, level, __file__, 0, message, None, None)
    return JsonFormatter().format(record)


def _log_uncaught(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
    """``sys.excepthook`` with the json format: a crash is one JSON line, its traceback in ``exception``."""
    if issubclass(kind, KeyboardInterrupt):
        sys.__excepthook__(kind, value, tb)
        return
    logging.getLogger("graphq").critical("uncaught %s: %s", kind.__name__, value, exc_info=(kind, value, tb))


def _log_uncaught_in_thread(args: threading.ExceptHookArgs) -> None:
    if args.exc_value is not None:
        _log_uncaught(args.exc_type, args.exc_value, args.exc_traceback)


def configure(level: int | str, log_format: str = "text", redis_url: str | None = None) -> None:
    """Log ``level`` and above on stderr in ``log_format`` (``text`` or ``json``), redacted, through one
    handler on the root logger (replacing one this function installed before); ``redis_url``'s password
    is masked wherever it appears when it is long enough (:func:`redact`). With ``json`` an uncaught
    exception (of any thread) is logged as one JSON line (``exception``: its traceback), not printed raw."""
    _secrets[:] = _url_secrets(redis_url)
    _format[0] = log_format
    json_format = log_format == "json"
    sys.excepthook = _log_uncaught if json_format else sys.__excepthook__
    threading.excepthook = _log_uncaught_in_thread if json_format else threading.__excepthook__
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "graphq", False):
            root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.graphq = True  # type: ignore[attr-defined]
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    root.addHandler(handler)
    root.setLevel(level)
