"""DOP853 in the time t, step by step (`_t_solve`): the output times, the growth event of
tr Σ (`_TraceEvent`), and the stiffness monitor that hands the run to the implicit method
(`_StiffMonitor`, `_StiffSwitch`).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .constants import STIFF_RATIO, STIFF_STEPS, TINY
from .packing import _PackedDOP853, _packing

__all__: list[str] = []


class _TraceEvent:
    """The growth event of an rk run: log tr Σ − log threshold, which rises through 0 where
    tr Σ passes the threshold (`_t_solve` tests tr Σ ≥ threshold at each step's end,
    `_sundman_solve` locates the root), tr Σ read from the state's diagonal entries of vec Σ,
    which starts at index k."""

    def __init__(self, k: int, d: int, threshold: float) -> None:
        self.k, self.d, self.threshold = k, d, threshold

    def trace(self, y: np.ndarray) -> float:
        """tr Σ of the state y."""
        return float(y[self.k::self.d + 1].sum())

    def level(self, trace: float) -> float:
        """log tr Σ − log threshold at tr Σ = trace."""
        return math.log(max(trace, TINY)) - math.log(self.threshold)

    def __call__(self, _t: float, y: np.ndarray) -> float:
        return self.level(self.trace(y))


@dataclass(frozen=True)
class _SundmanResult:
    """The fields of solve_ivp's result that `_rk_run` reads, from `_sundman_solve`, and the
    pole stop's (T_est, u) (`_PoleWatch`) when the run ended there."""

    t: np.ndarray
    y: np.ndarray
    status: int
    t_events: list[np.ndarray]
    y_events: list[np.ndarray]
    message: str
    pole: tuple[float, float] | None = None
    #: the last step's length (a first step for the run that continues from the end)
    step: float = 0.0
    #: d tr Σ/dτ at the last output when that is the run's end t1 (the stepper's last
    #: right-hand side, DOP853 evaluating f at each accepted step's end), else None
    growth: float | None = None


def _t_solve(rhs: Callable[[float, np.ndarray], np.ndarray], t0: float, t1: float,
             y0: np.ndarray, grid: np.ndarray, event: _TraceEvent | None, rtol: float,
             atol: np.ndarray,
             crossed: Callable[[float, np.ndarray, _TraceEvent], bool], d: int,
             f0: np.ndarray, stiff: _StiffMonitor | None = None) -> _SundmanResult:
    """DOP853 from (t0, y0) to t1 in t, driven step by step as solve_ivp drives it (DOP853's
    continuous extension at the grid times in [t0, t1] the outputs), on the packed state
    v = (m, Σ_ij for i ≤ j) of `_Packing` (from d = PACK_MIN_D on) with the error norm of the
    full state y (the same acceptance test as solve_ivp on y, half the stepper's arithmetic on
    vec Σ). Where tr Σ has risen past the threshold of `event` by the end of a step,
    crossed(t, y, event) is called there — True ends the run (status 1, "crossed", with
    t_events[0], y_events[0] that step's end), False goes on with the same stepper (crossed
    raises the threshold), so that a growth event costs no restart (a fresh first step and
    step-size history). status 0 when t1 is reached, −1 on failure; `step` the last step. rhs
    and crossed see full states y, and the outputs are full states, each Σ symmetric
    (`_Packing.states`). f0 = rhs(t0, y0), already evaluated: DOP853's first right-hand
    side. stiff: ends the run (status 1, "stiff", t_events[0], y_events[0] that step's end)
    when it reports the steps collapsing (`_StiffMonitor`)."""
    packing = _packing(y0.size - d * d, d)
    solver = _PackedDOP853(packing.fun(rhs), t0, packing.packed(y0), t1, rtol=rtol,
                           atol=packing.packed(atol), packing=packing, f0=packing.packed(f0))
    blocks: list[np.ndarray] = []  # the outputs of each step, (v.size, k) as sol gives them
    times = grid.tolist()  # bisect on floats: a tenth of np.searchsorted's call per step
    i = 0

    def result(status: int, message: str) -> _SundmanResult:
        t_end, y_end = (solver.t, packing.full(solver.y)[None]) if status == 1 else \
            (np.zeros(0), np.zeros((0, y0.size)))
        growth = packing.trace(solver.f) if status == 0 and i and grid[i - 1] == t1 else None
        return _SundmanResult(grid[:i].copy(), packing.states(blocks), status,
                              [np.atleast_1d(t_end)], [y_end],
                              message, step=float(solver.step_size or 0.0), growth=growth)

    if grid.size and grid[0] == t0:
        blocks.append(packing.packed(y0)[:, None])
        i = 1
    while solver.status == "running":
        message = solver.step()
        if solver.status == "failed":
            return result(-1, message or "DOP853 failed")
        j = bisect.bisect_right(times, solver.t)
        if j > i:
            blocks.append(solver.dense_output()(grid[i:j]))
            i = j
        if event is not None and packing.trace(solver.y) >= event.threshold and \
                crossed(solver.t, packing.full(solver.y), event):
            return result(1, "crossed")
        if stiff is not None and stiff(float(solver.step_size or 0.0), solver.y, solver.f):
            return result(1, "stiff")
    return result(0, "t1 reached")


class _StiffMonitor:
    """True once STIFF_STEPS consecutive steps h each had h‖f‖ < STIFF_RATIO‖y‖ (y, f the
    state and its derivative at the step's end)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, h: float, y: np.ndarray, f: np.ndarray) -> bool:
        ny, nf = float(np.linalg.norm(y)), float(np.linalg.norm(f))
        self.count = self.count + 1 if h * nf < STIFF_RATIO * ny else 0
        return self.count >= STIFF_STEPS


class _StiffSwitch(Exception):
    """DOP853 stopped where its steps collapsed: the time, the state (m, Σ) there, and the
    outputs so far (t, mean, cov)."""

    def __init__(self, t: float, mean: np.ndarray, cov: np.ndarray,
                 outputs: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
        super().__init__(t)
        self.t, self.mean, self.cov, self.outputs = t, mean, cov, outputs
