"""The regimes a certificate concludes, the tolerances of numerical premises and evidence, and the
work budgets of `certify` and `Certificate.check()` (SPEC §5–§6).

Every tolerance a numerical (exact=False) certificate used is stored under its name in
`Certificate.tolerance`; the budgets bound the work of one call: Van Loan steps of a Gramian
W(t) = ∫_0^t e^{Aᵀu}Ge^{Au}du, Brent iterations for T*, right-hand-side evaluations of one bounded
integration, and the horizon in units of the fastest rate max(‖A‖₂, c‖Σ0‖₂).
"""

from __future__ import annotations

import numpy as np

__all__ = ["BALL_AIM", "BALL_CHECKS", "BALL_RTOL", "BALL_SHORTEST", "BASIN_SAFETY",
           "BLOWUP_CHECK_RTOL", "BOUND_RTOL", "BRENT_MAXITER", "CLOSE_RTOL", "EPS",
           "EVIDENCE_FIELDS", "EVIDENCE_TOLERANCE", "EXACT_CHECK_MAX_D", "EXACT_MAX_D",
           "FIRST_ROOT_MAX_STEPS",
           "GROWTH_FACTOR", "GROWTH_STOP", "HORIZON_DOUBLINGS", "HORIZON_RATES",
           "IMPLICIT_GROWTH_STOP", "IMPLICIT_RTOL", "IMPLICIT_SEGMENTS",
           "MAX_GRAMIAN_STEPS", "MAX_GROWTH", "MAX_IMPLICIT_STEPS", "MAX_NORM_TIME",
           "MAX_RHS_EVALUATIONS", "P_BITS",
           "RANGE_RTOL", "REGIMES", "ROUNDING_ULPS", "SEGMENT_NORM_TIME", "SEMISIMPLE_RTOL",
           "SIGN_RTOL", "STATE_SCALE_BITS", "THRESHOLD_RTOL"]


#: the regimes a certificate can conclude, in `Certificate.regime`
REGIMES = ("converges", "collapses", "blows_up", "grows", "bounded", "undetermined")
#: the optional evidence fields of a `Certificate` (None when the regime and theorem do not use
#: them); the verifier of each theorem says which it sets
EVIDENCE_FIELDS = ("equilibrium", "lyapunov", "rate", "blowup_time", "lyapunov_rhs", "operator",
                   "blowup_direction", "threshold", "horizon", "final_cov", "basin",
                   "kantorovich_radius", "bound", "path_error")
