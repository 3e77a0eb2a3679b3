"""Params, Gaussian and the moment right-hand side (SPEC §1–§2)."""

from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from riccati_tf import Gaussian, Head, Params, moment_rhs
from riccati_tf.errors import InvalidInputError, SolverError
from riccati_tf.state.validation import (
    MAX_TIME_POINTS,
    as_count,
    as_time,
    as_time_grid,
    psd_factor,
    psd_rank,
)

from .cases import general_params, random_gaussian, scalar_v_params


@pytest.mark.parametrize("d", [1, 2, 5])
@pytest.mark.parametrize("heads", [1, 3])
def test_moment_rhs_is_the_affine_push_forward(rng, d, heads):
    """For X(x) = Mx + c: ṁ = E[X] = Mm + c, Σ̇ = E[(x−m)Xᵀ] + E[X(x−m)ᵀ] = MΣ + ΣMᵀ."""
    p, g = general_params(rng, d, heads), random_gaussian(rng, d)
    dm, dS = moment_rhs(p, g)
    M = p.A + sum(V @ g.cov @ B for V, B in p.heads)
    c = p.b + sum(V @ g.mean for V, _ in p.heads)
    np.testing.assert_allclose(dm, M @ g.mean + c, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dS, M @ g.cov + g.cov @ M.T, rtol=1e-12, atol=1e-12)


def test_moment_rhs_matches_spec_formula_single_head(rng):
    d = 4
    A, B, V = (rng.standard_normal((d, d)) for _ in range(3))
    b = rng.standard_normal(d)
    g = random_gaussian(rng, d)
    m, S = g.mean, g.cov
    dm, dS = moment_rhs(Params(A=A, B=B, V=V, b=b), g)
    np.testing.assert_allclose(dm, (A + V) @ m + V @ S @ B @ m + b, rtol=1e-12)
    np.testing.assert_allclose(dS, A @ S + S @ A.T + V @ S @ B @ S + S @ B.T @ S @ V.T,
                               rtol=1e-12)


def test_moment_rhs_matches_monte_carlo_of_softmax_field(rng):
    """The tilted-Gaussian identity behind §2: for y ~ N(m, Σ) the softmax average is m + ΣBx."""
    d, n = 2, 400_000
    g = random_gaussian(rng, d, scale=0.5)
    B = rng.standard_normal((d, d)) * 0.5
    y = g.sample(n, rng)
    x = rng.standard_normal(d)
    w = np.exp(y @ (B @ x))
    mc = (w[:, None] * y).sum(0) / w.sum()
    # delta-method standard error of a self-normalised importance-sampling average
    stderr = np.sqrt(np.mean(w[:, None] ** 2 * (y - mc) ** 2, axis=0) / np.mean(w) ** 2 / n)
    assert np.all(np.abs(mc - (g.mean + g.cov @ B @ x)) < 5 * stderr)


def test_params_scalar_detection_and_G(rng):
    p = scalar_v_params(rng, 3, heads=2)
    vs = p.value_scalars
    assert vs is not None and len(vs) == 2
    G = -sum(v * (B + B.T) for v, (_, B) in zip(vs, p.heads, strict=True))
    np.testing.assert_allclose(p.G, G)
    assert general_params(rng, 3).value_scalars is None
    with pytest.raises(InvalidInputError, match="scalar value matrices"):
        _ = general_params(rng, 3).G


def test_params_missing_pieces_are_zero():
    p = Params(A=np.eye(2))
    assert np.all(p.b == 0) and np.all(p.B == 0) and np.all(p.V == 0)
    assert p.value_scalars == (0.0,)
    with pytest.raises(ValueError):
        p.A[0, 0] = 5.0  # frozen arrays


def test_small_reprs_show_the_numbers_and_read_back():
    # d ≤ REPR_MAX_D: the repr is a constructor call with the arrays (6 digits), as numpy's is
    from riccati_tf.display import REPR_MAX_D

    rng = np.random.default_rng(3)
    for d in range(1, REPR_MAX_D + 1):
        X = rng.standard_normal((d, d))
        g = Gaussian(rng.standard_normal(d), X @ X.T)
        back = eval(repr(g), {"Gaussian": Gaussian})
        np.testing.assert_allclose(back.cov, g.cov, rtol=1e-5, atol=1e-6 * np.abs(g.cov).max())
        np.testing.assert_allclose(back.mean, g.mean, rtol=1e-5, atol=1e-6)
        p = Params(rng.standard_normal((d, d)), B=X, V=-X.T, b=rng.standard_normal(d))
        q = eval(repr(p), {"Params": Params})
        for name in "ABVb":
            np.testing.assert_allclose(getattr(q, name), getattr(p, name), rtol=1e-5, atol=1e-5)
        assert "<td" in g._repr_html_() and "<td" in p._repr_html_()
    big = Gaussian(np.zeros(REPR_MAX_D + 1), np.eye(REPR_MAX_D + 1))
    assert repr(big) == f"Gaussian(d={REPR_MAX_D + 1}, rank={REPR_MAX_D + 1})"
    assert repr(Params(np.eye(REPR_MAX_D + 1))).startswith(f"Params(d={REPR_MAX_D + 1}, heads=1")


