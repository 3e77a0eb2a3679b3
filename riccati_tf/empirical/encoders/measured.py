"""Every layer's input moments measured on the model's own tokens (SPEC §7).

With real inputs (text, token ids or hidden states) the moments a layer's attention acts on
need not be predicted: the model runs on the sequences (`loading.capture`), and for every
layer ℓ the inputs of its attention module, pooled over all sequences, give

    m̂_ℓ = (1/n) Σ_i y_i,     Ĉ_ℓ = (1/(n − 1)) Σ_i (y_i − m̂_ℓ)(y_i − m̂_ℓ)ᵀ,

the start (m0, Σ0) of layer ℓ's attention flow in the atlas. The feed-forward drift
A = E[J_MLP] of layer ℓ is the Gaussian closure's mean Jacobian one layer from the measured
input moments of that layer (`propagation.layer_moments` at the measured hidden states
(m̂, Ĉ) entering layer ℓ), never chained through earlier layers. Beside them stands the
measured growth of one residual attention step of unit length (τ = 1, one layer) on the same
tokens,

    tr Ĉ⁺_ℓ / tr Ĉ_ℓ,   Ĉ⁺_ℓ the covariance of y_i + a(y_i) pooled over all sequences,

a(y_i) = Σ_h W_O,h Σ_j softmax_j(s⟨W_Q y_i + b_Q, W_K y_j + b_K⟩)(W_V y_j + b_V) + b_O the
layer's own attention output on the sequence of y_i (`forward.attention_output`, from the
extracted weights, which reproduce the model; of its position-free part where only that was
extracted): the real, finite-n counterpart of the atlas's predicted `Atlas.step_growth`,
(I + M)Σ0(I + M)ᵀ with M = Σ_h V_hΣ0B_h. The chained alternative,
`predict_moments` from the input moments onwards, carries the closures' errors of all earlier
layers into Σ0 (`Atlas.moments_source` says which one an atlas used).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...errors import InvalidInputError
from .closures import GATED_SAMPLES
from .comparison import capture_sequences, pooled_hidden
from .factors import Encoder, EncoderLayer
from .forward import attention_output
from .hermite import DEFAULT_TERMS
from .propagation import MomentPrediction, layer_moments
from .sequences import Inputs

__all__ = ["measured_moments"]


def _moments(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The mean and the unbiased covariance of the rows of x."""
    return x.mean(axis=0), np.cov(x, rowvar=False).reshape(x.shape[1], x.shape[1])


def _step_growth(layer: EncoderLayer, parts: list[np.ndarray]) -> float:
    """tr Ĉ⁺/tr Ĉ of the tokens before and after y ↦ y + a(y), a the layer's attention on each
    sequence of `parts` (module docstring); NaN for tokens without spread."""
    before = np.vstack(parts)
    after = np.vstack([y + attention_output(layer, y) for y in parts])
    spread = float(np.var(before, axis=0).sum())
    return float(np.var(after, axis=0).sum()) / spread if spread > 0 else float("nan")


def measured_moments(model: Any, encoder: Encoder, inputs: Inputs, *,
                     terms: int = DEFAULT_TERMS, gated_samples: int = GATED_SAMPLES,
                     seed: int = 0, progress: Callable[[int, int], None] | None = None
                     ) -> MomentPrediction:
    """Every layer's measured hidden-state and attention-input moments, and the feed-forward
    drift E[J_MLP] one layer from the measured input (module docstring).

    Parameters
    ----------
    model : transformers.PreTrainedModel
        The model `encoder` was extracted from.
    encoder : Encoder
        Its extracted layers.
    inputs : Inputs
        Real tokens (text, token ids or hidden states) in sequences (`loading.model_inputs`).
    terms, gated_samples, seed :
        Passed to the feed-forward closure (`predict_moments`).
    progress : callable (int, int) -> None, optional
        Called as progress(i, n) after each sequence the model runs on.

    Returns
    -------
    MomentPrediction
        means/covs: the measured moments of the hidden states ℓ = 0..L; attention_means/covs:
        those of every layer's attention input; mlp_jacobians, norm_kappa, mlp_bound: the
        closures' one layer from the measured input of each layer; step_growth: the measured
        growth tr Ĉ⁺/tr Ĉ of one real residual attention step on those inputs.

    Raises
    ------
    InvalidInputError
        If the inputs are Gaussian stand-ins (nothing to measure), a layer's attention input
        cannot be captured, or the model fails on a sequence.

    See Also
    --------
    predict_moments : the chained prediction.
    atlas : starts every layer's flow from attention_covs.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders import extract
    >>> from riccati_tf.empirical.encoders.sequences import data_inputs
    >>> from riccati_tf.empirical.encoders.tiny import tiny_encoder
    >>> model = tiny_encoder("bert", hidden_size=8, n_heads=2, n_layers=2, max_positions=64)
    >>> x = np.random.default_rng(0).standard_normal((64, 8))
    >>> measured = measured_moments(model, extract(model), data_inputs("hidden", "x", [x]))
    >>> bool(np.allclose(measured.attention_covs[0], np.cov(x, rowvar=False)))
    True
    """
    if not inputs.real:
        raise InvalidInputError("measured moments need the model's own tokens (text, token "
                                "ids or hidden states), not Gaussian stand-ins")
    captures = capture_sequences(model, inputs.tokens, inputs.lengths, progress)
    hidden = [_moments(x) for x in pooled_hidden(captures)]
    attention, growth = [], []
    for i, layer in enumerate(encoder.layers):
        parts = [c[1][i] for c in captures]
        if any(p is None for p in parts):
            raise InvalidInputError(f"layer {i + 1}: the input of its attention module could "
                                    f"not be captured")
        attention.append(_moments(np.vstack(parts)))
        growth.append(_step_growth(layer, parts))
    closures = [layer_moments(layer, *hidden[i], terms=terms, gated_samples=gated_samples,
                              seed=seed) for i, layer in enumerate(encoder.layers)]
    return MomentPrediction(np.array([m for m, _ in hidden]), np.array([S for _, S in hidden]),
                            np.array([m for m, _ in attention]),
                            np.array([S for _, S in attention]),
                            np.array([c.mlp.jacobian for c in closures]),
                            np.array([c.kappa for c in closures]),
                            np.array([c.mlp.bound for c in closures]),
                            encoder.position_free, encoder, np.array(growth))
