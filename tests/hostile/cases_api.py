"""Hostile cases of area "api": the public entry points (Params, Gaussian, moment_rhs, flow,
layers, certify, equilibria, steer, lie.accessibility_rank) fed NaN/Inf, huge and subnormal
numbers, complex, object, string, bool and date arrays, degenerate and mismatched shapes, wrong
types and None.

Invalid input must end in a clean error (expect="error"). Representable-but-extreme valid input
(subnormal entries, 1e±300 scales) must give a result that the case checks against an
independent reference (expect="result"): exact rational arithmetic (fractions.Fraction) for
moment_rhs and layers, mpmath matrix exponentials for flows and plans, and closed-form solutions
of the scalar Riccati equation for certify and equilibria.
"""

from __future__ import annotations

import array
import datetime
from decimal import Decimal
from fractions import Fraction

import mpmath
import numpy as np

from riccati_tf import Gaussian, Params, certify, equilibria, flow, layers, moment_rhs, steer
from riccati_tf.errors import InvalidInputError
from riccati_tf.state.validation import MAX_TIME_POINTS

from . import case, cases_of

AREA = "api"
I2 = np.eye(2)
Z2 = np.zeros(2)
TINY = 5e-324  # the smallest positive subnormal float64
BIG = float(np.finfo(float).max)
#: absolute slack for results in the subnormal range: a few dozen units of 2^-1074
SUBNORMAL_ATOL = 64 * TINY


def _std() -> Gaussian:
    return Gaussian(Z2, I2)


class _ArrayLike:
    """An object converted through __array__ (as tensors and data frames are)."""

    def __init__(self, make):
        self.make = make

    def __array__(self, dtype=None, copy=None):
        return self.make()


def _raise():
    raise RuntimeError("device tensor cannot be read")


def _masked() -> np.ndarray:
    return np.ma.masked_array(I2, mask=[[True, False], [False, False]])


# --------------------------------------------------------------------------- references

def _fr(a) -> np.ndarray:
    """Exact rationals of the float64 entries."""
    return np.vectorize(Fraction, otypes=[object])(np.asarray(a, dtype=float))


def _exact_rhs(p: Params, g: Gaussian, absolute: bool = False):
    """(ṁ, Σ̇) of SPEC §2 in exact rational arithmetic; absolute=True sums |terms| instead (the
    scale against which rounding is measured)."""
    f = (lambda a: np.abs(_fr(a))) if absolute else _fr
    A, b, m, S = f(p.A), f(p.b), f(g.mean), f(g.cov)
    dm = A @ m + b
    X = A @ S
    for V, B in p.heads:
        V, B = f(V), f(B)
        dm = dm + V @ m + V @ S @ B @ m
        X = X + V @ S @ B @ S
    return dm, X + X.T


def _close_exact(got, exact, scale, rtol=1e-13, atol=SUBNORMAL_ATOL, what="value"):
    got = np.asarray(got, dtype=float)
    assert got.shape == exact.shape, f"{what}: shape {got.shape}, expected {exact.shape}"
    assert np.all(np.isfinite(got)), f"{what}: non-finite result {got}"
    err = np.abs(_fr(got) - exact)
    bound = np.vectorize(lambda s: Fraction(rtol) * s + Fraction(atol), otypes=[object])(scale)
    bad = err > bound
    assert not np.any(bad), (f"{what}: {got[bad]} differs from the exact "
                             f"{[float(x) for x in exact[bad]]}")


def _check_rhs(p: Params, g: Gaussian) -> None:
    dm, dS = moment_rhs(p, g)
    em, eS = _exact_rhs(p, g)
    am, aS = _exact_rhs(p, g, absolute=True)
    _close_exact(dm, em, am, what="ṁ")
    _close_exact(dS, eS, aS, what="Σ̇")


def _mp_expm(A, t) -> mpmath.matrix:
    return mpmath.expm(mpmath.matrix(np.asarray(A, dtype=float).tolist()) * mpmath.mpf(t))


def _linear_reference(A, cov0, t):
    """e^{At} Σ0 e^{Aᵀt} at 40 digits (the covariance flow without attention)."""
    with mpmath.workdps(40):
        E = _mp_expm(A, t)
        S = E * mpmath.matrix(np.asarray(cov0, dtype=float).tolist()) * E.T
        return np.array(S.tolist(), dtype=float)


def _assert_rel(got, ref, rtol, atol=SUBNORMAL_ATOL, what="value"):
    got = np.asarray(got, dtype=float)
    assert np.all(np.isfinite(got)), f"{what}: non-finite {got}"
    scale = np.max(np.abs(ref))
    err = np.max(np.abs(got - ref))
    assert err <= rtol * scale + atol, f"{what}: error {err:.3g} against scale {scale:.3g}"


def _assert_psd(cov, what="Σ"):
    cov = np.asarray(cov, dtype=float)
    assert np.all(np.isfinite(cov)), f"{what} is not finite"
    assert np.array_equal(cov, np.swapaxes(cov, -1, -2)), f"{what} is not symmetric"
    s = np.max(np.abs(cov))
    if s > 0:
        e = np.frexp(s)[1]
        eig = np.linalg.eigvalsh(np.ldexp(cov, -e))
        assert eig.min() >= -1e-8 * max(eig.max(), 0.0), f"{what} is not PSD: {eig}"


# --------------------------------------------------------------------------- hostile values

