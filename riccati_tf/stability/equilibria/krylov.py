"""The linear solves of Newton–Krylov beyond d = KRONECKER_MAX_D: GMRES right-preconditioned by
the Lyapunov operator H ↦ M̃H + HM̃ᵀ (M̃ = M + Σ_h v̄_h Σ B_hᵀ, one real Schur form of M̃ per Newton
step), within a budget of GMRES iterations per Newton solve.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.linalg import schur, solve_triangular

from ...errors import SolverError
from ...state.params import Params
from ..riccati.schur import lapack_sylvester_gramian
from .budget import _Work
from .constants import GMRES_RESTART
from .field import Products

__all__: list[str] = []


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