@pytest.mark.parametrize("kwargs", [
    {"B": np.eye(3), "V": -np.eye(3)},
    {"V": np.ones((3, 3))},
    {"heads": [(np.eye(3), np.eye(3)), (np.zeros((3, 3)), np.eye(3))]},
    {"heads": [Head(np.ones((1, 3)), np.ones((1, 3)), np.ones((1, 3)), np.ones((3, 1)))]},
    {"heads": Params(np.eye(3), heads=[(np.eye(3), np.eye(3))] * 2).heads},
    {"b": [1.0, 2.0, 3.0]},
])
def test_params_without_a_has_zero_drift(kwargs):
    # missing pieces are zero, A included: d comes from what is given
    p = Params(**kwargs)
    assert p.d == 3 and np.array_equal(p.A, np.zeros((3, 3)))
    g = Gaussian(np.ones(3), np.eye(3) + 0.5)
    full = Params(np.zeros((3, 3)), **kwargs)
    assert all(np.array_equal(x, y) for x, y in zip(moment_rhs(p, g), moment_rhs(full, g),
                                                    strict=True))


@pytest.mark.parametrize("kwargs, message", [
    ({}, "gives the dimension d"),
    ({"heads": []}, "heads is empty"),
    ({"heads": "ab"}, "list of"),
    ({"heads": [(np.eye(2),)]}, "pair"),
    ({"B": np.eye(2), "V": np.eye(3)}, "2×2"),
])
def test_params_without_a_refuses_what_has_no_dimension(kwargs, message):
    with pytest.raises(InvalidInputError, match=message):
        Params(**kwargs)


def _writeable(x, seen=None):
    """Paths to writeable arrays in the public attributes of x (recursing into tuples, lists
    and the package's objects)."""
    seen = set() if seen is None else seen
    if isinstance(x, np.ndarray):
        return [""] if x.flags.writeable else []
    if isinstance(x, tuple | list):
        return [f"[{i}]{p}" for i, y in enumerate(x) for p in _writeable(y, seen)]
    if type(x).__module__.startswith("riccati_tf") and hasattr(x, "__dict__") \
            and id(x) not in seen:
        seen.add(id(x))
        return [f".{k}{p}" for k, y in vars(x).items() if not k.startswith("stack")
                for p in _writeable(y, seen)]
    return []


def test_pickled_and_copied_objects_keep_read_only_arrays():
    # numpy unpickles and deep-copies arrays writeable: a layer sent to a worker process (a Dask
    # sweep) would become mutable under its cached values (ReadOnlyArrays re-freezes them)
    import copy
    import pickle

    from riccati_tf import Head, equilibria
    from riccati_tf.empirical.particles import FeedForward

    rng = np.random.default_rng(0)
    head = Head(*(rng.standard_normal((2, 4)) for _ in range(3)), rng.standard_normal((4, 2)))
    layer = Params(A=-np.eye(4), heads=[head, (np.eye(4), np.eye(4))])
    _ = head.pair, layer.value_scalars
    scalar = Params(A=np.eye(2), B=-np.eye(2), V=np.eye(2))
    _ = scalar.G
    objects = [layer, scalar, head, Gaussian(np.ones(4), np.eye(4)),
               FeedForward(np.ones((2, 4)), np.ones((4, 2))), *equilibria(scalar)]
    for obj in objects:
        assert _writeable(obj) == []
        for clone in (pickle.loads(pickle.dumps(obj)), copy.deepcopy(obj)):
            assert _writeable(clone) == [], type(obj).__name__
    clone = pickle.loads(pickle.dumps(layer))
    with pytest.raises(ValueError):
        clone.heads[1][0][0, 0] = 5.0
    from riccati_tf import moment_rhs
    g = Gaussian(np.ones(4), np.eye(4))
    assert all(np.array_equal(a, b) for a, b in zip(moment_rhs(clone, g), moment_rhs(layer, g),
                                                    strict=True))


