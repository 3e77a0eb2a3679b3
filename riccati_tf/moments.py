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
    """(ṁ, Σ̇) from raw arrays, without validation (used inside integrators).

    The mean rides along as an extra column: with X = [Σ | m], the products A X, V_h X, B_h X and
    (V_h Σ)(B_h X) give AΣ, Am, V_hΣ, V_h m, W_h and V_hΣB_h m at once.
    """
    d = mean.size
    X = np.empty((d, d + 1))
    X[:, :d], X[:, d] = cov, mean
    AX = params.A @ X
    dcov = AX[:, :d] + AX[:, :d].T
    dmean = AX[:, d] + params.b
    for V, B in params.heads:
        VX = V @ X
        WX = VX[:, :d] @ (B @ X)
        dcov += WX[:, :d] + WX[:, :d].T
        dmean += VX[:, d] + WX[:, d]
    return dmean, dcov


def moment_rhs(params: Params, gaussian: Gaussian) -> tuple[np.ndarray, np.ndarray]:
    """Right-hand side (ṁ, Σ̇) of the mean–covariance equations of SPEC §2 at N(m, Σ).

    Multi-head: the attention terms add over heads.  Returns new arrays of shapes (d,), (d, d).
    """
    check_dims(params, gaussian)
    return moment_arrays(params, gaussian.mean, gaussian.cov)
