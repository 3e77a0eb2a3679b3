"""Shared benchmark plumbing: one BLAS thread, best-of-k timing, the settings line."""

from __future__ import annotations

import importlib
import importlib.util
import platform
import time

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

#: libraries that load a BLAS of their own (threadpoolctl limits only pools already loaded)
BLAS_LIBRARIES = ("scipy.linalg", "slycot")


def pin_one_thread():
    """Limit every BLAS/OpenMP pool to one thread; return the limiter and a settings line.

    numpy, scipy and slycot each ship their own OpenBLAS; the ones installed are loaded first,
    so that a pool first loaded later (scipy.linalg on first use, slycot through python-control)
    does not run with its default threads."""
    for name in BLAS_LIBRARIES:
        if importlib.util.find_spec(name.split(".")[0]) is not None:
            importlib.import_module(name)
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


def clear_layer_caches() -> None:
    """Empty every per-layer cache of the package (factors, spectra, constants, the
    continuation and settled states, stability bounds, the zero sublevel set), so that a timed
    call pays for all it computes."""
    from riccati_tf.stability.certificates.local import _zero_sublevel
    from riccati_tf.stability.equilibria.continuation import _continuation
    from riccati_tf.stability.equilibria.evidence import _stability_at
    from riccati_tf.stability.equilibria.scales import drift_spectrum, quadratic_constant
    from riccati_tf.stability.equilibria.settling import _settled
    from riccati_tf.state.lowrank import factored_layer, value_factors
    for cached in (value_factors, factored_layer, drift_spectrum, quadratic_constant,
                   _continuation, _settled, _stability_at, _zero_sublevel):
        cached.cache_clear()
