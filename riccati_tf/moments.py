"""The moment equations of SPEC §2 in matrix form (the numeric fast path).

    ṁ = (A + Σ_h V_h) m + Σ_h V_h Σ B_h m + b
    Σ̇ = A Σ + Σ Aᵀ + Σ_h (V_h Σ B_h Σ + Σ B_hᵀ Σ V_hᵀ)

The covariance right-hand side uses the symmetric form W_h = (V_h Σ)(B_h Σ),
Σ̇ = X + Xᵀ with X = AΣ + Σ_h W_h: 1 + 3H matrix products, no loops over entries.
"""

from __future__ import annotations

import numpy as np

from .errors import SolverError
from .model import Gaussian, Params, check_dims


def moment_arrays(params: Params, mean: np.ndarray, cov: np.ndarray):
    """(ṁ, Σ̇) from raw arrays, without validation (used inside integrators).

    Σ̇ = X + Xᵀ with X = AΣ + Σ_h (V_hΣ)(B_hΣ): one symmetrisation for all terms.
    """
    X = params.A @ cov
    dmean = params.A @ mean + params.b
    for V, B in params.heads:
        VS = V @ cov
        X += VS @ (B @ cov)
        dmean += V @ mean + VS @ (B @ mean)
    return dmean, X + X.T


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
