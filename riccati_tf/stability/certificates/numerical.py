"""Numerical evidence for the regime when no theorem of SPEC §5 decides it (general V, or scalar V
outside the theorems).

A bounded integration of Σ̇ = AΣ + ΣAᵀ + Σ_h(V_hΣB_hΣ + ΣB_hᵀΣV_hᵀ) (the closed form for scalar V,
Runge–Kutta otherwise) in segments of ‖A‖₂-length ≤ SEGMENT_NORM_TIME, up to a horizon of
HORIZON_RATES time constants, then: a blow-up event; entry into a certified basin — the
Lyapunov sublevel set {hᵀPh ≤ ρ} of a stable equilibrium (`local`), the attracting ball
‖R⁻¹(Σ − Σ*)R⁻¹‖_F < r₊ of the numerical-range bound (`_Ball`), or the sublevel set tr(PΣ) < ρ of
Σ* = 0 (`_ZeroBall`); exponential growth of tr Σ past the blow-up scale ("grows"); or no
conclusion ("undetermined").
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
from scipy.linalg import eigh

from ...errors import SolverError
from ...flows.rk.blowup import attention_driven
from ...flows.rk.constants import SUNDMAN_SHARE
from ...state.params import Params
from ...state.validation import psd_rank
from ..equilibria import (
    ENUMERATION_MAX_D,
    KRONECKER_MAX_D,
    Equilibrium,
    equilibria,
)
from .blowup import _blowup_scale, _grows, _horizon, state_scale
from .certificate import Certificate, _converged
from .constants import (
    BALL_AIM,
    BALL_CHECKS,
    BALL_RTOL,
    BALL_SHORTEST,
    BASIN_SAFETY,
    BLOWUP_CHECK_RTOL,
    BLOWUP_RTOL,
    CLOSE_RTOL,
    EVIDENCE_TOLERANCE,
    GROWTH_FACTOR,
    HORIZON_DOUBLINGS,
    IMPLICIT_RTOL,
    INTEGRATION_ATOL,
    INTEGRATION_RTOL,
)
from .integration import _Integrator, _replay_run, _Run
from .local import _approaches, _level, _local, _zero_equilibrium, _zero_sublevel, _ZeroSublevel

__all__: list[str] = []


def _numerical(p: Params, cov0: np.ndarray, base: dict, *, scalar: bool,
               no_blowup: bool = False, bounded: bool = False) -> Certificate:
    """Bounded integration (closed form for scalar V, DOP853 otherwise), then a local
    certificate at a nearby stable equilibrium, or growth/undetermined; general V first
    `_attracting_ball` (up to d = 30 only the zero sublevel set of a Hurwitz A, a d × d
    certificate in place of the n_s × n_s one of `local`). General V integrates Σ in the units
    of `blowup.state_scale` (heads of size 1e150 put the equilibria near 1e-150), and after a
    failure once more in Σ0's units, where a blow-up from far above the natural scale is
    followed without overflow. no_blowup: a theorem rules out blow-up; bounded: a theorem says
    Σ converges (growth is then no conclusion)."""
    method = "exact" if scalar else "rk"
    base = {**base, "tolerance": {**(base.get("tolerance") or {}), **_evidence_tolerance()}}
    horizon = _horizon(p, cov0)
    scale = 0.0 if no_blowup else _blowup_scale(p)
    sigma = 1.0 if scalar else state_scale(p, cov0)
    integrator = _Integrator(p, cov0, method, scale, rtol=INTEGRATION_RTOL, sigma=sigma)
    if not scalar:  # d ≤ 30: the zero sublevel set (d × d) before any n_s × n_s certificate,
        # up to the first horizon (the integration below, doubling it, decides the rest)
        small = p.d <= KRONECKER_MAX_D
        got = _attracting_ball(p, cov0, base, horizon * (1 if small else 2 ** HORIZON_DOUBLINGS),
                               scale, integrator, zero_only=small)
        if got is not None:
            return got
    for _ in range(HORIZON_DOUBLINGS + 1):
        run = integrator.advance(horizon)
        if run.failure is not None and not scalar:
            run = _start_scale_blowup(p, cov0, scale, horizon, sigma) or run
        if run.blowup_time is not None and run.uncertainty > BLOWUP_CHECK_RTOL * run.blowup_time:
            # an estimate from a growth that is not a simple pole 1/(T* − t): too loose to state
            return Certificate("undetermined", None, None, None, None, False, False,
                               f"the Runge–Kutta integration blows up near t = "
                               f"{run.blowup_time:.10g}, but locates T* only to ± "
                               f"{run.uncertainty:.2g}, more than blowup_check_rtol = "
                               f"{BLOWUP_CHECK_RTOL:g} relative (tr Σ does not grow like "
                               f"c/(T* − t) there); no conclusion.",
                               horizon=None, final_cov=None, **base)
        if run.blowup_time is not None:
            how = ("the first root of det(I + W(t)Σ0) located by the closed form" if scalar else
                   "the Runge–Kutta blow-up event (quadratic terms dominate d tr Σ/dt)")
            tol = {**(base.get("tolerance") or {}), "blowup_check_rtol": BLOWUP_CHECK_RTOL}
            return Certificate("blows_up", None, None, None, run.blowup_time, False, False,
                               f"blow-up at T* = {run.blowup_time:.12g}: {how}.",
                               theorem="closed_form_root" if scalar else "numerical",
                               blowup_direction=run.blowup_direction if scalar else None,
                               **{**base, "tolerance": tol})
        if run.failure is not None:
            t_end, final = _replayable_end(p, cov0, run, scalar, sigma)
            return Certificate("undetermined", None, None, None, None, False, False,
                               f"{run.failure}; no conclusion.", horizon=t_end,
                               final_cov=final, **base)
        got = _classify_final(p, cov0, base, run, scalar, np.inf if bounded else scale, sigma)
        if got is not None or integrator.stopped:
            break
        horizon *= 2
    if got is not None:
        return got
    note = " G ⪰ 0 rules out finite-time blow-up." if no_blowup else ""
    return Certificate("undetermined", None, None, None, None, False, False,
                       f"no theorem of SPEC §5 applies and the integration up to t = "
                       f"{run.t_end:.6g} neither blew up nor entered a certified basin of a "
                       f"stable equilibrium nor grew by a factor {GROWTH_FACTOR:g}.{note}",
                       horizon=run.t_end, final_cov=run.final, **base)


def _start_scale_blowup(p: Params, cov0: np.ndarray, scale: float, horizon: float,
                        sigma: float) -> _Run | None:
    """After a failed integration in the natural units σ: the blow-up found by integrating again
    in the units of Σ0 (`blowup.state_scale` with start; a blow-up from a start far above the
    natural scale overflows in natural units), or None (also when those units are the same)."""
    start = state_scale(p, cov0, start=True)
    if start == sigma:
        return None
    run = _Integrator(p, cov0, "rk", scale, rtol=INTEGRATION_RTOL, sigma=start).advance(horizon)
    return run if run.blowup_time is not None else None


def _evidence_tolerance(rtol: float = INTEGRATION_RTOL) -> dict[str, float]:
    """The tolerances of numerical evidence (`constants.EVIDENCE_TOLERANCE`) with the
    integration's relative tolerance rtol."""
    return {**EVIDENCE_TOLERANCE, "integration_rtol": rtol}


