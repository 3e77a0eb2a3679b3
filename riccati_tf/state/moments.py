"""The moment equations of SPEC §2 in matrix form (the numeric fast path).

    ṁ = (A + Σ_h V_h) m + Σ_h V_h Σ B_h m + b
    Σ̇ = A Σ + Σ Aᵀ + Σ_h (V_h Σ B_h Σ + Σ B_hᵀ Σ V_hᵀ)

Both come from the field's linear part M = A + Σ_h V_h Σ B_h (`Params.M`): ṁ = M m + c and
Σ̇ = X + Xᵀ with X = MΣ, one symmetrisation for all terms: 2H + 2 matrix products for dense
heads, no loops over entries. Heads given as factors (`riccati_tf.state.params.Head`: B_h = K_hᵀQ_h,
V_h = O_h V_h') are stacked, and their part of M is O · blockdiag(V_h' Σ K_hᵀ) · Q: products
with d×Σ_h r_h operands, so a step costs O(d² Σ_h (r_h + s_h) + d³) instead of O(H d³).
"""

from __future__ import annotations

import numpy as np

from ..errors import SolverError
from .params import Gaussian, Params, check_dims


def drift_arrays(params: Params, mean: np.ndarray | None, cov: np.ndarray):
    """(X, ṁ) with X = M Σ, M = A + Σ_h V_h Σ B_h, so that Σ̇ = X + Xᵀ, and ṁ = M m + c; ṁ is
    None when mean is None (the mean terms are skipped)."""
    M = params.M(cov)
    return M @ cov, None if mean is None else M @ mean + params.c(mean)


def moment_arrays(params: Params, mean: np.ndarray, cov: np.ndarray):
    """(ṁ, Σ̇) from raw arrays, without validation (used inside integrators):
    ṁ = M m + c, Σ̇ = MΣ + ΣMᵀ with M = A + Σ_h V_h Σ B_h, c = b + Σ_h V_h m."""
    X, dmean = drift_arrays(params, mean, cov)
    return dmean, X + X.T


def covariance_array(params: Params, cov: np.ndarray) -> np.ndarray:
    """Σ̇ = X + Xᵀ alone, from a raw array (the mean terms skipped: for m ≡ 0 when b = 0)."""
    X, _ = drift_arrays(params, None, cov)
    return X + X.T


def moment_rhs(params: Params, gaussian: Gaussian) -> tuple[np.ndarray, np.ndarray]:
    """Right-hand side (ṁ, Σ̇) of the mean–covariance equations of SPEC §2 at N(m, Σ).

    Multi-head: the attention terms add over heads.  Returns new arrays of shapes (d,), (d, d).
    Raises SolverError when a value (or an intermediate product such as VΣBΣ) leaves the
    floating-point range: the returned arrays are always finite.
    """
    check_dims(params, gaussian)
    with np.errstate(over="ignore", invalid="ignore"):
        dm, dS = moment_arrays(params, gaussian.mean, gaussian.cov)
    if not (np.all(np.isfinite(dm)) and np.all(np.isfinite(dS))):
        raise SolverError("the moment right-hand side (ṁ, Σ̇) overflows float64 for this layer "
                          "and Gaussian (its products AΣ, VΣBΣ, VΣBm exceed about 1e308)")
    return dm, dS
