"""Params, Gaussian and the moment right-hand side (SPEC §1–§2)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from riccati_tf import Gaussian, Params, moment_rhs
from riccati_tf.errors import InvalidInputError

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
