"""Dense attention heads of low numerical rank, applied through their factors.

A dense head (V_h, B_h) whose matrices have numerical rank s, r ≤ d/2 is the factored head

    V_h = O_h W_h   (O_h d×s, W_h s×d),      B_h = K_hᵀ Q_h   (K_h, Q_h r×d),

up to a truncation ‖V_h − O_hW_h‖_F ≤ FACTOR_RTOL ‖V_h‖_F (likewise for B_h), a perturbation
of rounding size. Its share V_hΣB_h of M = A + Σ_h V_hΣB_h then costs O(d²(s + r)) instead of
the 2d³ of two dense products (`Params.stack`). The factors come from LAPACK's pivoted QR
(column pivoting reveals the numerical rank: the Frobenius norm of the trailing rows of R is
the truncation error). `value_factors` splits a layer's value matrices this way for the
equilibrium solver's linearisation; `factored_layer` rewrites a layer for the flows.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from functools import lru_cache
from typing import NamedTuple

import numpy as np
from scipy.linalg import lapack, qr

from .params import Head, HeadEntry, Params

__all__ = ["FACTOR_MIN_D", "FACTOR_RTOL", "factored_layer", "low_rank_factors"]

#: a dense matrix is applied through factors U W (pivoted QR) when ‖M − UW‖_F ≤
#: FACTOR_RTOL ‖M‖_F with at most d/2 columns
FACTOR_RTOL = 4 * np.finfo(float).eps
#: the flows factor a layer's dense heads (`factored_layer`) from this d on, where the two
#: pivoted QRs per head cost about as much as the factors save in two DOP853 steps (25–30
#: right-hand sides at d = 64 with rank-d/8 heads, 80–120 at d = 32: `python -m
#: benchmarks.factored`, (d))
FACTOR_MIN_D = 64


def low_rank_factors(M: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Factors M = UW + E of at most d/2 columns, with ‖E‖_F ≤ FACTOR_RTOL ‖M‖_F, or None.

    A square M whose symmetric part S satisfies S ≻ τI or S ≺ −τI, τ = (FACTOR_RTOL + 2d eps)
    ‖M‖_F (one Cholesky factorisation of ±S − τI, 2d eps covering its backward error), is
    refused at once: |xᵀMx| ≥ τ for unit x, so σ_min(M) ≥ τ > FACTOR_RTOL ‖M‖_F and no
    truncation is within tolerance. Otherwise, from LAPACK's pivoted QR MP = QR (P a
    permutation) of M scaled by a power of two to entries below 1 (exact; no square of R's
    entries overflows): E = −Q[:, k:] R[k:, :] Pᵀ, so ‖E‖_F = ‖R[k:, :]‖_F, and k is the least
    number of leading rows whose complement has at most FACTOR_RTOL ‖M‖_F = FACTOR_RTOL ‖R‖_F
    in Frobenius norm; U = Q[:, :k], W = R[:k, :] Pᵀ.

    Parameters
    ----------
    M : (d, n) ndarray of float
        A finite matrix (a head's V_h or B_h).

    Returns
    -------
    tuple of ndarray or None
        (U, W) with U d×k orthonormal columns and W k×n, 1 ≤ 2k ≤ d; None when the numerical
        rank k exceeds d/2 (the factors would not pay) or M = 0.

    Raises
    ------
    ValueError
        When M is not finite (LAPACK's QR refuses NaN and Inf).

    See Also
    --------
    factored_layer : rewrites a layer's dense heads with these factors.
    riccati_tf.Head : a head given by its factors.

    References
    ----------
    .. [1] G. H. Golub and C. F. Van Loan, "Matrix Computations", 4th ed., §5.4.2 (QR with
       column pivoting), Johns Hopkins, 2013.

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.state.lowrank import low_rank_factors
    >>> rng = np.random.default_rng(0)
    >>> M = rng.standard_normal((8, 2)) @ rng.standard_normal((2, 8))
    >>> U, W = low_rank_factors(M)
    >>> U.shape, W.shape, bool(np.linalg.norm(M - U @ W) <= 1e-14 * np.linalg.norm(M))
    ((8, 2), (2, 8), True)
    >>> low_rank_factors(rng.standard_normal((8, 8))) is None
    True
    """
    d = M.shape[0]
    top = np.abs(M).max(initial=0.0)
    if top == 0:
        return None
    e = int(np.frexp(top)[1])  # M 2^−e has entries below 1 in magnitude: R's squares stay finite
    Ms = np.ldexp(M, -e)
    margin = (FACTOR_RTOL + 2 * d * float(np.finfo(float).eps)) * float(np.linalg.norm(Ms))
    if M.shape[1] == d and _definite(0.5 * (Ms + Ms.T), margin):
        return None  # σ_min(M) ≥ |λ|_min of its symmetric part: no truncation within tolerance
    Q, R, perm = qr(Ms, pivoting=True, mode="economic")
    tail = np.sqrt(np.cumsum(np.sum(R ** 2, axis=1)[::-1])[::-1])  # ‖R[k:, :]‖_F
    k = int(np.sum(tail > FACTOR_RTOL * tail[0]))
    if k == 0 or 2 * k > d:
        return None
    W = np.empty((k, M.shape[1]))
    W[:, perm] = np.ldexp(R[:k], e)
    return Q[:, :k], W


def _definite(S: np.ndarray, shift: float) -> bool:
    """Whether S − shift·I or −S − shift·I is positive definite (LAPACK's Cholesky succeeds)."""
    eye = shift * np.eye(S.shape[0])
    return any(lapack.dpotrf(X - eye, lower=1, clean=0)[1] == 0 for X in (S, -S))


