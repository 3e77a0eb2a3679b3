"""The segmented integration of Σ that `certify` gathers its numerical evidence with and that
`Certificate.check()` replays: Σ̇ = AΣ + ΣAᵀ + Σ_h(V_hΣB_hΣ + ΣB_hᵀΣV_hᵀ) by `flow`'s methods
(the closed form for scalar V, DOP853 otherwise, continued by Rodas4 where DOP853's steps
collapse) in segments of ‖A‖₂-length SEGMENT_NORM_TIME (`blowup.segment_length`), each
segment's end projected on the PSD cone, under budgets of right-hand-side evaluations (DOP853)
and of steps (Rodas4).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.linalg import LinAlgError

from ...errors import SolverError
from ...flows.implicit.linear import DENSE_MAX_D
from ...flows.implicit.run import StepBudgetSpent, implicit_flow
from ...flows.integrate import DEFAULT_ATOL, DEFAULT_RTOL, Trajectory, flow
from ...flows.rk.blowup import _blowup_estimate
from ...flows.rk.constants import BLOWUP_GROWTH, RK_EVALUATIONS_PER_STEP
from ...flows.rk.run import _rk_flow
from ...flows.rk.stepper import _StiffSwitch
from ...state.lowrank import FACTOR_MIN_D, factored_layer
from ...state.params import Gaussian, Params
from ...state.validation import psd_part
from .blowup import scaled_heads, segment_length
from .constants import (
    BLOWUP_LOOSEN_POWER,
    BLOWUP_RTOL,
    GROWTH_STOP,
    IMPLICIT_GROWTH_STOP,
    IMPLICIT_RTOL,
    IMPLICIT_SEGMENTS,
    MAX_GROWTH,
    MAX_IMPLICIT_STEPS,
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
    #: where DOP853's steps collapsed and Rodas4 took over (None: no switch)
    switch_time: float | None = None


class _BudgetExhausted(Exception):
    """More than MAX_RHS_EVALUATIONS right-hand-side evaluations (DOP853) or MAX_IMPLICIT_STEPS
    steps (Rodas4) in one integration."""


class _Integrator:
    """Integrate Σ alone (b = 0, m = 0: Σ does not depend on the mean) with `flow` in segments of
    length ≤ SEGMENT_NORM_TIME/‖A‖₂ (the flow is a semigroup), projecting each segment's end onto
    the PSD cone against rounding. `advance(t)` continues to time t and stops early at blow-up,
    when the work budget is spent, or once tr Σ leaves
    [min(tr Σ0, scale) / GROWTH_STOP, GROWTH_STOP · max(tr Σ0, scale)] (scale 0: tr Σ0). The
    layer p is integrated without b; by "rk" from d = FACTOR_MIN_D on with its dense heads of
    low rank through their factors (`state.lowrank.factored_layer`, as `flow` does), by flow's
    Runge–Kutta run itself (towards a pole in Sundman's time), which counts the right-hand
    sides of all segments together (`calls`, at most MAX_RHS_EVALUATIONS). Where DOP853's steps
    collapse against the solution's scale (`flow`'s stiffness monitor) the run continues by
    Rodas4 at `implicit_rtol` (`flows.implicit`, its stage systems solved directly: d ≤
    DENSE_MAX_D; above, the run ends there as a failure), its steps counted together
    (`implicit_steps`, at most MAX_IMPLICIT_STEPS), and `switch_time` records where. After the
    switch the segments are IMPLICIT_SEGMENTS times shorter, a bounded run stops once tr Σ
    passes IMPLICIT_GROWTH_STOP · max(tr Σ0, scale) (Rodas4 follows no pole: the growth that
    "grows" asks for, not GROWTH_STOP's), and growth that the quadratic terms drive (flow's
    blow-up test) ends the run as a failure. Only the segments' mid and end states are formed;
    `rtol`, `atol` are flow's tolerances (None: its defaults), `blowup_rtol` the width of rk's
    bracket of T* (its pole stop; default BLOWUP_RTOL), towards which its tolerances loosen as
    T* allows (BLOWUP_LOOSEN_POWER).
    A run that ended at a blow-up or a failure keeps that end (`advance` returns it again), so
    that one caller can continue another's integration. `sigma` (a power of two,
    `blowup.state_scale`): Σ/σ is integrated under the heads (σV_h, B_h), exactly equivalent,
    and the states are reported as σ times it. Without `bounded`, tr Σ may leave that interval
    (a replay to a stated horizon: `verification._replay`)."""

    def __init__(self, p: Params, cov0: np.ndarray, method: str, scale: float = 0.0,
                 rtol: float | None = None, sigma: float = 1.0, atol: float | None = None,
                 bounded: bool = True, blowup_rtol: float = BLOWUP_RTOL,
                 implicit_rtol: float = IMPLICIT_RTOL):
        layer = scaled_heads(p, sigma)
        if method == "rk" and p.d >= FACTOR_MIN_D:
            bare = factored_layer(layer, bias=False)
        else:
            bare = layer
        self.calls = [0]  # right-hand-side evaluations of rk so far
        self.implicit_steps = 0  # Rodas4 steps so far, after the switch
        self.implicit_rtol = implicit_rtol
        self.switch_time: float | None = None
        self.tolerances: dict[str, Any] = {k: v for k, v in (("rtol", rtol), ("atol", atol))
                                           if v is not None}
        self.blowup_rtol = blowup_rtol
        self.bounded = bounded
        self.layer = bare
        self.method, self.d, self.sigma = method, bare.d, sigma
        self.tr0 = float(np.trace(cov0)) / sigma
        scale = scale / sigma
        self.top = GROWTH_STOP * min(max(self.tr0, scale), MAX_GROWTH * self.tr0)
        # after the switch (no pole is followed): the growth that "grows" asks for, and a margin
        self.implicit_top = min(self.top, IMPLICIT_GROWTH_STOP * max(self.tr0, scale))
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
        times = np.array([0.0, h / 2, h])
        if self.method == "exact":
            return flow(self.layer, g, h, method="exact", t_eval=times, dense_output=False)
        if self.switch_time is not None:
            return self._implicit(times, 0.0, self.S, None)
        left = MAX_RHS_EVALUATIONS - self.calls[0]  # the run's limit: at least that many
        try:
            return _rk_flow(self.layer, g, times, h,
                            self.tolerances.get("rtol", DEFAULT_RTOL),
                            self.tolerances.get("atol", DEFAULT_ATOL),
                            max(1, -(-left // RK_EVALUATIONS_PER_STEP)), counter=self.calls,
                            pole_rtol=self.blowup_rtol, loosen_power=BLOWUP_LOOSEN_POWER,
                            stiff_switch=True)
        except _StiffSwitch as sw:
            if self.d > DENSE_MAX_D:
                raise SolverError(f"DOP853's steps collapsed at t = {self.t + sw.t:.6g} (a stiff "
                                  f"flow), and the Rodas4 continuation solves its stage systems "
                                  f"directly only up to d = {DENSE_MAX_D}") from None
            self.switch_time = self.t + sw.t
            return self._implicit(times, sw.t, sw.cov, sw.outputs)
        except SolverError:
            if self.calls[0] > MAX_RHS_EVALUATIONS:
                raise _BudgetExhausted from None
            raise

    def _implicit(self, times: np.ndarray, t0: float, S0: np.ndarray,
                  before: tuple[np.ndarray, np.ndarray, np.ndarray] | None) -> Trajectory:
        """The segment's states at `times` by Rodas4 from Σ(t0) = S0 (after DOP853's outputs
        `before` up to t0), its steps counted against MAX_IMPLICIT_STEPS."""
        d = self.d  # absolute tolerance: rtol of the segment's start scale, every entry
        atol = np.full(d + d * d, self.implicit_rtol * float(np.max(np.abs(np.diag(S0)))))
        try:
            res = implicit_flow(self.layer, np.zeros(d), S0, t0, times, float(times[-1]),
                                self.implicit_rtol, atol,
                                MAX_IMPLICIT_STEPS - self.implicit_steps, with_mean=False,
                                growth=BLOWUP_GROWTH,
                                blowup=lambda t, y: _blowup_estimate(self.layer, d, t, y))
        except StepBudgetSpent:
            raise _BudgetExhausted from None
        self.implicit_steps += res.steps
        if res.blowup is not None:  # Rodas4 does not bracket a pole: no claim either way
            raise SolverError(f"the quadratic terms drive the growth of tr Σ by t = "
                              f"{self.t + float(res.blowup[0]):.6g} (a blow-up that the Rodas4 "
                              f"continuation does not locate)")
        t, cov = res.t, res.cov
        if before is not None:
            t, cov = np.concatenate([before[0], t]), np.concatenate([before[2], cov])
        return Trajectory(t, np.zeros((t.size, d)), cov, "completed", None, "implicit")

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
            h = min(self.seg if self.switch_time is None else self.seg / IMPLICIT_SEGMENTS,
                    until - self.t)
            try:
                traj = self._segment(h)
            except _BudgetExhausted:
                self.stopped = True
                spent = (f"the Runge–Kutta integration used its budget of "
                         f"{MAX_RHS_EVALUATIONS} right-hand-side evaluations"
                         if self.switch_time is None else
                         f"the Rodas4 continuation (from t = {self.switch_time:.6g}, where "
                         f"DOP853's steps collapsed) used its budget of {MAX_IMPLICIT_STEPS} "
                         f"steps")
                return _Run(self.t, self.states[-1], self.states[-1], failure=(
                    f"{spent} within the segment from t = {self.t:.6g} to "
                    f"{self.t + h:.6g} (tr Σ from {np.trace(self.states[0]):.3g} at t = 0 to "
                    f"{np.trace(self.states[-1]):.3g} at its start): the steps needed there (a "
                    f"stiff flow, or a slow approach over a long horizon) exceed it"),
                    switch_time=self.switch_time)
            except (SolverError, ValueError, LinAlgError, ArithmeticError) as exc:
                self.stopped = True  # the flow could not continue (InvalidInputError included)
                return _Run(self.t, self.states[-1], self.states[-1], failure=(
                    f"the {self.method} integration failed after t = {self.t:.6g} "
                    f"(tr Σ = {np.trace(self.states[-1]):.3g}): {exc}"),
                    switch_time=self.switch_time)
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
            if self.bounded and not (self.bottom < tr < (self.top if self.switch_time is None
                                                          else self.implicit_top)):
                self.stopped = True
        i = int(np.argmin(np.abs(np.array(self.times) - self.t / 2)))
        return _Run(self.t, self.states[i], self.states[-1], switch_time=self.switch_time)


def _replay_run(p: Params, cov0: np.ndarray, until: float, method: str, *, sigma: float,
                rtol: float, atol: float, blowup_rtol: float, implicit_rtol: float) -> _Run:
    """The integration that "grows" evidence is decided on, and that `Certificate.check()`
    replays: from Σ0 to until/2 and on to until (no stop on the size of tr Σ), `mid` the state
    at until/2 itself; the same calls give the same floats."""
    run = _Integrator(p, cov0, method, rtol=rtol, atol=atol, sigma=sigma, bounded=False,
                      blowup_rtol=blowup_rtol, implicit_rtol=implicit_rtol)
    half = run.advance(until / 2)
    end = run.advance(until)
    if half.failure is not None or half.blowup_time is not None or end.failure is not None or \
            end.blowup_time is not None:
        return end
    return _Run(end.t_end, half.final, end.final, switch_time=end.switch_time)
