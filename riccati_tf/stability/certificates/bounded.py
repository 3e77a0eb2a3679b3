"""The bounded (marginally stable) regime: Σ(t) stays in a compact set for every t ≥ 0 (SPEC §6).

When every head with V_h ≠ 0 and B_h ≠ 0 has V_h = v_h I exactly and G = −Σ_h v_h(B_h + B_hᵀ) over
those heads is positive semidefinite exactly (G = 0 in particular: no attention, V_h = 0 or
B_h = 0, or B_h skew), the attention term is −ΣGΣ with G ⪰ 0, and the closed form
Σ(t) = e^{At}L0(I + L0ᵀW(t)L0)⁻¹L0ᵀe^{Aᵀt} with W(t) ⪰ 0 gives

    Σ(t) ⪯ e^{At} Σ0 e^{Aᵀt}                 (equality for G = 0: the linear flow).

A witness S ≻ 0 with AᵀS + SA ⪯ 0 (it exists iff A is Lyapunov stable: no Re λ > 0, the
eigenvalues on iℝ semisimple) makes e^{Aᵀt}Se^{At} ⪯ S, hence e^{At}S⁻¹e^{Aᵀt} ⪯ S⁻¹, and with
β ≥ λ_max(SΣ0) (so Σ0 ⪯ βS⁻¹)

    Σ(t) ⪯ β S⁻¹ ⪯ (β / λ_min(S)) I   for every t ≥ 0,

so λ_max(Σ(t)) ≤ bound = λ_max(SΣ0)/λ_min(S) (≤ cond(S) λ_max(Σ0)); tr(SΣ(t)) is non-increasing.
`bounded` builds the certificate for a layer whose A is not Hurwitz (Hurwitz A collapses, which
the theorems of SPEC §5 and the numerical evidence already say): S = I when A is exactly skew, else
(d ≤ EXACT_CHECK_MAX_D) S from a floating-point block diagonalisation of A (centre part:
Re(W⁻ᴴW⁻¹) from its eigenvectors; stable part: a Lyapunov solve) rounded to small integers, or
built in exact rational arithmetic from the centre and stable subspaces of A (`_rational_witness`),
and verified in exact rational arithmetic. The certificate stores S rounded to float64; check()
re-derives the exact S from A and decides the inequalities and the bound on it.

"bounded" is a claim for every t ≥ 0, so every premise is decided exactly: a floating-point S
whose AᵀS + SA ⪯ 0 holds only to a tolerance proves nothing (an eigenvalue of A at +1e-9, or a
Jordan block on iℝ, makes Σ grow, after t ~ 1e9 say), and then no "bounded" certificate is
issued — the other branches of `certify` (numerical evidence, or "undetermined") answer. The
bound is stated upwards of its floating-point value and re-checked so that rounding cannot put
it below λ_max(SΣ0)/λ_min(S): exactly (d ≤ EXACT_CHECK_MAX_D), or for S = I (A exactly skew, any
d) against λ_max(Σ0) plus the backward error of the symmetric eigensolver. `bounded_ok`
re-decides all of it.
"""

from __future__ import annotations

from fractions import Fraction
from math import lcm
from typing import TYPE_CHECKING

import numpy as np
from scipy.linalg import (
    LinAlgError,
    cholesky,
    eigh,
    schur,
    solve_continuous_lyapunov,
    solve_sylvester,
)

from ...state.params import Params
from ..riccati import AXIS_RTOL
from .constants import BOUND_RTOL, EPS, EVIDENCE_FIELDS, EXACT_CHECK_MAX_D, EXACT_MAX_D
from .premises import _q_axis_semisimple, q_axis_polynomial
from .rationals import (
    _half_planes,
    _q,
    _q_eye,
    _q_null,
    _q_range,
    _q_solve,
    _sym_inertia,
)

if TYPE_CHECKING:
    from .certificate import Certificate

__all__: list[str] = []

