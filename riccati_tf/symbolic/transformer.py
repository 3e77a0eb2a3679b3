"""The Transformer velocity field of SPEC §1 under the Gaussian ansatz, and its moment system.

    X(x) = A x + b + Σ_h V_h E_h[y | x] (+ W relu(U x + c)),

where E_h[y | x] = ∫ y k_h(x, y) dμ(y) / ∫ k_h(x, y) dμ(y) is the attention average of head h
for μ = N(m, Σ), computed by `tilt` (no formula for it is typed in here):

* kernel "dot": k(x, y) = exp(⟨B x, y⟩), a linear exponent in y → log-MGF gradient
  m + Σ B x;
* kernel "l2": k(x, y) = exp(−|Q x − K y|²/2) = exp(−|Qx|²/2) · exp(⟨B x, y⟩ − |K y|²/2) with
  B = KᵀQ; the first factor does not depend on y and cancels in the ratio, so the field is
  written with B (as in `Params`) and K. A quadratic exponent → completed square
  (I + ΣKᵀK)⁻¹(m + ΣBx).

Both are affine in x, so the moment equations are exact; ffn="relu" adds W relu(Ux + c) and the
Gaussian closure (exact=False).
"""

from __future__ import annotations

from functools import cache, lru_cache
from typing import TypeAlias

import sympy as sp
from sympy.matrices.expressions import MatrixExpr

from ..errors import InvalidInputError
from ..state.validation import as_count
from .derivation import ElementForm, MatrixForm, MomentSystem, derive_elements, derive_matrix
from .expectations import Relu, relu, tilted_mean
from .symbols import (
    DIM,
    WIDTH,
    GaussianSymbols,
    LayerSymbols,
    check_options,
    gaussian_symbols,
    layer_symbols,
    matrix_gaussian,
    matrix_layer_symbols,
    symbol_vector,
)

__all__ = ["attention_term", "explicit_matrix_form", "transformer_field", "transformer_system"]

#: a column of the field: element-wise (d × 1 matrix) or dimension-free (matrix expression)
Column: TypeAlias = sp.MatrixBase | MatrixExpr


def _exponent(kernel: str, Bx: Column, y: Column, K: Column | None,
              matrix: bool) -> sp.Expr | MatrixExpr:
    """The y-dependent part of log k(x, y): ⟨Bx, y⟩ (dot) or ⟨Bx, y⟩ − |Ky|²/2 (l2)."""
    q = Bx.T * y if matrix else (Bx.T * y)[0, 0]
    if kernel != "l2":
        return q
    assert K is not None  # `attention_term` refuses "l2" without key matrices
    return q - (y.T * K.T * K * y) / 2 if matrix else q - ((K * y).T * (K * y))[0, 0] / 2


