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
    """Where an implicit run of the covariance flow Σ̇ = F(Σ) stopped (`integrate_stiff`).

    Parameters
    ----------
    status : str
        "end" (t reached t_end), "settled" (relative residual ≤ settle_rtol), "runaway"
        (tr Σ ≥ top), "collapse" (tr Σ ≤ bottom), "steps" (max_steps spent) or "failed" (the
        step size collapsed).
    t : float
        The time reached.
    cov : (d, d) ndarray
        Σ(t), symmetric.
    steps : int
        The steps taken.
    evaluations : int
        The right-hand sides evaluated.
    jacobians : int
        The Jacobians evaluated.

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field.

    See Also
    --------
    integrate_stiff : produces it.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §11 "The stiff integrator".

    Examples
    --------
    >>> import numpy as np
    >>> run = integrate_stiff(lambda y: -y, lambda y: -np.eye(1), lambda y: y.reshape(1, 1),
    ...                       np.ones(1), 1.0, rtol=1e-8, atol=1e-12)
    >>> run.status, round(float(run.cov[0, 0]), 6)
    ('end', 0.367879)
    """

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
    """y(t) of ẏ = fun(y) from y0 up to t_end by Radau IIA with the exact Jacobian jac(y), with
    the stopping tests on Σ = state(y) after every step (module docstring).

    Parameters
    ----------
    fun : callable (n,) -> (n,)
        The right-hand side.
    jac : callable (n,) -> (n, n)
        Its Jacobian.
    state : callable (n,) -> (d, d)
        Σ from the coordinates y.
    y0 : (n,) ndarray
        The start.
    t_end : float
        The end time.
    rtol, atol : float
        Radau's tolerances.
    residual : callable (d, d) -> float, optional
        The relative residual ‖F(Σ)‖/scale tested against settle_rtol.
    settle_rtol : float, optional
        Stop ("settled") once residual(Σ) is at most this.
    top, bottom : float, optional
        Stop ("runaway", "collapse") once tr Σ leaves (bottom, top).
    max_steps : int, optional
        The most steps (default STIFF_MAX_STEPS).

    Returns
    -------
    StiffRun
        Where and why the run stopped, with its counts.

    Raises
    ------
    ValueError
        From scipy's Radau for a malformed start or tolerance.

    See Also
    --------
    riccati_tf.flows.implicit : the Rodas4 flow of `riccati_tf.flow(method="implicit")`.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §11 "The stiff integrator".

    Examples
    --------
    σ̇ = 1 − σ settles at σ = 1:

    >>> import numpy as np
    >>> run = integrate_stiff(lambda y: 1 - y, lambda y: -np.eye(1),
    ...                       lambda y: y.reshape(1, 1), np.zeros(1), 100.0, rtol=1e-8,
    ...                       atol=1e-12, residual=lambda S: abs(1 - S[0, 0]), settle_rtol=1e-6)
    >>> run.status, bool(abs(run.cov[0, 0] - 1) <= 1e-6)
    ('settled', True)
    """
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
