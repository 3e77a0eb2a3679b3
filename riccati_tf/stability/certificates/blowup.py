"""G ⪯ 0 (scalar V): the stable invariant subspace of A, the threshold λ_max(W∞Σ0) and T* (SPEC §5).

With Σ0 = L0L0ᵀ and W(t) = ∫_0^t e^{Aᵀu}Ge^{Au}du, the closed form
Σ(t) = e^{At}L0(I + L0ᵀW(t)L0)⁻¹L0ᵀe^{Aᵀt} exists while S(t) = I + L0ᵀW(t)L0 ≻ 0; for G ⪯ 0, S is
non-increasing and T* is the first root of λ_min(S(t)), the blow-up direction e^{AT*}L0u with
S(T*)u = 0. When range Σ0 lies in the stable invariant subspace of A (A_s Hurwitz), W(t) → −W∞
with A_sᵀW∞ + W∞A_s = |G|_s, and Σ blows up iff λ_max(W∞Σ0) > 1. W(t) is composed by the semigroup
rule W(s + h) = W(s) + e^{Aᵀs}W(h)e^{As} from Van Loan steps with ‖A‖₂h ≤ 1; `blowup_check`
re-decides a stated T* by the sign change of λ_min(S) across T*(1 ± BLOWUP_CHECK_RTOL) and,
for every sign of G, that S ≻ 0 before it (`positive_until`: a Loewner lower bound on a
grid).
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import schur
from scipy.optimize import brentq

from ...errors import SolverError
from ...flows.exact import van_loan
from ...state.params import Params
from ...state.validation import psd_rank
from ..equilibria.scales import drift_spectrum, natural_scale, quadratic_constant
from ..riccati import AXIS_RTOL
from ..riccati.schur import lapack_sylvester_gramian
from .constants import (
    BLOWUP_CHECK_RTOL,
    BRENT_MAXITER,
    EPS,
    FIRST_ROOT_MAX_STEPS,
    GROWTH_FACTOR,
    HORIZON_RATES,
    MAX_GRAMIAN_STEPS,
    MAX_NORM_TIME,
    RANGE_RTOL,
    ROUNDING_ULPS,
    SEGMENT_NORM_TIME,
    STATE_SCALE_BITS,
)
from .rationals import exact_rank

__all__: list[str] = []


def cov_root(cov: np.ndarray, rank: int) -> np.ndarray:
    """L (d×rank) with LLᵀ ≈ Σ0 for the given rank (exact when known): Cholesky for full rank,
    else the `rank` leading eigenpairs; no positive direction of the stated rank is dropped."""
    d = cov.shape[0]
    if rank == d:
        try:
            return np.linalg.cholesky(cov)
        except np.linalg.LinAlgError:
            pass
    e, U = np.linalg.eigh(cov)
    e, U = e[d - rank:], U[:, d - rank:]
    return U * np.sqrt(np.clip(e, 0.0, None))


def _rank0(cov: np.ndarray) -> int:
    """rank Σ0: exact for d ≤ EXACT_MAX_D, else with psd_rank's d·eps·λ_max."""
    r = exact_rank(cov)
    return psd_rank(cov) if r is None else r


def _stable_basis(A: np.ndarray, axis_rtol: float) -> tuple[np.ndarray, np.ndarray, int]:
    """Ordered Schur form with the eigenvalues Re λ < −axis_rtol‖A‖_F leading: (U, T, s)."""
    tol = axis_rtol * np.linalg.norm(A)
    T, U, s = schur(A, output="real", sort=lambda re, _im: re < -tol)
    return U, T, int(s)


def _threshold(A: np.ndarray, G: np.ndarray, L0: np.ndarray, axis_rtol: float = AXIS_RTOL,
               range_rtol: float = RANGE_RTOL) -> tuple[float | None, float]:
    """(λ_max(W∞Σ0) or None when range Σ0 = range L0 ⊄ stable subspace within range_rtol, the
    stable decay rate), in floating point."""
    U, T, s = _stable_basis(A, axis_rtol)
    Us = U[:, :s]
    C = Us.T @ L0
    if np.linalg.norm(L0 - Us @ C) > range_rtol * np.linalg.norm(L0):
        return None, 0.0
    Ts = T[:s, :s]
    # TsᵀW + WTs = G_s = −|G|_s: W is W∞ (= −W(∞), with W(t) = ∫_0^t e^{Aᵀu}Ge^{Au}du)
    W = lapack_sylvester_gramian(Ts, Us.T @ G @ Us)
    lam = float(np.linalg.eigvalsh(C.T @ W @ C)[-1])
    rate = -2 * float(np.max(np.linalg.eigvals(Ts).real))
    return lam, rate


