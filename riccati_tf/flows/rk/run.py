"""The Runge–Kutta flow of the moment system (SPEC §2), ṁ = (A + V)m + VΣBm + b,
Σ̇ = MΣ + ΣMᵀ (`_rk_flow`): the right-hand side with its work budget (`_rk_rhs`), and the run
that goes from t to Sundman's time towards a pole and stops at a blow-up (`_rk_run`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ...errors import SolverError
from ...state.params import Gaussian, Params
from ...state.schedule import all_finite as _all_finite
from ..trajectory import Trajectory
from .blowup import _blowup_estimate, _check_near_blowup, _pole_ahead
from .constants import (
    ATOL_FLOOR,
    BLOWUP_GROWTH,
    RK_DEFAULT_MAX_STEPS,
    RK_EVALUATIONS_PER_STEP,
    RK_RATE_MAX,
    SUNDMAN_GROWTH,
    SUNDMAN_LOOSEN_POWER,
)
from .stepper import _StiffMonitor, _StiffSwitch, _t_solve, _TraceEvent
from .sundman import _PoleWatch, _sundman_solve

__all__: list[str] = []


def _scaled_atol(g: Gaussian, atol: float, rtol: float) -> np.ndarray:
    """atol for (m, vec Σ), capped for Σ_ij at rtol·√(Σ_ii Σ_jj) (its scale at t = 0) where
    that is positive: a variance below atol (Σ0 = diag(1, 1e-16), or Σ0 ~ 1e-300) is then
    resolved relative to its size instead of being lost in the absolute tolerance (it may grow
    along an unstable direction). The mean keeps atol."""
    v = np.diag(g.cov)
    root = np.sqrt(v)  # √Σ_ii √Σ_jj: no underflow of Σ_ii Σ_jj at 1e-300
    scales = np.concatenate([np.zeros(g.d), np.outer(root, root).ravel()])
    return np.where(scales > 0, np.maximum(np.minimum(atol, rtol * scales), ATOL_FLOOR), atol)


class _RkBudgetSpent(Exception):
    def __init__(self, t: float) -> None:
        super().__init__(t)
        self.t = t


def _rk_flow(params_fn: Params | Callable[[float], Params], gaussian: Gaussian,
             t_out: np.ndarray, t_final: float, rtol: float, atol: float,
             max_steps: int = RK_DEFAULT_MAX_STEPS,
             counter: list[int] | None = None, pole_rtol: float | None = None,
             loosen_power: float = SUNDMAN_LOOSEN_POWER, stiff_switch: bool = False
             ) -> Trajectory:
    """params_fn: a callable t ↦ Params, or one Params (time-invariant: the right-hand side
    then binds it once, and with m0 = 0 and b = 0 the mean stays 0 and only Σ is integrated).
    counter: counter[0] grows by one per right-hand-side evaluation. pole_rtol: the relative
    width to which the pole stop brackets T* (`_PoleWatch`; None: rtol); loosen_power: the power
    q of the tolerance schedule towards a pole (SUNDMAN_LOOSEN_MAX). No dense output (`flow`
    attaches its `_RkDense`). stiff_switch: raise _StiffSwitch where the steps collapse
    (`_StiffMonitor`, runs in t only)."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # detected explicitly
        return _rk_run(params_fn, gaussian, t_out, t_final, rtol, atol, max_steps, counter,
                       rtol if pole_rtol is None else pole_rtol, loosen_power, stiff_switch)


def _rk_rhs(params_fn: Params | Callable[[float], Params], d: int, limit: int,
            with_mean: bool, counter: list[int] | None = None
            ) -> Callable[[float, np.ndarray], np.ndarray]:
    """The right-hand side on the state y = (m, vec Σ), or y = vec Σ when not with_mean; it
    raises _RkBudgetSpent on its (limit + 1)-th evaluation and adds one to counter[0] (when
    given) per evaluation. params_fn: a Params or a callable t ↦ Params. The products are
    `drift_arrays`'s, in its order: the same floats."""
    count = [0] if counter is None else counter
    stop = count[0] + limit  # the count at the limit
    fixed = params_fn if isinstance(params_fn, Params) else None

    def covariance(t: float, y: np.ndarray) -> np.ndarray:
        count[0] += 1
        if count[0] > stop:
            raise _RkBudgetSpent(t)
        q = fixed if fixed is not None else params_fn(t)  # type: ignore[operator]
        S = y.reshape(d, d)
        X = q.M(S) @ S
        return (X + X.T).ravel()

    def moments(t: float, y: np.ndarray) -> np.ndarray:
        count[0] += 1
        if count[0] > stop:
            raise _RkBudgetSpent(t)
        q = fixed if fixed is not None else params_fn(t)  # type: ignore[operator]
        S = y[d:].reshape(d, d)
        M = q.M(S)
        X = M @ S
        out = np.empty(d + d * d)
        m = y[:d]
        np.add(M @ m, q.c(m), out=out[:d])
        np.add(X, X.T, out=out[d:].reshape(d, d))
        return out

    return moments if with_mean else covariance


