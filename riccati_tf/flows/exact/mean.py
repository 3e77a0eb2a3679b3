"""The mean: ṁ = K(t) m + b with K = A + v̄I + Σ(t)B̄ from the exact covariance, by
error-controlled Gauss–Legendre collocation (embedded pairs, sub-steps halved where K is large,
the stage systems swept with a frozen Jacobian; see `riccati_tf.flows.exact`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np
from numpy.linalg import inv
from scipy.linalg import lapack

from ...errors import SolverError
from .budget import _Budget
from .covariance import EPS, _norm2, _Propagator, _sqrt_update
from .gauss import gauss_eigen, gauss_tableau

__all__: list[str] = []

#: mean sub-steps satisfy ‖K‖₂ h ≤ MEAN_THETA at both ends (the reach of the largest pair)
MEAN_THETA = 6.0
#: the embedded Gauss–Legendre pairs of the mean: a sub-step with x = ‖K‖₂h (at both ends)
#: takes the first (x_max, s_lo, s_hi) with x ≤ x_max; its s_lo-stage step (order 2 s_lo) is
#: the error estimate of the s_hi-stage step (order 2 s_hi) that is kept
MEAN_PAIRS = ((0.25, 4, 6), (0.7, 6, 8), (1.4, 8, 10), (2.8, 10, 12), (MEAN_THETA, 14, 16))
#: sub-steps with output times inside give the means there from the kept step's collocation
#: polynomial, accurate to its stage order s + 1 only (not 2 s): DENSE_PAIRS as MEAN_PAIRS, for
#: sub-steps with ‖K‖₂ h ≤ DENSE_THETA at both ends, the pair's two polynomials compared at
#: those times as well
DENSE_THETA = 2.8
DENSE_PAIRS = ((0.35, 8, 10), (0.7, 10, 12), (1.4, 14, 16), (DENSE_THETA, 18, 20))
NO_TIMES = np.zeros(0)
#: a mean sub-step is accepted when its two steps agree to MEAN_RTOL·max(‖m‖∞, ‖m⁺‖∞, h‖b‖∞)
MEAN_RTOL = 1e-13
#: collocation steps one error-controlled sub-step costs (the pair's two steps)
MEAN_STEP_COST = 2
#: a covariance step is halved at most this often for the mean (h ≥ 2⁻⁶⁰⁰ H, enough for
#: ‖K‖ from 1e-150 to 1e150); a drift that would need more is refused
MAX_HALVINGS = 600
#: sweeps (Picard, then simplified Newton) for the collocation stages, their relative stopping
#: tolerance, and the contraction a Picard sweep must reach to be kept
NEWTON_ITERATIONS = 20
NEWTON_RTOL = 4 * EPS
PICARD_RATIO = 0.1
#: the frozen Jacobian K̄ of the Newton sweeps is inverted through its eigendecomposition
#: K̄ = Q diag(μ) Q⁻¹ while ‖Q‖_F ‖Q⁻¹‖_F ≤ EIGEN_KAPPA (rounding of a correction ≲ κ eps), else
#: one inverse per eigenvalue of the Gauss matrix
EIGEN_KAPPA = 1e6
#: stage systems of at most this many unknowns (s·d) are solved directly by LU unless the sweeps
#: start from a close guess: up to about this size one (s d)×(s d) solve costs less than the
#: sweeps' many small-array operations from zero
DIRECT_STAGE_SIZE = 128


@dataclass(frozen=True)
class _MeanLaw:
    """ṁ = K(t) m + b with K = A_v + Σ(t) B̄, A_v = A + v̄ I, ‖A_v‖₂ and ‖B̄‖_F ≥ ‖B̄‖₂ (an upper
    bound is all the settling tests need)."""

    Av: np.ndarray
    Bbar: np.ndarray
    b: np.ndarray
    norm_Av: float
    norm_Bbar: float = 0.0

    def norm_K(self, L: np.ndarray, h: float) -> float:
        """‖K‖₂ at Σ = L Lᵀ (inf when K overflows), or its upper bound
        ‖A_v‖₂ + ‖L‖_F²‖B̄‖_F where that times h already selects the first of MEAN_PAIRS
        (sub-steps of length h, dense output times, need no singular values)."""
        bound = self.norm_Av + float(np.vdot(L, L)) * self.norm_Bbar
        if bound * h <= MEAN_PAIRS[0][0]:
            return bound
        with np.errstate(over="ignore", invalid="ignore"):
            return _norm2(self.Av + L @ (L.T @ self.Bbar))  # (inf where K is not finite)


def _mean_law(A: np.ndarray, vbar: float, Bbar: np.ndarray, b: np.ndarray,
              mean0: np.ndarray) -> _MeanLaw | None:
    """ṁ = (A + v̄I + ΣB̄) m + b, or None when m ≡ 0 (m0 = 0 and b = 0)."""
    if not (np.any(mean0) or np.any(b)):
        return None
    Av = A + vbar * np.eye(A.shape[0])
    if not (np.all(np.isfinite(Av)) and np.all(np.isfinite(Bbar))):
        raise SolverError("A + v̄I or B̄ overflows: the mean's drift is out of range")
    return _MeanLaw(Av, Bbar, b, _norm2(Av),
                    math.sqrt(float(Bbar.ravel() @ Bbar.ravel())))


def _mean_step(prop: _Propagator, L: np.ndarray, m: np.ndarray, h: float, law: _MeanLaw,
               s: int, *, update: bool = True, start: tuple[int, np.ndarray] | None = None,
               frozen: _FrozenJacobian | None = None
               ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """Advance (m, L) by h: s-stage Gauss collocation for the mean, square-root update for
    Σ = LLᵀ (None unless `update`); returns (m⁺, L⁺, the stage increments Z).

    Collocation: stage increments Z_i = h Σ_j a_ij (K_j (m + Z_j) + b), K_j = K(t + c_j h) from
    the exact Σ(t + c_j h) = E_j L (I + Lᵀ W_j L)⁻¹ Lᵀ E_jᵀ; m⁺ = m + h Σ_j w_j (K_j (m + Z_j) + b).
    The linear stage system is solved directly when small (`_stages`), else by fixed-point
    sweeps while they contract fast, then by simplified Newton with the frozen K̄ = mean_j K_j,
    decoupled by a = T Λ T⁻¹ into solves with I − h λ_k K̄ (Hairer–Wanner IV.8; `frozen`, shared
    by the two steps of a pair). The residual is exact, so the sweeps converge to the
    collocation solution; without convergence in NEWTON_ITERATIONS sweeps (K varies fast, near
    a blow-up) the (s d)×(s d) system is solved directly. `start` = (s', Z'), the stages of an
    s'-stage step over the same interval: the sweeps start from their collocation polynomial at
    these nodes (`_interpolation`).
    """
    E, W = prop.nodes(s, h)
    d, r = m.size, L.shape[1]
    EL = (E.reshape(-1, d) @ L).reshape(s + 1, d, r)
    if r:
        # Σ_i B̄ = E_i L S_i⁻¹ (E_i L)ᵀ B̄ with S_i = I + Lᵀ W_i L ≻ 0 (no blow-up in the step)
        S = L.T @ (W[:s] @ L)
        S += np.eye(r)
        try:
            C = np.linalg.cholesky(S)
        except np.linalg.LinAlgError:
            raise SolverError("I + LᵀW(s)L lost definiteness inside a step") from None
        # C_i⁻¹ by LAPACK's triangular inverse, then products: for these small matrices one
        # triangular inverse costs a fraction of a batched solve with r right-hand sides
        C_inv = np.stack([lapack.dtrtri(c, lower=1)[0] for c in C])
        Y = C_inv @ np.swapaxes(EL[:s], 1, 2)  # C_i⁻¹ (E_i L)ᵀ
        K = law.Av + np.swapaxes(Y, 1, 2) @ (Y @ law.Bbar)
    else:
        K = np.broadcast_to(law.Av, (s, d, d)).copy()
    Z = _stages(K, m, law.b, h, None if start is None else _interpolation(start[0], s) @ start[1],
                frozen)
    k = (K @ (m + Z)[:, :, None])[:, :, 0] + law.b
    L_end = _sqrt_update(EL[-1], W[-1], L) if update else None
    return m + h * (gauss_tableau(s)[1] @ k), L_end, Z


@lru_cache(maxsize=16)
def _interpolation(s_from: int, s_to: int) -> np.ndarray:
    """P (s_to × s_from): P Z is the polynomial through (0, 0) and the stage increments
    (c_j, Z_j) of an s_from-stage Gauss step, at the s_to-stage nodes (`_lagrange`)."""
    return _lagrange(s_from, gauss_tableau(s_to)[0])


def _lagrange(s: int, theta: np.ndarray) -> np.ndarray:
    """P (k × s): u(θ) = m + (P Z)(θ) is the collocation polynomial of an s-stage Gauss step
    (degree s, through (0, m) and (c_j, m + Z_j)) at the k points θ of [0, 1]: the Lagrange
    basis on the nodes x = (0, c_1, ..., c_s) in barycentric form,
    ℓ_j(θ) = w_j/(θ − x_j) · Π_i (θ − x_i), w_j = 1/Π_{i≠j} (x_j − x_i) (a point on a node: the
    unit row)."""
    x, w = _barycentric(s)
    diff = theta[:, None] - x
    on = diff == 0
    diff[on] = 1.0
    P = (w / diff) * np.prod(diff, axis=1, keepdims=True)
    hit = on.any(axis=1)
    P[hit] = on[hit]
    return P[:, 1:]


@lru_cache(maxsize=16)
def _barycentric(s: int) -> tuple[np.ndarray, np.ndarray]:
    """(x, w): the nodes 0, c_1, ..., c_s of an s-stage Gauss step and their barycentric
    weights w_j = 1/Π_{i≠j} (x_j − x_i)."""
    x = np.append(0.0, gauss_tableau(s)[0])
    gaps = x[:, None] - x
    np.fill_diagonal(gaps, 1.0)
    return x, 1.0 / np.prod(gaps, axis=1)


class _FrozenJacobian:
    """The corrections x_k = (I − hλ_k K̄)⁻¹ R_k of the simplified Newton sweeps (`_stages`),
    K̄ = mean_j K_j of the first stage system it serves: one per sub-step, shared by the two
    Gauss methods of its pair (the same h; K̄ of the s_hi nodes stands for the s_lo ones, which
    changes only the rate of the sweeps, not their limit: the residual is exact).

    With `shared` (both stage systems of the pair are swept), from K̄ = Q diag(μ) Q⁻¹:
    x_k = Q ((Q⁻¹R_k) / (1 − hλ_k μ)) for every λ_k of both stage counts, at the cost of one
    eigendecomposition (about that of the s/2 inverses of one count). Otherwise, or where Q is
    ill conditioned (‖Q‖_F ‖Q⁻¹‖_F > EIGEN_KAPPA: K̄ close to defective), one inverse per λ_k."""

    def __init__(self, shared: bool = False) -> None:
        self.shared = shared
        self.K_bar: np.ndarray | None = None
        self.h = 0.0

    def correction(self, K: np.ndarray, h: float, s: int
                   ) -> Callable[[np.ndarray], np.ndarray]:
        """R ↦ Σ_k 2 Re T_{·k} x_k for the real residual R (s × d) of an s-stage system of
        length h (see `gauss_eigen`): the simplified Newton correction of its stages."""
        if self.K_bar is None:
            self.K_bar, self.h = K.mean(axis=0), h
        assert h == self.h, "one frozen Jacobian serves systems of one length"
        lam, T2, Tinv = gauss_eigen(s)
        eigen = self._eigen
        if eigen is None:
            solves = inv(np.eye(K.shape[1]) - self.h * lam[:, None, None] * self.K_bar)
            return lambda R: (T2 @ (solves @ (Tinv @ R)[:, :, None])[:, :, 0]).real
        mu, Q_t, Q_inv_t = eigen
        factors = 1.0 / (1.0 - self.h * lam[:, None] * mu)  # 1/(1 − hλ_k μ_j)
        return lambda R: (T2 @ ((((Tinv @ R) @ Q_inv_t) * factors) @ Q_t)).real

    @cached_property
    def _eigen(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(μ, Qᵀ, Q⁻ᵀ), or None when not shared, Q is ill conditioned or K̄ not finite."""
        assert self.K_bar is not None
        if not self.shared:
            return None
        try:
            mu, Q = np.linalg.eig(self.K_bar)
            Q_inv = inv(Q)
        except np.linalg.LinAlgError:
            return None
        kappa = np.linalg.norm(Q) * np.linalg.norm(Q_inv)
        return (mu, Q.T, Q_inv.T) if kappa <= EIGEN_KAPPA else None


