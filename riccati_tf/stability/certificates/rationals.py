"""Exact rational arithmetic on the floats as given (SPEC §6): every float is a dyadic rational.

Fraction matrices: reduced row echelon form, ranges, null spaces, solves and restrictions to
invariant subspaces; the characteristic polynomial det(xI − M) by Faddeev–LeVerrier; the inertia of
a symmetric matrix by Descartes' rule of signs on its (real-rooted) characteristic polynomial; the
half-plane counts (n_left, n_axis, n_right) of the eigenvalues of M by the Routh–Hurwitz theorem
(the Cauchy index of Im p(iω)/Re p(iω) through a Sturm sequence, after splitting off
h = gcd(p(s), p(−s))). For the local certificate at Σ*: the linearisation L in vech coordinates
from the stored floats, P rounded to integers, P ≻ 0 and −(LᵀP + PL) ≻ 0 by Sylvester's criterion
on fraction-free Bareiss pivots, and the residual bound ‖F(Σ*)‖_F ≤ ACCEPT_RTOL · scale, exactly.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from ...state.params import Params
from ..equilibria import (
    ACCEPT_RTOL,
)

if TYPE_CHECKING:
    import sympy
from .constants import EXACT_MAX_D, P_BITS

__all__: list[str] = []


def _q(X: ArrayLike) -> np.ndarray:
    """The float array X as an object array of exact Fractions (floats are dyadic rationals)."""
    X = np.asarray(X, dtype=float)
    out = np.empty(X.shape, dtype=object)
    for idx, x in np.ndenumerate(X):
        out[idx] = Fraction(float(x))
    return out


def _q_eye(n: int) -> np.ndarray:
    out = np.full((n, n), Fraction(0), dtype=object)
    for i in range(n):
        out[i, i] = Fraction(1)
    return out


def _q_rref(M: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """Reduced row echelon form of a Fraction matrix and its pivot columns (exact)."""
    R = np.array(M, dtype=object, copy=True)
    rows, cols = R.shape
    pivots: list[int] = []
    for j in range(cols):
        r = len(pivots)
        if r == rows:
            break
        piv = next((i for i in range(r, rows) if R[i, j] != 0), None)
        if piv is None:
            continue
        R[[r, piv]] = R[[piv, r]]
        R[r] = R[r] / R[r, j]
        for i in range(rows):
            if i != r and R[i, j] != 0:
                R[i] = R[i] - R[i, j] * R[r]
        pivots.append(j)
    return R, pivots


def _q_range(M: np.ndarray) -> np.ndarray:
    """Columns of M that form a basis of its range (exact)."""
    return M[:, _q_rref(M)[1]]


def _q_null(M: np.ndarray) -> np.ndarray:
    """A basis of the null space of M (n columns of length M.shape[1]), exact."""
    R, pivots = _q_rref(M)
    n = M.shape[1]
    free = [j for j in range(n) if j not in pivots]
    out = np.full((n, len(free)), Fraction(0), dtype=object)
    for k, j in enumerate(free):
        out[j, k] = Fraction(1)
        for i, pj in enumerate(pivots):
            out[pj, k] = -R[i, j]
    return out


def _q_solve(M: np.ndarray, B: np.ndarray) -> np.ndarray:
    """X with M X = B for an invertible square Fraction matrix M (exact Gauss–Jordan)."""
    n = M.shape[0]
    R, pivots = _q_rref(np.hstack([M, B]))
    if pivots[:n] != list(range(n)):
        raise ArithmeticError("singular system")
    return R[:n, n:]


def _q_restrict(A: np.ndarray, U: np.ndarray) -> np.ndarray:
    """A restricted to the A-invariant subspace spanned by the columns of U: A U = U A_U."""
    return _q_solve(U.T.dot(U), U.T.dot(A.dot(U)))


def _q_charpoly(M: np.ndarray) -> list[Fraction]:
    """det(xI − M) = x^n + c₁x^{n−1} + … + c_n, coefficients highest first (Faddeev–LeVerrier)."""
    n = M.shape[0]
    coeffs = [Fraction(1)]
    Mk = np.full((n, n), Fraction(0), dtype=object)
    eye = _q_eye(n)
    for k in range(1, n + 1):
        Mk = M.dot(Mk) + coeffs[-1] * eye
        coeffs.append(-sum(np.diagonal(M.dot(Mk)), Fraction(0)) / k)
    return coeffs


def _sym_inertia(S: np.ndarray) -> tuple[int, int, int]:
    """(n₊, n₀, n₋) of a symmetric Fraction matrix, exactly: its characteristic polynomial has
    real roots only, so Descartes' rule of signs counts the positive (and, at −x, negative) ones
    exactly; n₀ is the number of trailing zero coefficients."""
    c = _q_charpoly(S)
    n = len(c) - 1
    zero = next(k for k in range(n + 1) if c[n - k] != 0) if any(c) else n
    signs = [x > 0 for x in c if x != 0]
    pos = sum(a != b for a, b in itertools.pairwise(signs))
    return pos, zero, n - pos - zero


def _sympy_poly(coeffs: Sequence[Fraction], var: str) -> sympy.Poly:
    import sympy

    return sympy.Poly([sympy.Rational(c.numerator, c.denominator) for c in coeffs],
                      sympy.Symbol(var), domain="QQ")


def _sign_variations(polys: Iterable[sympy.Poly], at_minus_infinity: bool) -> int:
    signs = []
    for f in polys:
        s = f.LC() > 0
        signs.append(s != (at_minus_infinity and f.degree() % 2 == 1))
    return sum(a != b for a, b in itertools.pairwise(signs))


def _cauchy_index(f0: sympy.Poly, f1: sympy.Poly) -> int:
    """Cauchy index of f1/f0 over ℝ by the generalised Sturm sequence
    f_{k+1} = −rem(f_{k−1}, f_k)."""
    seq = [f0, f1]
    while not seq[-1].is_zero:
        seq.append(-seq[-2].rem(seq[-1]))
    seq = [f for f in seq if not f.is_zero]
    return _sign_variations(seq, True) - _sign_variations(seq, False)


def _on_axis(p: sympy.Poly) -> int:
    """Number of roots of the real polynomial p on iℝ, with multiplicity: the real roots of
    gcd(Re p(iω), Im p(iω))."""
    U, V = _axis_parts(p)
    g = U.gcd(V) if not V.is_zero else U
    return 0 if g.degree() <= 0 else len(g.real_roots())


def _axis_parts(p: sympy.Poly) -> tuple[sympy.Poly, sympy.Poly]:
    """(U, V) with p(iω) = U(ω) + i V(ω)."""
    import sympy

    w = sympy.Symbol("w")
    n = p.degree()
    U, V = [], []
    for i, a in enumerate(p.all_coeffs()):
        k = n - i
        unit = (1, 0, -1, 0)[k % 4], (0, 1, 0, -1)[k % 4]  # i^k = unit[0] + i unit[1]
        U.append(a * unit[0])
        V.append(a * unit[1])
    return sympy.Poly(U, w, domain="QQ"), sympy.Poly(V, w, domain="QQ")


def _half_planes(M: np.ndarray) -> tuple[int, int, int]:
    """(n_left, n_axis, n_right): eigenvalues of the Fraction matrix M with Re λ < 0, = 0, > 0,
    with multiplicity, exactly.

    With h = gcd(p(s), p(−s)) (p the characteristic polynomial), h holds every root on iℝ and
    every pair ±z, so n_right(h) = (deg h − n_axis)/2; q = p/h has no root on iℝ, and the
    argument principle on iℝ (Routh–Hurwitz through the Cauchy index of the real and imaginary
    parts of q(iω)) gives n_left(q) − n_right(q) = −Ind(V/U) (deg q even) or Ind(U/V) (odd)."""
    p = _sympy_poly(_q_charpoly(M), "s")
    n = p.degree()
    import sympy

    s = sympy.Symbol("s")
    h = p.gcd(p.compose(sympy.Poly(-s, s, domain="QQ")))
    q = p.quo(h)
    axis = _on_axis(h)
    m = q.degree()
    if m > 0:
        U, V = _axis_parts(q)
        diff = -_cauchy_index(U, V) if m % 2 == 0 else _cauchy_index(V, U)
    else:
        diff = 0
    right = (m - diff) // 2 + (h.degree() - axis) // 2
    return n - right - axis, axis, right


def exact_rank(cov: np.ndarray) -> int | None:
    """rank of the float matrix as an exact rational matrix (d ≤ EXACT_MAX_D), else None."""
    if cov.shape[0] > EXACT_MAX_D:
        return None
    return len(_q_rref(_q(cov))[1])


def _dyadic(X: np.ndarray) -> tuple[np.ndarray, int]:
    """X = Z · 2^e exactly, Z an object array of Python ints (floats are dyadic rationals)."""
    fr = [Fraction(float(x)) for x in np.ravel(X)]
    e = min((-(f.denominator.bit_length() - 1) for f in fr if f), default=0)
    Z = np.array([int(f * Fraction(2) ** (-e)) for f in fr], dtype=object).reshape(X.shape)
    return Z, e


def _dy_add(a: tuple, b: tuple) -> tuple:
    (Za, ea), (Zb, eb) = a, b
    e = min(ea, eb)
    return Za * (2 ** (ea - e)) + Zb * (2 ** (eb - e)), e


def _dy_mul(a: tuple, b: tuple) -> tuple:
    return a[0].dot(b[0]), a[1] + b[1]


def _dy_kron(a: tuple, b: tuple) -> tuple:
    return np.kron(a[0], b[0]), a[1] + b[1]


def _exact_ok(p: Params, cov: np.ndarray, P: np.ndarray) -> bool:
    """Exact: residual bound, P̃ ≻ 0 and −(L_vᵀP̃ + P̃L_v) ≻ 0 with L_v the linearisation in
    vech coordinates (h = (H_ij), i ≤ j) built from the stored floats as exact rationals and
    P̃ = round(2^k · D P D) (D = diag(1, √2): orthonormal → vech coordinates)."""
    d = p.d
    S = _dyadic(cov)
    A = _dyadic(p.A)
    eye = (np.eye(d, dtype=int).astype(object), 0)
    # M = A + Σ_h V_h Σ B_h, then the Kronecker form of L (row-major vec)
    M = A
    heads = [(_dyadic(V), _dyadic(B)) for V, B in p.heads]
    for V, B in heads:
        M = _dy_add(M, _dy_mul(_dy_mul(V, S), B))
    full = _dy_add(_dy_kron(M, eye), _dy_kron(eye, M))
    for V, B in heads:
        BS_T = _dy_mul(B, S)
        BS_T = (BS_T[0].T, BS_T[1])
        SBt = _dy_mul(S, (B[0].T, B[1]))
        full = _dy_add(full, _dy_add(_dy_kron(V, BS_T), _dy_kron(SBt, V)))
    iu, ju = np.triu_indices(d)
    dup = np.zeros((d * d, iu.size), dtype=object)
    dup[:] = 0
    for k, (i, j) in enumerate(zip(iu, ju, strict=True)):
        dup[i * d + j, k] = 1
        dup[j * d + i, k] = 1
    Lv = full[0][iu * d + ju, :].dot(dup)  # exact vech(L(H)) = Lv · vech(H) · 2^{e}
    # P in vech coordinates, rounded to integers
    w = np.where(iu == ju, 1.0, np.sqrt(2.0))
    Pv = (w[:, None] * P) * w[None, :]
    k = P_BITS - int(np.ceil(np.log2(np.abs(Pv).max())))
    Pi = np.array([[round(float(np.ldexp(x, k))) for x in row] for row in Pv], dtype=object)
    Pi = np.triu(Pi) + np.triu(Pi, 1).T
    Mq = -(Lv.T.dot(Pi) + Pi.dot(Lv))
    if not (_bareiss_pd(Pi) and _bareiss_pd(Mq)):
        return False
    # residual: ‖F‖_F² ≤ ACCEPT_RTOL² (‖AΣ‖_F² + Σ_h ‖V_hΣB_hΣ‖_F²), exactly
    AS = _dy_mul(A, S)
    Fm = _dy_add(AS, (AS[0].T, AS[1]))
    scale2 = Fraction(int((AS[0] * AS[0]).sum())) * Fraction(2) ** (2 * AS[1])
    for V, B in heads:
        Wm = _dy_mul(_dy_mul(_dy_mul(V, S), B), S)
        Fm = _dy_add(Fm, _dy_add(Wm, (Wm[0].T, Wm[1])))
        scale2 += Fraction(int((Wm[0] * Wm[0]).sum())) * Fraction(2) ** (2 * Wm[1])
    f2 = Fraction(int((Fm[0] * Fm[0]).sum())) * Fraction(2) ** (2 * Fm[1])
    return f2 <= Fraction(ACCEPT_RTOL) ** 2 * scale2


def _bareiss_pd(M: np.ndarray) -> bool:
    """Exact positive definiteness of a symmetric integer matrix: every leading principal minor
    > 0 (Sylvester), the minors being the pivots of fraction-free Bareiss elimination."""
    a = [[int(x) for x in row] for row in M]
    n = len(a)
    prev = 1
    for k in range(n):
        if a[k][k] <= 0:
            return False
        akk = a[k][k]
        for i in range(k + 1, n):
            aik = a[i][k]
            row_i, row_k = a[i], a[k]
            for j in range(k + 1, n):
                row_i[j] = (row_i[j] * akk - aik * row_k[j]) // prev
        prev = akk
    return True