@dataclass(frozen=True)
class _Ball:
    """The ball ‖R⁻¹(Σ − Σ*)R⁻¹‖_F < radius around a stable equilibrium Σ* = R² ≻ 0 that the
    numerical-range bound and the quadratic constant c̃ (`_quadratic_bound`) make attracting."""

    eq: Equilibrium
    Ri: np.ndarray
    radius: float
    c: float

    def gap(self, S: np.ndarray) -> float:
        """‖R⁻¹(S − Σ*)R⁻¹‖_F."""
        return float(np.linalg.norm(self.Ri @ (S - self.eq.cov) @ self.Ri))

    def verdict(self, p: Params, base: dict, state: np.ndarray, t: float,
                gap: float, rtol: float) -> Certificate:
        """"converges" to Σ* from the state at t (integrated at rtol), inside the ball at
        distance gap."""
        st = self.eq.stability
        assert st is not None and st.value is not None  # a ball's bound (`_balls`)
        return _converged(
            p, self.eq.cov, base, "numerical", exact=False, glob=False, rate=-st.value,
            equilibrium=self.eq, local=False, final_cov=state, horizon=t,
            reason=f"Runge–Kutta integration (rtol {rtol:g}) to t = {t:.6g} ends at "
                   f"distance ‖R⁻¹(Σ − Σ*)R⁻¹‖_F = {gap:.3g} (Σ* = R², rank {self.eq.rank}) "
                   f"inside the ball of radius {self.radius:.3g} that attracts by the "
                   f"numerical-range bound Re⟨K, L̃K⟩ ≤ {st.value:.6g}‖K‖² (Lanczos Ritz "
                   f"residual {st.residual:.2g}, Equilibrium.stability) and the quadratic "
                   f"constant c̃ = {self.c:.3g} of the stacked heads: ‖R⁻¹(Σ(t) − Σ*)R⁻¹‖_F "
                   f"decreases to the residual's level at rate ≥ {-st.value:.3g} (numerical "
                   f"evidence).")


