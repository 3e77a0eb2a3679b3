"""The covariance flow integrated by an implicit method, for the stiff stretch on which explicit
Runge–Kutta stalls (SPEC §5).

    ḣ = coords(F(Σ)),   Σ = from_coords(h),   ∂ḣ/∂h = L_Σ,
    F(Σ) = AΣ + ΣAᵀ + Σ_h (V_hΣB_hΣ + ΣB_hᵀΣV_hᵀ),
    L_Σ(H) = M H + H Mᵀ + Σ_h (V_hHB_hΣ + ΣB_hᵀHV_hᵀ),

in the orthonormal coordinates h of Sym(d) (|h| = ‖H‖_F), by scipy's Radau IIA (order 5) with
the exact Jacobian L_Σ as a dense n_s × n_s matrix (n_s = d(d+1)/2, `linearization_matrix`), so
d ≤ STIFF_MAX_D. Once Σ is large the eigenvalues of L_Σ spread over decades and an explicit step
is limited by the fastest of them; an implicit step is limited by the accuracy asked for only.

Notes
-----
The run stops early when tr Σ leaves (bottom, top) (a collapse or a runaway, which the callers
hand to their own tests), when the relative residual ‖F(Σ)‖_F / (‖AΣ‖_F + Σ_h‖V_hΣB_hΣ‖_F) is
at most `settle_rtol` (the flow has settled: Newton takes over), or after `max_steps` steps.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.integrate import Radau

from ..state.params import Params
from .equilibria import (
    KRONECKER_MAX_D,
    F,
    from_coords,
    linearization_matrix,
    relative_residual,
    to_coords,
)

__all__ = ["STIFF_MAX_D", "STIFF_MAX_STEPS", "StiffRun", "integrate_stiff"]

#: the dense Jacobian (n_s × n_s, n_s = d(d+1)/2) is formed up to this d
STIFF_MAX_D = KRONECKER_MAX_D
#: steps of one run (each one Jacobian and one complex and one real LU of n_s × n_s at most)
STIFF_MAX_STEPS = 4000


@dataclass(frozen=True)
class StiffRun:
    """Where an implicit run of the covariance flow stopped.

    status: "end" (t reached t_end), "settled" (relative residual ≤ settle_rtol), "runaway"
    (tr Σ ≥ top), "collapse" (tr Σ ≤ bottom), "steps" (max_steps spent) or "failed" (the
    step size collapsed). t: the time reached; cov: Σ(t) (symmetric); steps, evaluations: the
    steps taken and the right-hand sides evaluated (Jacobians not counted)."""

    status: str
    t: float
    cov: np.ndarray
    steps: int
    evaluations: int
    jacobians: int


def integrate_stiff(params: Params, cov0: np.ndarray, t_end: float, *, rtol: float,
                    atol: float, settle_rtol: float | None = None, top: float = np.inf,
                    bottom: float = 0.0, max_steps: int = STIFF_MAX_STEPS) -> StiffRun:
    """Σ(t) of Σ̇ = F(Σ) from Σ(0) = cov0 up to t_end by Radau IIA with the exact Jacobian L_Σ
    (module docstring), tolerances rtol and atol on the coordinates h; stops early as
    `StiffRun.status` says. params: d ≤ STIFF_MAX_D (ValueError beyond: the caller's
    guard)."""
    d = params.d
    if d > STIFF_MAX_D:
        raise ValueError(f"integrate_stiff forms the n_s × n_s Jacobian up to d = {STIFF_MAX_D}, "
                         f"got d = {d}")

    def rhs(_t: float, h: np.ndarray) -> np.ndarray:
        return to_coords(F(params, from_coords(h, d)))

    def jac(_t: float, h: np.ndarray) -> np.ndarray:
        return linearization_matrix(params, from_coords(h, d))

    solver = Radau(rhs, 0.0, to_coords(0.5 * (cov0 + cov0.T)), t_end, rtol=rtol, atol=atol,
                   jac=jac)
    steps, status = 0, "end"
    with np.errstate(over="ignore", invalid="ignore"):  # a runaway is detected below
        while solver.status == "running":
            if steps >= max_steps:
                status = "steps"
                break
            solver.step()
            steps += 1
            if solver.status == "failed":
                status = "failed"
                break
            S = from_coords(solver.y, d)
            tr = float(np.trace(S))
            if not np.isfinite(tr) or tr >= top:
                status = "runaway"
                break
            if tr <= bottom:
                status = "collapse"
                break
            if settle_rtol is not None and relative_residual(params, S) <= settle_rtol:
                status = "settled"
                break
    return StiffRun(status, float(solver.t), from_coords(solver.y, d), steps, solver.nfev,
                    solver.njev)
