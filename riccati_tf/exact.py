"""Exact covariance flow for scalar value matrices (SPEC §5), in square-root form.

With V_h = v_h I and G = −Σ_h v_h (B_h + B_hᵀ) the covariance obeys Σ̇ = AΣ + ΣAᵀ − ΣGΣ, whose
solution over a step of length s from Σ_k = L Lᵀ (L of size d×r, r = rank Σ_k) is

    Σ(t_k + s) = E_s L S(s)⁻¹ Lᵀ E_sᵀ,   S(s) = I_r + Lᵀ W(s) L,
    E_s = e^{As},   W(s) = ∫_0^s e^{Aᵀu} G e^{Au} du   (Van Loan: expm of [[−Aᵀ, G], [0, A]] s).

This is the closed form Σ(t) = e^{At}Σ0(I + W(t)Σ0)⁻¹e^{Aᵀt} (push-through identity), applied
step by step because the flow is a semigroup and recovering W(s) = e^{Aᵀs}F from the block
exponential amplifies rounding by κ(s) = ‖e^{As}‖₂‖e^{−Aᵀs}‖₂. With the logarithmic norm
μ(A) = λ_max((A + Aᵀ)/2), ‖e^{As}‖₂ ≤ e^{μ(A)s}, so steps with e^{(μ(A) + μ(−A))h} ≤ STEP_KAPPA
keep κ ≤ STEP_KAPPA (SPEC §5's "‖A‖h ≲ 1", made quantitative). S = CCᵀ (Cholesky) gives the
next factor L⁺ = E_s L C⁻ᵀ: the rank is kept exactly and every Σ is symmetric PSD by
construction. The covariance blows up at the first s where S(s) is singular
(det(I + W(t)Σ0) = 0); the time is located by Brent's method on λ_min(S(s)).

The mean obeys the linear equation ṁ = K(t) m + b, K = A + v̄ I + Σ(t) B̄ with v̄ = Σ_h v_h and
B̄ = Σ_h v_h B_h (no closed form is known), integrated with Gauss–Legendre collocation (order
2·GAUSS_STAGES) on the exact covariance at the collocation nodes, in sub-steps with
‖K‖₂ h ≤ MEAN_THETA at both ends, refined by halving where K is large (it grows like
1/(T* − t) near a blow-up).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.linalg import inv
from scipy.linalg import expm, lapack
from scipy.optimize import brentq

from .errors import SolverError
from .validation import psd_factor

GAUSS_STAGES = 8
#: covariance steps satisfy e^{(μ(A) + μ(−A))h} ≤ STEP_KAPPA (conditioning of the Van Loan step)
STEP_KAPPA = 1e3
#: mean sub-steps satisfy ‖K‖₂ h ≤ MEAN_THETA at both ends (accuracy of the collocation)
MEAN_THETA = 2.0
#: bisection depth limits when certifying that S(s) = I + LᵀW(s)L stays positive definite
BRENT_DEPTH = 10
MAX_REFINE = 40
#: a covariance step is halved at most this often for the mean (h ≥ 2⁻⁶⁰ H)
MAX_HALVINGS = 60
#: sweeps (Picard, then simplified Newton) for the collocation stages, their relative stopping
#: tolerance, and the contraction a Picard sweep must reach to be kept
NEWTON_ITERATIONS = 20
NEWTON_RTOL = 4 * np.finfo(float).eps
PICARD_RATIO = 0.1
#: Σ0 is factored by Cholesky when the factor's estimated reciprocal condition exceeds this
#: (far above psd_factor's rank threshold d·eps·λ_max), else by eigen-decomposition
FULL_RANK_RCOND = 1e-5


@lru_cache(maxsize=8)
def gauss_tableau(s: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nodes c, weights w and matrix a of the s-stage Gauss–Legendre collocation method."""
    x, w = np.polynomial.legendre.leggauss(s)
    c = (x + 1) / 2
    powers = np.arange(s)
    vander = c[:, None] ** powers[None, :]  # vander[j, k] = c_j^k
    coef = np.linalg.inv(vander)  # column j: monomial coefficients of the Lagrange basis ℓ_j
    integ = c[:, None] ** (powers + 1)[None, :] / (powers + 1)[None, :]
    return c, w / 2, integ @ coef