#: values that are no real d×d matrix (and no 1×1 one), whatever d
BAD_MATRICES = {
    "nan_entry": [[1.0, np.nan], [0.0, 1.0]],
    "inf_entry": [[1.0, 0.0], [0.0, np.inf]],
    "minus_inf_entry": np.array([[-np.inf, 0.0], [0.0, 1.0]]),
    "complex_nonzero_imag": I2 + 1e-3j,
    "complex_zero_imag": I2 + 0j,
    "complex64_array": np.eye(2, dtype=np.complex64),
    "complex_in_list": [[1.0, 0.0], [0.0, 1 + 0j]],
    "complex_scalar": 2 + 1j,
    "numeric_string_object_array": np.array([["1", "0"], ["0", "1"]], dtype=object),
    "numeric_string_list": [["1", "0"], ["0", "1"]],
    "string_mixed_in_list": [[1.0, 0.0], [0.0, "1"]],
    "unicode_array": np.array([["1", "0"], ["0", "1"]]),
    "bytes_array": np.array([[b"1", b"0"], [b"0", b"1"]]),
    "bytes_in_list": [[1.0, 0.0], [0.0, b"1"]],
    "bytearray_in_list": [bytearray(b"\x01\x00"), bytearray(b"\x00\x01")],
    "memoryview_of_bytes": memoryview(b"\x01"),
    "plain_string": "eye",
    "numeric_string_scalar": "2.5",
    "bool_array": np.eye(2, dtype=bool),
    "bool_in_list": [[True, 0.0], [0.0, 1.0]],
    "bool_scalar": True,
    "numpy_bool_scalar": np.True_,
    "none": None,
    "none_in_list": [[1.0, None], [0.0, 1.0]],
    "ragged_list": [[1.0, 0.0], [1.0]],
    "ragged_object_array": np.array([[1.0, 0.0], [1.0]], dtype=object),
    "dict": {"A": [[1.0]]},
    "set": {1.0, 2.0},
    "datetime_array": np.array(["2020-01-01", "2020-01-02"], dtype="datetime64[D]"),
    "datetime_object": datetime.datetime(2020, 1, 1),
    "timedelta_array": np.array([[1, 0], [0, 1]], dtype="timedelta64[s]"),
    "structured_array": np.zeros((2, 2), dtype=[("x", float)]),
    "decimal_nan": [[Decimal("NaN"), 0], [0, 1]],
    "decimal_snan": [[Decimal("sNaN"), 0], [0, 1]],
    "decimal_infinity": [[Decimal("Infinity"), 0], [0, 1]],
    "fraction_beyond_range": [[Fraction(10**400, 3), 0], [0, 1]],
    "fraction_below_subnormal": [[Fraction(1, 10**400), 0], [0, 1]],
    "int_beyond_range": [[10**400, 0], [0, 1]],
    "negative_int_beyond_range": [[-(10**309), 0], [0, 1]],
    "int_scalar_beyond_range": 10**400,
    "longdouble_beyond_range": np.array([[np.longdouble("1e400"), 0], [0, 1]],
                                        dtype=np.longdouble),
    "longdouble_below_subnormal": np.array([[np.longdouble("1e-400"), 0], [0, 1]],
                                          dtype=np.longdouble),
    "masked_entries": _masked(),
    "array_like_complex": _ArrayLike(lambda: I2 + 1j),
    "array_like_strings": _ArrayLike(lambda: np.array([["1", "0"], ["0", "1"]])),
    "array_like_failing": _ArrayLike(_raise),
    "buffer_of_doubles_flat": memoryview(np.eye(2).ravel()),
    "generator": (x for x in (1.0, 2.0)),
    "object_instance": object(),
    "empty_0x0": np.zeros((0, 0)),
    "empty_1x0": np.zeros((1, 0)),
    "empty_vector": np.zeros(0),
    "empty_list": [],
    "three_dimensional": np.ones((2, 2, 2)),
    "non_square": np.ones((2, 3)),
    "vector_for_matrix": np.ones(2),
}

cases_of(AREA, "error", {f"params_A_{k}": v for k, v in BAD_MATRICES.items()},
         lambda v: Params(A=v))
cases_of(AREA, "error", {f"gaussian_cov_{k}": v for k, v in BAD_MATRICES.items()
                         if k not in ("vector_for_matrix",)},
         lambda v: Gaussian(Z2, v))  # cov is validated first: its refusal is the one seen

BAD_FIELDS = {
    "B_complex": {"A": I2, "B": I2 * 1j},
    "B_wrong_size": {"A": I2, "B": np.eye(3)},
    "B_strings": {"A": I2, "B": [["0", "0"], ["0", "0"]]},
    "V_nan": {"A": I2, "V": [[np.nan, 0], [0, 0]]},
    "V_bool": {"A": I2, "V": np.zeros((2, 2), dtype=bool)},
    "V_object_fraction_overflow": {"A": I2, "V": np.array([[Fraction(10**500), 0], [0, 0]],
                                                          dtype=object)},
    "b_wrong_length": {"A": I2, "b": np.ones(3)},
    "b_scalar_for_d2": {"A": I2, "b": 1.0},
    "b_matrix": {"A": I2, "b": I2},
    "b_complex": {"A": I2, "b": [1j, 0]},
    "b_string": {"A": I2, "b": "0 0"},
    "b_inf": {"A": I2, "b": [0.0, -np.inf]},
    "b_none_entry": {"A": I2, "b": [0.0, None]},
    "A_missing_none": {"A": None},
    "heads_empty_list": {"A": -I2, "heads": []},
    "heads_empty_tuple": {"A": -I2, "heads": ()},
    "heads_not_pairs": {"A": I2, "heads": [(I2,)]},
    "heads_triple": {"A": I2, "heads": [(I2, I2, I2)]},
    "heads_dict": {"A": I2, "heads": {"V": I2, "B": I2}},
    "heads_string": {"A": I2, "heads": "VB"},
    "heads_array": {"A": I2, "heads": np.zeros((1, 2, 2, 2))},
    "heads_number": {"A": I2, "heads": 3},
    "heads_complex_V": {"A": I2, "heads": [(I2 * 1j, I2)]},
    "heads_mismatched_d": {"A": I2, "heads": [(I2, I2), (np.eye(3), np.eye(3))]},
    "heads_and_B_V": {"A": I2, "B": I2, "V": I2, "heads": [(I2, I2)]},
    "heads_none_entry": {"A": I2, "heads": [None]},
}
cases_of(AREA, "error", {f"params_{k}": v for k, v in BAD_FIELDS.items()},
         lambda kw: Params(**kw))