def _stages(K: np.ndarray, m: np.ndarray, b: np.ndarray, h: float,
            guess: np.ndarray | None = None,
            frozen: _FrozenJacobian | None = None) -> np.ndarray:
    """Z solving Z_i = h Σ_j a_ij (K_j (m + Z_j) + b) (see `_mean_step`), sweeping from
    `guess` (else 0).

    Fixed-point (Picard) sweeps while each shrinks the increment at least PICARD_RATIO-fold
    (short steps, h‖K‖ small); from the first slower sweep on, simplified Newton with the
    frozen Jacobian `frozen` (a new one for K if None). The sweeps stop once the error they
    leave, θ/(1 − θ)·‖ΔZ‖∞ with θ the ratio of the last two corrections of the same kind
    (Hairer–Wanner IV.8; ‖ΔZ‖∞ itself while θ ≥ 1/2 or unknown), is below NEWTON_RTOL·‖Z‖∞.
    Systems of at most DIRECT_STAGE_SIZE unknowns without a guess, and those the sweeps do
    not settle, are solved directly (`_stages_direct`)."""
    s, d = K.shape[:2]
    if guess is None and _direct(s, d):
        return _stages_direct(K, m, b, h)
    ha = h * gauss_tableau(s)[2]
    known = ha @ ((K @ m) + b)  # the residual's part without Z
    floor = NEWTON_RTOL * np.abs(m).max()
    Z, solve = np.zeros((s, d)) if guess is None else guess.copy(), None
    previous = last = np.inf  # the last residual, the last correction of the same kind
    bound = np.abs(Z).max()  # ≥ ‖Z‖∞: ‖Z‖∞ itself is needed only where the test may pass
    for _ in range(NEWTON_ITERATIONS):
        dZ = known + ha @ (K @ Z[:, :, None])[:, :, 0] - Z  # the residual
        if solve is None:
            size = np.abs(dZ).max()
            if size > PICARD_RATIO * previous:  # Picard contracts slowly: simplified Newton
                solve = (_FrozenJacobian() if frozen is None else frozen).correction(K, h, s)
                last = np.inf
            previous = size
        if solve is not None:
            dZ = solve(dZ)
            size = np.abs(dZ).max()
        Z += dZ
        if not math.isfinite(size):
            break
        # sweeps contracting by θ = size/last leave ≲ θ/(1 − θ)·size of Z's error
        theta = size / last if last < np.inf else 1.0
        error = (theta / (1.0 - theta) if theta < 0.5 else 1.0) * size
        bound += size
        if error <= max(NEWTON_RTOL * bound, floor):
            bound = np.abs(Z).max()
            if error <= max(NEWTON_RTOL * bound, floor):
                return Z
        last = size
    return _stages_direct(K, m, b, h)


