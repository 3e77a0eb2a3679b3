"""Flow benchmarks (issue: foundation).

(a) moment RHS time ÷ time of 4 matrix products (AΣ, VΣ, BΣ, (VΣ)(BΣ), the former evaluation
    of Σ̇ = X + Xᵀ) at d = 64, 128, 256 — target ≤ 1.3 (the RHS now takes 3: VΣ, (VΣ)B and MΣ
    with M = A + VΣB, so the ratio is below 1);
(b) "exact" vs "rk" wall time for the same scalar-V problem at d = 32, T = 5 — target ≥ 50×
    faster with equal or better accuracy. A work–precision table: exact and rk at several
    tolerances, errors against independent references, and the speed-up both against rk at its
    default tolerance and against the loosest rk run that is as accurate as exact.

Run: python -m benchmarks.flows
"""

from __future__ import annotations

from contextlib import contextmanager

import mpmath as mp
import numpy as np

from riccati_tf import Gaussian, Params, flow
from riccati_tf.flows.exact import mean as exact_mean
from riccati_tf.state.moments import moment_arrays

from ._timing import best_time, pin_one_thread

RK_RTOLS = (1e-8, 1e-10, 1e-12, 1e-13)


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


def scalar_problem(d: int, rng):
    """A scalar-V layer (V = −I/2, B ⪰ 0: a converging covariance) with a full-rank Σ0, and the
    mean and bias of the "with mean and bias" variant."""
    A = rng.standard_normal((d, d)) / np.sqrt(d)
    C = rng.standard_normal((d, d)) / np.sqrt(d)
    X = rng.standard_normal((d, d))
    return A, C @ C.T / d, -0.5 * np.eye(d), X @ X.T / d, rng.standard_normal(d), \
        rng.standard_normal(d)


def mp_covariance(p: Params, cov0: np.ndarray, T: float, dps: int = 40) -> np.ndarray:
    """Σ(T) = e^{AT}Σ0(I + W(T)Σ0)⁻¹e^{AᵀT} (SPEC §5) in dps-digit arithmetic, from one block
    exponential: an independent reference for the covariance."""
    d, A, G = p.d, p.A, p.G
    block = np.block([[-A.T, G], [np.zeros((d, d)), A]])
    with mp.workdps(dps):
        F = np.array(mp.expm(mp.matrix(block.tolist()) * T).tolist(), dtype=object)
        E, F12 = F[d:, d:], F[:d, d:]
        S0 = np.array([[mp.mpf(x) for x in row] for row in cov0], dtype=object)
        S = np.eye(d, dtype=int).astype(object) + E.T.dot(F12).dot(S0)  # I + W(T)Σ0
        S_inv = np.array(mp.inverse(mp.matrix(S.tolist())).tolist(), dtype=object)
        return np.array(E.dot(S0).dot(S_inv).dot(E.T), dtype=float)


@contextmanager
def finer_mean_steps(factor: float):
    """Run the exact flow with mean sub-steps `factor` times shorter (a refined reference),
    those with output times inside too."""
    saved = exact_mean.MEAN_THETA, exact_mean.DENSE_THETA
    exact_mean.MEAN_THETA, exact_mean.DENSE_THETA = (theta / factor for theta in saved)
    try:
        yield
    finally:
        exact_mean.MEAN_THETA, exact_mean.DENSE_THETA = saved


def work_precision(p: Params, g: Gaussian, T: float, t_eval, ref_cov, ref_mean):
    """Rows (label, seconds, cov error, mean error) for exact and rk at several tolerances; errors
    are the largest over the output times, relative to the largest reference entry."""

    def errors(tr):
        e_cov = np.abs(tr.cov - ref_cov).max() / np.abs(ref_cov).max()
        e_mean = (np.abs(tr.mean - ref_mean).max() / np.abs(ref_mean).max()
                  if np.any(ref_mean) else 0.0)
        return e_cov, e_mean

    rows = []
    for label, kwargs in [("exact", {"method": "exact"})] + [
            (f"rk rtol {rtol:.0e}" + (" (default)" if rtol == 1e-10 else ""),
             {"method": "rk", "rtol": rtol, "atol": 1e-12 if rtol == 1e-10 else rtol / 100})
            for rtol in RK_RTOLS]:
        tr = flow(p, g, T, t_eval=t_eval, **kwargs)
        seconds = best_time(lambda kw=kwargs: flow(p, g, T, t_eval=t_eval, **kw), repeat=3)
        rows.append((label, seconds, *errors(tr)))
    return rows


def speedups(rows) -> str:
    """Speed-up of exact vs rk at its default tolerance and vs the loosest rk run at least as
    accurate as exact (max of the covariance and mean errors)."""
    (_, t_ex, *e_ex), rk = rows[0], rows[1:]
    default = next(r for r in rk if "default" in r[0])
    line = f"speed-up: {default[1] / t_ex:.1f}× vs rk at its default tolerance"
    as_good = [r for r in rk if max(r[2:]) <= max(e_ex)]
    if as_good:
        r = as_good[0]
        return line + f"; {r[1] / t_ex:.1f}× vs {r[0]}, the loosest rk run as accurate as exact"
    r = rk[-1]
    return line + f"; no rk run is as accurate as exact, {r[1] / t_ex:.1f}× vs {r[0]}"


def main():
    _limiter, settings = pin_one_thread()
    print(settings)
    rng = np.random.default_rng(0)
    print("\n(a) moment RHS / its 4 matrix products   target ≤ 1.3")
    print(f"{'d':>5} {'rhs [µs]':>10} {'4 matmul [µs]':>14} {'ratio':>7}")
    for d in (64, 128, 256):
        t_rhs, t_mm, ratio = rhs_ratio(d, rng)
        print(f"{d:>5} {1e6 * t_rhs:>10.1f} {1e6 * t_mm:>14.1f} {ratio:>7.2f}")
    print("\n(b) exact vs rk, scalar V, d = 32, T = 5   target ≥ 50× with equal or better "
          "accuracy")
    print("    references: the covariance at T from a 40-digit mpmath closed form, the rest from "
          "exact with 64× finer mean steps")
    A, B, V, cov0, m0, b = scalar_problem(32, rng)
    T = 5.0
    centred, full = Params(A=A, B=B, V=V), Params(A=A, B=B, V=V, b=b)
    mp_cov = mp_covariance(centred, cov0, T)
    cases = [("covariance flow (m0 = b = 0), end state", centred, Gaussian(np.zeros(32), cov0),
              [0.0, T]),
             ("with mean and bias, end state", full, Gaussian(m0, cov0), [0.0, T]),
             ("with mean and bias, flow's default 101 output times", full, Gaussian(m0, cov0),
              None)]
    for name, p, g, t_eval in cases:
        with finer_mean_steps(64):
            ref = flow(p, g, T, method="exact", t_eval=t_eval)
        ref_cov = ref.cov.copy()
        ref_cov[-1] = mp_cov
        rows = work_precision(p, g, T, t_eval, ref_cov, ref.mean)
        print(f"\n  {name}")
        print(f"  {'run':>24} {'time [ms]':>10} {'cov err':>9} {'mean err':>9}")
        for label, seconds, e_cov, e_mean in rows:
            print(f"  {label:>24} {1e3 * seconds:>10.2f} {e_cov:>9.1e} {e_mean:>9.1e}")
        print("  " + speedups(rows))

if __name__ == "__main__":
    main()
