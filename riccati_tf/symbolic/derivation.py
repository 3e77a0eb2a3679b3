"""Moment equations of a velocity field under the Gaussian ansatz (SPEC §2).

For tokens x ~ N(m, Σ) moving with velocity X(x; m, Σ), the first two moments obey

    ṁ = E[X],    Σ̇ = E[(x − m) Xᵀ] + E[X (x − m)ᵀ].

If X is affine in x the pushforward of a Gaussian is Gaussian and these equations are exact
(`exact=True`); otherwise they are the Gaussian closure, a short-time approximation
(`exact=False`).

Two derivations, one result:

* element-wise (fixed d): every expectation is computed by `expectations` (Isserlis on the
  Taylor coefficients at the mean; closed forms for relu(affine));
* dimension-free (MatrixSymbol): the field is split into affine terms P x + c and feature terms
  L relu(U x + c); the matrix Wick rule E[(x − m)(P x)ᵀ] = Σ Pᵀ and Stein's identity
  E[(x − m) relu(Ux + c)ᵀ] = Σ Uᵀ diag(P(Ux + c > 0)) give ṁ = E[X], Σ̇ = JΣ + ΣJᵀ with
  J = E[∇X] (`MatrixForm.jacobian`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import sympy as sp
from sympy.matrices.expressions import MatAdd, MatMul, MatrixExpr

from ..errors import InvalidInputError
from ..state.validation import as_count
from ._input import as_column
from .expectations import Differentiator, Relu, expectations, rectified_gaussian, relu
from .symbols import GaussianSymbols, LayerSymbols, gaussian_symbols, matrix_gaussian

#: element-wise expansion beyond this dimension is refused (its size grows like d⁵; use the
#: dimension-free matrix form)
MAX_ELEMENT_D = 16


@dataclass(frozen=True, eq=False)
class GaussianFeature:
    """A vector of one-dimensional Gaussian expectations in the matrix form: entry i is
    `scalar`(μ_i, s_i) with μ = `mean` and s_i² = (`cov`)_ii, (μ, s) = `variables`; `diagonal`
    means the feature enters as diag(·). `at_zero_spread` is the value at s = 0 (in μ)."""

    symbol: sp.MatrixSymbol
    scalar: sp.Expr
    variables: tuple[sp.Symbol, sp.Symbol]
    mean: MatrixExpr
    cov: MatrixExpr
    diagonal: bool
    at_zero_spread: sp.Expr


@dataclass(frozen=True, eq=False)
class MatrixForm:
    """Dimension-free moment equations: ṁ = `mean_rate` (= E[X]) and Σ̇ = JΣ + ΣJᵀ with
    J = `jacobian` (= E[∇X]); `features` define the auxiliary symbols (Gaussian closure)."""

    gaussian: GaussianSymbols
    mean_rate: MatrixExpr
    jacobian: MatrixExpr
    features: tuple[GaussianFeature, ...] = ()

    @property
    def dmean(self) -> MatrixExpr:
        return self.mean_rate

    @property
    def dcov(self) -> MatrixExpr:
        """Σ̇ = JΣ + ΣJᵀ as one matrix expression (the compiled code forms JΣ once)."""
        S, J = self.gaussian.cov, self.jacobian
        return MatAdd(J * S, S * J.T)


@dataclass(frozen=True, eq=False)
class ElementForm:
    """Element-wise moment equations at a fixed d: the field X (d×1) in the symbols of
    `gaussian` and `layer`, ṁ (d×1) and Σ̇ (d×d, symmetric)."""

    gaussian: GaussianSymbols
    layer: LayerSymbols | None
    field: sp.ImmutableMatrix
    dmean: sp.ImmutableMatrix
    dcov: sp.ImmutableMatrix


@dataclass(frozen=True, eq=False)
class MomentSystem:
    """Moment equations ṁ = E[X], Σ̇ = E[(x − m)Xᵀ] + E[X(x − m)ᵀ] of a velocity field on R^d.

    `exact`: True when the field is affine in x (Gaussians stay Gaussian and the equations are
    exact), False for the Gaussian closure. `matrix`: the dimension-free form (or None); the
    element-wise form (`field`, `dmean`, `dcov`) is derived on first access and cached.
    `key` identifies the system for the compilation cache; `options` records how it was built.
    """

    d: int
    exact: bool
    matrix: MatrixForm | None
    matrix_layer: LayerSymbols | None
    key: tuple
    options: dict = dataclasses.field(default_factory=dict)
    _element_builder: Callable[[], ElementForm] | None = None
    _cache: dict = dataclasses.field(default_factory=dict)

    @property
    def has_entries(self) -> bool:
        """Whether the element-wise form is available without further derivation."""
        return "element" in self._cache

    def expand(self) -> ElementForm:
        """The element-wise form (derived now if needed; refused above MAX_ELEMENT_D)."""
        if "element" not in self._cache:
            if self._element_builder is None:
                raise InvalidInputError("this system was derived in matrix form only; derive the "
                                        "element-wise field with derive_moment_equations(field, d)")
            if self.d > MAX_ELEMENT_D:
                raise InvalidInputError(f"element-wise expansion at d = {self.d} is refused (its "
                                        f"size grows like d⁵; limit d ≤ {MAX_ELEMENT_D}); use the "
                                        "matrix form `system.matrix`")
            self._cache["element"] = self._element_builder()
        return self._cache["element"]

    @property
    def field(self) -> sp.ImmutableMatrix:
        return self.expand().field

    @property
    def dmean(self) -> sp.ImmutableMatrix:
        return self.expand().dmean

    @property
    def dcov(self) -> sp.ImmutableMatrix:
        return self.expand().dcov

    @property
    def gaussian(self) -> GaussianSymbols:
        return self.expand().gaussian

    @property
    def layer(self) -> LayerSymbols | None:
        return self.expand().layer

    def latex(self, form: str = "auto") -> str:
        """LaTeX of the equations: form "matrix", "entries" or "auto" (matrix when available)."""
        from .latex import system_latex

        return system_latex(self, form)

    def _repr_latex_(self) -> str:
        return f"$\\displaystyle {self.latex()}$"

    def __repr__(self) -> str:
        kind = "exact" if self.exact else "Gaussian closure"
        forms = ["matrix"] * (self.matrix is not None) + ["entries"] * self.has_entries
        return f"MomentSystem(d={self.d}, {kind}, {self.options or {}}, forms={forms})"


# --------------------------------------------------------------------------- element-wise


def derive_elements(X: sp.ImmutableMatrix, g: GaussianSymbols,
                    layer: LayerSymbols | None = None) -> tuple[ElementForm, bool]:
    """ṁ = E[X], Σ̇ = C + Cᵀ with C_ij = E[(x_i − m_i) X_j]; exact iff X is affine in x."""
    d = g.d
    diff = Differentiator()
    dmean, C = [], sp.zeros(d, d)
    for j in range(d):
        e, resid = expectations(X[j], g, residuals=True, diff=diff)
        dmean.append(e)
        C[:, j] = resid
    xs = set(g.xs)
    exact = all(X[j].is_polynomial(*g.xs)
                and not any(xs & diff(X[j], x).free_symbols for x in g.xs) for j in range(d))
    form = ElementForm(g, layer, X, sp.ImmutableMatrix(dmean), sp.ImmutableMatrix(C + C.T))
    return form, exact


def derive_moment_equations(field, d: int, *, layer: LayerSymbols | None = None,
                            key: tuple | None = None) -> MomentSystem:
    """Moment equations ṁ = E[X], Σ̇ = E[(x − m)Xᵀ] + E[X(x − m)ᵀ] of the field X on R^d.

    field: element-wise, a d×1 SymPy matrix (or sequence) of expressions in the symbols of
    `gaussian_symbols(d)` (x, m, Σ) and any parameters, or a callable (x, m, Σ) -> such a matrix;
    dimension-free, a d×1 matrix expression in the MatrixSymbols of `matrix_gaussian()`.
    layer: the control symbols the field uses, named for `compile_moment_rhs` (optional).
    Returns a `MomentSystem`; `exact` is True iff X is affine in x (Gaussian invariance).
    Strings are refused: build fields from SymPy objects.
    """
    d = as_count("d", d)
    if isinstance(field, MatrixExpr) and not isinstance(field, sp.MatrixBase):
        if layer is not None and not isinstance(layer.A, sp.MatrixSymbol):
            raise InvalidInputError("a matrix-expression field needs MatrixSymbol controls "
                                    "(matrix_layer_symbols)")
        mf, exact = derive_matrix(field)
        return MomentSystem(d, exact, mf, layer, key or ("matrix", mf.mean_rate, mf.jacobian))
    if d > MAX_ELEMENT_D:
        raise InvalidInputError(f"element-wise derivation at d = {d} is refused (limit "
                                f"{MAX_ELEMENT_D}); give the field as a matrix expression")
    g = gaussian_symbols(d)
    if callable(field) and not isinstance(field, sp.Basic | sp.MatrixBase):
        field = field(g.x, g.mean, g.cov)
    X = as_column("field", field, d)
    form, exact = derive_elements(X, g, layer)
    system = MomentSystem(d, exact, None, None, key or ("elements", form.dmean, form.dcov))
    system._cache["element"] = form
    return system


# --------------------------------------------------------------------------- dimension-free


def _factors(term: MatrixExpr):
    coeff, mm = term.as_coeff_mmul()
    factors = list(mm.args) if isinstance(mm, MatMul) else [mm]
    return coeff, factors


def _affine_parts(expr: MatrixExpr, x: sp.MatrixSymbol, *, allow_relu: bool = False):
    """Split an expanded matrix expression into (linear coefficients P_i of P_i x, constant
    terms, relu terms (L, argument) of L relu(argument)); anything else raises."""
    linear, const, relus = [], [], []
    expr = sp.expand(expr)
    for term in (expr.args if isinstance(expr, MatAdd) else (expr,)):
        if x not in term.free_symbols:
            const.append(term)
            continue
        coeff, factors = _factors(term)
        *head, last = factors
        if any(x in f.free_symbols for f in head):
            raise NotImplementedError(f"term {term}: the matrix form handles P·x and "
                                      "L·relu(Ux + c) terms only (derive element-wise instead)")
        n = last.shape[0]
        left = coeff * MatMul(*head) if head else coeff * sp.Identity(n)
        if last == x:
            linear.append(left)
        elif allow_relu and isinstance(last, Relu):
            relus.append((left, last.argument))
        else:
            raise NotImplementedError(f"term {term}: not affine in x and not L·relu(Ux + c)")
    return linear, const, relus


def _matadd(terms, rows, cols) -> MatrixExpr:
    return MatAdd(*terms).doit() if terms else sp.ZeroMatrix(rows, cols)


def derive_matrix(field: MatrixExpr, g: GaussianSymbols | None = None) -> tuple[MatrixForm, bool]:
    """Dimension-free derivation (module docstring): (MatrixForm, exact)."""
    g = g or matrix_gaussian()
    x, m, S = g.x, g.mean, g.cov
    if field.shape != x.shape:
        raise InvalidInputError(f"the field must be a {x.shape} column, got shape {field.shape}")
    field = field.xreplace({S.T: S})
    linear, const, relus = _affine_parts(field, x, allow_relu=True)
    n = x.shape[0]
    J = _matadd(linear, n, n)
    rate = [J * m, *const] if linear else list(const)
    jac = [J] if linear else []
    features = []
    rg = rectified_gaussian()
    for i, (left, arg) in enumerate(relus, start=1):
        U_parts, c_parts, inner = _affine_parts(arg, x)
        if inner:
            raise NotImplementedError("nested relu is not supported")
        k = arg.shape[0]
        U = _matadd(U_parts, k, n)
        mu = _matadd([U * m, *c_parts], k, 1)
        cov = (U * S * U.T).doit()
        r, D = sp.MatrixSymbol(f"r_{i}", k, 1), sp.MatrixSymbol(f"D_{i}", k, k)
        features += [GaussianFeature(r, rg.mean, (rg.mu, rg.s), mu, cov, False, relu(rg.mu)),
                     GaussianFeature(D, rg.slope, (rg.mu, rg.s), mu, cov, True,
                                     sp.Heaviside(rg.mu))]
        rate.append(left * r)
        jac.append(left * D * U)
    mf = MatrixForm(g, _matadd(rate, n, 1), _matadd(jac, n, n), tuple(features))
    return mf, not relus
