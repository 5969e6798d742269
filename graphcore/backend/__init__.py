"""The Redis backend: everything that talks to Redis (DESIGN §1).

Connections with retries (:mod:`.connection`), the Lua scripts (:mod:`.lua`), the Redis checkpoint store
(:mod:`.store`) and what is kept of it (:mod:`.retention`), thread TTLs, the retention sweep and thread
deletion (:mod:`.ttl`), run records (:mod:`.runs`), run events
(:mod:`.events`), thread hand-over (:mod:`.threads`), admission to slots across tenants (:mod:`.admission`),
the kill switch (:mod:`.switch`), the client (:mod:`.client`), the reaper's Redis side (:mod:`.reaper`),
owner-token locks of the housekeeping loops (:mod:`.locks`), human-request deadlines and their expiry
(:mod:`.expiry`),
the worker registry (:mod:`.workers`), the workflow catalog (:mod:`.catalog`) and the embedded
``redis-server`` manager used by ``graphq run`` and the tests (:mod:`.embedded`). It imports the engine and
the checkpoints, never ``worker``, ``scheduler`` or ``cli``.
"""

__all__: list[str] = []
