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

from dataclasses import dataclass
from functools import lru_cache
from math import factorial, prod

import sympy as sp
from sympy.matrices.expressions import MatrixExpr
from sympy.matrices.expressions.applyfunc import ElementwiseApplyFunction

from ..errors import InvalidInputError
from ._input import as_expr
from .symbols import GaussianSymbols

_U = sp.Dummy("u", real=True)


class relu(sp.Function):
    """relu(u) = max(u, 0), with relu'(u) = Heaviside(u)."""

    @classmethod
    def eval(cls, u):
        if u.is_extended_nonnegative:
            return u
        if u.is_extended_nonpositive:
            return sp.S.Zero
        return None

    def fdiff(self, argindex=1):
        return sp.Heaviside(self.args[0])

    def _eval_rewrite_as_Max(self, u, **kwargs):
        return sp.Max(u, 0)

    def _latex(self, printer):
        return rf"\operatorname{{relu}}\left({printer._print(self.args[0])}\right)"


class Relu(ElementwiseApplyFunction):
    """relu applied entry-wise to a column matrix expression (dimension-free form)."""

    def __new__(cls, *args):
        expr = args[-1]
        return super().__new__(cls, sp.Lambda(_U, relu(_U)), expr)

    @property
    def argument(self) -> MatrixExpr:
        return self.expr

    def _latex(self, printer):
        return rf"\operatorname{{relu}}\left({printer._print(self.expr)}\right)"


# --------------------------------------------------------------------------- polynomials


def isserlis(indices, cov, _memo: dict | None = None) -> sp.Expr:
    """E[z_{i1} ⋯ z_{ik}] for z ~ N(0, cov): the sum over pairings of ∏ cov[i, j] (0 if k odd).

    indices: a sequence of 0-based coordinates (repeats allowed); cov: a symmetric SymPy matrix.
    """
    memo = {} if _memo is None else _memo

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

    def __init__(self):
        self._memo: dict[sp.Symbol, dict[sp.Basic, sp.Expr]] = {}

    def __call__(self, expr: sp.Expr, x: sp.Symbol) -> sp.Expr:
        memo = self._memo.setdefault(x, {})

        def rec(e):
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
    out = {}
    frontier = [((), p)]
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


def _normal_density(u, mu, s):
    return sp.exp(-(u - mu) ** 2 / (2 * s ** 2)) / (sp.sqrt(2 * sp.pi) * s)


@lru_cache(maxsize=1)
def rectified_gaussian() -> RectifiedGaussian:
    """Derive E[relu(u)], P(u > 0) and E[(u − μ) relu(u)] for u ~ N(μ, s²) by integration."""
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


def _split_relu_term(term: sp.Expr, g: GaussianSymbols):
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


def expectations(expr, g: GaussianSymbols, *, residuals: bool = False,
                 diff: Differentiator | None = None):
    """E[p(x)] for x ~ N(m, Σ); with residuals=True also (E[(x_i − m_i) p(x)])_i as a d×1 matrix.

    p: a polynomial in x (any coefficients), plus terms coeff · relu(aᵀx + c) (coeff free of x).
    Polynomials: Isserlis on the Taylor coefficients at the mean. ReLU terms: the closed forms of
    `rectified_gaussian` and Stein's identity. Other non-polynomial terms raise NotImplementedError.
    diff: a shared `Differentiator` (reuse it across the components of one field).
    """
    if g.matrix:
        raise InvalidInputError("expectations works element-wise; use gaussian_symbols(d)")
    expr = as_expr("p", expr)
    d, cov = g.d, g.cov
    memo: dict = {}
    poly, mean, resid = [], [], [sp.S.Zero] * d
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


def expectation(expr, g: GaussianSymbols) -> sp.Expr:
    """E[p(x)] for x ~ N(m, Σ) (see `expectations`)."""
    return expectations(expr, g)


# --------------------------------------------------------------------------- tilting


def _grad_hessian(q: sp.Expr, y) -> tuple[sp.ImmutableMatrix, sp.ImmutableMatrix]:
    grad = sp.ImmutableMatrix([q.diff(v) for v in y])
    H = grad.jacobian(list(y))
    if not q.is_polynomial(*y) or H.has(*y):
        raise InvalidInputError(f"the exponent must be a polynomial of degree ≤ 2 in y, got {q}")
    return grad, sp.ImmutableMatrix(H)


def log_mgf(w, mean, cov) -> sp.Expr:
    """log E[e^{wᵀy}] for y ~ N(mean, cov) = wᵀm + c · wᵀΣw (c = 1/2, from `_mgf_exponent`)."""
    w = sp.ImmutableMatrix(w)
    return (w.T * mean)[0, 0] + _mgf_exponent() * (w.T * cov * w)[0, 0]


def tilt(q, y, mean, cov):
    """Tilted law of y ~ N(mean, cov) under e^{q(y)}, q of degree ≤ 2 in y: (m', Σ') with
    m' = (I − ΣH)⁻¹(m + Σw), Σ' = (I − ΣH)⁻¹Σ (module docstring). Element-wise: y a sequence of
    symbols; dimension-free: y a MatrixSymbol and q a 1×1 matrix expression (`matrix_tilt`)."""
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


def tilted_mean(q, y, mean, cov):
    """E[y e^{q(y)}] / E[e^{q(y)}] for y ~ N(mean, cov) (see `tilt`)."""
    return tilt(q, y, mean, cov)[0]


def _sym(expr, cov):
    """Impose Σᵀ = Σ on a matrix expression and tidy it."""
    return expr.xreplace({cov.T: cov}).doit()


def matrix_tilt(q, y: sp.MatrixSymbol, mean, cov):
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