class ValueFactors(NamedTuple):
    """The heads split by how V_h is applied: `dense` (indices), and `factored` (indices) with
    V_h = O[:, rows_i] W[rows_i] stacked, O d×S and W S×d, rows_i the slice of head factored[i]."""

    dense: tuple[int, ...]
    factored: tuple[int, ...]
    O: np.ndarray
    W: np.ndarray
    rows: tuple[slice, ...]

    def apply(self, left: np.ndarray, top: np.ndarray, rights: Sequence[np.ndarray],
              post: np.ndarray | None = None) -> np.ndarray:
        """left · [top[rows_i] · rights[i]]_i (stacked over the factored heads, times `post`
        before `left` when given): Σ_i left_i top_i rights[i] (post) in O(S d²)."""
        U = np.vstack([top[r] @ R for r, R in zip(self.rows, rights, strict=True)])
        return left @ (U if post is None else U @ post)


@lru_cache(maxsize=8)
def value_factors(params: Params) -> ValueFactors:
    """Factors V_h = O_hW_h of s_h ≤ d/2 columns — a `Head`'s (O, V), or a dense V_h's
    `low_rank_factors` — stacked (`ValueFactors`); the other heads stay dense. V_hX = O_h(W_hX)
    then costs O(s_h d²) instead of O(d³)."""
    d = params.d
    dense: list[int] = []
    factored: list[int] = []
    Os: list[np.ndarray] = []
    Ws: list[np.ndarray] = []
    for h, entry in enumerate(params.factors):
        if entry is not None and 2 * entry.V.shape[0] <= d:
            factors: tuple[np.ndarray, np.ndarray] | None = (entry.O, entry.V)
        else:  # a factored head's V_h formed here and dropped, not kept as its dense pair
            factors = low_rank_factors(params.heads[h][0] if entry is None else
                                       entry.O @ entry.V)
        if factors is None:
            dense.append(h)
            continue
        factored.append(h)
        Os.append(factors[0])
        Ws.append(factors[1])
    ends = np.cumsum([0] + [W.shape[0] for W in Ws])
    rows = tuple(slice(int(i), int(j)) for i, j in itertools.pairwise(ends))
    O = np.hstack(Os) if Os else np.zeros((d, 0))
    W = np.vstack(Ws) if Ws else np.zeros((0, d))
    return ValueFactors(tuple(dense), tuple(factored), O, W, rows)


@lru_cache(maxsize=8)
def factored_layer(params: Params, *, bias: bool = True) -> Params:
    """The layer with every dense head of low numerical rank given by its factors.

    A dense head whose V_h = O_hW_h has s_h ≤ d/2 columns (`low_rank_factors`) becomes
    Head(Q_h, K_h, W_h, O_h), with B_h = K_hᵀQ_h from `low_rank_factors` when B_h has rank
    r_h ≤ d/2, else Q_h = B_h and K_h = I (the product with I is skipped); its share of
    M = A + Σ_h V_hΣB_h then costs about 2d²(s_h + r_h) instead of 2d³, and each factored
    matrix is within FACTOR_RTOL relative (Frobenius) of the given one. `Head` entries and the
    other dense heads are kept. The result is cached per layer (a layer integrated again is not
    factorised again).

    Parameters
    ----------
    params : Params
        The layer.
    bias : bool, optional
        Keep b (default True); False drops it, for integrations of Σ alone.

    Returns
    -------
    Params
        The rewritten layer (the given one when nothing changes).

    Raises
    ------
    ValueError
        When a head's matrix is not finite (a `Params` holds finite arrays only).

    See Also
    --------
    low_rank_factors : the factors of one matrix.
    riccati_tf.flow : integrates through this layer from d = FACTOR_MIN_D on (method "rk").

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures"
       (multi-head attention, B_h = W_Q,hᵀW_K,h of rank d_h).

    Examples
    --------
    A head of rank 2 given densely in d = 8 becomes a factored head with the same moment
    equations:

    >>> import numpy as np
    >>> from riccati_tf import Gaussian, Params, moment_rhs
    >>> from riccati_tf.state.lowrank import factored_layer
    >>> rng = np.random.default_rng(1)
    >>> V = rng.standard_normal((8, 2)) @ rng.standard_normal((2, 8))
    >>> B = rng.standard_normal((8, 2)) @ rng.standard_normal((2, 8))
    >>> p = Params(-np.eye(8), heads=[(V, B)])
    >>> q = factored_layer(p)
    >>> q.factors[0].Q.shape, q.factors[0].V.shape
    ((2, 8), (2, 8))
    >>> g = Gaussian(np.ones(8), np.eye(8))
    >>> bool(np.allclose(moment_rhs(q, g)[1], moment_rhs(p, g)[1], rtol=1e-13, atol=0))
    True
    """
    vf = value_factors(params)
    todo = [(h, rows) for h, rows in zip(vf.factored, vf.rows, strict=True)
            if params.factors[h] is None]
    if not todo and (bias or not np.any(params.b)):
        return params
    entries: list[HeadEntry] = [head if head is not None else params.heads[h]
                                for h, head in enumerate(params.factors)]
    for h, rows in todo:
        B = params.heads[h][1]
        keys = low_rank_factors(B)
        Q, K = (B, np.eye(params.d)) if keys is None else (keys[1], keys[0].T)
        entries[h] = Head(Q, K, vf.W[rows], vf.O[:, rows])
    return Params(params.A, b=params.b if bias else None, heads=entries)
