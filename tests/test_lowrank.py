"""Dense heads of low numerical rank applied through their factors (riccati_tf.state.lowrank):
the truncation bound, the rank found, the layers built from the factors, and the flows that use
them — checked against the dense matrices and the dense right-hand side."""

from __future__ import annotations

import numpy as np
import pytest

import riccati_tf.flows.rk.run as rk_run
from riccati_tf import Gaussian, Head, Params, flow
from riccati_tf.errors import SolverError
from riccati_tf.flows import integrate
from riccati_tf.state.lowrank import FACTOR_MIN_D, FACTOR_RTOL, factored_layer, low_rank_factors
from riccati_tf.state.moments import moment_arrays


def product(rng, d: int, k: int, spread: float = 1.0) -> np.ndarray:
    """A d×d matrix of rank k with singular values from 1 down to `spread`."""
    U, _ = np.linalg.qr(rng.standard_normal((d, k)))
    W, _ = np.linalg.qr(rng.standard_normal((d, k)))
    return (U * np.geomspace(1.0, spread, k)) @ W.T


@pytest.mark.parametrize(("d", "k"), [(8, 1), (8, 4), (40, 7), (96, 48)])
def test_low_rank_factors_find_the_rank_and_bound_the_truncation(rng, d, k):
    M = 3.0 * product(rng, d, k, spread=1e-6)
    U, W = low_rank_factors(M)
    assert U.shape == (d, k) and W.shape == (k, d)
    # the truncation is at most FACTOR_RTOL‖M‖_F; forming UW adds a few eps of rounding
    assert np.linalg.norm(M - U @ W) <= (FACTOR_RTOL + 8 * d * np.finfo(float).eps) * \
        np.linalg.norm(M)


def test_low_rank_factors_keep_small_singular_values_above_the_tolerance(rng):
    d = 30
    M = product(rng, d, 6) + 1e-12 * product(rng, d, 1)  # a 7th direction far above 4 eps
    U, W = low_rank_factors(M)
    assert U.shape[1] == 7
    assert np.linalg.norm(M - U @ W) <= 1e-14 * np.linalg.norm(M)


