"""Gaussian expectations for x ~ N(m, Σ): polynomials (Isserlis/Wick), rectified linear units,
and exponential tilting (SPEC §2).

Polynomials. With z = x − m ~ N(0, Σ), Isserlis' theorem gives

    E[z_{i1} ⋯ z_{i2k}] = Σ over pairings ∏ Σ_{ij},   odd moments = 0,

and p(x) = Σ_α ∂^α p(m) z^α / α! (Taylor at the mean, finite for a polynomial), so
E[p(x)] = Σ_α ∂^α p(m) E[z^α] / α!. Coefficients may be arbitrary expressions in m, Σ and the
controls (rational ones included); nothing is expanded.

ReLU. For u = aᵀx + c ~ N(μ, s²), μ = aᵀm + c, s² = aᵀΣa, the closed forms E[relu(u)] and
E[relu'(u)] = P(u > 0) are derived once by integrating the one-dimensional density
(`rectified_gaussian`); E[(x − m) relu(u)] = Σa · E[relu'(u)] (Stein's identity).

Tilting. For y ~ N(m, Σ) and q(y) = ½ yᵀHy + wᵀy + const, the law ∝ e^{q(y)} N(y; m, Σ) is
N(m', Σ') with

    m' = (I − ΣH)⁻¹ (m + Σw),   Σ' = (I − ΣH)⁻¹ Σ,

whenever Σ⁻¹ − H ≻ 0 on the range of Σ (the integrals converge). For linear q (H = 0) this is
the gradient of the log-MGF: m' = ∇_w log E[e^{wᵀy}] = m + Σw (the MGF of wᵀy is derived by
completing the square in its one-dimensional integrand). For quadratic q it is the completed
square, reached through Stein's identity E[(y − m) f(y)] = Σ E[∇f(y)] with f = e^{q}:
m' − m = Σ(Hm' + w).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from math import factorial, prod
from typing import Any

import sympy as sp
from sympy.matrices.expressions import MatrixExpr
from sympy.matrices.expressions.applyfunc import ElementwiseApplyFunction

from ..errors import InvalidInputError
from ._input import as_expr
from .symbols import GaussianSymbols

__all__ = [
    "Relu",
    "expectation",
    "expectations",
    "isserlis",
    "log_mgf",
    "rectified_gaussian",
    "relu",
    "tilt",
    "tilted_mean",
]

_U = sp.Dummy("u", real=True)


class relu(sp.Function):
    """relu(u) = max(u, 0), with relu'(u) = Heaviside(u).

    A SymPy function: it evaluates to u or 0 when the sign of u is known, stays unevaluated
    otherwise, differentiates to Heaviside(u), rewrites as Max(u, 0) and prints as
    ``\\operatorname{relu}`` in LaTeX. Its Gaussian expectations for an affine argument
    u = aᵀx + c ~ N(μ, s²) are the closed forms of `rectified_gaussian`.

    Parameters
    ----------
    u : sympy.Expr
        The argument (a SymPy expression or a number).

    Raises
    ------
    None
        Arguments are SymPy objects or numbers, as for every SymPy function.

    See Also
    --------
    Relu : relu entry-wise on a matrix expression (dimension-free form).
    rectified_gaussian : E[relu(u)] and P(u > 0) for u ~ N(μ, s²).
    expectations : handles terms coeff · relu(affine in x).

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures"
       (ReLU feed-forward).

    Examples
    --------
    >>> import sympy as sp
    >>> from riccati_tf.symbolic import relu
    >>> u = sp.Symbol("u", real=True)
    >>> relu(-2), relu(3), relu(u).diff(u)
    (0, 3, Heaviside(u))
    >>> relu(u).rewrite(sp.Max)
    Max(0, u)
    """

    @classmethod
    def eval(cls, u: sp.Expr) -> sp.Expr | None:
        """u when u ≥ 0, 0 when u ≤ 0, None (unevaluated) otherwise."""
        if u.is_extended_nonnegative:
            return u
        if u.is_extended_nonpositive:
            return sp.S.Zero
        return None

    def fdiff(self, argindex: int = 1) -> sp.Expr:
        """relu'(u) = Heaviside(u)."""
        return sp.Heaviside(self.args[0])

    def _eval_rewrite_as_Max(self, u: sp.Expr, **kwargs: Any) -> sp.Expr:
        return sp.Max(u, 0)

    def _latex(self, printer: Any) -> str:
        return rf"\operatorname{{relu}}\left({printer._print(self.args[0])}\right)"


