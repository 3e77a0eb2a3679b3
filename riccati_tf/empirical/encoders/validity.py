"""Where the N → ∞ attention formula applies to sequences of n tokens (SPEC §7, last bullet).

On a Gaussian cloud y ~ N(m, Σ) head h of an encoder layer is the affine map of SPEC §2 (in value
space, before W_O),

    u_h(y) = W_V (m + Σ(B_h y + β_h)) + b_V,   Cov u_h = P_h Σ P_hᵀ,   P_h = W_V Σ B_h,

but a sequence of n tokens computes the ratio of sums

    û_h(y_i) = Σ_j e^{s_ij} (W_V y_j + b_V) / Σ_j e^{s_ij},   s_ij = ⟨B_h y_i + β_h, y_j⟩,

which tends to u_h(y_i) only when many tokens share the softmax weight. For a query whose logits
have standard deviation σ over the sequence, the weights are log-normal and the effective number
of attended tokens exp(H(softmax row)) is about n e^{−σ²/2}: the limit needs σ² ≪ 2 log n.
Per layer ℓ and head h this module records, on the tokens the attention of layer ℓ acts on
(after a pre-norm):

- the logit spread σ: the median over queries i of the standard deviation of s_ij over j;
- the effective count exp(H): the median over queries of exp(−Σ_j p_ij log p_ij);
- the finite-n bias: n-token sequences drawn from the Gaussian with those tokens' moments (the
  lengths the model saw), the head's output covariance Ĉ_h against the formula C_h = P_hΣP_hᵀ,
  ‖Ĉ_h − C_h‖_F / ‖C_h‖_F (in the metric of W_O: the distance of the d-dimensional outputs),
  next to its Monte-Carlo floor, the same distance for the formula's own affine map u_h
  evaluated on the same draws (sampling noise alone). The bias contains both finite-n effects:
  the ratio of sums on log-normal weights and the fluctuation of each sequence's empirical
  measure about N(m, Σ) (e.g. the sequence-level shift W_V Σ̂_s β_h of a query bias). Its impact
  on the layer is the floor-corrected excess √(‖Ĉ_h − C_h‖² − floor²) relative to ‖Σ‖_F, the
  covariance of the tokens the attention acts on. The whole attention output Σ_h W_O û_h is
  measured the same way (`layer_bias`, `layer_impact`).

On the tokens themselves (not on Gaussian stand-ins) each head's real finite-n output û_h(y_i)
on its own sequence is set against the formula's u_h(y_i) evaluated with the moments of that
sequence's tokens (`token_unexplained`, the formula applied to the sequence's empirical measure)
and with the moments of all tokens pooled (`token_unexplained_pooled`): the unexplained share

    Σ_i ‖W_O(û_h(y_i) − u_h(y_i))‖² / Σ_i ‖W_O(û_h(y_i) − ū_h)‖²

(0: the formula is the output; 1: it explains none of its variation), next to the variance
ratio Σ_i ‖W_O(u_h(y_i) − ū)‖² / Σ_i ‖W_O(û_h(y_i) − ū)‖² of formula to real output (per
sequence), and its token impact √(mean_i ‖W_O(û_h − u_h)‖²) / √tr Σ relative to the input
cloud's radius; the whole attention output Σ_h W_O,h û_h likewise (`layer_token_*`). On
Gaussian tokens the per-sequence share is the finite-n error alone; on real tokens (text)
it also holds everything non-Gaussian about them, which the Gaussian stand-ins cannot see.

A head is flagged (the N → ∞ formula does not apply) when its bias exceeds bias_factor times its
floor and its impact exceeds min_impact (a detectable and material error), or its median
effective count is below min_effective, or on the tokens its per-sequence unexplained share
exceeds max_unexplained with a token impact above min_impact; a layer is flagged when its whole
attention output is, or any head is. `flag_source` says per layer which evidence flagged it.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import log_softmax

from ...errors import InvalidInputError
from ...state.validation import as_count, as_seed, as_time
from .factors import Encoder, EncoderLayer, HeadFactors
from .sequences import split

__all__ = ["DEFAULT_BIAS_FACTOR", "DEFAULT_MAX_UNEXPLAINED", "DEFAULT_MIN_EFFECTIVE",
           "DEFAULT_MIN_IMPACT", "DEFAULT_REPEATS", "ValidityMap", "validity_map"]

#: a head is flagged when its finite-n bias exceeds this multiple of its Monte-Carlo floor
DEFAULT_BIAS_FACTOR = 3.0
#: ... with an excess above this fraction of ‖Σ‖_F (the attention input's covariance)
DEFAULT_MIN_IMPACT = 0.02
#: ... or when the median effective number of attended tokens is below this
DEFAULT_MIN_EFFECTIVE = 8.0
#: independent Gaussian draws (of all sequences) behind each bias and floor
DEFAULT_REPEATS = 2
#: ... or when, on the tokens, the formula leaves more than this share of the output unexplained
DEFAULT_MAX_UNEXPLAINED = 0.25


@dataclass(frozen=True, eq=False)
class ValidityMap:
    """Where the N → ∞ attention formula applies, per layer ℓ = 1..L and head (module docstring).

    Parameters
    ----------
    lengths : tuple of int
        The sequence lengths n the tokens were cut into.
    logit_spread : (L, H) ndarray
        σ: median over queries of the standard deviation of the logits s_ij over j.
    effective_tokens : (L, H) ndarray
        Median over queries of exp(H(softmax row)).
    bias : (L, H) ndarray
        ‖Ĉ_h − C_h‖_F / ‖C_h‖_F of the head's output on n-token Gaussian sequences (RMS over
        the draws).
    floor : (L, H) ndarray
        The same distance for the formula's affine map on the same draws (RMS): sampling
        noise alone.
    impact : (L, H) ndarray
        √max(‖Ĉ_h − C_h‖² − floor², 0) / ‖Σ‖_F: the excess relative to the covariance of the
        attention's input tokens.
    layer_bias : (L,) ndarray
        The bias of the whole attention output Σ_h W_O,h û_h.
    layer_floor : (L,) ndarray
        Its floor.
    layer_impact : (L,) ndarray
        Its impact.
    token_unexplained : (L, H) ndarray
        On the tokens: the share of the head's real output the formula with each sequence's own
        moments leaves unexplained (module docstring).
    token_unexplained_pooled : (L, H) ndarray
        The same with the moments of all tokens pooled.
    token_variance_ratio : (L, H) ndarray
        The variance of the formula's output over that of the real output (per sequence).
    token_impact : (L, H) ndarray
        √(mean ‖W_O(û_h − u_h)‖²) / √tr Σ (per sequence).
    layer_token : (L, 4) ndarray
        The same four numbers for the whole attention output.
    flagged : (L, H) ndarray of bool
        (bias > bias_factor · floor and impact > min_impact) or effective_tokens <
        min_effective or (token_unexplained > max_unexplained and token_impact > min_impact).
    layer_flagged : (L,) ndarray of bool
        The same for the whole attention output, or any head flagged.
    bias_factor : float
        The factor of the criterion.
    min_effective : float
        The least effective count of the criterion.
    min_impact : float
        The least material impact of the criterion.
    repeats : int
        Gaussian draws of all sequences behind each bias.
    max_unexplained : float
        The token criterion's largest unexplained share.

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field.

    See Also
    --------
    validity_map : produces it.
    riccati_tf.empirical.encoders.compare : carries one (`Comparison.validity`).

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders import extract
    >>> from riccati_tf.empirical.encoders.tiny import tiny_encoder
    >>> from riccati_tf.empirical.encoders.validity import validity_map
    >>> encoder = extract(tiny_encoder("vit", hidden_size=8, n_heads=2, n_layers=1))
    >>> x = np.random.default_rng(0).standard_normal((512, 8))
    >>> vm = validity_map(encoder, [x], (256, 256))
    >>> vm.logit_spread.shape, vm.flagged.tolist()
    ((1, 2), [[False, False]])
    """

    lengths: tuple[int, ...]
    logit_spread: np.ndarray
    effective_tokens: np.ndarray
    bias: np.ndarray
    floor: np.ndarray
    impact: np.ndarray
    layer_bias: np.ndarray
    layer_floor: np.ndarray
    layer_impact: np.ndarray
    token_unexplained: np.ndarray
    token_unexplained_pooled: np.ndarray
    token_variance_ratio: np.ndarray
    token_impact: np.ndarray
    layer_token: np.ndarray
    flagged: np.ndarray
    layer_flagged: np.ndarray
    bias_factor: float
    min_effective: float
    min_impact: float
    repeats: int
    max_unexplained: float

    @property
    def criterion(self) -> str:
        """The flag's rule in words."""
        return (f"flagged: finite-n bias > {self.bias_factor:g} × its Monte-Carlo floor with an "
                f"excess > {self.min_impact:g} ‖Σ‖_F, or median effective count exp(H) < "
                f"{self.min_effective:g}, or on the tokens an unexplained share > "
                f"{self.max_unexplained:g} with an impact > {self.min_impact:g} of the "
                f"cloud's radius")

    @property
    def flag_source(self) -> list[str]:
        """Per layer what flagged it: "tokens" (the formula against the real output on the
        tokens), "gaussian" (finite-n bias or effective count on Gaussian stand-ins), "both",
        or "clear"."""
        token = self._token_flags()
        out = []
        for i in range(self.layer_flagged.size):
            t = bool(token[0][i].any() or token[1][i])
            g = bool(self.layer_flagged[i]) and bool(self._gaussian_flags()[0][i].any()
                                                    or self._gaussian_flags()[1][i])
            out.append("both" if t and g else "tokens" if t else "gaussian" if g else "clear")
        return out

    def _token_flags(self) -> tuple[np.ndarray, np.ndarray]:
        with np.errstate(invalid="ignore"):
            heads = ((self.token_unexplained > self.max_unexplained)
                     & (self.token_impact > self.min_impact))
            layer = ((self.layer_token[:, 0] > self.max_unexplained)
                     & (self.layer_token[:, 3] > self.min_impact))
        return heads, layer

    def _gaussian_flags(self) -> tuple[np.ndarray, np.ndarray]:
        with np.errstate(invalid="ignore"):
            heads = (((self.bias > self.bias_factor * self.floor)
                      & (self.impact > self.min_impact))
                     | (self.effective_tokens < self.min_effective))
            layer = ((self.layer_bias > self.bias_factor * self.layer_floor)
                     & (self.layer_impact > self.min_impact))
        return heads, layer

    def to_json(self) -> dict[str, Any]:
        """JSON-ready numbers (per layer lists, per head inner lists; None where not finite)."""
        def listed(a: np.ndarray) -> Any:
            return np.where(np.isfinite(a), a, np.array(None, dtype=object)).tolist()

        return {"lengths": list(self.lengths), "criterion": self.criterion,
                "bias_factor": self.bias_factor, "min_effective": self.min_effective,
                "min_impact": self.min_impact, "repeats": self.repeats,
                "logit_spread": listed(self.logit_spread),
                "effective_tokens": listed(self.effective_tokens),
                "bias": listed(self.bias), "floor": listed(self.floor),
                "impact": listed(self.impact), "layer_bias": listed(self.layer_bias),
                "layer_floor": listed(self.layer_floor),
                "layer_impact": listed(self.layer_impact),
                "max_unexplained": self.max_unexplained,
                "token_unexplained": listed(self.token_unexplained),
                "token_unexplained_pooled": listed(self.token_unexplained_pooled),
                "token_variance_ratio": listed(self.token_variance_ratio),
                "token_impact": listed(self.token_impact),
                "layer_token": {k: listed(self.layer_token[:, j]) for j, k in enumerate(
                    ("unexplained", "unexplained_pooled", "variance_ratio", "impact"))},
                "flagged": self.flagged.tolist(), "layer_flagged": self.layer_flagged.tolist(),
                "flag_source": self.flag_source}

    def summary(self) -> str:
        """One line per layer: ranges over heads, the attention output's bias and the flags."""
        n = (f"{min(self.lengths)}" if min(self.lengths) == max(self.lengths)
             else f"{min(self.lengths)}–{max(self.lengths)}")
        lines = [f"validity of the N → ∞ attention formula at n = {n} tokens per sequence "
                 f"({self.criterion})"]
        for i in range(self.bias.shape[0]):
            s, e, f = self.logit_spread[i], self.effective_tokens[i], self.flagged[i]
            lines.append(
                f"layer {i + 1}: logit spread {s.min():.3g}–{s.max():.3g}, effective tokens "
                f"{e.min():.3g}–{e.max():.3g}, head bias/floor {np.min(self.bias[i]):.3g}–"
                f"{np.max(self.bias[i]):.3g} / {np.min(self.floor[i]):.3g}–"
                f"{np.max(self.floor[i]):.3g}, impact ≤ {np.max(self.impact[i]):.3g}; "
                f"attention output bias {self.layer_bias[i]:.3g} (floor "
                f"{self.layer_floor[i]:.3g}, impact {self.layer_impact[i]:.3g}); on the "
                f"tokens the formula leaves {self.layer_token[i, 0]:.3g} of the attention "
                f"output unexplained ({self.layer_token[i, 1]:.3g} with pooled moments; its "
                f"variance {self.layer_token[i, 2]:.3g} of the real one); "
                + (f"flagged: heads {[int(h) + 1 for h in np.flatnonzero(f)]}" if f.any()
                   else "flagged: attention output" if self.layer_flagged[i] else "clear")
                + (f" (on {self.flag_source[i]})" if self.layer_flagged[i] else ""))
        return "\n".join(lines)


