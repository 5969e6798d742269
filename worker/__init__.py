"""graphq's RQ worker, grouped by role.

- :mod:`graphq.worker.step`: the step job, one super-step of one run under its lease.
- :mod:`graphq.worker.process`: the worker process (an RQ worker taking step jobs) and its supervisor.
- :mod:`graphq.worker.housekeeping`: the cluster-wide loops (the reaper, request expiry, the retention
  sweep).
- Shared by all three: :mod:`~graphq.worker.queue` (step jobs on RQ queues), :mod:`~graphq.worker.rq_hooks`
  (a step job's commands sent in RQ's own pipelines), :mod:`~graphq.worker.logs`,
  :mod:`~graphq.worker.metrics` and :mod:`~graphq.worker.health`.
"""