class Relu(ElementwiseApplyFunction):
    """relu applied entry-wise to a column matrix expression (dimension-free form).

    ``Relu(U x + c)`` is the vector (relu((Ux + c)_i))_i of the ReLU feed-forward term
    W relu(U x + c) of SPEC §1 in MatrixSymbols; the matrix derivation splits the field into
    affine terms and such terms L · Relu(U x + c).

    Parameters
    ----------
    *args : sympy.MatrixExpr
        The column matrix expression (the last argument; SymPy's reconstruction passes the
        applied function first, which is always relu).

    Raises
    ------
    None
        SymPy checks the argument.

    See Also
    --------
    relu : the scalar function.
    transformer_field : builds W Relu(U x + c) for ffn="relu".
    derive_moment_equations : derives the Gaussian closure of such a field.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures"
       (ReLU feed-forward).

    Examples
    --------
    >>> import sympy as sp
    >>> from riccati_tf.symbolic import DIM, Relu, matrix_gaussian
    >>> U, c = sp.MatrixSymbol("U", DIM, DIM), sp.MatrixSymbol("c", DIM, 1)
    >>> r = Relu(U * matrix_gaussian().x + c)
    >>> r.shape, r.argument
    ((d, 1), U*x + c)
    """

    def __new__(cls, *args: sp.Basic) -> Relu:
        expr = args[-1]
        return super().__new__(cls, sp.Lambda(_U, relu(_U)), expr)

    @property
    def argument(self) -> MatrixExpr:
        """The matrix expression relu is applied to."""
        return self.expr

    def _latex(self, printer: Any) -> str:
        return rf"\operatorname{{relu}}\left({printer._print(self.expr)}\right)"


# --------------------------------------------------------------------------- polynomials


def isserlis(indices: Sequence[int], cov: sp.MatrixBase,
             _memo: dict[tuple[int, ...], sp.Expr] | None = None) -> sp.Expr:
    """E[z_{i1} ⋯ z_{ik}] for z ~ N(0, cov): the sum over pairings of ∏ cov[i, j] (0 if k odd).

    Isserlis' (Wick's) theorem,

        E[z_{i1} ⋯ z_{i2k}] = Σ over pairings ∏ Σ_{ij},   odd moments = 0,

    computed by the recursion E[z_a z_rest] = Σ_j Σ_{a j} E[z_{rest without j}] over the
    distinct indices j of the rest (times their multiplicity), memoised on sorted index tuples.

    Parameters
    ----------
    indices : sequence of int
        0-based coordinates i1, ..., ik (repeats allowed; the order does not matter).
    cov : (d, d) sympy matrix
        The symmetric covariance Σ (symbols, numbers or expressions).
    _memo : dict, optional
        A memo {sorted index tuple: moment} shared between calls with the same `cov`
        (`expectations` passes one); default: a fresh one.

    Returns
    -------
    sympy.Expr
        The moment, a polynomial in the entries of `cov` (0 for an odd number of indices).

    Raises
    ------
    TypeError
        If an index is not an integer.
    IndexError
        If an index is outside the matrix.

    See Also
    --------
    expectations : E[p(x)] of a polynomial from these moments.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".
    .. [2] L. Isserlis, "On a formula for the product-moment coefficient of any order of a
       normal frequency distribution in any number of variables", Biometrika 12, 1918.

    Examples
    --------
    >>> from riccati_tf.symbolic import gaussian_symbols, isserlis
    >>> S = gaussian_symbols(2).cov
    >>> isserlis((0, 0, 1, 1), S)
    Sigma_1_1*Sigma_2_2 + 2*Sigma_1_2**2
    >>> isserlis((0, 1, 1), S)
    0
    """
    memo: dict[tuple[int, ...], sp.Expr] = {} if _memo is None else _memo

    def rec(t: tuple[int, ...]) -> sp.Expr:
        if len(t) % 2:
            return sp.S.Zero
        if not t:
            return sp.S.One
        if t in memo:
            return memo[t]
        first, rest = t[0], t[1:]
        terms = []
        for j in sorted(set(rest)):
            k = rest.index(j)
            terms.append(rest.count(j) * cov[first, j] * rec(rest[:k] + rest[k + 1:]))
        memo[t] = out = sp.Add(*terms)
        return out

    return rec(tuple(sorted(int(i) for i in indices)))


