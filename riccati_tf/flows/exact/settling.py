"""When stepping may stop (see `riccati_tf.flows.exact`, "Long horizons"): a stable
equilibrium confirmed by Newton's method, or the collapse closed form, and the mean's jump to
any later time once the covariance has settled."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.linalg import expm, solve_continuous_lyapunov

from ...errors import SolverError
from .covariance import EPS, _positive_definite, _Propagator
from .mean import _MeanLaw

__all__: list[str] = []

#: settling (package docstring, "Long horizons"): entrywise step-change gate, rounding
#: multiple c of the tolerance c·d·eps·κ_step, and the least number of steps left for the test
#: to be worth it
SETTLE_GATE = 1e-10
SETTLE_ROUNDING = 16.0
SETTLE_MIN_STEPS = 8
#: largest Newton correction accepted from a stalled step map (see `_stable_equilibrium`)
NEWTON_REACH = 1e-6
#: the mean's jump after settling: largest relative amplification of the rounding in K
MEAN_JUMP_RTOL = 1e-6


def _abs_scale(A: np.ndarray, S: np.ndarray, G: np.ndarray) -> np.ndarray:
    """|A||S| + |S||A|ᵀ + |S||G||S| (entrywise absolute values): the rounding scale of the
    residual AS + SAᵀ − SGS evaluated in floating point."""
    aA, aS = np.abs(A), np.abs(S)
    X = aA @ aS
    return X + X.T + aS @ np.abs(G) @ aS


def _newton(A: np.ndarray, G: np.ndarray, S: np.ndarray
            ) -> tuple[np.ndarray, float, np.ndarray | None, np.ndarray | None]:
    """(A_c, its spectral abscissa, Newton's correction Δ, its rounding floor N) at S for
    F(Σ) = AΣ + ΣAᵀ − ΣGΣ: A_cΔ + ΔA_cᵀ = −F(S), A_cN + NA_cᵀ = −c·d·eps·|F|_scale."""
    d = A.shape[0]
    Ac = A - S @ G
    lam = np.linalg.eigvals(Ac)
    if not np.all(np.isfinite(lam)):
        return Ac, np.inf, None, None
    alpha = float(lam.real.max())
    F = A @ S
    F = F + F.T - S @ G @ S
    rounding = SETTLE_ROUNDING * d * EPS * _abs_scale(A, S, G)
    D = solve_continuous_lyapunov(Ac, -F)
    N = solve_continuous_lyapunov(Ac, -rounding)
    return Ac, alpha, 0.5 * (D + D.T), N


def _stable_equilibrium(A: np.ndarray, G: np.ndarray, S: np.ndarray, tol: float,
                        change: float, H: float) -> np.ndarray | None:
    """The equilibrium S* near S when S is, up to rounding, at an exponentially stable equilibrium
    of Σ̇ = AΣ + ΣAᵀ − ΣGΣ, else None.

    A_c = A − SG must be Hurwitz (spectral abscissa α < −tol·scale) and Newton's correction Δ
    (A_cΔ + ΔA_cᵀ = −F(S), F(S) = AS + SAᵀ − SGS) either no larger than tol·‖S‖ plus twice what
    the rounding of F alone produces, or — when the step map has stalled at a point biased by
    its own rounding (the last step moved S by `change` < 0.1 (1 − e^{2αH}) ‖Δ‖, far less than
    a contraction at rate α would) — at most NEWTON_REACH‖S‖ with the next Newton correction
    at S + Δ at rounding level. The difference Δ(t) = Σ(t) − Σ* obeys
    Δ̇ = A_cΔ + ΔA_cᵀ − ΔGΔ (the same Riccati equation with A_c for A), so with A_c Hurwitz a
    rounding-sized Δ stays rounding-sized for all later t. Returned: S + Δ (Newton's step,
    closer to Σ* than the stepped state) when it is positive definite, else S."""
    scale = np.linalg.norm(A) + np.linalg.norm(S) * np.linalg.norm(G)
    if not np.isfinite(scale):
        return None
    _, alpha, D, N = _newton(A, G, S)
    if D is None or N is None or not alpha < -tol * scale:
        return None
    size, norm_S = np.linalg.norm(D), np.linalg.norm(S)
    if not np.isfinite(size):
        return None
    if size > tol * norm_S + 2 * np.linalg.norm(N):
        stalled = change < -0.1 * math.expm1(2 * alpha * H) * size
        if not (stalled and size <= NEWTON_REACH * norm_S):
            return None
        S1 = S + D
        _, alpha1, D1, N1 = _newton(A, G, S1)
        if D1 is None or N1 is None or not alpha1 < -tol * scale or \
                not np.linalg.norm(D1) <= tol * norm_S + 2 * np.linalg.norm(N1):
            return None
    corrected = S + D
    return corrected if _positive_definite(corrected) else S


def _settled_equilibrium(A: np.ndarray, G: np.ndarray, L: np.ndarray, S: np.ndarray,
                         tol: float, change: float = 0.0, H: float = 0.0
                         ) -> np.ndarray | None:
    """The equilibrium test of `_stable_equilibrium` on the rank stratum of Σ = LLᵀ; returns
    the (corrected) equilibrium or None.

    Coordinates where L is exactly zero and which A does not feed (A[dead, live] = 0) stay
    exactly zero for ever: the test runs on the live ones. A full-rank L is tested as is. A
    rank-deficient one (r < d live coordinates): the range U of L moves by e^{At} alone, so it
    must be invariant to rounding (‖(I − UUᵀ)AU‖ ≤ tol‖A‖) and not dominated by its complement
    (min Re λ(UᵀAU) ≥ max Re λ(U⊥ᵀAU⊥) − tol‖A‖, else it turns away); inside it
    M = UᵀΣU must be a stable equilibrium of Ṁ = A_U M + M A_Uᵀ − M G_U M."""
    live = np.any(L != 0, axis=1)
    full = None
    if not live.all() and not np.any(A[np.ix_(~live, live)]):
        full, ix = S, np.ix_(live, live)
        A, G, L, S = A[ix], G[ix], L[live], S[ix]
    d, r = L.shape
    if r >= d:
        star = _stable_equilibrium(A, G, S, tol, change, H)
    else:
        Q = np.linalg.qr(L, mode="complete")[0]
        U, Up = Q[:, :r], Q[:, r:]
        AU = A @ U
        A_U = U.T @ AU
        norm_A = np.linalg.norm(A, 2)
        if np.linalg.norm(AU - U @ A_U, 2) > tol * norm_A:
            return None
        gap = np.linalg.eigvals(A_U).real.min() - np.linalg.eigvals(Up.T @ A @ Up).real.max()
        if gap < -tol * norm_A:
            return None
        M = _stable_equilibrium(A_U, U.T @ G @ U, U.T @ S @ U, tol, change, H)
        star = None if M is None else U @ M @ U.T
    if star is None or full is None:
        return None if star is None else 0.5 * (star + star.T)
    out = np.zeros_like(full)
    out[np.ix_(live, live)] = 0.5 * (star + star.T)
    return out


def _equilibrium_sensitivity(A: np.ndarray, G: np.ndarray, star: np.ndarray) -> float:
    """‖G‖_F ‖D‖_F / ‖Σ*‖_F for the first-order change D of the equilibrium Σ* under G → G + εI
    per unit ε: A_c D + D A_cᵀ = Σ*Σ*, A_c = A − Σ*G, on the range U of Σ* (where a settled Σ*
    lives; A_U = Uᵀ A_c U must be Hurwitz there, else inf). Any δG with −I ⪯ δG ⪯ I moves Σ* by
    at most ‖D‖ (−D ⪯ dΣ* ⪯ D: the inverse Lyapunov operator of a Hurwitz A_U is monotone)."""
    norm_S = float(np.linalg.norm(star))
    if norm_S == 0.0:
        return 0.0
    eig, vec = np.linalg.eigh(star)
    U = vec[:, eig > star.shape[0] * EPS * eig[-1]]
    A_U = U.T @ (A - star @ G) @ U
    if not np.all(np.isfinite(A_U)) or not np.linalg.eigvals(A_U).real.max() < 0:
        return np.inf
    M = U.T @ star @ U
    D = solve_continuous_lyapunov(A_U, M @ M)
    return float(np.linalg.norm(G) * np.linalg.norm(D) / norm_S)


@dataclass
class _Collapse:
    """A Hurwitz, G ⪰ 0 (SPEC §5, the collapse regime Σ → 0): W(s) = W∞ − E_sᵀ W∞ E_s with
    AᵀW∞ + W∞A = −G is the closed form at every offset s, and S(s) = I + LᵀW(s)L ⪰ I (no
    blow-up, S well conditioned), so one exponential E_s = e^{As} reaches any time.
    X = ∫_0^∞ e^{As}e^{Aᵀs} ds (AX + XAᵀ = −I) bounds ∫_0^∞ ‖Σ‖ ds by ‖L‖²‖X‖ (Σ ⪯ E L LᵀEᵀ)."""

    A: np.ndarray
    W_inf: np.ndarray
    norm_W: float
    norm_X: float

    @classmethod
    def of(cls, A: np.ndarray, G: np.ndarray, prop: _Propagator,
           tol: float) -> _Collapse | None:
        if np.any(prop.G_minus):
            return None
        lam = np.linalg.eigvals(A)
        if not lam.real.max() < -tol * np.linalg.norm(A):
            return None
        W_inf = solve_continuous_lyapunov(A.T, -G)
        X = solve_continuous_lyapunov(A, -np.eye(A.shape[0]))
        if not (np.all(np.isfinite(W_inf)) and np.all(np.isfinite(X))):
            return None
        W_inf = 0.5 * (W_inf + W_inf.T)
        return cls(A, W_inf, float(np.linalg.norm(W_inf, 2)), float(np.linalg.norm(X, 2)))

    def ready(self, L: np.ndarray, law: _MeanLaw | None) -> bool:
        """Whether the jump is accurate from Σ = LLᵀ: ‖W∞‖‖L‖² ≤ 1 (the cancellation in
        W∞ − EᵀW∞E then costs at most eps in S), and, with a mean, Σ(t)B̄ can be dropped from K
        for all later t: ‖B̄‖₂‖L‖²‖X‖ ≤ c·d·eps (the mean then solves ṁ = A_v m + b)."""
        norm_L2 = float(np.sum(L * L))  # ‖L‖_F² ≥ ‖L‖₂²
        if self.norm_W * norm_L2 > 1.0:
            return False
        return law is None or law.norm_Bbar * norm_L2 * self.norm_X <= \
            SETTLE_ROUNDING * L.shape[0] * EPS

    def ready_time(self, L: np.ndarray, law: _MeanLaw | None, h: float,
                   horizon: float) -> float:
        """A time τ ≤ horizon by which `ready` holds for Σ(t + τ) (from Σ(t + τ) ⪯ E L LᵀEᵀ,
        ‖E L‖_F ≤ ‖E‖₂‖L‖_F, E = e^{Aτ}, tried at τ = h, 2h, 4h, ...), or inf."""
        norm_L2 = float(np.sum(L * L))
        tau = h
        while tau <= 2 * horizon:
            bound = float(np.linalg.norm(_expm_long(self.A, tau), 2)) ** 2 * norm_L2
            if self.norm_W * bound <= 1.0 and (law is None or law.norm_Bbar * bound * self.norm_X
                                               <= SETTLE_ROUNDING * L.shape[0] * EPS):
                return tau
            tau *= 2
        return np.inf

    def cov(self, L: np.ndarray, tau: float) -> np.ndarray:
        """Σ(t + τ) = E L (I + Lᵀ(W∞ − EᵀW∞E)L)⁻¹ LᵀEᵀ, E = e^{Aτ}."""
        d, r = L.shape
        if not r:
            return np.zeros((d, d))
        E = _expm_long(self.A, tau)
        EL = E @ L
        W = self.W_inf - E.T @ self.W_inf @ E
        S = EL @ np.linalg.solve(np.eye(r) + L.T @ W @ L, EL.T)
        return 0.5 * (S + S.T)


def _mean_jump(law: _MeanLaw | None, K: np.ndarray | None, m: np.ndarray, tau: float,
               t: float, settle_tol: float, norm_S: float) -> np.ndarray:
    """m(t + τ) for ṁ = K m + b with a constant K: m* + e^{Kτ}(m − m*) for Hurwitz K (e^{Kτ} by
    `_expm_long`, any τ), else the last column of expm([[K, b], [0, 0]] τ).

    settle_tol: the relative accuracy of Σ* beyond rounding (0 after Newton's correction).
    Refused when the rounding in K — about c·eps·‖A_v‖ + (settle_tol + c·eps)‖Σ*‖‖B̄‖ — would be
    amplified beyond MEAN_JUMP_RTOL: by min(τ, 1/|α|) when K is Hurwitz (α its spectral
    abscissa), by τ otherwise."""
    if law is None or tau == 0:
        return m
    assert K is not None  # the drift comes with the mean law
    d = K.shape[0]
    alpha = float(np.linalg.eigvals(K).real.max())
    dK = SETTLE_ROUNDING * d * EPS * law.norm_Av + (settle_tol + SETTLE_ROUNDING * d * EPS) \
        * norm_S * law.norm_Bbar  # settle_tol: the accuracy of Σ* (rounding after Newton's step)
    horizon = min(tau, 1.0 / -alpha) if alpha < 0 else tau
    if dK * horizon > MEAN_JUMP_RTOL:
        raise SolverError(
            f"the covariance settles by t = {t:.6g}, but the mean then solves ṁ = Km + b with "
            f"K = A + v̄I + Σ*B̄ known only to ±{dK:.3g} (rounding and cancellation between "
            f"‖A + v̄I‖ = {law.norm_Av:.3g} and ‖Σ*B̄‖ ≤ {norm_S * law.norm_Bbar:.3g}), which "
            f"over the remaining horizon amplifies to a relative error of about "
            f"{dK * horizon:.2g}: the mean cannot be vouched for")
    if alpha < 0:  # m(t + τ) = m* + e^{Kτ}(m − m*), m* = −K⁻¹b: no squaring of the affine part
        m_star = -np.linalg.solve(K, law.b)
        out = m_star + _expm_long(K, tau) @ (m - m_star)
    else:
        M = np.zeros((d + 1, d + 1))
        M[:d, :d], M[:d, d] = K * tau, law.b * tau
        F = expm(M)
        out = F[:d, :d] @ m + F[:d, d]
    if not np.all(np.isfinite(out)):
        if alpha < 0:  # m(t + τ) − m* decays: m* itself (or the transient) is out of range
            raise SolverError(
                f"the mean converges after t = {t:.6g} (ṁ = Km + b, spectral abscissa "
                f"α(K) = {alpha:.3g} < 0: decay to m* = −K⁻¹b), but m* or the transient "
                f"e^{{Kτ}}(m − m*) lies beyond the floating-point range (‖K⁻¹‖‖b‖ or the "
                f"non-normal growth of e^{{Kτ}} overflows)")
        raise SolverError(f"the mean grows past the floating-point range after t = {t:.6g} "
                          f"(ṁ = Km + b with spectral abscissa α(K) = {alpha:.3g} ≥ 0 over "
                          f"τ = {tau:.3g}); this is exponential growth, not a blow-up")
    return out


#: `_expm_long`: e^{Mτ} from expm of M τ/2^j with ‖M τ/2^j‖₁ ≤ LONG_EXPM_NORM, squared j times
LONG_EXPM_NORM = 1.0


def _expm_long(M: np.ndarray, tau: float) -> np.ndarray:
    """e^{Mτ} for any τ ≥ 0, by squaring: E = expm(M τ/2^j) with ‖M‖₁τ/2^j ≤ LONG_EXPM_NORM,
    then E ← E² j times (τ/2^j is exact in binary), stopping once E underflows to 0 (M Hurwitz
    over a long τ: e^{Mτ} = 0 in floating point). scipy's expm of a huge non-normal Hurwitz
    Mτ (triangular, ‖Mτ‖ = 1e50) returns NaN instead, from inf·0 in its exact treatment of the
    superdiagonal; the squares here stay within sup_s ‖e^{Ms}‖ until they underflow."""
    norm_M = float(np.abs(M).sum(axis=0).max()) if M.size else 0.0
    if not norm_M * tau > LONG_EXPM_NORM:
        return expm(M * tau)
    j = math.ceil(math.log2(norm_M) + math.log2(tau) - math.log2(LONG_EXPM_NORM))
    E = expm(M * math.ldexp(tau, -j))
    for _ in range(j):
        E = E @ E
        if not E.any() or not np.all(np.isfinite(E)):
            break
    return E
