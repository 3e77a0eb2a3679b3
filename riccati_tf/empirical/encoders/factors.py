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

import numpy as np

from ...state.params import Head, Params

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
    """One attention head: W_Q, W_K, W_V (d_h, d), b_Q, b_K, b_V (d_h,), W_O (d, d_h), logit
    scale s (the module's own, 1/√d_h in every supported family)."""

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
    """y = γ ⊙ (x − x̄1)/√(s² + ε) + β with x̄ = mean of the d entries, s² = |x − x̄1|²/d."""

    gamma: np.ndarray
    beta: np.ndarray
    eps: float

    def __post_init__(self):
        _frozen(self.gamma, self.beta)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """LayerNorm of the rows of x (n, d)."""
        z = x - x.mean(axis=-1, keepdims=True)
        return self.gamma * z / np.sqrt(np.mean(z * z, axis=-1, keepdims=True) + self.eps) \
            + self.beta


@dataclass(frozen=True, eq=False)
class MLPParams:
    """x ↦ W_out f(W_in x + b_in) + b_out, or when gated (W_gate given; GLU, ModernBERT)
    x ↦ W_out (f(W_in x + b_in) ⊙ (W_gate x + b_gate)) + b_out. W_in, W_gate (I, d); W_out (d, I);
    activation f one of ACTIVATIONS."""

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
        return self.W_gate is not None


@dataclass(frozen=True, eq=False)
class EncoderLayer:
    """One encoder layer: heads, the attention output bias b_O (d,), the LayerNorm before/after
    attention (`attn_norm`, None for none) and the feed-forward block (`mlp_norm`, `mlp`).

    placement "post": x ↦ h = LN_attn(x + a(x)), out = LN_mlp(h + mlp(h)) (BERT);
    placement "pre":  x ↦ h = x + a(LN_attn(x)), out = h + mlp(LN_mlp(h)) (ViT, ModernBERT).
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
        return Params(np.zeros((self.d, self.d)), b=self.output_shift,
                      heads=[Head(Q=h.scale * h.W_Q, K=h.W_K, V=h.W_V, O=h.W_O)
                             for h in self.heads])


@dataclass(frozen=True, eq=False)
class Encoder:
    """The extracted layers of an encoder. family: the transformers model_type; position_limit:
    the most tokens one sequence may hold (None: no limit); position_free: True when the model's
    attention depends on token positions (rotary embeddings, local windows) and only the
    position-free part was extracted."""

    layers: tuple[EncoderLayer, ...]
    family: str
    position_limit: int | None
    position_free: bool

    @property
    def d(self) -> int:
        return self.layers[0].d
