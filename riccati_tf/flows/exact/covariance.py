"""The covariance in square-root steps (SPEC §5): the Van Loan exponentials E_s = e^{As} and
W(s) = ∫_0^s e^{Aᵀu} G e^{Au} du (walked node to node for the mean's collocation), the step
rule, the factor of Σ0, the update Σ(t + s) = E_s L S(s)⁻¹ Lᵀ E_sᵀ with S(s) = I + Lᵀ W(s) L
and the certification that S stays non-singular inside a step (see `riccati_tf.flows.exact`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cached_property

import numpy as np
import numpy.typing as npt
from scipy.linalg import expm, lapack
from scipy.optimize import brentq

from ...errors import SolverError
from .gauss import gauss_tableau

__all__: list[str] = []  # van_loan is documented as riccati_tf.flows.exact.van_loan

EPS = np.finfo(float).eps
#: covariance steps satisfy e^{(μ(A) + μ(−A))h} ≤ STEP_KAPPA (conditioning of the Van Loan step)
#: and e^{max(|μ(A)|, |μ(−A)|)h} ≤ STEP_KAPPA (growth of E_h and W(h) in one step)
STEP_KAPPA = 1e3
#: and ‖A‖_F h ≤ STEP_NORM (accuracy of e^{Ah} itself, for rotations)
STEP_NORM = 64.0
#: the mean's node exponentials are walked from 0 in increments with ‖M‖₂Δ ≤ CHAIN_THETA (M the
#: Van Loan block, `_Propagator._chain`), each from the Taylor series cut after CHAIN_TERMS terms
#: (remainder ≤ e/(N + 1)! ≈ 1e-17 at θ = 1), unless that takes more than CHAIN_POINTS increments
#: (then one block exponential per node)
CHAIN_THETA = 1.0
CHAIN_TERMS = 18
CHAIN_POINTS = 64
#: bisection depth limits when certifying that S(s) = I + LᵀW(s)L stays positive definite
BRENT_DEPTH = 10
MAX_REFINE = 40
#: work bounds of one step's certification (intervals examined) and of Brent's method
MAX_SCAN_NODES = 4096
BRENT_MAXITER = 200
#: Σ0's factor keeps a pivot p_k of the (pivoted) Cholesky factorisation when
#: p_k² > FACTOR_ROUNDING · d · eps · (Σ0)_kk, the rounding error of the pivot's own cancellation
FACTOR_ROUNDING = 4.0


def van_loan(A: np.ndarray, G: np.ndarray,
             s: float | npt.ArrayLike) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """E = e^{As} and W(s) = ∫_0^s e^{Aᵀu} G e^{Au} du for a scalar s or an array of offsets.

    W(s) is the Gramian of the closed form Σ(t) = e^{At} Σ0 (I + W(t) Σ0)⁻¹ e^{Aᵀt} of
    Σ̇ = AΣ + ΣAᵀ − ΣGΣ (SPEC §5). Both come from one block exponential (Van Loan):

        expm([[−Aᵀ, G], [0, A]] s) = [[e^{−Aᵀs}, F], [0, e^{As}]],   W(s) = e^{Aᵀs} F,

    W symmetrised. Accurate while ‖A‖s is moderate (the flow steps by `step_length`).

    Parameters
    ----------
    A : (d, d) ndarray of float
        The drift matrix.
    G : (d, d) ndarray of float, symmetric
        The quadratic coefficient, G = −Σ_h v_h (B_h + B_hᵀ).
    s : float or (k,) array_like of float
        An offset, or k offsets.

    Returns
    -------
    E : (d, d) or (k, d, d) ndarray of float64
        e^{As} at each offset.
    W : (d, d) or (k, d, d) ndarray of float64
        W(s) at each offset, symmetric.

    Raises
    ------
    ValueError
        When A and G are not square of one size (the block matrix cannot be formed).

    See Also
    --------
    exact_flow : the flow stepped with these exponentials.
    riccati_tf.sweep.van_loan_stack : the same for a stack of matrices.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".
    .. [2] C. F. Van Loan, "Computing integrals involving the matrix exponential", IEEE TAC
       23(3), 1978.

    Examples
    --------
    For d = 1, A = −1 and G = 2: E = e^{−s} and W(s) = 1 − e^{−2s}.

    >>> import numpy as np
    >>> from riccati_tf.flows.exact import van_loan
    >>> E, W = van_loan(np.array([[-1.0]]), np.array([[2.0]]), 1.0)
    >>> round(float(E[0, 0]), 6), round(float(W[0, 0]), 6)
    (0.367879, 0.864665)
    >>> E, W = van_loan(np.array([[-1.0]]), np.array([[2.0]]), [0.5, 1.0])
    >>> W.shape
    (2, 1, 1)
    """
    E, W, _ = _van_loan_blocks(A, G, np.atleast_1d(np.asarray(s, dtype=float)))
    return (E[0], W[0]) if np.ndim(s) == 0 else (E, W)


def _van_loan_blocks(A: np.ndarray, G: np.ndarray,
                     s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(E, W, E⁻¹) stacked at the offsets s, from the Van Loan block exponential."""
    d = A.shape[0]
    block = np.zeros((2 * d, 2 * d))
    block[:d, :d] = -A.T
    block[:d, d:] = G
    block[d:, d:] = A
    return _van_loan_split(expm(block[None] * s[:, None, None]))