def _direct(s: int, d: int) -> bool:
    """Whether an s-stage system on R^d started without a guess is solved directly."""
    return s * d <= DIRECT_STAGE_SIZE


def _stages_direct(K: np.ndarray, m: np.ndarray, b: np.ndarray, h: float) -> np.ndarray:
    """Z from the assembled (s d)×(s d) collocation system (δ_ij I − h a_ij K_j) Z_j =
    h Σ_j a_ij (K_j m + b), by LU."""
    s, d = K.shape[:2]
    a = gauss_tableau(s)[2]
    blocks = -h * a[:, :, None, None] * K[None]  # block (i, j): δ_ij I − h a_ij K_j
    blocks[np.arange(s), np.arange(s)] += np.eye(d)
    system = blocks.transpose(0, 2, 1, 3).reshape(s * d, s * d)
    rhs = h * (a @ ((K @ m) + b))
    return np.linalg.solve(system, rhs.reshape(-1)).reshape(s, d)


def _mean_over(prop: _Propagator, L: np.ndarray, m: np.ndarray, H: float, law: _MeanLaw,
               norms: tuple[float, float], depth: int, budget: _Budget | None,
               t: float, taus: np.ndarray = NO_TIMES) -> tuple[np.ndarray, int, np.ndarray]:
    """m(t + H) from m(t) = m, Σ(t) = LLᵀ, and the means at the output offsets taus (increasing,
    in (0, H]; an offset H is the end); returns (m(t + H), collocation steps taken, the means
    at taus).

    n = ⌈‖A_v‖₂ H / θ⌉ equal sub-steps when ‖K‖₂ H / n ≤ θ at both ends (norms), θ = MEAN_THETA,
    or DENSE_THETA with output times inside; otherwise the interval is halved (Σ at its middle
    from one square-root update) and each half advanced the same way, so that sub-steps start
    short only where K is large (it grows like 1/(T* − t) near a blow-up). Each sub-step is
    error-controlled (`_controlled`), its pair of Gauss methods chosen by x = ‖K‖₂h at both
    ends (MEAN_PAIRS, DENSE_PAIRS)."""
    if not (np.isfinite(norms[0]) and np.isfinite(norms[1])):
        raise SolverError(f"the mean's drift K = A + v̄I + ΣB̄ overflows near t = {t:.6g}")
    theta = DENSE_THETA if taus.size else MEAN_THETA
    n = max(1, math.ceil(law.norm_Av * H / theta))
    if max(norms) * H / n > theta:
        _halving(depth, t, f"‖K‖₂ = {max(norms):.3g}")
        E, W = prop.at(H / 2)
        L_mid = _sqrt_update(E @ L, W, L)
        norm_mid = law.norm_K(L_mid, H / 2)
        early, late = _split(taus, H / 2)
        m_mid, first, inner_first = _mean_over(prop, L, m, H / 2, law, (norms[0], norm_mid),
                                               depth + 1, budget, t, early)
        m, second, inner_second = _mean_over(prop, L_mid, m_mid, H / 2, law,
                                             (norm_mid, norms[1]), depth + 1, budget, t + H / 2,
                                             late)
        return m, first + second, np.concatenate([inner_first, inner_second])
    if budget is not None:
        budget.spend(MEAN_STEP_COST * n, t, "mean sub-steps", n, H / n, law.norm_Av)
    count, h, inner = 0, H / n, []
    for k in range(n):
        within, taus = _split(taus, h)
        m, L, steps, values = _controlled(prop, L, m, h, law, max(norms) * h, depth, budget,
                                          t + k * h, within)
        inner.append(values)
        count += steps
    return m, count, np.concatenate(inner) if n > 1 else inner[0]