BAD_GAUSSIANS = {
    "asymmetric_7pct_at_1e300": (Z2, np.array([[1.0, 0.07], [0.0, 1.0]]) * 1e300),
    "asymmetric_7pct_at_1e308": (Z2, np.array([[1.0, 0.07], [0.0, 1.0]]) * 1.7e308),
    "asymmetric_7pct_at_1em300": (Z2, np.array([[1.0, 0.07], [0.0, 1.0]]) * 1e-300),
    "asymmetric_7pct_subnormal": (Z2, np.array([[1.0, 0.07], [0.0, 1.0]]) * 1e-310),
    "asymmetric_one_ulp_pair_subnormal": (Z2, np.array([[2 * TINY, TINY], [0.0, 2 * TINY]])),
    "indefinite_at_1e300": (Z2, np.array([[1.0, 2.0], [2.0, 1.0]]) * 1e300),
    "indefinite_at_1e307_eigs_overflow": (Z2, np.array([[1.0, 1.5], [1.5, 1.0]]) * 1e308),
    "indefinite_at_1em300": (Z2, np.array([[1.0, 2.0], [2.0, 1.0]]) * 1e-300),
    "negative_subnormal_diagonal": (Z2, np.diag([1e-310, -1e-310])),
    "negative_definite": (Z2, -I2),
    "mean_wrong_length": (np.zeros(3), I2),
    "mean_matrix": (I2, I2),
    "mean_none": (None, I2),
    "cov_none": (Z2, None),
    "mean_complex": ([0j, 1], I2),
    "mean_strings": (["0", "0"], I2),
    "mean_bool": ([False, False], I2),
    "mean_nan": ([0.0, np.nan], I2),
    "mean_scalar_for_d2": (0.0, I2),
    "cov_0x0_and_empty_mean": (np.zeros(0), np.zeros((0, 0))),
    "cov_hermitian_complex": (Z2, np.array([[2, 1j], [-1j, 2]])),
    "gaussian_as_cov": (Z2, "Gaussian"),
}
cases_of(AREA, "error", {f"gaussian_pair_{k}": v for k, v in BAD_GAUSSIANS.items()},
         lambda mc: Gaussian(*mc))


# --------------------------------------------------------------------------- valid but extreme

@case(AREA, "result")
def params_keeps_subnormal_entries_exactly():
    A = np.array([[TINY, -3 * TINY], [1e-310, 2.5e-308]])
    p = Params(A=A, b=[TINY, -TINY])
    assert np.array_equal(p.A, A) and np.array_equal(p.b, [TINY, -TINY])


@case(AREA, "result")
def params_keeps_largest_float_exactly():
    A = np.array([[BIG, -BIG], [0.0, BIG]])
    p = Params(A=A)
    assert np.array_equal(p.A, A)


@case(AREA, "result")
def params_fraction_decimal_int_round_to_nearest_float():
    """Documented policy: rounded to the nearest float64 (float() of the exact value)."""
    p = Params(A=[[Fraction(1, 3), Decimal("0.1")], [2**53 + 1, np.longdouble(1) / 3]])
    want = [[1 / 3, 0.1], [float(2**53), float(np.longdouble(1) / 3)]]
    assert np.array_equal(p.A, want), p.A
    assert abs(Fraction(p.A[0, 0]) - Fraction(1, 3)) <= Fraction(1, 3) * Fraction(1, 2**53)


@case(AREA, "result")
def params_float16_float32_int8_convert_exactly():
    A16 = np.array([[0.1, 2.0], [-3.5, 6e-8]], dtype=np.float16)
    A32 = A16.astype(np.float32) / np.float32(3)
    for A in (A16, A32, np.array([[1, -2], [127, 0]], dtype=np.int8)):
        p = Params(A=A)
        assert np.array_equal(p.A, A.astype(np.float64)) and p.A.dtype == np.float64


@case(AREA, "result")
def params_array_likes_matrix_and_buffers_keep_their_values():
    A = np.array([[1.5, -2.0], [TINY, 3.0]])
    for value in (np.matrix(A), _ArrayLike(lambda: A), memoryview(A),
                  np.ma.masked_array(A, mask=False)):
        assert np.array_equal(Params(A=value).A, A), type(value).__name__
    assert np.array_equal(Params(A=A, b=array.array("d", [TINY, -1.0])).b, [TINY, -1.0])


@case(AREA, "result")
def params_inputs_are_copied_not_frozen():
    A = np.eye(2)
    p = Params(A=A)
    A[0, 0] = 5.0  # the caller's array stays writeable and Params keeps its own copy
    assert p.A[0, 0] == 1.0


@case(AREA, "result")
def params_scalar_V_test_is_scale_free_subnormal():
    """‖V − vI‖ underflows to 0 at subnormal scale: V = [[a, a/10], [0, a]] is not scalar."""
    a = 1e-320
    p = Params(A=I2, V=[[a, a / 10], [0.0, a]], B=I2)
    assert p.value_scalars is None
    assert Params(A=I2, V=a * I2, B=I2).value_scalars == (a,)


@case(AREA, "result")
def params_scalar_V_test_is_scale_free_huge():
    """tr V overflows at V ~ 1e308: V = [[M, M], [0, M]] is not scalar, V = M·I is."""
    p = Params(A=I2, V=[[BIG, BIG], [0.0, BIG]], B=I2)
    assert p.value_scalars is None
    assert Params(A=I2, V=BIG * I2, B=I2).value_scalars == (BIG,)


@case(AREA, "error")
def params_G_overflow_is_a_solver_error():
    _ = Params(A=I2, V=BIG * I2, B=BIG * I2).G


@case(AREA, "result")
def gaussian_accepts_symmetric_psd_at_1e308():
    cov = np.array([[1.0, 0.5], [0.5, 1.0]]) * BIG
    g = Gaussian(Z2, cov)
    assert np.array_equal(g.cov, cov) and g.rank() == 2


@case(AREA, "result")
def gaussian_accepts_subnormal_covariance_exactly():
    cov = np.array([[4.0, 2.0], [2.0, 3.0]]) * 1e-320
    g = Gaussian([TINY, 0.0], cov)
    assert np.array_equal(g.cov, cov) and g.mean[0] == TINY and g.rank() == 2


@case(AREA, "result")
def gaussian_singular_psd_at_1em300_has_rank_one():
    v = np.array([1.0, 2.0]) * 1e-150
    g = Gaussian(Z2, np.outer(v, v))
    assert g.rank() == 1


@case(AREA, "result")
def gaussian_symmetrises_within_tolerance_without_overflow():
    cov = np.array([[1.0, 0.5], [0.5 * (1 + 1e-12), 1.0]]) * BIG
    g = Gaussian(Z2, cov)
    assert np.all(np.isfinite(g.cov)) and g.cov[0, 1] == g.cov[1, 0]
    assert abs(g.cov[0, 1] - 0.5 * BIG) <= 1e-11 * BIG


@case(AREA, "result")
def gaussian_zero_covariance_is_legal():
    g = Gaussian([1.0, -1.0], np.zeros((2, 2)))
    assert g.rank() == 0 and np.array_equal(g.sample(4, 0), np.tile([1.0, -1.0], (4, 1)))