#: the theorem of a "bounded" certificate
THEOREM = "lyapunov_stable"
#: the symmetric eigensolver's backward error, in units of d·eps·‖Σ0‖_F, that the bound of a
#: witness S = I must clear above the computed λ_max(Σ0) (d > EXACT_CHECK_MAX_D)
_EIGH_ULPS = 16
#: denominators tried when rounding a floating-point S to rationals (then the float itself)
_DENOMINATORS = (1, 10, 100, 1000, 10**4, 10**6, 10**9)
#: the float λ_max(SΣ0) is taken this much larger before the exact re-check of βS ⪰ SΣ0S
_EIG_MARGIN = 1e-11


def attention_sign(p: Params) -> str | None:
    """"zero" when the attention term vanishes identically, "psd" when it is −ΣGΣ with G ⪰ 0
    (d ≤ EXACT_MAX_D), both decided exactly; None otherwise.

    Heads with V_h = 0 or B_h = 0 contribute nothing; every other head must have V_h = v_h I
    exactly, and G = −Σ v_h(B_h + B_hᵀ) over them is formed in rational arithmetic (heads with
    B_h exactly skew contribute 0 and are skipped; beyond EXACT_MAX_D a G visibly non-zero in
    floating point is rejected before any rational arithmetic)."""
    d = p.d
    present = []
    for i, head in enumerate(p.factors):
        if head is None:
            V, B = p.heads[i]
        else:  # formed here and dropped: a factored head does not keep its dense pair
            with np.errstate(over="ignore", invalid="ignore"):
                V, B = head.O @ head.V, head.K.T @ head.Q
        if np.any(V) and np.any(B):
            if head is not None and head.V.shape[0] < d:
                return None  # V_h of rank < d is v_h I only for V_h = 0
            present.append((V, B))
    if any(np.any(V - V[0, 0] * np.eye(d)) for V, _ in present):
        return None
    active = [(float(V[0, 0]), B) for V, B in present if not np.array_equal(B, -B.T)]
    if not active:
        return "zero"
    if d > EXACT_MAX_D:
        G = sum(v * (B + B.T) for v, B in active)
        size = sum(abs(v) * float(np.abs(B).max()) for v, B in active)
        if np.abs(G).max() > 1e-8 * size:
            return None
    Gq = np.full((d, d), Fraction(0), dtype=object)
    for v, B in active:
        Bq = _q(B)
        Gq = Gq - Fraction(v) * (Bq + Bq.T)
    if not any(x != 0 for x in Gq.ravel()):
        return "zero"
    if d <= EXACT_MAX_D and _sym_inertia(Gq)[2] == 0:
        return "psd"
    return None


def lyapunov_stable(A: np.ndarray) -> bool:
    """A has no eigenvalue with Re λ > 0, at least one on iℝ, and those on iℝ are semisimple,
    decided exactly (d ≤ EXACT_MAX_D: Routh–Hurwitz and `premises._q_axis_semisimple` on the
    floats as given); False beyond EXACT_MAX_D."""
    if A.shape[0] > EXACT_MAX_D:
        return False
    Aq = _q(A)
    _, axis, right = _half_planes(Aq)
    return right == 0 and axis > 0 and _q_axis_semisimple(Aq, axis)


def witness(A: np.ndarray) -> np.ndarray | None:
    """S ≻ 0 with AᵀS + SA ⪯ 0 verified in exact rational arithmetic (a Fraction matrix), or None.

    S = I when A is exactly skew (AᵀS + SA = 0 exactly at any d). Otherwise, for
    d ≤ EXACT_CHECK_MAX_D: `_rounded_witness` (a floating-point S rounded to small integers)
    when one passes, else the `_rational_witness` built in exact arithmetic. None when neither
    passes: a witness that holds only within a tolerance proves no bound for all t. The
    certificate stores S rounded to float64 (`stored`); `bounded_ok` re-derives it."""
    d = A.shape[0]
    if np.array_equal(A, -A.T):
        return _q_eye(d)
    if d > EXACT_CHECK_MAX_D:
        return None
    for S in (_rounded_witness(A), _rational_witness(A)):
        if S is not None and lyapunov_exact(A, S):
            return S
    return None


