"""The constants of steering: tolerances, work budgets and the limits of the problems it takes."""

from __future__ import annotations

import math

import numpy as np

__all__: list[str] = []  # the public constants: riccati_tf.reachability.steering


#: covariance rank: eigenvalues above RANK_RTOL · λ_max count
RANK_RTOL = 1e-10
#: the logarithm K of Φ1 (attention route) is accepted when ‖e^K − Φ1‖ ≤ LOG_RTOL ‖Φ1‖ (on Φ1
#: scaled to |det| ≈ 1)
LOG_RTOL = 1e-10
#: attention route: V = s(K − A), B = Σ⁺/s. The mean-field is the same for every s > 0, but a
#: finite cloud estimates the tilted mean by importance sampling with log-weight variance
#: xᵀΣ⁺x/s²; at s = 1 (SPEC §4 literally) the N = 5 000–20 000 particle moments miss the
#: mean-field by 1–3 of their Monte-Carlo standard deviations, at s = 2 by ≤ 0.65 (measured,
#: tests/test_steering.py), while larger s amplifies how initial sampling errors of the mean grow.
DEFAULT_TEMPERATURE = 2.0
#: default bound on the terminal relative error a plan must meet (`ControlPlan.verify`)
DEFAULT_TOL = 1e-8
#: shooting: weights λ of the minimum-energy continuation (evaluations allowed for each); the
#: final solve has λ = 0 (SHOOTING_NFEV evaluations)
ENERGY_WEIGHTS = (1e-2, 1e-4, 1e-6)
ENERGY_NFEV = 30
SHOOTING_NFEV = 100
#: shooting: RK4 sub-steps per piece: at least SHOOTING_SUBSTEPS, h_sub·ρ ≤ SHOOTING_THETA, at most
#: SHOOTING_MAX_SUBSTEPS; refinements (×4 sub-steps) allowed after the discrete problem is solved
SHOOTING_SUBSTEPS = 16
SHOOTING_THETA = 0.1
SHOOTING_MAX_SUBSTEPS = 1024
SHOOTING_REFINEMENTS = 2
#: work budget of one shooting solve: batched RK4 steps in all (every piece and every column of
#: the finite-difference Jacobian advance together); a 2×2 "values" problem takes 1–5·10⁴, an
#: unreachable "affine-nobias" target 7·10⁴ (9 s)
SHOOTING_MAX_STEPS = 100_000
#: the most shooting pieces (work budget of the least-squares problem, N·(p + n) unknowns)
MAX_PIECES = 64
#: the largest depth T: beyond, T, T·‖b‖ and ∫_0^τ e^{As} ds (≈ τ for small A) leave the range
#: where the plan's quantities are formed safely in float64 (T² ≤ 1e200)
MAX_HORIZON = 1e100
#: the largest dimension steered (every right-hand side costs O(d³); the state has d + d² entries)
MAX_DIMENSION = 100
#: shooting works in one frame with the covariance unit between the endpoints' norms; it refuses
#: endpoints more than 2^(2·FRAME_SPAN) apart (products Σ·Σ stay far inside float64)
FRAME_SPAN = 400
#: default tolerances of `ControlPlan.integrate`: rtol, and atol relative to the state's scale
VERIFY_RTOL = 1e-11
VERIFY_ATOL = 1e-13
#: verification sub-intervals: ‖Σ‖ changes by at most e^GROWTH_STEP = 2^20 on each, so that
#: (1) a growth driven by attention stays below the growth `flows` takes for the onset of a
#: blow-up, (2) every state of a sub-interval is representable in the frame fitted to its start
#: and atol (relative to that start) is lowered by 2^20, and (3) the rounding that the
#: full-matrix integrator leaves in Σ's antisymmetric part, which does not decay with Σ, is
#: symmetrised away at every sub-interval before it reaches eps·2^20 of ‖Σ‖. Work budget of
#: one verification: at most MAX_SUBINTERVALS sub-intervals and VERIFY_MAX_STEPS DOP853 steps
#: in all, a step of a tracking piece counting 5 (SolverError beyond: N(0, I) →
#: N(0, 1e-315 I) takes 75 sub-intervals and about 3 000 steps, 1e-300·I → 1e300·C about 6 000;
#: the budget is about 10 s of work)
GROWTH_STEP = 20 * math.log(2)
MAX_SUBINTERVALS = 200
VERIFY_MAX_STEPS = 12_000
_TINY = float(np.finfo(float).tiny)
_EPS = float(np.finfo(float).eps)
#: right-hand-side evaluations of one DOP853 step (12 stages; the error estimate reuses them)
_DOP853_EVALUATIONS = 12