@case(AREA, "result")
def gaussian_sample_is_reproducible():
    x = _std().sample(5)
    assert x.shape == (5, 2) and np.array_equal(x, _std().sample(5, 0))
    y, z = _std().sample(5, 7), _std().sample(5, np.random.default_rng(7))
    assert np.array_equal(y, z)
    assert _std().sample(0).shape == (0, 2)


@case(AREA, "result")
def gaussian_sample_at_1e308_scale_is_finite_and_singular():
    """cov = M·[[1, 1], [1, 1]] has λ = 2M > float max: the root is taken on the scaled matrix."""
    g = Gaussian(Z2, np.full((2, 2), BIG))
    x = g.sample(50, 3)
    assert np.all(np.isfinite(x))
    assert np.max(np.abs(x[:, 0] - x[:, 1])) <= 1e-12 * np.max(np.abs(x))
    assert np.std(x[:, 0] / 1e150) > 1e3


cases_of(AREA, "error", {
    "gaussian_sample_n_negative": (-1, None),
    "gaussian_sample_n_float": (2.0, None),
    "gaussian_sample_n_bool": (True, None),
    "gaussian_sample_n_string": ("3", None),
    "gaussian_sample_n_none": (None, None),
    "gaussian_sample_n_too_many": (10**12, None),
    "gaussian_sample_rng_string": (3, "seed"),
    "gaussian_sample_rng_none": (3, None),
    "gaussian_sample_rng_beyond_max_seed": (3, 2**63),
    "gaussian_sample_rng_float": (3, 1.5),
    "gaussian_sample_rng_negative_seed": (3, -1),
    "gaussian_sample_rng_bool": (3, True),
    "gaussian_sample_rng_legacy_randomstate": (3, np.random.RandomState(0)),
    "gaussian_sample_rng_function": (3, np.random.standard_normal),
}, lambda args: _std().sample(*args))

cases_of(AREA, "error", {
    "gaussian_rank_tol_string": "1e-3",
    "gaussian_rank_tol_nan": np.nan,
    "gaussian_rank_tol_negative": -1.0,
    "gaussian_rank_tol_complex": 1e-3j,
}, lambda tol: _std().rank(tol))


# --------------------------------------------------------------------------- moment_rhs

@case(AREA, "result")
def moment_rhs_covariance_at_1em300():
    rng = np.random.default_rng(1)
    L = rng.standard_normal((2, 2))
    p = Params(A=rng.standard_normal((2, 2)), B=rng.standard_normal((2, 2)),
               V=rng.standard_normal((2, 2)), b=rng.standard_normal(2))
    _check_rhs(p, Gaussian(rng.standard_normal(2) * 1e-300, L @ L.T * 1e-300))


@case(AREA, "result")
def moment_rhs_subnormal_covariance_doubles_exactly():
    cov = np.array([[6.0, 2.0], [2.0, 4.0]]) * TINY
    dm, dS = moment_rhs(Params(A=I2), Gaussian(Z2, cov))
    assert np.array_equal(dS, 2 * cov) and np.array_equal(dm, Z2)
    _check_rhs(Params(A=[[1.0, 0.5], [-0.25, 2.0]], B=I2, V=I2), Gaussian([TINY, 0.0], cov))


@case(AREA, "result")
def moment_rhs_balanced_extreme_scales():
    """A ~ 1e150, Σ ~ 1e-150, V ~ 1e-200, B ~ 1e350/… : every product representable."""
    p = Params(A=np.array([[1.0, 2.0], [0.0, -1.0]]) * 1e150,
               B=np.array([[0.5, 0.0], [1.0, 1.0]]) * 1e200,
               V=np.array([[1.0, -1.0], [0.0, 3.0]]) * 1e-200, b=[1e-300, -1e300])
    _check_rhs(p, Gaussian([1e100, -1e-100], np.array([[2.0, 1.0], [1.0, 1.0]]) * 1e-150))


@case(AREA, "result")
def moment_rhs_multi_head_fraction_reference():
    rng = np.random.default_rng(2)
    heads = [(rng.standard_normal((3, 3)) * 1e-100, rng.standard_normal((3, 3)) * 1e100)
             for _ in range(2)]
    L = rng.standard_normal((3, 2)) * 1e-5
    _check_rhs(Params(A=rng.standard_normal((3, 3)), heads=heads, b=np.zeros(3)),
               Gaussian(rng.standard_normal(3), L @ L.T))


@case(AREA, "error")
def moment_rhs_overflow_is_refused_not_inf():
    """A legal layer whose right-hand side exceeds float64: VΣBΣ ≈ 1e400."""
    _, dS = moment_rhs(Params(A=1e150 * I2, B=1e200 * I2, V=1e200 * I2),
                        Gaussian(Z2, I2))
    assert np.all(np.isfinite(dS)), "moment_rhs returned a non-finite Σ̇ for a legal input"


cases_of(AREA, "error", {
    "moment_rhs_params_dict": lambda: moment_rhs({"A": I2}, _std()),
    "moment_rhs_params_none": lambda: moment_rhs(None, _std()),
    "moment_rhs_gaussian_tuple": lambda: moment_rhs(Params(A=I2), (Z2, I2)),
    "moment_rhs_swapped_arguments": lambda: moment_rhs(_std(), Params(A=I2)),
    "moment_rhs_dimension_mismatch": lambda: moment_rhs(Params(A=np.eye(3)), _std()),
}, lambda fn: fn())


# --------------------------------------------------------------------------- flow and layers