def attention_term(g: GaussianSymbols, layer: LayerSymbols, kernel: str = "dot") -> Column:
    """Σ_h V_h E_h[y | x] for x ~ N(m, Σ): element-wise (d×1 matrix) or dimension-free, following
    the type of the symbols in `g` and `layer`.

    E_h[y | x] = ∫ y k_h(x, y) dμ(y) / ∫ k_h(x, y) dμ(y) for μ = N(m, Σ) is computed by
    `tilted_mean` (no formula for it is typed in): for "dot", k(x, y) = exp(⟨B x, y⟩) gives
    m + Σ B x; for "l2", k(x, y) = exp(−|Q x − K y|²/2) with B = KᵀQ gives
    (I + ΣKᵀK)⁻¹(m + ΣBx).

    Parameters
    ----------
    g : GaussianSymbols
        The symbols of x ~ N(m, Σ) (`gaussian_symbols(d)` or `matrix_gaussian()`).
    layer : LayerSymbols
        The controls, of the same form as `g` (the heads (V_h, B_h) and, for "l2", K_h).
    kernel : {"dot", "l2"}, optional
        The attention kernel (default "dot").

    Returns
    -------
    (d, 1) sympy.ImmutableMatrix or (DIM, 1) matrix expression
        The attention term.

    Raises
    ------
    InvalidInputError
        If kernel is "l2" and `layer` has no key matrices, or the exponent is not of degree
        ≤ 2 in y (other kernel names are not checked here: `transformer_system` checks them).

    See Also
    --------
    transformer_field : the whole field A x + b + this term (+ ReLU layer).
    tilted_mean : the tilted Gaussian mean used for every head.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures".
    .. [2] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".
    .. [3] B. Geshkovski, C. Letrouit, Y. Polyanskiy, P. Rigollet, "A mathematical perspective
       on Transformers", arXiv:2312.10794, 2023.

    Examples
    --------
    In one dimension the attention term is V(m + ΣBx) (SPEC §2):

    >>> import sympy as sp
    >>> from riccati_tf.symbolic import attention_term, gaussian_symbols, layer_symbols
    >>> g, L = gaussian_symbols(1), layer_symbols(1)
    >>> (x,), (m,), S = g.xs, g.mean, g.cov[0, 0]
    >>> (V, B), = L.heads
    >>> sp.expand(attention_term(g, L)[0] - V[0] * (m + S * B[0] * x)) == 0
    True
    """
    x, m, S = g.x, g.mean, g.cov
    y = sp.MatrixSymbol("y", DIM, 1) if g.matrix else symbol_vector("y", g.d)
    if kernel == "l2" and layer.keys is None:
        raise InvalidInputError("Gaussian-kernel attention needs the key matrices K_h "
                                "(layer_symbols(..., kernel='l2'))")
    keys = layer.keys or (None,) * len(layer.heads)
    terms: list[Column] = []
    for (V, B), K in zip(layer.heads, keys, strict=True):
        q = _exponent(kernel, B * x, y, K, g.matrix)
        terms.append(V * tilted_mean(q, y if g.matrix else list(y), m, S))
    if g.matrix and len(terms) > 1:
        return sp.MatAdd(*terms)
    return sum(terms[1:], terms[0])


def transformer_field(g: GaussianSymbols, layer: LayerSymbols, kernel: str = "dot") -> Column:
    """X(x) = A x + b + Σ_h V_h E_h[y | x] (+ W relu(Ux + c) when layer.ffn is set).

    The velocity field of SPEC §1 for the prompt μ = N(m, Σ): the attention averages are
    computed by `attention_term`, so the field is affine in x unless a ReLU feed-forward layer
    is present.

    Parameters
    ----------
    g : GaussianSymbols
        The symbols of x ~ N(m, Σ) (element-wise or dimension-free).
    layer : LayerSymbols
        The controls, of the same form as `g`.
    kernel : {"dot", "l2"}, optional
        The attention kernel (default "dot").

    Returns
    -------
    (d, 1) sympy.ImmutableMatrix or (DIM, 1) matrix expression
        X(x).

    Raises
    ------
    InvalidInputError
        As `attention_term`.

    See Also
    --------
    attention_term : the attention part.
    derive_moment_equations : its moment equations.
    transformer_system : field and equations at once.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures".
    .. [2] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".
    .. [3] B. Geshkovski, C. Letrouit, Y. Polyanskiy, P. Rigollet, "A mathematical perspective
       on Transformers", arXiv:2312.10794, 2023.

    Examples
    --------
    >>> from riccati_tf.symbolic import matrix_gaussian, matrix_layer_symbols, transformer_field
    >>> transformer_field(matrix_gaussian(), matrix_layer_symbols())
    A*x + V*(Sigma*B*x + m) + b
    """
    x = g.x
    X: Column = layer.A * x + layer.b + attention_term(g, layer, kernel)
    if layer.ffn is not None:
        W, U, c = layer.ffn
        if g.matrix:
            X = X + W * Relu(U * x + c)
        else:
            X = X + W * (U * x + c).applyfunc(relu)
    return X if g.matrix else sp.ImmutableMatrix(X)


