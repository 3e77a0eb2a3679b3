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

import sympy as sp

from ..errors import InvalidInputError
from ..state.validation import as_count
from .derivation import MomentSystem, derive_elements, derive_matrix
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


def _exponent(kernel: str, Bx, y, K, matrix: bool):
    """The y-dependent part of log k(x, y): ⟨Bx, y⟩ (dot) or ⟨Bx, y⟩ − |Ky|²/2 (l2)."""
    if matrix:
        q = Bx.T * y
        return q - (y.T * K.T * K * y) / 2 if kernel == "l2" else q
    q = (Bx.T * y)[0, 0]
    return q - ((K * y).T * (K * y))[0, 0] / 2 if kernel == "l2" else q


def attention_term(g: GaussianSymbols, layer: LayerSymbols, kernel: str = "dot"):
    """Σ_h V_h E_h[y | x] for x ~ N(m, Σ): element-wise (d×1 matrix) or dimension-free, following
    the type of the symbols in `g` and `layer`."""
    x, m, S = g.x, g.mean, g.cov
    y = sp.MatrixSymbol("y", DIM, 1) if g.matrix else symbol_vector("y", g.d)
    keys = layer.keys or (None,) * len(layer.heads)
    terms = []
    for (V, B), K in zip(layer.heads, keys, strict=True):
        q = _exponent(kernel, B * x, y, K, g.matrix)
        terms.append(V * tilted_mean(q, y if g.matrix else list(y), m, S))
    if g.matrix and len(terms) > 1:
        return sp.MatAdd(*terms)
    return sum(terms[1:], terms[0])


def transformer_field(g: GaussianSymbols, layer: LayerSymbols, kernel: str = "dot"):
    """X(x) = A x + b + Σ_h V_h E_h[y | x] (+ W relu(Ux + c) when layer.ffn is set)."""
    x = g.x
    X = layer.A * x + layer.b + attention_term(g, layer, kernel)
    if layer.ffn is not None:
        W, U, c = layer.ffn
        if g.matrix:
            X = X + W * Relu(U * x + c)
        else:
            X = X + W * (U * x + c).applyfunc(relu)
    return X if g.matrix else sp.ImmutableMatrix(X)


@cache
def _matrix_system(heads: int, kernel: str, ffn: str):
    """The dimension-free derivation, shared by every d."""
    mlayer = matrix_layer_symbols(heads, kernel, ffn)
    return mlayer, *derive_matrix(transformer_field(matrix_gaussian(), mlayer, kernel))


@lru_cache(maxsize=64)
def _transformer_system(d: int, heads: int, kernel: str, ffn: str,
                        width: int | None) -> MomentSystem:
    mlayer, mf, exact = _matrix_system(heads, kernel, ffn)

    def build():
        g = gaussian_symbols(d)
        layer = layer_symbols(d, heads, kernel, ffn, width)
        form, exact_elements = derive_elements(transformer_field(g, layer, kernel), g, layer)
        if exact_elements != exact:
            raise AssertionError("element-wise and matrix derivations disagree on exactness")
        return form

    options = {"heads": heads, "kernel": kernel, "ffn": ffn}
    if ffn == "relu":
        options["width"] = d if width is None else width
    key = ("transformer", heads, kernel, ffn, options.get("width"))
    return MomentSystem(d, exact, mf, mlayer, key, options, build)


def transformer_system(d: int, *, heads: int = 1, kernel: str = "dot", ffn: str = "affine",
                       width: int | None = None) -> MomentSystem:
    """Derive the moment system of the Transformer field on R^d (SPEC §1–§2).

    heads: number of attention heads (V_h, B_h); kernel: "dot" (softmax of ⟨Bx, y⟩) or "l2"
    (softmax of −|Qx − Ky|²/2, parametrised by B = KᵀQ and K); ffn: "affine" (A x + b) or
    "relu" (A x + b + W relu(Ux + c), hidden width `width`, default d; Gaussian closure).

    The dimension-free matrix form is derived at once (its cost does not depend on d) and is what
    `compile_moment_rhs` uses for d > 3; the element-wise entries (`.dmean`, `.dcov`, `.field`)
    are derived on first access (d ≤ MAX_ELEMENT_D). Results are cached (`clear_caches`).

        >>> s = transformer_system(2)
        >>> s.exact, s.matrix.jacobian
        (True, A + V*Sigma*B)
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
    derivations entry by entry."""
    opts = system.options
    mf = system.matrix
    d = system.d
    k = opts.get("width", d)
    dims = {DIM: d, WIDTH: k}
    g = gaussian_symbols(d)
    layer = layer_symbols(d, opts["heads"], opts["kernel"], opts["ffn"], opts.get("width"))
    pairs = [(mf.gaussian.mean, g.mean), (mf.gaussian.cov, g.cov)]
    pairs += [(a, b) for (_, a), (_, b) in zip(system.matrix_layer.items(), layer.items(),
                                               strict=True)]
    mapping = {a.subs(dims): b for a, b in pairs}

    def explicit(expr):
        return sp.ImmutableMatrix(expr.subs(dims).xreplace(mapping).doit().as_explicit())

    for f in mf.features:
        mu, cov = explicit(f.mean), explicit(f.cov)
        mu_s, s_s = f.variables
        vals = [f.scalar.xreplace({mu_s: mu[i], s_s: sp.sqrt(cov[i, i])}) for i in range(k)]
        mapping[f.symbol.subs(dims)] = (sp.ImmutableMatrix(sp.diag(*vals)) if f.diagonal
                                        else sp.ImmutableMatrix(vals))
    J = explicit(mf.jacobian)
    return explicit(mf.mean_rate), sp.ImmutableMatrix(J * g.cov + g.cov * J.T)