def _monotone_root(A: np.ndarray, G: np.ndarray, L0: np.ndarray,
                   horizon: float) -> tuple[float, np.ndarray] | None:
    """First t ≤ horizon with λ_min(S(t)) = 0, S(t) = I + L0ᵀW(t)L0, for G ⪯ 0 (S non-increasing),
    and the unit blow-up direction e^{At}L0u (S(T*)u = 0); None if S(horizon) ≻ 0.

    Steps h with ‖A‖₂h ≤ 1 (at most MAX_GRAMIAN_STEPS) compose W exactly by the semigroup rule
    S_{k+1} = S_k + X_kᵀW(h)X_k, X_{k+1} = e^{Ah}X_k (X_0 = L0); in the step where λ_min(S) first
    drops to ≤ 0 Brent's method (at most BRENT_MAXITER iterations) locates the root."""
    n = int(min(max(1.0, np.ceil(np.linalg.norm(A, 2) * horizon)), MAX_GRAMIAN_STEPS))
    h = horizon / n
    Eh, Wh = van_loan(A, G, h)
    X, S, t = L0, np.eye(L0.shape[1]), 0.0
    for _ in range(n):
        S_next = S + X.T @ Wh @ X
        if not np.all(np.isfinite(S_next)):
            raise SolverError(f"W(t) overflowed at t = {t:.6g} before the blow-up was located")
        if np.linalg.eigvalsh(S_next)[0] <= 0:
            def lam(s, S=S, X=X):
                return float(np.linalg.eigvalsh(S + X.T @ van_loan(A, G, s)[1] @ X)[0])

            try:
                s = brentq(lam, 0.0, h, xtol=4 * EPS * (t + h), rtol=4 * EPS,
                           maxiter=BRENT_MAXITER)
            except RuntimeError:
                raise SolverError(f"Brent's method did not locate T* within {BRENT_MAXITER} "
                                  f"iterations") from None
            E, W = van_loan(A, G, s)
            u = E @ X @ np.linalg.eigh(S + X.T @ W @ X)[1][:, 0]
            return t + s, u / np.linalg.norm(u)
        X, S, t = Eh @ X, S_next, t + h
    return None


def blowup_check(A: np.ndarray, G: np.ndarray, cov0: np.ndarray, T: float) -> bool:
    """T* is the first root of λ_min(S(t)), S(t) = I + L0ᵀW(t)L0 (L0 a factor of Σ0 of its rank,
    exact for d ≤ EXACT_MAX_D): S ≻ 0 on [0, T*(1 − BLOWUP_CHECK_RTOL)] (`positive_until`)
    and λ_min(S) < 0 at T*(1 + BLOWUP_CHECK_RTOL) — the blow-up half of `Certificate.check()`,
    for every sign of G (a root stated after an earlier one fails)."""
    L0 = cov_root(cov0, _rank0(cov0))
    r = L0.shape[1]
    lo, hi = T * (1 - BLOWUP_CHECK_RTOL), T * (1 + BLOWUP_CHECK_RTOL)
    s_hi = np.linalg.eigvalsh(np.eye(r) + L0.T @ _gramian(A, G, hi) @ L0)[0]
    return bool(s_hi < 0) and positive_until(A, G, L0, lo)