def stored(S: np.ndarray) -> np.ndarray:
    """The Fraction witness S as the certificate stores it: each entry rounded to float64
    (exact for the integer and identity witnesses)."""
    return np.array([[float(x) for x in row] for row in S], dtype=float)


def _rederived(A: np.ndarray, S: np.ndarray) -> np.ndarray | None:
    """The exact witness a stored float S stands for: S itself when it is one (S = I for skew A,
    an integer S), else the `_rational_witness` of A when S is its rounding; None otherwise."""
    d = A.shape[0]
    if S.shape != (d, d) or not np.array_equal(S, S.T):
        return None
    if np.array_equal(S, np.eye(d)) and np.array_equal(A, -A.T):
        return _q_eye(d)
    if d > EXACT_CHECK_MAX_D:
        return None
    if lyapunov_exact(A, _q(S)):
        return _q(S)
    R = _rational_witness(A)
    return R if R is not None and np.array_equal(stored(R), S) and lyapunov_exact(A, R) \
        else None


def _rational_witness(A: np.ndarray) -> np.ndarray | None:
    """S = M⁻ᵀ diag(S_c, P_s) M⁻¹ in exact rational arithmetic for an A that is Lyapunov stable
    (`lyapunov_stable`); None when the subspaces do not split (A is not).

    With p the characteristic polynomial of A and c the squarefree part of gcd(p(s), p(−s)) (its
    roots: A's eigenvalues on iℝ, semisimple), ker c(A) is the centre subspace and range c(A)
    the stable one; M = [ker | range] block-diagonalises A into (T_c, T_s). S_c is the
    projection of I onto ker 𝓛 along range 𝓛, 𝓛(X) = T_cᵀX + XT_c — the average of
    e^{T_cᵀt}e^{T_ct} over t, positive definite, with 𝓛(S_c) = 0 — and P_s solves
    T_sᵀP_s + P_sT_s = −I: AᵀS + SA = −M⁻ᵀdiag(0, I)M⁻¹ ⪯ 0 exactly. S is a Fraction matrix
    scaled to a largest entry of 1 (its denominators outgrow the floats for most float A)."""
    d = A.shape[0]
    Aq = _q(A)
    cA = q_axis_polynomial(Aq)
    centre, stable = _q_null(cA), _q_range(cA)
    k = centre.shape[1]
    if k + stable.shape[1] != d or k == 0:
        return None
    M = np.hstack([centre, stable])
    Mi = _q_solve(M, _q_eye(d))
    T = Mi.dot(Aq).dot(M)
    Sc = _kernel_projection(_lyapunov_operator(T[:k, :k]), _q_eye(k))
    blocks = np.full((d, d), Fraction(0), dtype=object)
    blocks[:k, :k] = Sc
    if k < d:
        m = d - k
        rhs = (-_q_eye(m)).reshape(m * m, 1)
        blocks[k:, k:] = _q_solve(_lyapunov_operator(T[k:, k:]), rhs).reshape(m, m)
    S = Mi.T.dot(blocks).dot(Mi)
    return S / max(abs(x) for x in S.ravel())


def _lyapunov_operator(T: np.ndarray) -> np.ndarray:
    """X ↦ TᵀX + XT on row-major vec(X): Tᵀ ⊗ I + I ⊗ Tᵀ (Fractions)."""
    eye = _q_eye(T.shape[0])
    return np.kron(T.T, eye) + np.kron(eye, T.T)


def _kernel_projection(L: np.ndarray, X: np.ndarray) -> np.ndarray:
    """The component in ker L of vec(X) along range L (L semisimple at 0, so the two are
    complementary), reshaped as X."""
    K, R = _q_null(L), _q_range(L)
    y = _q_solve(np.hstack([K, R]), X.reshape(-1, 1))
    return K.dot(y[:K.shape[1]]).reshape(X.shape)