class Differentiator:
    """∂/∂x_j with a memo per variable, so that subexpressions shared between the components of
    a field (the attention term of every x_j) are differentiated once. Sums, products and integer
    powers are handled here; anything else goes to `sympy.diff`."""

    def __init__(self) -> None:
        self._memo: dict[sp.Symbol, dict[sp.Basic, sp.Expr]] = {}

    def __call__(self, expr: sp.Expr, x: sp.Symbol) -> sp.Expr:
        memo = self._memo.setdefault(x, {})

        def rec(e: sp.Basic) -> sp.Expr:
            out = memo.get(e)
            if out is not None:
                return out
            if e.is_Atom:
                out = sp.S.One if e == x else sp.S.Zero
            elif e.is_Add:
                out = sp.Add(*(rec(a) for a in e.args))
            elif e.is_Mul:
                args = e.args
                terms = []
                for i, a in enumerate(args):
                    da = rec(a)
                    if da != 0:
                        terms.append(sp.Mul(*args[:i], da, *args[i + 1:]))
                out = sp.Add(*terms)
            elif e.is_Pow and e.exp.is_Integer:
                db = rec(e.base)
                out = e.exp * e.base ** (e.exp - 1) * db if db != 0 else sp.S.Zero
            else:
                out = e.diff(x)
            memo[e] = out
            return out

        return rec(expr)


def _taylor_at_mean(p: sp.Expr, g: GaussianSymbols,
                    diff: Differentiator) -> dict[tuple[int, ...], sp.Expr]:
    """{sorted index tuple α: ∂^α p(m) / α!} for a polynomial p in x (all nonzero terms)."""
    xs, at_mean = g.xs, dict(zip(g.xs, g.mean, strict=True))
    out: dict[tuple[int, ...], sp.Expr] = {}
    frontier: list[tuple[tuple[int, ...], sp.Expr]] = [((), p)]
    while frontier:
        t, expr = frontier.pop()
        value = expr.xreplace(at_mean)
        if value != 0:
            out[t] = value / prod(factorial(t.count(i)) for i in set(t))
        free = expr.free_symbols
        for j in range(t[-1] if t else 0, len(xs)):
            if xs[j] in free:
                de = diff(expr, xs[j])
                if de != 0:
                    frontier.append(((*t, j), de))
    return out


# --------------------------------------------------------------------------- ReLU


@dataclass(frozen=True)
class RectifiedGaussian:
    """Closed forms for u ~ N(mu, s²), s > 0: mean = E[relu(u)], slope = E[relu'(u)] = P(u > 0),
    cross = E[(u − mu) relu(u)] (= s² · slope by Stein's identity), all derived by integration."""

    mu: sp.Symbol
    s: sp.Symbol
    mean: sp.Expr
    slope: sp.Expr
    cross: sp.Expr


def _normal_density(u: sp.Expr, mu: sp.Expr, s: sp.Expr) -> sp.Expr:
    return sp.exp(-(u - mu) ** 2 / (2 * s ** 2)) / (sp.sqrt(2 * sp.pi) * s)


