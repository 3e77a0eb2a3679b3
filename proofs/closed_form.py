"""The closed form of the scalar-V covariance flow (SPEC §5):

    Σ(t) = e^{At} Σ0 (I + W(t) Σ0)⁻¹ e^{Aᵀt},   W(t) = ∫_0^t e^{Aᵀs} G e^{As} ds,

solves Σ̇ = AΣ + ΣAᵀ − ΣGΣ, Σ(0) = Σ0 (valid for singular Σ0), and W is the Van Loan block:
expm([[−Aᵀ, G], [0, A]] t) = [[e^{−Aᵀt}, F], [0, e^{At}]], W = e^{Aᵀt} F.

Proved with E = e^{At} (Ė = AE, E(0) = I) and W (Ẇ = EᵀGE, W(0) = 0) as symbols: the ODE as
matrix expressions (any d) and at exact rational points (d = 2, 3); the initial value; the Van
Loan block satisfies Ẇ = EᵀGE, W(0) = 0 (matrix form) and gives W(t) explicitly for d = 1; the
square-root (push-through) form E L (I + LᵀWL)⁻¹ Lᵀ Eᵀ used by riccati_tf.flows.exact (rational
points, d = 3, rank 1 and 2); the fully explicit d = 1 solution (symbolic).
"""

from __future__ import annotations

import sys
from functools import partial

import sympy as sp

from riccati_tf.symbolic.symbols import DIM, symbol_matrix

from ._verify import main, matrix_zero, rational_zero, symbolic_zero, time_derivative


def _matrix_symbols():
    return (sp.MatrixSymbol(n, DIM, DIM) for n in ("A", "G", "Sigma_0", "E", "W", "F"))


def claim_solves_ode():
    A, G, S0, E, W, _ = _matrix_symbols()
    Sigma = E * S0 * sp.Inverse(sp.Identity(DIM) + W * S0) * E.T
    Sdot = time_derivative(Sigma, {E: A * E, W: E.T * G * E})
    return matrix_zero("Σ(t) = EΣ0(I + WΣ0)⁻¹Eᵀ solves Σ̇ = AΣ + ΣAᵀ − ΣGΣ",
                       Sdot - (A * Sigma + Sigma * A.T - Sigma * G * Sigma),
                       symmetric=[S0, G, W])


def claim_initial_value():
    _, _, S0, E, W, _ = _matrix_symbols()
    Sigma = E * S0 * sp.Inverse(sp.Identity(DIM) + W * S0) * E.T
    at0 = Sigma.xreplace({E: sp.Identity(DIM), W: sp.ZeroMatrix(DIM, DIM)})
    return matrix_zero("Σ(0) = Σ0 (E(0) = I, W(0) = 0)", at0 - S0)


def claim_solves_ode_elements(d: int):
    A, G, S0 = symbol_matrix("A", d, d), symbol_matrix("G", d, d, symmetric=True), \
        symbol_matrix("S0", d, d, symmetric=True)
    E, W = symbol_matrix("E", d, d), symbol_matrix("W", d, d, symmetric=True)
    Edot, Wdot = A * E, E.T * G * E
    N = sp.eye(d) + W * S0
    Ninv = N.inv()
    Sigma = E * S0 * Ninv * E.T
    Sdot = (Edot * S0 * Ninv * E.T - E * S0 * Ninv * (Wdot * S0) * Ninv * E.T
            + E * S0 * Ninv * Edot.T)
    return rational_zero(f"closed form solves the Riccati ODE (d = {d})",
                         Sdot - (A * Sigma + Sigma * A.T - Sigma * G * Sigma))


def claim_van_loan():
    A, G, _, E, _, F = _matrix_symbols()
    W = E.T * F
    # d/dt expm(H t) = H expm(H t): Ė = AE, Ḟ = −AᵀF + GE (top-right block)
    Wdot = time_derivative(W, {E: A * E, F: -A.T * F + G * E})
    at0 = W.xreplace({E: sp.Identity(DIM), F: sp.ZeroMatrix(DIM, DIM)})
    return [matrix_zero("Van Loan: W = e^{Aᵀt}F has Ẇ = EᵀGE", Wdot - E.T * G * E),
            matrix_zero("Van Loan: W(0) = 0", at0)]


def claim_van_loan_scalar():
    a, g = sp.symbols("a g", nonzero=True, real=True)
    t, s = sp.symbols("t s", positive=True)
    block = (sp.Matrix([[-a, g], [0, a]]) * t).exp()
    W = sp.exp(a * t) * block[0, 1]
    integral = sp.integrate(sp.exp(2 * a * s) * g, (s, 0, t))
    return symbolic_zero("Van Loan block = ∫_0^t e^{as} g e^{as} ds (d = 1)", W - integral,
                         method="symbolic, d = 1")


def claim_square_root_form(d: int, r: int):
    E, W = symbol_matrix("E", d, d), symbol_matrix("W", d, d, symmetric=True)
    L = sp.Matrix(d, r, lambda i, j: sp.Symbol(f"L_{i}_{j}"))
    S0 = L * L.T
    full = E * S0 * (sp.eye(d) + W * S0).inv() * E.T
    root = E * L * (sp.eye(r) + L.T * W * L).inv() * L.T * E.T
    return rational_zero(f"push-through: EΣ0(I + WΣ0)⁻¹Eᵀ = EL(I + LᵀWL)⁻¹LᵀEᵀ (d = {d}, r = {r})",
                         full - root)


def claim_scalar_explicit():
    a, g, s0 = sp.symbols("a g sigma_0", real=True, nonzero=True)
    t, u = sp.symbols("t u", positive=True)
    w = g * (sp.exp(2 * a * t) - 1) / (2 * a)
    sigma = sp.exp(2 * a * t) * s0 / (1 + w * s0)
    return [symbolic_zero("σ(t) = e^{2at}σ0/(1 + w(t)σ0) solves σ̇ = 2aσ − gσ²",
                          sigma.diff(t) - (2 * a * sigma - g * sigma ** 2),
                          method="symbolic, d = 1"),
            symbolic_zero("w(t) = ∫_0^t g e^{2as} ds",
                          w - sp.integrate(g * sp.exp(2 * a * u), (u, 0, t)),
                          method="symbolic, d = 1")]


CLAIMS = (
    claim_solves_ode,
    claim_initial_value,
    partial(claim_solves_ode_elements, 2),
    partial(claim_solves_ode_elements, 3),
    claim_van_loan,
    claim_van_loan_scalar,
    partial(claim_square_root_form, 3, 1),
    partial(claim_square_root_form, 3, 2),
    claim_scalar_explicit,
)

if __name__ == "__main__":
    sys.exit(main(CLAIMS, __doc__))