def _split(taus: np.ndarray, h: float) -> tuple[np.ndarray, np.ndarray]:
    """(the offsets in (0, h], those beyond less h): the output times of an interval's first
    sub-interval of length h and, relative to its end, of the rest."""
    k = int(np.searchsorted(taus, h, side="right"))
    return taus[:k], taus[k:] - h


def _controlled(prop: _Propagator, L: np.ndarray, m: np.ndarray, h: float, law: _MeanLaw,
                x: float, depth: int, budget: _Budget | None, t: float,
                taus: np.ndarray = NO_TIMES) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    """One error-controlled collocation sub-step of length h, with the means at the offsets
    taus (increasing, in (0, h]); returns (m, L, steps taken, the means at taus).

    An embedded pair (s_lo, s_hi) = `_pair`(x), x ≥ ‖K‖₂h: one step of each of the s_lo- and
    s_hi-stage Gauss methods (orders 2 s_lo < 2 s_hi, both collocated on the exact covariance)
    over the same h. Their difference is the error of the s_lo step up to the far smaller one
    of the s_hi step; the s_hi step is kept when they agree to MEAN_RTOL·max(‖m‖∞, ‖m⁺‖∞,
    h‖b‖∞) (local extrapolation, as the halves of a Richardson test would be kept), otherwise
    each half of the sub-step is controlled in turn. With output offsets inside (taus < h),
    the pair is DENSE_PAIRS' and the means there come from the kept step's collocation
    polynomial (`_lagrange`), the two steps' polynomials compared there as well (their
    accuracy is the stage order s + 1, not 2 s). The bound ‖K‖₂h ≤ MEAN_THETA alone does
    not bound the error: K(t) = A_v + Σ(t)B̄ has complex singularities (poles of
    (I + W(t)Σ0)⁻¹) that may lie close to the real axis, where K varies fast inside a step of
    moderate ‖K‖h. MEAN_RTOL stands well above the rounding of one step (the stage solve's
    NEWTON_RTOL and the final sum, a few eps relative); the rounding δK of K enters the
    difference as about h‖δK‖‖m‖, which halving reduces in proportion.
    Budget: MEAN_STEP_COST per sub-step is charged in advance (`_mean_over`), the
    2·MEAN_STEP_COST steps of a refinement when it is decided; the halvings count towards
    MAX_HALVINGS with those of `_mean_over`."""
    inside = taus[taus < h]  # (an offset h itself is the step's end)
    lo, hi = _pair(x, DENSE_PAIRS if inside.size else MEAN_PAIRS)
    frozen = _FrozenJacobian(shared=not _direct(hi, m.size))  # both systems swept
    m2, L2, Z = _mean_step(prop, L, m, h, law, hi, frozen=frozen)
    low, _, Z_low = _mean_step(prop, L, m, h, law, lo, update=False, start=(hi, Z),
                               frozen=frozen)
    assert L2 is not None  # update=True
    scale = max(np.abs(m).max(), np.abs(m2).max(), h * np.abs(law.b).max())
    diff = np.abs(m2 - low).max()
    values = np.tile(m2, (taus.size, 1))  # (offsets h: the end)
    if inside.size:
        values[:inside.size] = m + _lagrange(hi, inside / h) @ Z
        scale = max(scale, np.abs(values).max())
        diff = max(diff, np.abs(values[:inside.size] - m
                                - _lagrange(lo, inside / h) @ Z_low).max())
    if diff <= MEAN_RTOL * scale:
        return m2, L2, MEAN_STEP_COST, values
    if not np.isfinite(diff):
        raise SolverError(f"the mean left the floating-point range near t = {t:.6g} "
                          f"(exponential growth, not a blow-up)")
    _halving(depth, t, f"a sub-step of length {h:.3g} (collocation error {diff / scale:.2g} "
             f"relative)")
    if budget is not None:
        budget.spend(2 * MEAN_STEP_COST, t)
    early, late = _split(taus, h / 2)
    m1, L1, first, inner_first = _controlled(prop, L, m, h / 2, law, x / 2, depth + 1, budget, t,
                                             early)
    m2, L2, second, inner_second = _controlled(prop, L1, m1, h / 2, law, x / 2, depth + 1,
                                               budget, t + h / 2, late)
    return m2, L2, MEAN_STEP_COST + first + second, np.concatenate([inner_first, inner_second])