@lru_cache(maxsize=1)
def rectified_gaussian() -> RectifiedGaussian:
    """Derive E[relu(u)], P(u > 0) and E[(u − μ) relu(u)] for u ~ N(μ, s²) by integration.

    The one-dimensional integrals ∫_0^∞ u ρ(u) du, ∫_0^∞ ρ(u) du and ∫_0^∞ (u − μ) u ρ(u) du of
    the N(μ, s²) density ρ are computed by `sympy.integrate` once (cached); the third equals
    s² · P(u > 0) (Stein's identity).

    Returns
    -------
    RectifiedGaussian
        The symbols mu, s (s > 0) and the closed forms mean, slope, cross.

    Raises
    ------
    None
        The integrals are of a fixed form.

    See Also
    --------
    expectations : uses these forms for terms coeff · relu(aᵀx + c).
    relu : the function integrated.

    Notes
    -----
    The first call integrates symbolically (several seconds); later calls return the cached
    forms. At μ = 0 the slope is P(u > 0) = 1/2.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures"
       (ReLU feed-forward: the Gaussian flow is a short-time approximation).

    Examples
    --------
    At μ = 0 half the mass is positive and E[relu(u)] = s/√(2π); Stein's identity holds:

    >>> import sympy as sp
    >>> from riccati_tf.symbolic.expectations import rectified_gaussian
    >>> r = rectified_gaussian()
    >>> r.slope.subs(r.mu, 0)
    1/2
    >>> sp.simplify(r.mean.subs(r.mu, 0) - r.s / sp.sqrt(2 * sp.pi))
    0
    >>> sp.simplify(r.cross - r.s**2 * r.slope)
    0
    """
    u, mu, s = sp.Symbol("u", real=True), sp.Symbol("mu", real=True), sp.Symbol("s", positive=True)
    rho = _normal_density(u, mu, s)
    mean = sp.simplify(sp.integrate(u * rho, (u, 0, sp.oo)))
    slope = sp.simplify(sp.integrate(rho, (u, 0, sp.oo)))
    cross = sp.simplify(sp.integrate((u - mu) * u * rho, (u, 0, sp.oo)))
    return RectifiedGaussian(mu, s, mean, slope, cross)


@lru_cache(maxsize=1)
def _mgf_exponent() -> sp.Expr:
    """c with log E[e^u] = c s² for u ~ N(0, s²), by completing the square in the integrand:
    u − u²/(2s²) = a(u − u*)² + κ with a = −1/(2s²), so E[e^u] = e^κ (the rest integrates the
    N(u*, s²) density to 1) and c = κ / s² (= 1/2)."""
    u, s = sp.Symbol("u", real=True), sp.Symbol("s", positive=True)
    exponent = sp.Poly(sp.log(sp.exp(u) * _normal_density(u, 0, s) * sp.sqrt(2 * sp.pi) * s)
                       .expand(force=True), u)
    a, b, c = (exponent.coeff_monomial(u ** k) for k in (2, 1, 0))
    if sp.simplify(a + 1 / (2 * s ** 2)) != 0:
        raise AssertionError("the tilted integrand is not an N(·, s²) density")
    coeff = sp.simplify((c - b ** 2 / (4 * a)) / s ** 2)
    if coeff.free_symbols:
        raise AssertionError(f"log-MGF of N(0, s²) is not quadratic in s: {coeff}")
    return coeff


def _split_relu_term(term: sp.Expr,
                     g: GaussianSymbols) -> tuple[sp.Expr, sp.Expr, sp.ImmutableMatrix]:
    """term = coeff · relu(u) with coeff free of x and u affine in x → (coeff, u), else raise."""
    coeff, dep = term.as_independent(*g.xs, as_Add=False)
    if not isinstance(dep, relu):
        raise NotImplementedError(f"E[{term}]: only polynomials in x and (x-free) · relu(affine "
                                  "in x) have closed-form Gaussian expectations here")
    u = dep.args[0]
    grad = [u.diff(x) for x in g.xs]
    if not u.is_polynomial(*g.xs) or any(gi.has(*g.xs) for gi in grad):
        raise NotImplementedError(f"relu({u}): the argument must be affine in x")
    return coeff, u, sp.ImmutableMatrix(grad)


