"""Bernoulli benchmark: the stabilizing solution of  A Σ + Σ Aᵀ − Σ G Σ = 0.

Times, at n = 50, 100, 200, 400 for an anti-stable and a mixed spectrum of A (G ≻ 0):
  - `riccati_tf.equilibria` of the scalar-V layer Params(A, V = −I, B = G/2) (the stable
    equilibrium with its residual, rank, stability and mean equilibrium),
  - the Schur fast path `riccati_tf.stability.riccati.bernoulli` it calls (ordered Schur form, one
    triangular Lyapunov solve on the anti-stable block, inversion),
  - python-control `control.care(Aᵀ, I, 0, G⁻¹)` (SLICOT sb02mt + sb02md),
  - scipy `solve_continuous_are(Aᵀ, I, 0, G⁻¹)`,
and prints ratios against `equilibria` and the fast path, the relative residuals and the relative
differences. Target: `equilibria` ≥ 3× faster than control.care at n = 200 and n = 400, both
spectra, with residual ≤ 1e-12.

Run: python -m benchmarks.bernoulli
"""

from __future__ import annotations

import numpy as np

from riccati_tf import Params, equilibria
from riccati_tf.stability.riccati import bernoulli
from riccati_tf.stability.riccati.care import care_residual

from ._timing import best_time, pin_one_thread


def problem(n: int, spectrum: str, rng) -> tuple[np.ndarray, np.ndarray]:
    """A = X D X⁻¹ with |Re λ| in [0.3, 2] (all > 0, or one third < 0), G = RRᵀ/n + 0.1 I."""
    mags = rng.uniform(0.3, 2.0, n)
    signs = np.ones(n) if spectrum == "anti-stable" else np.where(np.arange(n) % 3 == 0, -1, 1)
    X = np.eye(n) + 0.3 * rng.standard_normal((n, n)) / np.sqrt(n)
    A = X @ np.diag(signs * mags) @ np.linalg.inv(X)
    R = rng.standard_normal((n, n))
    return A, R @ R.T / n + 0.1 * np.eye(n)


def measure(n: int, spectrum: str, rng) -> tuple[list[float], list[float], float]:
    """([t_equilibria, t_fast, t_care, t_scipy], [residuals: equilibria (its own definition),
    fast, care, scipy], ‖Σ_fast − X_care‖/‖X_care‖) for one problem."""
    import control
    from scipy.linalg import solve_continuous_are

    A, G = problem(n, spectrum, rng)
    Ginv = np.linalg.inv(G)
    Ginv = 0.5 * (Ginv + Ginv.T)
    eye, zero = np.eye(n), np.zeros((n, n))
    fast = bernoulli(A, G)
    assert fast.method == "schur" and fast.rank == int(np.sum(np.linalg.eigvals(A).real > 0))
    layer = Params(A, V=-np.eye(n), B=0.5 * G)
    (eq,) = equilibria(layer)
    assert eq.method == "bernoulli-schur" and np.array_equal(eq.cov, fast.X)
    X_care, _, _ = control.care(A.T, eye, zero, Ginv)
    X_scipy = solve_continuous_are(A.T, eye, zero, Ginv)
    times = [best_time(lambda: equilibria(layer)), best_time(lambda: bernoulli(A, G)),
             best_time(lambda: control.care(A.T, eye, zero, Ginv)),
             best_time(lambda: solve_continuous_are(A.T, eye, zero, Ginv), repeat=3)]
    res = [eq.residual] + [care_residual(A.T, G, zero, X) for X in (fast.X, X_care, X_scipy)]
    return times, res, float(np.linalg.norm(fast.X - X_care) / np.linalg.norm(X_care))


def main() -> None:
    import control  # noqa: F401  (load SLICOT's BLAS before pinning, so the limit reaches it)
    import slycot  # noqa: F401

    limiter, line = pin_one_thread()
    print(line)
    rng = np.random.default_rng(0)
    print(f"{'n':>4} {'spectrum':>11} {'equil ms':>8} {'fast ms':>8} {'care ms':>8} "
          f"{'scipy ms':>9} {'care/equil':>10} {'care/fast':>9} {'scipy/fast':>10} "
          f"{'res equil':>9} {'res fast':>9} {'res care':>9} {'res scipy':>9} {'|fast-care|':>11}")
    verdicts = {}
    for n in (50, 100, 200, 400):
        for spectrum in ("anti-stable", "mixed"):
            (t_eq, t_fast, t_care, t_scipy), res, diff = measure(n, spectrum, rng)
            print(f"{n:>4} {spectrum:>11} {1e3 * t_eq:8.2f} {1e3 * t_fast:8.2f} "
                  f"{1e3 * t_care:8.2f} {1e3 * t_scipy:9.2f} {t_care / t_eq:10.2f} "
                  f"{t_care / t_fast:9.2f} {t_scipy / t_fast:10.2f} {res[0]:9.1e} {res[1]:9.1e} "
                  f"{res[2]:9.1e} {res[3]:9.1e} {diff:11.1e}")
            if n >= 200:
                verdicts[n, spectrum] = (t_care / t_eq, max(res[0], res[1]))
    for (n, spectrum), (ratio, res) in verdicts.items():
        verdict = "PASS" if ratio >= 3 and res <= 1e-12 else "FAIL"
        print(f"# n = {n}, {spectrum}: equilibria {ratio:.2f}× faster than control.care "
              f"(target ≥ 3), residual {res:.1e} (target ≤ 1e-12): {verdict}")
    del limiter


if __name__ == "__main__":
    main()
