"""The tolerances, sizes and budgets of the equilibrium search (SPEC §5), each with its reason.

Every constant the modules of `riccati_tf.stability.equilibria` share: the d up to which L is
assembled (KRONECKER_MAX_D), Newton's stopping and acceptance tolerances, the continuation's
steps, the GMRES and eigensolver budgets, the flow start's horizon and range, and the search's
default work budget (`SearchBudget`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["ACCEPT_RTOL", "DENSE_SPECTRUM_MAX_D", "ENUMERATION_MAX_D", "KRONECKER_MAX_D",
           "KRYLOV_BUDGET", "NEWTON_MAXITER", "NEWTON_RTOL", "RANDOM_STARTS", "RANK_RTOL",
           "SEARCH_LYAPUNOV_SOLVES", "SEARCH_NEWTON_ITERATIONS", "SEARCH_SECONDS"]


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