BAD_FLOW_CALLS = {
    "flow_t_final_string": {"t_final": "1"},
    "flow_t_final_bytes": {"t_final": b"1"},
    "flow_t_final_bool": {"t_final": True},
    "flow_t_final_none": {"t_final": None},
    "flow_t_final_nan": {"t_final": np.nan},
    "flow_t_final_inf": {"t_final": np.inf},
    "flow_t_final_negative": {"t_final": -1.0},
    "flow_t_final_zero": {"t_final": 0.0},
    "flow_t_final_complex": {"t_final": 1 + 0j},
    "flow_t_final_list": {"t_final": [1.0]},
    "flow_t_final_array": {"t_final": np.array([1.0, 2.0])},
    "flow_t_final_int_beyond_range": {"t_final": 10**400},
    "flow_t_final_decimal_nan": {"t_final": Decimal("NaN")},
    "flow_t_eval_string_inside": {"t_final": 1.0, "t_eval": [0, "1"]},
    "flow_t_eval_duplicates": {"t_final": 1.0, "t_eval": [0.0, 0.5, 0.5, 1.0]},
    "flow_t_eval_unsorted": {"t_final": 1.0, "t_eval": [0.5, 0.2]},
    "flow_t_eval_nan": {"t_final": 1.0, "t_eval": [0.0, np.nan]},
    "flow_t_eval_beyond_t_final": {"t_final": 1.0, "t_eval": [0.0, 2.0]},
    "flow_t_eval_negative": {"t_final": 1.0, "t_eval": [-1.0, 0.5]},
    "flow_t_eval_empty": {"t_final": 1.0, "t_eval": []},
    "flow_t_eval_2d": {"t_final": 1.0, "t_eval": [[0.0, 1.0]]},
    "flow_t_eval_bool": {"t_final": 1.0, "t_eval": [False, True]},
    "flow_t_eval_complex": {"t_final": 1.0, "t_eval": [0j, 1 + 0j]},
    "flow_t_eval_scalar": {"t_final": 1.0, "t_eval": 0.5},
    "flow_t_eval_duplicate_after_rounding_clip": {"t_final": 1.0,
                                                  "t_eval": [0.0, 1.0, 1.0 + 1e-13]},
    "flow_t_eval_too_long": {"t_final": 1.0, "t_eval": np.linspace(0, 1, MAX_TIME_POINTS + 1)},
    "flow_rtol_string": {"t_final": 1.0, "rtol": "1e-6"},
    "flow_rtol_nan": {"t_final": 1.0, "rtol": np.nan},
    "flow_rtol_zero": {"t_final": 1.0, "rtol": 0.0},
    "flow_atol_one": {"t_final": 1.0, "atol": 1.0},
    "flow_atol_bool": {"t_final": 1.0, "atol": True},
    "flow_method_number": {"t_final": 1.0, "method": 5},
    "flow_method_none": {"t_final": 1.0, "method": None},
    "flow_method_unknown": {"t_final": 1.0, "method": "EXACT"},
}
cases_of(AREA, "error", BAD_FLOW_CALLS,
         lambda kw: flow(Params(A=-I2, B=I2, V=[[1.0, 0.5], [0.0, 1.0]]), _std(), **kw))

cases_of(AREA, "error", {
    "flow_params_dict": lambda: flow({"A": -I2}, _std(), 1.0),
    "flow_params_none": lambda: flow(None, _std(), 1.0),
    "flow_gaussian_tuple": lambda: flow(Params(A=-I2), (Z2, I2), 1.0),
    "flow_dimension_mismatch": lambda: flow(Params(A=-np.eye(3)), _std(), 1.0),
    "flow_callable_returns_dict": lambda: flow(lambda t: {"A": -I2}, _std(), 1.0),
    "flow_callable_exact_method": lambda: flow(lambda t: Params(A=-I2), _std(), 1.0,
                                               method="exact"),
    "flow_exact_for_general_V": lambda: flow(Params(A=-I2, B=I2, V=[[1, 2], [0, 1]]), _std(),
                                             1.0, method="exact"),
}, lambda fn: fn())


@case(AREA, "result")
def flow_time_types_numpy_fraction_zero_d():
    """t_final as np.float32, a 0-d array or a Fraction is the number it holds."""
    p = Params(A=[[-1.0, 2.0], [0.0, -0.5]])
    for t_final in (np.float32(0.5), np.array(0.5), Fraction(1, 2), Decimal("0.5")):
        tr = flow(p, _std(), t_final, t_eval=[0, Fraction(1, 4), np.float16(0.5)])
        assert np.array_equal(tr.t, [0.0, 0.25, 0.5]), tr.t
        _assert_rel(tr.cov[-1], _linear_reference(p.A, I2, 0.5), 1e-10, what="Σ(1/2)")


@case(AREA, "result")
def flow_exact_at_1em300_scale():
    A = np.array([[-1.0, 3.0], [0.0, -0.5]])
    cov0 = np.array([[2.0, 1.0], [1.0, 1.0]]) * 1e-300
    tr = flow(Params(A=A, B=I2, V=I2), Gaussian(Z2, cov0), 1.0, method="exact")
    _assert_rel(tr.cov[-1], _linear_reference(A, cov0, 1.0), 1e-9, what="Σ(1)")


@case(AREA, "result")
def flow_exact_at_1e300_scale():
    A = np.array([[-1.0, 3.0], [0.0, -0.5]])
    cov0 = np.array([[2.0, 1.0], [1.0, 1.0]]) * 1e300
    tr = flow(Params(A=A), Gaussian(Z2, cov0), 1.0, method="exact")
    assert tr.status == "completed"
    _assert_rel(tr.cov[-1], _linear_reference(A, cov0, 1.0), 1e-9, what="Σ(1)")


@case(AREA, "result")
def flow_rk_at_1em300_scale():
    """Absolute tolerances (atol = 1e-12) must not swamp a covariance of size 1e-300."""
    A = np.array([[-1.0, 3.0], [0.0, -0.5]])
    cov0 = np.array([[2.0, 1.0], [1.0, 1.0]]) * 1e-300
    tr = flow(Params(A=A, B=I2, V=[[1.0, 0.5], [0.0, 1.0]]), Gaussian(Z2, cov0), 1.0,
              method="rk")
    _assert_rel(tr.cov[-1], _linear_reference(A, cov0, 1.0), 1e-6, what="Σ(1)")


@case(AREA, "result")
def flow_rk_at_1e300_scale():
    A = np.array([[-1.0, 3.0], [0.0, -0.5]])
    cov0 = np.array([[2.0, 1.0], [1.0, 1.0]]) * 1e300
    tr = flow(Params(A=A), Gaussian(Z2, cov0), 1.0, method="rk")
    _assert_rel(tr.cov[-1], _linear_reference(A, cov0, 1.0), 1e-8, what="Σ(1)")


@case(AREA, "result")
def flow_subnormal_covariance_decays():
    cov0 = np.array([[4.0, 2.0], [2.0, 3.0]]) * 1e-310
    tr = flow(Params(A=-I2), Gaussian(Z2, cov0), 1.0)
    ref = cov0 * float(mpmath.exp(-2))
    _assert_rel(tr.cov[-1], ref, 1e-6, what="Σ(1)")
    for S in tr.cov:
        _assert_psd(S)