def _float_witness(A: np.ndarray) -> np.ndarray | None:
    """S = Mᵀ diag(S_c, P_s) M with A = M⁻¹ diag(T_c, T_s) M: the ordered real Schur form (centre
    eigenvalues |Re λ| ≤ AXIS_RTOL ‖A‖_F first) decoupled by a Sylvester solve, S_c = Re(W⁻ᴴW⁻¹)
    from the eigenvectors W of T_c (T_cᵀS_c + S_cT_c = 0 when T_c is diagonalisable with its
    eigenvalues on iℝ), P_s from T_sᵀP_s + P_sT_s = −I; normalised to ‖S‖₂ = 1."""
    d = A.shape[0]
    tol = AXIS_RTOL * np.linalg.norm(A)
    try:
        T, U, k = schur(A, output="real", sort=lambda re, _im: abs(re) <= tol)
        Y = solve_sylvester(T[:k, :k], -T[k:, k:], -T[:k, k:])
        Minv = np.eye(d)
        Minv[:k, k:] = -Y
        M = Minv @ U.T  # A = M⁻¹ diag(T_c, T_s) M
        _, W = np.linalg.eig(T[:k, :k])
        Wi = np.linalg.inv(W)
        K = np.zeros((d, d))
        K[:k, :k] = (Wi.conj().T @ Wi).real
        if k < d:
            K[k:, k:] = solve_continuous_lyapunov(T[k:, k:].T, -np.eye(d - k))
        S = M.T @ K @ M
    except (LinAlgError, ValueError):
        return None
    S = 0.5 * (S + S.T)
    if not np.all(np.isfinite(S)):
        return None
    return S / np.linalg.norm(S, 2)


def _rounded_witness(A: np.ndarray) -> np.ndarray | None:
    """The first rounding of `_float_witness` to rationals of denominator ≤ D (D in
    _DENOMINATORS, then the float itself), scaled to integers below 2^53, that passes
    `lyapunov_exact`, as Fractions; None if none does."""
    S = _float_witness(A)
    if S is None:
        return None
    for D in (*_DENOMINATORS, None):
        Si = _integer_matrix(S / np.abs(S).max(), D)
        if Si is not None and lyapunov_exact(A, _q(Si)):
            return _q(Si)
    return None


def _integer_matrix(S: np.ndarray, D: int | None) -> np.ndarray | None:
    """S rounded entrywise to the nearest fraction of denominator ≤ D (the float itself for None),
    times the lcm of the denominators: an integer float matrix, symmetric; None beyond 2^53."""
    fr = [Fraction(float(x)) if D is None else Fraction(float(x)).limit_denominator(D)
          for x in np.ravel(S)]
    m = lcm(*(f.denominator for f in fr))
    ints = [int(f * m) for f in fr]
    if max(map(abs, ints)) >= 2 ** 53:
        return None
    Si = np.array(ints, dtype=float).reshape(S.shape)
    return Si if np.array_equal(Si, Si.T) else None


def lyapunov_exact(A: np.ndarray, S: np.ndarray) -> bool:
    """S ≻ 0 and AᵀS + SA ⪯ 0 in exact rational arithmetic, A the floats as given and S a
    symmetric Fraction matrix (d ≤ EXACT_CHECK_MAX_D)."""
    d = S.shape[0]
    if d > EXACT_CHECK_MAX_D or not np.array_equal(S, S.T):
        return False
    Aq = _q(A)
    return _sym_inertia(S)[0] == d and _sym_inertia(Aq.T.dot(S) + S.dot(Aq))[0] == 0


def _rhs_ok(A: np.ndarray, S: np.ndarray, Q: np.ndarray) -> bool:
    """The stored Q is −(AᵀS + SA) as floating point forms it (‖AᵀS + SA + Q‖ ≤ 1e-9‖A‖₂‖S‖₂;
    its sign is decided exactly on A and S, not on Q)."""
    if Q.shape != A.shape or not np.array_equal(Q, Q.T):
        return False
    scale = float(np.linalg.norm(A, 2) * np.linalg.norm(S, 2))
    return bool(np.linalg.norm(A.T @ S + S @ A + Q) <= 1e-9 * scale)