@pytest.mark.parametrize("kwargs, message", [
    ({"A": np.ones((2, 3))}, "square"),
    ({"A": np.eye(2), "B": np.eye(3)}, "2×2"),
    ({"A": np.eye(2), "b": np.ones(3)}, "length d = 2"),
    ({"A": [[1.0, np.nan], [0, 1]]}, "NaN"),
    ({"A": np.eye(2), "B": np.eye(2), "heads": [(np.eye(2), np.eye(2))]}, "not both"),
    ({"A": np.eye(2), "heads": [(np.eye(2),)]}, "pair"),
    ({"A": "eye"}, "numeric"),
])
def test_params_rejects_bad_input(kwargs, message):
    with pytest.raises(InvalidInputError, match=message):
        Params(**kwargs)


@pytest.mark.parametrize("mean, cov, message", [
    (np.zeros(2), [[1.0, 0.5], [0.0, 1.0]], "not symmetric"),
    (np.zeros(2), [[1.0, 2.0], [2.0, 1.0]], "not positive semidefinite"),
    (np.zeros(3), np.eye(2), "length d = 2"),
    (np.zeros(2), [[1.0, 0.0], [0.0, np.inf]], "NaN or Inf"),
    (np.zeros(2), np.ones((2, 3)), "square"),
])
def test_gaussian_rejects_bad_input(mean, cov, message):
    with pytest.raises(InvalidInputError, match=message):
        Gaussian(mean, cov)


def test_gaussian_rank_and_singular_covariance(rng):
    X = rng.standard_normal((4, 2))
    g = Gaussian(np.zeros(4), X @ X.T)
    assert g.rank() == 2
    samples = g.sample(1000, rng)
    assert np.linalg.matrix_rank(samples - samples.mean(0), tol=1e-8) == 2


def test_moment_rhs_rejects_dimension_mismatch(rng):
    with pytest.raises(InvalidInputError, match="dimension mismatch"):
        moment_rhs(general_params(rng, 3), random_gaussian(rng, 2))


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 4)),
              elements=st.floats(-1e3, 1e3) | st.just(np.nan)))
def test_covariance_validation_never_passes_bad_matrices(M):
    """Whatever array comes in, Gaussian either accepts a symmetric PSD matrix or raises
    InvalidInputError (never a bare numpy error, never a silent wrong answer)."""
    try:
        g = Gaussian(np.zeros(M.shape[0]), M)
    except InvalidInputError:
        return
    assert np.all(np.isfinite(g.cov)) and np.allclose(g.cov, g.cov.T)
    eig = np.linalg.eigvalsh(g.cov)
    assert eig[0] >= -1e-8 * max(eig[-1], 1e-300) - 1e-300


# --------------------------------------------------------------------------- the input policy

TINY = 5e-324
BIG = float(np.finfo(float).max)


@pytest.mark.parametrize("value, expected", [
    ([[Fraction(1, 3)]], 1 / 3),                   # rounded to the nearest float64
    ([[Decimal("0.1")]], 0.1),
    ([[2**53 + 1]], float(2**53)),
    (np.array([[np.longdouble(1) / 3]]), float(np.longdouble(1) / 3)),
    (np.array([[6e-8]], dtype=np.float16), float(np.float16(6e-8))),  # float16 subnormal, exact
    ([[TINY]], TINY),                              # subnormals are kept, not flushed to 0
    (np.array([[-BIG]]), -BIG),
    (np.int8(-3), -3.0),
    (np.array(2.5), 2.5),
])
def test_numbers_convert_to_the_nearest_float64(value, expected):
    A = Params(A=value).A
    assert A.dtype == np.float64 and A.shape == (1, 1) and A[0, 0] == expected


