"""Flow benchmarks (issue: foundation).

(a) moment RHS time ÷ time of its 4 matrix products (AΣ, VΣ, BΣ, (VΣ)(BΣ)) at d = 64, 128, 256
    — target ≤ 1.3;
(b) "exact" vs "rk" wall time for the same scalar-V problem at d = 32, T = 5 — target ≥ 50×
    faster with equal or better accuracy (accuracy measured against rk at rtol = 1e-13).

Run: python -m benchmarks.flows
"""

from __future__ import annotations

import numpy as np

from riccati_tf import Gaussian, Params, flow
from riccati_tf.moments import moment_arrays

from ._timing import best_time, pin_one_thread


def rhs_ratio(d: int, rng) -> tuple[float, float, float]:
    A, B, V = (rng.standard_normal((d, d)) / np.sqrt(d) for _ in range(3))
    X = rng.standard_normal((d, d))
    S, m = X @ X.T / d, rng.standard_normal(d)
    p = Params(A=A, B=B, V=V, b=rng.standard_normal(d))

    def four_products():
        VS = V @ S
        return A @ S, VS @ (B @ S)

    t_rhs = best_time(lambda: moment_arrays(p, m, S))
    t_mm = best_time(four_products)
    return t_rhs, t_mm, t_rhs / t_mm


def scalar_problem(d: int, rng, centred: bool):
    A = rng.standard_normal((d, d)) / np.sqrt(d)
    C = rng.standard_normal((d, d)) / np.sqrt(d)
    b = None if centred else rng.standard_normal(d)
    p = Params(A=A, B=C @ C.T / d, V=-0.5 * np.eye(d), b=b)
    X = rng.standard_normal((d, d))
    g = Gaussian(np.zeros(d) if centred else rng.standard_normal(d), X @ X.T / d)
    return p, g


def exact_vs_rk(d: int, T: float, rng, centred: bool):
    p, g = scalar_problem(d, rng, centred)
    t_eval = [0.0, T]
    ref = flow(p, g, T, method="rk", rtol=1e-13, atol=1e-15, t_eval=t_eval)

    def err(tr):
        return max(np.abs(tr.cov[-1] - ref.cov[-1]).max() / np.abs(ref.cov[-1]).max(),
                   np.abs(tr.mean[-1] - ref.mean[-1]).max() / max(np.abs(ref.mean[-1]).max(), 1))

    ex = flow(p, g, T, method="exact", t_eval=t_eval)
    rk = flow(p, g, T, method="rk", t_eval=t_eval)
    t_ex = best_time(lambda: flow(p, g, T, method="exact", t_eval=t_eval), repeat=3)
    t_rk = best_time(lambda: flow(p, g, T, method="rk", t_eval=t_eval), repeat=3)
    return t_ex, t_rk, err(ex), err(rk)


def main():
    _limiter, settings = pin_one_thread()
    print(settings)
    rng = np.random.default_rng(0)
    print("\n(a) moment RHS / its 4 matrix products   target ≤ 1.3")
    print(f"{'d':>5} {'rhs [µs]':>10} {'4 matmul [µs]':>14} {'ratio':>7}")
    for d in (64, 128, 256):
        t_rhs, t_mm, ratio = rhs_ratio(d, rng)
        print(f"{d:>5} {1e6 * t_rhs:>10.1f} {1e6 * t_mm:>14.1f} {ratio:>7.2f}")
    print("\n(b) exact vs rk, scalar V, d = 32, T = 5 (final state; rk at rtol 1e-10, atol 1e-12)"
          "   target ≥ 50×")
    print(f"{'problem':>22} {'exact [ms]':>11} {'rk [ms]':>9} {'speed-up':>9} "
          f"{'exact err':>10} {'rk err':>9}")
    for centred in (True, False):
        t_ex, t_rk, e_ex, e_rk = exact_vs_rk(32, 5.0, rng, centred)
        name = "centred (m0 = b = 0)" if centred else "with mean and bias"
        print(f"{name:>22} {1e3 * t_ex:>11.2f} {1e3 * t_rk:>9.2f} {t_rk / t_ex:>8.1f}× "
              f"{e_ex:>10.1e} {e_rk:>9.1e}")


if __name__ == "__main__":
    main()