@dataclass(frozen=True)
class _ZeroBall(_ZeroSublevel):
    """The sublevel set tr(PΣ) < radius of Σ* = 0 (`local._ZeroSublevel`) as evidence of a
    collapse: `verdict`."""

    def verdict(self, p: Params, base: dict, state: np.ndarray, t: float,
                gap: float, rtol: float) -> Certificate:
        """"collapses" from the state at t (integrated at rtol), inside the sublevel set at
        level gap."""
        return _converged(
            p, self.eq.cov, base, "numerical", exact=False, glob=False, rate=self.asymptotic,
            equilibrium=self.eq, local=False, final_cov=state, horizon=t, basin=self.radius,
            reason=f"Runge–Kutta integration (rtol {rtol:g}) to t = {t:.6g} ends at "
                   f"ℓ = tr(PΣ) = {gap:.3g} below the level {self.radius:.3g} of the linear "
                   f"Lyapunov function ℓ on the PSD cone (AᵀP + PA = −Q, λ_min(Q) ≥ "
                   f"{self.mu:.3g}; heads' quadratic constant κ = {self.kappa:.3g}): "
                   f"ℓ̇ ≤ −μ tr Σ + κ(tr Σ)² < 0 there, so ℓ decreases at rate ≥ "
                   f"{self.rate:.3g} and Σ → 0; asymptotic rate 2|max Re λ(A)| = "
                   f"{self.asymptotic:.3g} (numerical evidence).")


def _zero_ball(p: Params) -> _ZeroBall | None:
    """`_ZeroBall` of Σ* = 0 (`local._zero_sublevel`), or None."""
    z = _zero_sublevel(p)
    return None if z is None else _ZeroBall(**{f.name: getattr(z, f.name) for f in fields(z)})


def _quadratic_bound(p: Params, R: np.ndarray, Ri: np.ndarray) -> float:
    """c̃ with ‖Σ_h (X_hKY_hK + KY_hᵀKX_hᵀ)‖_F ≤ c̃‖K‖_F² for every symmetric K, where
    X_h = R⁻¹V_hR and Y_h = RB_hR (the quadratic part of the field in the coordinates
    K = R⁻¹(Σ − Σ*)R⁻¹); the second term is the transpose of the first, hence the factor 2.

    Stacked heads: for weights α_h > 0, Σ_h X_hKZ_hK = 𝐗(I_H ⊗ K)𝐙K with 𝐗 = [α_1X_1 …
    α_HX_H] (d × Hd) and 𝐙 = [Z_1/α_1; …; Z_H/α_H] (Hd × d), and ‖I_H ⊗ K‖₂ = ‖K‖₂ ≤ ‖K‖_F,
    so ‖Σ_h X_hKZ_hK‖_F ≤ s(Z)‖K‖_F² with s(Z) = ‖𝐗‖₂‖𝐙‖₂ = (λ_max(Σ_h α_h²X_hX_hᵀ)
    λ_max(Σ_h Z_hᵀZ_h/α_h²))^{1/2}. With α_h² = ‖Z_h‖_F/‖X_h‖_F, ‖𝐗‖₂² ≤ Σ_h α_h²‖X_h‖_F² =
    Σ_h ‖X_h‖_F‖Z_h‖_F and likewise ‖𝐙‖₂², so s(Z) ≤ Σ_h ‖X_h‖_F‖Z_h‖_F; it is smaller when
    the X_h have nearly orthogonal ranges (heads writing to complementary subspaces).

    Shared part: for Ȳ = (1/H) Σ_h Y_h, Σ_h X_hKY_hK = (Σ_h X_h)KȲK + Σ_h X_hK(Y_h − Ȳ)K, so
    ‖·‖_F ≤ (‖Σ_h X_h‖₂‖Ȳ‖₂ + s(Y − Ȳ))‖K‖_F²: small when the heads share most of B_h and
    their value matrices add up to a small one.

    c̃ = 2 min(s(Y), ‖Σ_h X_h‖₂‖Ȳ‖₂ + s(Y − Ȳ)) ≤ 2 Σ_h ‖X_h‖_F‖Y_h‖_F (`Stability.quadratic`).
    A head with X_h = 0 or Z_h = 0 contributes nothing to s(Z) and is left out of it."""
    X = [Ri @ V @ R for V, _ in p.heads]
    Y = [R @ B @ R for _, B in p.heads]
    Ybar = sum(Y) / len(Y)
    Xsum = sum(X)
    shared = np.sqrt(_top_eigenvalue(Xsum.T @ Xsum) * _top_eigenvalue(Ybar.T @ Ybar))
    return float(2 * min(_stacked(X, Y), shared + _stacked(X, [Yh - Ybar for Yh in Y])))


