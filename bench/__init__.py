"""graphq benchmarks (targets P1–P7: docs/design/targets.md): ``python -m bench`` or ``make bench``."""
