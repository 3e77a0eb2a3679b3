"""The premises of the scalar-V theorems of SPEC §5 and the theorem they establish.

For V_h = v_h I the flow is Σ̇ = AΣ + ΣAᵀ − ΣGΣ with G = −Σ_h v_h(B_h + B_hᵀ). The theorems need the
signs of G (⪰ 0, ⪯ 0, ≺ 0, ≻ 0), the half-plane counts of A's eigenvalues, rank Σ0, whether an
eigenvalue Re λ > 0 of A lives on the unobservable subspace ∩_k ker(GA^k), whether the eigenvalues
on iℝ are semisimple, whether range Σ0 lies in the stable invariant subspace of A, and the sign of
λ_max(W∞Σ0) − 1. `premises` decides them exactly (rational arithmetic, d ≤ EXACT_MAX_D, V_h exactly
v_h I, Σ0 exactly PSD) or in floating point with the tolerances of `default_tolerance`;
`theorem_of` maps them to (theorem, regime) by THEOREMS.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from scipy.linalg import LinAlgError

from ...errors import SolverError
from ...state.params import SCALAR_RTOL, Params
from ..riccati import AXIS_RTOL, SINGULAR_RCOND
from ..riccati.schur import schur_split
from .blowup import _threshold, cov_root
from .constants import EPS, EXACT_MAX_D, RANGE_RTOL, SEMISIMPLE_RTOL, SIGN_RTOL, THRESHOLD_RTOL
from .rationals import (
    _half_planes,
    _q,
    _q_charpoly,
    _q_eye,
    _q_null,
    _q_range,
    _q_restrict,
    _q_rref,
    _q_solve,
    _sym_inertia,
    _sympy_poly,
)

__all__: list[str] = []


@dataclass(frozen=True)
class Premises:
    """What the scalar-V theorems of SPEC §5 need to know about (A, G, Σ0), decided either
    exactly on the data as given (tolerance None) or numerically with the listed tolerances.

    g_psd / g_nsd / g_nd / g_pd: G ⪰ 0 / G ⪯ 0 / G ≺ 0 / G ≻ 0. n_left, n_axis, n_right:
    eigenvalues of A with Re λ < 0, = 0, > 0 (numerically: |Re λ| ≤ axis_rtol ‖A‖_F counts as
    0). rank0: rank Σ0.
    unseen: an eigenvalue with Re λ > 0 of A restricted to the unobservable subspace
    ∩_k ker(GA^k) (the anti-stable Gramian is singular) — decided when G ⪰ 0. observable: that
    subspace is {0} (exactly; numerically only G ≻ 0 within sign_rtol, a sufficient condition,
    counts). axis_semisimple: every eigenvalue of A on iℝ is semisimple — decided when
    observable and n_right = 0 < n_axis (numerically with `SEMISIMPLE_RTOL`). range_stable:
    range Σ0 lies in the stable invariant subspace of A (A restricted to the Krylov space
    span{A^kΣ0} is Hurwitz) — decided when G ⪯ 0. threshold_sign: sign of λ_max(W∞Σ0) − 1 when
    range_stable, threshold: a floating-point value of λ_max(W∞Σ0)."""

    tolerance: dict | None
    g_psd: bool
    g_nsd: bool
    g_nd: bool
    n_left: int
    n_axis: int
    n_right: int
    rank0: int
    unseen: bool | None = None
    g_pd: bool = False
    observable: bool | None = None
    axis_semisimple: bool | None = None
    range_stable: bool | None = None
    threshold_sign: int | None = None
    threshold: float | None = None

    @property
    def exact(self) -> bool:
        return self.tolerance is None


def _exactly_scalar(p: Params) -> bool:
    """Every value matrix is exactly v_h I (equal diagonal, zero off-diagonal); not when V is
    not even scalar to SCALAR_RTOL (`Params.value_scalars`, which forms no dense pair)."""
    return p.value_scalars is not None and \
        all(not np.any(V - V[0, 0] * np.eye(p.d)) for V, _ in p.heads)


def premises(p: Params, cov0: np.ndarray, tolerance: dict | None = None) -> Premises:
    """Exact premises when d ≤ EXACT_MAX_D, every V_h is exactly v_h I and Σ0 is exactly
    positive semidefinite (unless a tolerance is given); otherwise numerical ones with the
    tolerances of `tolerance` (default: `default_tolerance`)."""
    if tolerance is None and p.d <= EXACT_MAX_D and _exactly_scalar(p):
        S0 = _q(cov0)
        pos, _, neg = _sym_inertia(S0)
        if neg == 0:
            return _exact_premises(p, S0, pos)
    return _numerical_premises(p, cov0, dict(tolerance or default_tolerance(p)))


def _exact_G(p: Params) -> np.ndarray:
    """G = −Σ_h v_h (B_h + B_hᵀ) from the floats, in exact rational arithmetic (not the rounded
    p.G)."""
    G = np.full((p.d, p.d), Fraction(0), dtype=object)
    for V, B in p.heads:
        Bq = _q(B)
        G = G - Fraction(float(V[0, 0])) * (Bq + Bq.T)
    return G


def _exact_premises(p: Params, S0: np.ndarray, rank0: int) -> Premises:
    d = p.d
    A, G = _q(p.A), _exact_G(p)
    gpos, gzero, gneg = _sym_inertia(G)
    left, axis, right = _half_planes(A)
    facts: dict[str, Any] = dict(
        tolerance=None, g_psd=gneg == 0, g_nsd=gpos == 0, g_nd=gpos == 0 and gzero == 0,
        g_pd=gpos == d, n_left=left, n_axis=axis, n_right=right, rank0=rank0)
    if gneg == 0:  # unobservable subspace N = ∩_k ker(G A^k)
        blocks, GA = [], G
        for _ in range(d):
            blocks.append(GA)
            GA = GA.dot(A)
        N = _q_null(np.vstack(blocks))
        facts["unseen"] = bool(N.shape[1]) and _half_planes(_q_restrict(A, N))[2] > 0
        facts["observable"] = N.shape[1] == 0
        if N.shape[1] == 0 and right == 0 and axis:
            facts["axis_semisimple"] = _q_axis_semisimple(A, axis)
    if gpos == 0 and gneg > 0 and rank0 > 0:
        blocks, AkS = [], S0
        for _ in range(d):
            blocks.append(AkS)
            AkS = A.dot(AkS)
        K = _q_range(np.hstack(blocks))
        AK = _q_restrict(A, K)
        facts["range_stable"] = _half_planes(AK)[0] == K.shape[1]
        if facts["range_stable"]:
            facts["threshold_sign"] = _exact_threshold_sign(AK, K, G, S0)
            try:  # the value is only reported; the decision above is exact
                facts["threshold"] = _threshold(p.A, p.G, cov_root(np.array(S0, dtype=float),
                                                                   rank0))[0]
            except (SolverError, LinAlgError, ValueError):
                facts["threshold"] = None
    return Premises(**facts)


def _q_axis_semisimple(A: np.ndarray, n_axis: int) -> bool:
    """Every eigenvalue of the Fraction matrix A on iℝ is semisimple, for A without eigenvalues
    Re λ > 0 (exact). Then h = gcd(p(s), p(−s)) (p the characteristic polynomial) has exactly the
    n_axis roots of p on iℝ, its squarefree part c has each of them once, and dim ker c(A) is the
    sum of their geometric multiplicities: semisimple iff it equals n_axis."""
    return A.shape[0] - len(_q_rref(q_axis_polynomial(A))[1]) == n_axis


def q_axis_polynomial(A: np.ndarray) -> np.ndarray:
    """c(A) for the Fraction matrix A without eigenvalues Re λ > 0, c the squarefree part of
    h = gcd(p(s), p(−s)) (p the characteristic polynomial): c has each eigenvalue of A on iℝ
    once, so ker c(A) is spanned by their eigenvectors (`_q_axis_semisimple`,
    `bounded._rational_witness`)."""
    import sympy

    s = sympy.Symbol("s")
    p = _sympy_poly(_q_charpoly(A), "s")
    h = p.gcd(p.compose(sympy.Poly(-s, s, domain="QQ")))
    c = h.quo(h.gcd(h.diff(s)))
    cA = np.full(A.shape, Fraction(0), dtype=object)
    eye = _q_eye(A.shape[0])
    for a in c.all_coeffs():  # Horner
        cA = cA.dot(A) + Fraction(int(a.p), int(a.q)) * eye
    return cA


def _exact_threshold_sign(AK: np.ndarray, K: np.ndarray, G: np.ndarray, S0: np.ndarray) -> int:
    """sign(λ_max(W∞Σ0) − 1) exactly for range Σ0 ⊂ K = span K (A-invariant, A_K Hurwitz):
    with Σ0 = K C Kᵀ and W_K = KᵀW∞K solving A_KᵀW_K + W_KA_K = KᵀGK (G ⪯ 0), the nonzero
    eigenvalues of W∞Σ0 are those of W_K C (real, ≥ 0); count the roots of det(x − W_K C) > 1."""
    r = K.shape[1]
    KtK = K.T.dot(K)
    C = _q_solve(KtK, _q_solve(KtK, K.T.dot(S0).dot(K)).T).T  # (KᵀK)⁻¹KᵀΣ0K(KᵀK)⁻¹
    # vectorised Lyapunov equation (row-major vec): (A_Kᵀ ⊗ I + I ⊗ A_Kᵀ) vec W = vec(KᵀGK)
    eye = _q_eye(r)
    lyap = np.kron(AK.T, eye) + np.kron(eye, AK.T)
    W = _q_solve(lyap, K.T.dot(G).dot(K).reshape(r * r, 1)).reshape(r, r)
    q = _sympy_poly(_q_charpoly(W.dot(C)), "x")
    if q.count_roots(1, None) > (1 if q.eval(1) == 0 else 0):
        return 1
    return 0 if q.eval(1) == 0 else -1


def default_tolerance(p: Params) -> dict:
    """The tolerances of the numerical premises (`_numerical_premises`)."""
    tol = {"sign_rtol": SIGN_RTOL, "axis_rtol": AXIS_RTOL, "semisimple_rtol": SEMISIMPLE_RTOL,
           "rank_rtol": p.d * EPS,
           "singular_rcond": SINGULAR_RCOND, "range_rtol": RANGE_RTOL,
           "threshold_rtol": THRESHOLD_RTOL}
    if not _exactly_scalar(p):
        tol["scalar_rtol"] = SCALAR_RTOL
    return tol


def _numerical_premises(p: Params, cov0: np.ndarray, tol: dict) -> Premises:
    """The premises decided in floating point with the tolerances of `tol`: G's eigenvalues of
    the wrong sign ≤ sign_rtol max|λ(G)|, |Re λ(A)| ≤ axis_rtol ‖A‖_F on the axis, Σ0's
    eigenvalues ≤ rank_rtol λ_max zero, the anti-stable Gramian singular below singular_rcond,
    range Σ0 in the stable subspace within range_rtol, |λ_max(W∞Σ0) − 1| ≤ threshold_rtol
    borderline."""
    A, G = p.A, p.G
    g = np.linalg.eigvalsh(G)
    gtol = tol["sign_rtol"] * max(np.abs(g).max(), np.finfo(float).tiny)
    psd, nsd, nd = bool(g[0] >= -gtol), bool(g[-1] <= gtol), bool(g[-1] < -gtol)
    eig = np.linalg.eigvals(A)
    atol = tol["axis_rtol"] * np.linalg.norm(A)
    e0 = np.linalg.eigvalsh(cov0)
    rank0 = int(np.sum(e0 > tol["rank_rtol"] * max(e0[-1], 0.0)))
    pd = bool(g[0] > gtol)
    facts: dict[str, Any] = dict(
        tolerance=tol, g_psd=psd, g_nsd=nsd, g_nd=nd, g_pd=pd,
        n_left=int(np.sum(eig.real < -atol)), n_axis=int(np.sum(abs(eig.real) <= atol)),
        n_right=int(np.sum(eig.real > atol)), rank0=rank0)
    if pd:  # numerically, only the sufficient condition G ≻ 0 counts as observable
        facts["observable"] = True
        if facts["n_axis"] and not facts["n_right"]:
            facts["axis_semisimple"] = _axis_semisimple(A, eig, atol, tol["semisimple_rtol"])
    if psd and facts["n_axis"] == 0 and facts["n_right"]:
        split = schur_split(A, G, axis_rtol=tol["axis_rtol"])
        facts["unseen"] = bool(split.singularity(A, G) < tol["singular_rcond"])
    if nsd and not psd and rank0:
        lam, _ = _threshold(A, G, cov_root(cov0, rank0), tol["axis_rtol"], tol["range_rtol"])
        facts["range_stable"] = lam is not None
        if lam is not None:
            facts["threshold"] = lam
            facts["threshold_sign"] = 0 if abs(lam - 1) <= tol["threshold_rtol"] else \
                (1 if lam > 1 else -1)
    return Premises(**facts)


def _axis_semisimple(A: np.ndarray, eig: np.ndarray, atol: float, rtol: float) -> bool:
    """Every computed eigenvalue λ of A with |Re λ| ≤ atol has as many singular values of
    A − (i Im λ)I below rtol ‖A‖_F as A has eigenvalues within rtol ‖A‖_F of i Im λ (geometric
    = algebraic multiplicity, decided with the tolerance)."""
    tol = rtol * np.linalg.norm(A)
    eye = np.eye(A.shape[0])
    for lam in eig[np.abs(eig.real) <= atol]:
        w = 1j * lam.imag
        algebraic = int(np.sum(np.abs(eig - w) <= max(tol, atol)))
        geometric = int(np.sum(np.linalg.svd(A - w * eye, compute_uv=False) <= tol))
        if geometric < algebraic:
            return False
    return True


#: the theorems, the regime each concludes and whether it holds for every Σ0 ≻ 0
THEOREMS = {"psd_hurwitz": ("collapses", True), "psd_marginal": ("collapses", True),
            "psd_gramian_pd": ("converges", True),
            "psd_gramian_singular": ("grows", True), "nsd_unstable_range": ("blows_up", True),
            "nsd_threshold": (None, False)}


def theorem_of(pr: Premises, d: int) -> tuple[str, str] | None:
    """(theorem, regime) that the premises establish (SPEC §5), or None.

    "psd_marginal" (G ⪰ 0 with (A, G) observable — G ≻ 0 for instance —, no Re λ(A) > 0, every
    eigenvalue on iℝ semisimple; e.g. A skew): with P = Σ⁻¹, Ṗ = −AᵀP − PA + G gives
    Σ(t)⁻¹ = e^{−Aᵀt}Σ0⁻¹e^{−At} + W̃(t), W̃(t) = ∫_0^t e^{−Aᵀu}Ge^{−Au}du (for singular Σ0 = L0L0ᵀ,
    Σ(t) = X(I + XᵀW̃X)⁻¹Xᵀ ⪯ X(XᵀW̃X)⁻¹Xᵀ with X = e^{At}L0). κ = sup ‖e^{At}‖ < ∞ gives
    |e^{−Au}x| ≥ |x|/κ, so W̃(t) ⪰ λ_min(G) t/κ² I for G ≻ 0, and by the semigroup rule
    W̃(kτ) ⪰ k λ_min(W̃(τ))/κ² I with W̃(τ) ≻ 0 (observability) in general: Σ(t) → 0 at rate
    O(1/t) from every Σ0 ⪰ 0."""
    if pr.g_psd:
        if pr.n_left == d:
            return "psd_hurwitz", "collapses"
        if pr.observable and pr.n_right == 0 and pr.axis_semisimple:
            return "psd_marginal", "collapses"
        if pr.rank0 == d and pr.unseen:
            return "psd_gramian_singular", "grows"
        if pr.rank0 == d and pr.n_axis == 0 and pr.n_right and pr.unseen is False:
            return "psd_gramian_pd", "converges"
        return None
    if pr.g_nsd and pr.range_stable is False and pr.g_nd:
        return "nsd_unstable_range", "blows_up"
    if pr.g_nsd and pr.range_stable and pr.threshold_sign:
        return "nsd_threshold", "blows_up" if pr.threshold_sign > 0 else "collapses"
    return None


def _shifted(p: Params, shift: float) -> Params:
    """The scalar-V layer with the same A and G + shift·I (one head V = I, B = −(G + shift·I)/2)."""
    G = p.G + shift * np.eye(p.d)
    return Params(p.A, B=-0.5 * G, V=np.eye(p.d))


def bracket_agrees(p: Params, cov0: np.ndarray, pr: Premises) -> bool:
    """For numerical premises whose verdict is "grows" or "converges": the same (theorem,
    regime) holds for G + δI and for G − δI, δ = 2 sign_rtol max|λ(G)| — the floating-point G
    may stand for either, since the sign of an eigenvalue of G within sign_rtol of 0 is not
    decided by the data. Σ(t) is monotone in G (a larger G gives a smaller Σ(t)), so an answer
    shared by both sides is the answer of every G between them. True for exact premises and for
    other verdicts."""
    got = theorem_of(pr, p.d)
    if pr.exact or got is None or got[1] not in ("grows", "converges"):
        return True
    tol = dict(pr.tolerance or {})
    g = np.linalg.eigvalsh(p.G)
    delta = 2 * tol["sign_rtol"] * max(float(np.abs(g).max()), np.finfo(float).tiny)
    return all(theorem_of(premises(_shifted(p, s * delta), cov0, tol), p.d) == got
               for s in (1.0, -1.0))
