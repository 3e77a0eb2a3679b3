"""Gaussian invariance of dot-product (softmax) attention, SPEC §2.

For y ~ N(m, Σ) the law ∝ e^{⟨w, y⟩} N(y; m, Σ) is N(m + Σw, Σ); with w = Bx the attention
average is m + ΣBx, affine in x, so the field X(x) = Ax + b + V(m + ΣBx) maps Gaussians to
Gaussians and the moment equations are exact.

Proved: the engine's log-MGF (completed square) against the integral; the completed square
(the log-density difference is constant in y) symbolically for d = 1, 2, 3; the tilted mean
against the Isserlis series of E[y e^{ε⟨w,y⟩}] order by order in ε; affinity of the derived
field (d = 1, 2, 3 and matrix form).
"""

from __future__ import annotations

import sys
from functools import partial
from math import factorial

import sympy as sp

from riccati_tf.symbolic import (
    expectation,
    gaussian_symbols,
    log_mgf,
    matrix_gaussian,
    tilt,
    transformer_system,
)
from riccati_tf.symbolic.symbols import DIM, symbol_vector

from ._verify import holds, main, matrix_equal, symbolic_zero


def claim_log_mgf():
    """The engine's log-MGF (completed square) against the integral itself (d = 1)."""
    w, u = sp.Symbol("w", real=True), sp.Symbol("u", real=True)
    s = sp.Symbol("s", positive=True)
    density = sp.exp(-u ** 2 / (2 * s ** 2)) / (sp.sqrt(2 * sp.pi) * s)
    integral = sp.integrate(sp.exp(w * u) * density, (u, -sp.oo, sp.oo), conds="none")
    engine = log_mgf([w], sp.Matrix([0]), sp.Matrix([[s ** 2]]))
    return symbolic_zero("log-MGF of N(0, s²) = w²s²/2 (engine vs integral)",
                         sp.exp(engine) - integral.rewrite(sp.erf),
                         method="symbolic, d = 1 (by integration)")


def _log_density(y, mean, precision):
    r = y - mean
    return -(r.T * precision * r)[0, 0] / 2


def claim_completed_square(d: int):
    """log N(y; m, Σ) + ⟨w, y⟩ − log N(y; m', Σ') is constant in y for (m', Σ') = tilt(...)."""
    g = gaussian_symbols(d)
    y, w = symbol_vector("y", d), symbol_vector("w", d)
    m1, S1 = tilt((w.T * y)[0, 0], list(y), g.mean, g.cov)
    P = sp.Matrix(g.cov).inv()
    diff = _log_density(y, g.mean, P) + (w.T * y)[0, 0] - _log_density(y, m1, P)
    return [symbolic_zero(f"tilted law has Σ' = Σ (d = {d})", sp.Matrix(S1) - g.cov),
            symbolic_zero(f"completed square: ∇_y[log-density difference] = 0 (d = {d})",
                          sp.Matrix([diff.diff(v) for v in y]), method=f"symbolic, d = {d}")]


def wick_series_residual(q, y, g, order: int):
    """Coefficients of ε^k, k ≤ order, of E[y e^{εq(y)}] − m'(ε) E[e^{εq(y)}], with every
    expectation from the Isserlis engine (over g.x, which q must not contain) and m'(ε) from
    `tilt` (a Taylor series in ε)."""
    if q.has(*g.x):
        raise ValueError("q must not contain the engine's variable x")
    eps = sp.Symbol("epsilon")
    y = sp.Matrix(y)
    m_eps = tilt(eps * q, list(y), g.mean, g.cov)[0]
    coeffs = [sp.Matrix([sp.series(e, eps, 0, order + 1).removeO().coeff(eps, j) for e in m_eps])
              for j in range(order + 1)]
    sub = dict(zip(y, g.x, strict=True))
    qx = q.xreplace(sub)
    res = []
    for k in range(order + 1):
        Ay = sp.Matrix([expectation(g.x[i] * qx ** k, g) for i in range(g.d)]) / factorial(k)
        Bk = [expectation(qx ** j, g) / factorial(j) for j in range(k + 1)]
        res.append(Ay - sum((coeffs[j] * Bk[k - j] for j in range(k + 1)), sp.zeros(g.d, 1)))
    return sp.Matrix.vstack(*res)


def claim_wick_series(d: int, order: int):
    g = gaussian_symbols(d)
    y, w = symbol_vector("y", d), symbol_vector("w", d)
    res = wick_series_residual((w.T * y)[0, 0], y, g, order)
    return symbolic_zero(f"E[y e^(ε⟨w,y⟩)] = (m + εΣw) E[e^(ε⟨w,y⟩)] to O(ε^{order}) (d = {d})",
                         res, method=f"Isserlis series, symbolic, d = {d}")


def claim_field_affine(d: int):
    s = transformer_system(d)
    X, xs = s.field, list(s.gaussian.x)
    hess = sp.Matrix([X[i].diff(a, b) for i in range(d) for a in xs for b in xs])
    return [symbolic_zero(f"derived field is affine in x: ∂²X/∂x² = 0 (d = {d})", hess),
            holds(f"derive_moment_equations flags exact=True (d = {d})", s.exact,
                  method="structural")]


def claim_matrix_form():
    g = matrix_gaussian()
    y, B = sp.MatrixSymbol("y", DIM, 1), sp.MatrixSymbol("B", DIM, DIM)
    m1, _ = tilt((B * g.x).T * y, y, g.mean, g.cov)
    s = transformer_system(8)
    A, (V, B1) = s.matrix_layer.A, s.matrix_layer.heads[0]
    return [matrix_equal("tilted mean = m + ΣBx (∇_w of the log-MGF)", m1,
                         g.mean + g.cov * B * g.x, symmetric=[g.cov]),
            matrix_equal("field Jacobian J = E[∇X] = A + VΣB", s.matrix.jacobian,
                         A + V * g.cov * B1, symmetric=[g.cov]),
            holds("matrix-form field is affine: exact=True", s.exact, method="structural")]


CLAIMS = (
    claim_log_mgf,
    *(partial(claim_completed_square, d) for d in (1, 2, 3)),
    partial(claim_wick_series, 1, 6),
    partial(claim_wick_series, 2, 5),
    partial(claim_wick_series, 3, 3),
    *(partial(claim_field_affine, d) for d in (1, 2, 3)),
    claim_matrix_form,
)

if __name__ == "__main__":
    sys.exit(main(CLAIMS, __doc__))
