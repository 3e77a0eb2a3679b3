"""The scales of a layer: λ(A) and ‖A‖₂, the constant c of the quadratic part of F
(‖Σ_h (V_h H B_h H + H B_hᵀ H V_hᵀ)‖_F ≤ c‖H‖_F², c = 2 Σ_h ‖V_h‖₂‖B_h‖₂, factored heads never
formed) and the natural scale ‖A‖₂ / c at which the linear and quadratic terms balance.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

from ...state.params import Params
from .constants import KRONECKER_MAX_D

__all__: list[str] = []


@lru_cache(maxsize=8)
def drift_spectrum(params: Params) -> tuple[NDArray[np.complex128], float]:
    """(λ(A), ‖A‖₂) of a layer, computed once per layer (the eigenvalues read-only): the
    horizons, the abscissa at Σ = 0, the scales and the integrators' segments all use them."""
    lam = np.linalg.eigvals(params.A)
    lam.setflags(write=False)
    return lam, float(np.linalg.norm(params.A, 2))


@lru_cache(maxsize=8)
def quadratic_constant(params: Params) -> float:
    """c with ‖Σ_h (V_h H B_h H + H B_hᵀ H V_hᵀ)‖_F ≤ c ‖H‖_F²: c = 2 Σ_h ‖V_h‖₂ ‖B_h‖₂.
    F(Σ* + H) = F(Σ*) + L(H) + that quadratic term, and ‖L_Σ − L_Σ'‖ ≤ 2c ‖Σ − Σ'‖_F.
    Factored heads are never formed (`head_norms`)."""
    return float(2.0 * sum((v * b for v, b in head_norms(params)), start=0.0))


def head_norms(params: Params, left: np.ndarray | None = None) -> list[tuple[float, float]]:
    """(‖L V_h‖₂, ‖B_h‖₂) of every head, L = left (I when None). A head given as
    `Head(Q, K, V, O)` (V_h = OV, B_h = KᵀQ) is never formed: ‖LOV‖₂ = ‖R V‖₂ and
    ‖KᵀQ‖₂ = ‖R_K Q‖₂ with R, R_K the triangular factors of LO and Kᵀ (SVDs of r × d)."""
    out: list[tuple[float, float]] = [(0.0, 0.0)] * len(params.factors)
    shapes: dict[tuple[int, ...], list[int]] = {}  # factored heads of equal shapes, batched
    for h, f in enumerate(params.factors):
        if f is None:
            V, B = params.heads[h]
            out[h] = (float(np.linalg.norm(V if left is None else left @ V, 2)),
                      float(np.linalg.norm(B, 2)))
        else:
            shapes.setdefault(f.O.shape + f.K.shape, []).append(h)
    for group in shapes.values():
        fs = [params.factors[h] for h in group]
        O = np.stack([f.O for f in fs])  # type: ignore[union-attr]  # factored heads
        LO = O if left is None else left @ O
        V = np.stack([f.V for f in fs])  # type: ignore[union-attr]
        Kt = np.stack([f.K.T for f in fs])  # type: ignore[union-attr]
        Q = np.stack([f.Q for f in fs])  # type: ignore[union-attr]
        v = np.linalg.svd(np.linalg.qr(LO, mode="r") @ V, compute_uv=False)[:, 0]
        b = np.linalg.svd(np.linalg.qr(Kt, mode="r") @ Q, compute_uv=False)[:, 0]
        for h, vh, bh in zip(group, v, b, strict=True):
            out[h] = (float(vh), float(bh))
    return out


def natural_scale(params: Params) -> float:
    """‖A‖₂ / c: the size of Σ at which the linear and quadratic terms of F balance."""
    c = quadratic_constant(params)
    a = drift_spectrum(params)[1]
    return float(a / c) if c > 0 and a > 0 else 1.0


def magnitude(params: Params) -> float:
    """natural_scale for d ≤ 30; beyond, ‖A‖_F / (2 Σ_h ‖V_h‖_F ‖B_h‖_F) (no SVDs: a magnitude
    for divergence bounds and comparisons, within a factor d of natural_scale)."""
    if params.d <= KRONECKER_MAX_D:
        return natural_scale(params)
    c = 2.0 * sum((np.linalg.norm(V) * np.linalg.norm(B) for V, B in params.heads), start=0.0)
    a = np.linalg.norm(params.A)
    return float(a / c) if c > 0 and a > 0 else 1.0
