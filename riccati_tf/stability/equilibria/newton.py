"""Newton's method on F(Σ) = 0 over Sym(d): solve L_Σ(H) = −F(Σ), Σ ← Σ + H.

Dense Kronecker solves for d ≤ KRONECKER_MAX_D; beyond, inexact Newton–Krylov (GMRES on L
matrix-free, preconditioned by a Lyapunov solve, `krylov`) with the exact line search of
Benner & Byers; the polishing of an equilibrium to the accepted residual.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import LinAlgError

from ...errors import InvalidInputError, SolverError
from ...state.params import Params
from ...state.validation import as_count, as_covariance
from ..riccati.numerics import numerical_boundary
from .budget import _Work
from .constants import (
    ACCEPT_RTOL,
    FORCING_MAX,
    GMRES_RTOL,
    KRONECKER_MAX_D,
    KRYLOV_BUDGET,
    LINE_SEARCH_POINTS,
    NEWTON_MAXITER,
    NEWTON_RTOL,
    POLISH_STEPS,
    ZERO_RTOL,
)
from .coords import from_coords, to_coords
from .evidence import make_equilibrium
from .field import Products, products, relative_residual
from .krylov import (
    KrylovBudgetSpent,
    _KrylovBudget,
    gmres_right,
    lyapunov_preconditioner,
    preconditioner_matrix,
)
from .linearization import linearization_matrix, linearization_operator
from .results import Equilibrium
from .scales import magnitude

__all__: list[str] = []


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
