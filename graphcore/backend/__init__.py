"""The Redis backend: everything that talks to Redis (DESIGN §1).

Connections with retries (:mod:`.connection`), the Lua scripts (:mod:`.lua`), the Redis checkpoint store
(:mod:`.store`), run records (:mod:`.runs`), run events (:mod:`.events`), thread hand-over
(:mod:`.threads`), the client (:mod:`.client`) and the embedded ``redis-server`` manager used by
``graphq run`` and the tests (:mod:`.embedded`). It imports the engine and the checkpoints, never
``worker``, ``scheduler`` or ``cli``.
"""

__all__: list[str] = []
