"""Gaussian closures of the LayerNorm and the feed-forward block against independent references:
adaptive quadrature, the arc-cosine kernel and Monte Carlo."""

import numpy as np
import pytest
from scipy import integrate
from scipy.special import ndtr

from riccati_tf.empirical.encoders.closures import layer_norm_closure, mlp_closure
from riccati_tf.empirical.encoders.factors import LayerNormParams, MLPParams
from riccati_tf.empirical.encoders.forward import mlp_forward
from riccati_tf.empirical.encoders.hermite import (
    FUNCTIONS,
    activation_covariance,
    activation_moments,
)
from riccati_tf.errors import InvalidInputError


def _phi(x):
    return np.exp(-x * x / 2) / np.sqrt(2 * np.pi)


def _gelu_derivatives(x):
    return ndtr(x) + x * _phi(x), _phi(x) * (2 - x * x)


def _expect(g, mu, sigma):
    """E g(μ + σZ) by adaptive quadrature (split at the ReLU kink)."""
    if sigma == 0:
        return g(mu)
    f = lambda z: g(mu + sigma * z) * _phi(z)  # noqa: E731
    kink = -mu / sigma
    return sum(integrate.quad(f, a, b, epsabs=1e-13, epsrel=1e-12, limit=200)[0]
               for a, b in [(-np.inf, kink), (kink, np.inf)])


CASES = [(0.0, 1.0), (0.7, 0.3), (-1.3, 2.0), (2.5, 4.0), (-0.4, 0.0), (0.2, 6.0)]


@pytest.mark.parametrize("activation", ["relu", "gelu", "gelu_tanh"])
def test_one_dimensional_moments_match_quadrature(activation):
    f = FUNCTIONS[activation]
    mu, sigma = np.array(CASES).T
    mom = activation_moments(activation, mu, sigma)
    for i, (m, s) in enumerate(CASES):
        mean = _expect(f, m, s)
        assert mom.mean[i] == pytest.approx(mean, abs=1e-9)
        assert mom.variance[i] == pytest.approx(_expect(lambda x: f(x) ** 2, m, s) - mean**2,
                                                abs=1e-8 * max(1, s * s))
    if activation == "gelu":
        for i, (m, s) in enumerate(CASES):
            assert mom.slope[i] == pytest.approx(_expect(lambda x: _gelu_derivatives(x)[0], m, s),
                                                 abs=1e-10)
            assert mom.curvature[i] == pytest.approx(
                _expect(lambda x: _gelu_derivatives(x)[1], m, s), abs=1e-10)
    if activation == "relu":
        assert np.allclose(mom.slope, [_expect(lambda x: float(x > 0), m, s) if s else 0.0
                                       for m, s in CASES], atol=1e-10)


def test_relu_covariance_is_the_arc_cosine_kernel():
    """Zero-mean pre-activations: E[relu(u)relu(v)] = σ1σ2 (sin θ + (π − θ) cos θ)/(2π), cos θ = ρ
    (Cho and Saul 2009); Mehler's series with its cut-off bound must contain it."""
    sigma = np.array([1.0, 2.0, 0.5, 1.5])
    R = np.array([[1, 0.3, -0.6, 0.95], [0.3, 1, 0.1, -0.2], [-0.6, 0.1, 1, 0.4],
                  [0.95, -0.2, 0.4, 1]])
    mom = activation_moments("relu", np.zeros(4), sigma)
    C, bound = activation_covariance(mom, R)
    theta = np.arccos(np.clip(R, -1, 1))
    exact = np.outer(sigma, sigma) * (np.sin(theta) + (np.pi - theta) * R) / (2 * np.pi) \
        - np.outer(mom.mean, mom.mean)
    assert np.all(np.abs(C - exact) <= bound + 1e-12)
    assert np.abs(C - exact)[0, 1] < 1e-12  # |ρ| = 0.3: the series has converged
    assert bound[0, 3] > 0  # |ρ| = 0.95: the bound is honest about the slow tail


def test_gelu_cross_covariance_matches_two_dimensional_quadrature():
    mu, sigma, rho = np.array([0.4, -0.8]), np.array([1.3, 0.7]), 0.7
    mom = activation_moments("gelu", mu, sigma)
    C, bound = activation_covariance(mom, np.array([[1, rho], [rho, 1]]))
    f = FUNCTIONS["gelu"]

    def integrand(z2, z1):
        u1 = mu[0] + sigma[0] * z1
        u2 = mu[1] + sigma[1] * (rho * z1 + np.sqrt(1 - rho**2) * z2)
        return f(u1) * f(u2) * _phi(z1) * _phi(z2)

    second = integrate.dblquad(integrand, -10, 10, -10, 10, epsabs=1e-12)[0]
    assert abs(C[0, 1] - (second - mom.mean[0] * mom.mean[1])) <= bound[0, 1] + 1e-9


