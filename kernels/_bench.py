"""Timing helpers shared by the kernel benchmarks (`icml25nb bench`)."""
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


def race(fns: dict, reps: int) -> dict:
    """Best wall time of each callable over `reps` rounds after one warm-up call each, the contenders alternating
    (so that all see the same load on a shared machine)."""
    for f in fns.values():
        f()
    best = {k: math.inf for k in fns}
    for _ in range(reps):
        for k, f in fns.items():
            t0 = time.perf_counter()
            f()
            best[k] = min(best[k], time.perf_counter() - t0)
    return best