EPS = float(np.finfo(float).eps)
#: premises are decided exactly (rational arithmetic on the floats as given) up to this d; beyond
#: it, and for value matrices that are scalar only within SCALAR_RTOL or a Σ0 that is PSD only
#: within validation's PSD_RTOL, they are decided numerically with the tolerances below
EXACT_MAX_D = 6
#: numerical premises — G counts as semidefinite when its eigenvalues of the wrong sign are
#: ≤ SIGN_RTOL · max |λ(G)|
SIGN_RTOL = 1e-12
#: numerical premise of "psd_marginal": an eigenvalue λ of A on the axis is semisimple when
#: A − (i Im λ) I has as many singular values ≤ SEMISIMPLE_RTOL ‖A‖_F as there are eigenvalues of A
#: within SEMISIMPLE_RTOL ‖A‖_F of λ
SEMISIMPLE_RTOL = 1e-8
#: |λ_max(W∞Σ0) − 1| ≤ THRESHOLD_RTOL is the borderline of the G ⪯ 0, Hurwitz-A theorem
THRESHOLD_RTOL = 1e-8
#: range Σ0 ⊂ stable subspace S when ‖(I − Π_S) L0‖_F ≤ RANGE_RTOL ‖L0‖_F (Σ0 = L0 L0ᵀ)
RANGE_RTOL = 1e-8
#: numerical horizons: HORIZON_RATES time constants 1/min|Re λ(A)|, at most MAX_NORM_TIME over
#: the rate scale max(‖A‖₂, c‖Σ0‖₂)
HORIZON_RATES = 40.0
MAX_NORM_TIME = 3000.0
HORIZON_DOUBLINGS = 2
#: segments have ‖A‖₂ · length ≤ SEGMENT_NORM_TIME: the linear part alone grows tr Σ by at most
#: e^{2·8} < 1e8 per segment, below the growth that triggers `flow`'s blow-up test
SEGMENT_NORM_TIME = 8.0
#: a bounded integration stops once tr Σ leaves [min(tr Σ0, blow-up scale) / GROWTH_STOP,
#: GROWTH_STOP · max(tr Σ0, blow-up scale)] (`_blowup_scale`)
GROWTH_STOP = 1e12
#: ... and never beyond MAX_GROWTH · GROWTH_STOP · tr Σ0 (far from overflow)
MAX_GROWTH = 1e100
#: work limit of one bounded Runge–Kutta integration (right-hand-side evaluations)
MAX_RHS_EVALUATIONS = 60_000
#: ... and, where DOP853's steps collapse (a stiff flow), at most this many Rodas4 steps at
#: relative tolerance IMPLICIT_RTOL (`integration._Integrator`)
MAX_IMPLICIT_STEPS = 1500
IMPLICIT_RTOL = 1e-7
#: ... in segments IMPLICIT_SEGMENTS times shorter, stopping (bounded) once tr Σ passes
#: IMPLICIT_GROWTH_STOP · max(tr Σ0, blow-up scale)
IMPLICIT_SEGMENTS = 4
IMPLICIT_GROWTH_STOP = 1e7
#: "grows": tr Σ(T) ≥ GROWTH_FACTOR · tr Σ0 and still increasing exponentially
GROWTH_FACTOR = 1e6
#: numerical convergence onto an equilibrium without a Lyapunov set: distance ≤ CLOSE_RTOL scale
CLOSE_RTOL = 1e-6
#: the certified basin uses this fraction of the largest admissible level ρ
BASIN_SAFETY = 0.5
#: general V beyond d = 30: the state is first tested against the attracting ball of
#: `_attracting_ball` after 1/BALL_CHECKS of an integration segment, later ones at most that far
#: apart and at least 1/BALL_SHORTEST of it, each aimed at the time when the distance to Σ*
#: reaches BALL_AIM times the ball's radius
BALL_CHECKS = 4
BALL_SHORTEST = 16
BALL_AIM = 0.8
#: ... integrating at this relative tolerance (flow's absolute one): the ball's radius is
#: BASIN_SAFETY times the attracting one, so an error of this relative size in Σ cannot move a
#: state from inside the ball to outside the attracting region (tests/test_certificates.py
#: compares the final state with DOP853 at rtol 1e-13)
BALL_RTOL = 1e-6
#: the zero ball (`_ZeroBall`) takes μ and λ_min(P) this many d·eps (relative to the norms of
#: their products) below the computed values: the rounding of AᵀP + PA and of a symmetric
#: eigensolver, with a wide berth
ROUNDING_ULPS = 64
#: check(): blow-up sign change of λ_min(I + L0ᵀW(t)L0) within T*(1 ± BLOWUP_CHECK_RTOL)
BLOWUP_CHECK_RTOL = 1e-7
#: check(): a replayed integration agrees with the stored final state to REPLAY_RTOL relative
#: (of max(‖Σ_final‖_F, ‖Σ0‖_F · tiny)), a general-V T* with the replay's to BLOWUP_CHECK_RTOL,
#: and a scalar-V blow-up direction with the closed form's to DIRECTION_RTOL (1 − |cos ∠|)
REPLAY_RTOL = 1e-4
DIRECTION_RTOL = 1e-6
#: the Runge–Kutta tolerances of the numerical evidence: rtol three times `flow`'s default, far
#: below what the evidence needs (T* stated to BLOWUP_CHECK_RTOL, states held inside basins with
#: margins of CLOSE_RTOL and more) and tight enough that T* stays within 1e-8 of DOP853 at rtol
#: 1e-12 where the flow amplifies early errors tenfold (benchmarks.certify's blow-up case:
#: 4.5e-9 here, 1.0e-8 at rtol 1e-9; tests/test_certificates.py); the steps towards a pole loosen
#: it as T* allows (flows.rk.constants.SUNDMAN_LOOSEN_MAX)
INTEGRATION_RTOL = 3e-10
INTEGRATION_ATOL = 1e-12
#: the relative width to which the Runge–Kutta evidence brackets a general-V T* (the pole stop,
#: flows.rk.constants.POLE_SPAN)
BLOWUP_RTOL = 1e-9
#: the power of the evidence's tolerance schedule towards a pole (flows.rk.constants.
#: SUNDMAN_LOOSEN_MAX): 1, the schedule for a run whose only product there is T*
BLOWUP_LOOSEN_POWER = 1.0
#: the tolerances of numerical evidence (`Certificate.tolerance`) and the values `certify` uses:
#: the integration's relative and absolute tolerances (integration_rtol is BALL_RTOL in an
#: attracting-ball run), the width of its bracket of T*, its Rodas4 continuation's rtol,
#: CLOSE_RTOL of an approach without a Lyapunov set, the basin's safety fraction and the growth
#: factor of "grows"
EVIDENCE_TOLERANCE = {"integration_rtol": INTEGRATION_RTOL, "integration_atol": INTEGRATION_ATOL,
                      "blowup_rtol": BLOWUP_RTOL, "implicit_rtol": IMPLICIT_RTOL,
                      "close_rtol": CLOSE_RTOL, "basin_safety": BASIN_SAFETY,
                      "growth_factor": GROWTH_FACTOR}
#: check() in exact rational arithmetic up to this d
EXACT_CHECK_MAX_D = 6
#: work budgets: Van Loan steps of one Gramian W(t) (T* search and its check), and Brent
#: iterations locating T* inside one step
MAX_GRAMIAN_STEPS = 4096
#: check(): grid steps of `blowup.positive_until`, which proves λ_min(I + L0ᵀW(t)L0) > 0 before
#: a stated T* (that T* is the first root)
FIRST_ROOT_MAX_STEPS = 20_000
BRENT_MAXITER = 200
#: "bounded": the stated bound on λ_max(Σ(t)) is λ_max(SΣ0)/λ_min(S) times (1 + BOUND_RTOL/2),
#: and check() accepts it within BOUND_RTOL of its recomputation
BOUND_RTOL = 1e-8
#: Runge–Kutta integrations measure Σ in a power of two σ when the natural scale ‖A‖₂/c (or, for a
#: blow-up from a huge start, ‖Σ0‖₂) lies beyond 2^±STATE_SCALE_BITS (`blowup.state_scale`)
STATE_SCALE_BITS = 60
#: P is rounded to integers after scaling its largest entry to about 2^P_BITS
P_BITS = 52
