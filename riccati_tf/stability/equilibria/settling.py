"""The equilibrium search's flow start: where the covariance flow Σ̇ = F(Σ) from
magnitude·I settles (RK45 step by step, then an implicit run of `stiffpath` when the explicit
steps stall on a stiff flow), and `implicit_flow`, Σ(t) by Radau IIA with the exact Jacobian L_Σ.
"""

from __future__ import annotations

import numpy as np
from scipy.integrate import RK45

from ...state.lowrank import FACTOR_MIN_D, factored_layer
from ...state.moments import covariance_array
from ...state.params import Params
from ..stiffpath import STIFF_MAX_D, StiffRun, integrate_stiff
from .budget import _PerLayer, _Work
from .constants import (
    NEWTON_SETTLE_RTOL,
    SETTLE_GROWTH,
    SETTLE_HORIZON,
    SETTLE_INTEGRATION_RTOL,
    SETTLE_RANGE,
    SETTLE_RHS_BUDGET,
    SETTLE_RTOL,
)
from .coords import from_coords, to_coords
from .field import F, products, relative_residual
from .linearization import linearization_matrix
from .scales import drift_spectrum, magnitude, quadratic_constant

__all__: list[str] = []


class _Stalled(Exception):
    """The settling run spent its right-hand sides inside one step."""


def _settled_stage(params: Params, *, work: _Work) -> np.ndarray | None:
    """Where the covariance flow settles from Σ0 = magnitude(params)·I: the first state, step by
    step of RK45 (rtol SETTLE_INTEGRATION_RTOL, atol that times tr Σ0 / d: the search needs Σ to
    the accuracy of its start's scale; dense heads of low rank through their factors), at which
    the relative residual of F is ≤ SETTLE_RTOL; once SETTLE_RHS_BUDGET right-hand sides are
    spent (explicit steps are slow near a stiff equilibrium), the state where an implicit run
    from there settles (`_stiff_settled`), or the stalled state itself; None when tr Σ falls
    below tr Σ0 / SETTLE_RANGE (Σ heads for 0) or rises above SETTLE_GROWTH tr Σ0, when
    t = SETTLE_HORIZON / rate passes (rate = max(‖A‖₂, c‖Σ0‖₂)), when that time is not a
    finite float, or when the integration fails. The budget binds inside a step as well: a
    step whose rejections spend 2·SETTLE_RHS_BUDGET right-hand sides (its error estimate never
    falls below the tolerance) ends the run as a stall at the last accepted state. A stable
    equilibrium attracts the flow, so this start lies in its basin when Σ0 does; Newton takes
    it from there. Each right-hand side is charged to `work`. Remembered per layer (read-only
    result)."""
    d = params.d
    bare = factored_layer(params, bias=False) if d >= FACTOR_MIN_D else \
        Params(params.A, heads=params.heads)

    def rhs(_t: float, y: np.ndarray) -> np.ndarray:
        work.charge(rhs=1)
        if work.rhs - start >= 2 * SETTLE_RHS_BUDGET:
            raise _Stalled
        return covariance_array(bare, y.reshape(d, d)).ravel()
    S0 = magnitude(params) * np.eye(d)
    tr0 = float(np.trace(S0))
    rate = max(drift_spectrum(params)[1], quadratic_constant(params) * magnitude(params))
    if not (np.isfinite(rate) and rate > 0 and tr0 > 0 and np.isfinite(SETTLE_HORIZON / rate)):
        return None
    start = work.rhs
    with np.errstate(over="ignore", invalid="ignore"):  # a runaway Σ is detected below
        stepper = RK45(rhs, 0.0, S0.ravel(), SETTLE_HORIZON / rate, rtol=SETTLE_INTEGRATION_RTOL,
                       atol=SETTLE_INTEGRATION_RTOL * tr0 / d)
        while stepper.status == "running":
            try:
                stepper.step()
            except _Stalled:  # rejected again and again inside one step
                break
            S = stepper.y.reshape(d, d)
            tr = float(np.trace(S))
            if stepper.status == "failed" or not tr0 / SETTLE_RANGE < tr < SETTLE_GROWTH * tr0:
                return None
            S = 0.5 * (S + S.T)
            if products(params, S).residual <= SETTLE_RTOL:
                S.setflags(write=False)
                return S
            if work.rhs - start >= SETTLE_RHS_BUDGET:
                break
        else:
            return None
    # stalled: the explicit steps spent their right-hand sides; the last accepted state
    S = stepper.y.reshape(d, d)
    S = _stiff_settled(params, 0.5 * (S + S.T), stepper.t, tr0, rate, work)
    S.setflags(write=False)
    return S


def _stiff_settled(params: Params, S: np.ndarray, t: float, tr0: float, rate: float,
                   work: _Work) -> np.ndarray:
    """The explicit steps stalled at (t, S) (a stiff flow): the state where the implicit run
    of `stiffpath` (Radau IIA, exact Jacobian; d ≤ STIFF_MAX_D) from S settles to the relative
    residual NEWTON_SETTLE_RTOL, within the horizon and range of `_settled_stage`; S itself
    when d is larger or the run ends elsewhere (Newton then tries from S, as before). Each
    right-hand side and Jacobian of the run is charged to `work` as one right-hand side."""
    if params.d > STIFF_MAX_D:
        return S
    run = implicit_flow(params, S, SETTLE_HORIZON / rate - t, rtol=SETTLE_INTEGRATION_RTOL,
                          atol=SETTLE_INTEGRATION_RTOL * tr0 / params.d,
                          settle_rtol=NEWTON_SETTLE_RTOL, top=SETTLE_GROWTH * tr0,
                          bottom=tr0 / SETTLE_RANGE)
    work.charge(rhs=run.evaluations + run.jacobians)
    return run.cov if run.status == "settled" else S


_settled = _PerLayer(_settled_stage)


def implicit_flow(params: Params, cov0: np.ndarray, t_end: float, *, rtol: float, atol: float,
                  settle_rtol: float | None = None, top: float = np.inf,
                  bottom: float = 0.0) -> StiffRun:
    """Σ(t) of Σ̇ = F(Σ) from cov0 up to t_end by `stiffpath.integrate_stiff` (Radau IIA) in
    orthonormal coordinates, with the exact Jacobian L_Σ (`linearization_matrix`); d ≤
    STIFF_MAX_D (ValueError beyond). Stops at relative residual settle_rtol, tr Σ ≥ top or
    ≤ bottom, as `StiffRun.status` says."""
    d = params.d
    if d > STIFF_MAX_D:
        raise ValueError(f"the implicit flow forms the n_s × n_s Jacobian up to d = "
                         f"{STIFF_MAX_D}, got d = {d}")
    return integrate_stiff(lambda h: to_coords(F(params, from_coords(h, d))),
                           lambda h: linearization_matrix(params, from_coords(h, d)),
                           lambda h: from_coords(h, d), to_coords(0.5 * (cov0 + cov0.T)), t_end,
                           rtol=rtol, atol=atol,
                           residual=lambda S: relative_residual(params, S),
                           settle_rtol=settle_rtol, top=top, bottom=bottom)