def _stacked(X: list[np.ndarray], Z: list[np.ndarray]) -> float:
    """s(Z) = ‖𝐗‖₂‖𝐙‖₂ of `_quadratic_bound`, weights α_h² = ‖Z_h‖_F/‖X_h‖_F."""
    d = X[0].shape[0]
    XX, ZZ = np.zeros((d, d)), np.zeros((d, d))
    for Xh, Zh in zip(X, Z, strict=True):
        x, z = np.linalg.norm(Xh), np.linalg.norm(Zh)
        if x > 0 and z > 0:
            XX += (z / x) * (Xh @ Xh.T)
            ZZ += (x / z) * (Zh.T @ Zh)
    return float(np.sqrt(_top_eigenvalue(XX) * _top_eigenvalue(ZZ)))


def _top_eigenvalue(S: np.ndarray) -> float:
    """λ_max of a symmetric positive semidefinite matrix (its upper triangle), ≥ 0."""
    top = eigh(S, eigvals_only=True, subset_by_index=[S.shape[0] - 1] * 2)[0]
    return max(float(top), 0.0)


def _balls(p: Params, starts: tuple[np.ndarray, ...]) -> list[_Ball | _ZeroBall]:
    """The attracting balls (`_Ball`, shrunk by BASIN_SAFETY) of the equilibria whose stability
    the numerical-range bound decided, from Newton–Krylov on the continuation and from the given
    starts (`equilibria`): with μ = −bound, f the defect and c̃ = `_quadratic_bound`,
    ½ d‖K‖_F²/dt ≤ ‖K‖_F (f − μ‖K‖_F + c̃‖K‖_F²) < 0 for r₋ < ‖K‖_F < r₊ =
    (μ + √(μ² − 4c̃f)) / (2c̃)."""
    try:
        eqs = equilibria(p, starts=starts)
    except SolverError:
        return []
    balls: list[_Ball | _ZeroBall] = []
    for eq in eqs:
        st = eq.stability
        if st is None or st.method != "numerical-range":
            continue
        assert st.value is not None and st.defect is not None  # set by the bound
        w, U = np.linalg.eigh(eq.cov)
        R, Ri = (U * np.sqrt(w)) @ U.T, (U / np.sqrt(w)) @ U.T
        c = _quadratic_bound(p, R, Ri)
        mu, f = -st.value, st.defect
        if c > 0 and mu * mu > 4 * c * f:
            balls.append(_Ball(eq, Ri, BASIN_SAFETY * (mu + np.sqrt(mu * mu - 4 * c * f))
                               / (2 * c), c))
    return balls


