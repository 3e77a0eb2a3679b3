"""The attention sublayer on a Gaussian cloud is affine (SPEC §2), with the biases of `factors`.

For y ~ N(m, Σ) head h tilts the cloud by exp(⟨B_h y_i + β_h, y⟩): the tilted law is
N(m + Σ(B_h y_i + β_h), Σ), so the attention output is the affine map

    a(y) = M y + c,   M = Σ_h V_h Σ B_h,
                      c = Σ_h V_h (m + Σ β_h) + Σ_h W_O,h b_V,h + b_O,

computed from the factors (V_h Σ B_h = s W_O (W_V Σ W_Kᵀ) W_Q: O(d² d_h) per head).
"""

from __future__ import annotations

import numpy as np

from .factors import EncoderLayer


def gaussian_attention(layer: EncoderLayer, mean: np.ndarray, cov: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
    """(M, c) with a(y) = M y + c for y ~ N(mean, cov) (module docstring)."""
    M = np.zeros_like(cov)
    c = layer.output_shift.copy()
    for h in layer.heads:
        VS = h.W_O @ (h.W_V @ cov)  # V_h Σ
        M += h.scale * (VS @ h.W_K.T) @ h.W_Q
        c += h.W_O @ (h.W_V @ mean) + VS @ h.query_tilt
    return M, c