@cache
def _matrix_system(heads: int, kernel: str, ffn: str) -> tuple[LayerSymbols, MatrixForm, bool]:
    """The dimension-free derivation, shared by every d."""
    mlayer = matrix_layer_symbols(heads, kernel, ffn)
    return mlayer, *derive_matrix(transformer_field(matrix_gaussian(), mlayer, kernel))


@lru_cache(maxsize=64)
def _transformer_system(d: int, heads: int, kernel: str, ffn: str,
                        width: int | None) -> MomentSystem:
    mlayer, mf, exact = _matrix_system(heads, kernel, ffn)

    def build() -> ElementForm:
        g = gaussian_symbols(d)
        layer = layer_symbols(d, heads, kernel, ffn, width)
        form, exact_elements = derive_elements(transformer_field(g, layer, kernel), g, layer)
        if exact_elements != exact:
            raise AssertionError("element-wise and matrix derivations disagree on exactness")
        return form

    options: dict[str, int | str] = {"heads": heads, "kernel": kernel, "ffn": ffn}
    if ffn == "relu":
        options["width"] = d if width is None else width
    key = ("transformer", heads, kernel, ffn, options.get("width"))
    return MomentSystem(d, exact, mf, mlayer, key, options, build)


def transformer_system(d: int, *, heads: int = 1, kernel: str = "dot", ffn: str = "affine",
                       width: int | None = None) -> MomentSystem:
    """Derive the moment system of the Transformer field on R^d (SPEC §1–§2).

    The field X(x) = A x + b + Σ_h V_h E_h[y | x] (+ W relu(U x + c)) under x ~ N(m, Σ) gives

        ṁ = (A + Σ_h V_h) m + Σ_h V_h Σ B_h m + b,
        Σ̇ = A Σ + Σ Aᵀ + Σ_h (V_h Σ B_h Σ + Σ B_hᵀ Σ V_hᵀ)

    for dot-product attention (exact: the field is affine in x); the Gaussian kernel replaces
    Σ B_h by (I + ΣK_hᵀK_h)⁻¹ Σ B_h, and the ReLU layer makes the system a Gaussian closure.
    The dimension-free matrix form is derived at once (its cost does not depend on d) and is what
    `compile_moment_rhs` uses for d > 3; the element-wise entries (`.dmean`, `.dcov`, `.field`)
    are derived on first access (d ≤ MAX_ELEMENT_D). Results are cached (`clear_caches`).

    Parameters
    ----------
    d : int
        The dimension, d ≥ 1.
    heads : int, optional
        The number of attention heads (V_h, B_h) (default 1).
    kernel : {"dot", "l2"}, optional
        "dot" (default): softmax of ⟨Bx, y⟩; "l2": softmax of −|Qx − Ky|²/2, parametrised by
        B = KᵀQ and K.
    ffn : {"affine", "relu"}, optional
        "affine" (default): A x + b; "relu": A x + b + W relu(Ux + c) (Gaussian closure).
    width : int, optional
        The hidden width k of the ReLU layer (default d); only with ffn="relu".

    Returns
    -------
    MomentSystem
        The system, with its `matrix` form and the element-wise form on demand.

    Raises
    ------
    InvalidInputError
        If d, heads or width is not a positive integer, kernel or ffn is not one of the names
        above, or width is given without ffn="relu".

    See Also
    --------
    compile_moment_rhs : the numeric right-hand side (Params, Gaussian) → (ṁ, Σ̇).
    spec_moment_equations : SPEC §2 typed in, to verify the derivation.
    explicit_matrix_form : the matrix form written out at d.
    derive_moment_equations : the same derivation for any field.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures".
    .. [2] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".
    .. [3] B. Geshkovski, C. Letrouit, Y. Polyanskiy, P. Rigollet, "A mathematical perspective
       on Transformers", arXiv:2312.10794, 2023.

    Examples
    --------
    >>> from riccati_tf.symbolic import transformer_system
    >>> s = transformer_system(2)
    >>> s.exact, s.matrix.jacobian
    (True, A + V*Sigma*B)
    >>> transformer_system(1, kernel="l2").matrix.jacobian
    A + V*(I + Sigma*K.T*K)**(-1)*Sigma*B
    """
    d = as_count("d", d)
    heads = check_options(heads, kernel, ffn)
    if width is not None:
        if ffn != "relu":
            raise InvalidInputError("width is the hidden width of the ReLU layer (ffn='relu')")
        width = as_count("width", width)
    return _transformer_system(d, heads, kernel, ffn, width)


