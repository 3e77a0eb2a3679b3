"""The segmented integration of Σ that `certify` gathers its numerical evidence with and that
`Certificate.check()` replays: Σ̇ = AΣ + ΣAᵀ + Σ_h(V_hΣB_hΣ + ΣB_hᵀΣV_hᵀ) by `flow`'s methods
(the closed form for scalar V, DOP853 otherwise) in segments of ‖A‖₂-length SEGMENT_NORM_TIME
(`blowup.segment_length`), each segment's end projected on the PSD cone, under a budget of
right-hand-side evaluations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.linalg import LinAlgError

from ...errors import SolverError
from ...flows.integrate import DEFAULT_ATOL, DEFAULT_RTOL, Trajectory, flow
from ...flows.rk.constants import RK_EVALUATIONS_PER_STEP
from ...flows.rk.run import _rk_flow
from ...state.lowrank import FACTOR_MIN_D, factored_layer
from ...state.params import Gaussian, Params
from ...state.validation import psd_part
from .blowup import scaled_heads, segment_length
from .constants import (
    BLOWUP_LOOSEN_POWER,
    BLOWUP_RTOL,
    GROWTH_STOP,
    MAX_GROWTH,
    MAX_RHS_EVALUATIONS,
)

__all__: list[str] = []


@dataclass(frozen=True)
class _Run:
    """Bounded integration: the state at t_end (≤ horizon) and at about t_end/2, or blow-up."""

    t_end: float
    mid: np.ndarray
    final: np.ndarray
    blowup_time: float | None = None
    blowup_direction: np.ndarray | None = None
    failure: str | None = None
    #: |T* − blowup_time| ≤ uncertainty (`Trajectory.blowup_bracket`; 0 for the closed form)
    uncertainty: float = 0.0


class _BudgetExhausted(Exception):
    """More than MAX_RHS_EVALUATIONS right-hand-side evaluations in one integration."""


class _Integrator:
    """Integrate Σ alone (b = 0, m = 0: Σ does not depend on the mean) with `flow` in segments of
    length ≤ SEGMENT_NORM_TIME/‖A‖₂ (the flow is a semigroup), projecting each segment's end onto
    the PSD cone against rounding. `advance(t)` continues to time t and stops early at blow-up,
    when the work budget is spent, or once tr Σ leaves
    [min(tr Σ0, scale) / GROWTH_STOP, GROWTH_STOP · max(tr Σ0, scale)] (scale 0: tr Σ0). The
    layer p is integrated without b; by "rk" from d = FACTOR_MIN_D on with its dense heads of
    low rank through their factors (`state.lowrank.factored_layer`, as `flow` does), by flow's
    Runge–Kutta run itself (towards a pole in Sundman's time), which counts the right-hand
    sides of all segments together (`calls`, at most MAX_RHS_EVALUATIONS). Only the segments'
    mid and end states are formed; `rtol`, `atol` are flow's tolerances (None: its defaults),
    `blowup_rtol` the width of rk's bracket of T* (its pole stop; default BLOWUP_RTOL), towards
    which its tolerances loosen as T* allows (BLOWUP_LOOSEN_POWER).
    A run that ended at a blow-up or a failure keeps that end (`advance` returns it again), so
    that one caller can continue another's integration. `sigma` (a power of two,
    `blowup.state_scale`): Σ/σ is integrated under the heads (σV_h, B_h), exactly equivalent,
    and the states are reported as σ times it. Without `bounded`, tr Σ may leave that interval
    (a replay to a stated horizon: `verification._replay`)."""

    def __init__(self, p: Params, cov0: np.ndarray, method: str, scale: float = 0.0,
                 rtol: float | None = None, sigma: float = 1.0, atol: float | None = None,
                 bounded: bool = True, blowup_rtol: float = BLOWUP_RTOL):
        layer = scaled_heads(p, sigma)
        if method == "rk" and p.d >= FACTOR_MIN_D:
            bare = factored_layer(layer, bias=False)
        else:
            bare = layer
        self.calls = [0]  # right-hand-side evaluations of rk so far
        self.tolerances: dict[str, Any] = {k: v for k, v in (("rtol", rtol), ("atol", atol))
                                           if v is not None}
        self.blowup_rtol = blowup_rtol
        self.bounded = bounded
        self.layer = bare
        self.method, self.d, self.sigma = method, bare.d, sigma
        self.tr0 = float(np.trace(cov0)) / sigma
        scale = scale / sigma
        self.top = GROWTH_STOP * min(max(self.tr0, scale), MAX_GROWTH * self.tr0)
        # a start far above the blow-up scale first falls to it: collapse is judged below both
        self.bottom = min(self.tr0, scale if scale > 0 else self.tr0) / GROWTH_STOP
        self.seg = segment_length(p, cov0)
        self.t, self.S = 0.0, cov0 / sigma  # Σ/σ; times and states hold Σ itself
        self.times, self.states = [0.0], [cov0]
        self.stopped = False
        self.end: _Run | None = None  # the run's end at a blow-up or failure

    def _segment(self, h: float) -> Trajectory:
        """The states at 0, h/2, h of the flow from Σ/σ: "exact" by `flow`, "rk" by its
        Runge–Kutta run on the layer itself, its right-hand sides counted against
        MAX_RHS_EVALUATIONS (_BudgetExhausted when spent)."""
        g = Gaussian(np.zeros(self.d), self.S)
        if self.method == "exact":
            return flow(self.layer, g, h, method="exact", t_eval=[0.0, h / 2, h],
                        dense_output=False)
        left = MAX_RHS_EVALUATIONS - self.calls[0]  # the run's limit: at least that many
        try:
            return _rk_flow(self.layer, g, np.array([0.0, h / 2, h]), h,
                            self.tolerances.get("rtol", DEFAULT_RTOL),
                            self.tolerances.get("atol", DEFAULT_ATOL),
                            max(1, -(-left // RK_EVALUATIONS_PER_STEP)), counter=self.calls,
                            pole_rtol=self.blowup_rtol, loosen_power=BLOWUP_LOOSEN_POWER)
        except SolverError:
            if self.calls[0] > MAX_RHS_EVALUATIONS:
                raise _BudgetExhausted from None
            raise

    def advance(self, until: float) -> _Run:
        """The run continued to `until` (from where the last call left it); a run that ended at
        a blow-up or a failure returns that end again."""
        if self.end is None:
            self.end = self._advance(until)
            if self.end.blowup_time is None and self.end.failure is None:
                run, self.end = self.end, None
                return run
        return self.end

    def _advance(self, until: float) -> _Run:
        while self.t < until * (1 - 1e-12) and not self.stopped:
            h = min(self.seg, until - self.t)
            try:
                traj = self._segment(h)
            except _BudgetExhausted:
                self.stopped = True
                return _Run(self.t, self.states[-1], self.states[-1], failure=(
                    f"the Runge–Kutta integration used its budget of {MAX_RHS_EVALUATIONS} "
                    f"right-hand-side evaluations by t = {self.t:.6g} (tr Σ = "
                    f"{np.trace(self.states[-1]):.3g}): the flow is stiff there, typically Σ "
                    f"growing along a direction where the attention term degenerates"))
            except (SolverError, ValueError, LinAlgError, ArithmeticError) as exc:
                self.stopped = True  # the flow could not continue (InvalidInputError included)
                return _Run(self.t, self.states[-1], self.states[-1], failure=(
                    f"the {self.method} integration failed after t = {self.t:.6g} "
                    f"(tr Σ = {np.trace(self.states[-1]):.3g}): {exc}"))
            if traj.blowup_time is not None:
                self.stopped = True
                T = self.t + float(traj.blowup_time)
                bracket = traj.blowup_bracket
                return _Run(T, self.states[-1], self.sigma * traj.cov[-1], T,
                            traj.blowup_direction, uncertainty=0.0 if bracket is None else
                            float(bracket[1]) - float(traj.blowup_time))
            self.times += [self.t + h / 2, self.t + h]
            self.t += h
            self.S = psd_part(traj.cov[-1])
            self.states += [self.sigma * traj.cov[1], self.sigma * self.S]
            tr = np.trace(self.S)
            if self.bounded and not (self.bottom < tr < self.top):
                self.stopped = True
        i = int(np.argmin(np.abs(np.array(self.times) - self.t / 2)))
        return _Run(self.t, self.states[i], self.states[-1])
