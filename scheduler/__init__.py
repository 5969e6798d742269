"""Cron schedules (K1): schedules kept in Redis and changed at run time, fire times DST-correct in any IANA
zone, each (schedule, fire time) claimed once whatever the number of scheduler replicas.

Modules: ``cron`` (fire times), ``schedules`` (the model and its Redis store), ``plan`` (what a pass does
with one schedule: overlap and catch-up), ``claim`` (the atomic claim with the run's creation), ``loop``
(:class:`graphq.scheduler.loop.Scheduler` and its pass), ``api`` (:class:`graphq.scheduler.api.Schedules`,
the Python face of ``graphq schedules``).
"""