def _rk_run(params_fn: Params | Callable[[float], Params], gaussian: Gaussian,
            t_out: np.ndarray, t_final: float, rtol: float, atol: float,
            max_steps: int, counter: list[int] | None, pole_rtol: float,
            loosen_power: float, stiff_switch: bool = False) -> Trajectory:
    d = gaussian.d
    limit = RK_EVALUATIONS_PER_STEP * max_steps
    with_mean = True
    params_at: Callable[[float], Params]
    if isinstance(params_fn, Params):
        p = params_fn
        with_mean = bool(np.any(gaussian.mean) or np.any(p.b))
        rhs = _rk_rhs(p, d, limit, with_mean, counter)
        params_at = lambda _t: p  # noqa: E731
    else:
        rhs = _rk_rhs(params_fn, d, limit, with_mean, counter)
        params_at = params_fn
    k = d if with_mean else 0  # where vec Σ starts in the state

    def full(y: np.ndarray) -> np.ndarray:
        return y if with_mean else np.concatenate([np.zeros(d), y])

    y = np.concatenate([gaussian.mean, gaussian.cov.ravel()])[d - k:]
    # without the mean, rtol and atol grow by √((d + d²)/d²) (in σ, with t in the state,
    # √((1 + d + d²)/(1 + d²))): scipy's RMS error norm then equals that of the full state,
    # whose mean errors are 0, and the steps are the same
    loosen = 1.0 if with_mean else math.sqrt((d + d * d) / (d * d))
    loosen_sigma = 1.0 if with_mean else math.sqrt((1 + d + d * d) / (1 + d * d))
    atol_full = _scaled_atol(gaussian, atol, rtol)[d - k:]
    atol_vec = loosen * atol_full
    scale = float(np.trace(gaussian.cov))
    # Python floats: overflow to inf without a warning. A time-invariant layer's run is in σ
    # from the start where the quadratic terms drive the growth of tr Σ there towards a pole
    # before t_final, else the early events decide whether to go on in σ; a time-varying one
    # (controls, whose own time scales set the steps) stays in t with the blow-up event alone
    early = scale > 0 and isinstance(params_fn, Params)
    f0 = _finite_start(rhs, 0.0, y)  # the trace of its Σ̇ is d tr Σ/dt at t = 0 (no M(Σ0) again)
    start = _pole_ahead(params_at(0.0), d, 0.0, full(y), t_final,
                        float(f0[k::d + 1].sum())) if early else None
    sundman = start is not None
    early = early and not sundman
    # t's scale in a run in σ from t = 0: tr Σ/(d tr Σ/dt) there (≈ T*), at most t_final
    t_start = 0.0 if start is None else min(start[0], t_final)
    threshold = (SUNDMAN_GROWTH if early else BLOWUP_GROWTH) * scale
    t0 = 0.0
    ts: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    blowup_time: float | None = None
    bracket: tuple[float, float] | None = None
    direction: np.ndarray | None = None
    pending = None  # a blow-up estimated near or after t_final: (T_est, uncertainty)
    unit = _time_unit(y, f0, t_final)

    def scaled(tau: float, y: np.ndarray) -> np.ndarray:  # dy/dτ = unit · f(unit τ, y)
        return unit * rhs(unit * tau, y)
    rhs_tau = rhs if unit == 1.0 else scaled

    def linear_rate(tau: float, y: np.ndarray) -> float:  # 2 tr(AΣ) per unit of τ
        return 2.0 * unit * float(np.vdot(params_at(unit * tau).A, y[k:].reshape(d, d).T))

    step = 0.0  # the last step of a run in t: the first step of the run in σ after it
    stop: tuple[float, float, np.ndarray] | None = None  # a blow-up found by `crossed`

    def crossed(tau: float, y_tau: np.ndarray, event: _TraceEvent) -> bool:
        """At the end of a step in t where tr Σ ≥ the threshold: True ends the run (on in σ
        towards a pole, or a blow-up `stop` before t_final), else the threshold is raised
        and the same run goes on (no restart)."""
        nonlocal early, sundman, threshold, pending, stop
        t = tau * unit
        if early:  # on in σ where the quadratic terms drive the growth towards a pole before
            # t_final, else the same test at the squared growth while below BLOWUP_GROWTH
            sundman = _pole_ahead(params_at(t), d, t, full(y_tau), t_final) is not None
            if sundman:
                early, threshold = False, BLOWUP_GROWTH * scale
                return True
            growth = threshold / scale
            early = growth * growth < BLOWUP_GROWTH
            threshold = (growth * growth if early else BLOWUP_GROWTH) * scale
        else:
            estimate = _blowup_estimate(params_at(t), d, t, full(y_tau))
            if estimate is not None:
                if estimate[0] + estimate[1] <= t_final:  # before t_final, beyond its uncertainty
                    stop = estimate
                    return True
                pending = estimate[:2]  # after t_final (or too close to tell): follow it
            threshold *= BLOWUP_GROWTH
        event.threshold = threshold
        return False

    while True:
        event = _TraceEvent(k, d, threshold if scale > 0 else 1.0)  # no event when Σ0 = 0
        grid = t_out if t0 == 0 else t_out[t_out > t0]  # (the output times are ≥ 0)
        f_start = _finite_start(rhs, t0, y) if ts else f0  # f(t0, y), handed to DOP853
        try:
            with np.errstate(over="ignore", invalid="ignore"):  # overflow is detected below
                if sundman:
                    sol = _sundman_solve(rhs_tau, t0 / unit, t_final / unit, y, grid / unit,
                                         event, loosen_sigma * rtol, loosen_sigma * atol_full,
                                         _PoleWatch(pole_rtol, t_final / unit, linear_rate),
                                         (t0 if t0 > 0 else t_start) / unit, step,
                                         loosen_power)
                else:
                    sol = _t_solve(rhs_tau, t0 / unit, t_final / unit, y, grid / unit,
                                   event if scale > 0 else None, loosen * rtol, atol_vec,
                                   crossed, d, unit * f_start,
                                   _StiffMonitor() if stiff_switch else None)
        except _RkBudgetSpent as spent:
            raise SolverError(
                f"the Runge–Kutta integration used its budget of max_steps = {max_steps} steps "
                f"({limit} right-hand-side evaluations) by t = {spent.t:.6g} of "
                f"t_final = {t_final:.6g}: the flow is stiff there, or its right-hand side is "
                f"dominated by rounding (e.g. near-cancelling attention terms)") from None
        except (np.linalg.LinAlgError, FloatingPointError, OverflowError) as exc:
            raise SolverError(f"the Runge–Kutta integration failed: {exc}") from None
        T_sol = np.asarray(sol.t, dtype=float).reshape(-1) * unit
        Y = np.asarray(sol.y, dtype=float).reshape(y.size, -1)
        if sol.status == -1 or not _all_finite(Y):
            reached = T_sol[-1] if T_sol.size else t0
            if pending is not None:
                T_est, u = pending
                raise SolverError(
                    f"Σ grows without bound near T* ≈ {T_est:.10g} (± {u:.2g}) and the "
                    f"integration broke down at t ≈ {reached:.10g} before t_final = "
                    f"{t_final:.10g}: whether the blow-up precedes t_final cannot be decided")
            raise SolverError(f"the Runge–Kutta integration failed after t = {reached:.6g}: "
                              f"{sol.message}")
        ts.append(T_sol)
        ys.append(Y)
        if sol.message == "stiff":
            end = full(sol.y_events[0][0])
            raise _StiffSwitch(float(sol.t_events[0][0]) * unit, end[:d],
                               end[d:].reshape(d, d), _outputs(ts, ys, d, k, with_mean))
        if sol.status == 0:
            if T_sol.size:  # the last state returned
                _check_near_blowup(params_at, d, full(Y[:, -1]), T_sol[-1], rtol, pending,
                                   None if sol.growth is None else sol.growth / unit)
            break
        t0, y, step = sol.t_events[0][0] * unit, sol.y_events[0][0], sol.step
        if sol.message == "crossed" and stop is None:  # `crossed` chose σ: on from here
            continue
        estimate: tuple[float, float, np.ndarray] | None
        if sol.pole is not None:
            estimate = (sol.pole[0] * unit, sol.pole[1] * unit, y[k:].reshape(d, d))
        else:  # `crossed`'s blow-up, or a Sundman run's trace event
            estimate = stop or _blowup_estimate(params_at(t0), d, t0, full(y))
        if estimate is not None:
            T_est, u, cov = estimate
            if T_est + u <= t_final:  # a blow-up before t_final, beyond its uncertainty
                blowup_time, bracket = T_est, (t0, T_est + u)
                _, vec = np.linalg.eigh(0.5 * (cov + cov.T))
                direction = vec[:, -1]
                break
            pending = (T_est, u)  # after t_final (or too close to tell): follow it to t_final
        threshold *= BLOWUP_GROWTH
    t, mean, cov = _outputs(ts, ys, d, k, with_mean)
    return Trajectory(t, mean, cov, "completed" if blowup_time is None else "blowup",
                      blowup_time, "rk", direction, rtol, atol,
                      None if blowup_time is None else "singularity", None, bracket)


