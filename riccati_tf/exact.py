"""Exact covariance flow for scalar value matrices (SPEC §5), in square-root form.

With V_h = v_h I and G = −Σ_h v_h (B_h + B_hᵀ) the covariance obeys Σ̇ = AΣ + ΣAᵀ − ΣGΣ, whose
solution over a step of length s from Σ_k = L Lᵀ (L of size d×r, r = rank Σ_k) is

    Σ(t_k + s) = E_s L S(s)⁻¹ Lᵀ E_sᵀ,   S(s) = I_r + Lᵀ W(s) L,
    E_s = e^{As},   W(s) = ∫_0^s e^{Aᵀu} G e^{Au} du   (Van Loan: expm of [[−Aᵀ, G], [0, A]] s).

This is the closed form Σ(t) = e^{At}Σ0(I + W(t)Σ0)⁻¹e^{Aᵀt} (push-through identity), applied
step by step because the flow is a semigroup and the block exponential loses accuracy when ‖A‖t
is large. S = CCᵀ (Cholesky) gives the next factor L⁺ = E_s L C⁻ᵀ: the rank is kept exactly and
every Σ is symmetric PSD by construction. The covariance blows up at the first s where S(s) is
singular (det(I + W(t)Σ0) = 0); the time is located by Brent's method on λ_min(S(s)).

The mean obeys the linear equation ṁ = K(t) m + b, K = A + v̄ I + Σ(t) B̄ with v̄ = Σ_h v_h and
B̄ = Σ_h v_h B_h, integrated with Gauss–Legendre collocation (order 2·GAUSS_STAGES) on the exact
covariance at the collocation nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.linalg import cho_factor, expm, solve_triangular
from scipy.optimize import brentq

from .errors import SolverError
from .validation import psd_factor

GAUSS_STAGES = 8
#: covariance steps satisfy ‖A‖₂ h ≤ STEP_THETA (accuracy of the block exponential)
STEP_THETA = 1.0
#: mean sub-steps satisfy ‖K‖₂ h ≤ MEAN_THETA at both ends (accuracy of the collocation)
MEAN_THETA = 1.0
#: bisection depth limits when certifying that S(s) = I + LᵀW(s)L stays positive definite
BRENT_DEPTH = 10
MAX_REFINE = 40


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


def van_loan(A: np.ndarray, G: np.ndarray, s) -> tuple[np.ndarray, np.ndarray]:
    """E = e^{As} and W(s) = ∫_0^s e^{Aᵀu} G e^{Au} du for a scalar s or an array of offsets.

    expm([[−Aᵀ, G], [0, A]] s) = [[e^{−Aᵀs}, F], [0, e^{As}]] and W(s) = e^{Aᵀs} F.
    """
    d = A.shape[0]
    block = np.zeros((2 * d, 2 * d))
    block[:d, :d] = -A.T
    block[:d, d:] = G
    block[d:, d:] = A
    s_arr = np.atleast_1d(np.asarray(s, dtype=float))
    F = expm(block[None] * s_arr[:, None, None])
    E = F[:, d:, d:]
    W = np.swapaxes(E, -1, -2) @ F[:, :d, d:]
    W = 0.5 * (W + np.swapaxes(W, -1, -2))
    return (E[0], W[0]) if np.ndim(s) == 0 else (E, W)


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
        eig, vec = np.linalg.eigh(G)
        self.G_minus = (vec * np.clip(-eig, 0.0, None)) @ vec.T
        self.monotone = not np.any(eig > 0)  # G ⪯ 0: λ_min(S(s)) decreases with s
        self.c, self.w, self.a = gauss_tableau(GAUSS_STAGES)
        self._cache: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}

    def _get(self, key, make):
        if key not in self._cache:
            if len(self._cache) > 512:
                self._cache.clear()
            self._cache[key] = make()
        return self._cache[key]

    def nodes(self, h: float):
        """(E, W) stacked at offsets c_1 h, ..., c_s h, h."""
        return self._get(("nodes", h), lambda: van_loan(self.A, self.G, np.append(self.c * h, h)))

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
        try:
            cho_factor(Sa - EL.T @ prop.w_minus(length) @ EL, lower=True)
        except np.linalg.LinAlgError:
            return False
        return True

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


def _norm_K(Ashift, Bbar, L) -> float:
    """‖K‖₂ for the mean's coefficient matrix K = A + v̄ I + L Lᵀ B̄."""
    return float(np.linalg.norm(Ashift + L @ (L.T @ Bbar), 2))


