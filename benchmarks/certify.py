"""General-V certificate benchmark: `certify` of the d = 128, 4-head layer of
benchmarks.equilibria (value matrices V_h = −U_hU_hᵀ of rank 32, B_h = B₀ + ε W_hW_hᵀ, A
anti-stable), from Σ0 = I.

Prints, in one run with BLAS pinned to one thread: the time of one
`scipy.linalg.solve_continuous_lyapunov` at d = 128 (the unit) and the time of `certify` in
units (best of three), with its regime, theorem and reason. Target: ≤ 40 units, regime
"converges". The same for the layer's other regimes, against the same target: A shifted by
−0.6 I (Hurwitz: Σ collapses) and B_h → −B_h (V_h, B_h of one definiteness: Σ blows up).
Informative: one `certify` of the d = 384, 12-head rank-32 layer of benchmarks.factored (Head
factors, A = −I/2 + noise: Σ collapses), in units at d = 384.

Run: python -m benchmarks.certify
"""

from __future__ import annotations

import time

import numpy as np
from scipy.linalg import solve_continuous_lyapunov

from riccati_tf import Gaussian, Params, certify

from ._timing import best_time, clear_layer_caches, pin_one_thread
from .equilibria import layer
from .factored import model_layer

D, HEADS, RANK = 128, 4, 32


def blowup_case() -> tuple[Params, np.ndarray]:
    """The blow-up variant (B_h → −B_h of the converging layer) and Σ0 = I."""
    p = layer(D, HEADS, RANK)
    return Params(p.A, heads=[(V, -B) for V, B in p.heads]), np.eye(D)


def main() -> None:
    limiter, line = pin_one_thread()
    print(line)
    p = layer(D, HEADS, RANK)
    rng = np.random.default_rng(1)
    M = p.A - np.eye(D)
    Q = rng.standard_normal((D, D))
    Q = Q @ Q.T
    unit = best_time(lambda: solve_continuous_lyapunov(M, Q), repeat=3)
    print(f"# d = {D}, {HEADS} heads of rank {RANK}, Σ0 = I; unit = one "
          f"solve_continuous_lyapunov at d = {D}: {1e3 * unit:.2f} ms")
    variants = (("converges", p),
                ("collapses", Params(p.A - 0.6 * np.eye(D), heads=p.heads)),
                ("blows_up", blowup_case()[0]))
    for regime, q in variants:
        best, cert = np.inf, None
        for _ in range(3):
            clear_layer_caches()  # every call pays for all it computes
            start = time.perf_counter()
            cert = certify(q, Gaussian(np.zeros(D), np.eye(D)))
            best = min(best, time.perf_counter() - start)
        ok = cert.regime == regime and best <= 40 * unit
        print(f"certify ({regime} layer): {best:.3f} s = {best / unit:.1f} units, regime "
              f"{cert.regime!r}, theorem {cert.theorem!r}, exact {cert.exact}, check() "
              f"{cert.check()}")
        print(f"# reason: {cert.reason}")
        print(f"# certify, {regime} layer: {best / unit:.1f} units (target ≤ 40), regime "
              f"{cert.regime!r}: {'PASS' if ok else 'FAIL'}")
    model, g = model_layer(np.random.default_rng(0))
    A = model.A - np.eye(model.d)
    unit = best_time(lambda: solve_continuous_lyapunov(A, np.eye(model.d)), repeat=3)
    start = time.perf_counter()
    cert = certify(model, g)
    seconds = time.perf_counter() - start
    print(f"# informative: certify of benchmarks.factored's d = {model.d} layer: {seconds:.1f} s "
          f"= {seconds / unit:.0f} units (unit {1e3 * unit:.0f} ms), regime {cert.regime!r}, "
          f"theorem {cert.theorem!r}")
    del limiter


if __name__ == "__main__":
    main()
