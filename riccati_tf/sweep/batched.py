"""The scalar-V classifier of `certify`, on stacks of n layers at once (SPEC §5).

With V_h = v_h I the covariance obeys Σ̇ = AΣ + ΣAᵀ − ΣGΣ, G = −Σ_h v_h(B_h + B_hᵀ), and

    Σ(t) = e^{At}Σ0(I + W(t)Σ0)⁻¹e^{Aᵀt},   W(t) = ∫_0^t e^{Aᵀu} G e^{Au} du.

The batched verdict is certify's verdict, or none (handled False: the case goes to `certify`).
certify decides the premises of its theorems exactly, in rational arithmetic on the floats as
given (d ≤ EXACT_MAX_D, V_h exactly v_h I, Σ0 exactly PSD); the batched path decides them in
floating point only where a margin far larger than every rounding error shows that the exact
decision is the same (documented at each rule):

    Σ0 = 0                                  → collapses ("zero")
    Σ0 exactly symmetric, λ_min(Σ0) > ROUNDING_ULPS d eps ‖Σ0‖₂ (eigvalsh's backward error):
                                              Σ0 ≻ 0, rank d
    G: λ(G) all > m, all < −m, m = δG + ROUNDING_ULPS d eps ‖G‖₂ (δG ≥ ‖G_exact − G‖₂,
       `g_rounding`): G ≻ 0 / G ≺ 0; G = 0 when G and δG are 0
    A: triangular (λ = diagonal), or Bauer–Fike discs about LAPACK's eigenvalues clear of iℝ:
       the half-plane counts (`_half_plane_counts`)
    G ≺ 0, A Hurwitz: sign of λ_max(W∞Σ0) − 1 beyond a residual-based error bound
       (`_threshold_bound`)

From such exact premises (certificates.Premises) the theorem is certify's own `theorem_of`:
G ≻ 0 has no unobservable mode (unseen = False), G = 0 makes every mode unobservable, and with
Σ0 ≻ 0 range Σ0 lies in the stable subspace iff A is Hurwitz. Cases that the margins do not
settle get certify's `premises` case by case when the heads (V, B) are passed (a few ms each, in
place of certify's whole run), and are handed to `certify` otherwise; so are d > EXACT_MAX_D
without the heads, magnitudes outside MAGNITUDE_RANGE, and every case for which certify would
integrate. Beyond EXACT_MAX_D certify's premises are numerical (exact False); `_settle` keeps
only the verdicts whose re-check depends on those premises alone, and the collapses to Σ* = 0
and to the stabilizing solution whose local Lyapunov certificate provably passes its
re-check (`_lyapunov_certified`).

A blow-up time is the first root of λ_min(I + L0ᵀW(t)L0) (monotone in t since G ⪯ 0), searched up
to certify's horizon MAX_NORM_TIME / max(‖A‖₂, c‖Σ0‖₂), c = 2Σ_h‖V_h‖₂‖B_h‖₂, and kept only when
certify's own check (`certificates.blowup_check`, redone on the stack with a margin, per case
when the margin is not met) confirms it; otherwise the case goes to certify.
A "psd_gramian_pd" verdict is kept only when certify's `equilibria` will return the stabilizing
solution (`stabilizing_found`, the same Bernoulli solve case by case).

Batched numerics: stacked eigvals/eigvalsh/eigh, one eigendecomposition A = XΛX⁻¹ per case
(`_eigen_discs`) shared by the half-plane counts, the Lyapunov equations (O(k³) time and O(k²)
memory a case, `lyapunov_stack`) and T*; W(t) from a stacked Padé-13 Van Loan exponential with
the semigroup rule W(t + h) = W(t) + E_tᵀW(h)E_t: a doubling march brackets T*, a dyadic descent
shrinks the bracket to one step ‖A‖₂h ≤ 1, and Newton's method, kept inside the bracket,
finishes it to 4·eps relative — on the eigen form LᵀW(t)L = Yᵀ(H ∘ F(t))Y (Y = X⁻¹L,
H = XᵀGX, F_ij = (e^{(λ_i+λ_j)t} − 1)/(λ_i + λ_j): k×k products instead of 2k×2k exponentials)
where κ₂(X) ≤ ROOT_EIGVEC_COND, with one last Newton step on the Padé form; certify's check at
T*(1 ± BLOWUP_CHECK_RTOL) is redone on the eigen form there too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from numpy.linalg import LinAlgError
from scipy.linalg import solve_continuous_lyapunov

from ..errors import InvalidInputError, SolverError
from ..stability.certificates import (
    BLOWUP_CHECK_RTOL,
    EXACT_CHECK_MAX_D,
    EXACT_MAX_D,
    MAX_GRAMIAN_STEPS,
    MAX_NORM_TIME,
    THEOREMS,
    Premises,
    blowup_check,
    bracket_agrees,
    cov_root,
    default_tolerance,
    premises,
    theorem_of,
)
from ..stability.equilibria import ACCEPT_RTOL, KRONECKER_MAX_D
from ..stability.equilibria.evidence import is_psd
from ..stability.riccati import bernoulli, exponent, numerical_failures
from ..state.params import Params
from ..state.validation import as_covariance

__all__ = ["BatchedCertificates", "blowup_times", "classify_scalar", "van_loan_stack"]

#: eigenvector matrices with a 2-norm condition number above this leave A's spectrum undecided
EIGVEC_COND_MAX = 1e8
#: `lyapunov_stack` solves a case by its eigendecomposition T = UΛU⁻¹ only when κ₂(U) is at most
#: LYAP_COND_MAX (else scipy's Bartels–Stewart solver, case by case), and none at all (NaN) when
#: some |λ_i + λ_j| ≤ LYAP_SEP_RTOL·max|λ|
LYAP_COND_MAX = 1e4
LYAP_SEP_RTOL = 1e-8
#: a convergence on numerical premises keeps its verdict when the bound ‖M‖₂κ⁴/|α| on the
#: condition number of certify's local Lyapunov matrix at Σ* (`_lyapunov_certified`) times its
#: rounding ROUNDING_ULPS n_s eps (n_s = d(d + 1)/2) is at most LYAP_CERT_RTOL
LYAP_CERT_RTOL = 1e-4
#: numerical premises on the stack (`_numerical_stack`): margins over certify's tolerances —
#: the anti-stable Gramian's reciprocal condition bound over singular_rcond, √λ_min(Σ0)/‖L0‖_F
#: over range_rtol, and a relative slack on λ_max(W∞Σ0) beyond the error bounds
UNSEEN_MARGIN = 1e6
RANGE_MARGIN = 1e3
THRESHOLD_SLACK = 1e-10
#: allowance for the backward error of a symmetric eigensolver, in units of d·eps·‖X‖₂ (LAPACK's
#: bound is a modest multiple of d·eps; 64 leaves a wide berth)
ROUNDING_ULPS = 64
#: without the heads, G's rounding is taken as G_ROUND_ULPS·eps·max(‖G‖_F, √d c): the bound of
#: `g_rounding` for up to 7 heads at d ≤ EXACT_MAX_D
G_ROUND_ULPS = 32
#: ‖A‖, ‖G‖, ‖Σ0‖ (when nonzero) outside this range: no subnormal or overflowing intermediate
#: can be ruled out cheaply, so the case goes to certify
MAGNITUDE_RANGE = (1e-100, 1e100)
#: a T* within this relative distance of the horizon, or with ‖A‖₂T* > BLOWUP_NORM_TIME (e^{At}
#: approaching overflow in certify's search), goes to certify
HORIZON_RTOL = 1e-6
BLOWUP_NORM_TIME = 500.0
#: certify's blow-up check, re-done on the stack: a sign of λ_min(I + L0ᵀW(t)L0) at
#: T*(1 ± BLOWUP_CHECK_RTOL) counts when it exceeds CHECK_MARGIN (1 + ‖L0ᵀW L0‖₂) — far above the
#: difference between the stacked and the per-case Gramians; closer calls run certify's check
CHECK_MARGIN = 1e-9
#: the blow-up march doubles its step after this many steps at one length
STEPS_PER_LEVEL = 4
#: the root in the last step is found on the eigen form of W(t) (`_EigenGramian`) where the
#: eigenvector matrix of A has κ₂ at most this (its rounding, about κ₂ eps relative, stays far
#: inside certify's check, `_check_signs`); by stacked Padé exponentials elsewhere
ROOT_EIGVEC_COND = 1e3
#: ... and finished by one Newton step on the Padé form, which must be at most POLISH_RTOL
#: relative (else that case is searched on the Padé form alone)
POLISH_RTOL = 1e-9
#: root-finding iterations on the last step (each one evaluation of the eigen or Padé form):
#: Newton steps, bisections where a Newton step would leave the bracket
MAX_ROOT_STEPS = 100
_EPS = np.finfo(float).eps
_TINY = np.finfo(float).tiny
_SUBNORMAL = 2.0 ** -1074

# Padé-13 coefficients and θ₁₃ (Higham, "The scaling and squaring method for the matrix
# exponential revisited", SIAM J. Matrix Anal. Appl. 26 (2005), Table 2.3)
_PADE13 = np.array([64764752532480000.0, 32382376266240000.0, 7771770303897600.0,
                    1187353796428800.0, 129060195264000.0, 10559470521600.0, 670442572800.0,
                    33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0])
_THETA13 = 5.371920351148152


# ------------------------------------------------------------------------- stacked numerics


@dataclass(frozen=True, eq=False)
class _Discs:
    """A's eigendecomposition per case, AX ≈ XΛ (LAPACK), with κ₂(X) and the Bauer–Fike radius
    r ≥ κ₂(X)‖A − XΛX⁻¹‖₂ (`_eigen_discs`): computed once, shared by the half-plane counts, the
    Lyapunov solves and the blow-up roots. NaN rows for non-finite cases."""

    lam: np.ndarray
    vec: np.ndarray
    cond: np.ndarray
    radius: np.ndarray

    def __getitem__(self, idx: Any) -> _Discs:
        return _Discs(self.lam[idx], self.vec[idx], self.cond[idx], self.radius[idx])


def expm_stack(X: np.ndarray) -> np.ndarray:
    """e^X for a stack (n, m, m): Padé-13 scaling and squaring, s_i = ⌈log₂(‖X_i‖₁/θ₁₃)⌉₊."""
    n, m = X.shape[0], X.shape[-1]
    norm1 = np.abs(X).sum(axis=1).max(axis=1)
    s = np.maximum(0, np.ceil(np.log2(np.maximum(norm1, _TINY) / _THETA13))).astype(int)
    Xs = X / (2.0 ** s)[:, None, None]
    b = _PADE13
    eye = np.eye(m)
    X2 = Xs @ Xs
    X4 = X2 @ X2
    X6 = X4 @ X2
    U = Xs @ (X6 @ (b[13] * X6 + b[11] * X4 + b[9] * X2)
              + b[7] * X6 + b[5] * X4 + b[3] * X2 + b[1] * eye)
    V = X6 @ (b[12] * X6 + b[10] * X4 + b[8] * X2) + b[6] * X6 + b[4] * X4 + b[2] * X2 \
        + b[0] * eye
    R = np.linalg.solve(V - U, V + U)
    for j in range(int(s.max(initial=0))):
        sel = s > j
        R[sel] = R[sel] @ R[sel]
    return R.reshape(n, m, m)


def van_loan_stack(A: npt.NDArray[np.float64], G: npt.NDArray[np.float64], s: npt.ArrayLike
                   ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """(E, W) = (e^{A s}, ∫_0^s e^{Aᵀu} G e^{Au} du) per case: expm([[−Aᵀ, G], [0, A]] s).

    W(s) is the Gramian of the scalar-V closed form Σ(t) = e^{At}Σ0(I + W(t)Σ0)⁻¹e^{Aᵀt}
    (module docstring). With F = expm([[−Aᵀ, G], [0, A]] s), the lower-right block of F is
    E = e^{As} and W = Eᵀ F₁₂ (Van Loan's block exponential), symmetrised. The exponential is
    stacked Padé-13 scaling and squaring (Higham's θ₁₃), one scaling per case.

    Parameters
    ----------
    A : (n, d, d) ndarray of float
        The drift matrices, one per case.
    G : (n, d, d) ndarray of float, symmetric
        G = −Σ_h v_h(B_h + B_hᵀ) per case.
    s : (n,) array_like of float
        The integration length per case (a scalar is broadcast).

    Returns
    -------
    E : (n, d, d) ndarray of float
        e^{A s} per case.
    W : (n, d, d) ndarray of float, symmetric
        ∫_0^s e^{Aᵀu} G e^{Au} du per case.

    Raises
    ------
    numpy.linalg.LinAlgError
        When the Padé denominator V − U of some case is singular to working precision
        (non-finite input).

    See Also
    --------
    blowup_times : marches W(t) by the semigroup rule W(t + h) = W(t) + E_tᵀW(h)E_t.
    classify_scalar : the batched classifier that uses it for T*.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".
    .. [2] C. F. Van Loan, "Computing integrals involving the matrix exponential", IEEE TAC
       23(3), 1978.
    .. [3] N. J. Higham, "The scaling and squaring method for the matrix exponential
       revisited", SIAM J. Matrix Anal. Appl. 26(4), 2005.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.linalg import expm, solve_continuous_lyapunov
    >>> from riccati_tf.sweep.batched import van_loan_stack
    >>> A = np.array([[[-1.0, 0.5], [0.0, -2.0]]])
    >>> G = np.array([[[2.0, 0.4], [0.4, 1.2]]])
    >>> E, W = van_loan_stack(A, G, np.array([30.0]))
    >>> bool(np.allclose(E[0], expm(30 * A[0])))
    True

    For Hurwitz A, W(s) → W∞ with AᵀW∞ + W∞A = −G:

    >>> bool(np.allclose(W[0], solve_continuous_lyapunov(A[0].T, -G[0])))
    True
    """
    n, d = A.shape[0], A.shape[-1]
    block = np.zeros((n, 2 * d, 2 * d))
    block[:, :d, :d] = -np.swapaxes(A, 1, 2)
    block[:, :d, d:] = G
    block[:, d:, d:] = A
    F = expm_stack(block * np.asarray(s, dtype=float).reshape(-1, 1, 1))
    E = F[:, d:, d:]
    W = np.swapaxes(E, 1, 2) @ F[:, :d, d:]
    return E, 0.5 * (W + np.swapaxes(W, 1, 2))


def lyapunov_stack(T: np.ndarray, C: np.ndarray, eigen: _Discs | None = None) -> np.ndarray:
    """P with TᵀP + PT = C per case, T (n, k, k) and C (n, k, k) or (n, r, k, k) (r right-hand
    sides per case); P symmetrised (C symmetric).

    With T = UΛU⁻¹ (stacked LAPACK eigendecomposition), P = U⁻ᵀYU⁻¹ where
    Y_ij = (UᵀCU)_ij / (λ_i + λ_j), followed by one step of iterative refinement on the residual
    (the same formula applied to TᵀP + PT − C): O(k³) work and O(k²) memory per case. A case
    whose eigenbasis is ill-conditioned (κ₂(U) > LYAP_COND_MAX) is solved by
    `scipy.linalg.solve_continuous_lyapunov` (Bartels–Stewart) alone. NaN where some
    |λ_i + λ_j| ≤ LYAP_SEP_RTOL·max|λ| (the operator is singular to working precision), T is not
    finite, or scipy fails. eigen: T's eigendecomposition when already computed (`_Discs`)."""
    n, k = T.shape[0], T.shape[-1]
    P = np.full(C.shape, np.nan)
    if k == 0 or n == 0:
        return np.zeros(C.shape)
    finite = np.isfinite(T).all(axis=(1, 2))
    if eigen is None:
        lam, U = np.full((n, k), np.nan, dtype=complex), np.full((n, k, k), np.nan, dtype=complex)
        lam[finite], U[finite] = np.linalg.eig(T[finite])
        sv = np.linalg.svd(np.where(finite[:, None, None], U, 0), compute_uv=False)
        with np.errstate(divide="ignore", invalid="ignore"):  # singular U: κ = inf or NaN
            cond = sv[:, 0] / sv[:, -1]
    else:
        lam, U, cond = eigen.lam, eigen.vec, eigen.cond
    denom = lam[:, :, None] + lam[:, None, :]
    scale = np.abs(lam).max(axis=1, initial=0.0)
    regular = finite & (np.abs(denom).min(axis=(1, 2)) > LYAP_SEP_RTOL * scale)
    good = regular & (cond <= LYAP_COND_MAX)
    idx = np.flatnonzero(good)
    if idx.size:
        Ui = np.linalg.inv(U[idx])
        U_, Ui_, D_ = (_per_rhs(X, C) for X in (U[idx], Ui, denom[idx]))
        Ut, Uit = np.swapaxes(U_, -1, -2), np.swapaxes(Ui_, -1, -2)
        Tg = _per_rhs(T[idx], C)

        def solve(R: np.ndarray) -> np.ndarray:
            return (Uit @ ((Ut @ R @ U_) / D_) @ Ui_).real

        X = solve(C[idx])
        X = X - solve(np.swapaxes(Tg, -1, -2) @ X + X @ Tg - C[idx])
        P[idx] = X
    for i in np.flatnonzero(regular & ~good):
        for j in np.ndindex(C.shape[1:-2]):
            try:
                P[(i, *j)] = solve_continuous_lyapunov(T[i].T, C[(i, *j)])
            except (LinAlgError, ValueError):
                pass
    return 0.5 * (P + np.swapaxes(P, -1, -2))


def _per_rhs(X: np.ndarray, C: np.ndarray) -> np.ndarray:
    """X (n, ...) with an axis inserted per right-hand-side axis of C (n, r, k, k)."""
    return X.reshape(X.shape[:1] + (1,) * (C.ndim - 3) + X.shape[1:])


def _lam_min(S: np.ndarray) -> np.ndarray:
    return np.linalg.eigvalsh(S)[:, 0]


def blowup_times(A: npt.NDArray[np.float64], G: npt.NDArray[np.float64],
                 L: npt.NDArray[np.float64], t_max: npt.NDArray[np.float64]
                 ) -> npt.NDArray[np.float64]:
    """First root T* of λ_min(I + LᵀW(t)L) for G ⪯ 0 (a decreasing function of t), per case.

    The blow-up time of Σ̇ = AΣ + ΣAᵀ − ΣGΣ from Σ0 = LLᵀ: the closed form
    Σ(t) = e^{At}Σ0(I + W(t)Σ0)⁻¹e^{Aᵀt}, W(t) = ∫_0^t e^{Aᵀu} G e^{Au} du, leaves every bounded
    set when I + LᵀW(t)L first becomes singular. March: steps 2^j h (h = 1/‖A‖₂,
    STEPS_PER_LEVEL steps per j) composed exactly by the semigroup rule
    W(t + h) = W(t) + E_tᵀW(h)E_t, until λ_min ≤ 0; descent: halve the bracket with the stored
    steps down to h; then Newton's method kept inside the bracket on offsets s ∈ (0, h]
    (f'(s) = wᵀGw from the eigenvector of λ_min; a step leaving the bracket is a bisection),
    to 4·eps relative, on the eigen form of W (`_EigenGramian`) where A's eigenvector matrix
    has κ₂ ≤ ROOT_EIGVEC_COND, else W(s) by stacked Padé.

    Parameters
    ----------
    A : (n, d, d) ndarray of float
        The drift matrices.
    G : (n, d, d) ndarray of float, symmetric negative semidefinite
        G = −Σ_h v_h(B_h + B_hᵀ) per case (G ⪯ 0 makes λ_min decreasing in t).
    L : (n, d, r) ndarray of float
        Factors of Σ0 = LLᵀ per case (zero columns allowed).
    t_max : (n,) ndarray of float
        The horizon of the search per case.

    Returns
    -------
    (n,) ndarray of float
        T* per case; NaN where no root lies in (0, t_max].

    Raises
    ------
    numpy.linalg.LinAlgError
        When an eigenvalue solve of a non-finite stack fails.

    See Also
    --------
    van_loan_stack : the stacked (e^{As}, W(s)) the march is built from.
    classify_scalar : confirms each T* with certify's own sign-change check.
    riccati_tf.certify : the per-case blow-up certificate.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".
    .. [2] C. F. Van Loan, "Computing integrals involving the matrix exponential", IEEE TAC
       23(3), 1978.

    Examples
    --------
    A scalar layer ẋ = −x² (A = 0, G = −2, Σ0 = 1) blows up at T* = 1/2:

    >>> import numpy as np
    >>> from riccati_tf.sweep.batched import blowup_times
    >>> T = blowup_times(np.zeros((1, 1, 1)), np.full((1, 1, 1), -2.0), np.ones((1, 1, 1)),
    ...                  np.array([10.0]))
    >>> print(round(float(T[0]), 12))
    0.5

    No root before the horizon gives NaN:

    >>> blowup_times(np.zeros((1, 1, 1)), np.full((1, 1, 1), -2.0), np.ones((1, 1, 1)),
    ...              np.array([0.25]))
    array([nan])
    """
    return _blowup_times(A, G, L, t_max, _EigenGramian(G, L, _eigen_discs(A)))


def _blowup_times(A: np.ndarray, G: np.ndarray, L: np.ndarray, t_max: np.ndarray,
                  gram: _EigenGramian, norm: np.ndarray | None = None) -> np.ndarray:
    """`blowup_times` with the eigen form of S(t) given (`gram`, for the same A, G and L), and
    ‖A‖₂ per case when the caller has it (`norm`)."""
    n, d, r = L.shape
    out = np.full(n, np.nan)
    if n == 0:
        return out
    if norm is None:
        norm = np.linalg.norm(A, 2, axis=(1, 2))
    h = np.where(norm > 0, 1.0 / np.where(norm > 0, norm, 1.0), 1.0)
    h = np.minimum(h, t_max)
    eye_r = np.eye(r)
    Lt = np.swapaxes(L, 1, 2)
    ladder = [van_loan_stack(A, G, h)]  # ladder[j] = (E, W) of a step 2^j h

    def ensure(level: int) -> None:
        while len(ladder) <= level:
            E, W = ladder[-1]
            ladder.append((E @ E, W + np.swapaxes(E, 1, 2) @ W @ E))

    t_a = np.zeros(n)
    E_a = np.broadcast_to(np.eye(d), (n, d, d)).copy()
    W_a = np.zeros((n, d, d))
    level = np.zeros(n, dtype=int)
    steps = np.zeros(n, dtype=int)
    active = np.ones(n, dtype=bool)
    bracketed = np.zeros(n, dtype=bool)
    with np.errstate(over="ignore", invalid="ignore"):
        while np.any(active):
            for j in np.unique(level[active]):
                ensure(int(j))
                idx = np.flatnonzero(active & (level == j))
                Ej, Wj = ladder[j][0][idx], ladder[j][1][idx]
                Ea, Wa = E_a[idx], W_a[idx]
                W_b = Wa + np.swapaxes(Ea, 1, 2) @ Wj @ Ea
                lam = _lam_min(eye_r + Lt[idx] @ W_b @ L[idx])
                hit = lam <= 0
                bracketed[idx[hit]] = True
                active[idx[hit]] = False
                move = idx[~hit]
                t_a[move] += (2.0 ** j) * h[move]
                W_a[move], E_a[move] = W_b[~hit], Ej[~hit] @ Ea[~hit]
                steps[move] += 1
                up = move[steps[move] >= STEPS_PER_LEVEL]
                level[up] += 1
                steps[up] = 0
            lost = active & ((t_a > t_max) | ~np.isfinite(W_a).all(axis=(1, 2)))
            active &= ~lost
        # descent: the bracket [t_a, t_a + 2^level h] halves down to one step h
        for j in range(int(level.max(initial=0)) - 1, -1, -1):
            idx = np.flatnonzero(bracketed & (level > j))
            if idx.size == 0:
                continue
            Ea, Wa = E_a[idx], W_a[idx]
            Ej, Wj = ladder[j][0][idx], ladder[j][1][idx]
            W_m = Wa + np.swapaxes(Ea, 1, 2) @ Wj @ Ea
            pos = _lam_min(eye_r + Lt[idx] @ W_m @ L[idx]) > 0
            move = idx[pos]
            t_a[move] += (2.0 ** j) * h[move]
            W_a[move], E_a[move] = W_m[pos], Ej[pos] @ Ea[pos]
            level[idx] = j
    idx = np.flatnonzero(bracketed)
    if idx.size:
        out[idx] = t_a[idx] + _root_in_step(A[idx], G[idx], L[idx], E_a[idx], W_a[idx], h[idx],
                                            t_a[idx], gram, idx)
    out[out > t_max] = np.nan
    return out


def _root_in_step(A: np.ndarray, G: np.ndarray, L: np.ndarray, E_a: np.ndarray,
                  W_a: np.ndarray, h: np.ndarray, t_a: np.ndarray, gram: _EigenGramian,
                  cases: np.ndarray) -> np.ndarray:
    """The root s ∈ (0, h] of λ_min(I + LᵀW(t_a + s)L) in the step bracketed by the march, as
    found with stacked Padé exponentials (`_van_loan_offsets`). Where the eigen form is usable
    (`gram`, whose case cases[k] is case k here), Newton's method runs on it and one Newton step
    on the Padé form finishes the root (quadratic convergence from within a few κ₂(X)·eps: the
    root of the Padé form to rounding); a case whose last step is longer than POLISH_RTOL
    (t_a + s), or leaves the bracket, is searched on the Padé form from the start."""
    f_pade, f0, d0 = _van_loan_offsets(A, G, L, E_a, W_a)  # f(0), f'(0): for both forms
    out = np.full(h.size, np.nan)
    fast = np.flatnonzero(gram.usable[cases])
    if fast.size:
        f_eig = gram.offsets(cases[fast], t_a[fast])
        out[fast] = _newton_root(f_eig, f0[fast], d0[fast], h[fast], t_a[fast])
        done = fast[np.isfinite(out[fast])]
        f, slope = f_pade(done, out[done])
        with np.errstate(divide="ignore", invalid="ignore"):
            step = np.where(slope < 0, f / slope, np.nan)
        s = out[done] - step
        out[done] = np.where((s > 0) & (s <= h[done]) &
                             (np.abs(step) <= POLISH_RTOL * (t_a[done] + s)), s, np.nan)
    rest = np.flatnonzero(np.isnan(out))
    if rest.size:
        def f_rest(idx: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            return f_pade(rest[idx], s)
        out[rest] = _newton_root(f_rest, f0[rest], d0[rest], h[rest], t_a[rest])
    return out


#: (f(s), f'(s)) on the cases idx at offsets s: the function whose root `_newton_root` finds
_Offsets = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def _van_loan_offsets(A: np.ndarray, G: np.ndarray, L: np.ndarray, E_a: np.ndarray,
                      W_a: np.ndarray) -> tuple[_Offsets, np.ndarray, np.ndarray]:
    """(f, f(0), f'(0)): f(s) = λ_min(S_a + MᵀW(s)M), S_a = I + LᵀW_aL, M = E_aL (the state at
    t_a + s by the semigroup rule), and f'(s) = wᵀGw with w = E_sMu (u the unit eigenvector of
    λ_min, so f' = uᵀMᵀ(dW/ds)Mu with dW/ds = E_sᵀGE_s), W(s) by stacked Padé
    (`van_loan_stack`); at s = 0 (E_0 = I, W(0) = 0) no exponential is needed."""
    M = E_a @ L
    Mt = np.swapaxes(M, 1, 2)
    S_a = np.eye(L.shape[2]) + np.swapaxes(L, 1, 2) @ W_a @ L
    lam0, vec0 = _eigh_finite(S_a)
    w0 = M @ vec0[:, :, :1]

    def f(idx: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        E, W = van_loan_stack(A[idx], G[idx], s)
        lam, vec = _eigh_finite(S_a[idx] + Mt[idx] @ W @ M[idx])
        w = E @ M[idx] @ vec[:, :, :1]
        return lam[:, 0], (np.swapaxes(w, 1, 2) @ G[idx] @ w)[:, 0, 0]
    return f, lam0[:, 0], (np.swapaxes(w0, 1, 2) @ G @ w0)[:, 0, 0]


class _EigenGramian:
    """S(t) = I + LᵀW(t)L per case from one eigendecomposition A = XΛX⁻¹: with Y = X⁻¹L,
    H = XᵀGX and Z_ij = λ_i + λ_j,

        LᵀW(t)L = Yᵀ(H ∘ F(t))Y,  F_ij(t) = ∫_0^t e^{Z_ij u} du = (e^{Z_ij t} − 1)/Z_ij,
        d/dt uᵀS(t)u = wᵀ(H ∘ e^{Zt})w,  w = Yu,

    real up to rounding (conjugate pairs), F by expm1 (t where Z_ij t = 0): a few k×k complex
    products a value instead of a 2k×2k Padé exponential. The rounding grows with κ₂(X): only
    cases with κ₂(X) ≤ ROOT_EIGVEC_COND are `usable`; the others are left to stacked Padé.
    discs: `_eigen_discs` of A."""

    def __init__(self, G: np.ndarray, L: np.ndarray, discs: _Discs) -> None:
        with np.errstate(invalid="ignore"):
            self.usable = discs.cond <= ROOT_EIGVEC_COND
        X = np.where(self.usable[:, None, None], discs.vec, np.eye(G.shape[-1]))
        self.Y = np.linalg.solve(X, L)
        self.Yt = np.swapaxes(self.Y, 1, 2)
        self.H = np.swapaxes(X, 1, 2) @ G @ X
        self.Z = discs.lam[:, :, None] + discs.lam[:, None, :]
        self.eye = np.eye(L.shape[2])

    def at(self, idx: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(S(t), e^{Zt}) for the cases idx at times t (S symmetrised)."""
        Z = self.Z[idx]
        t = t[:, None, None]
        Zt = Z * t
        zero = Zt == 0
        F = np.where(zero, t, np.expm1(Zt) / np.where(zero, 1.0, Z))
        S = self.eye + (self.Yt[idx] @ (self.H[idx] * F) @ self.Y[idx]).real
        return 0.5 * (S + np.swapaxes(S, 1, 2)), np.exp(Zt)

    def offsets(self, cases: np.ndarray, t_a: np.ndarray) -> _Offsets:
        """The f of `_van_loan_offsets` for the cases `cases` at t_a + s (t_a per case)."""
        def f(idx: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            S, expZ = self.at(cases[idx], t_a[idx] + s)
            lam, vec = _eigh_finite(S)
            w = self.Y[cases[idx]] @ vec[:, :, :1]
            return lam[:, 0], (np.swapaxes(w, 1, 2) @ (self.H[cases[idx]] * expZ) @ w)[:, 0, 0].real
        return f


def _eigh_finite(S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.linalg.eigh per case, NaN for a case with a non-finite entry (an overflowing W(t):
    LAPACK may not converge on it); `_newton_root` then leaves that case unresolved."""
    lam, vec = np.full(S.shape[:2], np.nan), np.full(S.shape, np.nan)
    ok = np.isfinite(S).all(axis=(1, 2))
    if ok.any():
        lam[ok], vec[ok] = np.linalg.eigh(S[ok])
    return lam, vec


def _newton_root(f: _Offsets, f_lo: np.ndarray, d_lo: np.ndarray, h: np.ndarray,
                 t_a: np.ndarray) -> np.ndarray:
    """Root s ∈ (0, h] of a decreasing f with f(0) = f_lo > 0 ≥ f(h) (f'(0) = d_lo), per case.

    Newton's method on the bracket [lo, hi], f(lo) > 0 ≥ f(hi), both ends kept with their f and
    f' (f' ≤ 0 for G ⪯ 0): each step starts from the end where |f| is smaller, so that a root
    found to rounding from either side ends the search at once. A step that would leave the
    bracket, or (after the first) is not at most half the previous step (f' ≥ 0, or no quadratic
    convergence: f at rounding level), is a bisection instead. Stops when the Newton step is at
    most 4·eps(t_a + s) long (the result is its end) or the bracket is that narrow (its
    midpoint), after at most MAX_ROOT_STEPS iterations. NaN where f(h) > 0 or is not finite (the
    bracket does not hold for this f)."""
    n = h.size
    lo, f_lo, d_lo = np.zeros(n), f_lo.copy(), d_lo.copy()
    hi = h.copy()
    f_hi, d_hi = f(np.arange(n), hi)
    last = np.full(n, np.inf)
    out = np.full(n, np.nan)
    out[f_hi == 0] = hi[f_hi == 0]
    active = f_hi < 0
    unresolved = ~(f_hi <= 0)
    for _ in range(MAX_ROOT_STEPS):
        active &= (hi - lo) > 4 * _EPS * (t_a + hi)
        from_lo = np.abs(f_lo) < np.abs(f_hi)
        x = np.where(from_lo, lo, hi)
        fx, dx = np.where(from_lo, f_lo, f_hi), np.where(from_lo, d_lo, d_hi)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = np.where(dx < 0, fx / dx, np.nan)
        converged = active & (np.abs(step) <= 4 * _EPS * (t_a + x))
        out[converged] = x[converged] - step[converged]
        active &= ~converged
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        a, b, y = lo[idx], hi[idx], x[idx] - step[idx]
        newton = (y > a) & (y < b) & (np.abs(step[idx]) <= 0.5 * last[idx])
        y = np.where(newton, y, 0.5 * (a + b))
        last[idx] = np.where(newton, np.abs(step[idx]), 0.5 * (b - a))
        fy, dy = f(idx, y)
        zero = fy == 0
        out[idx[zero]] = y[zero]
        active[idx[zero]] = False
        lost = ~np.isfinite(fy)
        unresolved[idx[lost]] = True
        active[idx[lost]] = False
        up, down = idx[fy > 0], idx[fy < 0]
        lo[up], f_lo[up], d_lo[up] = y[fy > 0], fy[fy > 0], dy[fy > 0]
        hi[down], f_hi[down], d_hi[down] = y[fy < 0], fy[fy < 0], dy[fy < 0]
    rest = np.isnan(out)
    out[rest] = 0.5 * (lo[rest] + hi[rest])
    out[unresolved] = np.nan
    return out


# ------------------------------------------------------------------------- the classifier


@dataclass(frozen=True, eq=False)
class BatchedCertificates:
    """certify's verdicts for a stack of n scalar-V layers, field by field (NaN for None).

    The fields of `riccati_tf.Certificate` that a sweep records, for n layers of
    Σ̇ = AΣ + ΣAᵀ − ΣGΣ at once, as returned by `classify_scalar`.

    Parameters
    ----------
    regime : (n,) ndarray of str (object)
        "converges", "collapses", "blows_up", "grows" or "undetermined" ("bounded" is left to
        `certify`); "" where not handled.
    theorem : (n,) ndarray of str (object)
        The SPEC §5 theorem the verdict rests on (certificates.THEOREMS); "" where not handled.
    exact : (n,) ndarray of bool
        Whether the premises were decided exactly (as certify decides them in rational
        arithmetic).
    global_ : (n,) ndarray of bool
        Whether the verdict holds for every Σ0 ≻ 0, not only this Σ0.
    rate : (n,) ndarray of float
        The exponential rate of convergence or collapse; NaN for None.
    blowup_time : (n,) ndarray of float
        T* of a blow-up; NaN for None.
    threshold : (n,) ndarray of float
        λ_max(W∞Σ0) for Hurwitz A and G ≺ 0 (blow-up iff > 1); NaN for None.
    handled : (n,) ndarray of bool
        False where the batched path cannot show that its verdict is certify's (premises within
        the rounding margins, numerical evidence, a T* it cannot confirm): such a case must go
        to `certify` itself.
    g_eigenvalues : (n, d) ndarray of float
        The eigenvalues of G, increasing (NaN for a non-finite case).
    a_eigenvalues : (n, d) ndarray of complex
        The eigenvalues of A (NaN for a non-finite case).
    rank0 : (n,) ndarray of int
        The rank of Σ0; −1 where not decided.

    Raises
    ------
    TypeError
        When a field is missing (the dataclass constructor; the fields are not checked).

    See Also
    --------
    classify_scalar : computes these verdicts.
    riccati_tf.Certificate : the per-case certificate whose fields these are.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up", and §6 "Certificates".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.sweep.batched import classify_scalar
    >>> res = classify_scalar(-np.eye(2)[None], 2 * np.eye(2)[None], np.eye(2)[None])
    >>> len(res), res.regime[0], res.theorem[0], bool(res.handled[0]), float(res.rate[0])
    (1, 'collapses', 'psd_hurwitz', True, 2.0)
    """

    regime: np.ndarray
    theorem: np.ndarray
    exact: np.ndarray
    global_: np.ndarray
    rate: np.ndarray
    blowup_time: np.ndarray
    threshold: np.ndarray
    handled: np.ndarray
    g_eigenvalues: np.ndarray
    a_eigenvalues: np.ndarray
    rank0: np.ndarray

    def __len__(self) -> int:
        return self.regime.size


def scalar_values(V: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(mask, v): mask[i] when every V_h[i] is exactly v_h I (zero off the diagonal, one value
    on it — the premise of certify's exact theorems; a V that is scalar only within SCALAR_RTOL
    goes to `certify`); v (n, H) holds tr V_h / d, the value Params.value_scalars gives."""
    d = V[0].shape[-1]
    eye = np.eye(d)
    v = np.stack([np.trace(Vh, axis1=1, axis2=2) / d for Vh in V], axis=1)
    mask = np.ones(v.shape[0], dtype=bool)
    for Vh in V:
        mask &= ~np.any(Vh - Vh[:, :1, :1] * eye, axis=(1, 2))
    return mask, v


def quadratic_constants(V: tuple[np.ndarray, ...], B: tuple[np.ndarray, ...]) -> np.ndarray:
    """c = 2 Σ_h ‖V_h‖₂ ‖B_h‖₂ per case (equilibrium.quadratic_constant on a stack)."""
    return 2.0 * sum(np.linalg.norm(Vh, 2, axis=(1, 2)) * np.linalg.norm(Bh, 2, axis=(1, 2))
                     for Vh, Bh in zip(V, B, strict=True))


def g_matrix(v: np.ndarray, B: tuple[np.ndarray, ...]) -> np.ndarray:
    """G = −Σ_h v_h (B_h + B_hᵀ) per case, summed in Params.G's order."""
    total: Any = 0
    for h, Bh in enumerate(B):
        total = total + v[:, h, None, None] * (Bh + np.swapaxes(Bh, 1, 2))
    return -total


def g_rounding(V: tuple[np.ndarray, ...], B: tuple[np.ndarray, ...]) -> np.ndarray:
    """A bound on ‖G_exact − G‖₂ per case, G = g_matrix(v, B) with v_h = tr V_h / d and
    G_exact = −Σ_h V_h[0,0](B_h + B_hᵀ) in exact arithmetic (V_h exactly v_h I).

    Entrywise, fl(B_h + B_hᵀ), the product with v_h, the running sum over H heads and v_h itself
    (d + 1 roundings of the trace mean) err by at most (H + d + 3) eps Σ_h |v_h||B_h + B_hᵀ|;
    the factor 2 covers the rounding of this bound, 4Hd subnormal units the underflows."""
    d = B[0].shape[-1]
    H = len(B)
    mag = sum(np.abs(Vh[:, :1, :1]) * np.abs(Bh + np.swapaxes(Bh, 1, 2))
              for Vh, Bh in zip(V, B, strict=True))
    return 2 * (H + d + 3) * _EPS * np.linalg.norm(mag, axis=(1, 2)) + 4 * H * d * _SUBNORMAL


def classify_scalar(A: npt.NDArray[np.float64], G: npt.NDArray[np.float64],
                    cov0: npt.NDArray[np.float64], quadratic: npt.ArrayLike | None = None, *,
                    heads: tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]] | None = None
                    ) -> BatchedCertificates:
    """certify's verdict for a stack of n scalar-V layers at once (handled) or none.

    For layers whose value matrices are exactly V_h = v_h I the covariance obeys the Riccati
    equation Σ̇ = AΣ + ΣAᵀ − ΣGΣ, G = −Σ_h v_h(B_h + B_hᵀ), with the closed form
    Σ(t) = e^{At}Σ0(I + W(t)Σ0)⁻¹e^{Aᵀt}, W(t) = ∫_0^t e^{Aᵀu} G e^{Au} du. The SPEC §5
    theorems that `certify` applies are decided here on the whole stack: the definiteness of G
    and of Σ0, the half-plane counts of λ(A) and, for G ≺ 0 with A Hurwitz, the sign of
    λ_max(W∞Σ0) − 1, each in floating point only where a margin far larger than every rounding
    error shows that the exact decision is the same (module docstring); blow-up times by
    `blowup_times`, confirmed by certify's own check. A case the margins do not settle is
    marked handled False and belongs to `certify`.

    Parameters
    ----------
    A : (n, d, d) ndarray of float
        The drift matrices.
    G : (n, d, d) ndarray of float, symmetric
        G = −Σ_h v_h(B_h + B_hᵀ) per case, as `g_matrix` computes it.
    cov0 : (n, d, d) ndarray of float, symmetric positive semidefinite
        The initial covariances Σ0.
    quadratic : (n,) array_like of float, optional
        c = 2 Σ_h ‖V_h‖₂‖B_h‖₂ per case (equilibrium.quadratic_constant), which sets certify's
        blow-up horizon MAX_NORM_TIME / max(‖A‖₂, c‖Σ0‖₂) and, without `heads`, the size of G's
        rounding; None counts as c = 0 (or is computed from `heads`).
    heads : tuple (V, B) of tuples of (n, d, d) ndarray, optional
        The stacks of value and key-query matrices per head: G's rounding is then bounded
        exactly (`g_rounding`) and the cases the floating-point margins cannot settle get
        certify's own premises case by case; without it they are left to `certify`.

    Returns
    -------
    BatchedCertificates
        The verdict fields per case; handled False where the case must go to `certify`.

    Raises
    ------
    ValueError
        When the stacks do not have matching shapes (n, d, d).
    numpy.linalg.LinAlgError
        When a stacked eigensolver fails on finite input (non-finite cases are left unhandled,
        not raised).

    See Also
    --------
    riccati_tf.certify : the per-case certificate whose verdict this reproduces.
    riccati_tf.sweep.runner.certify_columns : a sweep chunk's certificates, batched first.
    blowup_times : the T* search on a stack.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up", and §6 "Certificates".
    .. [2] F. L. Bauer and C. T. Fike, "Norms and exclusion theorems", Numer. Math. 2, 1960
       (the discs that decide the half-plane counts of λ(A)).

    Examples
    --------
    Three layers of `riccati_tf.app.examples.regime_examples`, V = vI:

    >>> import numpy as np
    >>> from riccati_tf.sweep.batched import classify_scalar
    >>> rot = np.array([[0.0, -1.0], [1.0, 0.0]])
    >>> B = np.array([[1.0, 0.2], [0.2, 0.6]])
    >>> A = np.stack([0.5 * np.eye(2) + 0.3 * rot, -0.4 * np.eye(2) + 0.5 * rot,
    ...               0.2 * np.eye(2) + 0.3 * rot])
    >>> v = np.array([-1.0, -1.0, 0.3])
    >>> G = -v[:, None, None] * (B + B.T)
    >>> cov0 = np.broadcast_to([[1.0, 0.3], [0.3, 0.5]], (3, 2, 2))
    >>> res = classify_scalar(A, G, cov0)
    >>> res.regime.tolist(), res.handled.tolist()
    (['converges', 'collapses', 'blows_up'], [True, True, True])
    >>> print(round(float(res.blowup_time[2]), 6))
    1.101518

    The same as `certify`, one layer at a time:

    >>> from riccati_tf import Params, certify
    >>> cert = certify(Params(A=A[2], B=B, V=0.3 * np.eye(2)), cov0[2])
    >>> cert.regime, bool(np.isclose(cert.blowup_time, res.blowup_time[2], rtol=1e-12))
    ('blows_up', True)
    """
    with np.errstate(all="ignore"):  # non-finite intermediates are tested for, not warned of
        return _classify(A, G, cov0, quadratic, heads)


def _classify(A: np.ndarray, G: np.ndarray, cov0: np.ndarray, quadratic: npt.ArrayLike | None,
              heads: tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]] | None
              ) -> BatchedCertificates:
    n = A.shape[0]
    if heads is not None and quadratic is None:
        quadratic = quadratic_constants(*heads)
    c = None if quadratic is None else np.asarray(quadratic, dtype=float)
    g_err = g_rounding(*heads) if heads is not None else _default_g_error(G, quadratic)
    table = _Table(n)
    zero = ~np.any(cov0, axis=(1, 2))
    table.set(np.flatnonzero(zero), "collapses", "zero", True, False)
    fast = _fast_premises(A, G, cov0, g_err)
    prem, covs = fast.premises, cov0
    d = A.shape[-1]
    zero_ok = np.zeros(n, dtype=bool)
    if heads is not None:
        covs = cov0.copy()
        fin = np.flatnonzero(np.isfinite(fast.g_eigenvalues).all(axis=1) & ~zero)
        if d > EXACT_MAX_D and fin.size:
            discs = fast.discs[fin]
            if EXACT_CHECK_MAX_D < d <= KRONECKER_MAX_D:
                zero_ok[fin] = _lyapunov_certified(A[fin], discs,
                                                   np.linalg.norm(A[fin], 2, axis=(1, 2)))
            first = [(Vh[fin[0]], Bh[fin[0]]) for Vh, Bh in zip(*heads, strict=True)]
            tol = default_tolerance(Params(A=A[fin[0]], heads=first))
            stacked = _numerical_stack(A[fin], G[fin], cov0[fin], g_err[fin],
                                       fast.g_eigenvalues[fin], discs, tol)
            for i, pr in zip(fin, stacked, strict=True):
                prem[i] = pr
        for i in np.flatnonzero(~zero):
            if prem[i] is None:
                prem[i], covs[i] = _case_premises(A[i], heads, i, cov0[i])
    blow: list[int] = []
    for i in np.flatnonzero(~zero):
        if prem[i] is not None:
            _settle(table, i, prem[i], A[i], G[i], covs[i], fast.a_eigenvalues[i],
                    fast.g_eigenvalues[i], blow, bool(zero_ok[i]),
                    0.0 if c is None else float(c[i]))
    if blow:
        _blowups(table, np.array(blow), A, G, covs, prem, quadratic, fast.discs[blow])
    return BatchedCertificates(table.regime, table.theorem, table.exact, table.global_,
                               table.rate, table.blowup_time, table.threshold, table.handled,
                               fast.g_eigenvalues, fast.a_eigenvalues,
                               np.array([-1 if pr is None else pr.rank0 for pr in prem], int))


class _Table:
    """The verdict columns under construction."""

    def __init__(self, n: int) -> None:
        self.regime = np.full(n, "", dtype=object)
        self.theorem = np.full(n, "", dtype=object)
        self.exact, self.global_, self.handled = (np.zeros(n, dtype=bool) for _ in range(3))
        self.rate, self.blowup_time, self.threshold = (np.full(n, np.nan) for _ in range(3))

    def set(self, idx: int | np.integer | np.ndarray, regime: str, theorem: str, exact: bool,
            glob: bool, *, rate: float | None = None, threshold: float | None = None) -> None:
        self.regime[idx], self.theorem[idx], self.handled[idx] = regime, theorem, True
        self.exact[idx], self.global_[idx] = exact, glob
        self.rate[idx] = np.nan if rate is None else rate
        self.threshold[idx] = np.nan if threshold is None else threshold

    def drop(self, idx: int | np.integer | np.ndarray) -> None:
        """Hand the cases back to `certify`."""
        self.regime[idx], self.theorem[idx], self.handled[idx] = "", "", False
        self.exact[idx] = self.global_[idx] = False
        self.rate[idx] = self.blowup_time[idx] = self.threshold[idx] = np.nan


def _settle(table: _Table, i: int | np.integer, pr: Premises, A: np.ndarray, G: np.ndarray,
            cov0: np.ndarray, eig: np.ndarray, g_eig: np.ndarray, blow: list[int],
            zero_ok: bool = False, c: float = 0.0) -> None:
    """certify's branch for premises `pr` (certificates.theorem_of and `_certify`) on layer i
    (A, G, start Σ0 = cov0; eigenvalues eig of A, g_eig of G), except that a blow-up waits for
    its T* (`_blowups`), a convergence needs the stabilizing solution certify will find
    (`stabilizing_found`), and anything integrated is left to certify.

    Numerical premises (d > EXACT_MAX_D: decided with certify's tolerances, exact False) settle
    only the verdicts whose certificate `check()` re-decides from the premises alone: certify
    attaches a local Lyapunov certificate to a numerical "collapses" at Σ* = 0 when
    d ≤ KRONECKER_MAX_D (its failure would make the verdict "undetermined"), so such cases go to
    certify unless zero_ok (`_lyapunov_certified`: that certificate passes its re-check), as do
    numerical "psd_gramian_pd" verdicts unless the same holds at Σ* (c: the case's quadratic
    constant); a numerical blow-up is kept only where G is negative definite beyond eigvalsh's
    rounding (`_provably_nd`), so that T* is the first root of a monotone function, as for an
    exact premise. A numerical "grows" or "converges" that G ∓ δI do not share
    (`certificates.bracket_agrees`) is left to certify, which then decides by the closed form."""
    d = A.shape[-1]
    got = theorem_of(pr, d)
    if got is None:
        if pr.g_nsd and pr.range_stable and pr.threshold_sign == 0:
            table.set(i, "undetermined", "numerical", False, False, threshold=pr.threshold)
        return
    theorem, regime = got
    if not bracket_agrees(Params(A, B=-0.5 * G, V=np.eye(d)), cov0, pr):
        return
    glob = THEOREMS[theorem][1] and pr.exact
    local = not pr.exact and d <= KRONECKER_MAX_D  # certify's local Lyapunov evidence decides
    re = eig.real
    if theorem == "psd_hurwitz":
        if not local or zero_ok:
            table.set(i, regime, theorem, pr.exact, glob, rate=-2 * float(np.max(re)))
    elif theorem == "psd_gramian_singular":
        table.set(i, regime, theorem, pr.exact, glob)
    elif theorem == "psd_gramian_pd":
        if stabilizing_found(A, G, pr.n_right, local_c=c if local else None):
            table.set(i, regime, theorem, pr.exact, glob, rate=2 * float(np.min(np.abs(re))))
    elif regime == "blows_up":
        if pr.exact or _provably_nd(g_eig):
            table.set(i, regime, theorem, pr.exact, glob, threshold=pr.threshold)
            blow.append(int(i))
    elif pr.threshold is not None and np.any(re < 0) and not (local and pr.n_left == d
                                                              and not zero_ok):
        table.set(i, regime, theorem, pr.exact, glob, threshold=pr.threshold,
                  rate=-2 * float(np.max(re[re < 0])))


def _provably_nd(g_eig: np.ndarray) -> bool:
    """G ≺ 0 with its largest computed eigenvalue below −ROUNDING_ULPS d eps ‖G‖₂."""
    d = g_eig.size
    return bool(g_eig[-1] < -ROUNDING_ULPS * d * _EPS * np.abs(g_eig).max())


def _lyapunov_certified(M: np.ndarray, discs: _Discs, norm: np.ndarray) -> np.ndarray:
    """Whether certify's local Lyapunov certificate for the linearisation L(H) = MH + HMᵀ on
    Sym(d) passes its re-check, per case (EXACT_CHECK_MAX_D < d ≤ KRONECKER_MAX_D, so that no
    rational re-check runs): M = A at Σ* = 0, M = A − Σ*G at a Bernoulli solution Σ*, where
    certify's Kronecker form of L is this operator up to rounding; norm ≥ ‖M‖₂ bounds the
    entries that form L (‖A‖₂, or ‖A‖₂ + c‖Σ*‖₂ with c ≥ ‖G‖₂).

    L has n_s = d(d + 1)/2 coordinates, ‖L‖ ≤ 2 norm and ‖e^{Lt}‖ ≤ ‖e^{Mt}‖₂², and certify
    solves LᵀP + PL = −I (Bartels–Stewart). With M = VΛV⁻¹ + E (LAPACK's eigenpairs, the
    Bauer–Fike radius r ≥ κ₂(V)‖E‖₂ of `_eigen_discs`: discs), ‖e^{Mt}‖₂ ≤ κ e^{αt},
    α = max Re λ + r, so for α < 0 ‖P‖₂ ≤ ∫‖e^{Mt}‖₂⁴dt ≤ κ⁴/(4|α|) and λ_min(P) ≥ 1/(2‖L‖):
    κ₂(P) ≤ norm κ⁴/|α|. When that times ROUNDING_ULPS n_s eps is at most LYAP_CERT_RTOL, L's
    computed spectrum is in the left half-plane (its backward error and the rounding of L are far
    inside the stability radius 1/(2‖P‖)), and the computed P and −(LᵀP + PL) (the identity up
    to a residual of relative size n_s eps κ₂(P)) are positive definite far beyond Cholesky's
    rounding, so the check's Cholesky factorisations succeed. The rest of the check
    (`certificates._local_bounds`: the Kantorovich ball and the basin level) recomputes what
    certify computed to build the certificate, from the same data: a certificate built passes
    it, and one that certify cannot build is not attached, which leaves the verdict unchanged."""
    d = M.shape[-1]
    lam, cond, radius = discs.lam, discs.cond, discs.radius
    alpha = lam.real.max(axis=1) + radius
    rounding = ROUNDING_ULPS * (d * (d + 1) // 2) * _EPS * norm
    with np.errstate(over="ignore", invalid="ignore"):
        return (cond <= EIGVEC_COND_MAX) & (alpha < 0) & \
            (rounding * cond ** 4 <= -LYAP_CERT_RTOL * alpha)


def _numerical_stack(A: np.ndarray, G: np.ndarray, cov0: np.ndarray, g_err: np.ndarray,
                     g: np.ndarray, discs: _Discs, tol: dict) -> list[Premises | None]:
    """certify's numerical premises (`certificates._numerical_premises` with the tolerances tol)
    for layers beyond EXACT_MAX_D, wherever margins show that certify decides them the same way;
    None elsewhere (`_case_premises` then computes them). g: the eigenvalues of G; discs: A's
    (`_eigen_discs`).

    G's signs against sign_rtol max|λ(G)| are kept when no extreme eigenvalue lies within half
    that tolerance of it; Σ0 exactly symmetric with λ_min(Σ0) > 2 rank_rtol λ_max has rank d; the
    half-plane counts of A are kept when every Bauer–Fike disc, widened by the rounding
    ROUNDING_ULPS d eps κ₂(V)‖A‖_F of certify's eigensolvers, lies beyond axis_rtol‖A‖_F of iℝ
    (n_axis = 0). Then:

    - G ⪰ 0 with n_right > 0: certify's unseen is False when G ≻ 0 and a lower bound of its
      reciprocal condition number of the anti-stable Gramian P (T₁₁ᵀP + PT₁₁ = U₁ᵀGU₁,
      `riccati.schur_split`), g_min / (2√k‖A‖₂ max(√k p, d‖G‖₂/(2‖A‖₂))) with k = n_right,
      λ_min(P) ≥ g_min/(2‖A‖₂) and ‖P‖₂ ≤ p = ‖G‖₂κ²/(2α₊) (α₊: the least Re λ − r over the
      anti-stable discs), is at least UNSEEN_MARGIN singular_rcond;
    - G ⪯ 0, not ⪰ 0: with A not Hurwitz, range Σ0 leaves the stable subspace (range_stable
      False) when λ_min(Σ0) ≥ (RANGE_MARGIN range_rtol)² tr Σ0, since then
      ‖L0 − U_sU_sᵀL0‖_F ≥ σ_min(L0) > range_rtol‖L0‖_F; with A Hurwitz range_stable is True
      (U_s is all of U), λ_max(W∞Σ0) and its error bound come from `_threshold_bound`, and the
      sign of λ − 1 against threshold_rtol is kept when | |λ − 1| − threshold_rtol | exceeds
      twice that bound (certify's value has a residual of the same size: its error is bounded
      alike) plus THRESHOLD_SLACK max(1, λ)."""
    n, d = A.shape[:2]
    lam, cond, radius = discs.lam, discs.cond, discs.radius
    gmax = np.abs(g).max(axis=1)
    gtol = tol["sign_rtol"] * np.maximum(gmax, _TINY)
    sure = (np.abs(np.abs(g[:, 0]) - gtol) > 0.5 * gtol) & \
        (np.abs(np.abs(g[:, -1]) - gtol) > 0.5 * gtol)
    psd, nsd, nd, pd = g[:, 0] >= -gtol, g[:, -1] <= gtol, g[:, -1] < -gtol, g[:, 0] > gtol
    fro = np.linalg.norm(A, axis=(1, 2))
    re = lam.real
    widen = radius + ROUNDING_ULPS * d * _EPS * cond * fro
    counted = (cond <= EIGVEC_COND_MAX) & \
        (np.abs(re) - widen[:, None] > (tol["axis_rtol"] * fro)[:, None]).all(axis=1)
    left = (re < 0).sum(axis=1)
    right = d - left
    e0 = np.linalg.eigvalsh(cov0)
    ok = sure & counted & ~(psd & nsd) & ~np.any(cov0 - np.swapaxes(cov0, 1, 2), axis=(1, 2)) & \
        (e0[:, 0] > 2 * tol["rank_rtol"] * e0[:, -1]) & (e0[:, 0] > 0)
    # G ⪰ 0, anti-stable modes: unseen = False from the Gramian's conditioning
    a2 = np.linalg.norm(A, 2, axis=(1, 2))
    alpha = np.where(re > 0, re - radius[:, None], np.inf).min(axis=1)
    k = np.maximum(right, 1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # A = 0, G = 0: no rcond
        p_norm = gmax * cond ** 2 / (2 * alpha)
        rcond = g[:, 0] / (2 * np.sqrt(k) * a2 * np.maximum(np.sqrt(k) * p_norm,
                                                            d * gmax / (2 * a2)))
    gram = psd & (right > 0)
    ok &= ~gram | (pd & (alpha > 0) & (rcond >= UNSEEN_MARGIN * tol["singular_rcond"]))
    # G ⪯ 0: range Σ0 in the stable subspace, the threshold
    neg = nsd & ~psd
    hurwitz = left == d
    leaves = ~hurwitz & (e0[:, 0] >= (RANGE_MARGIN * tol["range_rtol"]) ** 2 * e0.sum(axis=1))
    thr = np.full(n, np.nan)
    sign = np.zeros(n, dtype=int)
    inside = np.zeros(n, dtype=bool)
    h = np.flatnonzero(ok & neg & hurwitz)
    if h.size:
        thr[h], bound = _threshold_bound(A[h], G[h], cov0[h], g_err[h], discs[h])
        off = np.abs(thr[h] - 1)
        inside[h] = np.abs(off - tol["threshold_rtol"]) > \
            2 * bound + THRESHOLD_SLACK * np.maximum(1.0, thr[h])
        sign[h] = np.where(off <= tol["threshold_rtol"], 0, np.sign(thr[h] - 1)).astype(int)
    ok &= ~neg | leaves | inside
    out: list[Premises | None] = [None] * n
    for i in np.flatnonzero(ok):
        out[i] = Premises(
            tolerance=tol, g_psd=bool(psd[i]), g_nsd=bool(nsd[i]), g_nd=bool(nd[i]),
            g_pd=bool(pd[i]), n_left=int(left[i]), n_axis=0, n_right=int(right[i]), rank0=d,
            unseen=False if gram[i] else None, observable=True if pd[i] else None,
            range_stable=bool(hurwitz[i]) if neg[i] else None,
            threshold_sign=int(sign[i]) if neg[i] and hurwitz[i] else None,
            threshold=float(thr[i]) if neg[i] and hurwitz[i] else None)
    return out


def _blowups(table: _Table, idx: np.ndarray, A: np.ndarray, G: np.ndarray, covs: np.ndarray,
             prem: list[Premises | None], quadratic: npt.ArrayLike | None,
             discs: _Discs) -> None:
    """T* for the blow-up verdicts idx, on certify's horizon MAX_NORM_TIME / max(‖A‖₂, c‖Σ0‖₂);
    a case whose T* is not found, lies near the horizon or beyond BLOWUP_NORM_TIME of ‖A‖₂,
    or fails certify's own sign-change check (`certificates.blowup_check`) goes to certify.
    discs: `_eigen_discs` of A[idx]."""
    d = A.shape[-1]
    c = np.zeros(idx.size) if quadratic is None else np.asarray(quadratic, float)[idx]
    anorm = np.linalg.norm(A[idx], 2, axis=(1, 2))
    scale = np.maximum(anorm, c * np.linalg.norm(covs[idx], 2, axis=(1, 2)))
    t_max = MAX_NORM_TIME / np.maximum(scale, _TINY)
    L0 = np.zeros((idx.size, d, d))
    for k, i in enumerate(idx):
        L0[k, :, :prem[i].rank0] = cov_root(covs[i], prem[i].rank0)
    gram = _EigenGramian(G[idx], L0, discs)
    T = _blowup_times(A[idx], G[idx], L0, t_max, gram, anorm)
    found = np.isfinite(T) & (T <= (1 - HORIZON_RTOL) * t_max) & (anorm * T <= BLOWUP_NORM_TIME)
    sign = np.zeros(idx.size, dtype=int)
    sign[found] = _check_signs(A[idx[found]], G[idx[found]], L0[found], T[found], gram,
                               np.flatnonzero(found))
    for k, i in enumerate(idx):
        ok = found[k] and (sign[k] > 0 or (sign[k] == 0 and
                                          _confirmed(A[i], G[i], covs[i], T[k])))
        if ok:
            table.blowup_time[i] = T[k]
        else:
            table.drop(i)


def _check_signs(A: np.ndarray, G: np.ndarray, L0: np.ndarray, T: np.ndarray,
                 gram: _EigenGramian, cases: np.ndarray) -> np.ndarray:
    """certify's blow-up check (`certificates.blowup_check`: λ_min(I + L0ᵀW(t)L0) > 0 at
    T(1 − BLOWUP_CHECK_RTOL), < 0 at T(1 + BLOWUP_CHECK_RTOL), W by its stepping) on the stack:
    +1 where it passes and −1 where it fails, both by more than CHECK_MARGIN; 0 in between.
    S(t) from the eigen form where usable (`gram`, its case cases[k] is case k here: rounding
    of about κ₂(X)·eps, ROOT_EIGVEC_COND·eps ≪ CHECK_MARGIN) and finite, by certify's stepping
    with stacked Padé elsewhere; 0 where that is not finite either."""
    r = L0.shape[-1]
    Lt = np.swapaxes(L0, 1, 2)
    fast = gram.usable[cases]
    out = []
    for t in (T * (1 - BLOWUP_CHECK_RTOL), T * (1 + BLOWUP_CHECK_RTOL)):
        S = np.full((T.size, r, r), np.nan)
        S[fast] = gram.at(cases[fast], t[fast])[0]
        slow = ~np.isfinite(S).all(axis=(1, 2))
        S[slow] = np.eye(r) + Lt[slow] @ _gramian_stack(A[slow], G[slow], t[slow]) @ L0[slow]
        e = _eigh_finite(S)[0]
        out.append((e[:, 0], CHECK_MARGIN * (1 + np.abs(e).max(axis=1))))
    (lo, m_lo), (hi, m_hi) = out
    passes = (lo > m_lo) & (hi < -m_hi)
    fails = (lo < -m_lo) | (hi > m_hi)
    return np.where(passes, 1, np.where(fails, -1, 0))


def _gramian_stack(A: np.ndarray, G: np.ndarray, t: np.ndarray) -> np.ndarray:
    """W(t) per case by certify's stepping (certificates._gramian): n = min(⌈‖A‖₂t⌉,
    MAX_GRAMIAN_STEPS) steps (at least 1) of the semigroup rule W(s + h) = W(s) + E_sᵀW(h)E_s."""
    d = A.shape[-1]
    n = np.minimum(np.maximum(1.0, np.ceil(np.linalg.norm(A, 2, axis=(1, 2)) * t)),
                   MAX_GRAMIAN_STEPS).astype(int)
    Eh, Wh = van_loan_stack(A, G, t / n)
    E = np.broadcast_to(np.eye(d), A.shape).copy()
    W = np.zeros(A.shape)
    for k in range(int(n.max(initial=0))):
        on = k < n
        W[on] += np.swapaxes(E[on], 1, 2) @ Wh[on] @ E[on]
        E[on] = Eh[on] @ E[on]
    return 0.5 * (W + np.swapaxes(W, 1, 2))


def stabilizing_found(A: np.ndarray, G: np.ndarray, n_right: int,
                      local_c: float | None = None) -> bool:
    """Whether certify's "psd_gramian_pd" branch gets its equilibrium: `equilibria` solves the
    Bernoulli equation by riccati.bernoulli(A, G) (the same call, so the same Σ), and keeps Σ
    when it is PSD (`is_psd`), of rank n_right, with A − ΣG Hurwitz, and of relative residual
    ≤ ACCEPT_RTOL over its heads. The residual is bounded here from G: ‖AΣ + ΣAᵀ − ΣGΣ‖_F /
    (‖AΣ‖_F + ½‖ΣGΣ‖_F) ≤ ACCEPT_RTOL / 10 implies the heads' residual (whose denominator is
    at least this one's, ‖ΣGΣ‖ ≤ 2Σ_h‖v_hΣB_hΣ‖) is below ACCEPT_RTOL, the rounding of the two
    forms (≈ 1e-14 relative) being far inside the factor 10. local_c: c = 2Σ_h‖V_h‖₂‖B_h‖₂ when
    certify attaches its local Lyapunov certificate at Σ (numerical premises, d ≤
    KRONECKER_MAX_D): it must then provably pass its re-check (`_lyapunov_certified`, with
    d > EXACT_CHECK_MAX_D)."""
    try:
        sol = bernoulli(A, G)
    except SolverError:
        return False
    a, k = exponent(A), exponent(sol.X)  # the ratio is that of (A 2^−a, G 2^(k−a), Σ 2^−k)
    As, Gs, Xs = np.ldexp(A, -a), np.ldexp(G, k - a), np.ldexp(sol.X, -k)
    AX, XGX = As @ Xs, Xs @ Gs @ Xs
    scale = np.linalg.norm(AX) + 0.5 * np.linalg.norm(XGX)
    res = np.linalg.norm(AX + AX.T - XGX) / scale if scale > 0 else np.inf
    found = bool(is_psd(sol.X) and sol.rank == n_right and np.max(sol.closed_loop.real) < 0
                 and res <= ACCEPT_RTOL / 10)
    if not found or local_c is None:
        return found
    Mc = (A - sol.X @ G)[None]
    norm = np.linalg.norm(A, 2) + local_c * np.linalg.norm(sol.X, 2)
    return bool(A.shape[0] > EXACT_CHECK_MAX_D and
                _lyapunov_certified(Mc, _eigen_discs(Mc), np.array([norm]))[0])


def _confirmed(A: np.ndarray, G: np.ndarray, cov0: np.ndarray, T: float) -> bool:
    try:
        return blowup_check(A, G, cov0, float(T))
    except (LinAlgError, ValueError, ArithmeticError):
        return False


def _case_premises(A: np.ndarray,
                   heads: tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]],
                   i: int | np.integer, cov0: np.ndarray
                   ) -> tuple[Premises | None, np.ndarray]:
    """certify's own premises for case i (certificates.premises on the validated layer), and
    the Σ0 certify works with; (None, Σ0) where certify would refuse or fail."""
    V, B = heads
    try:
        p = Params(A=A, heads=[(Vh[i], Bh[i]) for Vh, Bh in zip(V, B, strict=True)])
        cov = as_covariance("cov0", cov0, p.d)
        with numerical_failures("certify"):
            return premises(p, cov), cov
    except (InvalidInputError, SolverError):
        return None, cov0


def _default_g_error(G: np.ndarray, quadratic: npt.ArrayLike | None) -> np.ndarray:
    """G's rounding without the heads: G_ROUND_ULPS eps max(‖G‖_F, √d c)."""
    scale = np.linalg.norm(G, axis=(1, 2))
    if quadratic is not None:
        scale = np.maximum(scale, np.sqrt(G.shape[-1]) * np.asarray(quadratic, float))
    return G_ROUND_ULPS * _EPS * scale


@dataclass(frozen=True)
class _Fast:
    premises: list  # Premises (exact) per case, or None where the margins do not decide
    a_eigenvalues: np.ndarray
    g_eigenvalues: np.ndarray
    discs: _Discs  # A's eigendecomposition (NaN rows where the case is not finite)


def _in_range(x: np.ndarray) -> np.ndarray:
    return (x == 0) | ((x >= MAGNITUDE_RANGE[0]) & (x <= MAGNITUDE_RANGE[1]))


def _fast_premises(A: np.ndarray, G: np.ndarray, cov0: np.ndarray, g_err: np.ndarray
                   ) -> _Fast:
    """Exact premises (certificates.Premises, tolerance None) wherever a floating-point margin
    decides them: Σ0 ≻ 0, the half-plane counts of λ(A), G ≻ 0 / G ≺ 0 / G = 0 and the sign of
    λ_max(W∞Σ0) − 1 (see the module docstring); None elsewhere."""
    n, d = A.shape[:2]
    g = np.full((n, d), np.nan)
    out: list = [None] * n
    finite = np.isfinite(A).all(axis=(1, 2)) & np.isfinite(G).all(axis=(1, 2)) & \
        np.isfinite(cov0).all(axis=(1, 2)) & np.isfinite(g_err)
    idx = np.flatnonzero(finite)
    all_discs = _eigen_discs(np.where(finite[:, None, None], A, np.nan))
    eig = all_discs.lam
    if idx.size == 0:
        return _Fast(out, eig, g, all_discs)
    A, G, S, g_err, discs = A[idx], G[idx], cov0[idx], g_err[idx], all_discs[idx]
    g[idx] = gi = np.linalg.eigvalsh(G)
    gnorm = np.abs(gi).max(axis=1)
    ce = np.linalg.eigvalsh(S)
    snorm = np.abs(ce).max(axis=1)
    ok = (d <= EXACT_MAX_D) & ~np.any(S - np.swapaxes(S, 1, 2), axis=(1, 2)) & \
        _in_range(np.linalg.norm(A, axis=(1, 2))) & _in_range(gnorm) & (snorm > 0) & \
        _in_range(snorm) & (ce[:, 0] > ROUNDING_ULPS * d * _EPS * snorm)
    if not ok.any():  # beyond EXACT_MAX_D: only the eigenvalues are needed
        return _Fast(out, eig, g, all_discs)
    left, axis, right, decided = _half_plane_counts(A, discs)
    ok &= decided
    margin = g_err + ROUNDING_ULPS * d * _EPS * gnorm
    gpd, gnd = gi[:, 0] > margin, gi[:, -1] < -margin
    gzero = ~np.any(G, axis=(1, 2)) & (g_err == 0)
    ok &= gpd | gnd | gzero
    sign = np.zeros(idx.size, dtype=int)
    lam = np.full(idx.size, np.nan)
    hurwitz = gnd & (left == d) & ok
    if hurwitz.any():
        lam[hurwitz], bound = _threshold_bound(A[hurwitz], G[hurwitz], S[hurwitz],
                                               g_err[hurwitz], discs[hurwitz])
        sign[hurwitz] = np.where(lam[hurwitz] - 1 > bound, 1,
                                 np.where(1 - lam[hurwitz] > bound, -1, 0))
        ok &= ~hurwitz | (sign != 0)
    for k in np.flatnonzero(ok):
        psd, nsd = bool(gpd[k] or gzero[k]), bool(gnd[k] or gzero[k])
        out[idx[k]] = Premises(
            tolerance=None, g_psd=psd, g_nsd=nsd, g_nd=bool(gnd[k]), n_left=int(left[k]),
            n_axis=int(axis[k]), n_right=int(right[k]), rank0=d,
            unseen=bool(gzero[k] and right[k] > 0) if psd else None,
            range_stable=bool(left[k] == d) if gnd[k] else None,
            threshold_sign=int(sign[k]) if hurwitz[k] else None,
            threshold=float(lam[k]) if hurwitz[k] else None)
    return _Fast(out, eig, g, all_discs)


def _half_plane_counts(A: np.ndarray, discs: _Discs
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(n_left, n_axis, n_right, decided) of the eigenvalues of each A, exact where decided.

    A triangular A has its diagonal as eigenvalues. Otherwise, with A V ≈ VΛ (LAPACK) and the
    computed residual R = AV − VΛ (plus its rounding bound), A = VΛV⁻¹ + RV⁻¹, and by the
    Bauer–Fike theorem along the path VΛV⁻¹ + tRV⁻¹ (t ∈ [0, 1]) every eigenvalue stays in
    discs of radius κ₂(V)‖R‖‖V⁻¹‖₂ about Λ: when none meets iℝ (and κ₂(V) ≤ EIGVEC_COND_MAX)
    the half-plane counts are those of Λ. The factor 2 covers the rounding of κ and ‖V⁻¹‖.
    discs: `_eigen_discs` of A."""
    diag = np.diagonal(A, axis1=1, axis2=2)
    tri = ~np.any(np.tril(A, -1), axis=(1, 2)) | ~np.any(np.triu(A, 1), axis=(1, 2))
    lam, cond, radius = discs.lam, discs.cond, discs.radius
    robust = (cond <= EIGVEC_COND_MAX) & (np.abs(lam.real).min(axis=1) > radius)
    re = np.where(tri[:, None], diag, lam.real)
    return (re < 0).sum(axis=1), (re == 0).sum(axis=1), (re > 0).sum(axis=1), tri | robust


def _eigen_discs(A: np.ndarray) -> _Discs:
    """(λ, V, κ₂(V), r) per case: LAPACK's eigenvalues and eigenvectors AV ≈ VΛ, the condition
    number of V and the Bauer–Fike radius r = 2κ₂(V)‖R‖/σ_min(V) ≥ κ₂(V)‖RV⁻¹‖₂ of the
    perturbation A − VΛV⁻¹ = RV⁻¹, R = AV − VΛ plus its rounding bound (see
    `_half_plane_counts`); NaN for a non-finite case."""
    n, d = A.shape[:2]
    finite = np.isfinite(A).all(axis=(1, 2))
    if not finite.all():
        out = _Discs(np.full((n, d), np.nan, complex), np.full((n, d, d), np.nan, complex),
                     np.full(n, np.nan), np.full(n, np.nan))
        if finite.any():
            got = _eigen_discs(A[finite])
            for field in ("lam", "vec", "cond", "radius"):
                getattr(out, field)[finite] = getattr(got, field)
        return out
    lam, vec = np.linalg.eig(A)
    R = A @ vec - vec * lam[:, None, :]
    sv = np.linalg.svd(vec, compute_uv=False)
    cond = sv[:, 0] / sv[:, -1]
    bound = np.linalg.norm(R, axis=(1, 2)) + 2 * (d + 1) * _EPS * np.linalg.norm(
        vec, axis=(1, 2)) * (np.linalg.norm(A, axis=(1, 2)) + np.abs(lam).max(axis=1))
    return _Discs(lam, vec, cond, 2 * cond / sv[:, -1] * bound)


def _threshold_bound(A: np.ndarray, G: np.ndarray, S: np.ndarray, g_err: np.ndarray,
                     discs: _Discs) -> tuple[np.ndarray, np.ndarray]:
    """(λ_max(W∞Σ0), a bound on its error) for Hurwitz A, G ≺ 0, Σ0 ≻ 0, with AᵀW∞ + W∞A = G.

    With R the residual of the computed W (plus its rounding and G's), the exact W∞ − W = X
    solves AᵀX + XA = −R, so ‖X‖₂ ≤ ‖R‖₂ ‖P‖₂ for AᵀP + PA = −I; the computed P̂ with residual
    ‖R_P‖ < 1/2 gives ‖P‖₂ ≤ 2‖P̂‖₂ (else no bound). Then
    |λ − λ_exact| ≤ ‖Σ0‖₂‖X‖₂ + 2 ROUNDING_ULPS d eps ‖Σ0‖₂‖W‖ (Σ0's factor and eigvalsh)."""
    d = A.shape[-1]
    eye = np.broadcast_to(np.eye(d), A.shape)
    At = np.swapaxes(A, 1, 2)
    W, P = np.moveaxis(lyapunov_stack(A, np.stack([G, -eye], axis=1), discs), 1, 0)
    an, wn, pn = (np.linalg.norm(X, axis=(1, 2)) for X in (A, W, P))
    slack = (d + 3) * _EPS
    rp = np.linalg.norm(At @ P + P @ A + eye, axis=(1, 2)) + slack * (2 * an * pn + np.sqrt(d))
    rho = np.linalg.norm(At @ W + W @ A - G, axis=(1, 2)) + g_err + \
        slack * (2 * an * wn + np.linalg.norm(G, axis=(1, 2)))
    p_bound = np.where(rp < 0.5, 2 * np.linalg.norm(P, 2, axis=(1, 2)), np.inf)
    ce, cv = np.linalg.eigh(S)
    L0 = cv * np.sqrt(np.clip(ce, 0.0, None))[:, None, :]
    lam = np.linalg.eigvalsh(np.swapaxes(L0, 1, 2) @ W @ L0)[:, -1]
    sn = ce[:, -1]
    return lam, sn * rho * p_bound + 2 * ROUNDING_ULPS * d * _EPS * sn * wn
