"""SPEC §2 typed in by hand — used only to verify the derivation, never by it.

    ṁ = (A + Σ_h V_h) m + Σ_h V_h Σ B_h m + b
    Σ̇ = A Σ + Σ Aᵀ + Σ_h (V_h Σ B_h Σ + Σ B_hᵀ Σ V_hᵀ)
"""

from __future__ import annotations

import sympy as sp
from sympy.matrices.expressions import MatrixExpr

from .symbols import gaussian_symbols, layer_symbols, matrix_gaussian, matrix_layer_symbols

__all__ = ["spec_matrix_equations", "spec_moment_equations"]


def spec_moment_equations(d: int, heads: int = 1) -> tuple[sp.Matrix, sp.Matrix]:
    """(ṁ, Σ̇) of SPEC §2 in the element-wise symbols of `transformer_system(d, heads=heads)`.

    The equations are typed in, not derived:

        ṁ = (A + Σ_h V_h) m + Σ_h V_h Σ B_h m + b,
        Σ̇ = A Σ + Σ Aᵀ + Σ_h (V_h Σ B_h Σ + Σ B_hᵀ Σ V_hᵀ),

    so that the difference with the derived system is an independent check.

    Parameters
    ----------
    d : int
        The dimension, d ≥ 1.
    heads : int, optional
        The number of attention heads (default 1).

    Returns
    -------
    dmean : (d, 1) sympy.Matrix
        ṁ in the symbols of `gaussian_symbols(d)` and `layer_symbols(d, heads)`.
    dcov : (d, d) sympy.Matrix
        Σ̇ in the same symbols (symmetric).

    Raises
    ------
    InvalidInputError
        If d or heads is not a positive integer.

    See Also
    --------
    spec_matrix_equations : the same equations in dimension-free form.
    transformer_system : the derivation these equations verify.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    The derived moment equations of the one-head Transformer agree with SPEC §2:

    >>> import sympy as sp
    >>> from riccati_tf.symbolic import spec_moment_equations, transformer_system
    >>> system = transformer_system(2)
    >>> dmean, dcov = spec_moment_equations(2)
    >>> sp.expand(system.dmean - dmean).is_zero_matrix
    True
    >>> sp.expand(system.dcov - dcov).is_zero_matrix
    True
    """
    g, L = gaussian_symbols(d), layer_symbols(d, heads)
    m, S, A, b = sp.Matrix(g.mean), sp.Matrix(g.cov), sp.Matrix(L.A), sp.Matrix(L.b)
    dm, dS = A * m + b, A * S + S * A.T
    for V, B in L.heads:
        V, B = sp.Matrix(V), sp.Matrix(B)
        dm += V * m + V * S * B * m
        dS += V * S * B * S + S * B.T * S * V.T
    return dm, dS


def spec_matrix_equations(heads: int = 1) -> tuple[MatrixExpr, MatrixExpr]:
    """(ṁ, Σ̇) of SPEC §2 as dimension-free matrix expressions.

    ṁ = A m + b + Σ_h (V_h m + V_h Σ B_h m) and Σ̇ = A Σ + Σ Aᵀ + Σ_h (V_h Σ B_h Σ +
    Σ B_hᵀ Σ V_hᵀ), in the MatrixSymbols of `matrix_gaussian()` and
    `matrix_layer_symbols(heads)`, typed in by hand.

    Parameters
    ----------
    heads : int, optional
        The number of attention heads (default 1).

    Returns
    -------
    dmean : (DIM, 1) sympy MatAdd
        ṁ.
    dcov : (DIM, DIM) sympy MatAdd
        Σ̇.

    Raises
    ------
    InvalidInputError
        If heads is not a positive integer.

    See Also
    --------
    spec_moment_equations : the element-wise equations at a fixed d.
    transformer_system : its `matrix` form is what these equations verify.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    The dimension-free derivation agrees with SPEC §2 (Σᵀ = Σ imposed):

    >>> import sympy as sp
    >>> from riccati_tf.symbolic import (matrix_gaussian, spec_matrix_equations,
    ...                                  transformer_system)
    >>> form = transformer_system(2).matrix
    >>> dmean, dcov = spec_matrix_equations()
    >>> S = matrix_gaussian().cov
    >>> sp.expand(form.mean_rate - dmean).is_ZeroMatrix
    True
    >>> sp.expand((form.dcov - dcov).xreplace({S.T: S}).doit()).is_ZeroMatrix
    True
    """
    g, L = matrix_gaussian(), matrix_layer_symbols(heads)
    m, S, A, b = g.mean, g.cov, L.A, L.b
    dm = [A * m, b]
    dS = [A * S, S * A.T]
    for V, B in L.heads:
        dm += [V * m, V * S * B * m]
        dS += [V * S * B * S, S * B.T * S * V.T]
    return sp.MatAdd(*dm), sp.MatAdd(*dS)
