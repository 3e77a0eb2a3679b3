"""General-V equilibria benchmark: Newton–Krylov on F(Σ) = AΣ + ΣAᵀ + Σ_h (V_hΣB_hΣ + ΣB_hᵀΣV_hᵀ).

The layer (d = 384, H = 12 heads, value matrices of rank r = 32):

    A   = 0.3 I + 0.05 N/√d                       (N standard normal: anti-stable, Σ = 0 unstable)
    V_h = −c U_hU_hᵀ                              (U = [U_1 … U_12] a random orthogonal matrix:
                                                   the U_h span complementary subspaces)
    B_h = B₀ + ε W_hW_hᵀ                          (B₀ = I/2 + RRᵀ/(2d) ≻ 0 shared, W_h random d×r
                                                   orthonormal, head-specific)

with c = 1, ε = 0.5: V_h ⪯ 0 and B_h ≻ 0 (opposite definiteness). Since Σ_h U_hU_hᵀ = I, the
shared part gives Σ_h V_hΣB₀Σ = −cΣB₀Σ, the field of the scalar layer (V = −cI, B₀), whose stable
equilibrium is the Bernoulli solution with G = 2cB₀ ≻ 0 (full rank, A anti-stable); the rank-r
head-specific parts ε W_hW_hᵀ move it to a nearby equilibrium of the general-V layer (V_h not
scalar: `equilibria` takes the Newton path). A rank-r V_h with a rank-r B_h alone cannot do it:
L's coupling Σ_h V_h ⊗ (B_hΣ)ᵀ then has rank ≤ 2Hr² ≪ d², and at a full-rank equilibrium the
rest, H ↦ M*H + HM*ᵀ, has its spectrum on the imaginary axis (M*Σ* + Σ*M*ᵀ = 0).

Prints, in one run with BLAS pinned to one thread: the time of one
`scipy.linalg.solve_continuous_lyapunov` at the same d (the unit); the time of the solve that
`equilibria` makes (the scalar-part Bernoulli solution, then matrix-free Newton–Krylov to
relative residual 1e-13); the time of the whole `equilibria` call, which adds the stability
verdict (the rightmost eigenvalue of L by ARPACK), the mean equilibrium and the residual; each in
units, with the residual, stability and abscissa of L. Target: ≤ 20 units, residual ≤ 1e-10.

Run: python -m benchmarks.equilibria
"""

from __future__ import annotations

import time

import numpy as np
from scipy.linalg import qr, solve_continuous_lyapunov

from riccati_tf import Params, equilibria

from ._timing import best_time, pin_one_thread

D, HEADS, RANK = 384, 12, 32
C, EPS = 1.0, 0.5


def layer(d: int = D, heads: int = HEADS, rank: int = RANK, seed: int = 0) -> Params:
    """The layer of the module docstring (d = heads · rank)."""
    rng = np.random.default_rng(seed)
    U, _ = qr(rng.standard_normal((d, d)))
    R = rng.standard_normal((d, d))
    B0 = 0.5 * np.eye(d) + R @ R.T / (2 * d)
    A = 0.3 * np.eye(d) + 0.05 * rng.standard_normal((d, d)) / np.sqrt(d)
    pairs = []
    for h in range(heads):
        Uh = U[:, h * rank:(h + 1) * rank]
        Wh, _ = qr(rng.standard_normal((d, rank)), mode="economic")
        pairs.append((-C * Uh @ Uh.T, B0 + EPS * Wh @ Wh.T))
    return Params(A, heads=pairs)


def main() -> None:
    from riccati_tf.stability.equilibria.continuation import _scalar_part
    from riccati_tf.stability.equilibria.field import relative_residual
    from riccati_tf.stability.equilibria.newton import newton
    from riccati_tf.stability.equilibria.scalar import _scalar_stable
    from riccati_tf.state.lowrank import value_factors

    limiter, line = pin_one_thread()
    print(line)
    p = layer()
    rng = np.random.default_rng(1)
    M = p.A - np.eye(D)
    Q = rng.standard_normal((D, D))
    Q = Q @ Q.T
    unit = best_time(lambda: solve_continuous_lyapunov(M, Q), repeat=3)
    print(f"# d = {D}, {HEADS} heads of rank {RANK}; unit = one solve_continuous_lyapunov at "
          f"d = {D}: {1e3 * unit:.1f} ms")
    # the solve equilibria makes: Newton–Krylov from the scalar-part Bernoulli solution
    start = time.perf_counter()
    (scalar,) = _scalar_stable(_scalar_part(p, 0.0), 1e-8)
    cov, _, steps = newton(p, scalar.cov)
    t_solve = time.perf_counter() - start
    print(f"{'':>34} {'seconds':>8} {'units':>7}")
    print(f"{'Newton–Krylov solve (' + str(steps) + ' steps)':>34} {t_solve:8.3f} "
          f"{t_solve / unit:7.2f}   residual {relative_residual(p, cov):.1e}", flush=True)
    value_factors.cache_clear()  # the whole call pays for the factors of the value matrices
    start = time.perf_counter()
    found = equilibria(p)
    t_all = time.perf_counter() - start
    print(f"{'equilibria (with stability of L)':>34} {t_all:8.3f} {t_all / unit:7.2f}")
    for eq in found:
        print(f"# found: {eq.method}, rank {eq.rank}, residual {eq.residual:.1e}, stable "
              f"{eq.stable}, ‖Σ − Σ_solve‖/‖Σ‖ = "
              f"{np.linalg.norm(eq.cov - cov) / np.linalg.norm(cov):.1e}")
        if eq.stability is not None:
            print(f"# stability by {eq.stability.method}: {eq.stability.reason}")
    res = found[0].residual if found else float("nan")
    for what, t in (("Newton–Krylov solve", t_solve), ("equilibria", t_all)):
        ok = len(found) == 1 and found[0].stable and res <= 1e-10 and t <= 20 * unit
        print(f"# {what}: {t / unit:.2f} units (target ≤ 20), residual {res:.1e} "
              f"(target ≤ 1e-10): {'PASS' if ok else 'FAIL'}")
    del limiter


if __name__ == "__main__":
    main()