@pytest.mark.parametrize("value, message", [
    (np.eye(2) + 0j, "must be real, got a complex array"),
    (np.eye(2) + 1e-9j, "must be real"),
    ([[1.0, 1j], [0.0, 1.0]], "must be real"),
    (np.array([["1", "0"], ["0", "1"]], dtype=object), "never parsed"),
    ([["1", "0"], ["0", "1"]], "never parsed"),
    ([[1.0, 0.0], [0.0, b"1"]], "bytes"),
    ([bytearray(b"\x01\x00"), bytearray(b"\x00\x01")], "bytes"),
    (np.eye(2, dtype=bool), "boolean"),
    ([[True, 0.0], [0.0, 1.0]], "boolean"),
    ([[1.0, None], [0.0, 1.0]], "None at index \\(0, 1\\)"),
    (None, "gives the dimension d"),  # A = None is the default (zero), d unknown
    ([[1.0, 0.0], [1.0]], "rectangular"),
    ({"A": 1.0}, "dict"),
    ({1.0}, "set"),
    (np.array(["2020-01-01"], dtype="datetime64[D]"), "dtype datetime64"),
    ([[10**400]], "beyond the float64 range"),
    ([[Fraction(1, 10**400)]], "would become 0"),
    (np.array([[np.longdouble("1e400")]]), "beyond the float64 range"),
    (np.array([[np.longdouble("1e-400")]]), "would become 0"),
    ([[Decimal("sNaN")]], "not a real number"),
    ([[Decimal("NaN")]], "NaN or Inf"),
    (np.ma.masked_array(np.eye(2), mask=np.eye(2, dtype=bool)), "masked"),
    (np.zeros((0, 0)), "d must be ≥ 1"),
    (np.zeros((1, 0)), "square"),
    (np.ones((2, 2, 2)), "square"),
])
def test_params_refuses_non_numbers_with_the_field_name(value, message):
    with pytest.raises(InvalidInputError, match=message) as info:
        Params(A=value)
    assert str(info.value).startswith("A ")


@pytest.mark.parametrize("kwargs, message", [
    ({"A": -np.eye(2), "heads": []}, "heads is empty"),
    ({"A": -np.eye(2), "heads": {"V": np.eye(2)}}, "list of"),
    ({"A": -np.eye(2), "heads": [(np.eye(2) * 1j, np.eye(2))]}, "heads\\[0\\] V must be real"),
    ({"A": np.eye(2), "b": 1.0}, "b must be a vector of length d = 2"),
])
def test_params_refuses_degenerate_heads_and_vectors(kwargs, message):
    with pytest.raises(InvalidInputError, match=message):
        Params(**kwargs)


@pytest.mark.parametrize("scale", [1e300, 1.7e308 / 1.07, 1e-300, 1e-310, 1e-320])
def test_symmetry_check_holds_at_every_magnitude(scale):
    """A 7 % asymmetry is refused however large or small the entries (no norm overflow or
    underflow); the symmetric matrix at the same scale is accepted unchanged."""
    with pytest.raises(InvalidInputError, match="not symmetric"):
        Gaussian(np.zeros(2), np.array([[1.0, 0.07], [0.0, 1.0]]) * scale)
    cov = np.array([[1.0, 0.07], [0.07, 1.0]]) * scale
    assert np.array_equal(Gaussian(np.zeros(2), cov).cov, cov)


@pytest.mark.parametrize("scale", [1e308, 1e300, 1e-300, 1e-310])
def test_definiteness_check_holds_at_every_magnitude(scale):
    with pytest.raises(InvalidInputError, match="not positive semidefinite"):
        Gaussian(np.zeros(2), np.array([[1.0, 1.5], [1.5, 1.0]]) * scale)
    with pytest.raises(InvalidInputError, match="not positive semidefinite"):
        Gaussian(np.zeros(2), np.diag([1.0, -1.0]) * scale)


def test_symmetrisation_never_overflows_and_keeps_mirrored_entries():
    cov = np.array([[BIG, 0.5 * BIG, 0.0], [0.5 * BIG * (1 + 1e-12), BIG, TINY], [0.0, TINY, 1.0]])
    g = Gaussian(np.zeros(3), cov)
    assert np.all(np.isfinite(g.cov)) and np.array_equal(g.cov, g.cov.T)
    assert g.cov[1, 2] == TINY and g.cov[0, 0] == BIG
    assert g.cov[0, 1] == pytest.approx(0.5 * BIG * (1 + 0.5e-12), rel=1e-15)


def test_rank_and_factor_at_extreme_scales():
    huge = np.full((2, 2), BIG)  # eigenvalue 2·BIG overflows unless scaled first
    assert Gaussian(np.zeros(2), huge).rank() == 1
    assert Gaussian(np.zeros(2), np.eye(2) * 1e-320).rank() == 2
    cov = np.array([[4.0, 2.0], [2.0, 3.0]]) * 1e300
    L = psd_factor(cov)
    np.testing.assert_allclose(L @ L.T, cov, rtol=1e-14)
    assert psd_rank(cov, tol=5e300) == 1 and psd_rank(cov, tol=0.0) == 2


def test_scalar_value_test_is_scale_free():
    for a in (1e-320, 1.0, BIG):
        assert Params(A=np.eye(2), V=a * np.eye(2)).value_scalars == (a,)
        assert Params(A=np.eye(2), V=[[a, a / 10], [0.0, a]]).value_scalars is None