def expectations(expr: sp.Expr | float, g: GaussianSymbols, *, residuals: bool = False,
                 diff: Differentiator | None = None
                 ) -> sp.Expr | tuple[sp.Expr, sp.ImmutableMatrix]:
    """E[p(x)] for x ~ N(m, Σ); with residuals=True also (E[(x_i − m_i) p(x)])_i as a d×1 matrix.

    Polynomials: with z = x − m ~ N(0, Σ), the Taylor expansion at the mean (finite) and
    Isserlis' theorem give

        E[p(x)] = Σ_α ∂^α p(m) E[z^α] / α!,   E[z_i p(x)] = Σ_α ∂^α p(m) E[z_i z^α] / α!.

    ReLU terms coeff · relu(u), u = aᵀx + c ~ N(μ, s²), μ = aᵀm + c, s² = aᵀΣa: the closed forms
    of `rectified_gaussian`, and E[(x − m) relu(u)] = Σa · P(u > 0) (Stein's identity).
    Coefficients may be arbitrary expressions in m, Σ and the controls; nothing is expanded.

    Parameters
    ----------
    expr : sympy.Expr or number
        p(x): a polynomial in the coordinates ``g.xs`` (any coefficients), plus terms
        coeff · relu(aᵀx + c) with coeff free of x.
    g : GaussianSymbols
        The element-wise symbols of x ~ N(m, Σ) (`gaussian_symbols(d)`).
    residuals : bool, optional
        Also return the cross moments E[(x_i − m_i) p(x)] (default False).
    diff : Differentiator, optional
        A shared memoised differentiator (reuse one across the components of a field).

    Returns
    -------
    sympy.Expr, or (sympy.Expr, (d, 1) sympy.ImmutableMatrix)
        E[p(x)]; with ``residuals=True`` the pair (E[p(x)], (E[(x_i − m_i) p(x)])_i).

    Raises
    ------
    InvalidInputError
        If `g` is dimension-free (``matrix=True``), or `expr` is a string or not a SymPy
        expression or number.
    NotImplementedError
        If a term is neither a polynomial in x nor coeff · relu(affine in x).

    See Also
    --------
    expectation : E[p(x)] alone.
    isserlis : the Gaussian moments used.
    derive_moment_equations : builds ṁ and Σ̇ from these expectations.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".
    .. [2] L. Isserlis, "On a formula for the product-moment coefficient of any order of a
       normal frequency distribution in any number of variables", Biometrika 12, 1918.

    Examples
    --------
    E[x_1²] = m_1² + Σ_11 and E[(x − m) x_1²] = 2 m_1 Σ e_1:

    >>> from riccati_tf.symbolic import expectations, gaussian_symbols
    >>> g = gaussian_symbols(2)
    >>> mean, cross = expectations(g.xs[0] ** 2, g, residuals=True)
    >>> mean
    Sigma_1_1 + m_1**2
    >>> cross.T
    Matrix([[2*Sigma_1_1*m_1, 2*Sigma_1_2*m_1]])
    """
    if g.matrix:
        raise InvalidInputError("expectations works element-wise; use gaussian_symbols(d)")
    expr = as_expr("p", expr)
    d, cov = g.d, g.cov
    memo: dict[tuple[int, ...], sp.Expr] = {}
    poly: list[sp.Expr] = []
    mean: list[sp.Expr] = []
    resid: list[sp.Expr] = [sp.S.Zero] * d
    for term in sp.Add.make_args(expr):
        if term.has(relu) and any(f.has(*g.xs) for f in term.atoms(relu)):
            coeff, u, a = _split_relu_term(term, g)
            rg = rectified_gaussian()
            Sa = cov * a
            s = sp.sqrt((a.T * Sa)[0, 0])
            sub = {rg.mu: u.xreplace(dict(zip(g.xs, g.mean, strict=True))), rg.s: s}
            mean.append(coeff * rg.mean.xreplace(sub))
            if residuals:
                slope = coeff * rg.slope.xreplace(sub)
                resid = [r + Sa[i, 0] * slope for i, r in enumerate(resid)]
        else:
            poly.append(term)
    p = sp.Add(*poly)
    if p != 0:
        if not p.is_polynomial(*g.xs):
            raise NotImplementedError(f"E[{p}]: not a polynomial in x (nor relu of an affine "
                                      "function); no closed-form Gaussian expectation here")
        coeffs = _taylor_at_mean(p, g, diff or Differentiator())
        mean.append(sp.Add(*(c * isserlis(t, cov, memo) for t, c in coeffs.items())))
        if residuals:
            resid = [r + sp.Add(*(c * isserlis((*t, i), cov, memo) for t, c in coeffs.items()))
                     for i, r in enumerate(resid)]
    total = sp.Add(*mean)
    return (total, sp.ImmutableMatrix(resid)) if residuals else total