def _rotation_at(t_final: float) -> None:
    """Any finite positive time is legal; a rotation keeps Σ0 = I at I for every t (whatever
    the rounding of the angle), so a completed trajectory must hold I."""
    tr = flow(Params(A=[[0.0, 1.0], [-1.0, 0.0]]), _std(), t_final)
    assert tr.status == "completed" and np.all(np.isfinite(tr.cov)), "non-finite Σ(t)"
    _assert_rel(tr.cov, np.broadcast_to(I2, tr.cov.shape), 1e-6, what="Σ(t)")


cases_of(AREA, "either", {f"flow_rotation_t_final_{t:.0e}": t for t in (1e6, 1e15, 1e20, 1e308)},
         _rotation_at)


@case(AREA, "either", timeout=5)
def flow_rk_t_final_1e308_rotation():
    """The Runge–Kutta path must answer (or refuse) in bounded time at t_final = 1e308."""
    tr = flow(Params(A=[[0.0, 1.0], [-1.0, 0.0]], B=I2, V=[[0.0, 1e-3], [0.0, 0.0]]), _std(),
              1e308, method="rk")
    assert np.all(np.isfinite(tr.cov))


BAD_LAYERS_CALLS = {
    "layers_n_layers_zero": (0, 0.1),
    "layers_n_layers_negative": (-1, 0.1),
    "layers_n_layers_float": (2.0, 0.1),
    "layers_n_layers_bool": (True, 0.1),
    "layers_n_layers_string": ("3", 0.1),
    "layers_n_layers_huge": (10**12, 0.1),
    "layers_tau_nan": (3, np.nan),
    "layers_tau_zero": (3, 0.0),
    "layers_tau_negative": (3, -0.1),
    "layers_tau_string": (3, "0.1"),
    "layers_tau_complex": (3, 0.1j),
}
cases_of(AREA, "error", BAD_LAYERS_CALLS, lambda a: layers(Params(A=-I2), _std(), *a))

cases_of(AREA, "error", {
    "layers_sequence_wrong_length": lambda: layers([Params(A=-I2)] * 2, _std(), 3, 0.1),
    "layers_sequence_with_dict": lambda: layers([Params(A=-I2), {"A": I2}], _std(), 2, 0.1),
    "layers_params_string": lambda: layers("Params", _std(), 1, 0.1),
    "layers_gaussian_none": lambda: layers(Params(A=-I2), None, 1, 0.1),
    "layers_mismatched_d": lambda: layers(Params(A=-np.eye(3)), _std(), 1, 0.1),
}, lambda fn: fn())


def _exact_layers(p: Params, g: Gaussian, n: int, tau: float):
    tau = Fraction(tau)
    m, S = _fr(g.mean), _fr(g.cov)
    A, b = _fr(p.A), _fr(p.b)
    heads = [(_fr(V), _fr(B)) for V, B in p.heads]
    eye = _fr(np.eye(p.d))
    out = [(m, S)]
    for _ in range(n):
        M = A + sum((V @ S @ B for V, B in heads), _fr(np.zeros((p.d, p.d))))
        c = b + sum((V @ m for V, _ in heads), _fr(np.zeros(p.d)))
        F = eye + tau * M
        m, S = F @ m + tau * c, F @ S @ F.T
        out.append((m, S))
    return out


@case(AREA, "result")
def layers_at_1em300_scale_exact_reference():
    p = Params(A=[[-1.0, 0.5], [0.0, -2.0]], B=[[1.0, 0.0], [0.5, 1.0]], V=I2, b=[1e-300, 0.0])
    g = Gaussian([1e-300, -2e-300], np.array([[2.0, 1.0], [1.0, 1.0]]) * 1e-300)
    tr = layers(p, g, 3, 0.25)
    for k, (m, S) in enumerate(_exact_layers(p, g, 3, 0.25)):
        scale = np.abs(S) + Fraction(1e-300)
        _close_exact(tr.cov[k], S, scale, rtol=1e-13, what=f"Σ after {k} layers")
        _close_exact(tr.mean[k], m, np.abs(m) + Fraction(1e-300), rtol=1e-13,
                     what=f"m after {k} layers")


@case(AREA, "result")
def layers_overflow_reports_blowup_not_inf():
    tr = layers(Params(A=1e200 * I2), Gaussian(Z2, 1e200 * I2), 3, 1.0)
    assert tr.status == "blowup" and np.all(np.isfinite(tr.cov)) and tr.blowup_time == 1.0


# --------------------------------------------------------------------------- certify

cases_of(AREA, "error", {
    "certify_params_dict": lambda: certify({"A": -I2}, I2),
    "certify_params_none": lambda: certify(None, I2),
    "certify_cov0_complex": lambda: certify(Params(A=-I2), I2 + 0j),
    "certify_cov0_strings": lambda: certify(Params(A=-I2), [["1", "0"], ["0", "1"]]),
    "certify_cov0_nan": lambda: certify(Params(A=-I2), [[1.0, 0.0], [0.0, np.nan]]),
    "certify_cov0_asymmetric_at_1e300": lambda: certify(
        Params(A=-I2), np.array([[1.0, 0.07], [0.0, 1.0]]) * 1e300),
    "certify_cov0_indefinite_subnormal": lambda: certify(Params(A=-I2),
                                                         np.diag([1e-310, -1e-311])),
    "certify_cov0_wrong_size": lambda: certify(Params(A=-I2), np.eye(3)),
    "certify_cov0_none": lambda: certify(Params(A=-I2), None),
    "certify_cov0_bool": lambda: certify(Params(A=-I2), np.eye(2, dtype=bool)),
    "certify_mean0_complex": lambda: certify(Params(A=-I2), I2, [1j, 0]),
    "certify_mean0_strings": lambda: certify(Params(A=-I2), I2, ["0", "0"]),
    "certify_mean0_wrong_length": lambda: certify(Params(A=-I2), I2, np.zeros(3)),
}, lambda fn: fn())


@case(AREA, "result")
def certify_zero_covariance_collapses():
    c = certify(Params(A=I2), np.zeros((2, 2)))
    assert c.regime == "collapses" and c.theorem == "zero"


@case(AREA, "result")
def certify_subnormal_covariance_is_not_zero():
    """A = −I Hurwitz, G = 0: Σ(t) = e^{−2t}Σ0 → 0 (psd_hurwitz), not the Σ0 = 0 case."""
    c = certify(Params(A=-I2), np.array([[4.0, 2.0], [2.0, 3.0]]) * 1e-320)
    assert c.regime == "collapses" and c.theorem == "psd_hurwitz", (c.regime, c.theorem)