def test_G_overflow_is_a_solver_error():
    with pytest.raises(SolverError, match="overflows"):
        _ = Params(A=np.eye(2), V=BIG * np.eye(2), B=BIG * np.eye(2)).G
    G = Params(A=np.eye(1), V=[[0.5]], B=[[BIG]]).G  # B + Bᵀ overflows, v (B + Bᵀ) does not
    assert G[0, 0] == -BIG


def test_sample_takes_a_seed_or_a_generator():
    g = Gaussian([1.0, -1.0], [[2.0, 1.0], [1.0, 1.0]])
    np.testing.assert_array_equal(g.sample(3), g.sample(3, 0))  # reproducible by default
    with pytest.raises(InvalidInputError, match="rng must be an integer seed"):
        g.sample(3, None)
    np.testing.assert_array_equal(g.sample(4, 11), g.sample(4, np.random.default_rng(11)))
    assert g.sample(np.int64(0), 1).shape == (0, 2)
    x = Gaussian(np.zeros(2), np.full((2, 2), BIG)).sample(100, 0)
    assert np.all(np.isfinite(x)) and np.std(x[:, 0] / 1e150) > 1e3


@pytest.mark.parametrize("n, rng, message", [
    (3.0, None, "n must be an integer"),
    (True, None, "n must be an integer"),
    (-1, None, "n must be ≥ 0"),
    (10**12, None, "batches"),
    (3, "seed", "rng must be an integer seed or a numpy.random.Generator"),
    (3, None, "draws are reproducible"),
    (3, 1.5, "rng must be"),
    (3, True, "rng must be"),
    (3, -2, "rng must be ≥ 0"),
    (3, np.random.RandomState(0), "rng must be"),
])
def test_sample_refuses_bad_counts_and_generators(n, rng, message):
    with pytest.raises(InvalidInputError, match=message):
        Gaussian(np.zeros(2), np.eye(2)).sample(n, rng)


def test_sample_next_to_the_largest_float_stays_finite():
    x = Gaussian([BIG, -BIG], np.full((2, 2), BIG)).sample(1000, 0)
    assert np.all(np.isfinite(x)) and np.all(np.abs(x) <= BIG)


@pytest.mark.parametrize("value, expected", [
    (np.float32(0.5), 0.5), (np.array(0.25), 0.25), (Fraction(1, 4), 0.25), (-0.0, 0.0),
    (np.int64(3), 3.0), (1e308, 1e308), (TINY, TINY),
])
def test_times_accept_real_scalars(value, expected):
    t = as_time("t_final", value, allow_zero=True)
    assert t == expected and type(t) is float and str(t) != "-0.0"


@pytest.mark.parametrize("value, message", [
    (True, "boolean"), ("1", "never parsed"), (None, "None"), (1j, "complex"),
    (np.nan, "finite"), (np.inf, "finite"), ([1.0], "single real number"),
    (10**400, "beyond the float64 range"), (-1.0, "non-negative"),
])
def test_times_refuse_non_reals(value, message):
    with pytest.raises(InvalidInputError, match=message):
        as_time("t_final", value, allow_zero=True)
    with pytest.raises(InvalidInputError, match="≤ 10"):
        as_time("t_final", 11.0, maximum=10.0)


@pytest.mark.parametrize("value, message", [
    ([0.0, 0.5, 0.5], "strictly increasing"),
    ([0.0, 1.0, 1.0 + 1e-13], "strictly increasing"),  # equal once clipped to t_final
    ([0, "1"], "never parsed"),
    ([0.0, np.nan], "NaN"),
    ([], "non-empty"),
    (np.zeros(MAX_TIME_POINTS + 1), "at most"),
])
def test_time_grids_refuse_duplicates_strings_and_overlong_grids(value, message):
    with pytest.raises(InvalidInputError, match=message):
        as_time_grid("t_eval", value, 1.0)
    np.testing.assert_array_equal(as_time_grid("t_eval", [0, 0.5, 1 + 1e-13], 1.0), [0, 0.5, 1])


@pytest.mark.parametrize("value", [3, np.int32(3), np.array(3)])
def test_counts_accept_integers_only(value):
    assert as_count("n", value) == 3
    for bad in (3.0, True, np.bool_(True), "3", None, np.array([3])):
        with pytest.raises(InvalidInputError, match="n must be an integer"):
            as_count("n", bad)
    with pytest.raises(InvalidInputError, match="≤ 2"):
        as_count("n", value, maximum=2)