def _attracting_ball(p: Params, cov0: np.ndarray, base: dict, horizon: float,
                     scale: float, main: _Integrator | None = None,
                     zero_only: bool = False) -> Certificate | None:
    """"converges" when Σ(t) enters the attracting ball r₋ < ‖R⁻¹(Σ − Σ*)R⁻¹‖_F < r₊ of a
    stable equilibrium Σ* = R² ≻ 0 whose stability the numerical-range bound decided
    (`_balls`), "collapses" when it enters the sublevel set tr(PΣ) < ρ of Σ* = 0 (Hurwitz A,
    `_ZeroBall`), integrating (dense heads of low rank factored: `state.lowrank.factored_layer`)
    only until it does: the first check at a quarter segment of `_Integrator`, each later one
    where the distance, decaying at its rate over the last half segment, reaches BALL_AIM times
    the radius (`_entry_wait`). The balls: the zero sublevel set for Hurwitz A from the start;
    those of the equilibria (`equilibria` with the state as a start: the continuation's and
    Newton's from it) at the first check — a blow-up before it costs no search — or, with the
    zero set, at the first check from which Σ(t), at its rate, would not enter the set before
    the horizon. zero_only: the zero sublevel set alone, without Newton (d ≤ 30, where
    the caller's integration finds other equilibria and their local certificates). None when
    there is no ball (A = 0: F(cΣ) = c²F(Σ), so no equilibrium is stable and there is nothing to
    search for), or the integration up to `horizon` within its budget enters none. With the zero
    set, a run of its own at BALL_RTOL; without it, the caller's integration `main` itself
    (at INTEGRATION_RTOL; a new one when None), which the caller continues from where this one
    leaves it (a blow-up before the first check is then found once, at the caller's
    tolerance)."""
    zero = _zero_ball(p)
    balls: list[_Ball | _ZeroBall] = [] if zero is None else [zero]
    # the equilibria searched from the first check's state
    later = not balls and not zero_only and bool(np.any(p.A))
    if not (balls or later) or (later and attention_driven(p, cov0, SUNDMAN_SHARE)):
        return None
    # with the zero set: searched from a later state, if Σ(t) stalls
    deferred = zero if balls and not zero_only else None
    rtol = INTEGRATION_RTOL if later else BALL_RTOL
    integrator = main if later and main is not None else _Integrator(
        p, cov0, "rk", scale, rtol=rtol, sigma=state_scale(p, cov0))
    longest = integrator.seg / BALL_CHECKS
    state, t, wait = cov0, 0.0, longest
    while True:
        for ball in balls:
            gap = ball.gap(state)
            if gap < ball.radius and t > 0:  # the evidence is an integration (horizon > 0)
                tol = {**(base.get("tolerance") or {}), **_evidence_tolerance(rtol)}
                return ball.verdict(p, {**base, "tolerance": tol}, state, t, gap, rtol)
        if integrator.stopped or t >= horizon * (1 - 1e-12):
            return None
        run = integrator.advance(min(t + wait, horizon))
        if run.blowup_time is not None or run.failure is not None:
            return None
        state, t = run.final, run.t_end
        if later and attention_driven(p, state, SUNDMAN_SHARE):  # heading for a pole: no search
            return None
        if later:
            balls, later = _balls(p, (state,)), False
            if not balls:
                return None
        t_mid, mid = integrator.times[-2], integrator.states[-2]
        if deferred is not None and t + _entry_wait(deferred, t_mid, mid, t, state) > horizon:
            balls, deferred = [*_balls(p, (state,)), *balls], None
        wait = float(np.clip(min(_entry_wait(b, t_mid, mid, t, state) for b in balls),
                             longest / BALL_SHORTEST, longest))


def _entry_wait(ball: _Ball | _ZeroBall, t_mid: float, mid: np.ndarray, t: float,
                state: np.ndarray) -> float:
    """The time from t until the ball's distance g, decaying from (t_mid, g(mid)) to
    (t, g(state)) at the rate λ = ln(g(mid)/g(state)) / (t − t_mid), reaches BALL_AIM times its
    radius; inf when it does not decay. `_attracting_ball` checks next after the shortest of
    these waits, within [longest / BALL_SHORTEST, longest]."""
    g_mid, g = ball.gap(mid), ball.gap(state)
    if not (g_mid > g > 0 and t > t_mid):
        return np.inf
    return float(np.log(g / (BALL_AIM * ball.radius)) / (np.log(g_mid / g) / (t - t_mid)))


def _candidates(p: Params, final: np.ndarray, scalar: bool) -> list[Equilibrium]:
    try:
        if scalar and p.d <= ENUMERATION_MAX_D:
            return equilibria(p, which="all")
        if scalar:
            return [*equilibria(p), _zero_equilibrium(p)]
        return equilibria(p, which="all", starts=[final])
    except SolverError:
        return []