@case(AREA, "result")
def certify_huge_start_converges_to_unit_bernoulli_solution():
    """A = I, V = −I, B = I: G = 2I ⪰ 0 and Σ̇ = 2Σ − 2Σ²: Σ(t) → I from any Σ0 ≻ 0."""
    c = certify(Params(A=I2, V=-I2, B=I2), np.array([[2.0, 1.0], [1.0, 1.0]]) * 1e300)
    assert c.regime == "converges", c.regime
    _assert_rel(c.equilibrium.cov, I2, 1e-9, what="Σ*")


@case(AREA, "result")
def certify_tiny_start_blows_up_at_the_closed_form_time():
    """Scalar Σ̇ = −2σ + 2σ² ... reversed: A = I, V = I, B = I gives σ̇ = 2σ + 2σ², blow-up at
    T* = ½ log(1 + 1/σ0) for Σ0 = σ0 I (σ0 = 1e-300: T* ≈ 345.4)."""
    c = certify(Params(A=I2, V=I2, B=I2), 1e-300 * I2)
    assert c.regime == "blows_up", c.regime
    ref = 0.5 * float(mpmath.log1p(mpmath.mpf(1) / mpmath.mpf("1e-300")))
    assert abs(c.blowup_time - ref) <= 1e-8 * ref, (c.blowup_time, ref)


# --------------------------------------------------------------------------- equilibria

_GENERAL = Params(A=-I2, B=I2, V=[[1.0, 0.5], [0.0, 1.0]])

cases_of(AREA, "error", {
    "equilibria_params_dict": lambda: equilibria({"A": -I2}),
    "equilibria_which_unknown": lambda: equilibria(_GENERAL, which="some"),
    "equilibria_which_none": lambda: equilibria(_GENERAL, which=None),
    "equilibria_starts_strings": lambda: equilibria(_GENERAL, starts=[[["1", "0"], ["0", "1"]]]),
    "equilibria_starts_complex": lambda: equilibria(_GENERAL, starts=[I2 + 1j]),
    "equilibria_starts_nan": lambda: equilibria(_GENERAL, starts=[[[np.nan, 0], [0, 1]]]),
    "equilibria_starts_wrong_size": lambda: equilibria(_GENERAL, starts=[np.eye(3)]),
    "equilibria_starts_ragged": lambda: equilibria(_GENERAL, starts=[[[1.0, 0.0], [1.0]]]),
    "equilibria_starts_not_iterable": lambda: equilibria(_GENERAL, starts=5),
    "equilibria_starts_bool": lambda: equilibria(_GENERAL, starts=[np.eye(2, dtype=bool)]),
    "equilibria_axis_rtol_string": lambda: equilibria(Params(A=-I2), axis_rtol="1e-9"),
    "equilibria_axis_rtol_nan": lambda: equilibria(Params(A=[[0.0, 1.0], [-1.0, 0.0]]),
                                                   axis_rtol=np.nan),
    "equilibria_axis_rtol_negative": lambda: equilibria(Params(A=-I2), axis_rtol=-1.0),
}, lambda fn: fn())


def _unit_equilibrium(s: float, which: str = "stable"):
    """A = sI, V = −sI, B = I: AΣ + ΣAᵀ − ΣGΣ = 2sΣ − 2sΣ² = 0 has the stable solution Σ* = I."""
    eqs = equilibria(Params(A=s * I2, V=-s * I2, B=I2), which=which)
    stable = [e for e in eqs if e.stable]
    assert len(stable) == 1, eqs
    _assert_rel(stable[0].cov, I2, 1e-9, what="Σ*")


cases_of(AREA, "result", {
    "equilibria_unit_solution_at_rate_1e-300": 1e-300,
    "equilibria_unit_solution_at_rate_1e150": 1e150,
    "equilibria_unit_solution_at_rate_subnormal": 1e-310,
}, _unit_equilibrium)


@case(AREA, "result")
def equilibria_huge_solution_for_tiny_attention():
    """A = I, V = −1e-300 I, B = I: Σ* = 1e300 I."""
    eqs = equilibria(Params(A=I2, V=-1e-300 * I2, B=I2))
    assert len(eqs) == 1, eqs
    _assert_rel(eqs[0].cov, 1e300 * I2, 1e-9, what="Σ*")


@case(AREA, "either")
def equilibria_overflowing_layer_is_refused_or_right():
    """A = 1e300·I with unit attention: Σ* = 1e300 I (scalar closed form) or a SolverError."""
    eqs = equilibria(Params(A=1e300 * I2, V=-I2, B=I2))
    assert len(eqs) == 1 and np.all(np.isfinite(eqs[0].cov))
    _assert_rel(eqs[0].cov, 1e300 * I2, 1e-9, what="Σ*")


# --------------------------------------------------------------------------- steer

def _tgt(cov=None, mean=None) -> Gaussian:
    return Gaussian(Z2 if mean is None else mean, I2 * 2 if cov is None else cov)


cases_of(AREA, "error", {
    "steer_start_tuple": lambda: steer((Z2, I2), _tgt(), 1.0),
    "steer_target_none": lambda: steer(_std(), None, 1.0),
    "steer_dimension_mismatch": lambda: steer(_std(), Gaussian(np.zeros(3), np.eye(3)), 1.0),
    "steer_rank_mismatch": lambda: steer(_std(), _tgt(np.diag([1.0, 0.0])), 1.0),
    "steer_T_nan": lambda: steer(_std(), _tgt(), np.nan),
    "steer_T_string": lambda: steer(_std(), _tgt(), "1"),
    "steer_T_zero": lambda: steer(_std(), _tgt(), 0.0),
    "steer_T_bool": lambda: steer(_std(), _tgt(), True),
    "steer_T_complex": lambda: steer(_std(), _tgt(), 1 + 0j),
    "steer_controls_number": lambda: steer(_std(), _tgt(), 1.0, controls=5),
    "steer_controls_unknown": lambda: steer(_std(), _tgt(), 1.0, controls="everything"),
    "steer_n_pieces_zero": lambda: steer(_std(), _tgt(), 1.0, n_pieces=0),
    "steer_n_pieces_float": lambda: steer(_std(), _tgt(), 1.0, n_pieces=2.5),
    "steer_tol_nan": lambda: steer(_std(), _tgt(), 1.0, tol=np.nan),
    "steer_tol_string": lambda: steer(_std(), _tgt(), 1.0, tol="1e-6"),
    "steer_temperature_negative": lambda: steer(_std(), _tgt(), 1.0, controls="attention",
                                                temperature=-1.0),
    "steer_fixed_unknown_key": lambda: steer(_std(), _tgt(), 1.0, controls="attention",
                                             fixed={"Q": I2}),
    "steer_fixed_strings": lambda: steer(_std(), _tgt(), 1.0, controls="attention",
                                         fixed={"A": [["0", "0"], ["0", "0"]]}),
    "steer_fixed_complex": lambda: steer(_std(), _tgt(), 1.0, controls="attention",
                                         fixed={"A": I2 * 1j}),
    "steer_fixed_number": lambda: steer(_std(), _tgt(), 1.0, controls="attention", fixed=5),
    "steer_fixed_string": lambda: steer(_std(), _tgt(), 1.0, controls="attention", fixed="A"),
}, lambda fn: fn())


