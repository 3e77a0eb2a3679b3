"""Gaussian invariance of Gaussian-kernel (L2) attention exp(−|Qx − Ky|²/2).

−|Qx − Ky|²/2 = −|Qx|²/2 + ⟨Bx, y⟩ − |Ky|²/2 with B = KᵀQ; the first term cancels in the
softmax. For y ~ N(m, Σ) the law ∝ e^{⟨Bx,y⟩ − |Ky|²/2} N(y; m, Σ) is N(m', Σ') with

    m' = (I + ΣKᵀK)⁻¹(m + ΣBx),   Σ' = (I + ΣKᵀK)⁻¹Σ,

so the attention average is affine in x and Gaussians stay Gaussian.

Proved: the kernel expansion (symbolic, d = 1, 2, 3); the completed square — the Hessian of
log N(y; m, Σ) + q(y) is −Σ'⁻¹ and its gradient vanishes at m' — symbolically for d = 1, 2 and at
exact rational points for d = 3; the tilted mean against the Isserlis series (d = 1); affinity
of the derived field; the element-wise and matrix-form derivations agree (rational points).
"""

from __future__ import annotations

import sys
from functools import partial

import sympy as sp

from riccati_tf.symbolic import (
    explicit_matrix_form,
    gaussian_symbols,
    matrix_gaussian,
    tilt,
    transformer_system,
)
from riccati_tf.symbolic.symbols import DIM, symbol_matrix, symbol_vector

from ._verify import holds, main, matrix_equal, rational_zero, symbolic_zero
from .gaussian_invariance_dot import wick_series_residual


def _setup(d, query=None):
    """Symbols and the exponent q(y) = −|Q x − K y|²/2 (query x = g.x unless given)."""
    g = gaussian_symbols(d)
    y, Q, K = symbol_vector("y", d), symbol_matrix("Q", d, d), symbol_matrix("K", d, d)
    r = Q * (g.x if query is None else query) - K * y
    return g, y, Q, K, -(r.T * r)[0, 0] / 2


def claim_kernel_expansion(d: int):
    g, y, Q, K, q = _setup(d)
    Qx, Ky = Q * g.x, K * y
    rhs = -(Qx.T * Qx)[0, 0] / 2 + ((K.T * Q * g.x).T * y)[0, 0] - (Ky.T * Ky)[0, 0] / 2
    return symbolic_zero(f"−|Qx − Ky|²/2 = −|Qx|²/2 + ⟨KᵀQx, y⟩ − |Ky|²/2 (d = {d})", q - rhs,
                         method=f"symbolic, d = {d}")


def completed_square_residuals(d: int):
    """(Σ'·(−∇²L) − I, ∇L(m')) for L(y) = log N(y; m, Σ) + q(y), q the literal L2 exponent."""
    g, y, Q, K, q = _setup(d)
    m1, S1 = tilt(q, list(y), g.mean, g.cov)
    P = sp.Matrix(g.cov).inv()
    r = y - g.mean
    L = -(r.T * P * r)[0, 0] / 2 + q
    grad = sp.Matrix([L.diff(v) for v in y])
    hess = grad.jacobian(list(y))
    at_mode = grad.xreplace(dict(zip(y, m1, strict=True)))
    return sp.Matrix(S1) * (-hess) - sp.eye(d), at_mode, (m1, S1, Q, K, g)


def claim_completed_square(d: int, exact_points: bool = False):
    cov_res, grad_res, _ = completed_square_residuals(d)
    if exact_points:
        return [rational_zero(f"tilted precision Σ'⁻¹ = Σ⁻¹ + KᵀK (d = {d})", cov_res),
                rational_zero(f"tilted mean m' is the mode: ∇L(m') = 0 (d = {d})", grad_res)]
    return [symbolic_zero(f"tilted precision Σ'⁻¹ = Σ⁻¹ + KᵀK (d = {d})", cov_res,
                          method=f"symbolic, d = {d}"),
            symbolic_zero(f"tilted mean m' is the mode: ∇L(m') = 0 (d = {d})", grad_res,
                          method=f"symbolic, d = {d}")]


def claim_wick_series(order: int):
    # the series takes expectations over x ~ N(m, Σ) in place of y: the query must be another symbol
    g, y, _, _, q = _setup(1, query=symbol_vector("u", 1))
    res = wick_series_residual(q, y, g, order)
    return symbolic_zero(f"E[y e^(εq)] = m'(ε) E[e^(εq)] to O(ε^{order}), q quadratic (d = 1)",
                         res, method="Isserlis series, symbolic, d = 1")


def claim_field_affine(d: int):
    s = transformer_system(d, kernel="l2")
    X, xs = s.field, list(s.gaussian.x)
    hess = sp.Matrix([X[i].diff(a, b) for i in range(d) for a in xs for b in xs])
    return [symbolic_zero(f"derived L2 field is affine in x (d = {d})", hess,
                          method=f"symbolic, d = {d}"),
            holds(f"exact=True for the L2 system (d = {d})", s.exact, method="structural")]


def claim_matrix_form():
    g = matrix_gaussian()
    y = sp.MatrixSymbol("y", DIM, 1)
    Q, K = sp.MatrixSymbol("Q", DIM, DIM), sp.MatrixSymbol("K", DIM, DIM)
    r = Q * g.x - K * y
    m1, S1 = tilt(-(r.T * r) / 2, y, g.mean, g.cov)
    inv = sp.Inverse(sp.Identity(DIM) + g.cov * K.T * K)
    return [matrix_equal("tilted mean = (I + ΣKᵀK)⁻¹(m + ΣKᵀQx)", m1,
                         inv * (g.mean + g.cov * K.T * Q * g.x), symmetric=[g.cov]),
            matrix_equal("tilted covariance = (I + ΣKᵀK)⁻¹Σ", S1, inv * g.cov,
                         symmetric=[g.cov]),
            holds("matrix-form L2 field is affine: exact=True",
                  transformer_system(8, kernel="l2").exact, method="structural")]


def claim_forms_agree(d: int, heads: int):
    s = transformer_system(d, heads=heads, kernel="l2")
    dm, dS = explicit_matrix_form(s)
    return rational_zero(f"element-wise = matrix-form L2 system (d = {d}, heads = {heads})",
                         sp.Matrix([*(dm - s.dmean), *(dS - s.dcov)]))


CLAIMS = (
    *(partial(claim_kernel_expansion, d) for d in (1, 2, 3)),
    partial(claim_completed_square, 1),
    partial(claim_completed_square, 2),
    partial(claim_completed_square, 3, True),
    partial(claim_wick_series, 4),
    *(partial(claim_field_affine, d) for d in (1, 2)),
    claim_matrix_form,
    partial(claim_forms_agree, 2, 1),
    partial(claim_forms_agree, 2, 2),
)

if __name__ == "__main__":
    sys.exit(main(CLAIMS, __doc__))
