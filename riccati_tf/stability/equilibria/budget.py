"""The work budget of one equilibrium search: Newton iterations, Lyapunov solves, right-hand
sides of the flow and seconds (`SearchBudget`, `SearchWork`), the running count against it, and
the per-layer memory of the search's stages.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Generic, TypeVar

from ...state.validation import as_count, as_time
from .constants import SEARCH_LYAPUNOV_SOLVES, SEARCH_NEWTON_ITERATIONS, SEARCH_SECONDS

__all__ = ["DEFAULT_BUDGET", "SearchBudget", "SearchWork"]


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
