"""Exact propagation through discrete residual layers x⁺ = x + τX(x) (SPEC §2).

With the derived field X(x) = Mx + c, M = A + VΣB, c = b + Vm, a layer maps N(m, Σ) to

    m⁺ = (I + τM) m + τc,    Σ⁺ = (I + τM) Σ (I + τM)ᵀ,

and the image is again Gaussian (an affine image of a Gaussian).

Proved with the Isserlis engine applied to x⁺ = x + τX(x) itself: the mean and covariance
(symbolic, d = 1, 2, 3), and Gaussianity via the vanishing fourth cumulant of every linear
functional ⟨a, x⁺⟩ (symbolic, d = 1, 2); the matrix form m⁺, Σ⁺ from the Jacobian (any d).
"""

from __future__ import annotations

import sys
from functools import partial

import sympy as sp

from riccati_tf.symbolic import expectation, transformer_system
from riccati_tf.symbolic.symbols import symbol_vector

from ._verify import main, matrix_equal, symbolic_zero

tau = sp.Symbol("tau", positive=True)


def _layer(d: int):
    s = transformer_system(d)
    g, L = s.gaussian, s.layer
    (V, B), = L.heads
    M, c = L.A + V * g.cov * B, L.b + V * g.mean
    return s, g, sp.Matrix(g.x + tau * s.field), sp.Matrix(M), sp.Matrix(c)


def claim_moments(d: int):
    _, g, xp, M, c = _layer(d)
    F = sp.eye(d) + tau * M
    mean = sp.Matrix([expectation(e, g) for e in xp])
    second = sp.Matrix(d, d, lambda i, j: expectation(xp[i] * xp[j], g))
    cov = second - mean * mean.T
    return [symbolic_zero(f"E[x⁺] = (I + τM)m + τc (d = {d})", mean - F * g.mean - tau * c,
                          method=f"Isserlis, symbolic, d = {d}"),
            symbolic_zero(f"Cov[x⁺] = (I + τM)Σ(I + τM)ᵀ (d = {d})", cov - F * g.cov * F.T,
                          method=f"Isserlis, symbolic, d = {d}")]


def claim_gaussian_image(d: int):
    _, g, xp, M, c = _layer(d)
    a = symbol_vector("a", d)
    F = sp.eye(d) + tau * M
    u = (a.T * (xp - F * g.mean - tau * c))[0, 0]  # ⟨a, x⁺ − m⁺⟩
    kappa4 = expectation(u ** 4, g) - 3 * expectation(u ** 2, g) ** 2
    return symbolic_zero(f"fourth cumulant of ⟨a, x⁺⟩ vanishes (d = {d})", kappa4,
                         method=f"Isserlis, symbolic, d = {d}")


def claim_matrix_form():
    s = transformer_system(8)
    mf = s.matrix
    g = mf.gaussian
    Id = sp.Identity(g.x.shape[0])
    F = Id + tau * mf.jacobian
    A, b, ((V, B),) = s.matrix_layer.A, s.matrix_layer.b, s.matrix_layer.heads
    layer_mean = g.mean + tau * mf.mean_rate  # E[x + τX(x)] = m + τE[X]
    spec_mean = (Id + tau * (A + V * g.cov * B)) * g.mean + tau * (b + V * g.mean)
    # Cov[x + τX] = Σ + τ(E[(x−m)Xᵀ] + E[X(x−m)ᵀ]) + τ²Cov[X], Cov[X] = JΣJᵀ for affine X
    layer_cov = g.cov + tau * mf.dcov + tau ** 2 * mf.jacobian * g.cov * mf.jacobian.T
    return [matrix_equal("m⁺ = m + τṁ = (I + τM)m + τc", layer_mean, spec_mean,
                         symmetric=[g.cov]),
            matrix_equal("Σ⁺ = Σ + τΣ̇ + τ²JΣJᵀ = (I + τM)Σ(I + τM)ᵀ", layer_cov,
                         F * g.cov * F.T, symmetric=[g.cov])]


CLAIMS = (
    *(partial(claim_moments, d) for d in (1, 2, 3)),
    *(partial(claim_gaussian_image, d) for d in (1, 2)),
    claim_matrix_form,
)

if __name__ == "__main__":
    sys.exit(main(CLAIMS, __doc__))