@pytest.mark.parametrize("case", ["full", "over half", "zero", "definite", "negative definite"])
def test_low_rank_factors_refuse(rng, case):
    d = 20
    X = rng.standard_normal((d, d))
    M = {"full": X, "over half": product(rng, d, d // 2 + 1), "zero": np.zeros((d, d)),
         "definite": X @ X.T + np.eye(d) + (X - X.T),  # symmetric part ≻ 0: no QR
         "negative definite": -np.eye(d) + 0.1 * X}[case]
    assert low_rank_factors(M) is None


def test_semidefinite_low_rank_matrices_pass_the_definiteness_shortcut(rng):
    d = 20
    U = product(rng, d, 3)
    for M in (U @ U.T, -(U @ U.T)):  # symmetric part singular: the QR decides, rank 3
        assert low_rank_factors(M)[0].shape == (d, 3)
    # positive definite, yet of numerical rank 2: the shortcut's margin leaves it to the QR
    D = np.diag(np.r_[1.0, 2.0, np.full(d - 2, 1e-20)])
    U, W = low_rank_factors(D)
    assert U.shape == (d, 2) and np.linalg.norm(D - U @ W) <= 1e-18


def test_factored_layer_reproduces_every_head(rng):
    d = 24
    low = (product(rng, d, 3), product(rng, d, 5))  # V and B both of low rank
    keys_full = (product(rng, d, 4), rng.standard_normal((d, d)))  # only V of low rank
    full = (rng.standard_normal((d, d)), product(rng, d, 2))  # V of full rank: stays dense
    given = Head(*rng.standard_normal((3, 2, d)), rng.standard_normal((d, 2)))
    p = Params(rng.standard_normal((d, d)), b=rng.standard_normal(d),
               heads=[low, keys_full, full, given])
    q = factored_layer(p)
    assert [f is not None for f in q.factors] == [True, True, False, True]
    assert q.factors[0].Q.shape == (5, d) and q.factors[0].V.shape == (3, d)
    assert np.array_equal(q.factors[1].K, np.eye(d))  # B_h kept whole: the identity key
    assert all(np.array_equal(getattr(q.factors[3], n), getattr(given, n)) for n in "QKVO")
    assert all(np.array_equal(x, y) for x, y in zip(q.heads[2], p.heads[2], strict=True))
    for (V, B), (Vq, Bq) in zip(p.heads, q.heads, strict=True):
        assert np.linalg.norm(Vq - V) <= 1e-14 * np.linalg.norm(V)
        assert np.linalg.norm(Bq - B) <= 1e-14 * np.linalg.norm(B)
    assert np.array_equal(q.b, p.b) and not np.any(factored_layer(p, bias=False).b)
    assert factored_layer(p) is q  # cached per layer: a second flow does not factorise again
    X = rng.standard_normal((d, d))
    m, S = rng.standard_normal(d), X @ X.T
    for got, ref in zip(moment_arrays(q, m, S), moment_arrays(p, m, S), strict=True):
        assert np.abs(got - ref).max() <= 1e-13 * np.abs(ref).max()


def encoder_like(rng, d: int, heads: int) -> tuple[Params, Gaussian]:
    """A layer of `heads` dense heads of rank d/heads (the pairs of random factors)."""
    r = d // heads
    hs = [Head(*(rng.standard_normal((3, r, d)) / np.sqrt(d)), rng.standard_normal((d, r))
               / np.sqrt(d)) for _ in range(heads)]
    p = Params(-0.5 * np.eye(d) + 0.1 * rng.standard_normal((d, d)) / np.sqrt(d),
               b=rng.standard_normal(d) / np.sqrt(d),
               heads=[h.pair for h in hs])
    X = rng.standard_normal((d, d))
    return p, Gaussian(rng.standard_normal(d) / np.sqrt(d), X @ X.T / d)


def test_rk_flow_factors_dense_heads_of_low_rank(rng, monkeypatch):
    """From FACTOR_MIN_D on the rk flow of dense low-rank heads runs on their factors (every
    head factored) and gives the trajectory of the dense layer, within the integration's own
    tolerance; below it the layer is integrated as given."""
    seen = []

    def spy(params, **kwargs):
        out = factored_layer(params, **kwargs)
        seen.append(out)
        return out

    monkeypatch.setattr(integrate, "factored_layer", spy)
    p, g = encoder_like(rng, FACTOR_MIN_D, 4)
    tr = flow(p, g, 1.0, t_eval=[0.0, 0.5, 1.0])
    assert len(seen) == 1 and all(f is not None for f in seen[0].factors)
    dense = rk_run._rk_flow(p, g, np.array([0.0, 0.5, 1.0]), 1.0, 1e-10, 1e-12)
    for got, ref in ((tr.cov, dense.cov), (tr.mean, dense.mean)):
        assert np.abs(got - ref).max() <= 1e-8 * np.abs(ref).max()
    small, gs = encoder_like(rng, FACTOR_MIN_D // 2, 4)
    flow(small, gs, 0.5, t_eval=[0.0, 0.5])
    assert len(seen) == 1  # not called below FACTOR_MIN_D



@pytest.mark.parametrize("scale", [1e-300, 1e-160, 1e150, 1e300])
def test_low_rank_factors_at_extreme_scales_are_exact_or_refused(rng, scale):
    # squares of R's rows may underflow or overflow: the factors are then refused (the head
    # stays dense), never returned with a larger truncation than the bound
    d = 16
    M = product(rng, d, 3) * scale
    got = low_rank_factors(M)
    if got is not None:
        U, W = got
        E = M / scale - U @ (W / scale)
        assert np.linalg.norm(E) <= 1e-13 * np.linalg.norm(M / scale)


def test_flow_of_overflowing_dense_heads_fails_as_the_dense_integration(rng):
    d = FACTOR_MIN_D
    V = product(rng, d, 4) * 1e150
    p = Params(-np.eye(d), heads=[(V, product(rng, d, 4))])
    g = Gaussian(np.zeros(d), np.eye(d))
    with pytest.raises(SolverError, match="budget"):
        flow(p, g, 0.5, max_steps=50)
    with pytest.raises(SolverError, match="budget"):
        rk_run._rk_flow(p, g, np.array([0.0, 0.5]), 0.5, 1e-10, 1e-12, max_steps=50)
