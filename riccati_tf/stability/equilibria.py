"""Equilibria of the covariance flow and their linearisation (SPEC §5).

    F(Σ) = A Σ + Σ Aᵀ + Σ_h (V_h Σ B_h Σ + Σ B_hᵀ Σ V_hᵀ) = 0,      Σ ⪰ 0
    L(H) = M* H + H M*ᵀ + Σ_h (V_h H B_h Σ* + Σ* B_hᵀ H V_hᵀ),      M* = A + Σ_h V_h Σ* B_h

An equilibrium is stable when L, acting on symmetric matrices, is Hurwitz; its mean converges when
K* = A + Σ_h V_h + Σ_h V_h Σ* B_h is Hurwitz, to m* = −K*⁻¹ b.

Symmetric matrices are written in the orthonormal coordinates h = (H_ii, √2 H_ij for i < j), so
|h| = ‖H‖_F and L becomes an n_s × n_s matrix (n_s = d(d+1)/2), assembled from its Kronecker form
for d ≤ KRONECKER_MAX_D and applied matrix-free (GMRES, ARPACK) beyond.

Scalar value matrices (V_h = v_h I): the equilibria are the covariance solutions of the Bernoulli
equation AΣ + ΣAᵀ − ΣGΣ = 0, one for each A-invariant subspace R on which the solution P of
T_Rᵀ P + P T_R = G_R is invertible (Σ = U_R P⁻¹ U_Rᵀ, a covariance iff P ≻ 0); the stable one is
the stabilizing solution (riccati.bernoulli); the mean equilibrium's Hurwitz test is read off
its Schur split (`scalar_mean_hurwitz`). General V: Newton's method on F from several starts,
including continuation from the scalar case V_h(s) = (1 − s) v̄_h I + s V_h, v̄_h = tr V_h / d,
and the state where the covariance flow settles;
beyond d = 30 inexact Newton–Krylov (GMRES on L matrix-free, preconditioned by a Lyapunov solve
from one Schur form per step, exact line search), O(H d³) a Krylov iteration. The search runs
within a work budget (`SearchBudget`: Newton iterations, Lyapunov solves, seconds) and says
what it spent, whether it ended, and whether its list is known to be complete
(`equilibrium_search`, `EquilibriumSearch`).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Generic, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.integrate import RK45
from scipy.linalg import LinAlgError, eigh_tridiagonal, schur, solve_triangular
from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigs

from ..display import array_text, html_table, number
from ..errors import InvalidInputError, SolverError
from ..state.lowrank import FACTOR_MIN_D, factored_layer, value_factors
from ..state.moments import covariance_array
from ..state.params import Params
from ..state.validation import ReadOnlyArrays, as_count, as_covariance, as_time
from .riccati import (
    AXIS_RTOL,
    NoStabilizingSolution,
    as_rtol,
    bernoulli,
    bernoulli_scaling,
    check_axis_gap,
    exponent,
    fro_norm,
    lapack_sylvester_gramian,
    numerical_boundary,
    unscale_solution,
)
from .stiffpath import STIFF_MAX_D, StiffRun, integrate_stiff

__all__ = [
    "ACCEPT_RTOL",
    "DEFAULT_BUDGET",
    "DENSE_SPECTRUM_MAX_D",
    "ENUMERATION_MAX_D",
    "KRONECKER_MAX_D",
    "KRYLOV_BUDGET",
    "NEWTON_MAXITER",
    "NEWTON_RTOL",
    "RANDOM_STARTS",
    "RANK_RTOL",
    "SEARCH_LYAPUNOV_SOLVES",
    "SEARCH_NEWTON_ITERATIONS",
    "SEARCH_SECONDS",
    "EquilibriaUndetermined",
    "Equilibrium",
    "EquilibriumSearch",
    "SearchBudget",
    "SearchWork",
    "Stability",
    "equilibria",
    "equilibrium_search",
    "linearization_stability",
]

#: assemble L as a dense n_s × n_s matrix up to this d; matrix-free Krylov methods beyond
KRONECKER_MAX_D = 30
#: `linearization_matrix` applies L to the basis of Sym(d) from this d on (the Kronecker form below)
OPERATOR_COLUMNS_D = 16
#: `which="all"` (invariant-subspace enumeration) is offered up to this d
ENUMERATION_MAX_D = 10
#: Newton stops at this relative residual ‖F(Σ)‖ / (‖AΣ‖ + Σ_h ‖V_hΣB_hΣ‖)
NEWTON_RTOL = 1e-13
NEWTON_MAXITER = 60
POLISH_STEPS = 2
#: a Newton iterate with every entry below ZERO_RTOL max|Σ0| ends the iteration at the
#: equilibrium Σ = 0: the relative residual of any Σ ≠ 0 near 0 stays O(1) (F(Σ) ≈ AΣ + ΣAᵀ), so
#: the iterates would otherwise shrink step by step down to underflow, through subnormal numbers
ZERO_RTOL = float(np.finfo(float).eps)
#: an equilibrium is reported only if its relative residual is below this
ACCEPT_RTOL = 1e-9
#: eigenvalues of Σ below RANK_RTOL · λ_max(Σ) count as zero (rank), and a Σ with
#: λ_min ≥ −RANK_RTOL · λ_max counts as positive semidefinite
RANK_RTOL = 1e-9
#: two equilibria are the same when ‖Σ₁ − Σ₂‖_F ≤ SAME_RTOL · max(‖Σ₁‖_F, ‖Σ₂‖_F, natural scale)
SAME_RTOL = 1e-7
#: continuation in s from scalar V: initial step and smallest step before giving up
CONTINUATION_STEP = 0.125
CONTINUATION_MIN_STEP = 1.0 / 1024
RANDOM_STARTS = 4
#: inexact Newton beyond d = 30: at relative residual ρ of F, the GMRES solve of L(H) = −F(Σ)
#: stops at the relative residual max(min(FORCING_MAX, ρ), NEWTON_RTOL / (10ρ), GMRES_RTOL):
#: superlinear convergence, without solving more accurately than the last step needs
GMRES_RTOL = 1e-11
FORCING_MAX = 1e-2
#: GMRES restart length, and the Krylov budget of one Newton solve: at most KRYLOV_BUDGET GMRES
#: iterations over all its steps (each one L(H) and one preconditioner solve), SolverError beyond
GMRES_RESTART = 30
KRYLOV_BUDGET = 300
#: the spectral abscissa of L from the dense eigenvalues of its n_s × n_s matrix up to this d
#: (n_s ≤ 820); beyond, stability is decided by `linearization_stability`
DENSE_SPECTRUM_MAX_D = 40
#: beyond DENSE_SPECTRUM_MAX_D, the fallback of `linearization_stability`: ARPACK's rightmost Ritz
#: value of L, relative accuracy, Krylov subspace size and restarts (each ≤ ARNOLDI_NCV products)
ARNOLDI_RTOL = 1e-8
ARNOLDI_NCV = 40
ARNOLDI_MAXITER = 500
#: the numerical-range bound of `linearization_stability`: Lanczos on the symmetric part stops
#: once the Ritz residual of its largest Ritz value θ is ≤ LANCZOS_RTOL |θ|, or at a Ritz value
#: θ > 0 (the bound is then not negative), or after LANCZOS_MAXITER products (inconclusive)
LANCZOS_RTOL = 1e-2
LANCZOS_MAXITER = 150
#: the stable-equilibrium search integrates the flow from magnitude(params)·I (`_settled`) step by
#: step (RK45, rtol SETTLE_INTEGRATION_RTOL, atol that times tr Σ0 / d) until the relative
#: residual of F is below SETTLE_RTOL, up to t = SETTLE_HORIZON / rate and SETTLE_RHS_BUDGET
#: right-hand sides, while tr Σ stays above 1/SETTLE_RANGE of its start (below: Σ heads for 0)
#: and below SETTLE_GROWTH times it (above: Σ runs away; on 150 random general-V layers of
#: tests/test_multihead.py the flows that settled grew by at most 70 on the way)
SETTLE_RTOL = 5e-2
SETTLE_INTEGRATION_RTOL = 1e-3
SETTLE_HORIZON = 2.0 ** 33
SETTLE_RHS_BUDGET = 2000
SETTLE_RANGE = 1e3
#: ... and when those right-hand sides are spent (the explicit steps stall on a stiff flow) and
#: d ≤ stiffpath.STIFF_MAX_D, an implicit run continues until the relative residual is
#: ≤ NEWTON_SETTLE_RTOL: from there Newton converges to the equilibrium the flow settles on
NEWTON_SETTLE_RTOL = 1e-6
SETTLE_GROWTH = 1e6
#: the default work budget of one search (`SearchBudget`): Newton iterations over all starts,
#: Lyapunov solves (the preconditioner of Newton–Krylov beyond d = 30, one per GMRES iteration)
#: and wall-clock seconds. Measured: searches (both `which`) on 140 random general-V layers of
#: tests/test_multihead.py (d ≤ 96) and its contracting and PSD-dominant layers spent at most
#: 265 Newton iterations, 1692 Lyapunov solves and 3.2 s; benchmarks.multihead's family (d ≤ 384)
#: spends none of the first two and at most 4 s
SEARCH_NEWTON_ITERATIONS = 500
SEARCH_LYAPUNOV_SOLVES = 5000
SEARCH_SECONDS = 60.0
#: the continuation from scalar V makes at most CONTINUATION_SOLVES Newton solves (accepted or
#: halved s-steps) of at most CONTINUATION_MAXITER steps each
CONTINUATION_SOLVES = 16
#: beyond d = 30 (each solve up to KRYLOV_BUDGET GMRES iterations) at most this many
CONTINUATION_SOLVES_KRYLOV = 6
CONTINUATION_MAXITER = 12
#: beyond d = 30 each Newton step is scaled by the exact line search on this many points of (0, 1]
LINE_SEARCH_POINTS = 100
#: relative_residual multiplies factors with entries below 2^UNSCALED_EXPONENT in magnitude (and
#: above 2^−UNSCALED_EXPONENT) as given: their products of four and the squares of those stay far
#: inside the float range; other factors are scaled by a power of two first
UNSCALED_EXPONENT = 100


@dataclass(frozen=True, eq=False)
class Equilibrium(ReadOnlyArrays):
    """An equilibrium Σ* of Σ̇ = F(Σ), with the evidence for it.

    Σ* is a covariance (symmetric positive semidefinite) with

        F(Σ*) = A Σ* + Σ* Aᵀ + Σ_h (V_h Σ* B_h Σ* + Σ* B_hᵀ Σ* V_hᵀ) = 0,

    reported with its relative residual, its rank, the spectral abscissa of the linearisation
    L(H) = M* H + H M*ᵀ + Σ_h (V_h H B_h Σ* + Σ* B_hᵀ H V_hᵀ) on symmetric H (stable iff < 0)
    and, when K* = A + Σ_h V_h + Σ_h V_h Σ* B_h is Hurwitz, the mean equilibrium m* = −K*⁻¹ b
    (SPEC §5). The arrays are read-only.

    Parameters
    ----------
    cov : (d, d) ndarray, symmetric positive semidefinite
        Σ*.
    mean : (d,) ndarray or None
        m* = −K*⁻¹ b when K* is Hurwitz (and m* is within the float range), else None.
    residual : float
        ‖F(Σ*)‖_F / (‖AΣ*‖_F + Σ_h ‖V_hΣ*B_hΣ*‖_F) (0 for Σ* = 0).
    rank : int
        For a Bernoulli solution the dimension of its invariant subspace (structural: an
        eigenvalue of Σ* far below λ_max still counts), otherwise the number of eigenvalues above
        RANK_RTOL · λ_max.
    stable : bool or None
        Whether L is Hurwitz on symmetric matrices; None when that could not be decided within
        the budgets of `linearization_stability` (then the reason is in `stability`).
    spectral_abscissa : float or None
        max Re λ(L) over symmetric H; None where it was not computed (d >
        DENSE_SPECTRUM_MAX_D with stability decided by the numerical-range bound).
    method : str
        How Σ* was found: "bernoulli-schur", "bernoulli-slycot", "invariant-subspace", "zero"
        or "newton[<start>]" ("+newton" appended when Newton-polished to the accepted residual).
    rcond : float or None, optional
        Reciprocal condition estimate of the last linear solve (None for Newton).
    stability : Stability or None, optional
        How stability was decided beyond d = DENSE_SPECTRUM_MAX_D (the bound, its Ritz
        residual, the defect and the tolerance), None where the spectrum was used.

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field: an equilibrium is immutable.

    See Also
    --------
    equilibria : finds the equilibria and returns them as Equilibrium objects.
    riccati_tf.certify : the regime of Σ(t) from a given start, with a Lyapunov certificate at Σ*.
    riccati_tf.stability.riccati.bernoulli : the stabilizing Bernoulli solution (scalar V).

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".

    Examples
    --------
    A scalar-value layer (V = −I, B = I/2, so G = I) with A = diag(1, 2): Σ* = diag(2, 4),
    K* = A − I − Σ*/2 = −I, so the mean converges to m* = −K*⁻¹ b = b.

    >>> import numpy as np
    >>> from riccati_tf import Params, equilibria
    >>> p = Params(np.diag([1.0, 2.0]), B=0.5 * np.eye(2), V=-np.eye(2), b=[1.0, 1.0])
    >>> eq = equilibria(p)[0]
    >>> eq
    Equilibrium(cov=[[2, 0], [0, 4]], mean=[1, 1], rank=2, stable=True, abscissa=-2, residual=...,
    method='bernoulli-schur')
    >>> np.round(eq.cov, 4)
    array([[2., 0.],
           [0., 4.]])
    >>> np.round(eq.mean, 6)
    array([1., 1.])
    >>> eq.residual < 1e-12
    True
    """

    cov: NDArray[np.float64]
    mean: NDArray[np.float64] | None
    residual: float
    rank: int
    stable: bool | None
    spectral_abscissa: float | None
    method: str
    rcond: float | None = None
    stability: Stability | None = None

    def __repr__(self) -> str:
        """Σ* (and m*) written out for d ≤ display.REPR_MAX_D, then the verdict."""
        top = "None" if self.spectral_abscissa is None else f"{self.spectral_abscissa:.3g}"
        cov = array_text(self.cov)
        mean = None if self.mean is None else array_text(self.mean)
        shown = "" if cov is None else f"cov={cov}, " + ("" if mean is None else
                                                         f"mean={mean}, ")
        return (f"Equilibrium({shown}rank={self.rank}, stable={self.stable}, "
                f"abscissa={top}, residual={self.residual:.2g}, "
                f"method={self.method!r})")

    def _repr_html_(self) -> str:
        return html_table("Equilibrium", [
            ("Σ*", array_text(self.cov) or f"tr Σ* = {number(np.trace(self.cov))}"),
            ("m*", "none" if self.mean is None else array_text(self.mean) or "…"),
            ("rank", self.rank), ("stable", self.stable),
            ("spectral abscissa", number(self.spectral_abscissa)),
            ("residual", number(self.residual)), ("method", self.method)])


@dataclass(frozen=True)
class Stability:
    """How the stability of an equilibrium Σ* (L Hurwitz on Sym(d)) was decided.

    At a positive definite Σ* = RR (R = Σ*^{1/2}), K ↦ R⁻¹L(RKR)R⁻¹ is similar to L and reads
    L̃(K) = ŜK + KŜᵀ + P(K), Ŝ = R⁻¹M*R, P(K) = Σ_h (Ṽ_hKB̃_h + B̃_hᵀKṼ_hᵀ), Ṽ_h = R⁻¹V_hR,
    B̃_h = RB_hR. Since M*Σ* + Σ*M*ᵀ = F(Σ*), Ŝ + Ŝᵀ = R⁻¹F(Σ*)R⁻¹ vanishes up to the residual,
    so every eigenvalue of L lies in the numerical range of L̃: Re λ(L) ≤ λ_max(½(P + P*)) +
    ‖R⁻¹F(Σ*)R⁻¹‖_F. The largest eigenvalue of the self-adjoint ½(P + P*) is a Lanczos Ritz
    value θ with residual ρ: an eigenvalue lies within ρ of θ, and θ + ρ is taken for the
    largest one (Lanczos finds the extreme eigenvalues first; this is not a proof).

    Parameters
    ----------
    method : str
        "numerical-range" (the bound above), "arnoldi" (ARPACK's rightmost Ritz value of L, the
        fallback when the bound is not negative or Σ* is singular) or "undecided".
    stable : bool or None
        L is Hurwitz (True), has an eigenvalue with Re λ ≥ 0 (False), or neither could be
        established within the budgets (None).
    value : float or None
        The bound θ + ρ + defect ("numerical-range", negative when stable) or the rightmost
        Ritz value's real part ("arnoldi"); None for "undecided".
    ritz : float or None
        The Ritz value θ (the largest eigenvalue of ½(P + P*), or Re of L's rightmost); None for
        "undecided".
    residual : float or None
        ‖Sk − θk‖ of the unit Ritz vector k (S the operator whose Ritz value θ is: ½(P + P*) on
        the n_s = d(d+1)/2 orthonormal coordinates of Sym(d), or L); None for "undecided".
    defect : float or None
        ‖R⁻¹F(Σ*)R⁻¹‖_F, the part of the bound that the equilibrium's residual contributes
        ("numerical-range"; None otherwise).
    tolerance : float
        The relative accuracy the eigensolver was run with (LANCZOS_RTOL or ARNOLDI_RTOL).
    reason : str
        The decision in words.
    quadratic : float or None, optional
        "numerical-range": c̃ = 2 Σ_h ‖Ṽ_h‖_F ‖B̃_h‖_F, so that the quadratic part of the field in
        the coordinates K = R⁻¹(Σ − Σ*)R⁻¹ (K, Σ, Σ* of shape (d, d)), Σ_h (Ṽ_hKB̃_hK +
        KB̃_hᵀKṼ_hᵀ), has norm ≤ c̃‖K‖_F²: with μ = −value > 0 and f = defect, ½ d‖K‖_F²/dt ≤
        ‖K‖_F (f − μ‖K‖_F + c̃‖K‖_F²) < 0 for r₋ < ‖K‖_F < r₊, r± = (μ ± √(μ² − 4c̃f)) / (2c̃):
        that ball attracts. None for the other methods (default).

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field: the record is immutable.

    See Also
    --------
    linearization_stability : computes it.
    spectral_abscissa : max Re λ(L) itself, which the bound lies above.
    Equilibrium : carries it as `Equilibrium.stability` beyond d = DENSE_SPECTRUM_MAX_D.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".
    .. [2] T. Kato, *Perturbation Theory for Linear Operators*, Springer (1995), §V.3.2 (the
       numerical range holds the spectrum).
    .. [3] C. Lanczos, "An iteration method for the solution of the eigenvalue problem of
       linear differential and integral operators", J. Res. Nat. Bur. Standards 45, 1950.
    .. [4] Y. Saad, *Numerical Methods for Large Eigenvalue Problems*, SIAM (2011), §4.3 (Ritz
       residual bounds).
    .. [5] R. B. Lehoucq, D. C. Sorensen, C. Yang, "ARPACK Users' Guide", SIAM, 1998.

    Examples
    --------
    A general-V layer on R³ at its stable equilibrium: the bound θ + ρ + defect is negative,
    and lies above the spectral abscissa of L computed from the dense spectrum.

    >>> import numpy as np
    >>> from riccati_tf import Params, equilibria
    >>> from riccati_tf.stability import linearization_stability
    >>> from riccati_tf.stability.equilibria import spectral_abscissa
    >>> A = np.array([[1.0, 0.5, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 3.0]])
    >>> p = Params(A, V=-np.eye(3) - 0.2 * np.ones((3, 3)), B=np.eye(3))
    >>> eq = equilibria(p)[0]
    >>> s = linearization_stability(p, eq.cov)
    >>> s.method, s.stable
    ('numerical-range', True)
    >>> bool(s.value == s.ritz + s.residual + s.defect)
    True
    >>> round(s.value, 3), round(spectral_abscissa(p, eq.cov), 3)
    (-1.948, -1.987)
    """

    method: str
    stable: bool | None
    value: float | None
    ritz: float | None
    residual: float | None
    defect: float | None
    tolerance: float
    reason: str
    quadratic: float | None = None


# ---------------------------------------------------------------- the search's budget and result


@dataclass(frozen=True)
class SearchBudget:
    """The work one search for equilibria may spend before it stops and says "undetermined".

    Newton iterations are counted over all starts (the continuation's solves and the polishing
    steps included); a Lyapunov solve is one application of the Newton–Krylov preconditioner
    H ↦ M̃H + HM̃ᵀ = R beyond d = KRONECKER_MAX_D (one per GMRES iteration, on a Schur form of M̃
    computed once per Newton step; the dense Newton steps of d ≤ 30 need none); seconds are
    wall-clock seconds since the search began, checked at each of those and at each step of the
    flow integration (`equilibria`'s search start "flow"). Each start's own caps (NEWTON_MAXITER,
    KRYLOV_BUDGET, SETTLE_RHS_BUDGET) apply as well. The eigensolvers that decide stability
    beyond d = DENSE_SPECTRUM_MAX_D run within their own budgets (`linearization_stability`).

    Parameters
    ----------
    newton_iterations : int, optional
        Newton iterations, ≥ 1 (default SEARCH_NEWTON_ITERATIONS = 500).
    lyapunov_solves : int, optional
        Lyapunov solves, ≥ 0 (default SEARCH_LYAPUNOV_SOLVES = 5000).
    seconds : float or None, optional
        Wall-clock seconds, > 0; None for no limit (default SEARCH_SECONDS = 60).

    Raises
    ------
    InvalidInputError
        A count that is not an integer in range (booleans and floats refused), seconds not a
        finite positive number or None.
    dataclasses.FrozenInstanceError
        On assignment to a field.

    See Also
    --------
    equilibrium_search : runs within it and reports what it spent (`SearchWork`).
    equilibria : the equilibria alone; EquilibriaUndetermined when the budget runs out.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".

    Examples
    --------
    >>> from riccati_tf.stability.equilibria import SearchBudget
    >>> SearchBudget()
    SearchBudget(newton_iterations=500, lyapunov_solves=5000, seconds=60.0)
    >>> SearchBudget(newton_iterations=20, seconds=None).seconds is None
    True
    """

    newton_iterations: int = SEARCH_NEWTON_ITERATIONS
    lyapunov_solves: int = SEARCH_LYAPUNOV_SOLVES
    seconds: float | None = SEARCH_SECONDS

    def __post_init__(self) -> None:
        object.__setattr__(self, "newton_iterations",
                           as_count("newton_iterations", self.newton_iterations))
        object.__setattr__(self, "lyapunov_solves",
                           as_count("lyapunov_solves", self.lyapunov_solves, minimum=0))
        if self.seconds is not None:
            object.__setattr__(self, "seconds", as_time("seconds", self.seconds))


#: `equilibria`'s and `equilibrium_search`'s default budget
DEFAULT_BUDGET = SearchBudget()


@dataclass(frozen=True)
class SearchWork:
    """The work one search for equilibria spent (the units of `SearchBudget`).

    Parameters
    ----------
    newton_iterations : int
        Newton iterations over all starts.
    lyapunov_solves : int
        Applications of the Newton–Krylov preconditioner (d > KRONECKER_MAX_D).
    rhs_evaluations : int
        Right-hand sides of the covariance flow evaluated by the search start "flow".
    seconds : float
        Wall-clock seconds.

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field.

    See Also
    --------
    EquilibriumSearch : carries it as `spent`.
    SearchBudget : the limits.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5.

    Examples
    --------
    >>> from riccati_tf.stability.equilibria import SearchWork
    >>> SearchWork(3, 0, 0, 0.01).newton_iterations
    3
    """

    newton_iterations: int
    lyapunov_solves: int
    rhs_evaluations: int
    seconds: float


@dataclass(frozen=True, eq=False)
class EquilibriumSearch:
    """The result of a search for the covariance equilibria F(Σ*) = 0, Σ* ⪰ 0 (SPEC §5), with
    what it spent and what it can claim:

        F(Σ) = A Σ + Σ Aᵀ + Σ_h (V_h Σ B_h Σ + Σ B_hᵀ Σ V_hᵀ).

    Parameters
    ----------
    equilibria : tuple of Equilibrium
        The equilibria found of the kind asked for (`which`), in the order found.
    which : {"stable", "all"}
        The kind asked for.
    complete : bool
        True only where it is proved that `equilibria` holds every covariance equilibrium of
        that kind: scalar V, where the Bernoulli theory maps the equilibria one to one onto the
        A-invariant subspaces on which P ≻ 0 (which="all": every subspace enumerated and none
        left out; which="stable": the stable one is the unique stabilizing solution), and
        which="stable" with A = 0 (F is homogeneous, L(Σ*) = 2F(Σ*) = 0: none is stable). False
        for general V otherwise (Newton's method from finitely many starts proves nothing about the
        equilibria it did not reach) and whenever the search was cut short.
    undetermined : bool
        The budget ran out before the search ended: `equilibria` holds what was found by then,
        and an empty tuple says nothing about existence.
    reason : str
        Why the list is (or is not known to be) complete, or what ran out, in words.
    budget : SearchBudget
        The budget the search ran within.
    spent : SearchWork
        The work it spent.

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field.

    See Also
    --------
    equilibrium_search : computes it.
    equilibria : its list of equilibria alone.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".

    Examples
    --------
    Scalar V: the enumeration of the invariant subspaces is exhaustive.

    >>> import numpy as np
    >>> from riccati_tf import Params
    >>> from riccati_tf.stability.equilibria import equilibrium_search
    >>> p = Params(np.diag([1.0, 2.0]), B=0.5 * np.eye(2), V=-np.eye(2))
    >>> r = equilibrium_search(p, which="all")
    >>> len(r.equilibria), r.complete, r.undetermined
    (4, True, False)
    """

    equilibria: tuple[Equilibrium, ...]
    which: str
    complete: bool
    undetermined: bool
    reason: str
    budget: SearchBudget
    spent: SearchWork

    def __repr__(self) -> str:
        state = "undetermined" if self.undetermined else \
            "complete" if self.complete else "not known complete"
        return (f"EquilibriumSearch({len(self.equilibria)} {self.which} equilibria, {state}, "
                f"{self.spent.newton_iterations} Newton iterations, "
                f"{self.spent.lyapunov_solves} Lyapunov solves, {self.spent.seconds:.3g} s)")


class EquilibriaUndetermined(SolverError):
    """`equilibria` spent its `SearchBudget` before its search ended.

    A `SolverError`; `search` holds the `EquilibriumSearch` (what was found by then, the
    reason and the work spent).

    Parameters
    ----------
    search : EquilibriumSearch
        The undetermined search.

    Raises
    ------
    EquilibriaUndetermined
        From `equilibria` when the search is undetermined.

    See Also
    --------
    equilibrium_search : the same search, returning the undetermined result instead.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5.

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf import Params, equilibria
    >>> from riccati_tf.stability.equilibria import EquilibriaUndetermined, SearchBudget
    >>> p = Params(np.diag([1.0, 4.0]), B=0.5 * np.eye(2), V=-np.array([[1.0, 0.2], [0, 1]]))
    >>> try:
    ...     equilibria(p, budget=SearchBudget(newton_iterations=1))
    ... except EquilibriaUndetermined as exc:
    ...     print(exc.search.undetermined, exc.search.spent.newton_iterations)
    True 2
    """

    def __init__(self, search: EquilibriumSearch) -> None:
        super().__init__(f"the search for {search.which} equilibria is undetermined: "
                         f"{search.reason}")
        self.search = search


class _BudgetSpent(Exception):
    """The search's `SearchBudget` ran out (the message says which part); not a SolverError, so
    that no solver's failure handling swallows it."""


class _Work:
    """The work of one search so far, against its budget (None: no limit)."""

    def __init__(self, budget: SearchBudget | None = None) -> None:
        self.budget = budget
        self.newton = self.lyapunov = self.rhs = 0
        self.start = time.perf_counter()

    def charge(self, *, newton: int = 0, lyapunov: int = 0, rhs: int = 0) -> None:
        """Count the work, then raise _BudgetSpent if a limit is exceeded."""
        self.newton += newton
        self.lyapunov += lyapunov
        self.rhs += rhs
        b = self.budget
        if b is None:
            return
        if self.newton > b.newton_iterations:
            raise _BudgetSpent(f"its {b.newton_iterations} Newton iterations are spent")
        if self.lyapunov > b.lyapunov_solves:
            raise _BudgetSpent(f"its {b.lyapunov_solves} Lyapunov solves are spent")
        if b.seconds is not None and time.perf_counter() - self.start > b.seconds:
            raise _BudgetSpent(f"its {b.seconds:g} seconds are spent")

    def spent(self) -> SearchWork:
        return SearchWork(self.newton, self.lyapunov, self.rhs, time.perf_counter() - self.start)


_R = TypeVar("_R")


class _PerLayer(Generic[_R]):
    """A search stage remembered per key (the layer and hashable options; the last 4 keys): the
    stage runs once per key with the caller's `_Work`, which is no part of the key. A stage
    stopped by the budget raises and is not remembered (a larger budget may finish it).
    certify asks `equilibria` of one layer from several starts."""

    def __init__(self, stage: Callable[..., _R]) -> None:
        self.stage = stage
        self.slots = lru_cache(maxsize=4)(self._slot)

    @staticmethod
    def _slot(*_key: object) -> list:
        return []

    def __call__(self, *key: object, work: _Work | None = None) -> _R:
        box = self.slots(*key)
        if not box:
            box.append(self.stage(*key, work=_Work() if work is None else work))
        return box[0]

    def cache_clear(self) -> None:
        self.slots.cache_clear()


# ---------------------------------------------------------------- symmetric coordinates and L


@lru_cache(maxsize=32)
def sym_basis(d: int) -> np.ndarray:
    """N (d² × n_s): column k is vec(E_k) (row-major) of the orthonormal basis of Sym(d),
    E_ii = e_i e_iᵀ, E_ij = (e_i e_jᵀ + e_j e_iᵀ)/√2 for i < j, in the order of np.triu_indices."""
    iu, ju = np.triu_indices(d)
    N = np.zeros((d * d, iu.size))
    k = np.arange(iu.size)
    w = np.where(iu == ju, 1.0, np.sqrt(0.5))
    N[iu * d + ju, k] = w
    N[ju * d + iu, k] = w
    N.setflags(write=False)
    return N


@lru_cache(maxsize=32)
def _triu_flat(d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(flat indices i·d + j and j·d + i of i ≤ j in np.triu_indices order, the weights 1 on the
    diagonal and √2 off it)."""
    iu, ju = np.triu_indices(d)
    w = np.where(iu == ju, 1.0, np.sqrt(2.0))
    return iu * d + ju, ju * d + iu, w


def to_coords(H: np.ndarray) -> np.ndarray:
    """Orthonormal coordinates h of a symmetric H (|h| = ‖H‖_F); works on stacks (..., d, d)."""
    d = H.shape[-1]
    flat, _, w = _triu_flat(d)
    return np.reshape(H, (*H.shape[:-2], d * d))[..., flat] * w


def sym_coords(Z: np.ndarray) -> np.ndarray:
    """to_coords(Z + Zᵀ) of a square Z, without forming Z + Zᵀ."""
    d = Z.shape[-1]
    flat, flat_t, w = _triu_flat(d)
    z = np.ravel(Z)
    return (z[flat] + z[flat_t]) * w


def from_coords(h: np.ndarray, d: int) -> np.ndarray:
    """The symmetric matrix with orthonormal coordinates h."""
    flat, flat_t, w = _triu_flat(d)
    H = np.empty(d * d)
    x = h / w
    H[flat_t] = x
    H[flat] = x
    return H.reshape(d, d)


def F(params: Params, cov: np.ndarray) -> np.ndarray:
    """F(Σ) = AΣ + ΣAᵀ + Σ_h (V_hΣB_hΣ + ΣB_hᵀΣV_hᵀ)."""
    AS = params.A @ cov
    out = AS + AS.T
    for V, B in params.heads:
        W = V @ cov @ B @ cov
        out += W + W.T
    return out


def relative_residual(params: Params, cov: np.ndarray) -> float:
    """‖F(Σ)‖_F / (‖AΣ‖_F + Σ_h ‖V_h Σ B_h Σ‖_F); 0 when the denominator vanishes (Σ = 0).

    The ratio does not change when every term is multiplied by one power of two, so each
    factor is scaled to unit size, each product carries its exponent, and the terms are brought
    to the largest one's exponent: no under- or overflow at any magnitude (a term below 2^−1000
    of the largest underflows harmlessly)."""
    def unit(M: np.ndarray) -> tuple[np.ndarray, int]:
        e = exponent(M)
        if abs(e) <= UNSCALED_EXPONENT:  # products of ≤ 4 such factors and their squares fit
            return M, 0
        return np.ldexp(M, -e), e

    S, es = unit(cov)
    A, ea = unit(params.A)
    terms = [(A @ S, ea + es)]
    scalar = params.value_scalars is not None
    for V, B in params.heads:
        (Vs, ev), (Bs, eb) = unit(V), unit(B)
        VS = Vs[0, 0] * S if scalar else Vs @ S  # V_h = v_h I: no product needed
        terms.append((VS @ Bs @ S, ev + eb + 2 * es))
    top = max(e for _, e in terms)
    with np.errstate(under="ignore"):
        scaled = [T if e == top else np.ldexp(T, e - top) for T, e in terms]
    out = sum(T + T.T for T in scaled)
    scale = sum(np.linalg.norm(T) for T in scaled)
    return float(np.linalg.norm(out) / scale) if scale > 0 else 0.0


@dataclass(frozen=True, eq=False)
class Products:
    """The products at Σ that F, L and the preconditioner share: C_h = B_hΣ (None for a head
    applied through its factors, `value_factors`), M = A + Σ_h V_hΣB_h,
    F(Σ) = MΣ + ΣMᵀ; residual ‖F(Σ)‖_F / (‖AΣ‖_F + ‖(M − A)Σ‖_F) ≥ relative_residual (the
    heads' terms summed before their norm is taken: a stopping test on the safe side)."""

    cov: np.ndarray
    C: tuple[np.ndarray | None, ...]
    M: np.ndarray
    field: np.ndarray
    residual: float


def products(params: Params, cov: np.ndarray) -> Products:
    """Products at Σ (2 + 3H products of d×d matrices, O(s_h d²) for a factored head); factors
    beyond 2^±UNSCALED_EXPONENT take F and relative_residual's power-of-two scaled evaluation
    instead."""
    vf = value_factors(params)
    heads = params.heads
    C: list[np.ndarray | None] = [None] * len(heads)
    M = params.A.copy()
    checked = [cov, params.A]
    for h in vf.dense:
        V, B = heads[h]
        BS = C[h] = B @ cov
        VS = V @ cov
        M += VS @ B
        checked += [VS, BS]
    if vf.factored:
        WS = vf.W @ cov
        M += vf.apply(vf.O, WS, [heads[h][1] for h in vf.factored])
        checked.append(WS)
    if max(abs(exponent(X)) for X in checked) > UNSCALED_EXPONENT:
        return Products(cov, tuple(C), M, F(params, cov), relative_residual(params, cov))
    terms = [params.A @ cov, (M - params.A) @ cov]
    field = sum(T + T.T for T in terms)
    scale = sum(np.linalg.norm(T) for T in terms)
    res = float(np.linalg.norm(field) / scale) if scale > 0 else 0.0
    return Products(cov, tuple(C), M, field, res)


def apply_linearization(params: Params, cov: np.ndarray, H: np.ndarray) -> np.ndarray:
    """L(H) = M H + H Mᵀ + Σ_h (V_h H B_h Σ + Σ B_hᵀ H V_hᵀ), M = A + Σ_h V_h Σ B_h."""
    MH = params.M(cov) @ H
    out = MH + MH.T
    for V, B in params.heads:
        W = V @ H @ B @ cov
        out += W + W.T
    return out


def linearization_matrix(params: Params, cov: np.ndarray) -> np.ndarray:
    """L as an n_s × n_s matrix in orthonormal symmetric coordinates, from the Kronecker form

        vec(L(H)) = [M ⊗ I + I ⊗ M + Σ_h (V_h ⊗ (B_hΣ)ᵀ + (ΣB_hᵀ) ⊗ V_h)] vec(H)   (row-major vec),

    restricted to Sym(d): L_s = Nᵀ L_full N with N = sym_basis(d); from d = OPERATOR_COLUMNS_D
    on, column by column as L(E_k) of the orthonormal basis (`linearization_operator`, factored
    heads in O(s_h d²)): 5× faster at d = 24 than the d² × d² Kronecker matrix.
    """
    d = params.d
    if d >= OPERATOR_COLUMNS_D:
        op = linearization_operator(params, cov)
        return np.column_stack([op.matvec(e) for e in np.eye(op.shape[0])])
    eye = np.eye(d)
    M = params.M(cov)
    full = np.kron(M, eye) + np.kron(eye, M)
    for V, B in params.heads:
        full += np.kron(V, (B @ cov).T) + np.kron(cov @ B.T, V)
    N = sym_basis(d)
    return N.T @ (full @ N)


def linearization_operator(params: Params, cov: np.ndarray,
                           at: Products | None = None) -> LinearOperator:
    """L as a matrix-free operator on orthonormal symmetric coordinates (for d > 30): M and
    C_h = B_hΣ are formed once (or taken from `at`, the products at Σ), then each product
    costs 1 + 2H products of d×d matrices, a head with factors V_h = O_hW_h (`value_factors`)
    O_h(((W_hH)B_h)Σ) in O(s_h d²) instead."""
    d = params.d
    n = d * (d + 1) // 2
    at = products(params, cov) if at is None else at
    M = at.M
    vf = value_factors(params)
    dense = [(params.heads[h][0], at.C[h]) for h in vf.dense]
    rights = [params.heads[h][1] for h in vf.factored]

    def matvec(h):
        H = from_coords(np.ravel(h), d)
        out = M @ H
        for V, C in dense:
            out += V @ (H @ C)
        if rights:
            out += vf.apply(vf.O, vf.W @ H, rights, at.cov)
        return sym_coords(out)
    return LinearOperator((n, n), matvec=matvec, dtype=float)


def spectral_abscissa(params: Params, cov: np.ndarray) -> float:
    """max Re λ(L) on Sym(d): dense eigenvalues for d ≤ DENSE_SPECTRUM_MAX_D, ARPACK (largest
    real part; budget ARNOLDI_MAXITER restarts of ARNOLDI_NCV vectors, SolverError through the
    callers' numerical boundary when spent) beyond;
    at Σ = 0, where L(H) = AH + HAᵀ, 2 max Re λ(A)."""
    if not np.any(cov):
        return 2.0 * float(np.max(drift_spectrum(params)[0].real))
    if params.d <= DENSE_SPECTRUM_MAX_D:
        return float(np.max(np.linalg.eigvals(linearization_matrix(params, cov)).real))
    op = linearization_operator(params, cov)
    vals = eigs(op, k=2, which="LR", return_eigenvectors=False, tol=ARNOLDI_RTOL,
                ncv=min(ARNOLDI_NCV, op.shape[0] - 1), maxiter=ARNOLDI_MAXITER)
    return float(np.max(vals.real))


@numerical_boundary
def linearization_stability(params: Params, cov: np.ndarray) -> Stability:
    """Decide whether L at the equilibrium Σ* is Hurwitz on Sym(d), matrix-free.

    First the numerical-range bound of `Stability`: at Σ* ≻ 0, Re λ(L) ≤ θ + ρ + ‖R⁻¹F(Σ*)R⁻¹‖_F
    with θ the largest eigenvalue of the self-adjoint part of the heads' operator after the
    similarity K ↦ R⁻¹L(RKR)R⁻¹ (R = Σ*^{1/2}), by Lanczos, and ρ its Ritz residual; stable when
    that is negative. Each Lanczos product costs O(Σ_h s_h d²) with factored value matrices
    (`value_factors`), O(H d³) otherwise. When the bound is not negative (it is only sufficient)
    or Σ* is singular, ARPACK's rightmost Ritz value of L decides (the sign of its real part);
    when neither converges within its budget (LANCZOS_MAXITER, ARNOLDI_MAXITER restarts) the
    verdict is "undecided", stable None.

    Parameters
    ----------
    params : Params
        The layer on R^d (A, V_h, B_h of shape (d, d), dense or factored heads).
    cov : (d, d) array_like of float
        The equilibrium Σ*, symmetric positive semidefinite (`riccati_tf.state.validation`'s
        covariance policy); its residual F(Σ*) enters the bound.

    Returns
    -------
    Stability
        The verdict ("numerical-range", "arnoldi" or "undecided") with the bound or Ritz value,
        its residual, the defect, the tolerance and, for the bound, the quadratic constant c̃.

    Raises
    ------
    InvalidInputError
        params is not a Params, or cov is not a d×d covariance.
    SolverError
        A floating-point failure (LinAlgError, overflow) in the eigensolvers.

    See Also
    --------
    spectral_abscissa : max Re λ(L) itself (dense for d ≤ DENSE_SPECTRUM_MAX_D, ARPACK beyond).
    Stability : the record and the derivation of the bound.
    equilibria : the equilibria, whose stability beyond d = DENSE_SPECTRUM_MAX_D this decides.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".
    .. [2] T. Kato, *Perturbation Theory for Linear Operators*, Springer (1995), §V.3.2.
    .. [3] C. Lanczos, "An iteration method for the solution of the eigenvalue problem of
       linear differential and integral operators", J. Res. Nat. Bur. Standards 45, 1950.
    .. [4] R. B. Lehoucq, D. C. Sorensen, C. Yang, "ARPACK Users' Guide", SIAM, 1998.

    Examples
    --------
    V = −I, B = I, A = I: F(Σ) = 2Σ − 2Σ², Σ* = I and L(H) = −2H, as the dense spectrum says.

    >>> import numpy as np
    >>> from riccati_tf import Params
    >>> from riccati_tf.stability import linearization_stability
    >>> from riccati_tf.stability.equilibria import spectral_abscissa
    >>> p = Params(np.eye(3), V=-np.eye(3), B=np.eye(3))
    >>> s = linearization_stability(p, np.eye(3))
    >>> s.method, s.stable, round(s.value, 9), round(spectral_abscissa(p, np.eye(3)), 9)
    ('numerical-range', True, -2.0, -2.0)

    At the singular Σ = 0 there is no bound; ARPACK's rightmost Ritz value of L(H) = AH + HAᵀ
    decides that this equilibrium is unstable:

    >>> s0 = linearization_stability(p, np.zeros((3, 3)))
    >>> s0.method, s0.stable, round(s0.value, 6), spectral_abscissa(p, np.zeros((3, 3)))
    ('arnoldi', False, 2.0, 2.0)
    """
    if not isinstance(params, Params):
        raise InvalidInputError(f"params must be a riccati_tf.Params, got {type(params).__name__}")
    cov = as_covariance("cov", cov, params.d)
    at = products(params, 0.5 * (cov + cov.T))
    got = _numerical_range_bound(params, at)
    if got is not None:
        theta, rho, defect, quadratic = got
        value = theta + rho + defect
        if value < 0:
            return Stability("numerical-range", True, value, theta, rho, defect, LANCZOS_RTOL,
                             f"Re λ(L) ≤ θ + ρ + defect = {value:.6g} < 0 (largest eigenvalue "
                             f"θ = {theta:.6g} of the symmetric part, Ritz residual ρ = "
                             f"{rho:.2g}, defect ‖R⁻¹F(Σ*)R⁻¹‖_F = {defect:.2g})", quadratic)
    note = ("Σ* is singular, so no numerical-range bound" if got is None else
            f"the numerical-range bound {value:.6g} is not negative")
    op = linearization_operator(params, at.cov, at)
    try:
        vals, vecs = eigs(op, k=2, which="LR", tol=ARNOLDI_RTOL,
                          ncv=min(ARNOLDI_NCV, op.shape[0] - 1), maxiter=ARNOLDI_MAXITER)
    except ArpackNoConvergence:
        return Stability("undecided", None, None, None, None, None, ARNOLDI_RTOL,
                         f"{note}, and ARPACK found no rightmost eigenvalue of L within "
                         f"{ARNOLDI_MAXITER} restarts")
    i = int(np.argmax(vals.real))
    lam, v = vals[i], vecs[:, i]
    Lv = op.matvec(v.real) + 1j * op.matvec(v.imag)
    rho = float(np.linalg.norm(Lv - lam * v) / np.linalg.norm(v))
    top = float(lam.real)
    return Stability("arnoldi", bool(top < 0), top, top, rho, None, ARNOLDI_RTOL,
                     f"{note}; ARPACK's rightmost eigenvalue of L has Re λ = {top:.6g} "
                     f"(Ritz residual {rho:.2g})")


def _numerical_range_bound(params: Params,
                           at: Products) -> tuple[float, float, float, float] | None:
    """(θ, ρ, ‖R⁻¹F(Σ)R⁻¹‖_F, c̃) of `Stability` at Σ = at.cov ≻ 0, or None when Σ is singular
    (λ_min ≤ RANK_RTOL λ_max) or Lanczos does not converge within LANCZOS_MAXITER restarts."""
    d = params.d
    w, U = np.linalg.eigh(at.cov)
    if not w[0] > RANK_RTOL * w[-1]:
        return None
    R = (U * np.sqrt(w)) @ U.T
    Ri = (U / np.sqrt(w)) @ U.T
    defect = float(np.linalg.norm(Ri @ at.field @ Ri))
    vf = value_factors(params)
    dense = [(Ri @ V @ R, R @ B @ R) for V, B in (params.heads[h] for h in vf.dense)]
    X, Y = Ri @ vf.O, R @ vf.W.T  # Ṽ_h = X_hY_hᵀ for the factored heads
    Bt = [R @ params.heads[h][1] @ R for h in vf.factored]
    BtT = [B.T for B in Bt]
    quadratic = 2 * sum(np.linalg.norm(Vt) * np.linalg.norm(B) for Vt, B in dense)
    for r, B in zip(vf.rows, Bt, strict=True):  # ‖X_hY_hᵀ‖_F² = Σ (X_hᵀX_h) ∘ (Y_hᵀY_h)
        gram = np.sum((X[:, r].T @ X[:, r]) * (Y[:, r].T @ Y[:, r]))
        quadratic += 2 * np.sqrt(max(gram, 0.0)) * np.linalg.norm(B)

    def matvec(k):
        K = from_coords(np.ravel(k), d)
        Z = np.zeros((d, d))
        for Vt, B in dense:
            Z += Vt @ K @ B + Vt.T @ K @ B.T
        if Bt:
            Z += vf.apply(X, Y.T @ K, Bt) + vf.apply(Y, X.T @ K, BtT)
        return 0.5 * sym_coords(Z)
    n = d * (d + 1) // 2
    if n <= LANCZOS_MAXITER:  # small: the symmetric matrix itself
        vals, vecs = np.linalg.eigh(np.column_stack([matvec(e) for e in np.eye(n)]))
        theta, k = float(vals[-1]), vecs[:, -1]
    else:
        got = _lanczos_top(matvec, n)
        if got is None:
            return None
        theta, k = got
    rho = float(np.linalg.norm(matvec(k) - theta * k) / np.linalg.norm(k))
    return theta, rho, defect, float(quadratic)


def _lanczos_top(matvec: Callable[[np.ndarray], np.ndarray],
                 n: int) -> tuple[float, np.ndarray] | None:
    """(θ, k): the largest Ritz value of the symmetric operator `matvec` on R^n and its unit
    Ritz vector, by Lanczos with full reorthogonalisation from a fixed random start, stopped
    once the residual estimate β_j|y_j| ≤ LANCZOS_RTOL |θ| or once θ > 0 (a Rayleigh quotient:
    the largest eigenvalue is then positive); None after LANCZOS_MAXITER products."""
    Q = np.empty((LANCZOS_MAXITER + 1, n))
    q = np.random.default_rng(0).standard_normal(n)
    Q[0] = q / np.linalg.norm(q)
    alpha, beta = np.empty(LANCZOS_MAXITER), np.empty(LANCZOS_MAXITER)
    for j in range(LANCZOS_MAXITER):
        w = matvec(Q[j])
        alpha[j] = Q[j] @ w
        for _ in range(2):  # twice is enough (Kahan, Parlett)
            w -= Q[:j + 1].T @ (Q[:j + 1] @ w)
        beta[j] = np.linalg.norm(w)
        vals, vecs = eigh_tridiagonal(alpha[:j + 1], beta[:j], select="i",
                                      select_range=(j, j))
        theta, y = float(vals[0]), vecs[:, 0]
        if theta > 0 or beta[j] * abs(y[-1]) <= LANCZOS_RTOL * abs(theta) or beta[j] == 0:
            k = Q[:j + 1].T @ y
            return theta, k / np.linalg.norm(k)
        Q[j + 1] = w / beta[j]
    return None


@lru_cache(maxsize=8)
def drift_spectrum(params: Params) -> tuple[NDArray[np.complex128], float]:
    """(λ(A), ‖A‖₂) of a layer, computed once per layer (the eigenvalues read-only): the
    horizons, the abscissa at Σ = 0, the scales and the integrators' segments all use them."""
    lam = np.linalg.eigvals(params.A)
    lam.setflags(write=False)
    return lam, float(np.linalg.norm(params.A, 2))


@lru_cache(maxsize=8)
def quadratic_constant(params: Params) -> float:
    """c with ‖Σ_h (V_h H B_h H + H B_hᵀ H V_hᵀ)‖_F ≤ c ‖H‖_F²: c = 2 Σ_h ‖V_h‖₂ ‖B_h‖₂.
    F(Σ* + H) = F(Σ*) + L(H) + that quadratic term, and ‖L_Σ − L_Σ'‖ ≤ 2c ‖Σ − Σ'‖_F.
    Factored heads are never formed (`head_norms`)."""
    return float(2.0 * sum((v * b for v, b in head_norms(params)), start=0.0))


def head_norms(params: Params, left: np.ndarray | None = None) -> list[tuple[float, float]]:
    """(‖L V_h‖₂, ‖B_h‖₂) of every head, L = left (I when None). A head given as
    `Head(Q, K, V, O)` (V_h = OV, B_h = KᵀQ) is never formed: ‖LOV‖₂ = ‖R V‖₂ and
    ‖KᵀQ‖₂ = ‖R_K Q‖₂ with R, R_K the triangular factors of LO and Kᵀ (SVDs of r × d)."""
    out: list[tuple[float, float]] = [(0.0, 0.0)] * len(params.factors)
    shapes: dict[tuple[int, ...], list[int]] = {}  # factored heads of equal shapes, batched
    for h, f in enumerate(params.factors):
        if f is None:
            V, B = params.heads[h]
            out[h] = (float(np.linalg.norm(V if left is None else left @ V, 2)),
                      float(np.linalg.norm(B, 2)))
        else:
            shapes.setdefault(f.O.shape + f.K.shape, []).append(h)
    for group in shapes.values():
        fs = [params.factors[h] for h in group]
        O = np.stack([f.O for f in fs])  # type: ignore[union-attr]  # factored heads
        LO = O if left is None else left @ O
        V = np.stack([f.V for f in fs])  # type: ignore[union-attr]
        Kt = np.stack([f.K.T for f in fs])  # type: ignore[union-attr]
        Q = np.stack([f.Q for f in fs])  # type: ignore[union-attr]
        v = np.linalg.svd(np.linalg.qr(LO, mode="r") @ V, compute_uv=False)[:, 0]
        b = np.linalg.svd(np.linalg.qr(Kt, mode="r") @ Q, compute_uv=False)[:, 0]
        for h, vh, bh in zip(group, v, b, strict=True):
            out[h] = (float(vh), float(bh))
    return out


def natural_scale(params: Params) -> float:
    """‖A‖₂ / c: the size of Σ at which the linear and quadratic terms of F balance."""
    c = quadratic_constant(params)
    a = drift_spectrum(params)[1]
    return float(a / c) if c > 0 and a > 0 else 1.0


def magnitude(params: Params) -> float:
    """natural_scale for d ≤ 30; beyond, ‖A‖_F / (2 Σ_h ‖V_h‖_F ‖B_h‖_F) (no SVDs: a magnitude
    for divergence bounds and comparisons, within a factor d of natural_scale)."""
    if params.d <= KRONECKER_MAX_D:
        return natural_scale(params)
    c = 2.0 * sum((np.linalg.norm(V) * np.linalg.norm(B) for V, B in params.heads), start=0.0)
    a = np.linalg.norm(params.A)
    return float(a / c) if c > 0 and a > 0 else 1.0


def mean_equilibrium(params: Params, cov: np.ndarray, *,
                     hurwitz: bool | None = None) -> np.ndarray | None:
    """m* = −K⁻¹ b with K = A + Σ_h V_h + Σ_h V_h Σ B_h, when K is Hurwitz and m* lies in the
    float range; else None (computed with K scaled by a power of two). hurwitz: whether K is
    Hurwitz when already known (`scalar_mean_hurwitz`), else decided from the eigenvalues of K."""
    if hurwitz is False:
        return None
    if hurwitz and not np.any(params.b):
        return np.zeros(params.d)
    K = params.M(cov) + sum((V for V, _ in params.heads), start=0.0)
    e = exponent(K)
    Ks = np.ldexp(K, -e)  # the sign test and the solve on K scaled by a power of two
    if hurwitz is None and np.max(np.linalg.eigvals(Ks).real) >= 0:
        return None
    with np.errstate(over="ignore", under="ignore"):
        m = np.ldexp(-np.linalg.solve(Ks, params.b), -e)
    return m if np.all(np.isfinite(m)) else None


def scalar_mean_hurwitz(params: Params, rank: int, closed_loop: np.ndarray) -> bool:
    """Whether K = A + v̄I + Σ C (v̄ = Σ_h v_h, C = Σ_h v_h B_h) is Hurwitz at the stabilizing
    Bernoulli solution Σ = U₁P⁻¹U₁ᵀ (P ≻ 0, rank k) of a scalar-V layer, without its spectrum.

    In the Schur basis of A, UᵀKU = [[K₁₁, ·], [0, T₂₂ + v̄I]] with K₁₁ = T₁₁ + P⁻¹U₁ᵀCU₁ + v̄I,
    and since U₁ᵀGU₁ = −(C₁₁ + C₁₁ᵀ) = T₁₁ᵀP + PT₁₁,  P(K₁₁ − v̄I) + (K₁₁ − v̄I)ᵀP = 0: K₁₁ − v̄I
    is skew-adjoint for the inner product of P ≻ 0, so every eigenvalue of K₁₁ has real part v̄.
    The rest are λ(T₂₂) + v̄ with Re λ(T₂₂) < 0. Hence max Re λ(K) = v̄ when k > 0, and
    max Re λ(A) + v̄ (A = the closed loop when Σ = 0) when k = 0."""
    assert params.value_scalars is not None  # a scalar-V layer
    vbar = sum(params.value_scalars)
    top = vbar if rank > 0 else float(np.max(closed_loop.real)) + vbar
    return bool(top < 0)


def psd_rank_rel(cov: np.ndarray) -> int:
    eig = np.linalg.eigvalsh(cov)
    return int(np.sum(eig > RANK_RTOL * max(eig[-1], 0.0)))


def is_psd(cov: np.ndarray) -> bool:
    eig = np.linalg.eigvalsh(cov)
    return bool(eig[0] >= -RANK_RTOL * max(eig[-1], np.finfo(float).tiny))


def decide_stability(params: Params, cov: np.ndarray) -> tuple[float | None, Stability | None]:
    """(spectral abscissa, None) from the spectrum of L for d ≤ DENSE_SPECTRUM_MAX_D or Σ = 0,
    else (None, `linearization_stability`), the latter remembered per layer and Σ (`equilibria`
    meets one equilibrium again from each start; certify asks from several)."""
    if params.d > DENSE_SPECTRUM_MAX_D and np.any(cov):
        return None, _stability_at(params, np.ascontiguousarray(cov, dtype=float).tobytes())
    return spectral_abscissa(params, cov), None


@lru_cache(maxsize=4)  # a d = 1024 key holds 8 MB
def _stability_at(params: Params, cov: bytes) -> Stability:
    """`linearization_stability` at the Σ whose float64 bytes are cov."""
    return linearization_stability(params, np.frombuffer(cov).reshape(params.d, params.d))


def _verdict(abscissa: float | None, stability: Stability | None) -> bool | None:
    """Whether L is Hurwitz: `stability`'s verdict when given, else the abscissa's sign (one of
    the two is set, as `decide_stability` returns them)."""
    if stability is not None:
        return stability.stable
    assert abscissa is not None
    return bool(abscissa < 0)


def make_equilibrium(params: Params, cov: np.ndarray, method: str, *,
                     abscissa: float | None = None, rcond: float | None = None,
                     rank: int | None = None, mean_hurwitz: bool | None = None,
                     stability: Stability | None = None) -> Equilibrium:
    """Package Σ* with its residual, rank, mean and stability (abscissa computed if neither it
    nor `stability` is given: the spectrum for d ≤ DENSE_SPECTRUM_MAX_D or Σ* = 0,
    `linearization_stability` beyond; mean_hurwitz: whether K* is Hurwitz when known, see
    mean_equilibrium)."""
    cov = 0.5 * (cov + cov.T)
    if abscissa is None and stability is None:
        abscissa, stability = decide_stability(params, cov)
    stable = _verdict(abscissa, stability)
    mean = mean_equilibrium(params, cov, hurwitz=mean_hurwitz)
    for arr in (cov, mean):
        if arr is not None:
            arr.setflags(write=False)
    return Equilibrium(cov, mean, relative_residual(params, cov),
                       psd_rank_rel(cov) if rank is None else rank, stable,
                       None if abscissa is None else float(abscissa), method, rcond, stability)


# ---------------------------------------------------------------- scalar V: Bernoulli equation


def _scalar_stable(params: Params, axis_rtol: float,
                   work: _Work | None = None) -> list[Equilibrium]:
    """The stabilizing Bernoulli solution when it is a covariance, else none: the only
    equilibrium with L Hurwitz, since L(H) = (A − ΣG)H + H(A − ΣG)ᵀ for scalar V. Polishing
    Newton steps are charged to `work` (a new unlimited one by default)."""
    work = _Work() if work is None else work
    try:
        sol = bernoulli(params.A, params.G, axis_rtol=axis_rtol)
    except NoStabilizingSolution:
        return []
    if not (sol.psd or is_psd(sol.X)):
        return []
    method = "bernoulli-" + ("schur" if sol.method == "schur" else "slycot")
    abscissa = 2.0 * float(np.max(sol.closed_loop.real))
    eq = make_equilibrium(params, sol.X, method, abscissa=abscissa, rcond=sol.rcond,
                          rank=sol.rank,
                          mean_hurwitz=scalar_mean_hurwitz(params, sol.rank, sol.closed_loop))
    got = _accepted(params, eq, work)
    if got is None:
        raise SolverError(f"the stabilizing solution has relative residual {eq.residual:.3g} "
                          f"above the accepted {ACCEPT_RTOL:g} even after Newton polishing: the "
                          f"Bernoulli equation is too ill-conditioned here")
    return [got]


def _accepted(params: Params, eq: Equilibrium, work: _Work) -> Equilibrium | None:
    """eq if its relative residual is ≤ ACCEPT_RTOL, else polished by up to POLISH_STEPS Newton
    steps (keeping its rank, stability and method), or None if it still is not."""
    if eq.residual <= ACCEPT_RTOL:
        return eq
    try:
        cov, res = _polish(params, eq.cov, eq.residual, work)
    except (LinAlgError, SolverError):
        return None
    if not res <= ACCEPT_RTOL:
        return None
    return make_equilibrium(params, cov, eq.method + "+newton", abscissa=eq.spectral_abscissa,
                            rcond=eq.rcond, rank=eq.rank, stability=eq.stability)


def _eigen_groups(A: np.ndarray, axis_rtol: float,
                  unit_exponent: int) -> tuple[np.ndarray, list[list[int]]]:
    """Eigenvalues of A and their real groups (a real eigenvalue, or a conjugate pair); A is the
    matrix of the equation scaled by 2^−unit_exponent (errors name the unscaled eigenvalues)."""
    eig = np.linalg.eigvals(A)
    scale = fro_norm(A)
    check_axis_gap(eig, scale, "A", axis_rtol, unit_exponent=unit_exponent)

    def named(z: complex) -> complex:
        return complex(np.ldexp(z.real, unit_exponent), np.ldexp(z.imag, unit_exponent))
    diff = np.abs(eig[:, None] - eig[None, :])
    np.fill_diagonal(diff, np.inf)
    i, j = map(int, np.unravel_index(np.argmin(diff), diff.shape))
    if eig.size > 1 and diff[i, j] <= np.sqrt(axis_rtol) * scale:
        raise SolverError(f"A has a repeated eigenvalue λ ≈ {named(eig[i]):.6g}: its "
                          f"invariant "
                          f"subspaces need not be finitely many, so the equilibria of the "
                          f"Bernoulli equation cannot be enumerated")
    sums = np.abs(eig[:, None] + eig[None, :])
    np.fill_diagonal(sums, np.inf)
    i, j = map(int, np.unravel_index(np.argmin(sums), sums.shape))
    if eig.size > 1 and sums[i, j] <= axis_rtol * scale:
        raise SolverError(f"eigenvalues λ = {named(eig[i]):.6g} and {named(eig[j]):.6g} of A "
                          f"sum to ≈ 0: the Lyapunov equation on an invariant subspace holding "
                          f"both is singular, so its equilibria are not isolated or do not exist")
    groups, used = [], set()
    for i in map(int, np.argsort(-eig.real)):
        if i in used:
            continue
        group = [i]
        if eig[i].imag != 0:
            partner = np.abs(eig - eig[i].conj())
            partner[i] = np.inf
            group.append(int(np.argmin(partner)))
        groups.append(group)
        used.update(group)
    return eig, groups


def _scalar_all(params: Params, axis_rtol: float,
                work: _Work) -> tuple[list[Equilibrium], list[str]]:
    """Every Bernoulli solution Σ = U₁P⁻¹U₁ᵀ with P ≻ 0, on the equation scaled as in
    riccati.bernoulli_scaling (Σ = 2^k Σ̃; SolverError when a Σ is beyond the float range),
    and the subspaces left out undecided (P numerically singular: |λ_min(P)| ≤ RANK_RTOL
    |λ_max(P)|, or a solution not computable to ACCEPT_RTOL), in words."""
    d = params.d
    a, k = bernoulli_scaling(params.A, params.G)
    A, G = np.ldexp(params.A, -a), np.ldexp(params.G, k - a)
    eig, groups = _eigen_groups(A, axis_rtol, a)
    out, left_out = [], []
    for size in range(len(groups) + 1):
        for chosen in itertools.combinations(range(len(groups)), size):
            members = [i for g in chosen for i in groups[g]]
            if not members:
                out.append(make_equilibrium(params, np.zeros((d, d)), "invariant-subspace",
                                            rank=0))
                continue
            selected = eig[members]

            def pick(re, im, selected=selected):
                z = re + 1j * im
                return bool(np.min(np.abs(selected - z)) <= np.min(np.abs(eig - z)))

            T, U, r = schur(A, output="real", sort=pick)
            if r != len(members):
                raise SolverError("the Schur reordering did not isolate the chosen eigenvalues; "
                                  "their separation is too small for a reliable enumeration")
            U1 = U[:, :r]
            P = lapack_sylvester_gramian(T[:r, :r], U1.T @ G @ U1)
            pe = np.linalg.eigvalsh(P)
            gap = RANK_RTOL * max(abs(pe[-1]), np.finfo(float).tiny)
            if pe[0] < -gap:
                continue  # P indefinite: Σ = U₁P⁻¹U₁ᵀ is no covariance
            if pe[0] <= gap:  # P singular to working accuracy: Σ huge or none, undecided
                left_out.append(f"rank {r} (P numerically singular, λ_min/λ_max = "
                                f"{pe[0] / pe[-1]:.2g})")
                continue
            scaled = U1 @ np.linalg.solve(P, U1.T)
            closed = np.linalg.eigvals(A - scaled @ G)
            eq = _accepted(params, make_equilibrium(
                params, unscale_solution(scaled, k), "invariant-subspace",
                abscissa=float(np.ldexp(2.0 * np.max(closed.real), a)), rank=r,
                rcond=float(pe[0] / pe[-1])), work)
            if eq is None:
                left_out.append(f"rank {r} (residual above ACCEPT_RTOL = {ACCEPT_RTOL:g})")
            else:
                out.append(eq)
    return out, left_out


# ---------------------------------------------------------------- general V: Newton's method


@numerical_boundary
def newton(params: Params, cov0: np.ndarray, *, maxiter: int = NEWTON_MAXITER,
           krylov_budget: int = KRYLOV_BUDGET) -> tuple[np.ndarray, float, int] | None:
    """Newton's method on F(Σ) = 0 over Sym(d) from Σ0: solve L_Σ(H) = −F(Σ), Σ ← Σ + H.

    Dense Kronecker solves for d ≤ 30. Beyond, matrix-free inexact Newton: GMRES on L (applied
    as MH + HMᵀ + Σ_h (V_hHB_hΣ + ΣB_hᵀHV_hᵀ), O(H d³) a product, no d² × d² matrix) to the
    relative residual min(FORCING_MAX, relative residual of F) ≥ GMRES_RTOL, preconditioned by
    the Lyapunov operator H ↦ M̃H + HM̃ᵀ of `preconditioner_matrix` (one real Schur form of M̃ per
    Newton step, then O(d³) per application). Once the relative residual is below NEWTON_RTOL,
    up to POLISH_STEPS further steps are taken while they lower it for d ≤ 30 (a small absolute
    ‖F(Σ)‖ keeps the Kantorovich ball of a certificate small). An iterate whose entries are all
    below ZERO_RTOL max|Σ0| means convergence to the equilibrium Σ = 0 (F(0) = 0; near 0 a step
    is H = −Σ + O(‖Σ‖²) wherever the Lyapunov operator of A is invertible), which is returned
    with residual 0. Returns (Σ, relative residual, iterations), or None when the iteration
    diverges or does not reach NEWTON_RTOL within maxiter steps. Budgets: maxiter Newton steps;
    krylov_budget GMRES iterations over all steps, SolverError when spent. params: a Params;
    cov0: a covariance (validation.as_covariance); maxiter, krylov_budget: integers ≥ 1
    (InvalidInputError otherwise).
    """
    if not isinstance(params, Params):
        raise InvalidInputError(f"params must be a riccati_tf.Params, got {type(params).__name__}")
    cov = as_covariance("cov0", cov0, params.d)
    maxiter = as_count("maxiter", maxiter, minimum=1)
    budget = _KrylovBudget(as_count("krylov_budget", krylov_budget, minimum=1), _Work())
    return _newton(params, cov, maxiter, budget)


def _newton(params: Params, cov: np.ndarray, maxiter: int,
            budget: _KrylovBudget) -> tuple[np.ndarray, float, int] | None:
    """`newton` from any symmetric Σ0, unvalidated: Newton's method works on Sym(d), and an
    internal start (a continuation iterate, the end of an integration) may sit slightly outside
    the PSD cone without being anyone's input; only the equilibria it reaches are tested for
    Σ ⪰ 0 (`_general`)."""
    d = params.d
    cov = 0.5 * (cov + cov.T)
    start = float(np.abs(cov).max(initial=0.0))
    bound = 1e8 * max(magnitude(params), float(np.linalg.norm(cov)))
    at = None
    for it in range(1, maxiter + 1):
        at = products(params, cov) if at is None else at
        res = at.residual
        if res <= NEWTON_RTOL:
            if d > KRONECKER_MAX_D or res == 0.0:  # (a GMRES solve; nothing to polish at 0)
                return cov, res, it - 1
            return (*_polish(params, cov, res, budget.work), it - 1)
        budget.work.charge(newton=1)
        forcing = max(min(FORCING_MAX, res), NEWTON_RTOL / (10 * res))
        try:
            step = _newton_step(params, at, budget, forcing)
        except KrylovBudgetSpent:
            raise
        except (LinAlgError, SolverError):
            return None
        H = from_coords(step, d)
        if not np.all(np.isfinite(cov + H)) or np.linalg.norm(cov + H) > bound:
            return None
        if d > KRONECKER_MAX_D:
            full = products(params, cov + H)
            t = exact_line_search(at.field, full.field)
            H = t * H
            at = full if t == 1.0 else products(params, cov + H)
            cov = at.cov
        else:
            at, cov = None, cov + H
        if np.abs(cov).max(initial=0.0) <= ZERO_RTOL * start:
            return np.zeros((d, d)), 0.0, it
        if np.linalg.norm(H) <= 4 * np.finfo(float).eps * np.linalg.norm(cov):
            res = relative_residual(params, cov)
            return (cov, res, it) if res <= ACCEPT_RTOL else None
    res = relative_residual(params, cov)
    return (cov, res, maxiter) if res <= ACCEPT_RTOL else None


def exact_line_search(F0: np.ndarray, F1: np.ndarray) -> float:
    """t ∈ (0, 1] minimising ‖F(Σ + tH)‖_F for a Newton step H (Benner & Byers, "An exact line
    search method for solving generalized continuous-time algebraic Riccati equations", IEEE
    TAC 43 (1998)): F is quadratic, F(Σ + tH) = (1 − t)F(Σ) + t r + t²(F(Σ + H) − r) with r =
    F(Σ) + L(H) the Newton equation's residual, taken as 0 (GMRES made it small); the quartic
    ‖(1 − t)F + t²F₁‖² is minimised on a grid of LINE_SEARCH_POINTS steps. Far from an
    equilibrium a full step may overshoot; near one t → 1 and Newton's convergence is kept.
    F0 = F(Σ), F1 = F(Σ + H)."""
    a, b, c = (float(np.vdot(x, y)) for x, y in ((F0, F0), (F0, F1), (F1, F1)))
    t = np.linspace(0.0, 1.0, LINE_SEARCH_POINTS + 1)[1:]
    phi = (1 - t) ** 2 * a + 2 * (1 - t) * t ** 2 * b + t ** 4 * c
    return float(t[np.argmin(phi)])


def _polish(params: Params, cov: np.ndarray, res: float,
            work: _Work) -> tuple[np.ndarray, float]:
    budget = _KrylovBudget(KRYLOV_BUDGET, work)
    for _ in range(POLISH_STEPS):
        work.charge(newton=1)
        try:
            step = _newton_step(params, products(params, cov), budget, GMRES_RTOL)
        except (LinAlgError, SolverError):
            break
        new = cov + from_coords(step, params.d)
        new_res = relative_residual(params, new)
        if not new_res < res:
            break
        cov, res = new, new_res
    return cov, res


class KrylovBudgetSpent(SolverError):
    """A matrix-free Newton solve used up its budget of GMRES iterations."""


class _KrylovBudget:
    """The GMRES iterations left to one Newton solve (KRYLOV_BUDGET by default), each one
    Lyapunov solve charged to the search's `_Work` (a new unlimited one by default)."""

    def __init__(self, total: int, work: _Work | None = None):
        self.total = self.left = total
        self.work = _Work() if work is None else work

    def spend(self) -> None:
        if self.left <= 0:
            raise KrylovBudgetSpent(f"the Newton solve spent its budget of {self.total} GMRES "
                                    f"iterations (krylov_budget)")
        self.left -= 1
        self.work.charge(lyapunov=1)


def preconditioner_matrix(params: Params, at: Products) -> np.ndarray:
    """M̃ = M + Σ_h v̄_h Σ B_hᵀ = M + Σ_h v̄_h C_hᵀ (v̄_h = tr V_h / d; `at`: the products at Σ):
    L with every V_h replaced by v̄_h I is H ↦ M̃H + HM̃ᵀ, exactly L for scalar V. M itself would
    not do: at a full-rank equilibrium MΣ* + Σ*Mᵀ = F(Σ*) = 0, so H ↦ MH + HMᵀ is singular
    there (Σ* is in its kernel)."""
    Bbar = sum((np.trace(V) / params.d * B for V, B in params.heads),
               start=np.zeros((params.d, params.d)))
    return at.M + at.cov @ Bbar.T


def lyapunov_preconditioner(Mt: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """R ↦ the solution H of M̃H + HM̃ᵀ = R (symmetric R): with M̃ᵀ = ZTZᵀ (one real Schur form),
    TᵀX + XT = ZᵀRZ by the recursive triangular solver and H = ZXZᵀ — O(d³) a solve."""
    T, Z = schur(Mt.T, output="real")

    def solve(R: np.ndarray) -> np.ndarray:
        return Z @ lapack_sylvester_gramian(T, Z.T @ R @ Z) @ Z.T
    return solve


def _newton_step(params: Params, at: Products, budget: _KrylovBudget,
                 rtol: float) -> np.ndarray:
    """The Newton step h (coordinates) with L(h) = −F(Σ) at the products `at`."""
    d = params.d
    f = to_coords(at.field)
    if d <= KRONECKER_MAX_D:
        return np.linalg.solve(linearization_matrix(params, at.cov), -f)
    solve = lyapunov_preconditioner(preconditioner_matrix(params, at))
    op = linearization_operator(params, at.cov, at)
    return gmres_right(op.matvec, lambda r: to_coords(solve(from_coords(r, d))), -f,
                       max(rtol, GMRES_RTOL), budget)


def gmres_right(apply: Callable[[np.ndarray], np.ndarray],
                precond: Callable[[np.ndarray], np.ndarray], b: np.ndarray, rtol: float,
                budget: _KrylovBudget) -> np.ndarray:
    """x with ‖b − Ax‖ ≤ rtol ‖b‖: GMRES right-preconditioned by `precond` (x = Σ y_j z_j with
    z_j = precond(v_j), so the residual minimised is the true one), restarted every
    GMRES_RESTART iterations, modified Gram–Schmidt and Givens rotations. Each iteration is one
    `apply` and one `precond`, charged to `budget` (KrylovBudgetSpent when it is spent)."""
    x = np.zeros_like(b)
    r, target = b, rtol * np.linalg.norm(b)
    while True:
        beta = np.linalg.norm(r)
        if beta <= target:
            return x
        m = GMRES_RESTART
        V, Z = [r / beta], []
        R = np.zeros((m + 1, m))
        cs, sn = np.zeros(m), np.zeros(m)
        g = np.zeros(m + 1)
        g[0] = beta
        k = 0
        for j in range(m):
            budget.spend()
            z = precond(V[j])
            w = apply(z)
            Z.append(z)
            for i in range(j + 1):
                R[i, j] = np.dot(V[i], w)
                w = w - R[i, j] * V[i]
            R[j + 1, j] = np.linalg.norm(w)
            for i in range(j):  # the earlier rotations on the new column
                R[i, j], R[i + 1, j] = (cs[i] * R[i, j] + sn[i] * R[i + 1, j],
                                        -sn[i] * R[i, j] + cs[i] * R[i + 1, j])
            rho = np.hypot(R[j, j], R[j + 1, j])
            cs[j], sn[j] = (R[j, j] / rho, R[j + 1, j] / rho) if rho > 0 else (1.0, 0.0)
            breakdown = R[j + 1, j] == 0.0
            R[j, j], R[j + 1, j] = rho, 0.0
            g[j], g[j + 1] = cs[j] * g[j], -sn[j] * g[j]
            k = j + 1
            if abs(g[k]) <= target or breakdown:
                break
            V.append(w / np.linalg.norm(w))
        y = solve_triangular(R[:k, :k], g[:k])
        x = x + np.column_stack(Z) @ y
        if abs(g[k]) <= target:  # the least-squares residual is that of x (exact arithmetic)
            return x
        r = b - apply(x)


def _scalar_part(params: Params, s: float) -> Params:
    """V_h(s) = (1 − s) v̄_h I + s V_h with v̄_h = tr V_h / d (s = 0: the scalar-V layer)."""
    if s == 1.0:
        return params
    eye = np.eye(params.d)
    heads = [((1 - s) * np.trace(V) / params.d * eye + s * V, B) for V, B in params.heads]
    return Params(params.A, b=params.b, heads=heads)


def _continuation_stage(params: Params, axis_rtol: float, *, work: _Work) -> np.ndarray | None:
    """Track the stabilizing scalar-V equilibrium to the general V by Newton's method in s
    (steps ≤ CONTINUATION_STEP; beyond d = 30 a first step straight to s = 1). Remembered per
    layer (read-only result): certify asks `equilibria` of one layer from several starts."""
    try:
        start = _scalar_stable(_scalar_part(params, 0.0), axis_rtol, work)
    except SolverError:
        return None
    if not start or start[0].rank == 0:
        return None
    # beyond d = 30 each Newton solve is costly: first try the whole way in one solve
    cov, s = start[0].cov, 0.0
    h = 1.0 if params.d > KRONECKER_MAX_D else CONTINUATION_STEP
    for _ in range(CONTINUATION_SOLVES if params.d <= KRONECKER_MAX_D else
                   CONTINUATION_SOLVES_KRYLOV):
        if s >= 1.0:
            break
        t = min(1.0, s + h)
        try:  # the iterate may have left the PSD cone on the way: it is no one's input
            got = _newton(_scalar_part(params, t), cov, CONTINUATION_MAXITER,
                          _KrylovBudget(KRYLOV_BUDGET, work))
        except (KrylovBudgetSpent, LinAlgError):  # too long a step for the budget: a shorter one
            got = None
        if got is None:
            h /= 2
            if h < CONTINUATION_MIN_STEP:
                return None
            continue
        cov, s = got[0], t
        h = min(2 * h, CONTINUATION_STEP)
    if s < 1.0:  # the budget of solves is spent before s = 1
        return None
    cov.setflags(write=False)
    return cov


_continuation = _PerLayer(_continuation_stage)


def _settled_stage(params: Params, *, work: _Work) -> np.ndarray | None:
    """Where the covariance flow settles from Σ0 = magnitude(params)·I: the first state, step by
    step of RK45 (rtol SETTLE_INTEGRATION_RTOL, atol that times tr Σ0 / d: the search needs Σ to
    the accuracy of its start's scale; dense heads of low rank through their factors), at which
    the relative residual of F is ≤ SETTLE_RTOL; once SETTLE_RHS_BUDGET right-hand sides are
    spent (explicit steps are slow near a stiff equilibrium), the state where an implicit run
    from there settles (`_stiff_settled`), or the stalled state itself; None when tr Σ falls
    below tr Σ0 / SETTLE_RANGE (Σ heads for 0) or rises above SETTLE_GROWTH tr Σ0, when
    t = SETTLE_HORIZON / rate passes (rate = max(‖A‖₂, c‖Σ0‖₂)), or when the integration fails.
    A stable equilibrium attracts the flow, so this start lies in its basin when Σ0 does;
    Newton takes it from there. Each right-hand side is charged to `work`. Remembered per layer
    (read-only result)."""
    d = params.d
    bare = factored_layer(params, bias=False) if d >= FACTOR_MIN_D else \
        Params(params.A, heads=params.heads)

    def rhs(_t: float, y: np.ndarray) -> np.ndarray:
        work.charge(rhs=1)
        return covariance_array(bare, y.reshape(d, d)).ravel()
    S0 = magnitude(params) * np.eye(d)
    tr0 = float(np.trace(S0))
    rate = max(drift_spectrum(params)[1], quadratic_constant(params) * magnitude(params))
    if not (np.isfinite(rate) and rate > 0 and tr0 > 0):
        return None
    stepper = RK45(rhs, 0.0, S0.ravel(), SETTLE_HORIZON / rate, rtol=SETTLE_INTEGRATION_RTOL,
                   atol=SETTLE_INTEGRATION_RTOL * tr0 / d)
    start = work.rhs
    with np.errstate(over="ignore", invalid="ignore"):  # a runaway Σ is detected below
        while stepper.status == "running":
            stepper.step()
            S = stepper.y.reshape(d, d)
            tr = float(np.trace(S))
            if stepper.status == "failed" or not tr0 / SETTLE_RANGE < tr < SETTLE_GROWTH * tr0:
                return None
            S = 0.5 * (S + S.T)
            if products(params, S).residual <= SETTLE_RTOL:
                S.setflags(write=False)
                return S
            if work.rhs - start >= SETTLE_RHS_BUDGET:
                S = _stiff_settled(params, S, stepper.t, tr0, rate, work)
                S.setflags(write=False)
                return S
    return None


def _stiff_settled(params: Params, S: np.ndarray, t: float, tr0: float, rate: float,
                   work: _Work) -> np.ndarray:
    """The explicit steps stalled at (t, S) (a stiff flow): the state where the implicit run
    of `stiffpath` (Radau IIA, exact Jacobian; d ≤ STIFF_MAX_D) from S settles to the relative
    residual NEWTON_SETTLE_RTOL, within the horizon and range of `_settled_stage`; S itself
    when d is larger or the run ends elsewhere (Newton then tries from S, as before). Each
    right-hand side and Jacobian of the run is charged to `work` as one right-hand side."""
    if params.d > STIFF_MAX_D:
        return S
    run = implicit_flow(params, S, SETTLE_HORIZON / rate - t, rtol=SETTLE_INTEGRATION_RTOL,
                          atol=SETTLE_INTEGRATION_RTOL * tr0 / params.d,
                          settle_rtol=NEWTON_SETTLE_RTOL, top=SETTLE_GROWTH * tr0,
                          bottom=tr0 / SETTLE_RANGE)
    work.charge(rhs=run.evaluations + run.jacobians)
    return run.cov if run.status == "settled" else S


_settled = _PerLayer(_settled_stage)


def implicit_flow(params: Params, cov0: np.ndarray, t_end: float, *, rtol: float, atol: float,
                  settle_rtol: float | None = None, top: float = np.inf,
                  bottom: float = 0.0) -> StiffRun:
    """Σ(t) of Σ̇ = F(Σ) from cov0 up to t_end by `stiffpath.integrate_stiff` (Radau IIA) in
    orthonormal coordinates, with the exact Jacobian L_Σ (`linearization_matrix`); d ≤
    STIFF_MAX_D (ValueError beyond). Stops at relative residual settle_rtol, tr Σ ≥ top or
    ≤ bottom, as `StiffRun.status` says."""
    d = params.d
    if d > STIFF_MAX_D:
        raise ValueError(f"the implicit flow forms the n_s × n_s Jacobian up to d = "
                         f"{STIFF_MAX_D}, got d = {d}")
    return integrate_stiff(lambda h: to_coords(F(params, from_coords(h, d))),
                           lambda h: linearization_matrix(params, from_coords(h, d)),
                           lambda h: from_coords(h, d), to_coords(0.5 * (cov0 + cov0.T)), t_end,
                           rtol=rtol, atol=atol,
                           residual=lambda S: relative_residual(params, S),
                           settle_rtol=settle_rtol, top=top, bottom=bottom)


def _search_general(params: Params, which: str, starts: list[np.ndarray], axis_rtol: float,
                    work: _Work,
                    progress: Callable[[int, int], None] | None) -> tuple[list[Equilibrium],
                                                                          str | None, str]:
    """Newton's method from Σ = 0, the continuation, the given starts, the state where the flow
    settles (`_settled`) and, for which="all" (d ≤ 30), RANDOM_STARTS fixed random starts, in
    this order, each start computed when its turn comes. Returns (the distinct PSD equilibria
    of the kind asked for, None or what stopped the search, the starts tried in words);
    progress(i, n) after start i of n."""
    d = params.d
    scale = magnitude(params)
    rng = np.random.default_rng(0)
    randoms = [rng.standard_normal((d, d))
               for _ in range(RANDOM_STARTS if d <= KRONECKER_MAX_D and which == "all" else 0)]
    plan: list[tuple[str, Callable[[], np.ndarray | None]]] = [
        ("zero", lambda: np.zeros((d, d))),
        ("continuation", lambda: _continuation(params, axis_rtol, work=work)),
        *(("given start", lambda S=S: S) for S in starts),
        ("flow", lambda: _settled(params, work=work)),
        *(("random start", lambda R=R: scale * (R @ R.T) / d) for R in randoms)]
    found: list[Equilibrium] = []
    tried: list[str] = []
    for i, (how, make_start) in enumerate(plan):
        try:
            S0 = make_start()
            got = None if S0 is None else _newton(params, S0, NEWTON_MAXITER,
                                                  _KrylovBudget(KRYLOV_BUDGET, work))
        except KrylovBudgetSpent as exc:
            if how != "flow":
                return found, f"Newton from the {how} start: {exc}", ", ".join(tried)
            got = None  # the search's own start: no equilibrium from it within the budget
        except _BudgetSpent as exc:
            return found, f"{exc} at the {how} start ({i + 1} of {len(plan)})", ", ".join(tried)
        tried.append(how if S0 is not None else f"{how} (none)")
        if progress is not None:
            progress(i + 1, len(plan))
        if got is None or not is_psd(got[0]):
            continue
        cov = got[0]
        ref = max(float(np.linalg.norm(cov)), scale)
        if any(np.linalg.norm(cov - e.cov) <= SAME_RTOL * max(ref, float(np.linalg.norm(e.cov)))
               for e in found):
            continue
        abscissa, stability = decide_stability(params, 0.5 * (cov + cov.T))
        if which == "all" or _verdict(abscissa, stability):
            found.append(make_equilibrium(params, cov, f"newton[{how}]", abscissa=abscissa,
                                          stability=stability))
    return found, None, ", ".join(tried)


# ---------------------------------------------------------------- entry point


def _validated(params: object, which: object, starts: object, axis_rtol: object,
               budget: object, progress: object) -> tuple[Params, str, list[np.ndarray], float]:
    """The caller's arguments of `equilibria` / `equilibrium_search`, checked."""
    if not isinstance(params, Params):
        raise InvalidInputError(f"params must be a riccati_tf.Params, got {type(params).__name__}")
    if which not in ("stable", "all"):
        raise InvalidInputError(f"which must be 'stable' or 'all', got {which!r}")
    rtol = as_rtol("axis_rtol", axis_rtol)
    if isinstance(starts, str | bytes | dict | set | frozenset) or \
            not hasattr(starts, "__iter__"):
        raise InvalidInputError(f"starts must be a list of covariance matrices, got "
                                f"{type(starts).__name__}")
    if isinstance(starts, np.ndarray) and starts.ndim == 2:
        raise InvalidInputError(f"starts must be a list of covariance matrices, got one "
                                f"{starts.shape[0]}×{starts.shape[1]} array: pass [S] for a "
                                f"single start (a (k, d, d) array is read as k starts)")
    if not isinstance(budget, SearchBudget):
        raise InvalidInputError(f"budget must be a SearchBudget, got {type(budget).__name__}")
    if progress is not None and not callable(progress):
        raise InvalidInputError(f"progress must be a callable (i, n) or None, got "
                                f"{type(progress).__name__}")
    covs = [as_covariance(f"starts[{i}]", S, params.d) for i, S in enumerate(starts)]
    if which == "all" and params.value_scalars is not None and params.d > ENUMERATION_MAX_D:
        raise InvalidInputError(f"which='all' enumerates 2^(number of eigenvalue groups) "
                                f"invariant subspaces and is offered for d ≤ "
                                f"{ENUMERATION_MAX_D}, got d = {params.d}")
    return params, str(which), covs, rtol


def _scalar_search(params: Params, which: str, axis_rtol: float,
                   work: _Work) -> tuple[list[Equilibrium], bool, str]:
    """Scalar V: (the equilibria, complete, reason)."""
    if which == "stable":
        found = _scalar_stable(params, axis_rtol, work)
        return found, True, (
            "scalar V: L(H) = (A − Σ*G)H + H(A − Σ*G)ᵀ is Hurwitz exactly when Σ* is the "
            "stabilizing Bernoulli solution, which is unique" + (
                "" if found else "; it does not exist or is no covariance, so no covariance "
                                 "equilibrium is stable"))
    found, left_out = _scalar_all(params, axis_rtol, work)
    if left_out:
        return found, False, (f"scalar V: every A-invariant subspace was enumerated, but "
                              f"{len(left_out)} were left out undecided: "
                              f"{'; '.join(left_out)}")
    return found, True, ("scalar V (distinct eigenvalues of A, none on iℝ): the covariance "
                         "equilibria are one to one the A-invariant subspaces on which P ≻ 0, "
                         "and every invariant subspace was enumerated")


@numerical_boundary
def equilibrium_search(params: Params, *, which: str = "stable",
                       starts: Iterable[ArrayLike] = (), axis_rtol: float = AXIS_RTOL,
                       budget: SearchBudget = DEFAULT_BUDGET,
                       progress: Callable[[int, int], None] | None = None) -> EquilibriumSearch:
    """Search for the covariance equilibria Σ* ⪰ 0 of  AΣ + ΣAᵀ + Σ_h (V_hΣB_hΣ + ΣB_hᵀΣV_hᵀ) = 0
    within a work budget, saying whether the list is known to be complete.

    The search of `equilibria` (SPEC §5), for

        F(Σ) = A Σ + Σ Aᵀ + Σ_h (V_h Σ B_h Σ + Σ B_hᵀ Σ V_hᵀ) = 0,      Σ ⪰ 0,

    returned with its claim: `complete` (True only where a theorem makes the list exhaustive:
    scalar V), `undetermined` (the budget ran out first: the list holds what was found by then)
    and the work spent (`SearchWork`: Newton iterations, Lyapunov solves, right-hand sides of
    the flow, seconds).

    Parameters
    ----------
    params : Params
        The time-invariant layer (A, heads (V_h, B_h), b).
    which : {"stable", "all"}, optional
        "stable" (default): the equilibria whose linearisation is Hurwitz; "all": every
        covariance equilibrium found (scalar V: d ≤ ENUMERATION_MAX_D).
    starts : iterable of (d, d) array_like, symmetric positive semidefinite, optional
        Extra starting covariances for Newton's method (general V). Default: none.
    axis_rtol : float, optional
        Relative gap in (0, 1) from the imaginary axis for the eigenvalues of A (scalar V).
        Default AXIS_RTOL = 1e-8.
    budget : SearchBudget, optional
        The work the search may spend (default DEFAULT_BUDGET: SEARCH_NEWTON_ITERATIONS = 500
        Newton iterations, SEARCH_LYAPUNOV_SOLVES = 5000 Lyapunov solves, SEARCH_SECONDS = 60
        wall-clock seconds).
    progress : callable (int, int) -> None, optional
        Called as progress(i, n) after start i of the n starts of the general-V search (the
        package's progress callbacks, e.g. `riccati_tf.empirical.encoders.tty_progress`).
        Default None.

    Returns
    -------
    EquilibriumSearch
        The equilibria found, complete, undetermined, the reason, the budget and the work
        spent.

    Raises
    ------
    InvalidInputError
        As `equilibria`; budget not a SearchBudget; progress neither callable nor None.
    SolverError
        As `equilibria`, except that a spent budget gives an undetermined result instead.

    See Also
    --------
    equilibria : the method in full; the list alone, EquilibriaUndetermined when undetermined.
    SearchBudget : the limits.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".

    Examples
    --------
    A general V: Newton's method from its starts, which proves nothing about equilibria it did
    not reach.

    >>> import numpy as np
    >>> from riccati_tf import Params
    >>> from riccati_tf.stability.equilibria import SearchBudget, equilibrium_search
    >>> V = -np.array([[1.0, 0.2], [0.0, 1.0]])
    >>> p = Params(np.diag([1.0, 2.0]), B=0.5 * np.eye(2), V=V)
    >>> r = equilibrium_search(p, which="all")
    >>> r.complete, r.undetermined, len(r.equilibria) >= 2
    (False, False, True)
    >>> r.reason.startswith("general V: Newton's method")
    True

    A budget too small for the search of another layer: undetermined, with what ran out.

    >>> q = Params(np.diag([1.0, 3.0]), B=0.5 * np.eye(2), V=V)
    >>> r = equilibrium_search(q, budget=SearchBudget(newton_iterations=1))
    >>> r.undetermined, r.complete, r.equilibria
    (True, False, ())
    >>> r.reason
    'its 1 Newton iterations are spent at the continuation start (2 of 3); starts tried: zero'
    """
    params, which, covs, axis_rtol = _validated(params, which, starts, axis_rtol, budget,
                                                progress)
    work = _Work(budget)
    stop: str | None = None
    if params.value_scalars is not None:
        try:
            found, complete, reason = _scalar_search(params, which, axis_rtol, work)
        except _BudgetSpent as exc:
            found, complete, stop = [], False, str(exc)
            reason = f"{stop} (scalar V: Newton polishing of a Bernoulli solution)"
    elif which == "stable" and not np.any(params.A):
        found, complete = [], True
        reason = ("A = 0: F(cΣ) = c²F(Σ), so L(Σ*) = 2F(Σ*) = 0 at every equilibrium Σ* ≠ 0 "
                  "and L = 0 at Σ* = 0: no equilibrium has L Hurwitz")
    else:
        found, stop, tried = _search_general(params, which, covs, axis_rtol, work, progress)
        complete = False
        reason = (f"{stop}; starts tried: {tried or 'none'}" if stop else
                  f"general V: Newton's method from the starts ({tried}) finds equilibria one "
                  f"at a time; nothing proves that there are no others")
    return EquilibriumSearch(tuple(found), which, complete, stop is not None, reason, budget,
                             work.spent())


@numerical_boundary
def equilibria(params: Params, *, which: str = "stable", starts: Iterable[ArrayLike] = (),
               axis_rtol: float = AXIS_RTOL, budget: SearchBudget = DEFAULT_BUDGET,
               progress: Callable[[int, int], None] | None = None) -> list[Equilibrium]:
    """Covariance equilibria Σ* ⪰ 0 of  AΣ + ΣAᵀ + Σ_h (V_hΣB_hΣ + ΣB_hᵀΣV_hᵀ) = 0.

    The equilibria of the covariance flow Σ̇ = F(Σ) of a time-invariant layer (SPEC §5):

        F(Σ) = A Σ + Σ Aᵀ + Σ_h (V_h Σ B_h Σ + Σ B_hᵀ Σ V_hᵀ) = 0,      Σ ⪰ 0,

    each with its linearisation's spectral abscissa (stable iff L is Hurwitz on Sym(d)) and,
    where it exists, the mean equilibrium m* = −K*⁻¹ b, K* = A + Σ_h V_h + Σ_h V_h Σ* B_h.

    Scalar V (V_h = v_h I, G = −Σ_h v_h (B_h + B_hᵀ)): the equilibria solve the Bernoulli
    equation A Σ + Σ Aᵀ − Σ G Σ = 0, one for each A-invariant subspace on which the solution P
    of T_Rᵀ P + P T_R = G_R is positive definite (Σ = U_R P⁻¹ U_Rᵀ). which="stable" returns the
    stabilizing Bernoulli solution (Schur fast path; rank = number of eigenvalues of A with
    Re λ > 0) when it is positive semidefinite, else none (every other Bernoulli solution leaves
    A − ΣG, hence L, unstable). which="all" (d ≤ ENUMERATION_MAX_D = 10): every covariance
    equilibrium, one per A-invariant subspace with P ≻ 0 (exhaustive; needs distinct
    eigenvalues off the imaginary axis). An equilibrium whose stability could not be decided
    (stable None) is returned only with which="all". The scalar case is solved in the scaled form of
    riccati.bernoulli_scaling, so the verdict does not depend on the magnitudes of A and G.

    General V (either value of which): Newton's method on F from Σ = 0, continuation from the
    scalar case V_h(s) = (1 − s) v̄_h I + s V_h (v̄_h = tr V_h / d), the given `starts`, the
    state where the covariance flow from magnitude·I settles (a stable equilibrium attracts
    the flow: RK45 at rtol 1e-3, step by step until the relative residual of F is ≤
    SETTLE_RTOL, given up once tr Σ shrinks by SETTLE_RANGE or grows by SETTLE_GROWTH) and, for
    which="all" (d ≤ KRONECKER_MAX_D = 30), RANDOM_STARTS fixed random starts (seed 0): the
    distinct PSD equilibria found, not a proof that there are no others (with A = 0 and
    which="stable" no search: F(cΣ) = c²F(Σ) gives L(Σ*) = 2F(Σ*) = 0, so none is stable);
    beyond d = 30 inexact Newton–Krylov (GMRES on L matrix-free, preconditioned by a Lyapunov
    solve). which="stable" keeps those with L Hurwitz. Iterates of the search may leave the PSD
    cone (Newton works on Sym(d)); only the equilibria reached are tested for Σ ⪰ 0.

    Accepted residual: ACCEPT_RTOL = 1e-9 (Newton aims at NEWTON_RTOL = 1e-13; a Bernoulli
    solution above it is Newton-polished). Budgets: the search's `budget` (Newton iterations,
    Lyapunov solves and seconds over the whole search; when it runs out,
    EquilibriaUndetermined, whose `search` holds what was found and the work spent), and per
    start NEWTON_MAXITER Newton steps, CONTINUATION_SOLVES Newton solves of
    CONTINUATION_MAXITER steps for the continuation (steps ≥ CONTINUATION_MIN_STEP),
    SETTLE_RHS_BUDGET right-hand sides for the flow, RANDOM_STARTS starts, and beyond d = 30
    KRYLOV_BUDGET GMRES iterations per Newton solve (a continuation step that spends it is
    halved instead; the flow's start that spends it is dropped; any other start that spends it
    ends the search undetermined). Whether the list is known to be complete (scalar V: yes,
    unless a subspace was left out undecided; general V: no) is said by
    `equilibrium_search`, which runs the same search and returns its result instead of raising.

    Parameters
    ----------
    params : Params
        The time-invariant layer (A, heads (V_h, B_h), b).
    which : {"stable", "all"}, optional
        "stable" (default): the equilibria whose linearisation is Hurwitz; "all": every
        covariance equilibrium (scalar V: exhaustive, d ≤ 10; general V: all found).
    starts : iterable of (d, d) array_like, symmetric positive semidefinite, optional
        Extra starting covariances for Newton's method (general V; the scalar-V solutions need
        none). Default: none.
    axis_rtol : float, optional
        Relative gap in (0, 1): an eigenvalue of A with |Re λ| ≤ axis_rtol ‖A‖_F counts as on
        the imaginary axis (scalar V). Default AXIS_RTOL = 1e-8.
    budget : SearchBudget, optional
        The work the search may spend: Newton iterations, Lyapunov solves (Newton–Krylov's
        preconditioner beyond d = 30) and wall-clock seconds (default DEFAULT_BUDGET =
        SearchBudget(500, 5000, 60.0)).
    progress : callable (int, int) -> None, optional
        Called as progress(i, n) after start i of the n starts of the general-V search, as the
        package's other long loops report (e.g.
        `riccati_tf.empirical.encoders.tty_progress("starts")`). Default None.

    Returns
    -------
    list of Equilibrium
        The equilibria found, each with Σ*, m* (or None), residual, rank, stability, spectral
        abscissa and method; empty when there is none of the kind asked for.

    Raises
    ------
    InvalidInputError
        params not a Params; which not "stable" or "all"; axis_rtol outside (0, 1); starts not
        a list of d×d covariance matrices (shape, NaN/Inf, symmetry, positive semidefiniteness
        checked as by validation.as_covariance); which="all" for scalar V with
        d > ENUMERATION_MAX_D; budget not a SearchBudget; progress neither callable nor None.
    EquilibriaUndetermined
        A `SolverError`: the budget ran out before the search ended (its `search` holds the
        equilibria found by then, the reason and the work spent).
    SolverError
        Scalar V: an eigenvalue of A within axis_rtol ‖A‖_F of iℝ (the stable/anti-stable
        split is not defined robustly); which="all": a repeated eigenvalue of A or two that sum
        to ≈ 0 (the invariant subspaces cannot be enumerated); the stabilizing solution not
        reaching ACCEPT_RTOL even after Newton polishing; an equilibrium beyond the float range.
        Any failure of floating point (LinAlgError, overflow).

    See Also
    --------
    riccati_tf.certify : where Σ(t) goes from a given start, with checkable evidence.
    riccati_tf.stability.riccati.bernoulli : the stabilizing Bernoulli solution for scalar V.
    Equilibrium : one equilibrium with its evidence.
    equilibrium_search : the same search with its budget, work spent and completeness.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".
    .. [2] P. Benner and R. Byers, "An exact line search method for solving generalized
       continuous-time algebraic Riccati equations", IEEE Trans. Automatic Control 43(1), 1998.

    Examples
    --------
    Scalar V = −I, B = I/2 (G = I) and A = diag(1, 2): Σ* = diag(2, 4) is the stable
    equilibrium; three more (0 and the two of rank 1) are unstable.

    >>> import numpy as np
    >>> from riccati_tf import Params, equilibria
    >>> p = Params(np.diag([1.0, 2.0]), B=0.5 * np.eye(2), V=-np.eye(2))
    >>> [eq] = equilibria(p)
    >>> np.round(eq.cov, 4)
    array([[2., 0.],
           [0., 4.]])
    >>> eq.stable, eq.rank, eq.residual < 1e-12
    (True, 2, True)
    >>> [(e.rank, e.stable) for e in equilibria(p, which="all")]
    [(0, False), (1, False), (1, False), (2, True)]

    A value matrix that is not a multiple of I: Newton's method, continued from the scalar case.

    >>> V = -np.array([[1.0, 0.2], [0.0, 1.0]])
    >>> [eq] = equilibria(Params(np.diag([1.0, 2.0]), B=0.5 * np.eye(2), V=V))
    >>> eq.method, eq.stable, eq.residual <= 1e-9
    ('newton[continuation]', True, True)
    >>> np.round(eq.cov, 4)
    array([[ 2.1669, -0.5074],
           [-0.5074,  3.9346]])
    """
    search = equilibrium_search(params, which=which, starts=starts, axis_rtol=axis_rtol,
                                budget=budget, progress=progress)
    if search.undetermined:
        raise EquilibriaUndetermined(search)
    return list(search.equilibria)
