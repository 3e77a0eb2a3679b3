"""Exact rational arithmetic for the Lie-bracket ranks: rationals from floats, rank over QQ.

A float x = y·2^k is read as (p/q)·2^k with p/q the nearest rational to y, q ≤
RATIONAL_DENOMINATOR; the rank of rational vectors is found by an incremental row echelon form
over QQ (`_Echelon`), whose eliminations, like the products of `brackets.lie_bracket`, are
charged to a work budget (`_Budget`).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from fractions import Fraction
from typing import Any, TypeGuard

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sympy.polys.domains import QQ

from ...errors import InvalidInputError, SolverError
from ...state.validation import as_array, as_count, as_real

__all__: list[str] = []


#: a float x = y·2^k (y ∈ [1/2, 1)) is read as (p/q)·2^k, p/q the nearest rational to y with
#: q ≤ RATIONAL_DENOMINATOR (relative change ≲ 1/q², so tiny entries stay nonzero); integers,
#: ints and Fractions are read exactly
RATIONAL_DENOMINATOR = 10**12


#: exact rational scalar types: Fractions, ints (not bools) and the ground field QQ of the rings
_EXACT = (Fraction, numbers.Integral, type(QQ(1, 2)))


def _is_exact(x: object) -> TypeGuard[numbers.Rational]:
    """True for exact rationals: ints (not bools), Fractions and QQ numbers."""
    return isinstance(x, _EXACT) and not isinstance(x, bool | np.bool_)


def rational(x: object) -> Fraction:
    """x as a rational: ints and Fractions exactly; any other real (validated as a finite
    float64) as (p/q)·2^k with y = x·2^−k ∈ [1/2, 1) read as the nearest p/q, q ≤
    RATIONAL_DENOMINATOR (a relative change ≲ 1e-24, so subnormal entries stay nonzero)."""
    if _is_exact(x):
        return Fraction(int(x)) if isinstance(x, numbers.Integral) else Fraction(
            int(x.numerator), int(x.denominator))
    f = as_real("value", x)
    if f.is_integer():
        return Fraction(int(f))
    y, k = math.frexp(f)
    return Fraction(y).limit_denominator(RATIONAL_DENOMINATOR) * Fraction(2) ** k


def _qq(x: object) -> Any:
    x = rational(x)
    return QQ(x.numerator, x.denominator)


def rational_array(name: str, value: ArrayLike,
                   validated: NDArray[np.float64] | None = None) -> NDArray[np.object_]:
    """`value` as an object array of Fractions, of the shape of `validated` (its float64 reading
    by `state.validation`, `as_array(name, value)` when not given). Arrays and lists whose
    entries are all ints or Fractions are kept exactly; otherwise every float64 entry is read
    by `rational`."""
    arr = as_array(name, value) if validated is None else validated
    if isinstance(value, (list, tuple, np.ndarray, *_EXACT)):
        obj = np.array(value, dtype=object)
        if obj.size == arr.size and all(_is_exact(x) for x in obj.flat):
            return np.vectorize(rational, otypes=[object])(obj).reshape(arr.shape)
    return np.vectorize(rational, otypes=[object])(arr)


def exact_rank(rows: Sequence[Sequence[object]]) -> int:
    """Rank over QQ of a list of rational vectors."""
    ech = _Echelon()
    return sum(ech.add({i: _qq(x) for i, x in enumerate(row) if x != 0}) for row in rows)


class _Echelon:
    """Incremental row echelon form over QQ of sparse vectors {key: value}.

    Each stored row has a pivot key absent from every row stored before it, so reducing a new
    vector against the rows in insertion order leaves no pivot key in it.
    """

    def __init__(self, budget: _Budget | None = None) -> None:
        self.rows: list[tuple[object, dict[Any, Any]]] = []
        self.budget = budget

    def reduce(self, vec: dict[Any, Any]) -> dict[Any, Any]:
        vec = dict(vec)
        for key, row in self.rows:
            c = vec.get(key)
            if c:
                if self.budget:
                    self.budget.charge(len(row))
                for k, v in row.items():
                    w = vec.get(k, 0) - c * v
                    if w:
                        vec[k] = w
                    else:
                        vec.pop(k, None)
        return vec

    def add(self, vec: dict[Any, Any]) -> bool:
        """Add vec; True when it was independent of the rows already stored."""
        vec = self.reduce(vec)
        if not vec:
            return False
        key = min(vec)
        piv = vec[key]
        self.rows.append((key, {k: v / piv for k, v in vec.items()}))
        return True


class _Budget:
    """Work units left (term products and eliminations, each weighted by `weight`, the size of
    the rational numbers in 64-bit words); SolverError when spent."""

    def __init__(self, limit: int, weight: int = 1) -> None:
        self.limit = self.left = limit
        self.weight = weight

    def charge(self, units: int) -> None:
        self.left -= units * self.weight
        if self.left < 0:
            raise SolverError(f"the bracket computation spent its work budget max_work = "
                              f"{self.limit} (term products and eliminations) without "
                              f"finishing; lower depth or pass a larger max_work")

    @property
    def spent(self) -> int:
        return self.limit - self.left


def generic_matrix(d: int, name: str) -> NDArray[np.object_]:
    """A fixed 'generic' rational d×d matrix I + N/4, N with entries in {−2, …, 2}, drawn from a
    seed made of d ≤ 100 and name (reproducible; invertible by construction check)."""
    d = as_count("d", d, maximum=100)
    if not isinstance(name, str):
        raise InvalidInputError(f"name must be a string, got {type(name).__name__}")
    rng = np.random.default_rng([d, *name.encode()])
    while True:
        N = rng.integers(-2, 3, size=(d, d))
        M = np.array([[Fraction(int(N[i, j]), 4) + (i == j) for j in range(d)] for i in range(d)],
                     dtype=object)
        if exact_rank(M.tolist()) == d:
            return M
