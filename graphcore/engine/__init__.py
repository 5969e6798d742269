"""The engine: pure graph execution, no Redis (DESIGN §1).

The builder (:mod:`.builder`) and the compiled graph's data (:mod:`.compiled`), channels and the state
schema, the pure super-step algorithm (:mod:`.algo`), the step runner (:mod:`.step`), the in-process loop
(:mod:`.executor`), interrupts, run config, retries, cancel tokens, subgraphs and the workflow registry.
It imports the foundation (``graphcore.errors``, ``types``, ``settings``, ``keys``) and
:mod:`graphcore.checkpoints`; never :mod:`graphcore.backend` (``tests/test_layers.py`` checks).
"""

__all__: list[str] = []
