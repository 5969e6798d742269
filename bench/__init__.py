"""graphq benchmarks (DESIGN.md section 4): ``python -m bench`` or ``make bench``."""
