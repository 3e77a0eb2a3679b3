"""The flow after LayerNorm: the trace-normalised covariance flow (SPEC §13).

With F(Σ) = AΣ + ΣAᵀ + Σ_h (V_hΣB_hΣ + ΣB_hᵀΣV_hᵀ) the derived covariance right-hand side
(`transformer_system`), the normalised flow is

    Σ̇ = N(Σ) = F(Σ) − (tr F(Σ) / tr Σ) Σ.

Proved: tr N(Σ) = 0, so tr Σ is constant (symbolic, d = 2, 3); N(Σ) is the covariance
right-hand side of the recentred, rescaled field x ↦ (M − κI)x + …, κ = tr F/(2 tr Σ), i.e.
(M − κI)Σ + Σ(M − κI)ᵀ = N(Σ) (matrix form); with A = 0, F is homogeneous of degree two,
F(λΣ) = λ²F(Σ) (symbolic, d = 2, 3, two heads), and if Σ(t) solves Σ̇ = F(Σ) then
Σ̂ = cΣ/tr Σ solves dΣ̂/dt = (tr Σ/c) N(Σ̂), the normalised flow in the time dτ = (tr Σ/c) dt
(symbolic, d = 2; exact rational points, d = 3); with A ≠ 0 that time change fails (an exact
rational counterexample, d = 2), so the projection statement is one of A = 0.
"""

from __future__ import annotations

import sys
from functools import partial

import sympy as sp

from riccati_tf.symbolic import transformer_system

from ._verify import holds, main, matrix_zero, rational_zero, symbolic_zero


def _system(d: int, heads: int, drift: bool):
    """Σ (symmetric symbols), F(Σ) of the derived system, the substitution A = 0 if not drift."""
    s = transformer_system(d, heads=heads)
    S = s.gaussian.cov
    F = sp.Matrix(s.dcov)
    if not drift:
        F = F.xreplace({a: 0 for a in s.layer.A})
    return S, F


def _normalised(F: sp.Matrix, S: sp.Matrix) -> sp.Matrix:
    return F - (F.trace() / S.trace()) * S


def claim_trace_free(d: int):
    S, F = _system(d, 1, True)
    return symbolic_zero(f"tr N(Σ) = 0 (d = {d}): tr Σ is constant", _normalised(F, S).trace(),
                         method=f"symbolic, d = {d}")


def claim_recentred_field():
    M = sp.MatrixSymbol("M", 3, 3)
    S = sp.MatrixSymbol("S", 3, 3)
    kappa = sp.Symbol("kappa")
    eye = sp.Identity(3)
    F = M * S + S * M.T
    lhs = (M - kappa * eye) * S + S * (M - kappa * eye).T
    return matrix_zero("(M − κI)Σ + Σ(M − κI)ᵀ = MΣ + ΣMᵀ − 2κΣ (κ = tr F/(2 tr Σ) gives N)",
                       lhs - (F - 2 * kappa * S), symmetric=(S,))


def claim_homogeneous(d: int):
    S, F = _system(d, 2, False)
    lam = sp.Symbol("lambda", positive=True)
    scaled = F.xreplace({e: lam * e for e in set(S)})
    return symbolic_zero(f"A = 0: F(λΣ) = λ²F(Σ) (d = {d}, two heads)",
                         sp.expand(scaled - lam ** 2 * F), method=f"symbolic, d = {d}")


def _time_change_residual(d: int, drift: bool) -> sp.Matrix:
    """dΣ̂/dt − (tr Σ/c) N(Σ̂) for Σ̂ = cΣ/tr Σ along Σ̇ = F(Σ) (chain rule)."""
    S, F = _system(d, 1, drift)
    c = sp.Symbol("c", positive=True)
    s = S.trace()
    hat = c * S / s
    d_hat = c * F / s - c * S * F.trace() / s ** 2
    subs = dict(zip(list(S), list(hat), strict=True))
    F_hat = F.xreplace(subs)
    N_hat = F_hat - (F_hat.trace() / hat.trace()) * hat
    return d_hat - (s / c) * N_hat


def claim_time_change(d: int):
    residual = _time_change_residual(d, False)
    claim = (f"A = 0: Σ̂ = cΣ/tr Σ solves dΣ̂/dt = (tr Σ/c) N(Σ̂) along Σ̇ = F(Σ) (d = {d})")
    if d <= 2:
        return symbolic_zero(claim, residual, method=f"symbolic, d = {d}")
    return rational_zero(claim, residual, points=3)


def claim_drift_breaks_the_time_change():
    verdict = rational_zero("A ≠ 0: the same identity", _time_change_residual(2, True), points=1)
    return holds("A ≠ 0: Σ̂ = cΣ/tr Σ does not solve the time-changed normalised flow (d = 2)",
                 not verdict.passed, method="exact rational counterexample",
                 detail="the identity held at a rational point with A ≠ 0")


CLAIMS = (
    partial(claim_trace_free, 2),
    partial(claim_trace_free, 3),
    claim_recentred_field,
    partial(claim_homogeneous, 2),
    partial(claim_homogeneous, 3),
    partial(claim_time_change, 2),
    partial(claim_time_change, 3),
    claim_drift_breaks_the_time_change,
)

if __name__ == "__main__":
    sys.exit(main(CLAIMS, __doc__))
