"""The algebraic Bernoulli equation is a CARE with Q = 0 (SPEC §5).

Equilibria of Σ̇ = AΣ + ΣAᵀ − ΣGΣ solve AΣ + ΣAᵀ − ΣGΣ = 0, which is the continuous algebraic
Riccati equation Aᶜᵀ X + X Aᶜ − X G X + Q = 0 with Aᶜ = Aᵀ, Q = 0, X = Σ. Its Hamiltonian is
H = [[Aᶜ, −G], [−Q, −Aᶜᵀ]] = [[Aᵀ, −G], [0, −A]], and X solves the CARE iff the columns of [I; X]
span an H-invariant subspace: H[I; X] = [I; X](Aᶜ − GX) exactly when the residual vanishes.

Proved: the identity of the two residuals (matrix form, any d); the invariant-subspace identity
H[I; X] − [I; X](Aᵀ − GX) = [0; −R(X)] (symbolic, d = 2, 3); exact rational examples — the
stabilizing full-rank solution Σ* = P*⁻¹ with AᵀP* + P*A = G for an anti-stable A and G ≻ 0
(residual exactly 0, Σ* ≻ 0, A − Σ*G Hurwitz), and a mixed-spectrum A whose stabilizing solution
is singular with rank = number of unstable eigenvalues.
"""

from __future__ import annotations

import sys
from functools import partial

import sympy as sp

from riccati_tf.symbolic.symbols import DIM, symbol_matrix

from ._verify import holds, main, matrix_equal, symbolic_zero


def bernoulli(A, G, S):
    return A * S + S * A.T - S * G * S


def care(Ac, G, Q, X):
    return Ac.T * X + X * Ac - X * G * X + Q


def claim_residuals_agree():
    A, G, S = (sp.MatrixSymbol(n, DIM, DIM) for n in ("A", "G", "Sigma"))
    return matrix_equal("AΣ + ΣAᵀ − ΣGΣ = CARE residual with Aᶜ = Aᵀ, Q = 0",
                        bernoulli(A, G, S), care(A.T, G, sp.ZeroMatrix(DIM, DIM), S))


def claim_invariant_subspace(d: int):
    A, G, X = symbol_matrix("A", d, d), symbol_matrix("G", d, d, symmetric=True), \
        symbol_matrix("X", d, d, symmetric=True)
    H = sp.BlockMatrix([[A.T, -G], [sp.zeros(d), -A]]).as_explicit()
    IX = sp.Matrix.vstack(sp.eye(d), X)
    lhs = H * IX - IX * (A.T - G * X)
    rhs = sp.Matrix.vstack(sp.zeros(d), -bernoulli(A, G, X))
    return symbolic_zero(f"H[I; X] − [I; X](Aᵀ − GX) = [0; −R(X)] (d = {d})", lhs - rhs,
                         method=f"symbolic, d = {d}")


def _hurwitz(M: sp.Matrix) -> bool:
    """Exact test for a 2×2 matrix: trace < 0 and det > 0."""
    return bool(M.trace() < 0 and M.det() > 0)


def claim_stabilizing_full_rank():
    A = sp.Matrix([[2, 1], [0, 1]])  # eigenvalues 2, 1: anti-stable
    G = sp.Matrix([[2, 1], [1, 3]])  # ≻ 0
    p = sp.symbols("p11 p12 p22")
    P = sp.Matrix([[p[0], p[1]], [p[1], p[2]]])
    sol = sp.solve(list(A.T * P + P * A - G), p, dict=True)[0]
    P = P.subs(sol)
    S = P.inv()
    return [holds("exact Lyapunov solve: Σ* = P*⁻¹ solves AΣ + ΣAᵀ − ΣGΣ = 0",
                  bernoulli(A, G, S) == sp.zeros(2), method="exact rationals (d = 2)"),
            holds("Σ* ≻ 0 (leading minors)", S[0, 0] > 0 and S.det() > 0,
                  method="exact rationals (d = 2)"),
            holds("A − Σ*G is Hurwitz (stabilizing)", _hurwitz(A - S * G),
                  method="exact rationals (d = 2)")]


def claim_stabilizing_mixed():
    T = sp.Matrix([[1, 1], [0, 1]])  # change of basis
    A = T * sp.diag(1, -1) * T.inv()  # one unstable eigenvalue
    G = (T.inv()).T * sp.eye(2) * T.inv()
    S = T * sp.diag(2, 0) * T.T
    return [holds("singular Σ* = T diag(2, 0) Tᵀ solves the Bernoulli equation",
                  bernoulli(A, G, S) == sp.zeros(2), method="exact rationals (d = 2)"),
            holds("rank Σ* = 1 = number of unstable eigenvalues of A", S.rank() == 1,
                  method="exact rationals (d = 2)"),
            holds("A − Σ*G is Hurwitz (stabilizing)", _hurwitz(A - S * G),
                  method="exact rationals (d = 2)")]


CLAIMS = (
    claim_residuals_agree,
    partial(claim_invariant_subspace, 2),
    partial(claim_invariant_subspace, 3),
    claim_stabilizing_full_rank,
    claim_stabilizing_mixed,
)

if __name__ == "__main__":
    sys.exit(main(CLAIMS, __doc__))