def _plan_reference(plan, start: Gaussian):
    """Push (m0, Σ0) through the plan's constant affine pieces (V = 0) with 40-digit matrix
    exponentials: d/dt (m, 1) = [[A, b], [0, 0]] (m, 1), Σ ↦ e^{Aτ} Σ e^{Aᵀτ}."""
    d = start.d
    with mpmath.workdps(40):
        m = mpmath.matrix([*start.mean, 1.0])
        S = mpmath.matrix(start.cov.tolist())
        for piece in plan.pieces:
            p = piece.params(piece.t0)
            assert not np.any(p.V) and len(p.heads) == 1, "the reference covers affine pieces"
            aug = np.zeros((d + 1, d + 1))
            aug[:d, :d], aug[:d, d] = p.A, p.b
            F = _mp_expm(aug, piece.t1 - piece.t0)
            E = F[:d, :d]
            m = F * m
            S = E * S * E.T
        return (np.array([float(m[i]) for i in range(d)]), np.array(S.tolist(), dtype=float))


def _steer_extreme(target: Gaussian):
    plan = steer(_std(), target, 1.0)
    m, S = _plan_reference(plan, _std())
    _assert_rel(S, target.cov, 1e-8, what="Σ(T)")
    _assert_rel(m, target.mean, 1e-8, atol=1e-8 * np.max(np.abs(target.cov)) ** 0.5,
                what="m(T)")


cases_of(AREA, "result", {
    "steer_to_covariance_1e-300": Gaussian([1e-150, 0.0], 1e-300 * np.array([[2.0, 1.0],
                                                                               [1.0, 1.0]])),
    "steer_to_covariance_1e300": Gaussian([1e150, -1e150], 1e300 * np.array([[2.0, 1.0],
                                                                              [1.0, 1.0]])),
    "steer_to_subnormal_covariance": Gaussian(Z2, 1e-315 * I2),
}, _steer_extreme)


# --------------------------------------------------------------------------- accessibility_rank

def _acc(*args, **kwargs):
    from riccati_tf.reachability.lie import accessibility_rank

    return accessibility_rank(*args, **kwargs)


cases_of(AREA, "error", {
    "accessibility_controls_unknown": lambda: _acc("nope", 2),
    "accessibility_controls_number": lambda: _acc(5, 2),
    "accessibility_d_zero": lambda: _acc("affine", 0),
    "accessibility_d_float": lambda: _acc("affine", 2.0),
    "accessibility_d_bool": lambda: _acc("affine", True),
    "accessibility_d_string": lambda: _acc("affine", "2"),
    "accessibility_depth_zero": lambda: _acc("affine", 2, depth=0),
    "accessibility_depth_string": lambda: _acc("affine", 2, depth="3"),
    "accessibility_rank_negative": lambda: _acc("affine", 2, rank=-1),
    "accessibility_rank_above_d": lambda: _acc("affine", 2, rank=3),
    "accessibility_point_mean_strings": lambda: _acc("affine", 2, (["1", "2"], I2)),
    "accessibility_point_mean_complex": lambda: _acc("affine", 2, ([1j, 2.0], I2)),
    "accessibility_point_mean_bool": lambda: _acc("affine", 2, ([True, False], I2)),
    "accessibility_point_cov_complex": lambda: _acc("affine", 2, (Z2, I2 + 0j)),
    "accessibility_point_cov_nan": lambda: _acc("affine", 2, (Z2, [[1.0, np.nan], [0, 1]])),
    "accessibility_point_cov_asymmetric_1e300": lambda: _acc(
        "affine", 2, (Z2, np.array([[1.0, 0.07], [0.0, 1.0]]) * 1e300)),
    "accessibility_point_wrong_d": lambda: _acc("affine", 2, Gaussian(np.zeros(3), np.eye(3))),
    "accessibility_point_not_a_pair": lambda: _acc("affine", 2, "point"),
    "accessibility_point_object_strings": lambda: _acc(
        "affine", 2, (Z2, np.array([["1", "0"], ["0", "1"]], dtype=object))),
    "accessibility_fixed_strings": lambda: _acc("attention", 2,
                                                fixed={"A": [["0", "1"], ["1", "0"]]}),
    "accessibility_fixed_complex": lambda: _acc("attention", 2, fixed={"A": I2 + 0j}),
}, lambda fn: fn(), timeout=30)


@case(AREA, "result", timeout=30)
def accessibility_generic_affine_is_full():
    """The affine controls (A, b) reach every direction of the stratum: rank = d + r d − r(r−1)/2
    (= 5 for d = r = 2), the dimension computed here independently."""
    acc = _acc("affine", 2)
    assert acc.rank == 2 + 2 * 2 - 1 and acc.full


@case(AREA, "result", timeout=30)
def accessibility_at_subnormal_point_keeps_rank():
    """A point with Σ = 1e-310 I is rank 2 (not 0): the stratum dimension is 5."""
    acc = _acc("affine", 2, (Z2, 1e-310 * I2))
    assert acc.cov_rank == 2 and acc.expected == 5, (acc.cov_rank, acc.expected)


@case(AREA, "result")
def invalid_input_errors_are_value_errors():
    """InvalidInputError is a ValueError, so `except ValueError` callers keep working."""
    try:
        Params(A="eye")
    except ValueError as exc:
        assert isinstance(exc, InvalidInputError) and "A" in str(exc)
    else:
        raise AssertionError("Params(A='eye') was accepted")