def _step(prop: _Propagator, L, m, h, Ashift, Bbar, b, track_mean):
    """Advance (m, L) by h: Gauss collocation for the mean, square-root update for Σ = LLᵀ."""
    if track_mean:
        E, W = prop.nodes(h)
        EL = E @ L
        S = np.eye(L.shape[1]) + np.swapaxes(L, 0, 1)[None] @ W @ L
        d, s = m.size, prop.c.size
        Snodes = EL[:s] @ np.linalg.solve(S[:s], np.swapaxes(EL[:s], -1, -2))
        K = Ashift[None] + Snodes @ Bbar
        # stage equations k_i − h Σ_j a_ij K_i k_j = K_i m + b: block (i, j) is δ_ij I − h a_ij K_i
        blocks = -h * prop.a[:, :, None, None] * K[:, None]
        blocks[np.arange(s), np.arange(s)] += np.eye(d)
        system = blocks.transpose(0, 2, 1, 3).reshape(s * d, s * d)
        k = np.linalg.solve(system, (K @ m + b).reshape(-1))
        m = m + h * (prop.w @ k.reshape(s, d))
        EL, S = EL[-1], S[-1]
    else:
        E, W = prop.at(h)
        EL = E @ L
        S = np.eye(L.shape[1]) + L.T @ W @ L
    if L.shape[1]:
        try:
            C, _ = cho_factor(S, lower=True)
        except np.linalg.LinAlgError:
            raise SolverError("I + LᵀW(h)L lost definiteness although no blow-up was located in "
                              "the step") from None
        L = solve_triangular(C, EL.T, lower=True, check_finite=False).T
    return m, L


def _advance(prop: _Propagator, L, m, H, Ashift, Bbar, b, track_mean):
    """Advance by H in sub-steps h = H / 2^level with ‖K‖ h ≤ MEAN_THETA at both ends of each
    (K grows like 1/(T* − t) near a blow-up); returns (m, L, number of sub-steps)."""
    if not track_mean:
        return (*_step(prop, L, m, H, Ashift, Bbar, b, False), 1)
    num, level, count = 0, 0, 0  # done = num · H / 2^level
    while num < 2 ** level:
        h = H / 2 ** level
        m_new, L_new = _step(prop, L, m, h, Ashift, Bbar, b, True)
        if level < 60 and max(_norm_K(Ashift, Bbar, L),
                              _norm_K(Ashift, Bbar, L_new)) * h > MEAN_THETA:
            num, level = 2 * num, level + 1
            continue
        m, L = m_new, L_new
        num, count = num + 1, count + 1
        while level and num % 2 == 0 and _norm_K(Ashift, Bbar, L) * H / 2 ** (level - 1) <= (
                MEAN_THETA / 2):
            num, level = num // 2, level - 1
    return m, L, count


def exact_flow(A, G, vbar, Bbar, b, mean0, cov0, t_out: np.ndarray, t_final: float) -> ExactResult:
    """Exact scalar-V flow on [0, t_final], returning states at t_out (sorted, within [0, t_final]).

    A, G, Bbar: (d, d); vbar: Σ_h v_h; b, mean0: (d,); cov0: (d, d) PSD.
    """
    d = A.shape[0]
    prop = _Propagator(A, G)
    L = psd_factor(cov0)
    r = L.shape[1]
    m = mean0.copy()
    track_mean = bool(np.any(m) or np.any(b))
    Ashift = A + vbar * np.eye(d)
    normA = np.linalg.norm(A, 2)

    knots = np.unique(np.concatenate([t_out, [t_final]]))
    wanted = set(t_out.tolist())
    out_t, out_m, out_S = [], [], []
    n_steps = 0
    blowup_time = blowup_dir = None
    if knots[0] == 0.0:
        out_t.append(0.0), out_m.append(m.copy()), out_S.append(L @ L.T)
        knots = knots[1:]
    h0 = STEP_THETA / normA if normA > 0 else np.inf
    t0 = 0.0
    for knot in knots:
        n_big = max(1, int(np.ceil((knot - t0) / h0)))
        H = (knot - t0) / n_big  # equal steps: one block exponential per interval
        for k in range(n_big):
            t = t0 + k * H
            if r and np.any(prop.G_minus):
                root = _first_singular_offset(prop, L, H)
                if root is not None:
                    Er, Wr = prop.at(root)
                    _, vec = np.linalg.eigh(np.eye(r) + L.T @ Wr @ L)
                    u = Er @ L @ vec[:, 0]
                    blowup_time, blowup_dir = t + root, u / np.linalg.norm(u)
                    break
            m, L, count = _advance(prop, L, m, H, Ashift, Bbar, b, track_mean)
            n_steps += count
        if blowup_time is not None:
            break
        t0 = knot
        if knot in wanted:
            out_t.append(knot), out_m.append(m.copy()), out_S.append(L @ L.T)
    return ExactResult(np.array(out_t), np.array(out_m).reshape(-1, d),
                       np.array(out_S).reshape(-1, d, d), blowup_time, blowup_dir, n_steps)
