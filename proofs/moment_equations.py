"""The mean–covariance equations of SPEC §2, derived from the attention field.

    ṁ = (A + V) m + V Σ B m + b,    Σ̇ = A Σ + Σ Aᵀ + V Σ B Σ + Σ Bᵀ Σ Vᵀ

Proved: the element-wise derivation (Isserlis expectations of the derived field) minus SPEC §2
simplifies to 0 for d = 1, 2, 3; the dimension-free derivation equals SPEC §2 as matrix
expressions (any d); the two derivations agree entry by entry (d = 2); for a general affine
field X = Mx + c the engine returns E[X] = Mm + c and Σ̇ = MΣ + ΣMᵀ, exact=True, while a
quadratic field is flagged exact=False.
"""

from __future__ import annotations

import sys
from functools import partial

import sympy as sp

from riccati_tf.symbolic import (
    derive_moment_equations,
    explicit_matrix_form,
    gaussian_symbols,
    spec_matrix_equations,
    spec_moment_equations,
    transformer_system,
)
from riccati_tf.symbolic.symbols import symbol_matrix, symbol_vector

from ._verify import holds, main, matrix_equal, symbolic_zero


def claim_spec_elements(d: int, heads: int = 1):
    s = transformer_system(d, heads=heads)
    dm, dS = spec_moment_equations(d, heads)
    tag = f"d = {d}" + (f", heads = {heads}" if heads > 1 else "")
    return [symbolic_zero(f"derived ṁ − SPEC §2 = 0 ({tag})", s.dmean - dm,
                          method=f"symbolic, {tag}"),
            symbolic_zero(f"derived Σ̇ − SPEC §2 = 0 ({tag})", s.dcov - dS,
                          method=f"symbolic, {tag}")]


def claim_spec_matrix(heads: int = 1):
    s = transformer_system(8, heads=heads)
    dm, dS = spec_matrix_equations(heads)
    S = s.matrix.gaussian.cov
    tag = f" (heads = {heads})" if heads > 1 else ""
    return [matrix_equal(f"matrix-form ṁ = SPEC §2{tag}", s.matrix.dmean, dm, symmetric=[S]),
            matrix_equal(f"matrix-form Σ̇ = SPEC §2{tag}", s.matrix.dcov, dS, symmetric=[S])]


def claim_forms_agree(d: int, heads: int = 1):
    s = transformer_system(d, heads=heads)
    dm, dS = explicit_matrix_form(s)
    return symbolic_zero(f"matrix form written out = element-wise derivation (d = {d})",
                         sp.Matrix([*(dm - s.dmean), *(dS - s.dcov)]), method=f"symbolic, d = {d}")


def claim_affine_field(d: int):
    g = gaussian_symbols(d)
    M, c = symbol_matrix("M", d, d), symbol_vector("c", d)
    s = derive_moment_equations(M * g.x + c, d)
    return [symbolic_zero(f"affine X = Mx + c: E[X] = Mm + c (d = {d})", s.dmean - M * g.mean - c,
                          method=f"Isserlis, symbolic, d = {d}"),
            symbolic_zero(f"affine X: E[(x−m)Xᵀ] + E[X(x−m)ᵀ] = MΣ + ΣMᵀ (d = {d})",
                          s.dcov - M * g.cov - g.cov * M.T, method=f"Isserlis, symbolic, d = {d}"),
            holds(f"affine X is flagged exact (d = {d})", s.exact, method="structural")]


def claim_quadratic_field():
    g = gaussian_symbols(1)
    x, m, S = g.x[0], g.mean[0], g.cov[0, 0]
    s = derive_moment_equations([-x ** 3], 1)
    return [symbolic_zero("X = −x³: ṁ = −(m³ + 3mσ) (Isserlis)", s.dmean[0] + m ** 3 + 3 * m * S,
                          method="Isserlis, symbolic, d = 1"),
            symbolic_zero("X = −x³: Σ̇ = −6σ(m² + σ) (Isserlis)", s.dcov[0] + 6 * S * (m ** 2 + S),
                          method="Isserlis, symbolic, d = 1"),
            holds("a non-affine field is flagged exact=False (Gaussian closure)", not s.exact,
                  method="structural")]


CLAIMS = (
    *(partial(claim_spec_elements, d) for d in (1, 2, 3)),
    claim_spec_matrix,
    partial(claim_forms_agree, 2),
    partial(claim_forms_agree, 3),
    *(partial(claim_affine_field, d) for d in (1, 2, 3)),
    claim_quadratic_field,
)

if __name__ == "__main__":
    sys.exit(main(CLAIMS, __doc__))
