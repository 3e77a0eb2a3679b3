"""The moment equations of SPEC §2 in matrix form (the numeric fast path).

    ṁ = (A + Σ_h V_h) m + Σ_h V_h Σ B_h m + b
    Σ̇ = A Σ + Σ Aᵀ + Σ_h (V_h Σ B_h Σ + Σ B_hᵀ Σ V_hᵀ)

The covariance right-hand side uses the symmetric form W_h = (V_h Σ)(B_h Σ),
Σ̇ = AΣ + (AΣ)ᵀ + Σ_h (W_h + W_hᵀ): 1 + 3H matrix products, no loops over entries.
"""

from __future__ import annotations

import numpy as np

from .model import Gaussian, Params, check_dims


def moment_arrays(params: Params, mean: np.ndarray, cov: np.ndarray):
    """(ṁ, Σ̇) from raw arrays, without validation (used inside integrators)."""
    AS = params.A @ cov
    dcov = AS + AS.T
    dmean = params.A @ mean + params.b
    for V, B in params.heads:
        VS = V @ cov
        W = VS @ (B @ cov)
        dcov += W + W.T
        dmean += V @ mean + VS @ (B @ mean)
    return dmean, dcov


def moment_rhs(params: Params, gaussian: Gaussian) -> tuple[np.ndarray, np.ndarray]:
    """Right-hand side (ṁ, Σ̇) of the mean–covariance equations of SPEC §2 at N(m, Σ).

    Multi-head: the attention terms add over heads.  Returns new arrays of shapes (d,), (d, d).
    """
    check_dims(params, gaussian)
    return moment_arrays(params, gaussian.mean, gaussian.cov)
