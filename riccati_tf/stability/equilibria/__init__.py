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

The modules follow the method: `constants` (the tolerances, sizes and budgets), `results`
(`Equilibrium`, `Stability`, `EquilibriumSearch`, `EquilibriaUndetermined`), `budget` (the work
budget of a search, `SearchBudget` and `SearchWork`), `coords` (the orthonormal coordinates of
Sym(d)), `field` (F and its relative residual), `linearization` (L, its spectral abscissa and
`linearization_stability`), `scales` (the scales of a layer), `evidence` (an equilibrium with its
residual, rank, mean and verdict), `scalar` and `enumeration` (scalar V: the Bernoulli
equation, its stabilizing solution and every solution by invariant subspaces), `newton` and
`krylov` (Newton's method, dense or Newton–Krylov), `continuation` (from the scalar case),
`settling` (the flow start and `implicit_flow`), `general` (general V: Newton from several
starts) and `search` (`equilibrium_search` and `equilibria`).
"""

from .budget import DEFAULT_BUDGET, SearchBudget, SearchWork
from .constants import (
    ACCEPT_RTOL,
    DENSE_SPECTRUM_MAX_D,
    ENUMERATION_MAX_D,
    KRONECKER_MAX_D,
    KRYLOV_BUDGET,
    NEWTON_MAXITER,
    NEWTON_RTOL,
    RANDOM_STARTS,
    RANK_RTOL,
    SEARCH_LYAPUNOV_SOLVES,
    SEARCH_NEWTON_ITERATIONS,
    SEARCH_SECONDS,
)
from .linearization import linearization_stability
from .results import EquilibriaUndetermined, Equilibrium, EquilibriumSearch, Stability
from .search import equilibria, equilibrium_search

__all__ = ["ACCEPT_RTOL", "DEFAULT_BUDGET", "DENSE_SPECTRUM_MAX_D", "ENUMERATION_MAX_D",
           "KRONECKER_MAX_D", "KRYLOV_BUDGET", "NEWTON_MAXITER", "NEWTON_RTOL", "RANDOM_STARTS",
           "RANK_RTOL", "SEARCH_LYAPUNOV_SOLVES", "SEARCH_NEWTON_ITERATIONS", "SEARCH_SECONDS",
           "EquilibriaUndetermined", "Equilibrium", "EquilibriumSearch", "SearchBudget",
           "SearchWork", "Stability", "equilibria", "equilibrium_search",
           "linearization_stability"]
