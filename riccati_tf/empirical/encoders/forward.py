"""An encoder layer evaluated on one finite sequence from its extracted factors (numpy).

Head h: a_h(x_i) = W_O,h Σ_j softmax_j(s⟨W_Q x_i + b_Q, W_K x_j + b_K⟩)(W_V x_j + b_V); the
attention output is Σ_h a_h + b_O, and the layer composes it with the LayerNorms, the residual
connections and the feed-forward block as `EncoderLayer.placement` says. This is what the model
computes on a sequence (no Gaussian limit): it checks the extraction against the model.
"""

from __future__ import annotations

import numpy as np
from scipy.special import softmax

from .factors import EncoderLayer, LayerNormParams, MLPParams
from .hermite import FUNCTIONS

__all__ = ["layer_forward"]


def attention_output(layer: EncoderLayer, x: np.ndarray) -> np.ndarray:
    """Σ_h a_h(x_i) + b_O for the rows x (n, d) of one sequence."""
    out = np.tile(layer.out_bias, (x.shape[0], 1))
    for h in layer.heads:
        logits = h.scale * (x @ h.W_Q.T + h.b_Q) @ (x @ h.W_K.T + h.b_K).T
        out += softmax(logits, axis=1) @ (x @ h.W_V.T + h.b_V) @ h.W_O.T
    return out


def mlp_forward(mlp: MLPParams, y: np.ndarray) -> np.ndarray:
    """o = W_out f(W_in y + b_in) (⊙ (W_gate y + b_gate) when gated) + b_out on rows y (n, d)."""
    f = FUNCTIONS[mlp.activation](y @ mlp.W_in.T + mlp.b_in)
    if mlp.gated:
        assert mlp.W_gate is not None  # gated means W_gate is given
        f = f * (y @ mlp.W_gate.T + mlp.b_gate)
    return f @ mlp.W_out.T + mlp.b_out


def _norm(norm: LayerNormParams | None, x: np.ndarray) -> np.ndarray:
    return x if norm is None else norm(x)


def attention_sublayer(layer: EncoderLayer, x: np.ndarray) -> np.ndarray:
    """post: LN_attn(x + a(x));  pre: x + a(LN_attn(x))."""
    if layer.placement == "post":
        return _norm(layer.attn_norm, x + attention_output(layer, x))
    return x + attention_output(layer, _norm(layer.attn_norm, x))


def mlp_sublayer(layer: EncoderLayer, h: np.ndarray) -> np.ndarray:
    """post: LN_mlp(h + mlp(h));  pre: h + mlp(LN_mlp(h))."""
    if layer.placement == "post":
        return layer.mlp_norm(h + mlp_forward(layer.mlp, h))
    return h + mlp_forward(layer.mlp, layer.mlp_norm(h))


def layer_forward(layer: EncoderLayer, x: np.ndarray) -> np.ndarray:
    """The whole encoder layer on one finite sequence x (n, d), from its factors.

    Head h computes a_h(x_i) = W_O,h Σ_j softmax_j(s⟨W_Q x_i + b_Q, W_K x_j + b_K⟩)
    (W_V x_j + b_V); the attention output Σ_h a_h + b_O is composed with the LayerNorms, the
    residual connections and the feed-forward block as `EncoderLayer.placement` says. This is
    what the model computes on a sequence (no Gaussian limit).

    Parameters
    ----------
    layer : EncoderLayer
        The layer.
    x : (n, d) ndarray
        The tokens of one sequence (its empirical measure).

    Returns
    -------
    (n, d) ndarray
        The layer's output tokens.

    Raises
    ------
    ValueError
        From numpy when x does not have the layer's d columns.

    See Also
    --------
    riccati_tf.empirical.encoders.extract : the layers of a model (checked against it).
    predict_moments : the Gaussian limit of the same layer.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures".

    Examples
    --------
    A pre-norm layer whose attention and feed-forward outputs vanish is the identity:

    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders import (EncoderLayer, HeadFactors,
    ...     LayerNormParams, MLPParams)
    >>> from riccati_tf.empirical.encoders.forward import layer_forward
    >>> I, z, O = np.eye(2), np.zeros(2), np.zeros((2, 2))
    >>> layer = EncoderLayer((HeadFactors(I, z, I, z, I, z, O, 1.0),), z, None,
    ...                      LayerNormParams(np.ones(2), z, 1e-5),
    ...                      MLPParams(I, z, O, z, "gelu"), "pre")
    >>> x = np.random.default_rng(0).standard_normal((5, 2))
    >>> bool(np.allclose(layer_forward(layer, x), x))
    True
    """
    return mlp_sublayer(layer, attention_sublayer(layer, x))