@lru_cache(maxsize=8)
def gauss_eigen(s: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """a = T diag(λ) T⁻¹ for the Gauss matrix (s even), ordered so that λ_{s−1−k} = conj(λ_k)."""
    lam, T = np.linalg.eig(gauss_tableau(s)[2])
    order = np.argsort(-lam.imag)
    lam, T = lam[order], T[:, order]
    if s % 2 or not np.allclose(lam[::-1], lam.conj(), rtol=1e-12, atol=0):
        raise ValueError(f"the {s}-stage Gauss matrix has no conjugate-paired spectrum")
    return lam, T, np.linalg.inv(T)


def van_loan(A: np.ndarray, G: np.ndarray, s) -> tuple[np.ndarray, np.ndarray]:
    """E = e^{As} and W(s) = ∫_0^s e^{Aᵀu} G e^{Au} du for a scalar s or an array of offsets.

    expm([[−Aᵀ, G], [0, A]] s) = [[e^{−Aᵀs}, F], [0, e^{As}]] and W(s) = e^{Aᵀs} F.
    """
    E, W, _ = _van_loan_blocks(A, G, np.atleast_1d(np.asarray(s, dtype=float)))
    return (E[0], W[0]) if np.ndim(s) == 0 else (E, W)


def _van_loan_blocks(A, G, s: np.ndarray):
    """(E, W, E⁻¹) stacked at the offsets s, from the Van Loan block exponential."""
    d = A.shape[0]
    block = np.zeros((2 * d, 2 * d))
    block[:d, :d] = -A.T
    block[:d, d:] = G
    block[d:, d:] = A
    F = expm(block[None] * s[:, None, None])
    E = F[:, d:, d:]
    W = np.swapaxes(E, -1, -2) @ F[:, :d, d:]
    return E, 0.5 * (W + np.swapaxes(W, -1, -2)), np.swapaxes(F[:, :d, :d], -1, -2)


@dataclass(frozen=True)
class ExactResult:
    """Raw output of :func:`exact_flow`: states at the requested times reached before blow-up."""

    t: np.ndarray
    mean: np.ndarray
    cov: np.ndarray
    blowup_time: float | None
    blowup_direction: np.ndarray | None
    n_steps: int


class _Propagator:
    """Cached Van Loan data: (E, W) at the collocation offsets of a step, at single offsets, and
    W₋(s) = ∫_0^s e^{Aᵀu} G₋ e^{Au} du for the negative part G₋ ⪰ 0 of G = G₊ − G₋."""

    def __init__(self, A, G):
        self.A, self.G = A, G
        if _positive_definite(G):  # G ≻ 0: S(s) ⪰ I, no blow-up (SPEC §5)
            self.G_minus, self.monotone = np.zeros_like(G), False
        else:
            eig, vec = np.linalg.eigh(G)
            self.G_minus = (vec * np.clip(-eig, 0.0, None)) @ vec.T
            self.monotone = not np.any(eig > 0)  # G ⪯ 0: λ_min(S(s)) decreases with s
        self.c, self.w, self.a = gauss_tableau(GAUSS_STAGES)
        self.eig = gauss_eigen(GAUSS_STAGES)
        self._cache: dict[tuple, tuple[np.ndarray, ...]] = {}

    def _get(self, key, make):
        if key not in self._cache:
            if len(self._cache) > 512:
                self._cache.clear()
            self._cache[key] = make()
        return self._cache[key]

    def nodes(self, h: float):
        """(E, W) stacked at offsets c_1 h, ..., c_s h, h.

        Block exponentials at c_1 h, ..., c_{s/2} h and h; the mirrored nodes (1 − c) h follow
        from the semigroup: E_{(1−c)h} = E_h E_{ch}⁻¹ and
        W_{(1−c)h} = E_{ch}⁻ᵀ (W_h − W_{ch}) E_{ch}⁻¹.
        """
        return self._get(("nodes", h), lambda: self._nodes(h))

    def _nodes(self, h: float):
        half = self.c.size // 2
        E, W, Einv = _van_loan_blocks(self.A, self.G, np.append(self.c[:half] * h, h))
        Eq, Wq, Iq = E[:half], W[:half], Einv[:half]
        E_up = (E[-1] @ Iq)[::-1]
        W_up = (np.swapaxes(Iq, -1, -2) @ (W[-1] - Wq) @ Iq)[::-1]
        W_up = 0.5 * (W_up + np.swapaxes(W_up, -1, -2))
        return np.concatenate([Eq, E_up, E[-1:]]), np.concatenate([Wq, W_up, W[-1:]])

    def at(self, s: float):
        return self._get(("at", s), lambda: van_loan(self.A, self.G, s))

    def w_minus(self, s: float) -> np.ndarray:
        return self._get(("minus", s), lambda: van_loan(self.A, self.G_minus, s))[1]


def _first_singular_offset(prop: _Propagator, L: np.ndarray, H: float) -> float | None:
    """First s in (0, H] at which S(s) = I + Lᵀ W(s) L is singular, or None.

    An interval [a, b] is certified free of singularity when S(a) − (E_a L)ᵀ W₋(b − a) (E_a L) ≻ 0
    (Cholesky), because W(s) − W(a) = E_aᵀ W(s − a) E_a ⪰ −E_aᵀ W₋(b − a) E_a for s in [a, b].
    Uncertified intervals are bisected; a sign change of λ_min(S) is then refined by Brent's
    method (directly when G ⪯ 0, where λ_min(S) is monotone). A dip of λ_min(S) to within
    rounding of zero that does not cross it is reported as no blow-up.
    """
    r = L.shape[1]
    eye = np.eye(r)

    def S_at(s):
        E, W = prop.at(s)
        return E, eye + L.T @ W @ L

    def lam(s):
        return float(np.linalg.eigvalsh(S_at(s)[1])[0])

    def certified(Ea, Sa, length):
        EL = Ea @ L
        return _positive_definite(Sa - EL.T @ prop.w_minus(length) @ EL)

    def scan(a, Ea, Sa, b, depth):
        if certified(Ea, Sa, b - a):
            return None
        _, Sb = S_at(b)
        if np.linalg.eigvalsh(Sb)[0] <= 0 and (prop.monotone or depth >= BRENT_DEPTH):
            return brentq(lam, a, b, xtol=4 * np.finfo(float).eps * b,
                          rtol=4 * np.finfo(float).eps)
        if depth >= MAX_REFINE:
            return None
        mid = 0.5 * (a + b)
        Em, Sm = S_at(mid)
        left = scan(a, Ea, Sa, mid, depth + 1)
        return left if left is not None else scan(mid, Em, Sm, b, depth + 1)

    return scan(0.0, np.eye(L.shape[0]), eye, H, 0)


def _positive_definite(M: np.ndarray) -> bool:
    """Whether the symmetric M is positive definite (LAPACK Cholesky succeeds)."""
    return M.size > 0 and lapack.dpotrf(M, lower=1, clean=0)[1] == 0


def _factor(cov: np.ndarray) -> np.ndarray:
    """A factor L with L Lᵀ = Σ0: Cholesky when Σ0 is clearly of full rank (estimated reciprocal
    condition of the factor above FULL_RANK_RCOND), else the eigen-factor of `psd_factor`."""
    C, info = lapack.dpotrf(cov, lower=1, clean=1)
    if info == 0 and cov.size and lapack.dtrcon(C, uplo="L")[0] > FULL_RANK_RCOND:
        return C
    return psd_factor(cov)


def step_length(A: np.ndarray) -> float:
    """Longest step h with e^{(μ(A) + μ(−A))h} ≤ STEP_KAPPA, μ(A) = λ_max((A + Aᵀ)/2)."""
    eig = np.linalg.eigvalsh(0.5 * (A + A.T))
    spread = eig[-1] - eig[0] if eig.size else 0.0
    return float(np.log(STEP_KAPPA) / spread) if spread > 0 else np.inf


def _sqrt_update(EL: np.ndarray, W: np.ndarray, L: np.ndarray) -> np.ndarray:
    """L⁺ = E L C⁻ᵀ with C Cᵀ = I + Lᵀ W L (lower Cholesky), given EL = E L."""
    if not L.shape[1]:
        return EL
    S = L.T @ (W @ L)
    S.flat[:: S.shape[0] + 1] += 1.0
    C, info = lapack.dpotrf(S, lower=1, clean=1)
    if info != 0:
        raise SolverError("I + LᵀW(h)L lost definiteness although no blow-up was located in "
                          "the step")
    return lapack.dtrtrs(C, EL.T, lower=1)[0].T


@dataclass(frozen=True)
class _MeanLaw:
    """ṁ = K(t) m + b with K = A_v + Σ(t) B̄, A_v = A + v̄ I, and ‖A_v‖₂."""

    Av: np.ndarray
    Bbar: np.ndarray
    b: np.ndarray
    norm_Av: float

    def norm_K(self, L: np.ndarray) -> float:
        """‖K‖₂ at Σ = L Lᵀ."""
        return float(np.linalg.norm(self.Av + L @ (L.T @ self.Bbar), 2))


def _mean_step(prop: _Propagator, L, m, h, law: _MeanLaw):
    """Advance (m, L) by h: Gauss collocation for the mean, square-root update for Σ = LLᵀ.

    Collocation: stage increments Z_i = h Σ_j a_ij (K_j (m + Z_j) + b), K_j = K(t + c_j h) from
    the exact Σ(t + c_j h) = E_j L (I + Lᵀ W_j L)⁻¹ Lᵀ E_jᵀ; m⁺ = m + h Σ_j w_j (K_j (m + Z_j) + b).
    The linear stage system is solved by fixed-point sweeps while they contract fast, else by
    simplified Newton with the frozen K̄ = mean_j K_j, decoupled by a = T Λ T⁻¹ into solves with
    I − h λ_k K̄ (Hairer–Wanner IV.8). The residual is exact, so the sweeps converge to the
    collocation solution; without convergence in NEWTON_ITERATIONS sweeps (K varies fast, near a
    blow-up) the (s d)×(s d) system is solved directly.
    """
    E, W = prop.nodes(h)
    s, d, r = prop.c.size, m.size, L.shape[1]
    EL = E @ L
    K = np.broadcast_to(law.Av, (s, d, d)).copy()
    if r:
        S = np.eye(r) + L.T[None] @ W[:s] @ L
        R = np.swapaxes(EL[:s], -1, -2) @ law.Bbar
        for i in range(s):  # Σ_i B̄ = E_i L S_i⁻¹ (E_i L)ᵀ B̄, S_i ≻ 0 (no blow-up in the step)
            X, info = lapack.dposv(S[i], R[i])[1:]
            if info:
                raise SolverError("I + LᵀW(s)L lost definiteness inside a step")
            K[i] += EL[i] @ X
    Z = _stages(prop, K, m, law.b, h)
    k = (K @ (m + Z)[:, :, None])[:, :, 0] + law.b
    return m + h * (prop.w @ k), _sqrt_update(EL[-1], W[-1], L)


def _stages(prop: _Propagator, K, m, b, h) -> np.ndarray:
    """Z solving Z_i = h Σ_j a_ij (K_j (m + Z_j) + b) (see `_mean_step`).

    Fixed-point (Picard) sweeps while each shrinks the increment at least PICARD_RATIO-fold
    (short steps, h‖K‖ small); from the first slower sweep on, simplified Newton."""
    s, d = K.shape[:2]
    lam, T, Tinv = prop.eig
    Z, solves, previous = np.zeros((s, d)), None, np.inf
    for _ in range(NEWTON_ITERATIONS):
        R = h * (prop.a @ ((K @ (m + Z)[:, :, None])[:, :, 0] + b)) - Z
        size = np.abs(R).max()
        if solves is None and size > PICARD_RATIO * previous:
            half = inv(np.eye(d) - h * lam[: s // 2, None, None] * K.mean(axis=0))
            solves = np.concatenate([half, half[::-1].conj()])  # λ_{s−1−k} = conj(λ_k)
        dZ = R if solves is None else (T @ (solves @ (Tinv @ R)[:, :, None])[:, :, 0]).real
        Z += dZ
        if np.abs(dZ).max() <= NEWTON_RTOL * max(np.abs(Z).max(), np.abs(m).max()):
            return Z
        previous = size
    blocks = -h * prop.a[:, :, None, None] * K[None]  # block (i, j): δ_ij I − h a_ij K_j
    blocks[np.arange(s), np.arange(s)] += np.eye(d)
    system = blocks.transpose(0, 2, 1, 3).reshape(s * d, s * d)
    rhs = h * (prop.a @ ((K @ m) + b))
    return np.linalg.solve(system, rhs.reshape(-1)).reshape(s, d)


def _advance(prop: _Propagator, L, m, H, law: _MeanLaw | None, norm_start=None, depth=0):
    """Advance (m, L) by one covariance step H; returns (m, L, number of mean sub-steps, ‖K‖₂ at
    the end). Without a mean law (m ≡ 0) only the covariance moves.

    The mean takes n = ⌈‖A_v‖₂ H / MEAN_THETA⌉ equal sub-steps when ‖K‖₂ H / n ≤ MEAN_THETA at
    both ends of the step (the covariance at the end comes first, from one square-root update;
    ‖K‖₂ at the start is the previous step's end value when given); otherwise the step is halved
    and each half advanced the same way, so that sub-steps shrink only where K is large (it grows
    like 1/(T* − t) near a blow-up)."""
    E, W = prop.at(H)
    L_end = _sqrt_update(E @ L, W, L)
    if law is None:
        return m, L_end, 1, None
    norm_start = law.norm_K(L) if norm_start is None else norm_start
    norm_end = law.norm_K(L_end)
    n = max(1, int(np.ceil(law.norm_Av * H / MEAN_THETA)))
    if max(norm_start, norm_end) * H / n > MEAN_THETA and depth < MAX_HALVINGS:
        m, L, first, norm_mid = _advance(prop, L, m, H / 2, law, norm_start, depth + 1)
        m, L, second, norm_end = _advance(prop, L, m, H / 2, law, norm_mid, depth + 1)
        return m, L, first + second, norm_end
    for _ in range(n):
        m, L = _mean_step(prop, L, m, H / n, law)
    return m, L, n, norm_end


def exact_flow(A, G, vbar, Bbar, b, mean0, cov0, t_out: np.ndarray, t_final: float) -> ExactResult:
    """Exact scalar-V flow on [0, t_final], returning states at t_out (sorted, within [0, t_final]).

    A, G, Bbar: (d, d); vbar: Σ_h v_h; b, mean0: (d,); cov0: (d, d) PSD.
    """
    d = A.shape[0]
    prop = _Propagator(A, G)
    L = _factor(cov0)
    r = L.shape[1]
    m = mean0.copy()
    law = None
    if np.any(m) or np.any(b):
        Av = A + vbar * np.eye(d)
        law = _MeanLaw(Av, Bbar, b, float(np.linalg.norm(Av, 2)))
    norm_K = None
    can_blow_up = bool(r and np.any(prop.G_minus))

    knots = np.unique(np.concatenate([t_out, [t_final]]))
    wanted = set(t_out.tolist())
    out_t, out_m, out_S = [], [], []
    n_steps = 0
    blowup_time = blowup_dir = None
    if knots[0] == 0.0:
        out_t.append(0.0), out_m.append(m.copy()), out_S.append(L @ L.T)
        knots = knots[1:]
    h0 = step_length(A)
    t0 = 0.0
    for knot in knots:
        n_big = max(1, int(np.ceil((knot - t0) / h0)))
        H = (knot - t0) / n_big  # equal steps: one block exponential per interval
        for k in range(n_big):
            if can_blow_up:
                root = _first_singular_offset(prop, L, H)
                if root is not None:
                    Er, Wr = prop.at(root)
                    _, vec = np.linalg.eigh(np.eye(r) + L.T @ Wr @ L)
                    u = Er @ L @ vec[:, 0]
                    blowup_time, blowup_dir = t0 + k * H + root, u / np.linalg.norm(u)
                    break
            m, L, count, norm_K = _advance(prop, L, m, H, law, norm_K)
            n_steps += count
        if blowup_time is not None:
            break
        t0 = knot
        if knot in wanted:
            out_t.append(knot), out_m.append(m.copy()), out_S.append(L @ L.T)
    return ExactResult(np.array(out_t), np.array(out_m).reshape(-1, d),
                       np.array(out_S).reshape(-1, d, d), blowup_time, blowup_dir, n_steps)
