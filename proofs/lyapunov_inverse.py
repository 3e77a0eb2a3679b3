"""Scalar value matrices: the covariance equation is a Riccati equation and P = Σ⁻¹ is linear
(SPEC §5).

With V_h = v_h I and G = −Σ_h v_h (B_h + B_hᵀ) the derived covariance equation is

    Σ̇ = AΣ + ΣAᵀ − ΣGΣ,

and P = Σ⁻¹ obeys the linear Lyapunov ODE Ṗ = −AᵀP − PA + G; with AᵀP* + P*A = G the deviation
Δ = P − P* obeys Δ̇ = −AᵀΔ − ΔA, so P(t) − P* = e^{−Aᵀt}(P0 − P*)e^{−At}.

Proved: the derived system with V = vI minus the Riccati form simplifies to 0 (symbolic,
d = 1, 2, 3; two heads d = 2) and as matrix expressions; Ṗ = −PΣ̇P = −AᵀP − PA + G as matrix
expressions (any d) and element-wise (symbolic, d = 2); the Δ equation (matrix form).
"""

from __future__ import annotations

import sys
from functools import partial

import sympy as sp

from riccati_tf.symbolic import transformer_system
from riccati_tf.symbolic.symbols import DIM, symbol_matrix

from ._verify import main, matrix_equal, matrix_zero, symbolic_zero, time_derivative


def claim_riccati_form(d: int, heads: int = 1):
    s = transformer_system(d, heads=heads)
    g, L = s.gaussian, s.layer
    vs = sp.symbols(f"v1:{heads + 1}", real=True)
    scalar = {}
    G = sp.zeros(d, d)
    for v, (V, B) in zip(vs, L.heads, strict=True):
        scalar.update({V[i, j]: (v if i == j else 0) for i in range(d) for j in range(d)})
        G -= v * (sp.Matrix(B) + sp.Matrix(B).T)
    A, S = sp.Matrix(L.A), sp.Matrix(g.cov)
    riccati = A * S + S * A.T - S * G * S
    tag = f"d = {d}" + (f", heads = {heads}" if heads > 1 else "")
    return symbolic_zero(f"derived Σ̇ with V_h = v_h I equals AΣ + ΣAᵀ − ΣGΣ ({tag})",
                         sp.Matrix(s.dcov).xreplace(scalar) - riccati, method=f"symbolic, {tag}")


def claim_riccati_matrix():
    s = transformer_system(8)
    S, A, ((V, B),) = s.matrix.gaussian.cov, s.matrix_layer.A, s.matrix_layer.heads
    v = sp.Symbol("v", real=True)
    G = -v * (B + B.T)
    return matrix_equal("derived Σ̇ with V = vI equals AΣ + ΣAᵀ − ΣGΣ",
                        s.matrix.dcov.xreplace({V: v * sp.Identity(DIM)}),
                        A * S + S * A.T - S * G * S, symmetric=[S])


def _riccati_symbols():
    S, A, G = (sp.MatrixSymbol(n, DIM, DIM) for n in ("Sigma", "A", "G"))
    return S, A, G, A * S + S * A.T - S * G * S


def claim_inverse_matrix():
    S, A, G, F = _riccati_symbols()
    P = sp.Inverse(S)
    Pdot = time_derivative(P, {S: F})
    return matrix_equal("P = Σ⁻¹: Ṗ = −AᵀP − PA + G", Pdot, -A.T * P - P * A + G,
                        symmetric=[S, G])


def claim_inverse_elements(d: int):
    S, A, G = (symbol_matrix("S", d, d, symmetric=True), symbol_matrix("A", d, d),
               symbol_matrix("G", d, d, symmetric=True))
    P = S.inv()
    Sdot = A * S + S * A.T - S * G * S
    return symbolic_zero(f"P = Σ⁻¹: −PΣ̇P = −AᵀP − PA + G (d = {d})",
                         -P * Sdot * P - (-A.T * P - P * A + G), method=f"symbolic, d = {d}")


def claim_deviation():
    A, G, P, Ps = (sp.MatrixSymbol(n, DIM, DIM) for n in ("A", "G", "P", "P_star"))
    Pdot = -A.T * P - P * A + G
    Delta_dot = Pdot.xreplace({G: A.T * Ps + Ps * A})  # G = AᵀP* + P*A
    return matrix_zero("Δ = P − P*: Δ̇ = −AᵀΔ − ΔA when AᵀP* + P*A = G",
                       Delta_dot - (-A.T * (P - Ps) - (P - Ps) * A))


CLAIMS = (
    *(partial(claim_riccati_form, d) for d in (1, 2, 3)),
    partial(claim_riccati_form, 2, 2),
    claim_riccati_matrix,
    claim_inverse_matrix,
    partial(claim_inverse_elements, 2),
    claim_deviation,
)

if __name__ == "__main__":
    sys.exit(main(CLAIMS, __doc__))
