"""Exact covariance flow for scalar value matrices (SPEC §5), in square-root form.

With V_h = v_h I and G = −Σ_h v_h (B_h + B_hᵀ) the covariance obeys Σ̇ = AΣ + ΣAᵀ − ΣGΣ, whose
solution over a step of length s from Σ_k = L Lᵀ (L of size d×r, r = rank Σ_k) is

    Σ(t_k + s) = E_s L S(s)⁻¹ Lᵀ E_sᵀ,   S(s) = I_r + Lᵀ W(s) L,
    E_s = e^{As},   W(s) = ∫_0^s e^{Aᵀu} G e^{Au} du   (Van Loan: expm of [[−Aᵀ, G], [0, A]] s).

This is the closed form Σ(t) = e^{At}Σ0(I + W(t)Σ0)⁻¹e^{Aᵀt} (push-through identity), applied
step by step because the flow is a semigroup and recovering W(s) = e^{Aᵀs}F from the block
exponential amplifies rounding by κ(s) = ‖e^{As}‖₂‖e^{−Aᵀs}‖₂. With the logarithmic norm
μ(A) = λ_max((A + Aᵀ)/2), ‖e^{As}‖₂ ≤ e^{μ(A)s}, so steps with e^{(μ(A) + μ(−A))h} ≤ STEP_KAPPA
keep κ ≤ STEP_KAPPA (SPEC §5's "‖A‖h ≲ 1", made quantitative), and steps with
e^{max(|μ(A)|, |μ(−A)|)h} ≤ STEP_KAPPA keep E_h, E_h⁻¹ and W(h) in range however large A is.
S = CCᵀ (Cholesky) gives the next factor L⁺ = E_s L C⁻ᵀ: the rank is kept exactly and every Σ is
symmetric PSD by construction. The covariance blows up at the first s where S(s) is singular
(det(I + W(t)Σ0) = 0); the time is located by Brent's method on λ_min(S(s)).

The mean obeys the linear equation ṁ = K(t) m + b, K = A + v̄ I + Σ(t) B̄ with v̄ = Σ_h v_h and
B̄ = Σ_h v_h B_h (no closed form is known), integrated with Gauss–Legendre collocation on the
exact covariance at the collocation nodes, in sub-steps with ‖K‖₂ h ≤ MEAN_THETA at both ends
(singular values, or the bound ‖A_v‖₂ + ‖L‖_F²‖B̄‖_F where it already selects the cheapest
pair), refined by halving where K is large (it grows like 1/(T* − t) near a blow-up). Each
sub-step is error-controlled by an embedded pair chosen by ‖K‖₂h (MEAN_PAIRS, from 4 and 6
stages up to 14 and 16): one step of s_lo and one of s_hi stages (orders 2 s_lo < 2 s_hi) over
the same sub-step, their difference the error of the lower-order step and so an upper estimate
of the kept s_hi step's; the sub-step is halved until they agree to MEAN_RTOL relative. One
pair costs s_lo + s_hi covariance evaluations and two stage solves (the second started from the
first's collocation polynomial), where a Richardson test (one step of h against two of h/2)
cost three steps for the same safety. The mean does not stop at every output time: it is
advanced over spans of up to the covariance step length past as many outputs as fit, the
means there from the kept step's collocation polynomial (accurate to stage order s + 1 only:
the larger DENSE_PAIRS on sub-steps with ‖K‖₂h ≤ DENSE_THETA, the pair's two polynomials
compared at those outputs too), wherever that takes fewer collocation nodes than a span per
output interval (`_dense_pays`: on the 101 default output times the mean costs about three end
states, not a hundred). The exponentials at a step's nodes come from one set of Taylor terms
of the Van Loan block, walked node to node by the semigroup F(a + Δ) = F(a)F(Δ) in increments
with ‖M‖Δ ≤ 1 (as accurate as one expm per node, at a fraction of its cost). ‖K‖h alone does
not bound the error, since K(t) has complex singularities (poles of (I + W(t)Σ0)⁻¹) that can
lie near the real axis; the control makes the mean at a time independent of the other output
times (which set the covariance steps and the spans) to MEAN_RTOL, in practice to rounding.

What the flow refuses to guess (each refusal is a SolverError with a sentence):

- Work. Covariance steps and the mean's collocation steps count against `max_steps`
  (DEFAULT_MAX_STEPS); a flow needing more stops there, and before the work when the count is
  known in advance (the mean sub-steps of one step). Brent's method and the certification of a
  step are bounded too.
- Long horizons. Stepping stops early once the state provably stays where it is (`_settled`):
  (a) collapse — A Hurwitz and G ⪰ 0: W(s) = W∞ − E_sᵀW∞E_s with AᵀW∞ + W∞A = −G is the closed
  form at every offset, S(s) ⪰ I, so one exponential reaches any time; with a mean, once
  ‖B̄‖‖L‖²‖X‖ (X = ∫ e^{As}e^{Aᵀs} ds) is below rounding, ṁ = A_v m + b from there on;
  (b) equilibrium — Σ_k is an equilibrium up to rounding (Newton's correction
  A_cΔ + ΔA_cᵀ = −(AΣ_k + Σ_kAᵀ − Σ_kGΣ_k) is no larger than the rounding of that residual or
  the step's own rounding) and it is exponentially stable: A_c = A − Σ_kG Hurwitz (SPEC §5:
  A anti-stable, G ≻ 0 gives A_c = −P*⁻¹AᵀP*), restricted to the range of Σ_k when it is
  singular, where the range (moving by e^{At} alone) must also be invariant and dominant. A
  step must first map every entry to itself, |ΔΣ_ij| ≤ SETTLE_GATE √(Σ_ii Σ_jj), so that tiny
  variances still growing or decaying are followed to the end. The mean then solves
  ṁ = K m + b with the constant K exactly (expm of [[K, b], [0, 0]] τ), unless rounding in K
  (cancellation in A + v̄I + Σ*B̄) would be amplified beyond MEAN_JUMP_RTOL over the horizon.
- Tiny variances. Σ0 is factored keeping every positive direction the data determine: Cholesky
  when each pivot stands above its own cancellation error, else pivoted Cholesky stopping only
  at pivots at the level of rounding relative to their own diagonal entry (`_factor`).
- Rounding-level G. Where G (on the coordinates coupled through A or G) has an eigenvalue
  within δ = G_ROUNDING·d·eps·‖G‖ of zero, or a negative one small enough for δ to move T*
  by BLOWUP_RTOL, the covariance is also run with G ∓ δI on those coordinates: by Loewner
  monotonicity of W in G those bracket every G' the rounding cannot tell from G. The answer is
  returned only when the brackets agree (no blow-up by t_final, or T* to BLOWUP_RTOL).
- Overflow. A state that leaves the floating-point range is not a blow-up (S(s) stayed
  non-singular): it is reported as a SolverError naming exponential growth.
- Ill-conditioned states. A step rounds W(h) by about ω = G_ROUNDING·eps·‖W(h)‖_F, which
  moves Σ_{k+1} = E L S⁻¹ LᵀEᵀ by −E Y δW Y Eᵀ, between ∓ω‖Y‖₂ Σ_{k+1} (Y = L S⁻¹ Lᵀ,
  ‖Y‖₂ ≤ tr Y = ‖C⁻¹Lᵀ‖_F² for S = CCᵀ, and tr Y ≤ tr Σ_k when G ⪰ 0 since then S ⪰ I): a
  relative error of at most ω tr Y, large where Σ is large along directions in which G nearly
  vanishes (there S ≈ I while ‖Σ‖‖G‖ ≫ ‖A‖). The sum of these along the steps, plus the
  sensitivity ‖D‖/‖Σ*‖ of a settled equilibrium (A_c D + D A_cᵀ = Σ* δG Σ*), each amplified by
  (T* − t_k)/(T* − t) ahead of a blow-up at T*, bounds the error to first order (otherwise an
  earlier error is not amplified: with G ⪰ 0 the step's linearisation Φ = E(I + Σ_k W)⁻¹
  gives Φ Σ_k Φᵀ ⪯ Σ_{k+1}). Above CONDITION_CHECK the states are recomputed with G ∓ Δ
  (`_conditioning`: Δ = δ as for the brackets above on the coupled coordinates); their largest
  relative distance from the returned states is the error estimate, and a flow whose estimate
  exceeds ACCURACY_RTOL raises SolverError: no smaller step helps, the data fix Σ(t) no better
  in double precision. States of a blow-up trajectory whose estimate exceeds ACCURACY_RTOL lie
  within rounding reach of T* and are not returned.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache

import numpy as np
import numpy.typing as npt
from numpy.linalg import inv
from scipy.linalg import expm, lapack, solve_continuous_lyapunov
from scipy.optimize import brentq

from ..errors import SolverError

__all__ = ["DEFAULT_MAX_STEPS", "NEAR_BLOWUP_RTOL", "ExactResult", "exact_flow", "exact_from",
           "van_loan"]

EPS = np.finfo(float).eps
#: covariance steps satisfy e^{(μ(A) + μ(−A))h} ≤ STEP_KAPPA (conditioning of the Van Loan step)
#: and e^{max(|μ(A)|, |μ(−A)|)h} ≤ STEP_KAPPA (growth of E_h and W(h) in one step)
STEP_KAPPA = 1e3
#: and ‖A‖_F h ≤ STEP_NORM (accuracy of e^{Ah} itself, for rotations)
STEP_NORM = 64.0
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
#: covariance steps plus mean sub-steps one flow may take (override with flow(max_steps=...))
DEFAULT_MAX_STEPS = 100_000
#: Σ0's factor keeps a pivot p_k of the (pivoted) Cholesky factorisation when
#: p_k² > FACTOR_ROUNDING · d · eps · (Σ0)_kk, the rounding error of the pivot's own cancellation
FACTOR_ROUNDING = 4.0
#: settling (see the module docstring): entrywise step-change gate, rounding multiple c of the
#: tolerance c·d·eps·κ_step, and the least number of steps left for the test to be worth it
SETTLE_GATE = 1e-10
SETTLE_ROUNDING = 16.0
SETTLE_MIN_STEPS = 8
#: largest Newton correction accepted from a stalled step map (see `_stable_equilibrium`)
NEWTON_REACH = 1e-6
#: the mean's jump after settling: largest relative amplification of the rounding in K
MEAN_JUMP_RTOL = 1e-6
#: rounding-level eigenvalues of G: δ = G_ROUNDING·d·eps·‖G‖_F, and the relative spread of the
#: bracketing blow-up times accepted as determined
G_ROUNDING = 8.0
BLOWUP_RTOL = 1e-8
#: the accuracy promise: a state whose estimated relative error exceeds ACCURACY_RTOL is not
#: returned (SolverError)
ACCURACY_RTOL = 1e-6
#: an end state shortly before a blow-up, after n covariance steps: relative error
#: ≈ NEAR_BLOWUP_ROUNDING·eps·n^{3/4}·T*/(T* − t), refused above NEAR_BLOWUP_RTOL (the same limit
#: as rk's, riccati_tf.flows.integrate)
NEAR_BLOWUP_ROUNDING = 8.0
NEAR_BLOWUP_RTOL = ACCURACY_RTOL
#: conditioning (see `_conditioning`): where the first-order rounding bound accumulated along
#: the steps exceeds CONDITION_CHECK, the states are recomputed with G ∓ δP and their spread is
#: the error estimate (refused above ACCURACY_RTOL)
CONDITION_CHECK = 1e-8


class _BudgetSpent(SolverError):
    """The flow needed more than max_steps steps."""


@dataclass
class _Budget:
    """Steps left to one flow: each covariance step and each collocation step of the mean
    costs one."""

    max_steps: int
    h: float
    left: int = -1

    def __post_init__(self) -> None:
        self.left = self.max_steps

    def spend(self, n: int, t: float, *detail: object) -> None:
        if n > self.left:
            what = (f"; one step alone needs {detail[1]} mean sub-steps of length {detail[2]:.3g}"
                    f" (‖A + v̄I‖₂ = {detail[3]:.3g})" if detail else "")
            steps = (f" (covariance steps are at most {self.h:.3g} long, bounded by the growth "
                     f"and conditioning of e^{{Ah}})" if np.isfinite(self.h) else "")
            raise _BudgetSpent(
                f"the exact flow needs more than max_steps = {self.max_steps} steps (covariance "
                f"steps and mean sub-steps) to pass t = {t:.6g}{what}{steps}, and the state "
                f"does not settle at a provably stable limit first; raise max_steps or shorten "
                f"t_final")
        self.left -= n
@lru_cache(maxsize=8)
def gauss_tableau(s: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nodes c, weights w and matrix a of the s-stage Gauss–Legendre collocation method.

    a_ij = ∫_0^{c_i} ℓ_j(τ) dτ with the Lagrange basis ℓ_j in product form, integrated by the
    s-point Gauss rule on [0, c_i] (exact for degree s − 1): the order conditions
    Σ_j a_ij c_j^{k−1} = c_i^k / k hold to rounding (inverting the Vandermonde matrix of the
    nodes instead leaves residuals ~3e-13 at s = 8, which cost the mean ~1e-11)."""
    x, w = np.polynomial.legendre.leggauss(s)
    c = (x + 1) / 2
    xq, wq = c, w / 2  # the same rule on [0, 1]
    a = np.empty((s, s))
    for j in range(s):
        others = np.delete(c, j)
        denom = np.prod(c[j] - others)
        for i in range(s):
            tau = c[i] * xq
            a[i, j] = c[i] * (wq @ np.prod(tau[:, None] - others[None, :], axis=1)) / denom
    return c, w / 2, a


