"""DOP853 in Sundman's time σ, dt/dσ = s_ref / tr Σ (`_sundman_solve`), in which a pole
Σ ~ 1/(T* − t) is an exponential growth; the pole stop that brackets T* (`_PoleWatch`) and the
tolerances that follow each entry's scale (`_sundman_atol`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy.integrate import DOP853
from scipy.optimize import brentq

from .constants import (
    BLOWUP_QUADRATIC_SHARE,
    EPS,
    POLE_SPAN,
    SUNDMAN_LOOSEN_MAX,
    SUNDMAN_LOOSEN_POWER,
)
from .packing import _mirror, _states
from .stepper import _SundmanResult, _TraceEvent

__all__: list[str] = []


class _PoleWatch:
    """The pole stop (POLE_SPAN): `bracket` is called after every step of a Sundman run with the
    state y at time t and its derivative dy; it returns (T_k, u_k) once the estimates
    T_i = t_i + tr Σ_i / tr Σ̇_i of the steps since the last one with POLE_SPAN times the
    remaining time agree to u_k ≤ tol·T_k and T_k + u_k ≤ t_end (a pole after t_end is not
    where the run stops), else None. Only steps whose growth is driven by the quadratic terms
    (d tr Σ/dt > 0, 2 tr(AΣ) at most 1 − BLOWUP_QUADRATIC_SHARE of it; `linear` gives 2 tr(AΣ))
    count: any other step starts the record afresh. `loosening` is the factor of the tolerance
    schedule (SUNDMAN_LOOSEN_MAX) with r_0 the remaining time at the record's first step."""

    def __init__(self, tol: float, t_end: float,
                 linear: Callable[[float, np.ndarray], float]) -> None:
        self.tol, self.t_end, self.linear = tol, t_end, linear
        self.estimates: list[tuple[float, float]] = []  # (remaining time, T) of the record
        self.start = 0.0  # the remaining time at the record's first step (0: no record)

    def loosening(self, power: float) -> float:
        """min(SUNDMAN_LOOSEN_MAX, r_0/r)^power with r the last step's remaining time, r_0 the
        record's first; 1 without a record."""
        if not self.estimates:
            return 1.0
        return min(SUNDMAN_LOOSEN_MAX, self.start / self.estimates[-1][0]) ** power

    def bracket(self, t: float, y: np.ndarray, dy: np.ndarray,
                trace: Callable[[np.ndarray], float]) -> tuple[float, float] | None:
        s, ds = trace(y), trace(dy)
        if not (math.isfinite(s) and math.isfinite(ds) and ds > 0
                and self.linear(t, y) <= (1.0 - BLOWUP_QUADRATIC_SHARE) * ds):
            self.estimates.clear()
            return None
        r = s / ds
        T = t + r
        if not self.estimates:
            self.start = r
        far = [i for i, (ri, _) in enumerate(self.estimates) if ri >= POLE_SPAN * r]
        self.estimates.append((r, T))
        if not far:
            return None
        del self.estimates[:far[-1]]
        u = max(abs(Ti - T) for _, Ti in self.estimates) + 4 * EPS * T
        return (T, u) if u <= self.tol * T and T + u <= self.t_end else None


