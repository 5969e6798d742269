"""Lua scripts, one per file; every key reaches them through KEYS (I8).

Lua scripts cannot include files: a line ``--#include <part>`` in a script is replaced, as the script is
read, by the text of the fragment ``_<part>.lua`` (a fragment is no script of its own: functions shared
by several scripts, e.g. ``_plan.lua``, the planned checkpoint write of ``put_checkpoint.lua`` and
``commit_step.lua``).
"""

from __future__ import annotations

import hashlib
import re
import weakref
from collections.abc import Callable, Sequence
from functools import cache
from importlib.resources import files
from typing import Any

from redis.exceptions import NoScriptError

__all__ = ["Script", "script", "source", "stage"]

_INCLUDE = re.compile(r"^--#include (\w+)$", re.MULTILINE)
_COMMENT = re.compile(r"^[ \t]*--(?!#include ).*$", re.MULTILINE)


@cache
def source(name: str) -> str:
    """The text of ``graphcore/backend/lua/<name>.lua``, its ``--#include`` lines replaced by fragments and
    its comment-only lines emptied (kept as blank lines, so that Redis's error line numbers still point into
    the file, up to its first ``--#include``): a staged EVAL carries the text on every call (:func:`stage`),
    and the comments were about a third of its bytes (admission.lua: 13.4 KB, 9.6 KB without them)."""
    text = _COMMENT.sub("", files(__name__).joinpath(f"{name}.lua").read_text())
    return _INCLUDE.sub(lambda include: source(f"_{include.group(1)}").rstrip("\n"), text)


class Script:
    """One script of this package on one client (:func:`script`), called the one way graphq calls scripts.

    Every call is an EVALSHA of the script's SHA-1 (a script queued inside a MULTI whose other writes must
    not apply without it is sent as an EVAL carrying its text instead: :func:`stage`). A call that Redis
    answers with NOSCRIPT (it lost its script cache: a restart, SCRIPT FLUSH) loads the script and is made
    again, once (:meth:`again_if_unloaded`); nothing checks for the script before a call (no SCRIPT EXISTS): a
    loaded script costs one round trip per call.

    Attributes:
        kv: the redis-py client it is called on.
        name: the file's name without ``.lua``.
        text: its text (:func:`source`).
        sha: the SHA-1 of ``text`` (hex, 40 characters), computed here.
    """

    def __init__(self, kv: Any, name: str) -> None:
        self.kv, self.name = kv, name
        self.text = source(name)
        self.sha = hashlib.sha1(self.text.encode(), usedforsecurity=False).hexdigest()

    def __call__(self, keys: Sequence[Any] = (), args: Sequence[Any] = ()) -> Any:
        """Run the script in a round trip of its own (as redis-py's registered script is called): its reply.

        Raises:
            redis.exceptions.ResponseError: the script's error (NOSCRIPT only if loading it did not help).
        """
        return self.again_if_unloaded(lambda: self.once(keys, args))

    def once(self, keys: Sequence[Any], args: Sequence[Any]) -> Any:
        """One EVALSHA in a round trip of its own: its reply.

        Raises:
            redis.exceptions.NoScriptError: Redis has not got the script (see :meth:`again_if_unloaded`).
            redis.exceptions.ResponseError: the script's error.
        """
        return self.kv.evalsha(self.sha, len(keys), *keys, *args)

    def queue(self, pipe: Any, keys: Sequence[Any], args: Sequence[Any]) -> int:
        """Queue an EVALSHA of the script on ``pipe`` (a redis-py pipeline, MULTI or not); returns the
        index of its reply among the pipeline's replies. A NOSCRIPT reply is the caller's to handle (send
        the call again through :meth:`again_if_unloaded`)."""
        index = len(pipe.command_stack)
        pipe.evalsha(self.sha, len(keys), *keys, *args)
        return index

    def load(self) -> None:
        """SCRIPT LOAD the script (one round trip)."""
        self.kv.script_load(self.text)

    def again_if_unloaded(self, send: Callable[[], Any]) -> Any:
        """``send()`` (a call of this script, alone or in a pipeline; returns its reply, or raises or
        returns the error Redis answered with); when that is NOSCRIPT, :meth:`load` and ``send()`` again,
        once. Returns the last reply (a ``NoScriptError`` if the script still was not there)."""
        try:
            reply = send()
        except NoScriptError as exc:
            reply = exc
        if not isinstance(reply, NoScriptError):
            return reply
        self.load()
        return send()


_registered: weakref.WeakKeyDictionary[Any, dict[str, Script]] = weakref.WeakKeyDictionary()


def script(kv: Any, name: str) -> Script:
    """The :class:`Script` ``graphcore/backend/lua/<name>.lua`` on ``kv`` (a callable ``(keys, args)``),
    made once per client: a step job calls scripts on its hot path."""
    scripts = _registered.setdefault(kv, {})
    if name not in scripts:
        scripts[name] = Script(kv, name)
    return scripts[name]


def stage(pipe: Any, name: str, keys: Sequence[Any], args: Sequence[Any]) -> None:
    """Queue script ``name`` on ``pipe`` (a MULTI pipeline) as an EVAL carrying its text.

    Not an EVALSHA (:meth:`Script.queue`): one that finds no script fails alone inside the transaction once
    Redis has lost its script cache (a restart) while the transaction's other writes apply; and not
    redis-py's registered script with ``client=pipe``, which sends SCRIPT EXISTS before the transaction, one
    more round trip each time. An EVAL runs in the transaction in any case, for the cost of the script's
    bytes.
    """
    pipe.eval(source(name), len(keys), *keys, *args)