def _pair(x: float, pairs: tuple[tuple[float, int, int], ...] = MEAN_PAIRS) -> tuple[int, int]:
    """(s_lo, s_hi) of the first of `pairs` that reaches x = ‖K‖₂h (the last beyond)."""
    for reach, lo, hi in pairs:
        if x <= reach:
            return lo, hi
    return pairs[-1][1:]


def _dense_pays(norm: float, span: float, taus: np.ndarray) -> bool:
    """Whether the mean over `span` with output offsets taus inside (`_mean_over` with DENSE_PAIRS)
    takes fewer collocation nodes than one span per output interval (MEAN_PAIRS), at
    ‖K‖₂ = norm throughout (False where norm is not finite: `_mean_over` refuses that)."""
    if not math.isfinite(norm):
        return False

    def nodes(length: float, theta: float, pairs: tuple[tuple[float, int, int], ...]) -> int:
        n = max(1, math.ceil(norm * length / theta))
        return n * sum(_pair(norm * length / n, pairs))
    pieces = np.diff(np.concatenate([[0.0], taus, [span]]))
    return nodes(span, DENSE_THETA, DENSE_PAIRS) < sum(
        nodes(float(piece), MEAN_THETA, MEAN_PAIRS) for piece in pieces)


def _halving(depth: int, t: float, why: str) -> None:
    if depth >= MAX_HALVINGS:
        raise SolverError(f"the mean near t = {t:.6g} needs sub-steps beyond {MAX_HALVINGS} "
                          f"halvings of a covariance step: {why}")
