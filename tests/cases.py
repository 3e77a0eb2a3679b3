"""Random layer parameters and Gaussians for the tests (one generator, used everywhere)."""

from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp

from riccati_tf import Gaussian, Params


def random_cov(rng: np.random.Generator, d: int, rank: int | None = None,
               scale: float = 1.0) -> np.ndarray:
    """A PSD matrix of the given rank (full rank by default)."""
    r = d if rank is None else rank
    X = rng.standard_normal((d, r))
    return scale * X @ X.T / max(r, 1)


def scalar_v_params(rng: np.random.Generator, d: int, *, v: float | None = None,
                    heads: int = 1, b: bool = True, a_scale: float = 1.0) -> Params:
    """Params with value matrices V_h = v_h I (the Riccati case of SPEC §5)."""
    A = a_scale * rng.standard_normal((d, d)) / np.sqrt(d)
    bias = rng.standard_normal(d) if b else None
    pairs = [((rng.uniform(-1, 1) if v is None else v) * np.eye(d),
              rng.standard_normal((d, d)) / np.sqrt(d)) for _ in range(heads)]
    if heads == 1:
        return Params(A=A, V=pairs[0][0], B=pairs[0][1], b=bias)
    return Params(A=A, heads=pairs, b=bias)


def general_params(rng: np.random.Generator, d: int, heads: int = 1) -> Params:
    pairs = [(rng.standard_normal((d, d)) / np.sqrt(d), rng.standard_normal((d, d)) / np.sqrt(d))
             for _ in range(heads)]
    return Params(A=rng.standard_normal((d, d)) / np.sqrt(d), heads=pairs,
                  b=rng.standard_normal(d))


def random_gaussian(rng: np.random.Generator, d: int, rank: int | None = None,
                    scale: float = 1.0) -> Gaussian:
    return Gaussian(rng.standard_normal(d), random_cov(rng, d, rank, scale))


def dop853_moments(p: Params, g: Gaussian, times, params_fn=None, *, rtol: float = 1e-12,
                   atol: float = 1e-14) -> tuple[np.ndarray, np.ndarray]:
    """(mean (k, d), cov (k, d, d)) at the sorted times from DOP853 on the moment equations
    written out independently of the package: ṁ = Mm + Σ_h V_h m + b, Σ̇ = MΣ + ΣMᵀ,
    M = A + Σ_h V_hΣB_h (params_fn: time-varying parameters t ↦ Params instead of p)."""
    d = g.d

    def rhs(t, y):
        q = p if params_fn is None else params_fn(t)
        m, S = y[:d], y[d:].reshape(d, d)
        M = q.A + sum(V @ S @ B for V, B in q.heads)
        dm = M @ m + sum(V @ m for V, _ in q.heads) + q.b
        return np.concatenate([dm, (M @ S + S @ M.T).ravel()])

    y0 = np.concatenate([g.mean, g.cov.ravel()])
    sol = solve_ivp(rhs, (0.0, times[-1]), y0, method="DOP853", t_eval=times, rtol=rtol,
                    atol=atol)
    assert sol.success, sol.message
    return sol.y[:d].T, sol.y[d:].T.reshape(-1, d, d)