def _outputs(ts: list[np.ndarray], ys: list[np.ndarray], d: int, k: int,
             with_mean: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t, mean, cov) of an rk run's output blocks (the states as columns, vec Σ from row k)."""
    t = np.concatenate(ts)
    Y = ys[0] if len(ys) == 1 else np.concatenate([part.T for part in ys]).T  # time-major
    mean = Y[:d].T.copy() if with_mean else np.zeros((t.size, d))
    cov = Y[k:].T.reshape(-1, d, d)  # symmetric (`_states`), time-major: a view
    return t, mean, cov


def _finite_start(rhs: Callable[[float, np.ndarray], np.ndarray], t0: float,
                  y: np.ndarray) -> np.ndarray:
    """f(t0, y), refusing a start where the right-hand side is not finite: DOP853's first step
    size h0 ∝ ‖y‖/‖f(y)‖ is then 0 or NaN and the integration would spend its whole budget at
    t = NaN. Later overflow inside a step is the step controller's (a rejected step, a shorter
    one)."""
    f0 = rhs(t0, y)
    if not _all_finite(f0):
        raise SolverError(f"the moment right-hand side (ṁ, Σ̇) overflows float64 at t = "
                          f"{t0:.6g} (its products AΣ, VΣBΣ, VΣBm exceed about 1e308): the "
                          f"layer's terms are out of the floating-point range at this state")
    return f0


