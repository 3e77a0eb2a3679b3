"""Heads given as low-rank factors (state.params.Head: B_h = KᵀQ, V_h = OV) against the same
heads as dense (V_h, B_h) pairs: the moment right-hand side, rk flows and layers (SPEC §2)."""

import numpy as np
import pytest

from riccati_tf import Gaussian, Params, flow, layers, moment_rhs
from riccati_tf.errors import InvalidInputError
from riccati_tf.state.moments import covariance_array, moment_arrays
from riccati_tf.state.params import Head, HeadPairs

from .cases import random_gaussian

#: factored and dense evaluations differ by the association of the products only
AGREE = 1e-12


def rel_err(a, b):
    return np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300)


def random_head(rng, d: int, r: int, s: int) -> Head:
    w = 1 / np.sqrt(d)
    return Head(w * rng.standard_normal((r, d)) / np.sqrt(r), w * rng.standard_normal((r, d)),
                w * rng.standard_normal((s, d)), w * rng.standard_normal((d, s)))


def factored_case(seed: int):
    """(factored Params, the same heads dense, Gaussian): d = 2…16, 1–4 heads of ranks 1…d,
    every third case with a dense head among the factored ones, half the cases (seed mod 4 in
    {1, 2}) with two heads of rank d, one or both with the identity as key factor."""
    rng = np.random.default_rng(seed)
    d = int(rng.integers(2, 17))
    H = int(rng.integers(1, 5))
    heads = [random_head(rng, d, int(rng.integers(1, d + 1)), int(rng.integers(1, d + 1)))
             for _ in range(H)]
    if seed % 3 == 0:
        heads.append((rng.standard_normal((d, d)) / d, rng.standard_normal((d, d)) / d))
    if seed % 4 in (1, 2):  # dense B_h kept whole (K = I): alone in its group, or with a K ≠ I
        s = int(rng.integers(1, d + 1))
        eyed = random_head(rng, d, d, s)
        heads.append(Head(eyed.Q, np.eye(d), eyed.V, eyed.O))
        heads.append(random_head(rng, d, d, s) if seed % 4 == 1 else
                     Head(-eyed.Q, np.eye(d), eyed.O.T, eyed.V.T))
    A = -0.5 * np.eye(d) + rng.standard_normal((d, d)) / (2 * np.sqrt(d))
    b = rng.standard_normal(d) if seed % 2 else None
    pf = Params(A, b=b, heads=heads)
    dense = [(h.O @ h.V, h.K.T @ h.Q) if isinstance(h, Head) else h for h in heads]
    return pf, Params(A, b=b, heads=dense), random_gaussian(rng, d, rank=max(1, d - seed % 3))


@pytest.mark.parametrize("seed", range(24))
def test_factored_rhs_equals_dense(seed):
    pf, pd, g = factored_case(seed)
    for got, want in zip(moment_rhs(pf, g), moment_rhs(pd, g), strict=True):
        assert rel_err(got, want) <= AGREE
    assert rel_err(covariance_array(pf, g.cov), moment_arrays(pd, g.mean, g.cov)[1]) <= AGREE
    assert rel_err(pf.M(g.cov), pd.M(g.cov)) <= AGREE
    assert rel_err(pf.c(g.mean), pd.c(g.mean)) <= AGREE
    # against the equations of SPEC §2 written out term by term
    S, m = g.cov, g.mean
    dm = (pd.A + sum(V for V, _ in pd.heads)) @ m + sum(V @ S @ B @ m for V, B in pd.heads) + pd.b
    dS = pd.A @ S + S @ pd.A.T + sum(V @ S @ B @ S + S @ B.T @ S @ V.T for V, B in pd.heads)
    got = moment_rhs(pf, g)
    assert rel_err(got[0], dm) <= AGREE and rel_err(got[1], dS) <= AGREE


