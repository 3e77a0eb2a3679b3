"""LaTeX rendering of moment systems (`MomentSystem.latex`, pretty in notebooks)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import sympy as sp

from ..errors import InvalidInputError
from .symbols import LATEX_NAMES

if TYPE_CHECKING:
    from .derivation import MomentSystem

__all__ = ["to_latex"]


def to_latex(expr: sp.Basic | sp.MatrixBase) -> str:
    """LaTeX of a SymPy expression or matrix, with the element-wise symbols spelt as in the
    mathematics (A_{1,2}, \\Sigma_{1,2}, V^{(2)}_{1,1}).

    `sympy.latex` with the spelling `LATEX_NAMES` that `symbol_matrix` records for every
    element-wise symbol (``Sigma_1_2`` → ``\\Sigma_{1,2}``, ``V2_1_1`` → ``V^{(2)}_{1,1}``);
    relu is printed as an operator.

    Parameters
    ----------
    expr : sympy.Basic or sympy.MatrixBase
        An expression, a matrix or a matrix expression, e.g. an entry of
        `MomentSystem.dcov`.

    Returns
    -------
    str
        The LaTeX source (without math delimiters).

    Raises
    ------
    None
        Whatever `sympy.latex` prints is returned.

    See Also
    --------
    MomentSystem.latex : the whole system as an aligned LaTeX block.
    symbol_matrix : records the LaTeX names.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    >>> from riccati_tf.symbolic import gaussian_symbols, layer_symbols, to_latex
    >>> g = gaussian_symbols(2)
    >>> print(to_latex(g.cov[0, 1] * g.mean[0]))
    \\Sigma_{1,2} m_{1}
    >>> print(to_latex(layer_symbols(1, heads=2).heads[1][0][0, 0]))
    V^{(2)}_{1,1}
    """
    return sp.latex(expr, symbol_names=LATEX_NAMES)


def feature_function(symbol_latex: str) -> str:
    """The name of the scalar function that defines an auxiliary Gaussian feature, built from the
    feature's own symbol (\\phi_{r_{1}} for r_1, \\phi_{D_{1}} for D_1), so that two features
    never share one name."""
    return rf"\phi_{{{symbol_latex}}}"


def system_latex(system: MomentSystem, form: str = "auto") -> str:
    """An aligned block: ṁ = …, Σ̇ = …, the auxiliary Gaussian features (each defined by its own
    scalar function `feature_function`), and whether the equations are exact or a Gaussian
    closure."""
    if form not in ("auto", "matrix", "entries"):
        raise InvalidInputError(f"form must be 'auto', 'matrix' or 'entries', got {form!r}")
    if form == "auto":
        form = "matrix" if system.matrix is not None else "entries"
    note = (r"\text{exact (the field is affine in } x\text{: Gaussians stay Gaussian)}"
            if system.exact else r"\text{Gaussian closure (the field is not affine in } x)")
    if form == "matrix":
        if system.matrix is None:
            raise InvalidInputError("this system has no matrix form")
        mf = system.matrix
        J = to_latex(mf.jacobian)
        lines = [rf"\dot m &= {to_latex(mf.mean_rate)}",
                 rf"\dot\Sigma &= J\Sigma + \Sigma J^{{T}}, \quad J = {J}"]
        for f in mf.features:
            mu, s = f.variables
            body = to_latex(f.scalar)
            arg = (rf"\mu = {to_latex(f.mean)},\ "
                   rf"s^2 = \operatorname{{diag}}\left({to_latex(f.cov)}\right)")
            sym = to_latex(f.symbol)
            phi = feature_function(sym)
            lhs = rf"{sym} &= \operatorname{{diag}}\left({phi}(\mu_i, s_i)\right)" if f.diagonal \
                else rf"\left({sym}\right)_i &= {phi}(\mu_i, s_i)"
            lines.append(rf"{lhs},\ {phi}({to_latex(mu)}, {to_latex(s)}) = {body},\ {arg}")
    else:
        lines = [rf"\dot m &= {to_latex(system.dmean)}", rf"\dot\Sigma &= {to_latex(system.dcov)}"]
    lines.append(rf"& {note}")
    return r"\begin{aligned}" + r" \\ ".join(lines) + r"\end{aligned}"