def expectation(expr: sp.Expr | float, g: GaussianSymbols) -> sp.Expr:
    """E[p(x)] for x ~ N(m, Σ) (see `expectations`).

    E[p(x)] = Σ_α ∂^α p(m) E[z^α] / α! with z = x − m ~ N(0, Σ) (Isserlis' theorem), plus the
    closed forms of E[relu(aᵀx + c)].

    Parameters
    ----------
    expr : sympy.Expr or number
        p(x): a polynomial in ``g.xs`` (any coefficients) plus terms coeff · relu(aᵀx + c).
    g : GaussianSymbols
        The element-wise symbols of x ~ N(m, Σ) (`gaussian_symbols(d)`).

    Returns
    -------
    sympy.Expr
        E[p(x)] in the symbols m, Σ and the coefficients of p.

    Raises
    ------
    InvalidInputError
        If `g` is dimension-free or `expr` is a string or not a SymPy expression or number.
    NotImplementedError
        If a term has no closed-form Gaussian expectation here (see `expectations`).

    See Also
    --------
    expectations : also the cross moments E[(x − m) p(x)].
    isserlis : the Gaussian moments.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".
    .. [2] L. Isserlis, "On a formula for the product-moment coefficient of any order of a
       normal frequency distribution in any number of variables", Biometrika 12, 1918.

    Examples
    --------
    The fourth moment of N(m, Σ) in one dimension, m⁴ + 6m²Σ + 3Σ²:

    >>> import sympy as sp
    >>> from riccati_tf.symbolic import expectation, gaussian_symbols
    >>> g = gaussian_symbols(1)
    >>> (x,), (m,), S = g.xs, g.mean, g.cov[0, 0]
    >>> sp.expand(expectation(x ** 4, g) - (m ** 4 + 6 * m ** 2 * S + 3 * S ** 2)) == 0
    True
    """
    out = expectations(expr, g)
    assert isinstance(out, sp.Expr)  # residuals=False returns the expectation alone
    return out


# --------------------------------------------------------------------------- tilting


def _grad_hessian(q: sp.Expr,
                  y: Sequence[sp.Symbol]) -> tuple[sp.ImmutableMatrix, sp.ImmutableMatrix]:
    grad = sp.ImmutableMatrix([q.diff(v) for v in y])
    H = grad.jacobian(list(y))
    if not q.is_polynomial(*y) or H.has(*y):
        raise InvalidInputError(f"the exponent must be a polynomial of degree ≤ 2 in y, got {q}")
    return grad, sp.ImmutableMatrix(H)


def log_mgf(w: sp.MatrixBase | Sequence[sp.Expr], mean: sp.MatrixBase,
            cov: sp.MatrixBase) -> sp.Expr:
    """log E[e^{wᵀy}] for y ~ N(mean, cov) = wᵀm + c · wᵀΣw (c = 1/2, from `_mgf_exponent`).

    The constant c is derived, not typed in: for u = wᵀy − wᵀm ~ N(0, s²), s² = wᵀΣw, completing
    the square in the integrand of E[e^u] gives log E[e^u] = c s² with c = 1/2. Its gradient
    ∇_w log E[e^{wᵀy}] = m + Σw is the mean of the tilted law (SPEC §2).

    Parameters
    ----------
    w : (d, 1) sympy matrix or sequence of expressions
        The tilt w.
    mean : (d, 1) sympy matrix
        The mean m.
    cov : (d, d) sympy matrix
        The covariance Σ.

    Returns
    -------
    sympy.Expr
        wᵀm + wᵀΣw / 2.

    Raises
    ------
    sympy.ShapeError
        If the shapes of w, mean and cov do not match.

    See Also
    --------
    tilt : the tilted law N(m + Σw, Σ) from the gradient of this function.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    >>> import sympy as sp
    >>> from riccati_tf.symbolic import gaussian_symbols, log_mgf
    >>> from riccati_tf.symbolic.symbols import symbol_vector
    >>> g, w = gaussian_symbols(2), symbol_vector("w", 2)
    >>> K = log_mgf(w, g.mean, g.cov)
    >>> sp.expand(K - (w.T * g.mean)[0] - (w.T * g.cov * w)[0] / 2) == 0
    True
    """
    w = sp.ImmutableMatrix(w)
    return (w.T * mean)[0, 0] + _mgf_exponent() * (w.T * cov * w)[0, 0]