def _sundman_solve(rhs: Callable[[float, np.ndarray], np.ndarray], t0: float, t1: float,
                   y0: np.ndarray, grid: np.ndarray, event: _TraceEvent, rtol: float,
                   atol: np.ndarray, pole: _PoleWatch, t_scale: float,
                   first_step: float = 0.0,
                   power: float = SUNDMAN_LOOSEN_POWER) -> _SundmanResult:
    """DOP853 from (t0, y0) to t1 in Sundman's time σ: z = (t, y),

        dz/dσ = (s_ref / s) (1, f(t, y)),   s = tr Σ(y),  s_ref = s(y0),

    the same trajectory with dt/dσ = s_ref/s: where s grows like 1/(T* − t), y grows like
    e^{σ/(T* − t0)} and the steps in σ stay steady. scipy's DOP853 stepper is driven step by
    step as solve_ivp drives it, with its events: `event` (tr Σ rising through its threshold)
    and t = t1 end the run, the grid times in (t0, t1) are outputs (DOP853's continuous
    extension at the σ where t = t_k, located by Brent's method to 4 eps as solve_ivp does), as
    is t1's when it is a grid time; after each step the pole stop (`_PoleWatch`, with tr Σ̇
    from the step's last right-hand side) may end the run. t is integrated with relative
    tolerance rtol and absolute 1e-2·rtol·t_scale (t_scale > 0: t0, or the time scale of a run
    from t0 = 0). Before every step the absolute tolerance of each entry Σ_ij rises to rtol
    times √(Σ_ii Σ_jj) at the current state (`_sundman_atol`). status: 0 when t1 is
    reached, 1 at the trace event or the pole stop (t_events[0], y_events[0] in t and y;
    `pole` set for the latter), −1 on failure; the σ-span
    2 (t1 − t0) threshold / s_ref (the length in σ of [t0, t1] while s stays below the
    threshold) bounds the run. first_step > 0: DOP853's first step in σ (dσ = dt where the run
    starts, s = s_ref: the last step of a run in t that ends there), else its own choice.
    While the pole stop's record runs (the quadratic terms driving the growth of tr Σ), each
    step's relative tolerance is rtol · `pole.loosening(power)` (SUNDMAN_LOOSEN_MAX; the
    absolute ones follow through `_sundman_atol`; t's stays rtol)."""
    s_ref = event.trace(y0)

    def f(_sigma: float, z: np.ndarray) -> np.ndarray:
        w = s_ref / event.trace(z[1:])
        out = np.empty_like(z)
        out[0] = w
        out[1:] = w * rhs(float(z[0]), z[1:])
        return out

    def level(z: np.ndarray) -> float:  # rises through 0 at the trace threshold
        return event(0.0, z[1:])

    def at_time(tk: float) -> Callable[[np.ndarray], float]:  # rises through 0 at t = tk
        def g(z: np.ndarray) -> float:
            return float(z[0]) - tk
        return g

    to_end = at_time(t1)

    times = [float(tk) for tk in grid if tk < t1]
    span = 2.0 * (t1 - t0) * min(event.threshold, math.exp(700.0)) / s_ref
    solver = DOP853(f, 0.0, np.concatenate([[t0], y0]), span, rtol=rtol,
                    atol=np.concatenate([[1e-2 * rtol * t_scale], atol]),
                    first_step=min(first_step, span) or None)
    t_out: list[float] = []
    y_out: list[np.ndarray] = []  # (y0.size, 1) each

    def result(status: int, message: str, end: np.ndarray | None = None,
               at_pole: tuple[float, float] | None = None) -> _SundmanResult:
        Y = _states(y_out, _mirror(event.k, event.d))
        if end is None:
            return _SundmanResult(np.array(t_out), Y, status, [np.zeros(0)],
                                  [np.zeros((0, y0.size))], message)
        return _SundmanResult(np.array(t_out), Y, status, [end[:1]], [end[1:][None]], message,
                              pole=at_pole)

    ends = (level, to_end)
    before = [g(solver.y) for g in ends]
    solver.rtol = np.full(y0.size + 1, rtol)  # t's entry stays rtol: its error is T*'s
    while solver.status == "running":
        step_rtol = rtol * max(1.0, pole.loosening(power))
        solver.rtol[1:] = step_rtol
        solver.atol = _sundman_atol(solver.atol, solver.y, atol, step_rtol, event.k, event.d)
        message = solver.step()
        if solver.status == "failed":
            return result(-1, message or "DOP853 failed")
        z, a, b = solver.y, solver.t_old, solver.t
        after = [g(z) for g in ends]
        rising = [(g, i) for i, (g, x, x_new) in enumerate(zip(ends, before, after, strict=True))
                  if x <= 0 <= x_new]  # solve_ivp's test for events rising through 0
        before = after
        reached = [tk for tk in times if tk <= z[0]]
        if rising or reached:
            sol = solver.dense_output()
            found = sorted([(_event_root(g, sol, a, b), i) for g, i in rising] +
                           [(_event_root(at_time(tk), sol, a, b), 2 + j)
                            for j, tk in enumerate(reached)])
            for x, i in found:
                zx = sol(x)
                if i >= 2:  # a grid time
                    t_out.append(reached[i - 2])
                    y_out.append(zx[1:, None])
                    continue
                if i == 1 and np.any(grid == t1):
                    t_out.append(t1)
                    y_out.append(zx[1:, None])
                return result(1, "trace event", zx) if i == 0 else result(0, "t1 reached")
            del times[:len(reached)]
        # every step's end, outputs or not, goes on the pole stop's record (solver.f: dz/dσ
        # there, DOP853's FSAL stage), so that the steps do not depend on the output times
        stop = pole.bracket(float(z[0]), z[1:], solver.f[1:] / solver.f[0], event.trace)
        if stop is not None:
            return result(1, "pole", z, stop)
    return result(-1, f"Sundman's time σ ran to {span:.3g} before t = {t1:.6g}")


def _sundman_atol(current: np.ndarray, z: np.ndarray, atol: np.ndarray, rtol: float, k: int,
                  d: int) -> np.ndarray:
    """The absolute tolerances of a Sundman run's next step from its state z = (t, m, vec Σ)
    (vec Σ from index k of the state): t's and m's kept, and each entry of Σ at least rtol
    times its Cauchy–Schwarz scale at the current state,

        atol_ij = max(atol_ij, rtol · √(|Σ_ii| |Σ_jj|)),

    the scale `_scaled_atol` caps the tolerances at on Σ0, kept up to date: an off-diagonal
    entry crossing zero is held to rtol relative to the variances it couples instead of to its
    own vanishing size (near a pole Σ grows along a few directions and such crossings sweep
    through the matrix), while every variance keeps its relative accuracy. About 25 % fewer
    steps towards a pole than entry-by-entry control
    (tests/test_flows.py::test_sundman_steps_hold_each_entry_to_its_cauchy_schwarz_scale)."""
    out = current.copy()
    v = np.sqrt(np.abs(z[1 + k::d + 1]))
    out[1 + k:] = np.maximum(atol[k:], rtol * np.outer(v, v).ravel())
    return out


def _event_root(g: Callable[[np.ndarray], float], sol: Callable[[float], np.ndarray], a: float,
                b: float) -> float:
    """Where g(state) crosses 0 inside the step [a, b], on its continuous extension `sol`:
    Brent's method to 4 eps, as solve_ivp locates events."""
    return float(brentq(lambda x: g(sol(x)), a, b, xtol=4 * EPS, rtol=4 * EPS))
