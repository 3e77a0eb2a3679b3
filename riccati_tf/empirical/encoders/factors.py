"""The parameters of a real encoder layer, kept factored (SPEC §1 in the package's convention).

Tokens are row vectors x ∈ R^d. Head h of a layer has projections W_Q,h, W_K,h, W_V,h ∈ R^{d_h×d}
(with biases b_Q,h, b_K,h, b_V,h ∈ R^{d_h}), the column block W_O,h ∈ R^{d×d_h} of the output
projection, and the logit scale s = 1/√d_h. Its logit between tokens x and y is

    s ⟨W_Q x + b_Q, W_K y + b_K⟩ = ⟨B_h x, y⟩ + ⟨β_h, y⟩ + (terms constant in y),
    B_h = s W_Kᵀ W_Q,   β_h = s W_Kᵀ b_Q,   V_h = W_O W_V,

so the kernel is exp(⟨B_h x, y⟩) tilted by the x-independent exp(⟨β_h, y⟩): for μ = N(m, Σ) the
head sees the mean m + Σ β_h. The key bias enters only through ⟨W_Q x + b_Q, b_K⟩, constant in
y, and cancels in the softmax; softmax weights sum to one, so the value bias and the output bias
add the constant W_O b_V + b_O to the sublayer's output.

The dense d×d matrices B_h and V_h (rank ≤ d_h) are computed on demand from the factors; the
layer also carries its LayerNorms (γ, β, ε and their placement) and its feed-forward block.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...state.params import Head, Params

__all__ = ["ACTIVATIONS", "PLACEMENTS", "Encoder", "EncoderLayer", "HeadFactors",
           "LayerNormParams", "MLPParams"]

#: placements of the LayerNorms: "post" x ↦ LN(x + f(x)) (BERT), "pre" x ↦ x + f(LN(x)) (ViT)
PLACEMENTS = ("post", "pre")
#: elementwise activations f of the feed-forward block ("gelu": x Φ(x); "gelu_tanh": its tanh
#: approximation)
ACTIVATIONS = ("relu", "gelu", "gelu_tanh")


def _frozen(*arrays: np.ndarray | None) -> None:
    for a in arrays:
        if a is not None:
            a.setflags(write=False)


@dataclass(frozen=True, eq=False)
class HeadFactors:
    """One attention head of a real encoder, kept factored (SPEC §1 in the package's convention).

    Its logit between tokens x and y is s ⟨W_Q x + b_Q, W_K y + b_K⟩ = ⟨B_h x, y⟩ + ⟨β_h, y⟩
    + (terms constant in y), with

        B_h = s W_Kᵀ W_Q,   β_h = s W_Kᵀ b_Q,   V_h = W_O W_V,

    computed on demand (`B`, `V`, `query_tilt`); the value bias adds W_O b_V to the output.

    Parameters
    ----------
    W_Q : (d_h, d) ndarray
        The query projection.
    b_Q : (d_h,) ndarray
        The query bias.
    W_K : (d_h, d) ndarray
        The key projection.
    b_K : (d_h,) ndarray
        The key bias (it cancels in the softmax).
    W_V : (d_h, d) ndarray
        The value projection.
    b_V : (d_h,) ndarray
        The value bias.
    W_O : (d, d_h) ndarray
        The head's column block of the output projection.
    scale : float
        The logit scale s (the module's own, 1/√d_h in every supported family).

    Raises
    ------
    AttributeError
        If an array field is not a numpy ndarray (the fields are stored as given, not
        validated, and made read-only).
    dataclasses.FrozenInstanceError
        On assignment to a field.

    See Also
    --------
    EncoderLayer : a layer of heads with its LayerNorms and feed-forward block.
    riccati_tf.empirical.encoders.extract : reads the heads out of a transformers encoder.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders import HeadFactors
    >>> head = HeadFactors(W_Q=np.array([[1.0, 0.0]]), b_Q=np.zeros(1),
    ...                    W_K=np.array([[2.0, 0.0]]), b_K=np.zeros(1),
    ...                    W_V=np.array([[0.0, 1.0]]), b_V=np.ones(1),
    ...                    W_O=np.array([[1.0], [0.0]]), scale=0.5)
    >>> head.d_h, head.B.tolist(), head.V.tolist()
    (1, [[1.0, 0.0], [0.0, 0.0]], [[0.0, 1.0], [0.0, 0.0]])
    >>> head.value_shift.tolist()
    [1.0, 0.0]
    """

    W_Q: np.ndarray
    b_Q: np.ndarray
    W_K: np.ndarray
    b_K: np.ndarray
    W_V: np.ndarray
    b_V: np.ndarray
    W_O: np.ndarray
    scale: float

    def __post_init__(self):
        _frozen(self.W_Q, self.b_Q, self.W_K, self.b_K, self.W_V, self.b_V, self.W_O)

    @property
    def d_h(self) -> int:
        """The head size d_h."""
        return self.W_Q.shape[0]

    @cached_property
    def B(self) -> np.ndarray:
        """B_h = s W_Kᵀ W_Q (d × d): the logit is ⟨B_h x, y⟩ = s ⟨W_Q x, W_K y⟩."""
        out = self.scale * self.W_K.T @ self.W_Q
        _frozen(out)
        return out

    @cached_property
    def V(self) -> np.ndarray:
        """V_h = W_O W_V (d × d)."""
        out = self.W_O @ self.W_V
        _frozen(out)
        return out

    @property
    def query_tilt(self) -> np.ndarray:
        """β_h = s W_Kᵀ b_Q: the x-independent tilt exp(⟨β_h, y⟩) of the kernel."""
        return self.scale * self.W_K.T @ self.b_Q

    @property
    def value_shift(self) -> np.ndarray:
        """W_O b_V: the constant the value bias adds to the output."""
        return self.W_O @ self.b_V


@dataclass(frozen=True, eq=False)
class LayerNormParams:
    """A LayerNorm y = γ ⊙ (x − x̄1)/√(s² + ε) + β with x̄ = mean of the d entries,
    s² = |x − x̄1|²/d.

    Its Gaussian closure (moments of y for Gaussian x) is
    `riccati_tf.empirical.encoders.closures.layer_norm_closure`.

    Parameters
    ----------
    gamma : (d,) ndarray
        The gain γ.
    beta : (d,) ndarray
        The shift β.
    eps : float
        The ε added to the variance.

    Raises
    ------
    AttributeError
        If an array field is not a numpy ndarray (the fields are stored as given, not
        validated, and made read-only).
    dataclasses.FrozenInstanceError
        On assignment to a field.

    See Also
    --------
    EncoderLayer : places the LayerNorms before or after the sublayers.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders import LayerNormParams
    >>> norm = LayerNormParams(np.ones(2), np.zeros(2), 0.0)
    >>> norm(np.array([[1.0, 3.0]])).tolist()
    [[-1.0, 1.0]]
    """

    gamma: np.ndarray
    beta: np.ndarray
    eps: float

    def __post_init__(self):
        _frozen(self.gamma, self.beta)

    def __call__(self, x: np.ndarray) -> NDArray[np.float64]:
        """LayerNorm of the rows of x (n, d)."""
        z = x - x.mean(axis=-1, keepdims=True)
        return self.gamma * z / np.sqrt(np.mean(z * z, axis=-1, keepdims=True) + self.eps) \
            + self.beta


@dataclass(frozen=True, eq=False)
class MLPParams:
    """The feed-forward block x ↦ W_out f(W_in x + b_in) + b_out.

    When gated (W_gate given; GLU, ModernBERT) it is
    x ↦ W_out (f(W_in x + b_in) ⊙ (W_gate x + b_gate)) + b_out.

    Parameters
    ----------
    W_in : (I, d) ndarray
        The input weights (I hidden units).
    b_in : (I,) ndarray
        The input bias.
    W_out : (d, I) ndarray
        The output weights.
    b_out : (d,) ndarray
        The output bias.
    activation : str
        The elementwise f, one of ACTIVATIONS.
    W_gate : (I, d) ndarray, optional
        The gate weights; None for an ungated block.
    b_gate : (I,) ndarray, optional
        The gate bias (with W_gate).

    Raises
    ------
    AttributeError
        If an array field is not a numpy ndarray (the fields are stored as given, not
        validated, and made read-only).
    dataclasses.FrozenInstanceError
        On assignment to a field.

    See Also
    --------
    EncoderLayer : the layer holding the block.
    riccati_tf.empirical.encoders.closures.mlp_closure : its Gaussian closure.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders import MLPParams
    >>> mlp = MLPParams(np.eye(2), np.zeros(2), np.eye(2), np.zeros(2), "relu")
    >>> mlp.gated
    False
    """

    W_in: np.ndarray
    b_in: np.ndarray
    W_out: np.ndarray
    b_out: np.ndarray
    activation: str
    W_gate: np.ndarray | None = None
    b_gate: np.ndarray | None = None

    def __post_init__(self):
        _frozen(self.W_in, self.b_in, self.W_out, self.b_out, self.W_gate, self.b_gate)

    @property
    def gated(self) -> bool:
        """Whether the block is gated (W_gate given)."""
        return self.W_gate is not None


@dataclass(frozen=True, eq=False)
class EncoderLayer:
    """One encoder layer: its heads, LayerNorms and feed-forward block.

    With a(x) = Σ_h a_h(x) + b_O the attention sublayer,

        placement "post": x ↦ h = LN_attn(x + a(x)), out = LN_mlp(h + mlp(h)) (BERT);
        placement "pre":  x ↦ h = x + a(LN_attn(x)), out = h + mlp(LN_mlp(h)) (ViT, ModernBERT).

    Parameters
    ----------
    heads : tuple of HeadFactors
        The attention heads.
    out_bias : (d,) ndarray
        The attention output bias b_O.
    attn_norm : LayerNormParams or None
        The LayerNorm of the attention sublayer (None for none).
    mlp_norm : LayerNormParams
        The LayerNorm of the feed-forward sublayer.
    mlp : MLPParams
        The feed-forward block.
    placement : str
        "post" or "pre" (PLACEMENTS).

    Raises
    ------
    AttributeError
        If an array field is not a numpy ndarray (the fields are stored as given, not
        validated, and made read-only).
    dataclasses.FrozenInstanceError
        On assignment to a field.

    See Also
    --------
    Encoder : the layers of a whole encoder.
    riccati_tf.empirical.encoders.predict_moments : Gaussian moments through the layers.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders import (EncoderLayer, HeadFactors,
    ...     LayerNormParams, MLPParams)
    >>> head = HeadFactors(W_Q=np.array([[1.0, 0.0]]), b_Q=np.zeros(1),
    ...                    W_K=np.array([[2.0, 0.0]]), b_K=np.zeros(1),
    ...                    W_V=np.array([[0.0, 1.0]]), b_V=np.ones(1),
    ...                    W_O=np.array([[1.0], [0.0]]), scale=0.5)
    >>> norm = LayerNormParams(np.ones(2), np.zeros(2), 1e-12)
    >>> mlp = MLPParams(np.eye(2), np.zeros(2), np.eye(2), np.zeros(2), "relu")
    >>> layer = EncoderLayer((head,), np.zeros(2), norm, norm, mlp, "pre")
    >>> layer.d, layer.output_shift.tolist()
    (2, [1.0, 0.0])
    >>> params = layer.params()
    >>> params.heads[0][1].tolist()  # B_h = s W_Kᵀ W_Q
    [[1.0, 0.0], [0.0, 0.0]]
    """

    heads: tuple[HeadFactors, ...]
    out_bias: np.ndarray
    attn_norm: LayerNormParams | None
    mlp_norm: LayerNormParams
    mlp: MLPParams
    placement: str

    def __post_init__(self):
        _frozen(self.out_bias)

    @property
    def d(self) -> int:
        """The hidden size d."""
        return self.out_bias.shape[0]

    @property
    def output_shift(self) -> np.ndarray:
        """Σ_h W_O,h b_V,h + b_O: the constant added to the attention output."""
        return self.out_bias + sum(h.value_shift for h in self.heads)

    def params(self) -> Params:
        """The attention sublayer as SPEC §1 Params: A = 0, b = Σ_h W_O,h b_V,h + b_O,
        heads kept factored: `Head(Q = s W_Q,h, K = W_K,h, V = W_V,h, O = W_O,h)`, so that
        B_h = s W_K,hᵀ W_Q,h and V_h = W_O,h W_V,h. (The query tilts β_h are not part of Params;
        `attention` applies them.)"""
        # Params takes Head entries too (its field's annotation names the dense pairs only)
        heads: list[Any] = [Head(Q=h.scale * h.W_Q, K=h.W_K, V=h.W_V, O=h.W_O)
                            for h in self.heads]
        return Params(np.zeros((self.d, self.d)), b=self.output_shift, heads=heads)


@dataclass(frozen=True, eq=False)
class Encoder:
    """The extracted layers of an encoder, the result of `extract`.

    Parameters
    ----------
    layers : tuple of EncoderLayer
        The layers, first to last.
    family : str
        The transformers model_type.
    position_limit : int or None
        The most tokens one sequence may hold (None: no limit).
    position_free : bool
        True when the model's attention depends on token positions (rotary embeddings, local
        windows) and only the position-free part was extracted.

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field.

    See Also
    --------
    riccati_tf.empirical.encoders.extract : reads it out of a transformers encoder.
    riccati_tf.empirical.encoders.predict_moments : its Gaussian moments.
    riccati_tf.empirical.encoders.atlas : its stability atlas.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders import (Encoder, EncoderLayer, HeadFactors,
    ...     LayerNormParams, MLPParams)
    >>> head = HeadFactors(W_Q=np.array([[1.0, 0.0]]), b_Q=np.zeros(1),
    ...                    W_K=np.array([[2.0, 0.0]]), b_K=np.zeros(1),
    ...                    W_V=np.array([[0.0, 1.0]]), b_V=np.ones(1),
    ...                    W_O=np.array([[1.0], [0.0]]), scale=0.5)
    >>> norm = LayerNormParams(np.ones(2), np.zeros(2), 1e-12)
    >>> mlp = MLPParams(np.eye(2), np.zeros(2), np.eye(2), np.zeros(2), "relu")
    >>> layer = EncoderLayer((head,), np.zeros(2), norm, norm, mlp, "pre")
    >>> encoder = Encoder((layer, layer), "bert", 512, False)
    >>> encoder.d, len(encoder.layers)
    (2, 2)
    """

    layers: tuple[EncoderLayer, ...]
    family: str
    position_limit: int | None
    position_free: bool

    @property
    def d(self) -> int:
        """The hidden size d."""
        return self.layers[0].d