def tilt(q: sp.Expr | MatrixExpr | float, y: Sequence[sp.Symbol] | sp.MatrixSymbol,
         mean: sp.MatrixBase | MatrixExpr, cov: sp.MatrixBase | MatrixExpr
         ) -> tuple[sp.MatrixBase | MatrixExpr, sp.MatrixBase | MatrixExpr]:
    """Tilted law of y ~ N(mean, cov) under e^{q(y)}, q of degree ≤ 2 in y: (m', Σ') with
    m' = (I − ΣH)⁻¹(m + Σw), Σ' = (I − ΣH)⁻¹Σ.

    For q(y) = ½ yᵀHy + wᵀy + const the law ∝ e^{q(y)} N(y; m, Σ) is N(m', Σ') with

        m' = (I − ΣH)⁻¹ (m + Σw),   Σ' = (I − ΣH)⁻¹ Σ,

    whenever Σ⁻¹ − H ≻ 0 on the range of Σ. For linear q (H = 0) the mean is the gradient of
    the log-MGF, m' = ∇_w log E[e^{wᵀy}] = m + Σw and Σ' = Σ (SPEC §2); for quadratic q it is
    the completed square (Stein's identity m' − m = Σ(Hm' + w)). Element-wise: y a sequence of
    symbols; dimension-free: y a MatrixSymbol and q a 1×1 matrix expression.

    Parameters
    ----------
    q : sympy.Expr, 1×1 matrix expression, or number
        The exponent, a polynomial of degree ≤ 2 in y.
    y : sequence of sympy.Symbol, or (DIM, 1) MatrixSymbol
        The variable of the law.
    mean : (d, 1) sympy matrix or matrix expression
        m.
    cov : (d, d) sympy matrix or matrix expression
        Σ (symmetric; the dimension-free form imposes Σᵀ = Σ).

    Returns
    -------
    mean : (d, 1) sympy.ImmutableMatrix or matrix expression
        m'.
    cov : (d, d) sympy.ImmutableMatrix or matrix expression
        Σ'.

    Raises
    ------
    InvalidInputError
        If q is a string, is not a polynomial of degree ≤ 2 in y, or (dimension-free) is not a
        1×1 matrix expression.

    See Also
    --------
    tilted_mean : m' alone (the attention average E[y | x]).
    log_mgf : the linear case.
    attention_term : Σ_h V_h E_h[y | x] from this tilt.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    A quadratic exponent q(y) = h y²/2 + w y in one dimension: m' = (m + Σw)/(1 − Σh),
    Σ' = Σ/(1 − Σh):

    >>> import sympy as sp
    >>> from riccati_tf.symbolic import gaussian_symbols, tilt
    >>> from riccati_tf.symbolic.symbols import symbol_vector
    >>> g, (y,) = gaussian_symbols(1), symbol_vector("y", 1)
    >>> h, w = sp.symbols("h w")
    >>> m_new, cov_new = tilt(h * y ** 2 / 2 + w * y, [y], g.mean, g.cov)
    >>> m, S = g.mean[0], g.cov[0, 0]
    >>> sp.simplify(m_new[0] - (m + S * w) / (1 - S * h)) == 0
    True
    >>> sp.simplify(cov_new[0] - S / (1 - S * h)) == 0
    True
    """
    if isinstance(y, sp.MatrixSymbol):
        return matrix_tilt(q, y, mean, cov)
    q = as_expr("q", q)
    y = list(y)
    grad, H = _grad_hessian(q, y)
    w = grad.xreplace(dict.fromkeys(y, 0))
    if H.is_zero_matrix:
        wd = sp.ImmutableMatrix([sp.Dummy(f"w{i}") for i in range(len(y))])
        K = log_mgf(wd, mean, cov)
        m_new = sp.ImmutableMatrix([K.diff(v) for v in wd]).xreplace(dict(zip(wd, w, strict=True)))
        return m_new, sp.ImmutableMatrix(cov)
    lhs = sp.eye(len(y)) - cov * H
    m_new = lhs.LUsolve(sp.Matrix(mean) + cov * w)
    return sp.ImmutableMatrix(m_new), sp.ImmutableMatrix(lhs.LUsolve(sp.Matrix(cov)))


