"""An implicit integrator for the stiff stretch of the covariance flow, on which explicit
Runge–Kutta stalls (SPEC §5): scipy's Radau IIA (order 5) with an exact dense Jacobian, stepped
one step at a time with stopping tests after each.

The covariance flow is integrated in the orthonormal coordinates h of Sym(d) (|h| = ‖H‖_F):
ḣ = coords(F(Σ)), ∂ḣ/∂h = L_Σ (n_s × n_s, n_s = d(d+1)/2), by
`equilibria.settling.implicit_flow`, so d ≤ STIFF_MAX_D. Once Σ is large the eigenvalues of L_Σ
spread over decades and an explicit step is limited by the fastest of them; an implicit step by
the accuracy asked for only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.integrate import Radau

__all__ = ["STIFF_MAX_D", "STIFF_MAX_STEPS", "StiffRun", "integrate_stiff"]

#: the dense Jacobian (n_s × n_s, n_s = d(d+1)/2) is formed up to this d (equilibria's
#: KRONECKER_MAX_D)
STIFF_MAX_D = 30
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


def integrate_stiff(fun: Callable[[np.ndarray], np.ndarray],
                    jac: Callable[[np.ndarray], np.ndarray],
                    state: Callable[[np.ndarray], np.ndarray], y0: np.ndarray, t_end: float, *,
                    rtol: float, atol: float,
                    residual: Callable[[np.ndarray], float] | None = None,
                    settle_rtol: float | None = None, top: float = np.inf,
                    bottom: float = 0.0, max_steps: int = STIFF_MAX_STEPS) -> StiffRun:
    """y(t) of ẏ = fun(y) from y0 up to t_end by Radau IIA with the Jacobian jac(y), tolerances
    rtol and atol; state(y) is Σ (its trace tested against (bottom, top)), residual(Σ) the
    relative residual tested against settle_rtol. Stops early as `StiffRun.status` says."""
    solver = Radau(lambda _t, y: fun(y), 0.0, y0, t_end, rtol=rtol, atol=atol,
                   jac=lambda _t, y: jac(y))
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
            S = state(solver.y)
            tr = float(np.trace(S))
            if not np.isfinite(tr) or tr >= top:
                status = "runaway"
                break
            if tr <= bottom:
                status = "collapse"
                break
            if settle_rtol is not None and residual is not None and \
                    residual(S) <= settle_rtol:
                status = "settled"
                break
    return StiffRun(status, float(solver.t), state(solver.y), steps, solver.nfev,
                    solver.njev)
