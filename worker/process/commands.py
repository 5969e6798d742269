"""RQ's command channel (``rq.command``: stop-job, kill-horse, shutdown) with every wait on it bounded.

RQ reads its worker's pub/sub channel on a thread started with ``run_in_thread(sleep_time=60)`` and, at
shutdown, stops that thread. From redis-py 8.2 on, ``PubSubWorkerThread.stop()`` joins the thread without
a timeout, and the thread sits in a read of up to ``sleep_time`` seconds: an idle worker took 20–60 s to
stop after SIGTERM, and ``graphq worker --burst`` on empty queues about 61 s.

:class:`BoundedCommands` reads the channel with a short poll (:data:`POLL_S`), so the thread notices a stop
within that time, and joins it with a bound (:data:`JOIN_S`) on any redis-py version.
"""

from __future__ import annotations

import logging
from typing import Any

from rq import SimpleWorker

__all__ = ["JOIN_S", "POLL_S", "BoundedCommands"]

log = logging.getLogger("graphq.worker")

POLL_S = 0.05
"""Seconds the command thread waits for a message before it looks at its stop flag again: what every
worker's stop waits for at most (a burst worker's end, SIGTERM, Ctrl-C). An idle read costs no Redis call."""
JOIN_S = 2.0
"""Seconds a stopping worker waits for its command thread; past that the (daemon) thread is left."""


class BoundedCommands(SimpleWorker):
    """The mixin (placed before the worker class in the MRO): RQ's ``subscribe``/``unsubscribe`` with a
    :data:`POLL_S` poll and a :data:`JOIN_S` join. Commands arrive as soon as they are published; the poll
    only bounds how long the idle thread takes to see its stop."""

    def subscribe(self) -> None:
        self.pubsub = self.connection.pubsub()
        self.pubsub.subscribe(**{self.pubsub_channel_name: self.handle_payload})
        self.pubsub_thread = self.pubsub.run_in_thread(  # type: ignore[assignment]
            sleep_time=POLL_S, daemon=True, exception_handler=self._pubsub_exception_handler
        )

    def unsubscribe(self) -> None:
        """Stop the thread (its loop ends at its next poll, closing its connection: the server drops the
        subscription with it), waiting at most :data:`JOIN_S`."""
        thread, pubsub = self.pubsub_thread, self.pubsub
        if thread is None or pubsub is None:
            return
        _stop_flag(thread)
        thread.join(JOIN_S)
        if thread.is_alive():
            log.warning("worker %s: its command thread did not stop within %.0f s; left", self.name, JOIN_S)
        else:
            pubsub.close()  # the thread closed it as it ended; a second close is a no-op
        self.pubsub_thread = None


def _stop_flag(thread: Any) -> None:
    """Tell redis-py's ``PubSubWorkerThread`` to stop without waiting for it. Its ``stop()`` only clears
    the flag up to redis-py 8.1; from 8.2 it joins, for at most ``timeout`` seconds."""
    try:
        thread.stop(timeout=0)
    except TypeError:  # redis-py < 8.2: no timeout, and no join
        thread.stop()