@pytest.mark.parametrize("seed", range(8))
def test_factored_rk_flow_equals_dense(seed):
    pf, pd, g = factored_case(seed)
    a, b = flow(pf, g, 1.0, method="rk"), flow(pd, g, 1.0, method="rk")
    assert np.array_equal(a.t, b.t)
    assert rel_err(a.cov, b.cov) <= AGREE and rel_err(a.mean, b.mean) <= AGREE


@pytest.mark.parametrize("seed", range(8))
def test_factored_layers_equal_dense(seed):
    pf, pd, g = factored_case(seed)
    a, b = layers(pf, g, 6, 0.2), layers([pd] * 6, g, 6, 0.2)
    assert rel_err(a.cov, b.cov) <= AGREE and rel_err(a.mean, b.mean) <= AGREE


def test_heads_stay_dense_pairs_formed_on_demand(rng):
    h = random_head(rng, 5, 2, 3)
    p = Params(-np.eye(5), heads=[h, (np.eye(5), np.zeros((5, 5)))])
    assert isinstance(p.heads, HeadPairs) and len(p.heads) == 2
    assert "pair" not in h.__dict__  # nothing dense formed at construction
    V, B = p.heads[0]
    np.testing.assert_allclose(V, h.O @ h.V, rtol=1e-15)
    np.testing.assert_allclose(B, h.K.T @ h.Q, rtol=1e-15)
    assert p.heads[0][0] is V and not V.flags.writeable
    assert [f is h for f in p.factors] == [True, False]
    assert Params(p.A, heads=p.heads).factors[0] is h  # the factors travel with heads
    assert len(list(p.heads)) == 2 and len(p.heads[:1]) == 1


def test_value_scalars_of_factored_heads(rng):
    d = 4
    full = Head(rng.standard_normal((d, d)), rng.standard_normal((d, d)), 2 * np.eye(d),
                -0.25 * np.eye(d))
    assert Params(np.eye(d), heads=[full]).value_scalars == pytest.approx((-0.5,), rel=1e-15)
    low = random_head(rng, d, 2, 3)
    p = Params(np.eye(d), heads=[low])
    assert p.value_scalars is None and "pair" not in low.__dict__
    zero = Head(np.ones((1, d)), np.ones((1, d)), np.zeros((1, d)), np.ones((d, 1)))
    assert Params(np.eye(d), heads=[zero]).value_scalars == (0.0,)


def test_exact_flow_of_factored_scalar_heads(rng):
    """A factored head with V_h = v I takes the closed form and agrees with rk."""
    d = 3
    h = Head(rng.standard_normal((d, d)) / 3, rng.standard_normal((d, d)) / 3, np.eye(d),
             0.4 * np.eye(d))
    p, g = Params(-np.eye(d), heads=[h]), random_gaussian(rng, d)
    ex, rk = flow(p, g, 1.0), flow(p, g, 1.0, method="rk", rtol=1e-12, atol=1e-14)
    assert ex.method == "exact"
    assert rel_err(ex.cov, rk.cov) < 1e-9 and rel_err(ex.mean, rk.mean) < 1e-9


def test_centred_rk_integrates_the_covariance_alone(rng):
    """m0 = 0, b = 0: the mean stays 0 exactly; the covariance matches the full integration
    (through a callable, which integrates (m, Σ))."""
    pf, _, g = factored_case(4)
    g0, p0 = Gaussian(np.zeros(g.d), g.cov), Params(pf.A, heads=pf.heads)
    a = flow(p0, g0, 1.0, method="rk", rtol=1e-12, atol=1e-14)
    b = flow(lambda t: p0, g0, 1.0, method="rk", rtol=1e-12, atol=1e-14)
    assert not np.any(a.mean) and not np.any(b.mean)
    assert rel_err(a.cov, b.cov) < 1e-10


D = 3
OK = np.ones((2, D))


