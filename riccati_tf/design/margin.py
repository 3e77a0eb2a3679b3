"""A differentiable stability margin of a layer's attention weights, for training (SPEC §5).

The covariance flow Σ̇ = AΣ + ΣAᵀ + Σ_h (V_hΣB_hΣ + ΣB_hᵀΣV_hᵀ) has the trace rate

    d tr Σ / dt = 2 tr(AΣ) + 2 q(Σ),      q(Σ) = Σ_h tr(V_h Σ B_h Σ) = ⟨Σ, 𝒦 Σ⟩,

with 𝒦 the self-adjoint operator on the symmetric matrices Sym(d) whose quadratic form is q.
`stability_margin` returns μ = −2 λ_max(𝒦): μ ≥ 0 rules out blow-up from every Σ0 ⪰ 0 for any
drift A, and for scalar value matrices V_h = v_h I it equals λ_min(G), G = −Σ_h v_h(B_h + B_hᵀ),
whose sign decides SPEC §5's regimes; a layer of H ≥ 2 heads of size d/H always has μ ≤ 0.
`horizon_margin` certifies multi-head layers too, over a finite depth and from a reference
covariance: with α = λ_max((A + Aᵀ)/2) and κ a bound of ‖Σ_h V_h Σ B_h‖₂ / ‖Σ‖₂, ‖Σ(t)‖₂ is at
most ‖Σ0‖₂ / m(t), m(t) = e^{−2αt} − 2κ‖Σ0‖₂ t φ(2αt), φ(x) = (1 − e^{−x})/x, while m(t) > 0.
`trace_growth_rate` is the relative trace rate at a given Σ0. `encoder_margins` and
`encoder_horizon_margins` read the per-layer margins of a transformers encoder as differentiable
tensors, to be used as regularisers.

torch is imported inside the functions only: the module loads without it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..empirical.encoders.extraction import BERT_FAMILY, VIT_FAMILY, attention_layers
from ..errors import InvalidInputError
from ..state.validation import PSD_RTOL, as_time
from ._arguments import dense_tensor

__all__ = ["MAX_MARGIN_D", "encoder_horizon_margins", "encoder_margins", "horizon_margin",
           "stability_margin", "trace_growth_rate"]

#: the largest d of `stability_margin`: 𝒦 is a dense matrix of order d(d+1)/2 (2080 at d = 64),
#: built from a d⁴ array and diagonalised in O(d⁶)
MAX_MARGIN_D = 64

#: transformers model types whose layers `encoder_margins` reads
_FAMILIES = BERT_FAMILY + VIT_FAMILY


def _dense_heads(heads: Sequence[Sequence[Any]],
                 name: str = "heads") -> tuple[Any, Any, int, Any]:
    """The stacked dense (V_h, B_h) = (W_O W_V, W_Kᵀ W_Q) as two (H, d, d) tensors, d, and an
    (H, 2) tensor bounding the rounding of the products in the 2-norm: ‖fl(W_O W_V) − W_O W_V‖₂
    ≤ γ_s ‖W_O‖_F ‖W_V‖_F, γ_s = 1.01 s eps (likewise B_h with r)."""
    import torch

    if isinstance(heads, torch.Tensor) or not isinstance(heads, Sequence) or len(heads) == 0:
        raise InvalidInputError(f"{name} must be a non-empty sequence of (W_Q, W_K, W_V, W_O) "
                                f"tuples, got {type(heads).__name__}")
    Vs, Bs, errs, d, dtype = [], [], [], None, None
    for h, head in enumerate(heads):
        if not isinstance(head, Sequence) or len(head) != 4:
            raise InvalidInputError(f"{name}[{h}] must be a tuple (W_Q, W_K, W_V, W_O), got "
                                    f"{type(head).__name__}")
        Wq, Wk, Wv, Wo = (dense_tensor(f"{name}[{h}][{i}]", w) for i, w in enumerate(head))
        if any(w.ndim != 2 for w in (Wq, Wk, Wv, Wo)):
            raise InvalidInputError(f"{name}[{h}]: every factor must be a matrix, got shapes "
                                    f"{[tuple(w.shape) for w in (Wq, Wk, Wv, Wo)]}")
        d = Wq.shape[1] if d is None else d
        if (Wk.shape != Wq.shape or Wq.shape[0] == 0 or Wv.shape[1] != d or Wv.shape[0] == 0
                or Wo.shape != (d, Wv.shape[0]) or Wq.shape[1] != d or d == 0):
            raise InvalidInputError(
                f"{name}[{h}]: need W_Q, W_K of shape (r, d), W_V (s, d), W_O (d, s) with r, s, "
                f"d ≥ 1 and d = {d}, got {[tuple(w.shape) for w in (Wq, Wk, Wv, Wo)]}")
        dtype = Wq.dtype if dtype is None else dtype
        if any(w.dtype != dtype for w in (Wq, Wk, Wv, Wo)):
            raise InvalidInputError(f"{name}[{h}]: the factors must share one dtype ({dtype})")
        if not all(bool(torch.isfinite(w).all()) for w in (Wq, Wk, Wv, Wo)):
            raise InvalidInputError(f"{name}[{h}]: a factor holds NaN or Inf")
        Vs.append(Wo @ Wv)
        Bs.append(Wk.T @ Wq)
        gamma = 1.01 * torch.finfo(dtype).eps
        fro = torch.linalg.matrix_norm
        errs.append(torch.stack((gamma * Wv.shape[0] * fro(Wo) * fro(Wv),
                                 gamma * Wq.shape[0] * fro(Wk) * fro(Wq))))
    assert d is not None
    return torch.stack(Vs), torch.stack(Bs), int(d), torch.stack(errs)


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
        dtypes, or factors that are not dense float32/float64 tensors or arrays (sparse, meta,
        half precision, integer, complex); NaN or Inf; d > MAX_MARGIN_D; temperature not a
        positive finite number (booleans refused).
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
    itself, which `certify` decides from a start; `horizon_margin` certifies such layers over a
    finite depth from a bounded start.

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

    if temperature is not None:
        temperature = as_time("temperature", temperature)
    V, B, d, _ = _dense_heads(heads)
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
        The reference covariance Σ0: symmetric positive semidefinite and non-zero, in the
        heads' dtype.
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
        dtype, not dense float32/float64 (sparse, meta, half precision), or holding NaN or
        Inf; cov0 not symmetric, of trace ≤ 0 or not positive semidefinite (λ_min below
        −PSD_RTOL λ_max).
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

    V, B, _, _ = _dense_heads(heads)
    S, A = _reference(cov0, A, V)
    quad = torch.einsum("hij,jk,hkl,li->", V, S, B, S)
    lin = torch.zeros((), dtype=V.dtype) if A is None else torch.trace(A @ S)
    return 2 * (lin + quad) / torch.trace(S)


def _reference(cov0: Any, A: Any, V: Any) -> tuple[Any, Any]:
    """cov0 and A (None or a tensor) as d×d tensors of V's dtype: finite, cov0 symmetric and
    positive semidefinite (λ_min ≥ −PSD_RTOL λ_max, as `state.validation.as_covariance`) with a
    positive trace."""
    import torch

    d = V.shape[-1]
    S = dense_tensor("cov0", cov0)
    mats = {"cov0": S, "A": None if A is None else dense_tensor("A", A)}
    for name, X in mats.items():
        if X is None:
            continue
        if X.shape != (d, d) or X.dtype != V.dtype or not bool(torch.isfinite(X).all()):
            raise InvalidInputError(f"{name} must be a finite {d}×{d} tensor of dtype {V.dtype}, "
                                    f"got shape {tuple(X.shape)} and dtype {X.dtype}")
    if not torch.allclose(S, S.T, rtol=1e-12, atol=0.0) or not bool(torch.trace(S) > 0):
        raise InvalidInputError("cov0 must be symmetric with a positive trace")
    eig = torch.linalg.eigvalsh(S.detach())
    if bool(eig[0] < -PSD_RTOL * eig[-1]):
        raise InvalidInputError(f"cov0 is not positive semidefinite: smallest eigenvalue "
                                f"{float(eig[0]):.6g} (largest {float(eig[-1]):.6g}); a reference "
                                f"covariance needs λ ≥ 0")
    return S, mats["A"]


def horizon_margin(heads: Sequence[Sequence[Any]], cov0: Any, A: Any = None, *,
                   horizon: float = 1.0) -> Any:
    """The finite-depth margin m(τ) of a layer from a reference covariance, a differentiable
    torch scalar: m(τ) > 0 certifies that no start Σ0 with ‖Σ0‖₂ ≤ ‖cov0‖₂ blows up before τ.

    Along SPEC §2's covariance flow Σ̇ = MΣ + ΣMᵀ, M = A + Σ_h V_hΣB_h, the largest eigenvalue
    z(t) = ‖Σ(t)‖₂ obeys ż ≤ 2αz + 2κz² (Notes), whose solution from z0 = ‖Σ0‖₂ is z0/m(t):

        m(t) = e^{−2αt} − 2κ z0 t φ(2αt),    φ(x) = (1 − e^{−x})/x,  φ(0) = 1,

    α = λ_max((A + Aᵀ)/2) and κ = min(Σ_h ‖V_h‖₂‖B_h‖₂, ‖[V_1 … V_H]‖₂ ‖[B_1; …; B_H]‖₂). So
    m(τ) > 0 gives ‖Σ(t)‖₂ ≤ z0/m(t) on [0, τ]: no blow-up within the depth τ (T* > τ). If
    α < 0 and κz0 < −α, m(t) > 0 for all t and z(t) → 0: the cloud collapses. m(τ) ≤ 0 says
    that the bound fails, not that the layer blows up; 1/m measures how far the bound is from
    certifying. Unlike `stability_margin` the margin is positive for multi-head layers whose
    attention is small against the reference scale and the depth.

    Parameters
    ----------
    heads : sequence of (W_Q, W_K, W_V, W_O)
        Per head the factors, as for `stability_margin` (any d).
    cov0 : (d, d) tensor or array_like
        The reference covariance: symmetric positive semidefinite (λ_min ≥ −PSD_RTOL λ_max)
        and non-zero, in the heads' dtype; its spectral norm z0 = ‖cov0‖₂ is the radius of the
        starts the margin covers (every Σ0 ⪰ 0 with ‖Σ0‖₂ ≤ z0).
    A : (d, d) tensor or array_like, optional
        The residual drift (default 0).
    horizon : float, optional
        The depth τ > 0 (default 1, one layer of a residual network).

    Returns
    -------
    torch.Tensor
        The 0-dimensional m(τ), rounded down (Notes): a lower bound of the exact margin of the
        given factors where it is positive; the largest float where the exact one is larger;
        with the autograd graph of the factors, cov0 and A.

    Raises
    ------
    InvalidInputError
        heads malformed (as for `stability_margin`); cov0 or A as for `trace_growth_rate`
        (cov0 not positive semidefinite included); a factor, cov0 or A that is not a dense
        float32/float64 tensor or array (sparse, meta, half precision); horizon not a positive
        finite number (booleans refused); heads whose products overflow.
    ImportError
        Without torch.

    See Also
    --------
    stability_margin : the start- and depth-independent margin (μ ≤ 0 for multi-head layers).
    encoder_horizon_margins : m(τ) for every layer of a transformers encoder.
    riccati_tf.stability.certificates.entry.certify : the regime from one start, with evidence.

    Notes
    -----
    Comparison. Σ(t) ⪰ 0 and, for a unit top eigenvector u of Σ, the upper Dini derivative of
    z = λ_max(Σ) is at most uᵀΣ̇u = 2z uᵀMu ≤ 2z(α + ‖Σ_h V_hΣB_h‖₂). Since
    Σ_h V_hΣB_h = [V_1 … V_H](I_H ⊗ Σ)[B_1; …; B_H] and also ≤ Σ_h ‖V_h‖₂‖B_h‖₂‖Σ‖₂ in norm,
    ‖Σ_h V_hΣB_h‖₂ ≤ κz, hence ż ≤ 2αz + 2κz² and z(t) ≤ ẑ(t), the solution of the equality
    (the comparison lemma). w = 1/ẑ solves the linear ẇ = −2αw − 2κ, w(t) = m(t)/z0, and
    w(t) = w* + (w(0) − w*)e^{−2αt} with w* = −κ/α is monotone in t: m(τ) > 0 implies m > 0 on
    all of [0, τ].

    Rounding. m decreases in α, κ, z0 and τ wherever it is positive, so each is rounded up:
    z0 and α by 8 d eps times their scale (the backward error of the symmetric eigensolver),
    each ‖V_h‖₂ and ‖B_h‖₂ by the error bound γ_s‖W_O‖_F‖W_V‖_F of the products formed in
    floating point, and x = 2ατ, y = 2κz0τ by a few eps; exp, expm1 and the last subtraction
    carry a 4-eps factor (φ and ψ(x) = (eˣ − 1)/x change by at most their argument's relative
    error). A positive value returned is then at most the exact m(τ) of the factors given, so
    it certifies T* > τ and ‖Σ(t)‖₂ ≤ z0/m(t) on [0, τ]; eps is that of the heads' dtype.

    Tightness. For one head V = vI, B = βI (v, β > 0), A = aI and Σ0 = z0 I the flow is
    Σ = z(t)I with ż = 2az + 2vβz²: the bound is attained and T* is the root of m. Heads whose
    contributions cancel are bounded loosely (BERT-shaped random layers at d = 384: the bound's
    blow-up time is about 1/20 of T*).

    Method: the dense V_h, B_h and torch.linalg.matrix_norm (ord 2, by SVD: differentiable
    where the largest singular values are simple), O(H d³).

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".
    .. [2] W. Walter, *Ordinary Differential Equations*, Springer (1998), §9 (comparison
       theorems).

    Examples
    --------
    One head with V = I, B = I from Σ0 = I₂: ż = 2z², m(τ) = 1 − 2τ (T* = ½, attained).

    >>> import torch
    >>> from riccati_tf.design.margin import horizon_margin
    >>> I = torch.eye(2, dtype=torch.float64)
    >>> round(float(horizon_margin([(I, I, I, I)], I, horizon=0.25)), 12)
    0.5
    >>> round(float(horizon_margin([(I, I, I, I)], I, A=-I, horizon=0.25)), 12)  # Σ0 at rest
    1.0
    """
    import torch

    horizon = as_time("horizon", horizon)
    V, B, d, err = _dense_heads(heads)
    S, A = _reference(cov0, A, V)
    eps = torch.finfo(V.dtype).eps
    up = 1 + 8 * d * eps  # the backward error of the symmetric eigensolver and of the SVD
    z0 = torch.linalg.eigvalsh(S).abs().max() * up
    alpha = (torch.zeros((), dtype=V.dtype) if A is None
             else torch.linalg.eigvalsh((A + A.T) / 2)[-1]
             + 8 * d * eps * torch.linalg.matrix_norm(A))
    norms = torch.linalg.matrix_norm
    per_head = ((norms(V, ord=2) * up + err[:, 0]) * (norms(B, ord=2) * up + err[:, 1])).sum()
    stacked = ((norms(torch.cat(tuple(V), dim=1), ord=2) * up + norms(err[:, :1]))
               * (norms(torch.cat(tuple(B), dim=0), ord=2) * up + norms(err[:, 1:])))
    kappa = torch.minimum(per_head, stacked) * (1 + 4 * (len(V) + 2) * eps)
    if not bool(torch.isfinite(kappa)):
        raise InvalidInputError("the heads' products V_h = W_O W_V or B_h = W_Kᵀ W_Q overflow")
    return _margin_below(alpha, kappa, z0, horizon)


def _margin_below(alpha: Any, kappa: Any, z0: Any, tau: float) -> Any:
    """A float lower bound of the exact m(τ) = e^{−x} − y φ(x) = e^{−x}(1 − y ψ(x)),
    x = 2ατ, y = 2κz0τ, φ(x) = (1 − e^{−x})/x, ψ(x) = (eˣ − 1)/x, where m(τ) > 0 (otherwise a
    number ≤ 0); α, κ, z0 are upper bounds already. Where m > 0 it decreases in x and y, so x
    and y are rounded up; each evaluated function carries a 4-eps factor (φ, ψ change by at
    most their argument's relative error); a margin above the float range is the largest
    float."""
    import torch

    eps, big = torch.finfo(alpha.dtype).eps, torch.finfo(alpha.dtype).max
    x = 2 * alpha * tau
    x = x + 2 * eps * x.abs()
    y = 2 * kappa * z0 * tau * (1 + 8 * eps)
    small = x.abs() < 1e-8  # φ, ψ = 1 ∓ x/2 + x²/6 ∓ …: the x² term is below eps/8 there
    x_safe = torch.where(small, torch.ones_like(x), x)
    if bool(x >= 0):
        phi = torch.where(small, 1 - x / 2, -torch.expm1(-x_safe) / x_safe) * (1 + 4 * eps)
        m = torch.exp(-x) * (1 - 4 * eps) - y * phi
        return m * (1 - 2 * eps) if bool(m > 0) else m
    psi = torch.where(small, 1 + x / 2, torch.expm1(x_safe) / x_safe) * (1 + 4 * eps)
    F = 1 - y * psi  # m = e^{−x} F: no inf − inf when e^{−x} overflows
    if not bool(F > 0):
        return torch.exp(torch.clamp(-x, max=math.log(big) - 1)) * F
    log_m = -x + torch.log(F * (1 - 2 * eps))
    log_m = log_m - 4 * eps * log_m.abs() - 4 * eps
    if bool(log_m >= math.log(big) - 1):
        return torch.full_like(x, big)
    return torch.exp(log_m) * (1 - 4 * eps)


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

    return torch.stack([stability_margin(heads, temperature=temperature)
                        for heads in _encoder_heads(model, MAX_MARGIN_D)])


def encoder_horizon_margins(model: Any, cov0: Any, *, horizon: float = 1.0) -> Any:
    """The finite-depth margins m_ℓ(τ) (`horizon_margin`) of the attention layers of a
    transformers encoder, from reference covariances.

    Layer ℓ's heads are read as `encoder_margins` reads them (B_h = s W_K,hᵀ W_Q,h,
    V_h = W_O,h W_V,h, A = 0: the residual stream), and

        m_ℓ(τ) = 1 − 2 κ_ℓ ‖Σ_ℓ‖₂ τ,

    the A = 0 case of `horizon_margin`: m_ℓ(τ) > 0 certifies that no start of spectral norm at
    most ‖Σ_ℓ‖₂ blows up within the depth τ under layer ℓ's attention flow. Any hidden size.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A BERT-family or ViT/DeiT encoder, as for `encoder_margins` (any hidden size).
    cov0 : (d, d) tensor or array_like, or an (L, d, d) tensor or a sequence of L of them
        The reference covariance of every layer, or one per layer (e.g. the covariances the
        layers' attention receives, `riccati_tf.empirical.encoders.predict_moments`), in the
        model's dtype.
    horizon : float, optional
        The depth τ > 0 of one layer (default 1).

    Returns
    -------
    torch.Tensor
        Shape (n_layers,): m_ℓ(τ) per encoder layer, first to last, with the autograd graph of
        the weights.

    Raises
    ------
    InvalidInputError
        For a model `encoder_margins` refuses (except for its size limit), a sequence of cov0
        whose length is not the number of layers, and as `horizon_margin` raises.
    ImportError
        Without torch.

    See Also
    --------
    horizon_margin : the margin of one layer, with its theorem.
    encoder_margins : the start- and depth-independent margins.

    Notes
    -----
    LayerNorm, biases and the feed-forward block do not enter: the margin is that of the
    attention flow, as in `encoder_margins`.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> import torch
    >>> from riccati_tf.empirical.encoders.tiny import tiny_encoder
    >>> from riccati_tf.design.margin import encoder_horizon_margins
    >>> model = tiny_encoder("bert", hidden_size=8, n_heads=2, n_layers=2)
    >>> m = encoder_horizon_margins(model, torch.eye(8, dtype=torch.float64))
    >>> tuple(m.shape), m.requires_grad, bool((m <= 1).all())
    ((2,), True, True)
    """
    import torch

    layers = _encoder_heads(model, None)
    per_layer = (cov0.ndim == 3 if isinstance(cov0, torch.Tensor)
                 else isinstance(cov0, Sequence) and len(cov0) > 0
                 and torch.as_tensor(cov0[0]).ndim == 2)
    if per_layer and len(cov0) != len(layers):
        raise InvalidInputError(f"cov0 holds {len(cov0)} covariances for {len(layers)} layers")
    covs = list(cov0) if per_layer else [cov0] * len(layers)
    return torch.stack([horizon_margin(heads, S, horizon=horizon)
                        for heads, S in zip(layers, covs, strict=True)])


def _encoder_heads(model: Any, max_d: int | None) -> list[list[tuple[Any, Any, Any, Any]]]:
    """Per encoder layer the heads (s W_Q,h, W_K,h, W_V,h, W_O,h) as views of the weights."""
    config: Any = getattr(model, "config", None)
    family = getattr(config, "model_type", None)
    if family not in _FAMILIES:
        raise InvalidInputError(f"model must be a transformers encoder of type {_FAMILIES}, "
                                f"got {type(model).__name__} (model_type {family!r})")
    n_heads, d = int(config.num_attention_heads), int(config.hidden_size)
    if d % n_heads or (max_d is not None and d > max_d):
        raise InvalidInputError(f"hidden size {d} must be a multiple of the {n_heads} heads"
                                + ("" if max_d is None else f" and ≤ MAX_MARGIN_D = {max_d}"))
    d_h = d // n_heads
    out = []
    for q, k, v, o, scale in attention_layers(model):
        out.append([(scale * q.weight[r], k.weight[r], v.weight[r], o.weight[:, r])
                    for r in (slice(h * d_h, (h + 1) * d_h) for h in range(n_heads))])
    return out