def positive_until(A: np.ndarray, G: np.ndarray, L0: np.ndarray, T: float) -> bool:
    """λ_min(S(t)) > 0 for every t in [0, T], S(t) = I + L0ᵀW(t)L0, by a Loewner lower bound on
    each step of a grid; False when the budget FIRST_ROOT_MAX_STEPS is spent first.

    With G = G₊ − G₋ (G₋ ⪰ 0 the negative part, taken ROUNDING_ULPS · d · eps · ‖G‖₂ larger so
    that G + G₋ ⪰ 0 survives the rounding of the eigensolver) and X(u) = e^{Au}L0,
    Ṡ(u) = X(u)ᵀGX(u) ⪰ −X(u)ᵀG₋X(u), hence for every t in [a, a + h]

        S(t) ⪰ S(a) + X(a)ᵀ W₋(h) X(a),      W₋(h) = −∫_0^h e^{Aᵀu}G₋e^{Au}du ⪯ 0,

    so S ≻ 0 on the whole step when that bound is positive definite (for G ⪯ 0 the bound is
    S(a + h): S is non-increasing). The grid is marched from 0 by the semigroup rule
    S(a + h) = S(a) + X(a)ᵀW(h)X(a), X(a + h) = e^{Ah}X(a) (Van Loan steps, ‖A‖₂h ≤ 1), h halved
    where the bound fails and doubled after a success, so it refines geometrically towards a
    root. The bound counts as positive definite when its diagonal is positive and the smallest
    eigenvalue of D⁻¹(bound)D⁻¹, D² its diagonal, exceeds ROUNDING_ULPS · r · eps (r the rank
    of Σ0): definiteness decided beyond the backward error of the eigensolver, at every grading
    of S; the matrices themselves are floating-point values, as the sign change at T* is."""
    r, d = L0.shape[1], A.shape[0]
    norm = float(np.linalg.norm(A, 2))
    g, U = np.linalg.eigh(G)
    spare = ROUNDING_ULPS * d * EPS * float(np.max(np.abs(g), initial=0.0))
    Gneg = (U * (np.clip(-g, 0.0, None) + spare)) @ U.T
    h_max = min(T, 1.0 / norm) if norm > 0 else T
    steps: dict[float, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    X, S, a, h = L0, np.eye(r), 0.0, h_max
    for _ in range(FIRST_ROOT_MAX_STEPS):
        if a >= T:
            return True
        h = min(h, T - a)
        if h not in steps:
            Eh, Wh = van_loan(A, G, h)
            steps[h] = Eh, Wh, van_loan(A, -Gneg, h)[1]
        Eh, Wh, Wneg = steps[h]
        if _definite(S + X.T @ Wneg @ X):
            X, S, a = Eh @ X, S + X.T @ Wh @ X, a + h
            h = min(2 * h, h_max)
        else:
            h = h / 2
            if not a + h > a:
                return False
    return False


def _definite(S: np.ndarray) -> bool:
    """S ≻ 0 beyond rounding: a positive diagonal D² and λ_min(D⁻¹SD⁻¹) > ROUNDING_ULPS·r·eps."""
    diag = np.diag(S)
    if not np.all(np.isfinite(S)) or not np.all(diag > 0):
        return False
    Di = 1.0 / np.sqrt(diag)
    lam = np.linalg.eigvalsh(Di[:, None] * S * Di[None, :])[0]
    return bool(lam > ROUNDING_ULPS * S.shape[0] * EPS)


def _gramian(A: np.ndarray, G: np.ndarray, t: float) -> np.ndarray:
    """W(t) = ∫_0^t e^{Aᵀu} G e^{Au} du by the semigroup rule W(s + h) = W(s) + E_sᵀW(h)E_s,
    with steps ‖A‖₂ h ≤ 1 (the Van Loan block exponential is accurate on each), at most
    MAX_GRAMIAN_STEPS of them."""
    norm = np.linalg.norm(A, 2)
    n = int(min(max(1.0, np.ceil(norm * t)), MAX_GRAMIAN_STEPS))
    Eh, Wh = van_loan(A, G, t / n)
    E, W = np.eye(A.shape[0]), np.zeros_like(A)
    for _ in range(n):
        W = W + E.T @ Wh @ E
        E = Eh @ E
    return 0.5 * (W + W.T)


def state_scale(p: Params, cov0: np.ndarray, *, start: bool = False) -> float:
    """The power of two σ in which a Runge–Kutta integration measures Σ: it integrates
    Σ̂ = Σ/σ, which obeys the same flow with the heads (σV_h, B_h) (the quadratic term is
    homogeneous of degree 2), from Σ0/σ — exact in floating point — and reports σΣ̂.

    σ is 1 unless the size it aims at lies beyond 2^±STATE_SCALE_BITS: the natural scale ‖A‖₂/c
    (`natural_scale`: the equilibria's size, so that they are O(1) next to the absolute
    tolerance of the integration; heads of size 1e150 put them near 1e-150), or with start,
    ‖Σ0‖₂ (a blow-up from a huge start, whose squares would overflow in natural units)."""
    size = float(np.linalg.norm(cov0, 2)) if start else natural_scale(p)
    if not (size > 0 and np.isfinite(size)):
        return 1.0
    k = int(np.round(np.log2(size)))
    return float(np.ldexp(1.0, k)) if abs(k) > STATE_SCALE_BITS else 1.0


def scaled_heads(p: Params, sigma: float) -> Params:
    """The layer (A, (σV_h, B_h)) without bias: Σ/σ follows it when Σ follows p's."""
    return Params(p.A, heads=p.heads if sigma == 1.0 else [(sigma * V, B) for V, B in p.heads])


def _rate_scale(p: Params, cov0: np.ndarray) -> float:
    """max(‖A‖₂, c‖Σ0‖₂): the fastest rate the linear or the quadratic term can start with."""
    quadratic = quadratic_constant(p) * float(np.linalg.norm(cov0, 2))
    return max(drift_spectrum(p)[1], quadratic, float(np.finfo(float).tiny))


def _horizon(p: Params, cov0: np.ndarray) -> float:
    """HORIZON_RATES / min|Re λ(A)|, at least 1 / rate scale (`_rate_scale`) and at most
    MAX_NORM_TIME / ‖A‖₂ (MAX_NORM_TIME / rate scale for A = 0).

    The cap is the linear part's: the quadratic one does not set it. A start far above the
    natural scale (Σ0 = 1e150 I) first decays at the quadratic rate c‖Σ(t)‖₂, as
    ‖Σ(t)‖ ~ 1/(ct), which the adaptive steps follow in a number of steps logarithmic in ‖Σ0‖,
    and reaches the natural scale ‖A‖₂/c after a time of order 1/‖A‖₂ — the time scale of A,
    on which the flow then settles. Capping the horizon at MAX_NORM_TIME/(c‖Σ0‖₂) would stop
    it near t = 1e-147."""
    scale = _rate_scale(p, cov0)
    norm = drift_spectrum(p)[1]
    slow = float(np.min(np.abs(drift_spectrum(p)[0].real)))
    t = HORIZON_RATES / slow if slow > 0 else np.inf
    return float(min(max(t, 1.0 / scale), MAX_NORM_TIME / (norm if norm > 0 else scale)))


def segment_length(p: Params, cov0: np.ndarray) -> float:
    """The length of the segments in which certify integrates Σ (and check() replays it):
    SEGMENT_NORM_TIME / ‖A‖₂, or for A = 0 SEGMENT_NORM_TIME over the rate at which the
    attention term starts to move Σ, ‖Σ_h V_hΣ0B_h‖₂ (the field's linear part at Σ0), else
    (Σ0 a rest point, or that rate out of the float range) over the bound c‖Σ0‖₂ of
    `_rate_scale`. The bound c overestimates the rate of real heads by 10–40×: segments of its
    length restart the integration a dozen times before a blow-up at T* = O(1/rate)."""
    norm = drift_spectrum(p)[1]
    if norm > 0:
        return SEGMENT_NORM_TIME / norm
    with np.errstate(over="ignore", invalid="ignore"):
        M = p.M(cov0)
        rate = float(np.linalg.norm(M, 2)) if np.all(np.isfinite(M)) else 0.0
    return SEGMENT_NORM_TIME / (rate if 0 < rate < np.inf else _rate_scale(p, cov0))


def _blowup_scale(p: Params) -> float:
    """Size of Σ beyond which the attention term would dominate a blow-up: ‖A‖₂/c for general V
    (`natural_scale`), ‖A‖₂/‖G₋‖₂ for scalar V with G₋ the negative part of G (at least
    eps‖G‖₂: the rounding of G), 0 for G = 0."""
    if p.value_scalars is None:
        return natural_scale(p)
    g = np.linalg.eigvalsh(p.G)
    neg = max(-g[0], EPS * np.abs(g).max(), 0.0)
    return float(drift_spectrum(p)[1] / neg) if neg > 0 else 0.0


def _grows(cov0: np.ndarray, mid: np.ndarray, final: np.ndarray, scale: float,
           factor: float = GROWTH_FACTOR) -> bool:
    """The growth of "grows": tr Σ(T) ≥ factor · max(tr Σ0, scale) and ≥ √factor · tr Σ(T/2)
    (mid = Σ(T/2)). Growth is evidence only past the blow-up scale, where the quadratic term
    would have turned exponential growth into a blow-up if it were going to."""
    trf = np.trace(final)
    return bool(trf >= factor * max(np.trace(cov0), scale) and trf >= factor ** 0.5 * np.trace(mid))
