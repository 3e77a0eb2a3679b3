"""Hypothesis strategies for hostile input to the public API: numbers at every float64 magnitude
(subnormal to 1.8e308), NaN and ±Inf, complex, bool, string, bytes, None, Fractions, Decimals,
integers beyond float64, and arrays of them in float, complex, bool, string and object dtypes,
as nested lists, with degenerate shapes ((), (0,), (0, 0), (1, 0), 3-D, non-square, ragged).

`valid_*` strategies draw inputs the package must accept: symmetric positive semidefinite
covariances and layer parameters scaled by a power of two anywhere in the float64 range.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

TINY = 5e-324
BIG = float(np.finfo(float).max)
#: magnitudes where naive norms and products overflow or underflow
LANDMARKS = (0.0, -0.0, TINY, -TINY, 1e-310, 2.2250738585072014e-308, 1e-300, 1e-150, 1e150,
             1e300, 1e308, BIG, -BIG)

finite_floats = st.floats(allow_nan=False, allow_infinity=False, allow_subnormal=True,
                          width=64) | st.sampled_from(LANDMARKS)
any_floats = finite_floats | st.sampled_from((np.nan, np.inf, -np.inf))
exponents = st.integers(-1070, 1020)

#: one entry of an array a user might pass, by kind; "real" ones are numbers the policy accepts
#: unless they fall outside the float64 range
real_entries = st.one_of(
    any_floats,
    st.integers(-(2**64), 2**64),
    st.integers(-(10**400), 10**400),
    st.fractions(max_denominator=10**30),
    st.builds(Fraction, st.integers(-5, 5), st.just(10**400)),
    st.decimals(allow_nan=True, allow_infinity=True, places=None),
    st.sampled_from([Decimal("sNaN"), np.float32(0.1), np.int8(-3), np.longdouble("1e400"),
                     np.longdouble("1e-400"), np.longdouble(1) / 3]),
)
non_real_entries = st.one_of(
    st.complex_numbers(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.text(alphabet="0123456789.e-+ ", max_size=6),
    st.binary(max_size=3),
    st.none(),
    st.sampled_from([np.True_, np.complex64(1), np.str_("1"), {"a": 1}, {1.0}, [1.0, 2.0],
                     object()]),
)
hostile_entries = st.one_of(real_entries, real_entries, non_real_entries)


def shapes_around(d: int) -> st.SearchStrategy[tuple[int, ...]]:
    """The shape (d, d) most of the time; else a degenerate or mismatched one."""
    wrong = st.sampled_from([(), (0,), (0, 0), (1, 0), (0, 1), (d,), (d, d + 1), (d + 1, d + 1),
                             (d, d, d), (1, d, d)])
    return st.one_of(st.just((d, d)), st.just((d, d)), wrong)


@st.composite
def nested_lists(draw, shape: tuple[int, ...], entries=hostile_entries):
    """Nested Python lists of `shape` (ragged with some probability)."""
    if not shape:
        return draw(entries)
    rows = [draw(nested_lists(shape[1:], entries)) for _ in range(shape[0])]
    if rows and draw(st.integers(0, 9)) == 0:
        rows[-1] = rows[-1][:-1] if isinstance(rows[-1], list) and rows[-1] else [rows[-1]]
    return rows


@st.composite
def float_arrays(draw, shape: tuple[int, ...]) -> np.ndarray:
    """float64 arrays at one magnitude 2^k, with sprinkled NaN/Inf/landmarks."""
    base = draw(arrays(np.float64, shape, elements=st.floats(-4, 4, width=64)))
    out = np.ldexp(base, draw(exponents))
    if out.size and draw(st.booleans()):
        flat = out.reshape(-1)
        flat[draw(st.integers(0, flat.size - 1))] = draw(any_floats)
    return out


def hostile_arrays(d: int) -> st.SearchStrategy:
    """What a user might pass where a d×d matrix (or, with a (d,) shape, a vector) belongs."""
    def typed(shape):
        return st.one_of(
            float_arrays(shape),
            float_arrays(shape).map(lambda a: a + 1j * (a != 0)),
            float_arrays(shape).map(lambda a: a.astype(complex)),
            float_arrays(shape).map(lambda a: a > 0),
            float_arrays(shape).map(lambda a: a.astype(str)),
            float_arrays(shape).map(lambda a: a.astype(np.longdouble) * np.longdouble(3)),
            float_arrays(shape).map(lambda a: a.astype(object)),
            nested_lists(shape),
            nested_lists(shape, real_entries),
        )
    return shapes_around(d).flatmap(typed)


def hostile_vectors(d: int) -> st.SearchStrategy:
    shapes = st.one_of(st.just((d,)), st.just((d,)), st.sampled_from([(), (0,), (d + 1,),
                                                                      (1, d), (d, 1), (d, d)]))
    return shapes.flatmap(lambda s: st.one_of(float_arrays(s), nested_lists(s),
                                              float_arrays(s).map(lambda a: a.astype(complex))))


hostile_times = st.one_of(
    any_floats, st.integers(-3, 3), st.integers(10**300, 10**400), st.fractions(),
    st.booleans(), st.none(), st.complex_numbers(max_magnitude=10),
    st.text(alphabet="0123456789.", max_size=4), st.just(np.float32(0.5)),
    st.just(np.array(0.5)), st.just(np.array([0.5, 1.0])))


@st.composite
def hostile_time_grids(draw, t_final: float):
    """Output-time grids: mostly sorted in [0, t_final], with duplicates, disorder, NaN, strings
    or out-of-range times mixed in."""
    n = draw(st.integers(0, 6))
    t = sorted(draw(st.lists(st.floats(0, t_final), min_size=n, max_size=n)))
    kind = draw(st.integers(0, 7))
    if kind == 1 and t:
        t.append(t[-1])
    elif kind == 2 and len(t) > 1:
        t.reverse()
    elif kind == 3:
        t.append(draw(st.sampled_from([np.nan, np.inf, -1.0, 2 * t_final, "1", None, 1j, True])))
    elif kind == 4:
        return draw(hostile_arrays(1))
    return t


# --------------------------------------------------------------------------- valid inputs

@st.composite
def valid_covariances(draw, d: int) -> np.ndarray:
    """L Lᵀ (rank 0..d, exactly symmetric) scaled by 2^k: PSD at any magnitude (a subnormal
    scale may round it to a slightly indefinite matrix; refusing that is legitimate)."""
    r = draw(st.integers(0, d))
    L = draw(arrays(np.float64, (d, r), elements=st.floats(-3, 3, width=64)))
    C = L @ L.T
    C = 0.5 * (C + C.T)
    return np.ldexp(C, draw(st.integers(-1060, 1015)))


@st.composite
def valid_params(draw, d: int, *, scalar_v: bool | None = None, max_exponent: int = 1015):
    """Layer parameters with each matrix at its own magnitude 2^k (k ≤ max_exponent)."""
    def mat(shape):
        base = draw(arrays(np.float64, shape, elements=st.floats(-2, 2, width=64)))
        return np.ldexp(base, draw(st.integers(-1060, max_exponent)))

    scalar = draw(st.booleans()) if scalar_v is None else scalar_v
    V = np.ldexp(draw(st.floats(-2, 2)), draw(st.integers(-1060, max_exponent))) * np.eye(d) \
        if scalar else mat((d, d))
    return dict(A=mat((d, d)), B=mat((d, d)), V=V, b=mat((d,)))
