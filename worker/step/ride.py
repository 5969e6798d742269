"""A step job's own commands, sent in the round trips RQ makes for every job anyway (P1).

RQ writes a job's start in one pipeline (``Job.prepare_for_execution``) and its success in another
(``Job._handle_success``). A step job queues its claim on the first (:mod:`graphq.worker.step.claim`) and,
when it can,
its commit on the second (:class:`graphq.worker.step.commit.CommitAhead`), so that neither costs a round trip
of its own. :func:`keep_reply` hands such a command's reply to its owner without changing what RQ sees.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["keep_reply"]


def keep_reply(pipeline: Any, index: int, keep: Callable[[Any], None]) -> None:
    """Make the next ``execute()`` of ``pipeline`` (redis-py) hand the reply of its command ``index`` — a
    value, or the error Redis answered with — to ``keep``, and raise, as redis-py would, only the errors of
    the other commands (RQ's own).

    An ``execute()`` that raises before any reply (a connection error, a ``WatchError``) calls nothing:
    whoever queues the command again on the next pipeline keeps its reply the same way. ``keep`` must not
    raise.
    """
    execute = pipeline.execute

    def execute_keeping(raise_on_error: bool = True) -> list[Any]:
        del pipeline.execute  # this one call: the pipeline and this closure would hold each other
        replies: list[Any] = execute(raise_on_error=False)
        keep(replies[index])
        if raise_on_error:
            for i, reply in enumerate(replies):
                if i != index and isinstance(reply, Exception):
                    raise reply
        return replies

    pipeline.execute = execute_keeping
