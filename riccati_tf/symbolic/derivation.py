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
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import sympy as sp
from sympy.matrices.expressions import MatAdd, MatMul, MatrixExpr

from ..errors import InvalidInputError
from ..state.validation import as_count
from ._input import as_column
from .expectations import Differentiator, Relu, expectations, rectified_gaussian, relu
from .symbols import GaussianSymbols, LayerSymbols, gaussian_symbols, matrix_gaussian

__all__ = [
    "MAX_ELEMENT_D",
    "ElementForm",
    "GaussianFeature",
    "MatrixForm",
    "MomentSystem",
    "derive_moment_equations",
]

#: element-wise expansion beyond this dimension is refused (its size grows like d⁵; use the
#: dimension-free matrix form)
MAX_ELEMENT_D = 16


@dataclass(frozen=True, eq=False)
class GaussianFeature:
    """A vector of one-dimensional Gaussian expectations in the matrix form: entry i is
    `scalar`(μ_i, s_i) with μ = `mean` and s_i² = (`cov`)_ii.

    For a ReLU term L relu(U x + c) of the field, u = Ux + c ~ N(μ, U Σ Uᵀ) with μ = U m + c;
    its Gaussian closure needs r = (E[relu(u_i)])_i (in ṁ) and D = diag(P(u_i > 0)) (in the
    Jacobian J = E[∇X]), both functions of (μ_i, s_i) only. A feature is one such vector,
    named by its own MatrixSymbol.

    Parameters
    ----------
    symbol : MatrixSymbol
        The symbol standing for the feature in `MatrixForm` (``r_1`` (k, 1), ``D_1`` (k, k)).
    scalar : sympy.Expr
        The closed form of one entry in the symbols `variables`.
    variables : (sympy.Symbol, sympy.Symbol)
        (μ, s): the mean and the standard deviation (s > 0) of the scalar Gaussian.
    mean : (k, 1) matrix expression
        μ = U m + c.
    cov : (k, k) matrix expression
        U Σ Uᵀ, whose diagonal gives s_i².
    diagonal : bool
        True when the feature enters as diag(·) (D), False for a column (r).
    at_zero_spread : sympy.Expr
        The value at s = 0 as a function of μ (relu(μ), Heaviside(μ)), used for degenerate
        directions.

    Raises
    ------
    None
        Built by the matrix derivation.

    See Also
    --------
    MatrixForm : holds the features.
    compile_moment_rhs : evaluates them numerically.
    rectified_gaussian : the closed forms of the ReLU features.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures"
       (ReLU feed-forward: Gaussian closure).

    Examples
    --------
    A feature written by hand, the ReLU mean E[relu(u)] = μ Φ(μ/s) + s φ(μ/s):

    >>> import sympy as sp
    >>> from riccati_tf.symbolic import DIM, GaussianFeature, matrix_gaussian, relu
    >>> mu, s = sp.Symbol("mu", real=True), sp.Symbol("s", positive=True)
    >>> scalar = (mu * (1 + sp.erf(mu / (s * sp.sqrt(2)))) / 2
    ...           + s * sp.exp(-mu ** 2 / (2 * s ** 2)) / sp.sqrt(2 * sp.pi))
    >>> g = matrix_gaussian()
    >>> f = GaussianFeature(sp.MatrixSymbol("r_1", DIM, 1), scalar, (mu, s), g.mean, g.cov,
    ...                     False, relu(mu))
    >>> f.scalar.subs(mu, 0)
    sqrt(2)*s/(2*sqrt(pi))
    """

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
    J = `jacobian` (= E[∇X]); `features` define the auxiliary symbols (Gaussian closure).

    For an affine field X = P x + c the matrix Wick rule gives E[(x − m)(Px)ᵀ] = Σ Pᵀ, so
    ṁ = P m + c and Σ̇ = PΣ + ΣPᵀ; Stein's identity E[(x − m) relu(Ux + c)ᵀ] =
    Σ Uᵀ diag(P(Ux + c > 0)) extends this to ReLU terms with J = E[∇X].

    Parameters
    ----------
    gaussian : GaussianSymbols
        The dimension-free symbols x, m, Σ (`matrix_gaussian()`).
    mean_rate : (DIM, 1) matrix expression
        ṁ = E[X].
    jacobian : (DIM, DIM) matrix expression
        J = E[∇X].
    features : tuple of GaussianFeature, optional
        The auxiliary symbols used in `mean_rate` and `jacobian` (empty for an exact system).

    Raises
    ------
    None
        Built by the matrix derivation.

    See Also
    --------
    MomentSystem : holds this form as `matrix`.
    GaussianFeature : the auxiliary symbols.
    spec_matrix_equations : SPEC §2 in the same symbols.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    >>> from riccati_tf.symbolic import transformer_system
    >>> form = transformer_system(2).matrix
    >>> form.jacobian, form.features
    (A + V*Sigma*B, ())
    """

    gaussian: GaussianSymbols
    mean_rate: MatrixExpr
    jacobian: MatrixExpr
    features: tuple[GaussianFeature, ...] = ()

    @property
    def dmean(self) -> MatrixExpr:
        """ṁ (= `mean_rate`)."""
        return self.mean_rate

    @property
    def dcov(self) -> MatrixExpr:
        """Σ̇ = JΣ + ΣJᵀ as one matrix expression (the compiled code forms JΣ once)."""
        S, J = self.gaussian.cov, self.jacobian
        return MatAdd(J * S, S * J.T)


@dataclass(frozen=True, eq=False)
class ElementForm:
    """Element-wise moment equations at a fixed d: the field X (d×1) in the symbols of
    `gaussian` and `layer`, ṁ (d×1) and Σ̇ (d×d, symmetric).

    ṁ_j = E[X_j] and Σ̇ = C + Cᵀ with C_ij = E[(x_i − m_i) X_j], every expectation computed by
    `expectations`.

    Parameters
    ----------
    gaussian : GaussianSymbols
        The element-wise symbols x, m, Σ (`gaussian_symbols(d)`).
    layer : LayerSymbols or None
        The control symbols the field uses (None when the field has no named controls).
    field : (d, 1) sympy.ImmutableMatrix
        X(x).
    dmean : (d, 1) sympy.ImmutableMatrix
        ṁ.
    dcov : (d, d) sympy.ImmutableMatrix
        Σ̇ (symmetric).

    Raises
    ------
    None
        Built by the element-wise derivation.

    See Also
    --------
    MomentSystem.expand : returns this form.
    derive_moment_equations : derives it.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    >>> import sympy as sp
    >>> from riccati_tf.symbolic import derive_moment_equations, gaussian_symbols
    >>> (x,) = gaussian_symbols(1).xs
    >>> form = derive_moment_equations([x ** 2], 1).expand()
    >>> form.field, form.dmean, form.dcov
    (Matrix([[x_1**2]]), Matrix([[Sigma_1_1 + m_1**2]]), Matrix([[4*Sigma_1_1*m_1]]))
    """

    gaussian: GaussianSymbols
    layer: LayerSymbols | None
    field: sp.ImmutableMatrix
    dmean: sp.ImmutableMatrix
    dcov: sp.ImmutableMatrix


@dataclass(frozen=True, eq=False)
class MomentSystem:
    """Moment equations ṁ = E[X], Σ̇ = E[(x − m)Xᵀ] + E[X(x − m)ᵀ] of a velocity field on R^d.

    If X is affine in x the pushforward of a Gaussian is Gaussian and the equations are exact;
    otherwise they are the Gaussian closure, a short-time approximation. The element-wise form
    (`field`, `dmean`, `dcov`, `gaussian`, `layer`) is derived on first access and cached
    (refused above `MAX_ELEMENT_D`); `latex()` renders the equations.

    Parameters
    ----------
    d : int
        The dimension.
    exact : bool
        True when the field is affine in x (Gaussians stay Gaussian), False for the Gaussian
        closure.
    matrix : MatrixForm or None
        The dimension-free form, when derived.
    matrix_layer : LayerSymbols or None
        The dimension-free control symbols of `matrix` (named for `compile_moment_rhs`).
    key : tuple
        Identifies the system in the compilation cache.
    options : dict, optional
        How the system was built (heads, kernel, ffn, width for `transformer_system`).
    _element_builder : callable () -> ElementForm, optional
        Derives the element-wise form on demand (None: only the given forms exist).
    _cache : dict, optional
        Holds the element-wise form once derived.

    Raises
    ------
    None
        Built by `derive_moment_equations` and `transformer_system`.

    See Also
    --------
    transformer_system : the system of the Transformer field.
    derive_moment_equations : the system of any polynomial or ReLU field.
    compile_moment_rhs : its numeric right-hand side.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    >>> from riccati_tf.symbolic import transformer_system
    >>> system = transformer_system(1)
    >>> system
    MomentSystem(d=1, exact, {'heads': 1, 'kernel': 'dot', 'ffn': 'affine'}, forms=['matrix'...])
    >>> system.dcov
    Matrix([[2*Sigma_1_1*(A_1_1 + B_1_1*Sigma_1_1*V_1_1)]])
    """

    d: int
    exact: bool
    matrix: MatrixForm | None
    matrix_layer: LayerSymbols | None
    key: tuple[Hashable, ...]
    options: dict[str, Any] = dataclasses.field(default_factory=dict)
    _element_builder: Callable[[], ElementForm] | None = None
    _cache: dict[str, ElementForm] = dataclasses.field(default_factory=dict)

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
        """The field X (d×1), element-wise."""
        return self.expand().field

    @property
    def dmean(self) -> sp.ImmutableMatrix:
        """ṁ (d×1), element-wise."""
        return self.expand().dmean

    @property
    def dcov(self) -> sp.ImmutableMatrix:
        """Σ̇ (d×d), element-wise."""
        return self.expand().dcov

    @property
    def gaussian(self) -> GaussianSymbols:
        """The element-wise symbols x, m, Σ."""
        return self.expand().gaussian

    @property
    def layer(self) -> LayerSymbols | None:
        """The element-wise control symbols (None when the field names none)."""
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


def derive_moment_equations(field: sp.MatrixBase | MatrixExpr | Sequence[sp.Expr]
                            | Callable[..., sp.MatrixBase | Sequence[sp.Expr]],
                            d: int, *, layer: LayerSymbols | None = None,
                            key: tuple[Hashable, ...] | None = None) -> MomentSystem:
    """Moment equations ṁ = E[X], Σ̇ = E[(x − m)Xᵀ] + E[X(x − m)ᵀ] of the field X on R^d.

    For tokens x ~ N(m, Σ) moving with velocity X(x; m, Σ),

        ṁ = E[X],    Σ̇ = E[(x − m) Xᵀ] + E[X (x − m)ᵀ],

    exact iff X is affine in x (Gaussian invariance), the Gaussian closure otherwise.
    Element-wise, every expectation is computed by `expectations` (Isserlis on the Taylor
    coefficients at the mean; closed forms for relu(affine)). Dimension-free, the field is split
    into affine terms P x + c and feature terms L relu(U x + c), and Σ̇ = JΣ + ΣJᵀ with
    J = E[∇X] (`MatrixForm`). Strings are refused: build fields from SymPy objects.

    Parameters
    ----------
    field : (d, 1) sympy matrix, sequence of expressions, callable, or matrix expression
        Element-wise: the components of X in the symbols of `gaussian_symbols(d)` (x, m, Σ) and
        any parameters, or a callable (x, m, Σ) -> such a column. Dimension-free: a (DIM, 1)
        matrix expression in the MatrixSymbols of `matrix_gaussian()`.
    d : int
        The dimension, d ≥ 1 (element-wise: d ≤ `MAX_ELEMENT_D`).
    layer : LayerSymbols, optional
        The control symbols the field uses, named for `compile_moment_rhs` (MatrixSymbols for
        a matrix-expression field).
    key : tuple, optional
        The compilation-cache key; default: built from the derived equations.

    Returns
    -------
    MomentSystem
        The equations; `exact` is True iff X is affine in x.

    Raises
    ------
    InvalidInputError
        If d is not a positive integer, exceeds `MAX_ELEMENT_D` for an element-wise field, the
        field has not d components or has a string entry, or a matrix-expression field comes
        with element-wise `layer` symbols or has the wrong shape.
    NotImplementedError
        If a term has no closed-form Gaussian expectation (neither polynomial in x nor
        coeff · relu(affine in x)), or a matrix-expression term is not P x, a constant or
        L relu(U x + c).

    See Also
    --------
    transformer_system : the system of the Transformer field (both forms).
    expectations : the Gaussian expectations used.
    compile_moment_rhs : a numeric right-hand side of the result.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    An affine field X = a x + c is exact: ṁ = a m + c, Σ̇ = 2aΣ. A quadratic one is a closure:

    >>> import sympy as sp
    >>> from riccati_tf.symbolic import derive_moment_equations, gaussian_symbols
    >>> (x,) = gaussian_symbols(1).xs
    >>> a, c = sp.symbols("a c", real=True)
    >>> system = derive_moment_equations([a * x + c], 1)
    >>> system.exact, system.dmean, system.dcov
    (True, Matrix([[a*m_1 + c]]), Matrix([[2*Sigma_1_1*a]]))
    >>> derive_moment_equations([x ** 2], 1).exact
    False
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


def _factors(term: MatrixExpr) -> tuple[sp.Expr, list[MatrixExpr]]:
    coeff, mm = term.as_coeff_mmul()
    factors = list(mm.args) if isinstance(mm, MatMul) else [mm]
    return coeff, factors


def _affine_parts(expr: MatrixExpr, x: sp.MatrixSymbol, *, allow_relu: bool = False
                  ) -> tuple[list[MatrixExpr], list[MatrixExpr],
                             list[tuple[MatrixExpr, MatrixExpr]]]:
    """Split an expanded matrix expression into (linear coefficients P_i of P_i x, constant
    terms, relu terms (L, argument) of L relu(argument)); anything else raises."""
    linear: list[MatrixExpr] = []
    const: list[MatrixExpr] = []
    relus: list[tuple[MatrixExpr, MatrixExpr]] = []
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


def _matadd(terms: Sequence[MatrixExpr], rows: sp.Expr | int,
            cols: sp.Expr | int) -> MatrixExpr:
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
    for i, (left, arg) in enumerate(relus, start=1):
        rg = rectified_gaussian()
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
