"""Numerical pieces of the exact scalar-V flow (riccati_tf.exact): step rule, factors, node
exponentials, the collocation stage solver, and the d = 32 mean against Runge–Kutta."""

import numpy as np
import pytest
from scipy.linalg import expm

from riccati_tf import Gaussian, flow
from riccati_tf import exact as ex
from riccati_tf.validation import psd_rank

from .cases import random_cov, scalar_v_params


def rel_err(a, b):
    return np.max(np.abs(a - b)) / np.max(np.abs(b))


def kappa(A, h):
    """‖e^{Ah}‖₂ ‖e^{−Ah}‖₂: the rounding amplification of a Van Loan step of length h."""
    return np.linalg.norm(expm(A * h), 2) * np.linalg.norm(expm(-A * h), 2)


@pytest.mark.parametrize("nonnormal", [0.0, 1.0, 5.0])
def test_step_length_bounds_the_conditioning_of_the_block_exponential(rng, nonnormal):
    d = 12
    A = rng.standard_normal((d, d)) / np.sqrt(d)
    A += nonnormal * np.triu(rng.standard_normal((d, d)), 1)
    h = ex.step_length(A)
    assert kappa(A, h) <= ex.STEP_KAPPA * (1 + 1e-12)
    assert kappa(A, 4 * h) > ex.STEP_KAPPA  # the bound is not vacuous


def test_step_length_is_unbounded_when_the_symmetric_part_is_scalar():
    K = np.array([[0.0, 2.0], [-2.0, 0.0]])
    assert ex.step_length(0.3 * np.eye(2) + K) == np.inf


@pytest.mark.parametrize("rank, noise", [(6, 0.0), (4, 0.0), (4, 1e-17), (6, 1e-9)])
def test_factor_reproduces_the_covariance_and_its_rank(rng, rank, noise):
    cov = random_cov(rng, 6, rank) + noise * np.eye(6)
    L = ex._factor(cov)
    assert L.shape == (6, psd_rank(cov))
    assert rel_err(L @ L.T, cov) < 1e-13


@pytest.mark.parametrize("h", [0.05, 0.7, 2.0])
def test_mirrored_nodes_match_direct_block_exponentials(rng, h):
    d = 6
    A = rng.standard_normal((d, d)) / np.sqrt(d)
    C = rng.standard_normal((d, d))
    G = C + C.T
    prop = ex._Propagator(A, G)
    E, W = prop.nodes(h)
    E_ref, W_ref = ex.van_loan(A, G, np.append(prop.c * h, h))
    assert rel_err(E, E_ref) < 1e-13
    assert rel_err(W, W_ref) < 1e-13


@pytest.mark.parametrize("h", [0.01, 0.4])
@pytest.mark.parametrize("scale", [0.1, 1.0, 4.0])
def test_stage_solver_matches_the_dense_collocation_system(rng, scale, h, monkeypatch):
    """The sweeps (Picard while it contracts fast, as for h = 0.01, then decoupled simplified
    Newton) converge to the collocation solution; with no sweeps allowed, the dense (s d)×(s d)
    fallback gives the same stages."""
    d = 5
    prop = ex._Propagator(np.zeros((d, d)), np.eye(d))
    s = prop.c.size
    base = rng.standard_normal((d, d))
    K = np.stack([base + scale * c * rng.standard_normal((d, d)) for c in prop.c])
    m, b = rng.standard_normal(d), rng.standard_normal(d)
    calls = []
    monkeypatch.setattr(ex, "inv", lambda M: calls.append(1) or np.linalg.inv(M))
    Z = ex._stages(prop, K, m, b, h)
    assert bool(calls) == (h == 0.4)  # Newton only where Picard contracts slowly
    system = np.eye(s * d) - h * np.kron(prop.a, np.eye(d)) @ np.block(
        [[K[i] if i == j else np.zeros((d, d)) for j in range(s)] for i in range(s)])
    rhs = h * np.kron(prop.a, np.eye(d)) @ ((K @ m) + b).reshape(-1)
    Z_ref = np.linalg.solve(system, rhs).reshape(s, d)
    assert rel_err(Z, Z_ref) < 1e-13
    monkeypatch.setattr(ex, "NEWTON_ITERATIONS", 0)
    assert rel_err(ex._stages(prop, K, m, b, h), Z_ref) < 1e-13


def test_gauss_eigen_pairs_conjugates():
    lam, T, Tinv = ex.gauss_eigen(ex.GAUSS_STAGES)
    a = ex.gauss_tableau(ex.GAUSS_STAGES)[2]
    np.testing.assert_allclose(lam[::-1], lam.conj(), rtol=1e-12)
    assert rel_err((T * lam) @ Tinv, a) < 1e-12


@pytest.mark.parametrize("seed", range(3))
def test_mean_and_covariance_at_d32_match_tight_rk(seed):
    """The benchmark's size: d = 32, T = 5, with mean and bias; rk at rtol 1e-13 is an
    independent reference (‖A‖₂ T ≈ 10, several covariance steps and mean sub-steps)."""
    rng = np.random.default_rng(seed)
    d = 32
    p = scalar_v_params(rng, d, v=-0.5)
    X = rng.standard_normal((d, d))
    g = Gaussian(rng.standard_normal(d), X @ X.T / d)
    exact = flow(p, g, 5.0, method="exact", t_eval=[0.0, 2.5, 5.0])
    rk = flow(p, g, 5.0, method="rk", t_eval=[0.0, 2.5, 5.0], rtol=1e-13, atol=1e-15)
    assert exact.status == rk.status
    k = min(len(exact), len(rk))
    assert rel_err(exact.cov[:k], rk.cov[:k]) < 1e-11
    assert rel_err(exact.mean[:k], rk.mean[:k]) < 1e-11