def attention_inputs(layer: EncoderLayer, x: np.ndarray) -> np.ndarray:
    """The tokens the attention of the layer acts on: LN_attn(x) for a pre-norm layer, x else."""
    if layer.placement == "pre" and layer.attn_norm is not None:
        return layer.attn_norm(x)
    return x


@dataclass(frozen=True, eq=False)
class _Stack:
    """A layer's heads side by side: one HeadFactors whose W_Q, W_K, W_V rows (biases alike)
    and W_O columns are those of every head stacked, the span of each head in them and its
    logit scale."""

    side: HeadFactors
    spans: tuple[slice, ...]
    scales: tuple[float, ...]

    @classmethod
    def of(cls, heads: tuple[HeadFactors, ...]) -> _Stack:
        widths = np.cumsum([0] + [h.d_h for h in heads])

        def rows(name: str) -> np.ndarray:
            return np.concatenate([getattr(h, name) for h in heads])

        side = HeadFactors(rows("W_Q"), rows("b_Q"), rows("W_K"), rows("b_K"), rows("W_V"),
                           rows("b_V"), np.hstack([h.W_O for h in heads]), 1.0)
        return cls(side, tuple(slice(a, b) for a, b in itertools.pairwise(widths)),
                   tuple(h.scale for h in heads))

    @property
    def width(self) -> int:
        """Σ_h d_h."""
        return self.side.d_h

    def rows(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """On one sequence y (n, d): every head's logits s⟨W_Q y_i + b_Q, W_K y_j + b_K⟩ and
        their log-softmax over j ((H, n, n) each), the queries W_Q y + b_Q side by side
        (n, Σ_h d_h) and the finite-n outputs Σ_j p_ij (W_V y_j + b_V) side by side."""
        h = self.side
        q, k, v = (y @ W.T + b for W, b in ((h.W_Q, h.b_Q), (h.W_K, h.b_K), (h.W_V, h.b_V)))
        logits = np.stack([s * q[:, c] @ k[:, c].T for c, s in zip(self.spans, self.scales,
                                                                    strict=True)])
        logp = log_softmax(logits, axis=2)
        p = np.exp(logp)
        out = np.empty_like(v)
        for j, c in enumerate(self.spans):
            out[:, c] = p[j] @ v[:, c]
        return logits, logp, q, out


def _metric(W_O: np.ndarray) -> np.ndarray:
    """G^{1/2} for G = W_Oᵀ W_O: ‖W_O D W_Oᵀ‖_F = ‖G^{1/2} D G^{1/2}‖_F for D in value space."""
    lam, U = np.linalg.eigh(W_O.T @ W_O)
    return (U * np.sqrt(np.clip(lam, 0.0, None))) @ U.T


def _relative(C_hat: np.ndarray, C: np.ndarray) -> float:
    scale = np.linalg.norm(C)
    if scale == 0.0:
        return 0.0 if np.linalg.norm(C_hat) == 0.0 else float("inf")
    return float(np.linalg.norm(C_hat - C) / scale)


def _quadratic(D: np.ndarray, G: np.ndarray) -> float:
    """Σ_i D_i G D_iᵀ over the rows of D: Σ_i ‖W D_iᵀ‖² for G = WᵀW."""
    return float(np.sum((D @ G) * D))


def _token_layer(layer: EncoderLayer, y: np.ndarray, lengths: tuple[int, ...]
                 ) -> tuple[np.ndarray, np.ndarray]:
    """On the tokens y (the attention's inputs, sequences stacked): per head and (last row) for
    the whole attention output, (unexplained share per sequence, unexplained share pooled,
    variance ratio, token impact) of the N → ∞ formula against the real finite-n output
    (module docstring); and the per-head softmax row statistics (spread, exp(H)) pooled.

    Notes
    -----
    Everything is computed in value space (the heads' d_h coordinates side by side) and
    measured in the metric G = W_OᵀW_O of the output map: ‖W_O v‖² = v G vᵀ. The formula's
    value u_h(y_i) = W_V(m + Σ w_i) + b_V with tilt w_i = s W_Kᵀ q_i, q_i = W_Q y_i + b_Q, is
    W_V m + b_V + q_i (s W_K Σ W_Vᵀ): a d_h × d_h product per query; for a sequence's own
    moments s W_K Σ_s W_Vᵀ = s (Y W_Kᵀ)ᵀ(Y W_Vᵀ)/n_s from its centred tokens Y."""
    heads = layer.heads
    n = len(heads)
    N, d = y.shape
    stack = _Stack.of(heads)
    real, own, pooled = (np.zeros((N, stack.width)) for _ in range(3))
    m_all, S_all = y.mean(axis=0), np.cov(y, rowvar=False, bias=True).reshape(d, d)
    tilts = [h.scale * (h.W_K @ S_all) @ h.W_V.T for h in heads]  # s W_K Σ W_Vᵀ, pooled
    spreads, counts = [], []
    start = 0
    for seq in split(y, lengths):
        stop = start + seq.shape[0]
        m_s = seq.mean(axis=0)
        centred = seq - m_s
        logits, logp, q, real[start:stop] = stack.rows(seq)
        spreads.append(logits.std(axis=2))
        counts.append(np.exp(-np.sum(np.exp(logp) * logp, axis=2)))  # exp(H) per row
        for h, cols, T_all in zip(heads, stack.spans, tilts, strict=True):
            tilt = h.scale * (centred @ h.W_K.T).T @ (centred @ h.W_V.T) / seq.shape[0]
            for out, m, T in ((own, m_s, tilt), (pooled, m_all, T_all)):
                out[start:stop, cols] = m @ h.W_V.T + h.b_V + q[:, cols] @ T
        start = stop
    radius2 = max(float(np.trace(S_all)), np.finfo(float).tiny)
    out = np.full((n + 1, 4), np.nan)
    W_all = stack.side.W_O
    metrics = [h.W_O.T @ h.W_O for h in heads] + [W_all.T @ W_all]
    spans = [*stack.spans, slice(0, stack.width)]
    for k, (G, cols) in enumerate(zip(metrics, spans, strict=True)):
        r, o, pl = real[:, cols], own[:, cols], pooled[:, cols]
        spread2 = _quadratic(r - r.mean(axis=0), G)
        err_own = _quadratic(r - o, G)
        err_pooled = _quadratic(r - pl, G)
        formula2 = _quadratic(o - o.mean(axis=0), G)
        if spread2 > 0:
            out[k, :3] = err_own / spread2, err_pooled / spread2, formula2 / spread2
        out[k, 3] = np.sqrt(err_own / N / radius2)
    return out, np.stack([np.median(np.concatenate(rows, axis=1), axis=1)
                          for rows in (spreads, counts)], axis=1)


def _bias_layer(layer: EncoderLayer, mean: np.ndarray, cov: np.ndarray,
                lengths: tuple[int, ...], rng: np.random.Generator
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One Gaussian draw of all sequences: per head and (last entry) for the whole attention
    output, the squared distances ‖Ĉ − C‖_F² of the finite-n output and of the formula's own
    affine map on the same draws (the Monte-Carlo floor), and ‖C‖_F² (in R^d). The whole
    output's formula is the affine map y ↦ My + c, M = Σ_h W_O,h P_h, of covariance MΣMᵀ
    (the heads' cross terms included)."""
    lam, U = np.linalg.eigh(cov)
    root = U * np.sqrt(np.clip(lam, 0.0, None))
    y = mean + rng.standard_normal((sum(lengths), mean.size)) @ root.T
    heads = layer.heads
    stack = _Stack.of(heads)
    finite = np.empty((y.shape[0], stack.width))
    start = 0
    for seq in split(y, lengths):
        stop = start + seq.shape[0]
        finite[start:stop] = stack.rows(seq)[3]
        start = stop
    n = len(heads)
    bias, floor, size = np.empty(n + 1), np.empty(n + 1), np.empty(n + 1)
    P_all = np.vstack([h.scale * (h.W_V @ cov @ h.W_K.T) @ h.W_Q for h in heads])  # W_V Σ B_h
    formula = y @ P_all.T  # every head's affine map up to its constant, side by side
    for k, (h, cols) in enumerate(zip(heads, stack.spans, strict=True)):
        P = P_all[cols]
        R = _metric(h.W_O)
        C = R @ P @ cov @ P.T @ R
        bias[k] = np.linalg.norm(R @ np.cov(finite[:, cols], rowvar=False) @ R - C) ** 2
        floor[k] = np.linalg.norm(R @ np.cov(formula[:, cols], rowvar=False) @ R - C) ** 2
        size[k] = np.linalg.norm(C) ** 2
    W_all = stack.side.W_O
    M = W_all @ P_all
    C_total = M @ cov @ M.T
    bias[n] = np.linalg.norm(W_all @ np.cov(finite, rowvar=False) @ W_all.T - C_total) ** 2
    floor[n] = np.linalg.norm(W_all @ np.cov(formula, rowvar=False) @ W_all.T - C_total) ** 2
    size[n] = np.linalg.norm(C_total) ** 2
    return bias, floor, size, np.linalg.norm(cov) ** 2 * np.ones(n + 1)


def validity_map(encoder: Encoder, inputs: list[np.ndarray], lengths: tuple[int, ...], *,
                 seed: int = 0, repeats: int = DEFAULT_REPEATS,
                 bias_factor: float = DEFAULT_BIAS_FACTOR,
                 min_effective: float = DEFAULT_MIN_EFFECTIVE,
                 min_impact: float = DEFAULT_MIN_IMPACT,
                 max_unexplained: float = DEFAULT_MAX_UNEXPLAINED) -> ValidityMap:
    """Logit spread, effective count and finite-n bias of every head's attention formula.

    For layer ℓ and head h, on the tokens x the layer receives (inputs[ℓ − 1], cut into
    sequences by lengths; after the pre-norm LN_attn where there is one): σ, the median over
    queries i of std_j s_ij with s_ij = ⟨B_h y_i + β_h, y_j⟩, and the median of
    exp(H(softmax_j s_ij)); then, on sequences of the same lengths drawn from N(m, Σ) with
    those tokens' moments, the bias ‖Ĉ_h − P_hΣP_hᵀ‖_F / ‖P_hΣP_hᵀ‖_F (P_h = W_V Σ B_h, in the
    metric of W_O) of the finite-n output against the N → ∞ formula, its Monte-Carlo floor and
    its impact relative to ‖Σ‖_F (module docstring).

    Parameters
    ----------
    encoder : Encoder
        The extracted layers (`extract`).
    inputs : list of (N, d) ndarray
        inputs[ℓ] the tokens entering layer ℓ + 1 (at least L arrays; more are ignored), the
        sequences stacked.
    lengths : tuple of int
        The lengths of the sequences, summing to N.
    seed : int, optional
        The seed of the Gaussian draws (default 0).
    repeats : int, optional
        Independent draws of all sequences, ≥ 1 (default DEFAULT_REPEATS).
    bias_factor : float, optional
        Flag a head whose bias exceeds this multiple of its floor, > 0 (default 3).
    min_effective : float, optional
        Flag a head whose median effective count is below this, ≥ 0 (default 8).
    min_impact : float, optional
        ... and one whose floor-corrected excess exceeds this fraction of ‖Σ‖_F while its bias
        exceeds bias_factor times its floor, ≥ 0 (default 0.02); the token criterion's least
        impact relative to the cloud's radius √tr Σ likewise.
    max_unexplained : float, optional
        Flag a head whose per-sequence unexplained share on the tokens exceeds this, > 0
        (default DEFAULT_MAX_UNEXPLAINED).

    Returns
    -------
    ValidityMap
        The per-head numbers and flags.

    Raises
    ------
    InvalidInputError
        If encoder is not an Encoder, there are fewer than L inputs, an input does not have
        the encoder's d columns or N = Σ lengths rows, a sequence has fewer than 2 tokens, or
        a count or factor is out of range.

    See Also
    --------
    ValidityMap : the fields and the criterion.
    riccati_tf.empirical.encoders.compare : the prediction against the model, with this map.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".
    .. [2] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    One head with B = c I on N(0, I) tokens in R^2: the logit spread is about c |y_i|, so a
    large c leaves few effective tokens and flags the head.

    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders import (Encoder, EncoderLayer, HeadFactors,
    ...     LayerNormParams, MLPParams)
    >>> from riccati_tf.empirical.encoders.validity import validity_map
    >>> I, z = np.eye(2), np.zeros(2)
    >>> def encoder(c):
    ...     head = HeadFactors(c * I, z, I, z, I, z, I, 1.0)
    ...     norm = LayerNormParams(np.ones(2), z, 1e-5)
    ...     layer = EncoderLayer((head,), z, None, norm, MLPParams(I, z, I, z, "relu"), "post")
    ...     return Encoder((layer,), "bert", None, False)
    >>> x = np.random.default_rng(0).standard_normal((2048, 2))
    >>> weak, strong = (validity_map(encoder(c), [x], (512,) * 4) for c in (0.1, 6.0))
    >>> bool(weak.flagged[0, 0]), bool(strong.flagged[0, 0])
    (False, True)
    >>> bool(strong.effective_tokens[0, 0] < 8 < weak.effective_tokens[0, 0])
    True
    """
    if not isinstance(encoder, Encoder):
        raise InvalidInputError(f"encoder must be an Encoder (from extract), got "
                                f"{type(encoder).__name__}")
    seed = as_seed("seed", seed)
    repeats = as_count("repeats", repeats)
    bias_factor = as_time("bias_factor", bias_factor)
    min_effective = as_time("min_effective", min_effective, allow_zero=True)
    min_impact = as_time("min_impact", min_impact, allow_zero=True)
    max_unexplained = as_time("max_unexplained", max_unexplained)
    lengths = tuple(int(n) for n in lengths)
    if not lengths or min(lengths) < 2:
        raise InvalidInputError(f"every sequence needs at least 2 tokens for a softmax "
                                f"average, got lengths {lengths}")
    L, d = len(encoder.layers), encoder.d
    if len(inputs) < L:
        raise InvalidInputError(f"{len(inputs)} input arrays for {L} layers")
    rng = np.random.default_rng([seed, 2])
    n_heads = max(len(layer.heads) for layer in encoder.layers)
    shape = (L, n_heads)
    spread, effective = np.full(shape, np.nan), np.full(shape, np.nan)
    bias, floor = np.full(shape, np.nan), np.full(shape, np.nan)
    impact = np.full(shape, np.nan)
    layer_bias, layer_floor, layer_impact = (np.full(L, np.nan) for _ in range(3))
    unexplained, unexplained_pooled, variance_ratio, token_impact = (
        np.full(shape, np.nan) for _ in range(4))
    layer_token = np.full((L, 4), np.nan)
    for i, (layer, x) in enumerate(zip(encoder.layers, inputs, strict=False)):
        x = np.asarray(x, dtype=float)
        if x.shape != (sum(lengths), d):
            raise InvalidInputError(f"the input of layer {i + 1} has shape {x.shape}, expected "
                                    f"({sum(lengths)}, {d}) (the sequences stacked)")
        y = attention_inputs(layer, x)
        nh = len(layer.heads)
        token, rows = _token_layer(layer, y, lengths)
        spread[i, :nh], effective[i, :nh] = rows[:, 0], rows[:, 1]
        for j, target in enumerate((unexplained, unexplained_pooled, variance_ratio,
                                    token_impact)):
            target[i, :nh] = token[:nh, j]
        layer_token[i] = token[nh]
        draws = np.array([_bias_layer(layer, y.mean(axis=0), np.cov(y, rowvar=False), lengths,
                                      rng) for _ in range(repeats)])
        b, f, c, s_in = (np.sqrt(np.mean(draws[:, j], axis=0)) for j in range(4))
        tiny = np.finfo(float).tiny
        bias[i, :nh], layer_bias[i] = b[:nh] / np.maximum(c[:nh], tiny), b[nh] / max(c[nh], tiny)
        floor[i, :nh], layer_floor[i] = (f[:nh] / np.maximum(c[:nh], tiny),
                                         f[nh] / max(c[nh], tiny))
        excess = np.sqrt(np.clip(b ** 2 - f ** 2, 0.0, None)) / np.maximum(s_in, tiny)
        impact[i, :nh], layer_impact[i] = excess[:nh], excess[nh]
    blank = np.zeros((L, n_heads), dtype=bool)
    unflagged = ValidityMap(lengths, spread, effective, bias, floor, impact, layer_bias,
                            layer_floor, layer_impact, unexplained, unexplained_pooled,
                            variance_ratio, token_impact, layer_token, blank, blank[:, 0],
                            float(bias_factor), float(min_effective), float(min_impact),
                            repeats, float(max_unexplained))
    (g_heads, g_layer), (t_heads, t_layer) = (unflagged._gaussian_flags(),
                                              unflagged._token_flags())
    flagged = g_heads | t_heads
    layer_flagged = g_layer | t_layer | flagged.any(axis=1)
    return dataclasses.replace(unflagged, flagged=flagged, layer_flagged=layer_flagged)