@lru_cache(maxsize=8)
def gauss_eigen(s: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(λ_k, 2T_{·k}, (T⁻¹)_{k·}) for k < s/2, from a = T diag(λ) T⁻¹ for the Gauss matrix
    (s even): its spectrum is conjugate-paired (λ_{s−1−k} = conj(λ_k), with conjugate
    eigenvectors), so for real R, T diag(x) T⁻¹R = 2 Re Σ_{k<s/2} T_{·k} x_k (T⁻¹R)_k."""
    lam, T = np.linalg.eig(gauss_tableau(s)[2])
    order = np.argsort(-lam.imag)
    lam, T = lam[order], T[:, order]
    half = s // 2
    if s % 2 or not (np.allclose(lam[::-1], lam.conj(), rtol=1e-12, atol=0)
                     and np.allclose(T[:, ::-1], T.conj(), rtol=1e-12, atol=1e-14)):
        raise ValueError(f"the {s}-stage Gauss matrix has no conjugate-paired spectrum")
    Tinv = np.linalg.inv(T)  # its rows pair up to rounding × cond(T): averaged
    return lam[:half], 2 * T[:, :half], 0.5 * (Tinv[:half] + Tinv[::-1][:half].conj())


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


@dataclass(frozen=True)
class ExactResult:
    """Raw output of `exact_flow`: the states at the requested times reached before blow-up.

    The states solve Σ̇ = AΣ + ΣAᵀ − ΣGΣ and ṁ = (A + v̄I + ΣB̄) m + b; `riccati_tf.flow`
    turns this into a `riccati_tf.Trajectory`.

    Parameters
    ----------
    t : (k,) ndarray of float
        The requested times reached before any blow-up.
    mean : (k, d) ndarray of float
        m(t).
    cov : (k, d, d) ndarray of float
        Σ(t), symmetric positive semidefinite.
    blowup_time : float or None
        T*, the first time where I + W(t)Σ0 is singular, when it is ≤ t_final; else None.
    blowup_direction : (d,) ndarray of float or None
        The unit direction along which Σ diverges at T*; None without blow-up.
    n_steps : int
        Covariance steps plus mean collocation steps taken.
    settled_time : float or None, optional
        The time from which the state was certified to stay put ("equilibrium") or to follow
        the one-exponential closed form ("collapse"); None when stepped to the end.
    settled_by : {"equilibrium", "collapse"} or None, optional
        Which certificate ended the stepping.
    error_estimate : float, optional
        Estimated relative error of the returned states that the conditioning of the data
        causes (covariances relative to each state, means relative to the largest returned
        mean): the first-order bound on the effect of G's rounding accumulated along the steps
        and the rounding estimate near a blow-up, or, where the bound exceeded
        CONDITION_CHECK, the spread of the states under G ∓ Δ (module docstring,
        "Ill-conditioned states"). `exact_flow` returns it at most ACCURACY_RTOL. Each step's
        own rounding, about eps·κ relative with κ ≤ STEP_KAPPA the Van Loan conditioning of
        the step, comes on top.

    Raises
    ------
    SolverError
        Never on construction; `exact_flow` raises it instead of returning a result it cannot
        vouch for.

    See Also
    --------
    exact_flow : computes it.
    riccati_tf.Trajectory : the public form of a trajectory.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".

    Examples
    --------
    With A = G = I, Σ(t) → Σ* = 2I (AΣ + ΣAᵀ − ΣGΣ = 0), and the flow stops stepping once it is
    there to rounding:

    >>> import numpy as np
    >>> from riccati_tf.flows.exact import exact_flow
    >>> res = exact_flow(np.eye(2), np.eye(2), 0.0, np.zeros((2, 2)), np.zeros(2), np.zeros(2),
    ...                  np.eye(2), np.array([100.0]), 100.0)
    >>> res.settled_by, res.blowup_time
    ('equilibrium', None)
    >>> np.round(res.cov[-1], 6)
    array([[2., 0.],
           [0., 2.]])
    """

    t: np.ndarray
    mean: np.ndarray
    cov: np.ndarray
    blowup_time: float | None
    blowup_direction: np.ndarray | None
    n_steps: int
    #: time from which the state was certified to stay put ("equilibrium") or to follow the
    #: one-exponential closed form ("collapse"), and which; None when stepped to the end
    settled_time: float | None = None
    settled_by: str | None = None
    #: estimated relative error of the states (see the class docstring)
    error_estimate: float = 0.0


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


# --- settling: when stepping may stop ------------------------------------------------------

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


# --- the flow ------------------------------------------------------------------------------

def _check_finite(L: np.ndarray, m: np.ndarray, t: float) -> None:
    if np.isfinite(L.sum() + m.sum()):  # one pass each; a false alarm is re-checked below
        return
    if not (np.all(np.isfinite(L)) and np.all(np.isfinite(m))):
        what = "Σ" if not np.all(np.isfinite(L)) else "the mean"
        raise SolverError(f"{what} left the floating-point range by t = {t:.6g} without a "
                          f"finite-time blow-up (I + LᵀW(s)L stayed non-singular): exponential "
                          f"growth past about 1e308")


def _near_blowup(A: np.ndarray, G: np.ndarray, S: np.ndarray, t_final: float,
                 n_steps: int) -> tuple[float, float | None]:
    """Refuse an end state within reach of a blow-up after t_final, else return its rounding
    estimate and the estimated T* ((0, None) when no blow-up is near). When the quadratic
    term drives ≥ 99 % of d tr Σ/dt, T* ≈ t_final + tr Σ/(d tr Σ/dt), Σ ~ 1/(T* − t), and the
    rounding of each of the n covariance steps moves T* by about eps·T*: Σ(t_final) is then
    known to about NEAR_BLOWUP_ROUNDING·eps·n^{3/4}·T*/(T* − t_final) relative (measured against
    mpmath in the scalar case: between 0.1 and 1 times eps·n^{3/4}·T*/gap for n = 1 … 1000),
    and refused when that exceeds NEAR_BLOWUP_RTOL. (S: the last state returned, at t_final
    here.)"""
    n = float(np.trace(S))
    quad = -float(np.trace(S @ G @ S))
    rate = 2 * float(np.trace(A @ S)) + quad
    if not (n > 0 and rate > 0 and quad >= 0.99 * rate):
        return 0.0, None
    remaining = n / rate
    error = NEAR_BLOWUP_ROUNDING * EPS * max(n_steps, 1) ** 0.75 * (t_final + remaining) / \
        remaining
    if error > NEAR_BLOWUP_RTOL:
        raise SolverError(
            f"t_final = {t_final:.12g} lies within {remaining:.3g} of a blow-up at "
            f"T* ≈ {t_final + remaining:.12g}: Σ(t) ~ 1/(T* − t) there, and rounding makes the "
            f"end state uncertain by about {error:.2g} relative (> {NEAR_BLOWUP_RTOL:g})")
    return error, t_final + remaining


@dataclass
class _Rounding:
    """The first-order rounding bound along a flow (module docstring, "Ill-conditioned
    states"): the errors ε_k made by the steps ending at t_k, as Σ ε_k and Σ ε_k t_k. Ahead of a
    blow-up at T*, Σ ~ 1/(T* − t) carries an error made at t_k to t amplified by
    (T* − t_k)/(T* − t)."""

    total: float = 0.0
    moment: float = 0.0

    def add(self, error: float, t: float) -> None:
        self.total += error
        self.moment += error * t

    def at(self, T: float, t: float) -> float:
        """The bound at t < T* = T: Σ ε_k (T − t_k)/(T − t)."""
        return _amplified(self.total, self.moment, T, t)


def _amplified(total: float, moment: float, T: float, t: float) -> float:
    """Σ ε_k (T − t_k)/(T − t) from Σ ε_k and Σ ε_k t_k (inf at t ≥ T)."""
    gap = T - t
    return max(T * total - moment, 0.0) / gap if gap > 0 else np.inf


def _before_blowup(T: float, out_t: list[float], out_e: list[tuple[float, float, int]]
                   ) -> tuple[float, int]:
    """(error estimate, number of outputs kept) for the states of a flow that blows up at T*.

    A state at t < T* carries the rounding errors ε_k of the steps before it, each amplified
    by (T* − t_k)/(T* − t) since Σ ~ 1/(T* − t) (`_Rounding`), and T* itself is located to
    about eps·T* per step: its estimate is Σ ε_k (T* − t_k)/(T* − t) +
    NEAR_BLOWUP_ROUNDING·eps·n^{3/4}·T*/(T* − t) after n covariance steps (as in
    `_near_blowup`). The estimates grow towards T*; the states from the first one above
    ACCURACY_RTOL on lie within rounding reach of T* and are not kept."""
    worst = 0.0
    for k, (t, (total, moment, n)) in enumerate(zip(out_t, out_e, strict=True)):
        gap = T - t
        error = _amplified(total, moment, T, t) + (
            NEAR_BLOWUP_ROUNDING * EPS * max(n, 1) ** 0.75 * T / gap if gap > 0 else np.inf)
        if not error <= ACCURACY_RTOL:
            return worst, k
        worst = max(worst, error)
    return worst, len(out_t)


def _refuse_early(A: np.ndarray, L: np.ndarray, law: _MeanLaw | None,
                  collapse: _Collapse | None, h0: float, t_final: float,
                  budget: _Budget) -> None:
    """Refuse before any work a flow whose steps (t_final/h0 covariance steps, and
    MEAN_STEP_COST·‖A_v‖t_final/MEAN_THETA collocation steps of the mean, > max_steps) cannot
    end early: A with an eigenvalue
    on the imaginary axis (to 1e-12‖A‖) converges, if at all, sub-exponentially and never
    settles to rounding; in the collapse regime the earliest settling time is bounded by
    `_Collapse.ready_time`."""
    lam = np.linalg.eigvals(A)
    if np.abs(lam.real).min() <= 1e-12 * max(np.abs(lam).max(), np.finfo(float).tiny):
        need = t_final / h0 + (MEAN_STEP_COST * law.norm_Av * t_final / MEAN_THETA if law
                               else 0)
        budget.spend(math.ceil(need), 0.0)
    if collapse is not None:
        ready = collapse.ready_time(L, law, h0, t_final)
        if min(ready, t_final) / h0 > budget.max_steps:
            budget.spend(math.ceil(min(ready, t_final) / h0), 0.0)


def _run(A: np.ndarray, G: np.ndarray, law: _MeanLaw | None, m0: np.ndarray, L0: np.ndarray,
         t_out: np.ndarray, t_final: float, max_steps: int, *,
         positive_definite: bool | None = None, settle: bool = True,
         check_end: bool = False) -> ExactResult:
    d = A.shape[0]
    prop = _Propagator(A, G, positive_definite)
    L, m = L0, m0.copy()
    r = L.shape[1]
    can_blow_up = bool(r and np.any(prop.G_minus))
    h0, kappa_h = _step_rule(A)
    settle_tol = SETTLE_ROUNDING * d * EPS * max(kappa_h, 1.0)
    budget = _Budget(max_steps, h0)
    # settling is worth testing only when more than SETTLE_MIN_STEPS steps lie ahead
    settle = settle and t_final / h0 > SETTLE_MIN_STEPS
    collapse = _Collapse.of(A, G, prop, settle_tol) if settle else None

    knots = np.unique(np.concatenate([t_out, [t_final]]))
    wanted = set(t_out.tolist())
    out_t: list[float] = []
    out_m: list[np.ndarray | None] = []  # None: filled in by `advance`
    out_S: list[np.ndarray] = []
    n_steps = n_cov = 0
    blowup_time = blowup_dir = None
    settled = None  # (time, kind, L, m, K)
    # the mean is known at the anchor (t_a, L_a, m, ‖K‖₂ there or None); the outputs since then
    # (their indices in out_m, times, factors of Σ) get theirs when the mean is advanced past
    # them (`advance`)
    t_a, L_a, norm_a = 0.0, L, None
    pending: list[tuple[int, float, np.ndarray]] = []
    S_prev, wait, waited = None, 0, 0
    # first-order rounding bound (module docstring, "Ill-conditioned states"): ω = w_round·‖W(H)‖_F
    bound, w_round = _Rounding(), G_ROUNDING * EPS

    out_e: list[tuple[float, float, int]] = []  # (Σε_k, Σε_k t_k, covariance steps) at outputs

    def keep(t: float, mean: np.ndarray | None, cov: np.ndarray,
             factor: np.ndarray | None = None) -> None:
        """An output; mean None: not known yet (`advance` fills it in from cov's factor)."""
        if mean is None:
            assert factor is not None  # Σ(t) = factor factorᵀ
            pending.append((len(out_m), t, factor))
        out_t.append(t)
        out_m.append(mean)
        out_S.append(cov)
        out_e.append((bound.total, bound.moment, n_cov))

    def advance(t_end: float, L_end: np.ndarray) -> None:
        """The mean from the anchor to t_end (Σ(t_end) = L_end L_endᵀ), past the pending outputs:
        in one `_mean_over` span with them inside where that takes fewer collocation nodes
        (`_dense_pays`), else span by span from output to output; t_end becomes the anchor."""
        nonlocal t_a, L_a, norm_a, m, n_steps
        span = t_end - t_a
        if law is not None and span > 0:
            norm_end = law.norm_K(L_end, span)
            norm = law.norm_K(L_a, span) if norm_a is None else norm_a
            taus = np.array([tk - t_a for _, tk, _ in pending])
            if pending and _dense_pays(max(norm, norm_end), span, taus):
                m, count, inner = _mean_over(prop, L_a, m, span, law, (norm, norm_end), 0,
                                             budget, t_a, taus)
                for (index, _, _), mean in zip(pending, inner, strict=True):
                    out_m[index] = mean
                n_steps += count
            else:
                starts = [(t_a, L_a)] + [(tk, L_k) for _, tk, L_k in pending]
                ends = [(index, tk, L_k) for index, tk, L_k in pending] + [(-1, t_end, L_end)]
                for (t0, L0), (index, t1, L1) in zip(starts, ends, strict=True):
                    if t1 > t0:  # (an output at t_end: the blow-up's step starts there)
                        later = law.norm_K(L1, t1 - t0) if index >= 0 else norm_end
                        m, count, _ = _mean_over(prop, L0, m, t1 - t0, law, (norm, later), 0,
                                                 budget, t0)
                        n_steps += count
                        norm = later
                    if index >= 0:
                        out_m[index] = m.copy()
            norm_a = norm_end
        pending.clear()
        t_a, L_a = t_end, L_end

    def next_step_end(knot_index: int, k: int, n_big: int, t_start: float, H: float) -> float:
        """The end of the covariance step after step k of n_big (of length H from t_start) in
        the interval ending at knots[knot_index]; inf after the last."""
        if k < n_big:
            return t_start + (k + 1) * H if k + 1 < n_big else float(knots[knot_index])
        if knot_index + 1 < len(knots):
            t0, t1 = float(knots[knot_index]), float(knots[knot_index + 1])
            n, H_next = _equal_steps(t1 - t0, h0)
            return t0 + H_next if n > 1 else t1
        return math.inf

    def try_settle(L, H):
        """("collapse", None), ("equilibrium", Σ*) or None after a step (module docstring)."""
        nonlocal S_prev, wait, waited
        if collapse is not None and collapse.ready(L, law):
            return "collapse", None
        if not L.any():
            return "equilibrium", np.zeros((d, d))  # Σ = 0 exactly: a fixed point of every step
        S = L @ L.T
        previous, S_prev = S_prev, S
        if previous is None:
            return None
        dg = np.sqrt(np.outer(np.diag(S), np.diag(S)))
        if np.any(np.abs(S - previous) > SETTLE_GATE * dg):
            return None
        if waited < wait:
            waited += 1
            return None
        try:
            star = _settled_equilibrium(A, G, L, S, settle_tol, np.linalg.norm(S - previous),
                                        H)
        except (ValueError, np.linalg.LinAlgError):  # overflow inside the test: not settled
            star = None
        if star is not None:
            return "equilibrium", star
        wait, waited = 2 * wait + 1, 0  # a failed full test: wait longer before the next
        return None

    t = 0.0
    if knots[0] == 0.0:
        keep(0.0, m.copy(), L @ L.T)
        knots = knots[1:]
    if collapse is not None and collapse.ready(L, law):
        settled = (0.0, "collapse", L, m, None)
        bound.add(w_round, 0.0)
    elif r and t_final / h0 + (MEAN_STEP_COST * law.norm_Av * t_final / MEAN_THETA if law
                               else 0) > max_steps:
        _refuse_early(A, L, law, collapse, h0, t_final, budget)
    for index, knot in enumerate(knots):
        if settled is None:
            t_start = t
            n_big, H = _equal_steps(knot - t_start, h0)
            k = 0
            while k < n_big:
                budget.spend(1, t)
                if can_blow_up:
                    root = _first_singular_offset(prop, L, H, t)
                    if root is not None:
                        Er, Wr = prop.at(root)
                        _, vec = np.linalg.eigh(np.eye(r) + L.T @ Wr @ L)
                        u = Er @ L @ vec[:, 0]
                        blowup_time = min(t + root, t_final)  # t + root rounds up at most
                        blowup_dir = u / np.linalg.norm(u)
                        advance(t, L)  # the outputs before the blow-up
                        break
                L, trace_Y = _advance(prop, L, H)
                bound.add(w_round * prop.w_norm(H) * trace_Y, t_start + (k + 1) * H)
                n_cov += 1
                k += 1
                t = t_start + k * H if k < n_big else knot
                # the mean is advanced in spans of at most h0 (as the covariance steps), over
                # as many steps (and outputs) as fit
                if next_step_end(index, k, n_big, t_start, H) - t_a > h0:
                    advance(t, L)
                if settle and (t_final - t) > SETTLE_MIN_STEPS * H:
                    _check_finite(L, m, t)
                    found = try_settle(L, H)
                    if found is not None:
                        advance(t, L)
                        kind, star = found
                        K = None if law is None or star is None else law.Av + star @ law.Bbar
                        settled = (t, kind, L if star is None else star, m, K)
                        bound.add(w_round * (1.0 if star is None else _equilibrium_sensitivity(
                            A, G, star)), t)
                        break
            if blowup_time is not None:
                break
        if settled is not None:
            t_s, kind, L_s, m_s, K = settled
            tau = knot - t_s
            if kind == "collapse":
                assert collapse is not None  # "collapse" is found by it
                S = collapse.cov(L_s, tau) if tau else L_s @ L_s.T
                K = None if law is None else law.Av
                norm_S = 0.0
            else:
                S = L_s  # the settled equilibrium Σ*
                norm_S = float(np.linalg.norm(S, 2))
            mk = _mean_jump(law, K, m_s, tau, t_s, 0.0, norm_S)
            if not np.all(np.isfinite(S)):
                raise SolverError(f"Σ left the floating-point range by t = {knot:.6g}")
            if knot in wanted:
                keep(knot, mk, S)
            continue
        t = knot
        if knot in wanted:
            keep(knot, m.copy() if law is None or t_a == knot else None, L @ L.T, L)
    if settled is None and blowup_time is None:
        advance(t, L)
    estimate = bound.total
    if check_end and can_blow_up and blowup_time is None and settled is None and out_t:
        error, T = _near_blowup(A, G, out_S[-1], out_t[-1], n_cov)  # the last state
        estimate = error + (bound.at(T, out_t[-1]) if T is not None else estimate)
    elif check_end and blowup_time is not None and out_t:
        estimate, kept = _before_blowup(blowup_time, out_t, out_e)
        del out_t[kept:], out_m[kept:], out_S[kept:]
    return ExactResult(np.array(out_t), np.array(out_m).reshape(-1, d),
                       np.array(out_S).reshape(-1, d, d), blowup_time, blowup_dir, n_steps,
                       None if settled is None else settled[0],
                       None if settled is None else settled[1], estimate)


def _equal_steps(span: float, h0: float) -> tuple[int, float]:
    """(n, H): the fewest equal covariance steps H = span/n ≤ h0 over an interval between
    output times (one block exponential per interval)."""
    n = max(1, math.ceil(span / h0))
    return n, span / n


def _coupled(A: np.ndarray, G: np.ndarray) -> np.ndarray | None:
    """The coordinates coupled to others through A or G (a boolean mask), None when there is
    none: an uncoupled coordinate evolves on its own, its W_ii = G_ii∫e^{2A_ii s}ds computed to
    relative accuracy."""
    d = G.shape[0]
    if d > 1 and np.count_nonzero(A) == d * d:  # a dense A couples every coordinate
        return np.ones(d, dtype=bool)
    off = A != 0
    off |= G != 0
    off.flat[:: d + 1] = False
    coupled = off.any(axis=0)
    coupled |= off.any(axis=1)
    return coupled if coupled.any() else None


def _g_rounding(G: np.ndarray) -> float:
    """δ = G_ROUNDING·d·eps·‖G‖_F, the rounding level of G's eigenvalues."""
    flat = G.ravel()
    return G_ROUNDING * G.shape[0] * EPS * math.sqrt(float(flat @ flat))


def _rounding_band(A: np.ndarray, G: np.ndarray
                   ) -> tuple[tuple[np.ndarray, float] | None, bool | None]:
    """(P, δ) when G has eigenvalues that rounding could move across zero or far enough to shift
    T* by BLOWUP_RTOL, else None; also whether G ≻ 0 was established (for `_Propagator`).

    P (a 0/1 diagonal) marks the coordinates coupled to others through A or G: the Van Loan
    exponential keeps an uncoupled coordinate's W_ii = G_ii∫e^{2A_ii s}ds to relative accuracy,
    so only the coupled block of G carries the uncertainty δ = G_ROUNDING·d·eps·‖G‖_F. The band
    is [−δ/BLOWUP_RTOL, δ]."""
    d = G.shape[0]
    coupled = _coupled(A, G)
    if coupled is None:
        return None, None
    everywhere = bool(coupled.all())
    delta = _g_rounding(G)
    if delta == 0.0:
        return None, None
    Gc = G.copy() if everywhere else G[np.ix_(coupled, coupled)]
    Gc.flat[:: Gc.shape[0] + 1] -= 2 * delta
    if _positive_definite(Gc):
        return None, (True if everywhere else None)
    Gc.flat[:: Gc.shape[0] + 1] += 2 * delta
    Gn = -Gc
    Gn.flat[:: Gc.shape[0] + 1] -= 2 * delta / BLOWUP_RTOL
    if _positive_definite(Gn):
        return None, False
    eig = np.linalg.eigvalsh(G if everywhere else G[np.ix_(coupled, coupled)])
    if not np.any((eig >= -2 * delta / BLOWUP_RTOL) & (eig <= 2 * delta)):
        return None, None
    return (np.eye(d) if everywhere else np.diag(coupled.astype(float)), delta), None


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


def exact_flow(A: np.ndarray, G: np.ndarray, vbar: float, Bbar: np.ndarray, b: np.ndarray,
               mean0: np.ndarray, cov0: np.ndarray, t_out: np.ndarray, t_final: float, *,
               max_steps: int = DEFAULT_MAX_STEPS) -> ExactResult:
    """Exact scalar-V flow on [0, t_final], returning states at t_out (sorted, within [0, t_final]).

    For scalar value matrices V_h = v_h I the moment equations are

        Σ̇ = A Σ + Σ Aᵀ − Σ G Σ,      ṁ = (A + v̄ I + Σ B̄) m + b,

    with G = −Σ_h v_h (B_h + B_hᵀ), v̄ = Σ_h v_h, B̄ = Σ_h v_h B_h. The covariance follows the
    closed form Σ(t) = e^{At} Σ0 (I + W(t) Σ0)⁻¹ e^{Aᵀt} in square-root steps, and blows up at
    the first root of det(I + W(t)Σ0), located by Brent's method; the mean by error-controlled
    Gauss–Legendre collocation on the exact covariance. See the module docstring for the step
    rule, the settling shortcut, the rounding-level G brackets and every refusal. The inputs
    are not validated here (`riccati_tf.flow` does that).

    Parameters
    ----------
    A : (d, d) ndarray of float
        The drift matrix.
    G : (d, d) ndarray of float, symmetric
        The quadratic coefficient −Σ_h v_h (B_h + B_hᵀ).
    vbar : float
        v̄ = Σ_h v_h.
    Bbar : (d, d) ndarray of float
        B̄ = Σ_h v_h B_h.
    b : (d,) ndarray of float
        The bias.
    mean0 : (d,) ndarray of float
        m(0).
    cov0 : (d, d) ndarray of float, symmetric positive semidefinite
        Σ(0) (singular allowed: the rank is kept exactly).
    t_out : (k,) ndarray of float
        The output times, sorted, within [0, t_final].
    t_final : float
        The horizon, > 0.
    max_steps : int, optional
        The budget of covariance steps and mean sub-steps (default DEFAULT_MAX_STEPS).

    Returns
    -------
    ExactResult
        The states at the output times before any blow-up, T* and its direction.

    Raises
    ------
    SolverError
        Rather than return a state it cannot vouch for: the budget is spent (or provably would
        be, before any work); Brent's method or the certification of a step fails; a state
        leaves the floating-point range without a blow-up; t_final lies so close after T*
        that the end state is uncertain beyond NEAR_BLOWUP_RTOL; G has eigenvalues at
        rounding level and G ∓ δI disagree on the blow-up; the linear algebra meets overflow
        or NaN.

    See Also
    --------
    exact_from : the same flow continued from a state (dense output).
    van_loan : the exponentials of one step.
    riccati_tf.flow : the validated entry point (method "exact").

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".
    .. [2] C. F. Van Loan, "Computing integrals involving the matrix exponential", IEEE TAC
       23(3), 1978.
    .. [3] R. P. Brent, "Algorithms for Minimization without Derivatives", Prentice-Hall,
       1973.

    Examples
    --------
    For d = 1 with A = 0 and G = −2, σ(t) = σ0 / (1 − 2σ0 t) blows up at T* = 1/2:

    >>> import numpy as np
    >>> from riccati_tf.flows.exact import exact_flow
    >>> res = exact_flow(np.zeros((1, 1)), np.array([[-2.0]]), 1.0, np.ones((1, 1)),
    ...                  np.zeros(1), np.zeros(1), np.eye(1), np.array([0.0, 0.25]), 1.0)
    >>> round(float(res.blowup_time), 6), res.cov[:, 0, 0]
    (0.5, array([1., 2.]))
    """
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        try:
            law = _mean_law(A, vbar, Bbar, b, mean0)
            L0 = _factor(cov0)
            band, pd = _rounding_band(A, G)
            res = _run(A, G, law, mean0, L0, t_out, t_final, max_steps, positive_definite=pd,
                       check_end=True)
            if band is not None:
                _bracket(A, G, L0, band, res, t_final, max_steps)
            if res.error_estimate > CONDITION_CHECK:
                res = _conditioning(A, G, law, mean0, L0, res, t_out, t_final, max_steps)
        except (np.linalg.LinAlgError, FloatingPointError, OverflowError) as exc:
            raise SolverError(f"the exact flow failed in its linear algebra ({exc}): the data "
                              f"are out of the range it can handle (overflow or NaN)") from None
    return res


def exact_from(A: np.ndarray, G: np.ndarray, vbar: float, Bbar: np.ndarray, b: np.ndarray,
               mean: np.ndarray, cov: np.ndarray, offsets: np.ndarray, *,
               max_steps: int = DEFAULT_MAX_STEPS) -> ExactResult:
    """The exact flow continued from a state (m_k, Σ_k) of a flow at time t_k, at t_k + s.

    The dense output of `exact_flow`, at the sorted offsets s ≥ 0: the flow of
    Σ̇ = AΣ + ΣAᵀ − ΣGΣ is a semigroup, so

        Σ(t_k + s) = E_s L S(s)⁻¹ Lᵀ E_sᵀ,   Σ_k = L Lᵀ,   S(s) = I + Lᵀ W(s) L,

    stepped, settled and (for the mean) collocated exactly as in `exact_flow`, with the same
    budget max_steps. The blow-up verdict of the flow it continues is not decided again (no
    G ∓ δI brackets, no refusal near T*): its states are returned up to the first singular S(s)
    found, blowup_time then the offset of that singularity (rounding may place it a few ulps
    before the flow's own T*).

    Parameters
    ----------
    A : (d, d) ndarray of float
        The drift matrix.
    G : (d, d) ndarray of float, symmetric
        The quadratic coefficient −Σ_h v_h (B_h + B_hᵀ).
    vbar : float
        v̄ = Σ_h v_h.
    Bbar : (d, d) ndarray of float
        B̄ = Σ_h v_h B_h.
    b : (d,) ndarray of float
        The bias.
    mean : (d,) ndarray of float
        m_k, the mean at t_k.
    cov : (d, d) ndarray of float, symmetric positive semidefinite
        Σ_k, the covariance at t_k.
    offsets : (k,) ndarray of float
        The offsets s > 0 from t_k, sorted.
    max_steps : int, optional
        The budget of covariance steps and mean sub-steps (default DEFAULT_MAX_STEPS).

    Returns
    -------
    ExactResult
        The states at t_k + s (its times are the offsets s) up to the first singular S(s).

    Raises
    ------
    SolverError
        When the budget is spent, a state leaves the floating-point range, Brent's method or
        the certification of a step fails, or the linear algebra meets overflow or NaN.

    See Also
    --------
    exact_flow : the flow from t = 0, with its blow-up verdict.
    riccati_tf.Trajectory : whose dense output ``tr(t)`` calls this for method "exact".

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".
    .. [2] C. F. Van Loan, "Computing integrals involving the matrix exponential", IEEE TAC
       23(3), 1978.

    Examples
    --------
    σ̇ = 2σ² continued from σ(0.25) = 2 to t = 0.35: σ = 1 / (1 − 2t) = 10/3.

    >>> import numpy as np
    >>> from riccati_tf.flows.exact import exact_from
    >>> res = exact_from(np.zeros((1, 1)), np.array([[-2.0]]), 1.0, np.ones((1, 1)),
    ...                  np.zeros(1), np.zeros(1), np.array([[2.0]]), np.array([0.1]))
    >>> round(float(res.cov[0, 0, 0]), 6)
    3.333333
    """
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        try:
            return _run(A, G, _mean_law(A, vbar, Bbar, b, mean), mean, _factor(cov), offsets,
                        float(offsets[-1]), max_steps)
        except (np.linalg.LinAlgError, FloatingPointError, OverflowError) as exc:
            raise SolverError(f"the exact flow failed in its linear algebra ({exc}): the data "
                              f"are out of the range it can handle (overflow or NaN)") from None


def _bracket(A: np.ndarray, G: np.ndarray, L0: np.ndarray, band: tuple[np.ndarray, float],
             res: ExactResult, t_final: float, max_steps: int) -> None:
    """Raise SolverError unless the blow-up verdict of `res` survives G → G ∓ δP (`_rounding_band`).

    W is linear in G, so G − δP ⪯ G' ⪯ G + δP gives S_low(t) ⪯ S'(t) ⪯ S_high(t) and
    T*_low ≤ T*(G') ≤ T*_high: no blow-up with G − δP means none for any such G'; blow-up times
    of both brackets within BLOWUP_RTOL pin T*."""
    P, delta = band
    zero_t = np.array([0.0])

    def blowup(Gb):
        return _run(A, Gb, None, np.zeros(A.shape[0]), L0, zero_t, t_final, max_steps,
                    settle=True).blowup_time

    low = blowup(G - delta * P)
    where = (f"G has eigenvalues within rounding (δ = {delta:.2g}) of zero on the coordinates "
             f"coupled through A or G")
    if res.blowup_time is None:
        if low is not None:
            raise SolverError(
                f"no blow-up by t_final = {t_final:.6g} with G as computed, but one at "
                f"t = {low:.6g} with G − δI: {where}, so whether Σ blows up is decided by rounding")
        return
    high = blowup(G + delta * P)
    T = res.blowup_time
    if low is None or high is None or high - low > BLOWUP_RTOL * T:
        span = f"[{low if low is not None else T:.10g}, " + (
            f"{high:.10g}]" if high is not None else f"beyond t_final = {t_final:.6g}]")
        raise SolverError(f"the blow-up at T* ≈ {T:.10g} is not determined by the data: {where}, "
                          f"and G ∓ δI move it over {span}")


def _conditioning(A: np.ndarray, G: np.ndarray, law: _MeanLaw | None, m0: np.ndarray,
                  L0: np.ndarray, res: ExactResult, t_out: np.ndarray, t_final: float,
                  max_steps: int) -> ExactResult:
    """`res` with the spread of its states under G → G ∓ Δ as error estimate (module docstring,
    "Ill-conditioned states"), or SolverError when that exceeds ACCURACY_RTOL.

    Δ is diagonal: δ = G_ROUNDING·d·eps·‖G‖_F on the coordinates coupled through A or G (as for
    the blow-up brackets), G_ROUNDING·d·eps·|G_ii| on an uncoupled one (whose W_ii is computed
    to relative accuracy). The rounding of a step perturbs W(h) by no more than what G ∓ Δ adds,
    and Σ(t) is Loewner-monotone in G, so the two runs bracket the covariance of every G' that
    rounding cannot tell from G. The estimate is the largest relative distance of either run
    from `res` (covariances relative to their own state, means relative to the largest mean),
    plus the rounding estimate near a blow-up after t_final. States of a flow that blows up
    past which either run has blown up already are not kept (they lie within the uncertainty
    of T*); for a flow that does not, such a state is refused."""
    d = A.shape[0]
    near = 0.0
    if res.blowup_time is None and res.settled_by is None and np.any(
            np.linalg.eigvalsh(G) < 0) and res.t.size:
        near = _near_blowup(A, G, res.cov[-1], float(res.t[-1]), res.n_steps)[0]
    coupled = _coupled(A, G)
    delta = _g_rounding(G)
    shift = G_ROUNDING * d * EPS * np.abs(np.diag(G))
    if coupled is not None:
        shift[coupled] = delta
    if not shift.any():
        return res
    runs = [_run(A, G + sign * np.diag(shift), law, m0, L0, t_out, t_final, max_steps)
            for sign in (-1.0, 1.0)]
    n = min(res.t.size, *(run.t.size for run in runs))
    if n < res.t.size:
        if res.blowup_time is None:
            T = min(run.blowup_time for run in runs
                    if run.t.size == n and run.blowup_time is not None)
            raise SolverError(
                f"G changed by rounding-level amounts (G ∓ Δ, Δ ≤ {shift.max():.2g} on the "
                f"diagonal) blows up at T* ≈ {T:.10g}, before t = {res.t[n]:.10g}: the states "
                f"from there on are not determined by the data")
        res = replace(res, t=res.t[:n], mean=res.mean[:n], cov=res.cov[:n])
    worst, at = 0.0, float(res.t[-1]) if n else 0.0
    scale_m = float(np.abs(res.mean).max()) if n else 0.0
    for run in runs:
        diff = run.cov[:n] - res.cov[:n]
        size = np.sqrt(np.sum(res.cov ** 2, axis=(1, 2)))
        gap = np.sqrt(np.sum(diff ** 2, axis=(1, 2)))
        rel = np.divide(gap, size, out=np.where(gap > 0, np.inf, 0.0), where=size > 0)
        if scale_m > 0:
            rel = np.maximum(rel, np.abs(run.mean[:n] - res.mean).max(axis=1) / scale_m)
        k = int(np.argmax(rel)) if n else 0
        if n and rel[k] > worst:
            worst, at = float(rel[k]), float(res.t[k])
    estimate = worst + near
    if not estimate <= ACCURACY_RTOL:
        eig = np.abs(np.linalg.eigvalsh(G))
        norm_S = float(np.linalg.norm(res.cov[int(np.searchsorted(res.t, at))], 2))
        raise SolverError(
            f"the state at t = {at:.6g} is determined by the data only to about {estimate:.2g} "
            f"relative (> {ACCURACY_RTOL:g}): changing G by rounding-level amounts (G ∓ Δ, "
            f"Δ ≤ {shift.max():.2g} on the diagonal) moves it that far, since Σ is large "
            f"(‖Σ‖₂ = {norm_S:.3g}) along directions where G nearly vanishes (smallest "
            f"|eigenvalue| {eig.min():.2g} against ‖G‖_F = {np.linalg.norm(G):.3g}); no step "
            f"size can fix this in double precision")
    return replace(res, error_estimate=estimate)