def bound_of(S: np.ndarray, cov0: np.ndarray) -> float:
    """λ_max(SΣ0)/λ_min(S) (the eigenvalues of L_SᵀΣ0L_S, S = L_SL_Sᵀ), in floating point."""
    Ls = cholesky(S, lower=True)
    top = float(eigh(Ls.T @ cov0 @ Ls, eigvals_only=True)[-1])
    return top / float(np.linalg.eigvalsh(S)[0])


def _bound_exact(S: np.ndarray, Sq: np.ndarray, cov0: np.ndarray, bound: float) -> bool:
    """Σ0 ⪯ βS⁻¹ ⪯ bound·I in exact rational arithmetic for the exact witness Sq (S its float
    rounding), β = λ_max(SΣ0)(1 + _EIG_MARGIN) in floating point: βS − SΣ0S ⪰ 0 and
    bound·S − βI ⪰ 0 (congruence by S^½)."""
    Ls = cholesky(S, lower=True)
    beta = float(eigh(Ls.T @ cov0 @ Ls, eigvals_only=True)[-1]) * (1 + _EIG_MARGIN)
    Cq = _q(cov0)
    bq, Bq = Fraction(beta), Fraction(bound)
    return _sym_inertia(bq * Sq - Sq.dot(Cq).dot(Sq))[2] == 0 and \
        _sym_inertia(Bq * Sq - bq * _q_eye(S.shape[0]))[2] == 0


def _bound_identity(cov0: np.ndarray, bound: float) -> bool:
    """S = I: bound ≥ λ_max(Σ0) beyond the computed value by the backward error of the symmetric
    eigensolver, _EIGH_ULPS · d · eps · ‖Σ0‖_F (Weyl: the computed eigenvalues are exact for a
    matrix within that distance of Σ0)."""
    d = cov0.shape[0]
    top = float(np.linalg.eigvalsh(cov0)[-1])
    return bool(bound >= top + _EIGH_ULPS * d * EPS * float(np.linalg.norm(cov0)))


#: the optional fields a "bounded" certificate sets; every other one must be None
FIELDS = ("lyapunov", "lyapunov_rhs", "bound")


def bounded_ok(c: Certificate, replay: bool = True) -> bool:
    """The claims of a "bounded" certificate re-decided: exact (no tolerance, global_), only
    S (lyapunov), Q (lyapunov_rhs) and the bound set among the optional fields; the attention
    term −ΣGΣ with G ⪰ 0 or zero (exactly); the exact witness re-derived from A and the stored
    S (`_rederived`: S itself, or the rational witness S rounds) with S ≻ 0 and AᵀS + SA ⪯ 0 in
    exact rational arithmetic, Q = −(AᵀS + SA) as stored; the bound within BOUND_RTOL of
    λ_max(SΣ0)/λ_min(S) recomputed and above it in exact arithmetic (Σ0 ⪯ βS⁻¹ ⪯ bound·I,
    d ≤ EXACT_CHECK_MAX_D) or, for S = I, above λ_max(Σ0) by the eigensolver's backward error.
    `replay` is unused: nothing is integrated."""
    p, S, Q, bound = c.params, c.lyapunov, c.lyapunov_rhs, c.bound
    if c.regime != "bounded" or c.theorem != THEOREM or S is None or Q is None or bound is None:
        return False
    if any(getattr(c, name) is not None for name in EVIDENCE_FIELDS if name not in FIELDS):
        return False
    if not c.exact or not c.global_ or c.tolerance is not None or c.rate is not None:
        return False
    if attention_sign(p) is None or not _rhs_ok(p.A, S, Q):
        return False
    Sq = _rederived(p.A, S)
    if Sq is None:
        return False
    want = bound_of(S, c.cov0)
    if not (want > 0 and abs(bound - want) <= BOUND_RTOL * want):
        return False
    if np.array_equal(S, np.eye(p.d)):
        return _bound_identity(c.cov0, bound)
    return _bound_exact(S, Sq, c.cov0, bound)