def test_unknown_activation_is_refused():
    with pytest.raises(InvalidInputError, match="activation"):
        activation_moments("swish", np.zeros(1), np.ones(1))


def _sample(mean, cov, n, seed):
    return np.random.default_rng(seed).multivariate_normal(mean, cov, size=n)


@pytest.mark.parametrize("d,scale", [(16, 1.0), (64, 1.0), (64, 4.0), (256, 1.0)])
def test_layer_norm_closure_against_monte_carlo(d, scale):
    """Mean, covariance and Stein's cross-covariance Cov(x, y) = Σ E[∇y]ᵀ of y = LN(x) within
    κ³ (the closure's neglected order) plus 4.5 sampling standard errors, and far better than
    the first-order closure at small d."""
    rng = np.random.default_rng(d)
    norm = LayerNormParams(1 + 0.3 * rng.standard_normal(d), 0.2 * rng.standard_normal(d), 1e-5)
    R = scale * rng.standard_normal((d, d)) / np.sqrt(d)
    mean, cov = rng.standard_normal(d), R @ R.T + 0.3 * np.diag(rng.uniform(0.2, 3, d))
    mom = layer_norm_closure(norm, mean, cov)
    n = 400_000 if d <= 64 else 40_000
    x = _sample(mean, cov, n, 1)
    y = norm(x)
    C = np.cov(y, rowvar=False)
    scale_C = np.linalg.norm(mom.cov)
    floor = np.sqrt((np.trace(C) ** 2 + np.sum(C**2)) / n) / scale_C
    cov_err = np.linalg.norm(C - mom.cov) / scale_C
    mean_err = np.linalg.norm(y.mean(0) - mom.mean) / np.sqrt(np.trace(mom.cov))
    cross = (x - x.mean(0)).T @ (y - y.mean(0)) / (n - 1)
    cross_err = np.linalg.norm(cross - cov @ mom.jacobian.T) / np.linalg.norm(cross)
    k3 = mom.kappa**3
    assert cov_err <= 2 * k3 + 4.5 * floor
    assert mean_err <= 2 * k3 + 4.5 / np.sqrt(n)
    assert cross_err <= 2 * k3 + 4.5 * np.sqrt(d / n) * 2
    if d == 16:  # the first-order (affine) closure: q replaced by its mean
        P = np.eye(d) - 1 / d
        mu = P @ mean
        J = norm.gamma[:, None] * P / np.sqrt((mu @ mu + np.trace(P @ cov @ P)) / d + norm.eps)
        first = np.linalg.norm(C - J @ cov @ J.T) / scale_C
        assert cov_err < first / 3


def _mlp(rng, d, width, activation, gated=False):
    W = rng.standard_normal((width, d)) / np.sqrt(d)
    extra = ((rng.standard_normal((width, d)) / np.sqrt(d), 0.3 * rng.standard_normal(width))
             if gated else (None, None))
    return MLPParams(W, 0.5 * rng.standard_normal(width),
                     rng.standard_normal((d, width)) / np.sqrt(width),
                     0.1 * rng.standard_normal(d), activation, *extra)


@pytest.mark.parametrize("activation,gated", [("relu", False), ("gelu", False),
                                              ("gelu_tanh", False), ("gelu", True)])
def test_mlp_closure_matches_monte_carlo(activation, gated):
    """E o, Cov o and Stein's cross-covariance Cov(y, o) = Σ E[J]ᵀ within 4.5 standard errors of
    a Monte-Carlo estimate from n = 200 000 draws."""
    rng = np.random.default_rng(7)
    d, width, n = 6, 24, 200_000
    mlp = _mlp(rng, d, width, activation, gated)
    R = rng.standard_normal((d, d)) / np.sqrt(d)
    mean, cov = 0.5 * rng.standard_normal(d), R @ R.T + 0.5 * np.eye(d)
    mom = mlp_closure(mlp, mean, cov, gated_samples=50_000, seed=3)
    y = _sample(mean, cov, n, 11)
    o = mlp_forward(mlp, y)
    C = np.cov(o, rowvar=False)
    v = np.diag(C)
    assert np.all(np.abs(o.mean(0) - mom.mean) <= 4.5 * np.sqrt(v / n))
    cov_se = np.sqrt((np.outer(v, v) + C**2) / n)
    slack = 4.5 * mom.bound * np.linalg.norm(C) if gated else 0.0  # the Monte-Carlo closure
    assert np.all(np.abs(C - mom.cov) <= 4.5 * cov_se + slack)
    cross = (y - y.mean(0)).T @ (o - o.mean(0)) / (n - 1)
    cross_se = np.sqrt(np.outer(np.diag(np.cov(y, rowvar=False)), v) / n)
    assert np.all(np.abs(cross - cov @ mom.jacobian.T) <= 4.5 * cross_se)
    if not gated:
        assert mom.bound < 1e-3  # 24 pre-activations of rank 6: strongly correlated
