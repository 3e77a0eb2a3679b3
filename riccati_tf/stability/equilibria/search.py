"""The entry points of the equilibrium search (SPEC §5): `equilibrium_search` (the equilibria
found within a work budget, with whether the list is complete) and `equilibria` (the list alone,
EquilibriaUndetermined when the budget ran out).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
from numpy.typing import ArrayLike

from ...errors import InvalidInputError
from ...state.params import Params
from ...state.validation import as_covariance
from ..riccati import AXIS_RTOL
from ..riccati.numerics import as_rtol, numerical_boundary
from .budget import DEFAULT_BUDGET, SearchBudget, _BudgetSpent, _Work
from .constants import ENUMERATION_MAX_D
from .general import _search_general
from .results import EquilibriaUndetermined, Equilibrium, EquilibriumSearch
from .scalar import _scalar_search

__all__ = ["equilibria", "equilibrium_search"]


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
