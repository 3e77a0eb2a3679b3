"""`certify`'s converging verdict for a stiff general-V flow: the certificate of `basin` (a
rounding-safe Lyapunov ball around a Newton equilibrium Σ̂ and the implicitly integrated path
entering it), built and checked."""

from __future__ import annotations

import numpy as np

from ...state.params import Params
from ..equilibria.field import relative_residual
from . import basin
from .certificate import Certificate

__all__: list[str] = []


#: the basin is sought only where the integration that decided nothing ends near an
#: equilibrium: relative residual ‖F(Σ)‖ / scale at most this (`relative_residual`)
SETTLING_RTOL = 1e-2


def settling(p: Params, evidence: Certificate) -> bool:
    """Whether `basin_certificate` is worth its implicit run: `evidence` is "undetermined" and
    its integration ended at a Σ with relative residual ≤ SETTLING_RTOL (a growing or erratic
    flow does not, and its implicit path would only spend its steps)."""
    return evidence.regime == "undetermined" and evidence.final_cov is not None and \
        relative_residual(p, np.asarray(evidence.final_cov, dtype=float)) <= SETTLING_RTOL


def basin_certificate(p: Params, cov0: np.ndarray, base: dict, horizon: float,
                      top: float) -> Certificate | None:
    """A "converges" certificate of theorem basin.THEOREM (`basin.basin_evidence`), checked
    without replay (certify has just integrated the path), or None."""
    got = basin.basin_evidence(p, cov0, horizon, top)
    if got is None:
        return None
    eq, L, P, ball, path = got
    LP = L.T @ P
    level = ball.radius ** 2 * (1 - basin.SCALAR_MARGIN)
    rate = basin.rate_of(P, eq.cov, path.state, path.error, ball)
    if not rate > 0:
        return None
    steps, rhs, jacs = path.work
    c = Certificate(
        "converges", eq, P, rate, None, False, False,
        f"the flow integrated implicitly (Radau IIA, exact Jacobian; {steps} steps, {rhs} "
        f"right-hand sides, {jacs} Jacobians) to t1 = {path.t1:.6g}, where Newton from its end "
        f"state reaches Σ̂ (relative residual {eq.residual:.2g}); P ≻ 0 with LᵀP + PL = −Q at "
        f"Σ̂ bounds an exact equilibrium Σ* within ‖Σ* − Σ̂‖_P ≤ {ball.s_minus:.3g} and the "
        f"ball ‖Σ − Σ̂‖_P < {ball.radius:.3g} inside its basin (q = {ball.q:.3g}, quadratic "
        f"constant c = {ball.c:.3g}, every inequality rounded outward); the state at t1 with "
        f"its error estimate {path.error:.3g} (the two runs compared, times {basin.PATH_SAFETY:g}) "
        f"lies inside, so Σ(t) → Σ*, ‖Σ(t) − Σ*‖_P decaying at rate ≥ {rate:.3g} (numerical "
        f"evidence: the path's error is an estimate).",
        params=p, cov0=base["cov0"], mean0=base["mean0"], theorem=basin.THEOREM,
        lyapunov_rhs=-(LP + LP.T), operator=L, horizon=path.t1, final_cov=path.state,
        basin=level, tolerance=dict(basin.TOLERANCE), path_error=path.error)
    return c if c._check(replay=False) else None

