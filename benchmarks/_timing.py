"""Shared benchmark plumbing: one BLAS thread, best-of-k timing, the settings line."""

from __future__ import annotations

import platform
import time

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits


def pin_one_thread():
    """Limit every BLAS/OpenMP pool to one thread; return the limiter and a settings line."""
    limiter = threadpool_limits(limits=1)
    pools = ", ".join(f"{p['internal_api']}={p['num_threads']}" for p in threadpool_info())
    line = (f"# python {platform.python_version()}, numpy {np.__version__}, "
            f"BLAS threads pinned to 1 via threadpoolctl ({pools})")
    return limiter, line


def best_time(fn, *, repeat: int = 5, min_time: float = 0.05) -> float:
    """Best wall time of one call over `repeat` rounds, each round looping for ≥ min_time."""
    best = np.inf
    for _ in range(repeat):
        n, start = 0, time.perf_counter()
        while True:
            fn()
            n += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_time:
                break
        best = min(best, elapsed / n)
    return best
