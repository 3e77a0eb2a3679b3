"""A differentiable stability margin of a layer's attention weights, for training (SPEC §5).

The covariance flow Σ̇ = AΣ + ΣAᵀ + Σ_h (V_hΣB_hΣ + ΣB_hᵀΣV_hᵀ) has the trace rate

    d tr Σ / dt = 2 tr(AΣ) + 2 q(Σ),      q(Σ) = Σ_h tr(V_h Σ B_h Σ) = ⟨Σ, 𝒦 Σ⟩,

with 𝒦 the self-adjoint operator on the symmetric matrices Sym(d) whose quadratic form is q.
`stability_margin` returns μ = −2 λ_max(𝒦): μ ≥ 0 rules out blow-up from every Σ0 ⪰ 0 for any
drift A, and for scalar value matrices V_h = v_h I it equals λ_min(G), G = −Σ_h v_h(B_h + B_hᵀ),
whose sign decides SPEC §5's regimes. `trace_growth_rate` is the data-dependent companion (the
relative trace rate at a given Σ0), and `encoder_margins` reads the per-layer margins of a
transformers encoder as a differentiable tensor, to be used as a regulariser.

torch is imported inside the functions only: the module loads without it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..empirical.encoders.extraction import BERT_FAMILY, VIT_FAMILY, attention_projections
from ..errors import InvalidInputError

__all__ = ["MAX_MARGIN_D", "encoder_margins", "stability_margin", "trace_growth_rate"]

#: the largest d of `stability_margin`: 𝒦 is a dense matrix of order d(d+1)/2 (2080 at d = 64),
#: built from a d⁴ array and diagonalised in O(d⁶)
MAX_MARGIN_D = 64

#: transformers model types whose layers `encoder_margins` reads
_FAMILIES = BERT_FAMILY + VIT_FAMILY


def _dense_heads(heads: Sequence[Sequence[Any]], name: str = "heads") -> tuple[Any, Any, int]:
    """The stacked dense (V_h, B_h) = (W_O W_V, W_Kᵀ W_Q) as two (H, d, d) tensors, and d."""
    import torch

    if isinstance(heads, torch.Tensor) or not isinstance(heads, Sequence) or len(heads) == 0:
        raise InvalidInputError(f"{name} must be a non-empty sequence of (W_Q, W_K, W_V, W_O) "
                                f"tuples, got {type(heads).__name__}")
    Vs, Bs, d, dtype = [], [], None, None
    for h, head in enumerate(heads):
        if not isinstance(head, Sequence) or len(head) != 4:
            raise InvalidInputError(f"{name}[{h}] must be a tuple (W_Q, W_K, W_V, W_O), got "
                                    f"{type(head).__name__}")
        Wq, Wk, Wv, Wo = (torch.as_tensor(w) for w in head)
        if any(w.ndim != 2 for w in (Wq, Wk, Wv, Wo)):
            raise InvalidInputError(f"{name}[{h}]: every factor must be a matrix, got shapes "
                                    f"{[tuple(w.shape) for w in (Wq, Wk, Wv, Wo)]}")
        d = Wq.shape[1] if d is None else d
        if (Wk.shape != Wq.shape or Wq.shape[0] == 0 or Wv.shape[1] != d or Wv.shape[0] == 0
                or Wo.shape != (d, Wv.shape[0]) or Wq.shape[1] != d or d == 0):
            raise InvalidInputError(
                f"{name}[{h}]: need W_Q, W_K of shape (r, d), W_V (s, d), W_O (d, s) with r, s, "
                f"d ≥ 1 and d = {d}, got {[tuple(w.shape) for w in (Wq, Wk, Wv, Wo)]}")
        if not all(w.is_floating_point() for w in (Wq, Wk, Wv, Wo)):
            raise InvalidInputError(f"{name}[{h}]: the factors must be floating point tensors")
        dtype = Wq.dtype if dtype is None else dtype
        if any(w.dtype != dtype for w in (Wq, Wk, Wv, Wo)):
            raise InvalidInputError(f"{name}[{h}]: the factors must share one dtype ({dtype})")
        if not all(bool(torch.isfinite(w).all()) for w in (Wq, Wk, Wv, Wo)):
            raise InvalidInputError(f"{name}[{h}]: a factor holds NaN or Inf")
        Vs.append(Wo @ Wv)
        Bs.append(Wk.T @ Wq)
    assert d is not None
    return torch.stack(Vs), torch.stack(Bs), int(d)


def _operator(V: Any, B: Any) -> Any:
    """𝒦 in the orthonormal basis of Sym(d) (e_ii; (e_ij + e_ji)/√2, i < j), ordered as
    torch.triu_indices: the symmetric n×n matrix with ⟨X, 𝒦 X⟩ = Σ_h tr(V_h X B_h X)."""
    import torch

    d = V.shape[-1]
    # T(X)_ij = Σ_h Σ_kl V_h[i,k] X_kl B_h[l,j]:  K4[i,j,k,l] = Σ_h V_h[i,k] B_h[l,j]
    K4 = torch.einsum("hik,hlj->ijkl", V, B)
    S4 = (K4 + K4.transpose(0, 1) + K4.transpose(2, 3) + K4.transpose(0, 1).transpose(2, 3)) / 4
    i, j = torch.triu_indices(d, d, device=V.device)
    w = torch.full(i.shape, math.sqrt(2.0), dtype=V.dtype, device=V.device)
    w[i == j] = 1.0
    M = S4[i, j][:, i, j] * w[:, None] * w[None, :]
    return (M + M.T) / 2


def stability_margin(heads: Sequence[Sequence[Any]], *,
                     temperature: float | None = None) -> Any:
    """The blow-up margin μ = −2 λ_max(𝒦) of a layer's heads, as a differentiable torch scalar.

    𝒦 is the self-adjoint operator on the symmetric d×d matrices whose quadratic form is the
    attention part of the trace rate of SPEC §2's covariance flow:

        ⟨Σ, 𝒦 Σ⟩ = q(Σ) = Σ_h tr(V_h Σ B_h Σ),     d tr Σ/dt = 2 tr(AΣ) + 2 q(Σ),

    with B_h = W_K,hᵀ W_Q,h and V_h = W_O,h W_V,h (the logit scale folded into W_Q, as for
    `riccati_tf.state.params.Head`). μ ≥ 0 certifies that no start Σ0 ⪰ 0 blows up, for any
    drift A; for scalar value matrices V_h = v_h I, μ = λ_min(G), G = −Σ_h v_h(B_h + B_hᵀ), and
    μ < 0 means that some start blows up (Notes).

    Parameters
    ----------
    heads : sequence of (W_Q, W_K, W_V, W_O)
        Per head the factors as torch tensors (array-likes are converted, without gradient):
        W_Q, W_K of shape (r, d), W_V of shape (s, d), W_O of shape (d, s); one floating dtype.
        d ≤ MAX_MARGIN_D.
    temperature : float, optional
        None (default): the exact μ (torch.linalg.eigvalsh; differentiable wherever λ_max(𝒦)
        is a simple eigenvalue, which holds for almost every layer). A value τ > 0: the smooth
        margin −2τ log Σ_i exp(λ_i(𝒦)/τ), differentiable everywhere, which lies in
        [μ − 2τ log n, μ] (n = d(d+1)/2): a conservative margin (≥ 0 still certifies).

    Returns
    -------
    torch.Tensor
        The 0-dimensional margin, in the heads' dtype, with the autograd graph of the factors.

    Raises
    ------
    InvalidInputError
        heads empty or not a sequence of 4-tuples of matrices; shapes that do not match; mixed
        or non-floating dtypes; NaN or Inf; d > MAX_MARGIN_D; temperature not a positive finite
        number.
    ImportError
        Without torch.

    See Also
    --------
    trace_growth_rate : the relative trace rate at a given covariance (data-dependent).
    encoder_margins : the per-layer margins of a transformers encoder.
    riccati_tf.stability.certificates.entry.certify : the regime from one start, with evidence.

    Notes
    -----
    Theorem (no blow-up). Along the flow Σ(t) = Φ(t)Σ0Φ(t)ᵀ ⪰ 0 (SPEC §3), and q(Σ) ≤ −½ μ ‖Σ‖_F²
    on Sym(d) by definition of λ_max(𝒦). With α = λ_max((A + Aᵀ)/2), tr(AΣ) ≤ α tr Σ, so

        d tr Σ/dt ≤ 2α tr Σ − μ ‖Σ‖_F² ≤ 2α tr Σ − (μ/d)(tr Σ)².

    If μ ≥ 0 then tr Σ(t) ≤ e^{2αt} tr Σ0: Σ ⪰ 0 is bounded by its trace, so no finite-time
    blow-up from any Σ0; if moreover μ > 0 and α > 0, tr Σ(t) ≤ max(tr Σ0, 2αd/μ) for all t.
    The drift A never enters μ: the quadratic term decides blow-up from large starts.

    Heads of low rank. A head's term tr(V_hΣB_hΣ) = ⟨W_hΣK_hᵀ, (Q_hΣO_h)ᵀ⟩ is a quadratic form
    with at most s_h r_h negative directions (W_h: s_h × d, Q_h, K_h: r_h × d), so μ > 0 needs
    Σ_h s_h r_h ≥ d(d+1)/2. Layers of H ≥ 2 heads of size d/H (every BERT-like layer) have
    Σ_h s_h r_h = d²/H < d(d+1)/2, hence μ ≤ 0 whatever their weights: the margin then measures
    the distance to the set it certifies (a regulariser drives μ towards 0), not stability
    itself, which `certify` decides from a start.

    Scalar case. For V_h = v_h I, q(Σ) = −½ tr(GΣ²), so 𝒦X = −¼(GX + XG), whose eigenvalues on
    Sym(d) are −¼(g_i + g_j) (g the eigenvalues of G): μ = −2·(−½ g_min) = λ_min(G). If
    λ_min(G) < 0 with unit eigenvector u, the start Σ0 = c uuᵀ blows up for c large: by SPEC §5
    the blow-up time is the first root of det(I + W(t)Σ0) = 1 + c uᵀW(t)u, and
    uᵀW(t)u = t λ_min(G) + O(t²) < 0 for small t > 0, so a root exists near 1/(c|λ_min(G)|).
    For general V_h, μ < 0 only says that the sufficient condition fails: q is then positive
    somewhere on Sym(d), not necessarily on the cone Σ ⪰ 0.

    Method: 𝒦 is assembled in the orthonormal basis e_ii, (e_ij + e_ji)/√2 (i < j) of Sym(d)
    from K4[i,j,k,l] = Σ_h V_h[i,k] B_h[l,j] symmetrised in (i, j) and (k, l): an n×n symmetric
    matrix, n = d(d+1)/2 (memory O(d⁴), time O(d⁶)). Its spectrum is torch.linalg.eigvalsh's,
    whose backward pass uses the eigenvectors only (never 1/(λ_i − λ_j)): a spectral function
    Σ_i f(λ_i) is differentiable at repeated eigenvalues, the plain maximum where it is simple.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up" (G ≻ 0 rules out blow-up; the closed form and its blow-up time).
    .. [2] A. S. Lewis, "Derivatives of spectral functions", Math. Oper. Res. 21 (1996).

    Examples
    --------
    Two scalar-value heads (V_h = v_h I): the margin is λ_min(G).

    >>> import torch
    >>> from riccati_tf.design.margin import stability_margin
    >>> I = torch.eye(2, dtype=torch.float64)
    >>> B1 = torch.tensor([[1.0, 0.0], [0.0, 2.0]], dtype=torch.float64, requires_grad=True)
    >>> heads = [(B1, I, -I, I), (I, I, 0.25 * I, I)]    # v = −1, B = B1; v = ¼, B = I
    >>> mu = stability_margin(heads)                      # G = 2 B1 − ½ I
    >>> round(mu.item(), 12)
    1.5
    >>> mu.backward()
    >>> B1.grad.tolist()                                  # dμ/dB1 = 2 e1e1ᵀ
    [[2.0, 0.0], [0.0, 0.0]]
    """
    import torch

    if temperature is not None and not (isinstance(temperature, int | float)
                                        and math.isfinite(temperature) and temperature > 0):
        raise InvalidInputError(f"temperature must be a positive finite number or None, got "
                                f"{temperature!r}")
    V, B, d = _dense_heads(heads)
    if d > MAX_MARGIN_D:
        raise InvalidInputError(f"d = {d} exceeds MAX_MARGIN_D = {MAX_MARGIN_D}: the operator "
                                f"𝒦 has order d(d+1)/2 = {d * (d + 1) // 2}")
    lam = torch.linalg.eigvalsh(_operator(V, B))
    if temperature is None:
        return -2 * lam[-1]
    return -2 * temperature * torch.logsumexp(lam / temperature, dim=0)


def trace_growth_rate(heads: Sequence[Sequence[Any]], cov0: Any, A: Any = None) -> Any:
    """The relative trace rate ρ = (d tr Σ/dt)/tr Σ at Σ = Σ0, as a differentiable torch scalar.

    From the covariance flow Σ̇ = AΣ + ΣAᵀ + Σ_h (V_hΣB_hΣ + ΣB_hᵀΣV_hᵀ) of SPEC §2,

        ρ(Σ0) = (2 tr(AΣ0) + 2 Σ_h tr(V_h Σ0 B_h Σ0)) / tr Σ0,

    with B_h = W_K,hᵀ W_Q,h, V_h = W_O,h W_V,h. Negative ρ: the cloud contracts at Σ0; a large
    positive ρ flags fast growth (1/ρ is the e-folding depth of tr Σ at the start).

    Parameters
    ----------
    heads : sequence of (W_Q, W_K, W_V, W_O)
        Per head the factors, as for `stability_margin` (any d).
    cov0 : (d, d) tensor or array_like
        The reference covariance Σ0: symmetric positive semidefinite and non-zero (checked to
        symmetry and trace > 0 only), in the heads' dtype.
    A : (d, d) tensor or array_like, optional
        The residual drift (default 0).

    Returns
    -------
    torch.Tensor
        The 0-dimensional ρ, with the autograd graph of the factors, Σ0 and A.

    Raises
    ------
    InvalidInputError
        heads malformed (as for `stability_margin`); cov0 or A not d×d, not of the heads'
        dtype, or holding NaN or Inf; cov0 not symmetric or of trace ≤ 0.
    ImportError
        Without torch.

    See Also
    --------
    stability_margin : the start-independent margin; −μ/2 bounds q(Σ)/‖Σ‖_F² for every Σ.

    Notes
    -----
    tr(Σ̇) = 2 tr(AΣ) + 2 q(Σ) because tr(ΣB_hᵀΣV_hᵀ) = tr(V_hΣB_hΣ); the value is computed from
    the dense V_h, B_h in O(H d³).

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    One head with V = I, B = I on Σ0 = I₂: tr Σ̇ = 2 tr(Σ0²) = 4, so ρ = 2.

    >>> import torch
    >>> from riccati_tf.design.margin import trace_growth_rate
    >>> I = torch.eye(2, dtype=torch.float64)
    >>> float(trace_growth_rate([(I, I, I, I)], I))
    2.0
    >>> float(trace_growth_rate([(I, I, I, I)], I, A=-3 * I))
    -4.0
    """
    import torch

    V, B, d = _dense_heads(heads)
    S = torch.as_tensor(cov0)
    mats = {"cov0": S, "A": None if A is None else torch.as_tensor(A)}
    for name, X in mats.items():
        if X is None:
            continue
        if X.shape != (d, d) or X.dtype != V.dtype or not bool(torch.isfinite(X).all()):
            raise InvalidInputError(f"{name} must be a finite {d}×{d} tensor of dtype {V.dtype}, "
                                    f"got shape {tuple(X.shape)} and dtype {X.dtype}")
    tr = torch.trace(S)
    if not torch.allclose(S, S.T, rtol=1e-12, atol=0.0) or not bool(tr > 0):
        raise InvalidInputError("cov0 must be symmetric with a positive trace")
    quad = torch.einsum("hij,jk,hkl,li->", V, S, B, S)
    lin = torch.zeros((), dtype=V.dtype) if A is None else torch.trace(mats["A"] @ S)
    return 2 * (lin + quad) / tr


def encoder_margins(model: Any, *, temperature: float | None = None) -> Any:
    """The margins μ_ℓ = −2 λ_max(𝒦_ℓ) of the attention layers of a transformers encoder.

    Layer ℓ's heads are read from its projections as the package reads them
    (`riccati_tf.empirical.encoders`): head h owns rows h·d_h … (h+1)·d_h − 1 of the query, key
    and value weights and the same columns of the output weight, and

        B_h = s W_K,hᵀ W_Q,h,   V_h = W_O,h W_V,h   (s: the module's logit scale, 1/√d_h),

    then μ_ℓ is `stability_margin` of those heads (biases, LayerNorms and the feed-forward block
    do not enter). The result keeps the autograd graph of the weights, so that a training loss
    can push the layers toward the certified regime, e.g.
    `loss = task_loss + λ · torch.relu(−margins).sum()`.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A BERT-family ("bert", "roberta", "xlm-roberta") or ViT/DeiT encoder (a task model is
        read through its base_model), hidden size ≤ MAX_MARGIN_D. Its parameters' dtype is
        used (float64 for gradients checked against finite differences).
    temperature : float, optional
        As for `stability_margin` (default None: the exact margin).

    Returns
    -------
    torch.Tensor
        Shape (n_layers,): μ_ℓ per encoder layer, first to last.

    Raises
    ------
    InvalidInputError
        For a model without config, of another family (ModernBERT's rotary positions have no
        single B_h), a hidden size above MAX_MARGIN_D or not a multiple of the head count, and
        as `stability_margin` raises.
    ImportError
        Without torch.

    See Also
    --------
    stability_margin : the margin of one layer, with its theorem.
    riccati_tf.empirical.encoders.extract : the numpy factors of the same heads.

    Notes
    -----
    For a layer whose value matrices are not scalar (every trained head: V_h has rank d_h < d),
    μ_ℓ ≥ 0 is the certificate and μ_ℓ < 0 its failure, not a proof of blow-up.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".
    .. [2] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> from riccati_tf.empirical.encoders.tiny import tiny_encoder
    >>> from riccati_tf.design.margin import encoder_margins
    >>> model = tiny_encoder("bert", hidden_size=8, n_heads=2, n_layers=2)
    >>> mu = encoder_margins(model)
    >>> tuple(mu.shape), mu.requires_grad
    ((2,), True)
    """
    import torch

    config: Any = getattr(model, "config", None)
    family = getattr(config, "model_type", None)
    if family not in _FAMILIES:
        raise InvalidInputError(f"model must be a transformers encoder of type {_FAMILIES}, "
                                f"got {type(model).__name__} (model_type {family!r})")
    base = getattr(model, "base_model", model)
    layers = list(base.encoder.layer)
    n_heads, d = int(config.num_attention_heads), int(config.hidden_size)
    if d > MAX_MARGIN_D or d % n_heads:
        raise InvalidInputError(f"hidden size {d} must be ≤ MAX_MARGIN_D = {MAX_MARGIN_D} and a "
                                f"multiple of the {n_heads} heads")
    d_h = d // n_heads
    out = []
    for layer in layers:
        q, k, v, o, scale = attention_projections(layer, family)
        heads = [(scale * q.weight[r], k.weight[r], v.weight[r], o.weight[:, r])
                 for r in (slice(h * d_h, (h + 1) * d_h) for h in range(n_heads))]
        out.append(stability_margin(heads, temperature=temperature))
    return torch.stack(out)