def _classify_final(p: Params, cov0: np.ndarray, base: dict, run: _Run, scalar: bool,
                    blow_scale: float, sigma: float = 1.0) -> Certificate | None:
    mid, final, horizon = run.mid, run.final, run.t_end
    label = "closed-form" if scalar else "Runge–Kutta" if run.switch_time is None else \
        (f"Runge–Kutta (DOP853, continued by Rodas4 at rtol {IMPLICIT_RTOL:g} from "
         f"t = {run.switch_time:.6g}, where its steps collapsed)")
    candidates = _candidates(p, final, scalar)
    for eq in candidates:
        loc = _local(p, eq.cov) if eq.stable else None
        if loc is not None and _level(loc.P, eq.cov, final, loc.radius) <= \
                BASIN_SAFETY * loc.rho_max:
            return _converged(p, eq.cov, base, "numerical", exact=False, glob=False, rate=None,
                              equilibrium=eq, loc=loc, final_cov=final, horizon=horizon,
                              reason=f"{label} integration to t = {horizon:.6g} ends inside a "
                                     f"sublevel set of the Lyapunov function hᵀPh certified to "
                                     f"lie in the basin of the stable equilibrium of rank "
                                     f"{eq.rank} (local certificate plus bounded integration).")
    scale = float(max(np.linalg.norm(cov0), np.linalg.norm(final)))
    # the nearest first: a far-off equilibrium within CLOSE_RTOL of a large state is not the one
    # the state approaches
    for eq in sorted(candidates, key=lambda e: float(np.linalg.norm(final - e.cov))):
        gap_end = np.linalg.norm(final - eq.cov)
        if _approaches(eq.cov, mid, final, CLOSE_RTOL, scale):
            return _converged(p, eq.cov, base, "numerical", exact=False, glob=False, rate=None,
                              equilibrium=eq, local=False, final_cov=final, horizon=horizon,
                              reason=f"{label} integration to t = {horizon:.6g} approaches the "
                                     f"equilibrium of rank {eq.rank} (distance {gap_end:.2g}, "
                                     f"halved since t/2), but no Lyapunov sublevel set around it "
                                     f"is certified to hold the final state (it may be unstable "
                                     f"off the rank-{psd_rank(cov0)} stratum, which Σ keeps).")
    if _grows(cov0, mid, final, blow_scale):
        # the segments depend on where the run was stopped: the evidence is the run that
        # check() replays, Σ at horizon/2 and at the horizon (`integration._replay_run`)
        again = _replayed_run(p, cov0, horizon, scalar, sigma)
        if again.failure is not None or again.blowup_time is not None:
            return None
        mid, final = again.mid, again.final
    tr0, trm, trf = np.trace(cov0), np.trace(mid), np.trace(final)
    if _grows(cov0, mid, final, blow_scale):
        rate = float(np.log(trf / trm) / (horizon / 2))
        return Certificate("grows", None, None, rate, None, False, False,
                           f"{label} integration to t = {horizon:.6g}: tr Σ grew by "
                           f"{trf / tr0:.3g} at an exponential rate ≈ {rate:.3g} without a "
                           f"finite-time blow-up (numerical evidence).", horizon=horizon,
                           final_cov=final, **base)
    return None


def _replayable_end(p: Params, cov0: np.ndarray, run: _Run, scalar: bool,
                    sigma: float) -> tuple[float, np.ndarray]:
    """The evidence of an integration that failed at run.t_end: (t_end, Σ(t_end)) from the run
    that check() replays (`integration._replay_run`; a stiff or erratic flow integrated in other
    segments need not agree with the failed run's own state), or (0, Σ0) when that run fails
    before t_end too."""
    if run.t_end == 0:
        return 0.0, cov0
    again = _replayed_run(p, cov0, run.t_end, scalar, sigma)
    if again.failure is not None or again.blowup_time is not None:
        return 0.0, cov0
    return run.t_end, again.final


def _replayed_run(p: Params, cov0: np.ndarray, until: float, scalar: bool,
                  sigma: float) -> _Run:
    """`integration._replay_run` to `until` at certify's tolerances (those `check()` reads back
    from `_evidence_tolerance`)."""
    return _replay_run(p, cov0, until, "exact" if scalar else "rk", sigma=sigma,
                       rtol=INTEGRATION_RTOL, atol=INTEGRATION_ATOL, blowup_rtol=BLOWUP_RTOL,
                       implicit_rtol=IMPLICIT_RTOL)