@pytest.mark.parametrize("kwargs, fragment", [
    ({"K": np.ones((3, D))}, "K must have the shape of Q"),
    ({"V": np.ones((2, D + 1))}, "Head V must be 2×3"),
    ({"O": np.ones((D, 3))}, "Head O must be 3×2"),
    ({"O": np.ones((D + 1, 2))}, "Head O must be 3×2"),
    ({"Q": np.zeros((0, D)), "K": np.zeros((0, D))}, "rank ≥ 1"),
    ({"V": np.zeros((0, D)), "O": np.zeros((D, 0))}, "rank ≥ 1"),
    ({"Q": np.ones(D)}, "Head Q must be a 2-dimensional array"),
    ({"K": [[1.0, np.nan, 0.0], [0.0, 0.0, 0.0]]}, "Head K contains NaN"),
    ({"O": np.full((D, 2), np.inf)}, "Head O contains NaN or Inf"),
    ({"V": np.ones((2, D)) * 1j}, "Head V must be real"),
    ({"Q": [["1", "2", "3"], ["4", "5", "6"]]}, "Head Q must be numeric"),
    ({"V": np.ones((2, D), dtype=bool)}, "Head V must be numeric"),
    ({"O": None}, "Head O must be a numeric array"),
])
def test_bad_factors_are_refused(kwargs, fragment):
    fields = {"Q": OK, "K": OK, "V": OK, "O": np.ones((D, 2))} | kwargs
    with pytest.raises(InvalidInputError, match=fragment):
        Head(**fields)


def test_factors_must_match_the_layer():
    h = Head(OK, OK, OK, np.ones((D, 2)))
    with pytest.raises(InvalidInputError, match=r"heads\[1\] is a Head on R\^3"):
        Params(np.eye(D + 1), heads=[(np.eye(D + 1), np.eye(D + 1)), h])
    with pytest.raises(InvalidInputError, match=r"heads\[0\] must be a pair"):
        Params(np.eye(D), heads=[(OK, OK, OK)])
    # one head given bare: the message says how to wrap it
    with pytest.raises(InvalidInputError, match=r"got a Head \(one head: heads=\[head\]\)"):
        Params(np.eye(D), heads=h)
    with pytest.raises(InvalidInputError, match=r"shape \(3, 3\) \(one head: heads=\[\(V, B\)\]\)"):
        Params(np.eye(D), heads=(np.eye(D), np.eye(D)))


def test_factors_are_read_only_copies():
    Q = np.ones((2, D))
    h = Head(Q, OK, OK, np.ones((D, 2)))
    Q[0, 0] = 5.0
    assert h.Q[0, 0] == 1.0 and not h.Q.flags.writeable


def test_head_repr_is_its_shape_not_its_entries():
    h = Head(np.ones((2, 400)), np.ones((2, 400)), np.ones((3, 400)), np.ones((400, 3)))
    assert repr(h) == "Head(d=400, query–key rank ≤ 2, value rank ≤ 3)"


def test_overflowing_factors_are_solver_errors():
    """Finite factors whose products leave float64: a SolverError where they are used, an
    overflow ending the layers."""
    from riccati_tf.errors import SolverError
    d = 3
    big = Head(1e200 * np.ones((1, d)), 1e200 * np.ones((1, d)), 1e200 * np.ones((1, d)),
               1e200 * np.ones((d, 1)))
    p, g = Params(-np.eye(d), heads=[big]), Gaussian(np.zeros(d), np.eye(d))
    # the repr shows the head by its ranks: it does not form the overflowing dense pair
    assert p.value_scalars is None and "heads=[Head(r=1, s=1)]" in repr(p)
    with pytest.raises(SolverError, match="overflows"):
        p.heads[0]
    with pytest.raises(SolverError, match="overflows"):
        moment_rhs(p, g)
    with pytest.raises(SolverError):
        flow(p, g, 1.0)
    tr = layers(p, g, 2, 0.1)  # the first layer leaves the floating-point range
    assert tr.status == "blowup" and tr.blowup_kind == "overflow" and len(tr) == 1
