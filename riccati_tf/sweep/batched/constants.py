"""The margins and limits of the batched classifier: where a floating-point decision is taken
for the exact one, and the work budgets of its searches."""

from __future__ import annotations

import numpy as np

__all__: list[str] = []


#: eigenvector matrices with a 2-norm condition number above this leave A's spectrum undecided
EIGVEC_COND_MAX = 1e8
#: `lyapunov_stack` solves a case by its eigendecomposition T = UΛU⁻¹ only when κ₂(U) is at most
#: LYAP_COND_MAX (else scipy's Bartels–Stewart solver, case by case), and none at all (NaN) when
#: some |λ_i + λ_j| ≤ LYAP_SEP_RTOL·max|λ|
LYAP_COND_MAX = 1e4
LYAP_SEP_RTOL = 1e-8
#: a convergence on numerical premises keeps its verdict when the bound ‖M‖₂κ⁴/|α| on the
#: condition number of certify's local Lyapunov matrix at Σ* (`_lyapunov_certified`) times its
#: rounding ROUNDING_ULPS n_s eps (n_s = d(d + 1)/2) is at most LYAP_CERT_RTOL
LYAP_CERT_RTOL = 1e-4
#: numerical premises on the stack (`_numerical_stack`): margins over certify's tolerances —
#: the anti-stable Gramian's reciprocal condition bound over singular_rcond, √λ_min(Σ0)/‖L0‖_F
#: over range_rtol, and a relative slack on λ_max(W∞Σ0) beyond the error bounds
UNSEEN_MARGIN = 1e6
RANGE_MARGIN = 1e3
THRESHOLD_SLACK = 1e-10
#: allowance for the backward error of a symmetric eigensolver, in units of d·eps·‖X‖₂ (LAPACK's
#: bound is a modest multiple of d·eps; 64 leaves a wide berth)
ROUNDING_ULPS = 64
#: without the heads, G's rounding is taken as G_ROUND_ULPS·eps·max(‖G‖_F, √d c): the bound of
#: `g_rounding` for up to 7 heads at d ≤ EXACT_MAX_D
G_ROUND_ULPS = 32
#: ‖A‖, ‖G‖, ‖Σ0‖ (when nonzero) outside this range: no subnormal or overflowing intermediate
#: can be ruled out cheaply, so the case goes to certify
MAGNITUDE_RANGE = (1e-100, 1e100)
#: a T* within this relative distance of the horizon, or with ‖A‖₂T* > BLOWUP_NORM_TIME (e^{At}
#: approaching overflow in certify's search), goes to certify
HORIZON_RTOL = 1e-6
BLOWUP_NORM_TIME = 500.0
#: certify's blow-up check, re-done on the stack: a sign of λ_min(I + L0ᵀW(t)L0) at
#: T*(1 ± BLOWUP_CHECK_RTOL) counts when it exceeds CHECK_MARGIN (1 + ‖L0ᵀW L0‖₂) — far above the
#: difference between the stacked and the per-case Gramians; closer calls run certify's check
CHECK_MARGIN = 1e-9
#: the blow-up march doubles its step after this many steps at one length
STEPS_PER_LEVEL = 4
#: the root in the last step is found on the eigen form of W(t) (`_EigenGramian`) where the
#: eigenvector matrix of A has κ₂ at most this (its rounding, about κ₂ eps relative, stays far
#: inside certify's check, `_check_signs`); by stacked Padé exponentials elsewhere
ROOT_EIGVEC_COND = 1e3
#: ... and finished by one Newton step on the Padé form, which must be at most POLISH_RTOL
#: relative (else that case is searched on the Padé form alone)
POLISH_RTOL = 1e-9
#: root-finding iterations on the last step (each one evaluation of the eigen or Padé form):
#: Newton steps, bisections where a Newton step would leave the bracket
MAX_ROOT_STEPS = 100
_EPS = np.finfo(float).eps
_TINY = np.finfo(float).tiny
_SUBNORMAL = 2.0 ** -1074
