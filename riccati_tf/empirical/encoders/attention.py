"""The attention sublayer on a Gaussian cloud is affine (SPEC §2), with the biases of `factors`.

For y ~ N(m, Σ) head h tilts the cloud by exp(⟨B_h y_i + β_h, y⟩): the tilted law is
N(m + Σ(B_h y_i + β_h), Σ), so the attention output is the affine map

    a(y) = M y + c,   M = Σ_h V_h Σ B_h,
                      c = Σ_h V_h (m + Σ β_h) + Σ_h W_O,h b_V,h + b_O,

computed from the factors (V_h Σ B_h = s W_O (W_V Σ W_Kᵀ) W_Q: O(d² d_h) per head).

This is the attention of the Gaussian measure itself (the N → ∞ limit). A sequence of n tokens
computes a ratio of sums over its own tokens, which approaches the map only while many tokens
share each softmax row; `validity.validity_map` measures the logit spread, the effective number
of attended tokens and the finite-n bias of this map per head (SPEC §7).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .factors import EncoderLayer

__all__ = ["gaussian_attention"]


def gaussian_attention(layer: EncoderLayer, mean: np.ndarray, cov: np.ndarray
                       ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The attention sublayer on a Gaussian cloud as the affine map a(y) = M y + c.

    For y ~ N(m, Σ) head h tilts the cloud to N(m + Σ(B_h y + β_h), Σ), so

        M = Σ_h V_h Σ B_h,   c = Σ_h V_h (m + Σ β_h) + Σ_h W_O,h b_V,h + b_O,

    computed from the factors in O(d² d_h) per head (module docstring). This is the N → ∞
    limit; on n tokens it holds where `validity.validity_map` finds it.

    Parameters
    ----------
    layer : EncoderLayer
        The layer whose heads and output bias act.
    mean : (d,) ndarray
        The mean m of the cloud the attention acts on.
    cov : (d, d) ndarray
        Its covariance Σ (not validated).

    Returns
    -------
    M : (d, d) ndarray
        The linear part.
    c : (d,) ndarray
        The constant part.

    Raises
    ------
    ValueError
        From numpy when the shapes of mean and cov do not match the layer.

    See Also
    --------
    predict_moments : composes it with the LayerNorm and feed-forward closures.
    riccati_tf.empirical.encoders.forward.layer_forward : the layer on a finite sequence.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    One head with B = V = I: M = Σ.

    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders import (EncoderLayer, HeadFactors,
    ...     LayerNormParams, MLPParams)
    >>> from riccati_tf.empirical.encoders.attention import gaussian_attention
    >>> I, z = np.eye(2), np.zeros(2)
    >>> layer = EncoderLayer((HeadFactors(I, z, I, z, I, z, I, 1.0),), z, None,
    ...                      LayerNormParams(np.ones(2), z, 1e-5),
    ...                      MLPParams(I, z, I, z, "relu"), "pre")
    >>> M, c = gaussian_attention(layer, np.array([1.0, 0.0]), np.diag([2.0, 1.0]))
    >>> M.tolist(), c.tolist()
    ([[2.0, 0.0], [0.0, 1.0]], [1.0, 0.0])
    """
    M = np.zeros_like(cov)
    c = layer.output_shift.copy()
    for h in layer.heads:
        VS = h.W_O @ (h.W_V @ cov)  # V_h Σ
        M += h.scale * (VS @ h.W_K.T) @ h.W_Q
        c += h.W_O @ (h.W_V @ mean) + VS @ h.query_tilt
    return M, c
