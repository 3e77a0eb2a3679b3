"""Rank invariance (SPEC §3): Σ(t) = Φ(t) Σ0 Φ(t)ᵀ with Φ̇ = M(Σ(t)) Φ, Φ(0) = I.

Proved: the ansatz solves the derived covariance ODE Σ̇ = AΣ + ΣAᵀ + VΣBΣ + ΣBᵀΣVᵀ — as matrix
expressions with the product rule (any d, one and two heads) and element-wise (symbolic d = 2,
exact rational points d = 3); Jacobi/Liouville d(det Φ)/dt = tr(M) det Φ (symbolic d = 2, 3), so
det Φ(t) = exp∫tr M ≠ 0, Φ stays invertible and rank Σ(t) = rank Σ0; the stratum
{Σ ⪰ 0 : rank Σ = r} has dimension rd − r(r−1)/2 (rank of the differential of L ↦ LLᵀ at
random rational L, exact, d ≤ 4).
"""

from __future__ import annotations

import random
import sys
from functools import partial

import sympy as sp

from riccati_tf.symbolic import transformer_system
from riccati_tf.symbolic.symbols import DIM, symbol_matrix

from ._verify import (
    holds,
    main,
    matrix_zero,
    rational_zero,
    symbolic_zero,
    time_derivative,
)


def claim_matrix_form(heads: int = 1):
    """The derived covariance equation Σ̇ = JΣ + ΣJᵀ, J = A + Σ_h V_h Σ B_h, along the ansatz."""
    s = transformer_system(8, heads=heads)
    S = s.matrix.gaussian.cov
    Phi, S0 = sp.MatrixSymbol("Phi", DIM, DIM), sp.MatrixSymbol("Sigma_0", DIM, DIM)
    Sigma = Phi * S0 * Phi.T
    M = s.matrix.jacobian.xreplace({S: Sigma})
    lhs = time_derivative(Sigma, {Phi: M * Phi})
    return matrix_zero(f"d(ΦΣ0Φᵀ)/dt = F(ΦΣ0Φᵀ) when Φ̇ = MΦ (heads = {heads})",
                       lhs - s.matrix.dcov.xreplace({S: Sigma}), symmetric=[S0])


def _elementwise(d: int):
    s = transformer_system(d)
    g = s.gaussian
    A, ((V, B),) = sp.Matrix(s.layer.A), s.layer.heads
    V, B = sp.Matrix(V), sp.Matrix(B)
    Phi, S0 = symbol_matrix("Phi", d, d), symbol_matrix("S0", d, d, symmetric=True)
    Sigma = Phi * S0 * Phi.T
    on_ansatz = {g.cov[i, j]: Sigma[i, j] for i in range(d) for j in range(i, d)}
    Phidot = (A + V * Sigma * B) * Phi
    lhs = Phidot * S0 * Phi.T + Phi * S0 * Phidot.T
    return lhs - sp.Matrix(s.dcov).xreplace(on_ansatz)


def claim_elementwise(d: int, exact_points: bool = False):
    res = _elementwise(d)
    name = f"d(ΦΣ0Φᵀ)/dt = F(ΦΣ0Φᵀ) element-wise (d = {d})"
    return rational_zero(name, res) if exact_points else symbolic_zero(name, res,
                                                                       method=f"symbolic, d = {d}")


def claim_liouville(d: int):
    Phi, M = symbol_matrix("Phi", d, d), symbol_matrix("M", d, d)
    Phidot = M * Phi
    det = Phi.det()
    ddet = sum(det.diff(Phi[i, j]) * Phidot[i, j] for i in range(d) for j in range(d))
    return symbolic_zero(f"d(det Φ)/dt = tr(M) det Φ (d = {d})", ddet - M.trace() * det,
                         method=f"symbolic, d = {d}")


def claim_stratum_dimension(dmax: int = 4, seed: int = 3):
    rng = random.Random(seed)
    bad = []
    for d in range(1, dmax + 1):
        for r in range(1, d + 1):
            Lsym = sp.Matrix(d, r, lambda i, j: sp.Symbol(f"l_{i}_{j}"))
            S = Lsym * Lsym.T
            vech = sp.Matrix([S[i, j] for i in range(d) for j in range(i, d)])
            jac = vech.jacobian(list(Lsym))
            point = {s: sp.Rational(rng.randint(-9, 9), rng.randint(1, 5)) for s in Lsym}
            rank = jac.xreplace(point).rank()
            if rank != r * d - r * (r - 1) // 2:
                bad.append((d, r, rank))
    return holds(f"rank-r stratum has dimension rd − r(r−1)/2 (d ≤ {dmax}, all r)", not bad,
                 method="exact rank at rational points", detail=f"(d, r, rank) = {bad}")


CLAIMS = (
    claim_matrix_form,
    partial(claim_matrix_form, 2),
    partial(claim_elementwise, 2),
    partial(claim_elementwise, 3, True),
    partial(claim_liouville, 2),
    partial(claim_liouville, 3),
    claim_stratum_dimension,
)

if __name__ == "__main__":
    sys.exit(main(CLAIMS, __doc__))