def explicit_matrix_form(system: MomentSystem) -> tuple[sp.ImmutableMatrix, sp.ImmutableMatrix]:
    """The dimension-free equations of a `transformer_system` written out at its d in the
    element-wise symbols (features replaced by their closed forms), to cross-check the two
    derivations entry by entry.

    ṁ = `mean_rate` and Σ̇ = JΣ + ΣJᵀ with J = `jacobian`, DIM and WIDTH replaced by d and k,
    every MatrixSymbol by the matrix of its element-wise symbols, and every Gaussian feature by
    its scalar closed form at (μ_i, √(cov)_ii).

    Parameters
    ----------
    system : MomentSystem
        A system made by `transformer_system` (it has a matrix form and records its options).

    Returns
    -------
    dmean : (d, 1) sympy.ImmutableMatrix
        ṁ in the symbols of `gaussian_symbols(d)` and `layer_symbols(d, ...)`.
    dcov : (d, d) sympy.ImmutableMatrix
        Σ̇ in the same symbols.

    Raises
    ------
    InvalidInputError
        If `system` is not a `transformer_system` (no matrix form or no recorded options).

    See Also
    --------
    transformer_system : makes the system.
    spec_moment_equations : the element-wise SPEC equations.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures".
    .. [2] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".
    .. [3] B. Geshkovski, C. Letrouit, Y. Polyanskiy, P. Rigollet, "A mathematical perspective
       on Transformers", arXiv:2312.10794, 2023.

    Examples
    --------
    The two derivations agree entry by entry:

    >>> import sympy as sp
    >>> from riccati_tf.symbolic import explicit_matrix_form, transformer_system
    >>> system = transformer_system(1, heads=2)
    >>> dmean, dcov = explicit_matrix_form(system)
    >>> sp.expand(dmean - system.dmean).is_zero_matrix, sp.expand(dcov - system.dcov).is_zero_matrix
    (True, True)
    """
    opts = system.options
    mf = system.matrix
    if mf is None or system.matrix_layer is None or "heads" not in opts:
        raise InvalidInputError("explicit_matrix_form needs a system made by transformer_system")
    d = system.d
    k = opts.get("width", d)
    dims = {DIM: d, WIDTH: k}
    g = gaussian_symbols(d)
    layer = layer_symbols(d, opts["heads"], opts["kernel"], opts["ffn"], opts.get("width"))
    pairs = [(mf.gaussian.mean, g.mean), (mf.gaussian.cov, g.cov)]
    pairs += [(a, b) for (_, a), (_, b) in zip(system.matrix_layer.items(), layer.items(),
                                               strict=True)]
    mapping = {a.subs(dims): b for a, b in pairs}

    def explicit(expr: MatrixExpr) -> sp.ImmutableMatrix:
        return sp.ImmutableMatrix(expr.subs(dims).xreplace(mapping).doit().as_explicit())

    for f in mf.features:
        mu, cov = explicit(f.mean), explicit(f.cov)
        mu_s, s_s = f.variables
        vals = [f.scalar.xreplace({mu_s: mu[i], s_s: sp.sqrt(cov[i, i])}) for i in range(k)]
        mapping[f.symbol.subs(dims)] = (sp.ImmutableMatrix(sp.diag(*vals)) if f.diagonal
                                        else sp.ImmutableMatrix(vals))
    J = explicit(mf.jacobian)
    return explicit(mf.mean_rate), sp.ImmutableMatrix(J * g.cov + g.cov * J.T)
