"""The blow-up estimate of the Runge–Kutta flow (SPEC §5): with s = tr Σ and ṡ = 2 tr(MΣ),
M = A + Σ_h V_h Σ B_h, a growth driven by the quadratic (attention) terms heads for a pole at
T_est = t + s/ṡ; `_check_near_blowup` refuses an end state within reach of one.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...errors import SolverError
from ...state.params import Params
from .constants import (
    BLOWUP_EXTRAPOLATION,
    BLOWUP_QUADRATIC_SHARE,
    EPS,
    RK_NEAR_BLOWUP_RTOL,
    SUNDMAN_SHARE,
)

__all__: list[str] = []


def trace_growth(p: Params, cov: np.ndarray) -> tuple[float, float]:
    """(d tr Σ/dt, its attention part) at Σ: 2 tr(MΣ) and 2 tr(MΣ) − 2 tr(AΣ), with
    M = A + Σ_h V_hΣB_h (Σ̇ = MΣ + ΣMᵀ); NaN or inf where they overflow."""
    with np.errstate(over="ignore", invalid="ignore"):
        growth = 2.0 * float(np.vdot(p.M(cov), cov.T))
        return growth, growth - 2.0 * float(np.vdot(p.A, cov.T))


def attention_driven(p: Params, cov: np.ndarray, share: float) -> bool:
    """Whether tr Σ grows at Σ with the attention terms driving at least `share` of it:
    d tr Σ/dt > 0 (finite) and its attention part ≥ share · d tr Σ/dt (`trace_growth`) — where
    a growth is heading for a pole rather than following the linear part."""
    return _drives(*trace_growth(p, cov), share)


def _drives(growth: float, attention: float, share: float) -> bool:
    """`attention_driven` from `trace_growth`'s pair."""
    return bool(np.isfinite(growth) and growth > 0 and attention >= share * growth)


def _blowup_estimate(p: Params, d: int, t: float, y: np.ndarray,
                     share: float = BLOWUP_QUADRATIC_SHARE, growth: float | None = None
                     ) -> tuple[float, float, np.ndarray] | None:
    """(T_est, uncertainty, Σ) when the quadratic terms drive ≥ share of the growth of tr Σ at
    (t, y), else None: T_est = t + tr Σ / (d tr Σ / dt). growth: d tr Σ/dt when known (the
    trace of a right-hand side's Σ̇ at y), else `trace_growth`'s."""
    cov = y[d:].reshape(d, d)
    if growth is None:
        growth, attention = trace_growth(p, cov)  # `attention_driven`'s test
    else:
        attention = growth - 2.0 * float(np.vdot(p.A, cov.T))
    if not _drives(growth, attention, share):
        return None
    remaining = np.trace(cov) / growth
    T_est = t + remaining
    return T_est, BLOWUP_EXTRAPOLATION * remaining + 4 * EPS * T_est, cov


def _pole_ahead(p: Params, d: int, t: float, y: np.ndarray, t_final: float,
                growth: float | None = None) -> tuple[float, float, np.ndarray] | None:
    """`_blowup_estimate` with SUNDMAN_SHARE (and growth) when its pole
    T_est = t + tr Σ/(d tr Σ/dt) lies before t_final (a run goes on in Sundman's time only
    towards a pole within reach), else None."""
    estimate = _blowup_estimate(p, d, t, y, SUNDMAN_SHARE, growth)
    return estimate if estimate is not None and estimate[0] <= t_final else None


def _check_near_blowup(params_fn: Callable[[float], Params], d: int, y_end: np.ndarray,
                       t_final: float, rtol: float, pending: tuple[float, float] | None,
                       growth: float | None = None) -> None:
    """Refuse an rk state (the last one returned, at t_final here) within reach of a blow-up:
    when the quadratic terms dominate there, T* ≈ t_final + tr Σ/(d tr Σ/dt), and Σ(t_final) is
    then known only to about rtol·T*/(T* − t_final) relative. growth: d tr Σ/dt there when
    known (the integration's last right-hand side), else computed."""
    estimate = _blowup_estimate(params_fn(t_final), d, t_final, y_end, growth=growth)
    if estimate is None:
        if pending is not None and pending[0] - pending[1] <= t_final:
            raise SolverError(f"a blow-up was estimated at T* ≈ {pending[0]:.10g} ± "
                              f"{pending[1]:.2g}, yet Σ stayed finite to t_final = "
                              f"{t_final:.10g}: the Runge–Kutta run is not consistent")
        return
    T_est = estimate[0]
    amplification = T_est / (T_est - t_final)
    if rtol * amplification > RK_NEAR_BLOWUP_RTOL:
        raise SolverError(
            f"t_final = {t_final:.10g} lies within {T_est - t_final:.3g} of a blow-up at "
            f"T* ≈ {T_est:.10g}: Σ(t) ~ 1/(T* − t) there, so the Runge–Kutta end state is known "
            f"only to a relative error of about rtol·T*/(T* − t_final) = "
            f"{rtol * amplification:.2g}; use method 'exact' or a smaller rtol")
