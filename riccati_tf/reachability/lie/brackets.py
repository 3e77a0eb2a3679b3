"""Lie brackets [f, g](z) = Dg(z) f(z) − Df(z) g(z) of polynomial fields over QQ, and their
jets at a point (shifted to it, truncated in degree).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sympy.polys.rings import PolyElement

from .exact import _Budget, rational
from .system import Field

__all__: list[str] = []


def _jacobian(field: Field, gens: Sequence[PolyElement]) -> list[list[PolyElement]]:
    return [[p.diff(x) for x in gens] for p in field]


def lie_bracket(f: Field, g: Field, gens: Sequence[PolyElement], order: int | None = None, *,
                budget: _Budget | None = None) -> Field:
    """[f, g](z) = Dg(z) f(z) − Df(z) g(z) for polynomial fields given componentwise
    (terms of total degree above `order` dropped when it is given); every product of two
    polynomials is charged len·len units to `budget` when one is given."""
    Dg, Df = _jacobian(g, gens), _jacobian(f, gens)
    R = (f[0] if f else g[0]).ring
    out = []
    for k in range(len(f)):
        acc = R.zero
        for j in range(len(f)):
            if f[j] and Dg[k][j]:
                if budget:
                    budget.charge(len(Dg[k][j]) * len(f[j]))
                acc += Dg[k][j] * f[j]
            if g[j] and Df[k][j]:
                if budget:
                    budget.charge(len(Df[k][j]) * len(g[j]))
                acc -= Df[k][j] * g[j]
        out.append(acc)
    return tuple(out) if order is None else _truncate(tuple(out), order)


def _truncate(field: Field, order: int) -> Field:
    """The field's terms of total degree ≤ order."""
    return tuple(p.ring.from_dict({m: c for m, c in p.items() if sum(m) <= order})
                 for p in field)


def _shift(field: Field, z: Sequence[Any]) -> Field:
    """The field in the coordinates w = z − z0: each component p(z0 + w)."""
    gens = field[0].ring.gens
    subs = [(g, g + c) for g, c in zip(gens, z, strict=True) if c]
    return tuple(p.compose(subs) if p and subs else p for p in field)


def _float_rows(rows: Sequence[Sequence[Any]], n: int) -> NDArray[np.float64]:
    """Rational rows as floats; a row with an entry beyond the float64 range (a point of size
    ~1e300 makes quadratic fields ~1e600) is first divided by a power of two."""
    out = np.zeros((len(rows), n))
    for i, row in enumerate(rows):
        row = [rational(x) for x in row]
        top = max(abs(x) for x in row)
        k = max(top.numerator.bit_length() - top.denominator.bit_length() - 1000, 0)
        out[i] = [float(x / 2**k) for x in row]
    return out


def _field_coefficients(field: Field) -> dict[tuple[int, tuple[int, ...]], Any]:
    return {(k, mono): c for k, p in enumerate(field) for mono, c in p.items()}