def _time_unit(y0: np.ndarray, f0: np.ndarray, t_final: float) -> float:
    """2^−k with 2^k ≥ r = ‖f0‖∞/‖y0‖∞ when r > RK_RATE_MAX, else 1: integrating in τ = t 2^k
    (dy/dτ = 2^−k f) puts the starting rate at most 1 and changes no rounding (a power of two),
    so that solve_ivp's absolute time tolerances (event location to 4·eps) stay far below the
    steps however fast the layer is. k from the binary exponents (r itself may overflow);
    SolverError when t_final·2^k leaves the float range (rates beyond float64 over t_final)."""
    size = float(np.abs(y0).max(initial=0.0))
    speed = float(np.abs(f0).max(initial=0.0))
    if size == 0 or speed == 0:
        return 1.0
    if speed <= RK_RATE_MAX * size:  # (the product may overflow to inf: then r is small)
        return 1.0
    k = math.frexp(speed)[1] - math.frexp(size)[1] + 1  # r < 2^k
    if k > 1000 or not math.isfinite(math.ldexp(t_final, k)):
        raise SolverError(f"the flow's starting rate ‖f‖/‖y‖ ≈ 2^{k} is beyond what float64 "
                          f"can integrate over t_final = {t_final:.6g}")
    return math.ldexp(1.0, -k)