def _van_loan_split(F: np.ndarray, gamma: float = 1.0
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(E, W, E⁻¹) from stacked F = expm([[−Aᵀ, G/γ], [0, A]] s): E = F₂₂, E⁻¹ = F₁₁ᵀ and
    W = γ E ᵀF₁₂, symmetrised."""
    d = F.shape[-1] // 2
    E = F[:, d:, d:]
    W = np.swapaxes(E, -1, -2) @ F[:, :d, d:]
    if gamma != 1.0:
        W *= gamma
    return E, 0.5 * (W + np.swapaxes(W, -1, -2)), np.swapaxes(F[:, :d, :d], -1, -2)


class _Propagator:
    """Cached Van Loan data: (E, W) at the collocation offsets of a step, at single offsets, and
    W₋(s) = ∫_0^s e^{Aᵀu} G₋ e^{Au} du for the negative part G₋ ⪰ 0 of G = G₊ − G₋."""

    def __init__(self, A: np.ndarray, G: np.ndarray,
                 positive_definite: bool | None = None) -> None:
        self.A, self.G = A, G
        if positive_definite is None:
            positive_definite = _positive_definite(G)
        if positive_definite:  # G ≻ 0: S(s) ⪰ I, no blow-up (SPEC §5)
            self.G_minus, self.monotone = np.zeros_like(G), False
        else:
            eig, vec = np.linalg.eigh(G)
            self.G_minus = (vec * np.clip(-eig, 0.0, None)) @ vec.T
            self.monotone = not np.any(eig > 0)  # G ⪯ 0: λ_min(S(s)) decreases with s
        #: G ⪰ 0 as computed (W(s) ⪰ 0, S(s) ⪰ I)
        self.semidefinite = not np.any(self.G_minus)
        #: ‖W(H)‖_F per step length H (the rounding scale of a step)
        self.w_norms: dict[float, float] = {}
        self._cache: dict[tuple, tuple[np.ndarray, ...]] = {}

    def _get(self, key: tuple, make: Callable[[], tuple[np.ndarray, ...]]
             ) -> tuple[np.ndarray, ...]:
        if key not in self._cache:
            if len(self._cache) > 512:
                self._cache.clear()
            self._cache[key] = make()
        return self._cache[key]

    def nodes(self, s: int, h: float) -> tuple[np.ndarray, ...]:
        """(E, W) stacked at the offsets c_1 h, ..., c_s h, h of the s-stage Gauss nodes c.

        Block exponentials at c_1 h, ..., c_{s/2} h, and at h from `at` (shared by the pairs
        and the covariance step of the same length); the mirrored nodes (1 − c) h follow
        from the semigroup: E_{(1−c)h} = E_h E_{ch}⁻¹ and
        W_{(1−c)h} = E_{ch}⁻ᵀ (W_h − W_{ch}) E_{ch}⁻¹.
        """
        return self._get(("nodes", s, h), lambda: self._nodes(s, h))

    def _nodes(self, s: int, h: float) -> tuple[np.ndarray, np.ndarray]:
        c = gauss_tableau(s)[0]
        half = s // 2
        Eq, Wq, Iq = self._chain(c[:half] * h)
        Eh, Wh = self.at(h)
        E_up = (Eh @ Iq)[::-1]
        W_up = (np.swapaxes(Iq, -1, -2) @ (Wh - Wq) @ Iq)[::-1]
        W_up = 0.5 * (W_up + np.swapaxes(W_up, -1, -2))
        return np.concatenate([Eq, E_up, Eh[None]]), np.concatenate([Wq, W_up, Wh[None]])

    def _chain(self, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(E, W, E⁻¹) at the increasing offsets, from the Van Loan block exponential
        F(τ) = expm(M τ), M = [[−Aᵀ, G/γ], [0, A]], walked from 0 by the semigroup
        F(a + Δ) = F(a) F(Δ).

        Every increment's F(Δ) comes from one set of Taylor terms (`_taylor`), increments split
        so that θ = ‖M‖₂Δ ≤ CHAIN_THETA (G scaled by a power of two γ so that ‖G‖_F/γ ≤ ‖A‖₂:
        W(τ) = γ E_τᵀF₁₂(τ) is exact in the scaling). One block exponential per offset
        (`_van_loan_blocks`) when that takes more than CHAIN_POINTS increments."""
        gamma, norm = self._chain_scale
        gaps = np.diff(offsets, prepend=0.0)
        counts = np.maximum(1.0, np.ceil(norm * gaps / CHAIN_THETA))
        if not counts.sum() <= CHAIN_POINTS:  # (NaN/inf for huge A: not walked either)
            return _van_loan_blocks(self.A, self.G, offsets)
        pieces = counts.astype(int)
        steps = np.repeat(gaps / pieces, pieces)
        d2 = 2 * self.A.shape[0]
        P, unit = self._taylor
        F_step = (((steps / unit)[:, None] ** np.arange(CHAIN_TERMS + 1)) @ P).reshape(-1, d2, d2)
        ends = set((np.cumsum(pieces) - 1).tolist())
        F, out = np.eye(d2), []
        for j in range(steps.size):
            F = F @ F_step[j]
            if j in ends:
                out.append(F)
        return _van_loan_split(np.stack(out), gamma)

    @cached_property
    def _chain_scale(self) -> tuple[float, float]:
        """(γ, ‖M‖₂ or its bound ‖A‖₂ + ‖G‖_F/γ) for the block M = [[−Aᵀ, G/γ], [0, A]] of
        `_chain`; the bound is 0 for A = 0 (then M² = 0: every increment in one piece)."""
        norm_A = _norm2(self.A)
        big = float(np.abs(self.G).max()) if self.G.size else 0.0
        norm_G = big * float(np.linalg.norm(self.G / big)) if big > 0 else 0.0  # no overflow
        gamma = 1.0  # 2^k ≥ ‖G‖_F/‖A‖₂, from the binary exponents (the ratio may overflow)
        if norm_G > norm_A > 0:
            gamma = math.ldexp(1.0, min(math.frexp(norm_G)[1] - math.frexp(norm_A)[1] + 1, 1000))
        return gamma, (norm_A + norm_G / gamma if norm_A > 0 else 0.0)

    @cached_property
    def _taylor(self) -> tuple[np.ndarray, float]:
        """(rows k = 0..CHAIN_TERMS of (Mu)^k/k! flattened, u) for the block M of `_chain` and
        the power of two u ≈ 1/‖M‖₂ (1 for A = 0): F(Δ) = Σ_k (Mu)^k (Δ/u)^k/k!, no power
        overflowing, with a remainder below e·θ^{N+1}/(N + 1)! ≤ 1e-17 at θ = ‖M‖Δ ≤ 1
        (N = CHAIN_TERMS)."""
        A, d = self.A, self.A.shape[0]
        gamma, norm = self._chain_scale
        unit = math.ldexp(1.0, -math.frexp(norm)[1]) if norm > 0 else 1.0
        block = np.zeros((2 * d, 2 * d))
        block[:d, :d], block[:d, d:], block[d:, d:] = -A.T, self.G / gamma, A
        block *= unit
        P = np.empty((CHAIN_TERMS + 1, 2 * d, 2 * d))
        P[0] = np.eye(2 * d)
        for k in range(CHAIN_TERMS):
            np.matmul(P[k], block / (k + 1), out=P[k + 1])
        return P.reshape(CHAIN_TERMS + 1, -1), unit

    def at(self, s: float) -> tuple[np.ndarray, ...]:
        return self._get(("at", s), lambda: van_loan(self.A, self.G, s))

    def w_norm(self, H: float) -> float:
        """‖W(H)‖_F (cached)."""
        if H not in self.w_norms:
            flat = self.at(H)[1].ravel()
            self.w_norms[H] = math.sqrt(float(flat @ flat))
        return self.w_norms[H]

    def w_minus(self, s: float) -> np.ndarray:
        return self._get(("minus", s), lambda: van_loan(self.A, self.G_minus, s))[1]


def _first_singular_offset(prop: _Propagator, L: np.ndarray, H: float,
                           t0: float = 0.0) -> float | None:
    """First s in (0, H] at which S(s) = I + Lᵀ W(s) L is singular, or None.

    An interval [a, b] is certified free of singularity when S(a) − (E_a L)ᵀ W₋(b − a) (E_a L) ≻ 0
    (Cholesky), because W(s) − W(a) = E_aᵀ W(s − a) E_a ⪰ −E_aᵀ W₋(b − a) E_a for s in [a, b].
    Uncertified intervals are bisected; a sign change of λ_min(S) is then refined by Brent's
    method (directly when G ⪯ 0, where λ_min(S) is monotone). A dip of λ_min(S) to within
    rounding of zero that does not cross it is reported as no blow-up. At most MAX_SCAN_NODES
    intervals are examined and Brent's method takes at most BRENT_MAXITER iterations; a
    bracket whose left end is not positive (the sign of λ_min(S) flips at rounding level)
    cannot be trusted. Each of these raises SolverError (t0: the step's start, for messages).
    """
    r = L.shape[1]
    eye = np.eye(r)
    nodes = [0]

    def S_at(s):
        E, W = prop.at(s)
        return E, eye + L.T @ W @ L

    def lam(s):
        return float(np.linalg.eigvalsh(S_at(s)[1])[0])

    def certified(Ea, Sa, length):
        EL = Ea @ L
        return _positive_definite(Sa - EL.T @ prop.w_minus(length) @ EL)

    def root(a, Sa, b):
        if not np.linalg.eigvalsh(Sa)[0] > 0:
            raise SolverError(
                f"λ_min(I + LᵀW(s)L) is not positive at t = {t0 + a:.12g} although no earlier "
                f"singularity was located: its sign is decided by rounding there, so the "
                f"blow-up time is not determined")
        try:
            # relative precision at the root itself (a blow-up at 1e-150 is located to 4 eps)
            return brentq(lam, a, b, xtol=4 * EPS * a + 2 * np.finfo(float).tiny, rtol=4 * EPS,
                          maxiter=BRENT_MAXITER)
        except (ValueError, RuntimeError) as exc:  # no sign change / no convergence
            raise SolverError(f"Brent's method could not locate the blow-up in "
                              f"[{t0 + a:.12g}, {t0 + b:.12g}]: {exc}") from None

    def scan(a, Ea, Sa, b, depth):
        nodes[0] += 1
        if nodes[0] > MAX_SCAN_NODES:
            raise SolverError(
                f"could not certify I + LᵀW(s)L ≻ 0 on the step from t = {t0:.6g} within "
                f"{MAX_SCAN_NODES} sub-intervals: λ_min stays within rounding of zero, so "
                f"whether Σ blows up there is not determined")
        if certified(Ea, Sa, b - a):
            return None
        _, Sb = S_at(b)
        if not np.all(np.isfinite(Sb)):
            raise SolverError(f"I + LᵀW(s)L overflows on the step from t = {t0:.6g}")
        if np.linalg.eigvalsh(Sb)[0] <= 0 and (prop.monotone or depth >= BRENT_DEPTH):
            return root(a, Sa, b)
        if depth >= MAX_REFINE:
            return None
        mid = 0.5 * (a + b)
        Em, Sm = S_at(mid)
        left = scan(a, Ea, Sa, mid, depth + 1)
        return left if left is not None else scan(mid, Em, Sm, b, depth + 1)

    return scan(0.0, np.eye(L.shape[0]), eye, H, 0)


def _norm2(M: np.ndarray) -> float:
    """‖M‖₂ = σ_max(M) of a square M, inf when M is not finite.

    σ_max = √λ_max(NᵀN)/c with N = cM, c a power of two that brings the largest entry of M
    into [1/2, 1) (NᵀN neither overflows nor underflows, and the scaling is exact); λ_max alone
    by LAPACK's dsyevr, to about eps relative: half the cost of a full SVD at d = 32."""
    if not M.size:
        return 0.0
    big = float(np.abs(M).max())
    if not math.isfinite(big):
        return math.inf
    if big == 0:
        return 0.0
    e = math.frexp(big)[1]
    N = np.ldexp(M, -e)  # c = 2^−e (itself out of range for subnormal or huge M)
    n = M.shape[0]
    w, _, _, _, info = lapack.dsyevr(N.T @ N, compute_v=0, range="I", il=n, iu=n)
    if info != 0:  # (LAPACK did not converge: the SVD)
        return float(np.linalg.norm(M, 2))
    return math.ldexp(math.sqrt(max(float(w[0]), 0.0)), e)


def _positive_definite(M: np.ndarray) -> bool:
    """Whether the symmetric M is positive definite (LAPACK Cholesky succeeds)."""
    return M.size > 0 and lapack.dpotrf(M, lower=1, clean=0)[1] == 0


def _factor(cov: np.ndarray) -> np.ndarray:
    """A factor L (d×r, full column rank) with L Lᵀ = Σ0 that keeps every positive direction the
    data determine, however small its variance.

    The k-th pivot of a Cholesky factorisation is p_k² = (Σ0)_kk − Σ_{j<k} L_kj², computed with
    an error of at most about k·eps·(Σ0)_kk (the subtracted squares sum to at most (Σ0)_kk).
    When LAPACK's Cholesky succeeds with every p_k² > FACTOR_ROUNDING·d·eps·(Σ0)_kk it is used
    as it is: a diagonal Σ0 = diag(1, 1e-16) keeps its 1e-8 pivot, as does any variance that is
    not the residue of a cancellation. Otherwise `_pivoted_factor` takes, among the rows whose
    remaining diagonal still stands above that bound, the largest, and stops when none does.
    What it drops is at the level of the rounding of its own cancellation — a direction that a
    covariance computed in floating point (uuᵀ, LLᵀ, a flow's output) acquires or loses by
    rounding, and whose sign floating point cannot tell — so that
    |L Lᵀ − Σ0|_ij ≲ d·eps·√((Σ0)_ii (Σ0)_jj) entry by entry. (psd_factor's truncation at
    d·eps·λ_max instead dropped representable small variances such as 1e-16 beside 1.)
    """
    d = cov.shape[0]
    if d == 0:
        return np.zeros((0, 0))
    C, info = lapack.dpotrf(cov, lower=1, clean=1)
    if info == 0:
        p = C.diagonal()
        if (p * p > FACTOR_ROUNDING * d * EPS * cov.diagonal()).all():
            return C
    return _pivoted_factor(cov)


def _pivoted_factor(cov: np.ndarray) -> np.ndarray:
    """Pivoted Cholesky in floats, stopping when no remaining diagonal stands above the
    cancellation bound FACTOR_ROUNDING·d·eps·(Σ0)_kk of `_factor` (d×r factor)."""
    d = cov.shape[0]
    floor = FACTOR_ROUNDING * d * EPS * np.diag(cov)
    R = cov.copy()
    cols = []
    for _ in range(d):
        dg = np.diag(R)
        ok = (dg > floor) & (floor > 0)
        if not ok.any():
            break
        j = int(np.argmax(np.where(ok, dg, -np.inf)))
        col = R[:, j] / np.sqrt(dg[j])
        col[j] = np.sqrt(dg[j])
        R -= np.outer(col, col)
        R[j, :] = R[:, j] = 0.0
        cols.append(col)
    return np.stack(cols, axis=1) if cols else np.zeros((d, 0))


def _symmetric_spectrum(A: np.ndarray) -> tuple[float, float]:
    eig = np.linalg.eigvalsh(0.5 * (A + A.T))
    return (float(eig[0]), float(eig[-1])) if eig.size else (0.0, 0.0)


def step_length(A: np.ndarray) -> float:
    """Longest step h with e^{(μ(A) + μ(−A))h} ≤ STEP_KAPPA, μ(A) = λ_max((A + Aᵀ)/2)."""
    lo, hi = _symmetric_spectrum(A)
    spread = hi - lo
    return float(np.log(STEP_KAPPA) / spread) if spread > 0 else np.inf


def growth_step(A: np.ndarray) -> float:
    """Longest step h with e^{max(|μ(A)|, |μ(−A)|) h} ≤ STEP_KAPPA: ‖e^{±Ah}‖₂ ≤ STEP_KAPPA and
    ‖W(h)‖₂ ≤ ‖G‖₂ h STEP_KAPPA², so one step neither overflows nor loses E_h to underflow."""
    lo, hi = _symmetric_spectrum(A)
    rate = max(abs(lo), abs(hi))
    return float(np.log(STEP_KAPPA) / rate) if rate > 0 else np.inf


def _step_rule(A: np.ndarray) -> tuple[float, float]:
    """(h, κ): the step min(step_length, growth_step, STEP_NORM/‖A‖_F) from one
    eigen-decomposition, and the bound κ = e^{(μ(A) + μ(−A))h} ≤ STEP_KAPPA on its Van Loan
    conditioning. The last bound matters where the symmetric part of A is small beside its
    skew part (rotations): e^{Ah} is computed to about eps‖A‖h, so a rotation by 1e15 rad in one
    exponential would be meaningless."""
    lo, hi = _symmetric_spectrum(A)
    rate, spread = max(abs(lo), abs(hi)), hi - lo
    flat = A.ravel()
    norm = math.sqrt(float(flat @ flat))
    h = min(np.log(STEP_KAPPA) / spread if spread > 0 else np.inf,
            np.log(STEP_KAPPA) / rate if rate > 0 else np.inf,
            STEP_NORM / norm if norm > 0 else np.inf)
    return float(h), (math.exp(spread * h) if np.isfinite(h) else 1.0)


def _sqrt_update(EL: np.ndarray, W: np.ndarray, L: np.ndarray) -> np.ndarray:
    """L⁺ = E L C⁻ᵀ with C Cᵀ = I + Lᵀ W L (lower Cholesky), given EL = E L."""
    return _sqrt_factor(EL, W, L)[0]


def _sqrt_factor(EL: np.ndarray, W: np.ndarray, L: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray | None]:
    """(L⁺, C) of `_sqrt_update`; C is None when L has no column."""
    if not L.shape[1]:
        return EL, None
    S = L.T @ (W @ L)
    S.flat[:: S.shape[0] + 1] += 1.0
    C, info = lapack.dpotrf(S, lower=1, clean=1)  # NaN/Inf also end in info != 0
    if info != 0:
        if not np.all(np.isfinite(S)):
            raise SolverError("I + LᵀW(h)L overflows: Σ has left the floating-point range "
                              "(exponential growth, not a blow-up)")
        rounding = EPS * np.linalg.norm(W) * float(np.vdot(L, L))
        raise SolverError(f"I + LᵀW(h)L lost definiteness in a step where no blow-up was "
                          f"located: its rounding, about eps‖W(h)‖‖Σ‖ = {rounding:.2g}, is not "
                          f"small beside 1, so Σ is not determined by the data here (it is large "
                          f"along directions where G nearly vanishes)")
    return lapack.dtrtrs(C, EL.T, lower=1)[0].T, C


def _advance(prop: _Propagator, L: np.ndarray, H: float) -> tuple[np.ndarray, float]:
    """Σ = LLᵀ advanced by one covariance step H (one square-root update); returns (L, tr Y).

    tr Y ≥ ‖Y‖₂ (Y = L S⁻¹ Lᵀ, S = CCᵀ) bounds the step's rounding amplification (module
    docstring, "Ill-conditioned states"): with G ⪰ 0, S ⪰ I and Y ⪯ LLᵀ, so tr Y ≤ ‖L‖_F² is
    used; otherwise tr Y = ‖C⁻¹Lᵀ‖_F²."""
    E, W = prop.at(H)
    L_end, C = _sqrt_factor(E @ L, W, L)
    if C is None:
        return L_end, 0.0
    if prop.semidefinite:
        return L_end, float(np.vdot(L, L))
    Z = lapack.dtrtrs(C, L.T, lower=1)[0]
    return L_end, float(np.vdot(Z, Z))
