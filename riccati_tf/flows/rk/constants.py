"""The constants of the Runge–Kutta flow (SPEC §2, §5): the blow-up event and its estimate,
Sundman's time and the pole stop, the packed coordinates, the work budget, the stiffness switch
and the tolerance floors. Each is documented where it is defined.
"""

from __future__ import annotations

import numpy as np

from ..exact import NEAR_BLOWUP_RTOL

__all__: list[str] = []  # RK_DEFAULT_MAX_STEPS, RK_NEAR_BLOWUP_RTOL: riccati_tf.flows.integrate

#: the rk blow-up event fires when tr Σ exceeds this factor times its starting scale
BLOWUP_GROWTH = 1e8
#: ... and is accepted as a finite-time blow-up when the quadratic (attention) terms make up at
#: least this share of d(tr Σ)/dt; the time is then T_est = t_event + tr Σ / (d tr Σ / dt),
#: uncertain by BLOWUP_EXTRAPOLATION (T_est − t_event): with the linear terms below 1 % of the
#: growth the extrapolated remaining time is off by about that share.
BLOWUP_QUADRATIC_SHARE = 0.99
BLOWUP_EXTRAPOLATION = 0.02
#: rk on a time-invariant layer runs in Sundman's time σ, dt/dσ = s_ref / tr Σ
#: (`_sundman_solve`), in which Σ ~ 1/(T* − t) grows exponentially instead of through a pole
#: (DOP853 keeps a steady step in σ, where in t its steps shrink with T* − t and about every
#: other one is rejected), from the start where the quadratic terms drive at least
#: SUNDMAN_SHARE of d tr Σ/dt > 0 at t = 0 towards a pole T_est = t + tr Σ/(d tr Σ/dt) before
#: t_final, else from the first trace event at SUNDMAN_GROWTH, 4, 16, 256, 65 536 times the
#: starting scale (the growth squared each time, while below BLOWUP_GROWTH) where they do
SUNDMAN_GROWTH = 2.0
SUNDMAN_SHARE = 0.5
#: The pole stop of a Sundman run: after each DOP853 step, with s = tr Σ and ṡ = tr Σ̇ (exact,
#: from the step's last right-hand side), T_k = t_k + r_k, r_k = s/ṡ (Newton's step on 1/s, whose
#: error is O((T* − t)^p)). The run stops at the first step k whose estimates agree over the last
#: POLE_SPAN-fold fall of the remaining time: u_k = max |T_i − T_k| over the steps i since the
#: last one with r_i ≥ POLE_SPAN r_k, plus 4 eps T_k, at most rtol·T_k, with T_k + u_k ≤ t_final
#: and the quadratic terms driving ≥ BLOWUP_QUADRATIC_SHARE of ṡ at every step of that record
#: (`_PoleWatch`). T* ∈ [t_k, T_k + u_k] (`Trajectory.blowup_bracket`). The bound: with the
#: error of Newton's estimate a power C(T* − t)^p, p ≥ 1, of the remaining time (p = 2 at a
#: simple pole of a Riccati flow, p ≈ 1.3 measured on trained-like multi-head layers, p = 1 for
#: s ~ (T* − t)^−α, α ≠ 1), |T_k − T*| = |T_j − T_k| q/(1 − q) with q = (r_k/r_j)^p ≤ 1/4, so
#: u_k ≥ 3 |T_k − T*|. The integration's own error in T* (about rtol·T*, up to a few times that)
#: comes on top
POLE_SPAN = 4.0
#: rk integrates a state (m, vec Σ) in t on its packed coordinates (m, Σ_ij for i ≤ j) from this
#: dimension on (`_Packing`): below it the two gathers per right-hand side cost more than the
#: stepper's arithmetic on the d(d − 1)/2 entries left out saves
PACK_MIN_D = 20
#: a Sundman run's steps towards a pole: relative tolerance rtol · min(SUNDMAN_LOOSEN_MAX, r_0/r)^q
#: (t's entry kept at rtol), r = tr Σ/(d tr Σ/dt) the remaining time at the last step, r_0 its
#: value where the pole stop's current record began (the quadratic terms driving the growth
#: since), q the power. Near a pole the problem itself fixes Σ at remaining time r only to about
#: rtol·T*/r relative (an error rtol·T* in T* moves it that much), and a relative error ε made
#: there moves T* by about ε·r and a later state at remaining time r' by ε·r/r'. q = 1/2
#: (SUNDMAN_LOOSEN_POWER, `flow`): these contributions still fall geometrically along the run,
#: and states and T* keep errors within a small factor of the uniform tolerance's (2–4× at rtol
#: 1e-12, tests/test_flows.py); q = 1 (a run whose only product is T*: `certify`'s evidence)
#: costs T* about rtol·r_0 at every step, about 10·rtol·T* in all on real-shape multi-head
#: layers, with 25–45 % fewer right-hand sides towards their poles than q = 0
SUNDMAN_LOOSEN_MAX = 1e4
SUNDMAN_LOOSEN_POWER = 0.5
#: rk near a blow-up after t_final: Σ(t) ~ 1/(T* − t), so an error ≈ rtol·T* in the blow-up time
#: is a relative error ≈ rtol·T*/(T* − t_final) in the end state; above this rk refuses (exact
#: refuses the same way with eps for rtol, riccati_tf.flows.exact.NEAR_BLOWUP_RTOL)
RK_NEAR_BLOWUP_RTOL = NEAR_BLOWUP_RTOL
#: default work budgets (flow's max_steps): exact — covariance steps plus mean collocation
#: steps, 2 per error-controlled sub-step (DEFAULT_MAX_STEPS, from riccati_tf.flows.exact); rk —
#: DOP853 steps, charged as
#: RK_EVALUATIONS_PER_STEP right-hand-side evaluations each (12 stages, dense output, FSAL)
RK_DEFAULT_MAX_STEPS = 20_000
RK_EVALUATIONS_PER_STEP = 16
#: DOP853 is explicit: its step is at most about RK_STABILITY / |λ| for every eigenvalue λ of
#: the linearisation (which contains 2λ(A) for the covariance): the up-front step estimate
RK_STABILITY = 8.0
#: rk integrates in the time unit 2^−k (τ = 2^k t, exact in binary) with 2^k ≥ the starting
#: rate ‖f(y0)‖∞/‖y0‖∞ when that rate exceeds RK_RATE_MAX, else in t itself (k = 0): solve_ivp's
#: event location uses an absolute time tolerance 4·eps, which a blow-up at T* ≈ 1e-21 (heads
#: of size 1e10) would not resolve
RK_RATE_MAX = 2.0 ** 20
#: "auto" leaves DOP853 for the implicit method once STIFF_STEPS consecutive steps have each
#: been shorter than STIFF_RATIO of the solution's time scale ‖y‖/‖ẏ‖ (the step size collapsing
#: against the solution's scale: the explicit method's stability, not its accuracy, sets it)
STIFF_RATIO, STIFF_STEPS = 1e-3, 100
#: the smallest trace the rk blow-up event takes the logarithm of
TINY = np.finfo(float).tiny
#: the machine epsilon: events are located to 4 EPS (as solve_ivp locates them)
EPS = np.finfo(float).eps
#: the smallest per-entry atol of the covariance (`_scaled_atol`): 1024 subnormal spacings
ATOL_FLOOR = 1024 * np.finfo(float).smallest_subnormal
