"""SPEC §2 typed in by hand — used only to verify the derivation, never by it.

    ṁ = (A + Σ_h V_h) m + Σ_h V_h Σ B_h m + b
    Σ̇ = A Σ + Σ Aᵀ + Σ_h (V_h Σ B_h Σ + Σ B_hᵀ Σ V_hᵀ)
"""

from __future__ import annotations

import sympy as sp

from .symbols import gaussian_symbols, layer_symbols, matrix_gaussian, matrix_layer_symbols


def spec_moment_equations(d: int, heads: int = 1) -> tuple[sp.Matrix, sp.Matrix]:
    """(ṁ, Σ̇) of SPEC §2 in the element-wise symbols of `transformer_system(d, heads=heads)`."""
    g, L = gaussian_symbols(d), layer_symbols(d, heads)
    m, S, A, b = sp.Matrix(g.mean), sp.Matrix(g.cov), sp.Matrix(L.A), sp.Matrix(L.b)
    dm, dS = A * m + b, A * S + S * A.T
    for V, B in L.heads:
        V, B = sp.Matrix(V), sp.Matrix(B)
        dm += V * m + V * S * B * m
        dS += V * S * B * S + S * B.T * S * V.T
    return dm, dS


def spec_matrix_equations(heads: int = 1):
    """(ṁ, Σ̇) of SPEC §2 as dimension-free matrix expressions."""
    g, L = matrix_gaussian(), matrix_layer_symbols(heads)
    m, S, A, b = g.mean, g.cov, L.A, L.b
    dm = [A * m, b]
    dS = [A * S, S * A.T]
    for V, B in L.heads:
        dm += [V * m, V * S * B * m]
        dS += [V * S * B * S, S * B.T * S * V.T]
    return sp.MatAdd(*dm), sp.MatAdd(*dS)
