"""graphq benchmarks (targets P1–P8: docs/design/targets.md): ``python -m bench`` or ``make bench``."""