def tilted_mean(q: sp.Expr | MatrixExpr | float, y: Sequence[sp.Symbol] | sp.MatrixSymbol,
                mean: sp.MatrixBase | MatrixExpr,
                cov: sp.MatrixBase | MatrixExpr) -> sp.MatrixBase | MatrixExpr:
    """E[y e^{q(y)}] / E[e^{q(y)}] for y ~ N(mean, cov) (see `tilt`).

    m' = (I − ΣH)⁻¹(m + Σw) for q(y) = ½ yᵀHy + wᵀy + const; with q = ⟨Bx, y⟩ this is the
    attention average m + ΣBx of SPEC §2.

    Parameters
    ----------
    q : sympy.Expr, 1×1 matrix expression, or number
        The exponent, a polynomial of degree ≤ 2 in y.
    y : sequence of sympy.Symbol, or (DIM, 1) MatrixSymbol
        The variable of the law.
    mean : (d, 1) sympy matrix or matrix expression
        m.
    cov : (d, d) sympy matrix or matrix expression
        Σ.

    Returns
    -------
    (d, 1) sympy.ImmutableMatrix or matrix expression
        The tilted mean m'.

    Raises
    ------
    InvalidInputError
        As `tilt`: q a string, of degree above 2 in y, or not a 1×1 matrix expression
        (dimension-free).

    See Also
    --------
    tilt : the tilted mean and covariance.
    attention_term : the attention average of every head.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    The linear tilt of SPEC §2, E[y e^{wᵀy}] / E[e^{wᵀy}] = m + Σw:

    >>> import sympy as sp
    >>> from riccati_tf.symbolic import gaussian_symbols, tilted_mean
    >>> from riccati_tf.symbolic.symbols import symbol_vector
    >>> g, y, w = gaussian_symbols(2), symbol_vector("y", 2), symbol_vector("w", 2)
    >>> m_new = tilted_mean((w.T * y)[0], list(y), g.mean, g.cov)
    >>> sp.expand(m_new - (g.mean + g.cov * w)).is_zero_matrix
    True
    """
    return tilt(q, y, mean, cov)[0]


def _sym(expr: MatrixExpr, cov: MatrixExpr) -> MatrixExpr:
    """Impose Σᵀ = Σ on a matrix expression and tidy it."""
    return expr.xreplace({cov.T: cov}).doit()


def matrix_tilt(q: MatrixExpr, y: sp.MatrixSymbol, mean: MatrixExpr,
                cov: MatrixExpr) -> tuple[MatrixExpr, MatrixExpr]:
    """Dimension-free `tilt`: q a 1×1 matrix expression, y a MatrixSymbol; matrix calculus gives
    ∇q = Hy + w; the linear case uses ∇_w of the log-MGF wᵀm + c wᵀΣw."""
    if not isinstance(q, MatrixExpr) or q.shape != (1, 1):
        raise InvalidInputError("q must be a 1×1 matrix expression in the MatrixSymbol y")
    n = y.shape[0]
    grad = _sym(q.diff(y), cov)
    H = _sym(grad.diff(y), cov) if y in grad.free_symbols else None
    if H is not None and (y in H.free_symbols or not isinstance(H, MatrixExpr)):
        raise InvalidInputError(f"the exponent must be of degree ≤ 2 in y, got {q}")
    w = _sym(grad.subs(y, sp.ZeroMatrix(n, 1)), cov)
    if H is None:
        wd = sp.MatrixSymbol("w_tilt", n, 1)
        K = wd.T * mean + _mgf_exponent() * wd.T * cov * wd
        m_new = _sym(_sym(K.diff(wd), cov).subs(wd, w), cov)
        return m_new, cov
    inv = sp.Inverse(sp.Identity(n) - cov * H)
    return (inv * (mean + cov * w)).doit(), (inv * cov).doit()
