"""``python -m bench``: run P1 to P10, print one summary line per benchmark and the result table.

Summary lines look like ``P1 ratio=1.12 target=1.25`` (one per line on stdout) so that runs can be compared
over time. Nothing here asserts a timing; the exit status is 0 unless a benchmark could not run.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from bench import (
    p1_step_overhead,
    p2_growth,
    p3_engine,
    p4_scale_out,
    p5_recovery,
    p6_fairness,
    p7_scheduler,
    p8_wide_steps,
    p9_upgrade_check,
    p10_api,
)
from bench.common import Row, print_table

BENCHMARKS: list[tuple[str, Callable[[], list[Row]]]] = [
    ("P1 step overhead", p1_step_overhead.run),
    ("P2 growth", p2_growth.run),
    ("P3 engine", p3_engine.run),
    ("P4 scale-out", p4_scale_out.run),
    ("P5 recovery", p5_recovery.run),
    ("P6 fairness", p6_fairness.run),
    ("P7 scheduler", p7_scheduler.run),
    ("P8 wide super-steps", p8_wide_steps.run),
    ("P9 upgrade check", p9_upgrade_check.run),
    ("P10 HTTP API under load", p10_api.run),
]


def main() -> int:
    """Run every benchmark and print the table."""
    rows: list[Row] = []
    for title, bench in BENCHMARKS:
        print(f"== {title}", flush=True)
        start = time.perf_counter()
        rows += bench()
        print(f"   ({time.perf_counter() - start:.1f} s)", flush=True)
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
