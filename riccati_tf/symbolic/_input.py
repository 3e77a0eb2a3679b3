"""Input checks for the symbolic API: SymPy objects or numbers only, never strings.

Strings are refused before any SymPy parser could see them: the public API takes SymPy
objects (expressions, matrices, matrix expressions) or plain numbers.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from fractions import Fraction
from typing import cast

import sympy as sp
from sympy.matrices.expressions import MatrixExpr

from ..errors import InvalidInputError


def as_expr(name: str, value: object) -> sp.Expr:
    """A SymPy scalar expression from a SymPy object or a number (int, Fraction, float)."""
    if isinstance(value, str | bytes):
        raise InvalidInputError(f"{name} is a string; strings are never parsed — build the "
                                "expression with SymPy objects")
    if isinstance(value, sp.Basic):
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Number | Fraction):
        raise InvalidInputError(f"{name} must be a SymPy expression or a number, "
                                f"got {type(value).__name__}")
    if isinstance(value, Fraction):
        return sp.Rational(value.numerator, value.denominator)
    if isinstance(value, numbers.Integral):
        return sp.Integer(int(value))
    return sp.Float(value)


def as_column(name: str, value: object, d: int) -> sp.ImmutableMatrix:
    """A d×1 matrix of SymPy expressions (from a SymPy matrix or a sequence)."""
    if isinstance(value, str | bytes):
        as_expr(name, value)
    if isinstance(value, MatrixExpr) and not isinstance(value, sp.MatrixBase):
        raise InvalidInputError(f"{name} is a matrix expression; pass an explicit matrix here")
    if isinstance(value, sp.MatrixBase):
        entries = list(value)
        shape = value.shape
    else:
        try:
            entries = list(cast(Iterable[object], value))  # a TypeError is reported below
        except TypeError:
            raise InvalidInputError(f"{name} must be a SymPy matrix or a sequence of "
                                    "expressions") from None
        shape = (len(entries), 1)
    if len(entries) != d or 1 not in shape:
        raise InvalidInputError(f"{name} must have d = {d} components, got shape {shape}")
    return sp.ImmutableMatrix(d, 1, [as_expr(f"{name}[{i}]", e) for i, e in enumerate(entries)])
