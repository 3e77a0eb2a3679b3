"""The scalar value matrices of a stack of heads: v_h of V_h = v_h I, G = −Σ_h v_h (B_h + B_hᵀ)
and a bound of its rounding, and the constants of the quadratic term (SPEC §5)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .constants import _EPS, _SUBNORMAL

__all__: list[str] = []


def scalar_values(V: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(mask, v): mask[i] when every V_h[i] is exactly v_h I (zero off the diagonal, one value
    on it — the premise of certify's exact theorems; a V that is scalar only within SCALAR_RTOL
    goes to `certify`); v (n, H) holds tr V_h / d, the value Params.value_scalars gives."""
    d = V[0].shape[-1]
    eye = np.eye(d)
    v = np.stack([np.trace(Vh, axis1=1, axis2=2) / d for Vh in V], axis=1)
    mask = np.ones(v.shape[0], dtype=bool)
    for Vh in V:
        mask &= ~np.any(Vh - Vh[:, :1, :1] * eye, axis=(1, 2))
    return mask, v


def quadratic_constants(V: tuple[np.ndarray, ...], B: tuple[np.ndarray, ...]) -> np.ndarray:
    """c = 2 Σ_h ‖V_h‖₂ ‖B_h‖₂ per case (equilibrium.quadratic_constant on a stack)."""
    return 2.0 * sum(np.linalg.norm(Vh, 2, axis=(1, 2)) * np.linalg.norm(Bh, 2, axis=(1, 2))
                     for Vh, Bh in zip(V, B, strict=True))


def g_matrix(v: np.ndarray, B: tuple[np.ndarray, ...]) -> np.ndarray:
    """G = −Σ_h v_h (B_h + B_hᵀ) per case, summed in Params.G's order."""
    total: Any = 0
    for h, Bh in enumerate(B):
        total = total + v[:, h, None, None] * (Bh + np.swapaxes(Bh, 1, 2))
    return -total


def g_rounding(V: tuple[np.ndarray, ...], B: tuple[np.ndarray, ...]) -> np.ndarray:
    """A bound on ‖G_exact − G‖₂ per case, G = g_matrix(v, B) with v_h = tr V_h / d and
    G_exact = −Σ_h V_h[0,0](B_h + B_hᵀ) in exact arithmetic (V_h exactly v_h I).

    Entrywise, fl(B_h + B_hᵀ), the product with v_h, the running sum over H heads and v_h itself
    (d + 1 roundings of the trace mean) err by at most (H + d + 3) eps Σ_h |v_h||B_h + B_hᵀ|;
    the factor 2 covers the rounding of this bound, 4Hd subnormal units the underflows."""
    d = B[0].shape[-1]
    H = len(B)
    mag = sum(np.abs(Vh[:, :1, :1]) * np.abs(Bh + np.swapaxes(Bh, 1, 2))
              for Vh, Bh in zip(V, B, strict=True))
    return 2 * (H + d + 3) * _EPS * np.linalg.norm(mag, axis=(1, 2)) + 4 * H * d * _SUBNORMAL


