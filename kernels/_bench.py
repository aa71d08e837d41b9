"""Timing helper shared by the kernel benchmarks (`icml25nb bench`)."""
from __future__ import annotations

import math
import time


def best_time(fn, repeat: int) -> float:
    "Best wall time of `repeat` calls of `fn` after one warm-up call; repeat=0 times a single cold call (slow baselines)."
    if repeat == 0:
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0
    fn()
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best
