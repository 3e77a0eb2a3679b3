"""Shared verification helper: zero tests (symbolic, matrix form, exact rational points), a
matrix time-derivative by the product rule, and the verdict table.

A claim is an identity `expr = 0`. It is proved

* "symbolic": every entry simplifies to 0 (expand, then cancel, then simplify);
* "matrix form": a dimension-free matrix expression expands to 0 (Σᵀ = Σ imposed for the
  symbols declared symmetric) — the identity then holds in every dimension;
* "rational points": substituting random rationals for every symbol gives exactly 0 (a
  polynomial / rational identity checked at random points, Schwartz–Zippel style: a nonzero
  rational function vanishes at a random point with negligible probability).

Each check returns a `Verdict` (claim, method, passed, detail); a wrong identity fails.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

import sympy as sp
from sympy.matrices.expressions import (
    Identity,
    Inverse,
    MatAdd,
    MatMul,
    MatrixExpr,
    Transpose,
    ZeroMatrix,
)


@dataclass(frozen=True)
class Verdict:
    claim: str
    method: str
    passed: bool
    detail: str = ""
    seconds: float = 0.0


def _entries(expr):
    if isinstance(expr, sp.MatrixBase):
        return list(expr)
    return [expr]


def is_zero(expr) -> bool:
    """Whether a scalar expression simplifies to 0. A rational function with rational
    coefficients is evaluated in the field Q(symbols) (exact, canonical); anything else goes
    through expand, cancel(together) and simplify."""
    expr = sp.sympify(expr, strict=True) if not isinstance(expr, sp.Basic) else expr
    if expr == 0:
        return True
    symbols = sorted(expr.free_symbols, key=str)
    if symbols and expr.is_rational_function(*symbols):
        try:
            return sp.field(symbols, sp.QQ)[0].from_expr(expr) == 0
        except ValueError:  # coefficients outside Q (√2, π, ...)
            pass
    for step in (sp.expand, lambda e: sp.cancel(sp.together(e)), sp.simplify):
        expr = step(expr)
        if expr == 0:
            return True
    return False


def symbolic_zero(claim: str, expr, *, method: str = "symbolic") -> Verdict:
    """Every entry of expr (a scalar or an explicit matrix) simplifies to 0."""
    bad = [i for i, e in enumerate(_entries(expr)) if not is_zero(e)]
    detail = "" if not bad else f"entries {bad[:5]} do not simplify to 0"
    return Verdict(claim, method, not bad, detail)


def symbolic_equal(claim: str, lhs, rhs, *, method: str = "symbolic") -> Verdict:
    """lhs − rhs simplifies to 0 entrywise."""
    diff = (sp.Matrix(lhs) - sp.Matrix(rhs)) if isinstance(lhs, sp.MatrixBase) else lhs - rhs
    return symbolic_zero(claim, diff, method=method)


def _matrix_canonical(expr, symmetric: Iterable[sp.MatrixSymbol]):
    rules = {S.T: S for S in symmetric}
    for _ in range(4):
        new = sp.expand(expr.xreplace(rules)).doit()
        if new == expr:
            break
        expr = new
    return expr


def matrix_zero(claim: str, expr: MatrixExpr, *,
                symmetric: Iterable[sp.MatrixSymbol] = ()) -> Verdict:
    """A dimension-free matrix expression expands to 0 (Σᵀ = Σ for the symmetric symbols)."""
    symmetric = tuple(symmetric)
    out = _matrix_canonical(expr, symmetric)
    ok = isinstance(out, ZeroMatrix) or out == 0
    return Verdict(claim, "matrix form (any d)", ok, "" if ok else f"remainder {out}")


def matrix_equal(claim: str, lhs: MatrixExpr, rhs: MatrixExpr, *,
                 symmetric: Iterable[sp.MatrixSymbol] = ()) -> Verdict:
    return matrix_zero(claim, lhs - rhs, symmetric=symmetric)


def rational_zero(claim: str, expr, *, points: int = 3, seed: int = 0, bound: int = 7,
                  method: str | None = None) -> Verdict:
    """expr vanishes exactly at `points` random rational points (all free symbols)."""
    entries = _entries(expr)
    symbols = sorted(set().union(*(e.free_symbols for e in entries)), key=str)
    rng = random.Random(seed)

    def run():
        done = tries = 0
        while done < points:
            tries += 1
            if tries > 20 * points:
                return "could not find points where the expression is defined"
            sub = {s: sp.Rational(rng.randint(-bound, bound), rng.randint(1, bound))
                   for s in symbols}
            values = [e.xreplace(sub) for e in entries]
            if any(v.has(sp.zoo, sp.nan, sp.oo) for v in values):
                continue
            values = [sp.simplify(v) if not v.is_Rational else v for v in values]
            nonzero = [i for i, v in enumerate(values) if v != 0]
            if nonzero:
                return f"entry {nonzero[0]} = {values[nonzero[0]]} at {sub}"
            done += 1
        return ""

    detail = run()
    return Verdict(claim, method or f"exact rational points ({points})", not detail, detail)


def numeric_close(claim: str, value: float, expected: float, *, rtol: float,
                  method: str) -> Verdict:
    """A floating-point cross-check |value − expected| ≤ rtol |expected| (stated as such)."""
    ok = abs(value - expected) <= rtol * abs(expected)
    return Verdict(claim, method, ok, f"{value!r} vs {expected!r}")


def holds(claim: str, condition: bool, *, method: str, detail: str = "") -> Verdict:
    """A verdict for a boolean established by the caller (exact arithmetic or a structural fact)."""
    return Verdict(claim, method, bool(condition), "" if condition else detail)


# --------------------------------------------------------------------------- calculus


def time_derivative(expr, rules: dict) -> MatrixExpr:
    """d/dt of a matrix expression by the product rule; `rules` maps MatrixSymbols to their
    derivatives (others are constant); d(X⁻¹) = −X⁻¹ Ẋ X⁻¹, d(Xᵀ) = (Ẋ)ᵀ."""
    if isinstance(expr, sp.MatrixSymbol):
        return rules.get(expr, ZeroMatrix(*expr.shape))
    if isinstance(expr, Identity | ZeroMatrix):
        return ZeroMatrix(*expr.shape)
    if isinstance(expr, MatAdd):
        return MatAdd(*(time_derivative(a, rules) for a in expr.args))
    if isinstance(expr, MatMul):
        coeff, mats = expr.as_coeff_matrices()
        return MatAdd(*(coeff * MatMul(*mats[:i], time_derivative(M, rules), *mats[i + 1:])
                        for i, M in enumerate(mats)))
    if isinstance(expr, Transpose):
        return Transpose(time_derivative(expr.arg, rules))
    if isinstance(expr, Inverse):
        X = expr.arg
        return -Inverse(X) * time_derivative(X, rules) * Inverse(X)
    raise TypeError(f"time_derivative: unsupported node {type(expr).__name__}")


# --------------------------------------------------------------------------- running


#: the verdicts of the claims proved so far in this process, by claim (the callable itself)
_PROVED: dict[Callable, tuple[Verdict, ...]] = {}


def evaluate(claims: Iterable[Callable]) -> list[Verdict]:
    """Run every claim (each returns a Verdict or a list of them), once per process.

    A claim is a function of nothing but its code (its random points come from fixed seeds),
    so its verdict is the same every time it runs: a claim already run in this process (the
    same callable, e.g. an entry of a module's CLAIMS run by the test suite and again by the
    report) gives the verdicts of that run, time included, without running again."""
    out = []
    for claim in claims:
        if claim not in _PROVED:
            _PROVED[claim] = _run(claim)
        out.extend(_PROVED[claim])
    return out


def _run(claim: Callable) -> tuple[Verdict, ...]:
    """The claim's verdicts, each with its share of the claim's running time."""
    t0 = time.perf_counter()
    try:
        res = claim()
    except Exception as exc:  # a claim that cannot be evaluated is not proved
        name = getattr(claim, "__name__", None) or getattr(claim.func, "__name__", "claim")
        res = Verdict(name, "—", False, f"{type(exc).__name__}: {exc}")
    res = list(res) if isinstance(res, list | tuple) else [res]
    secs = (time.perf_counter() - t0) / max(len(res), 1)
    return tuple(replace(v, seconds=secs) for v in res)


def table(verdicts: list[Verdict]) -> str:
    """The verdict table: claim, method, time, PROVED/FAILED (and why)."""
    w1 = max([5, *(len(v.claim) for v in verdicts)])
    w2 = max([6, *(len(v.method) for v in verdicts)])
    lines = [f"{'claim':<{w1}}  {'method':<{w2}}  {'time':>7}  verdict",
             f"{'-' * w1}  {'-' * w2}  {'-' * 7}  -------"]
    for v in verdicts:
        mark = "PROVED" if v.passed else f"FAILED  {v.detail}"
        lines.append(f"{v.claim:<{w1}}  {v.method:<{w2}}  {v.seconds:6.2f}s  {mark}")
    n_ok = sum(v.passed for v in verdicts)
    lines.append(f"{n_ok}/{len(verdicts)} claims proved")
    return "\n".join(lines)


def main(claims: Iterable[Callable], title: str) -> int:
    """Print the title and the verdict table; exit status 0 iff every claim holds."""
    verdicts = evaluate(claims)
    print(title.strip().splitlines()[0])
    print()
    print(table(verdicts))
    return 0 if all(v.passed for v in verdicts) else 1


if __name__ == "__main__":
    sys.exit("run a proof module: python -m proofs.<name>")
