"""layers(): exact discrete residual layers x⁺ = x + τX(x) on Gaussians (SPEC §2)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from riccati_tf import Gaussian, Params, flow, layers
from riccati_tf.empirical.particles import simulate
from riccati_tf.errors import InvalidInputError, SolverError

from .cases import general_params, random_cov, random_gaussian


def test_layers_match_monte_carlo_push_forward(rng):
    """Push samples of N(m, Σ) through the affine map x ↦ (I + τM)x + τc layer by layer."""
    d, n, tau = 3, 200_000, 0.3
    plist = [general_params(rng, d, heads=2) for _ in range(4)]
    g = random_gaussian(rng, d)
    tr = layers(plist, g, 4, tau)
    x = g.sample(n, rng)
    for k, p in enumerate(plist):
        F = np.eye(d) + tau * p.M(tr.cov[k])
        x = x @ F.T + tau * p.c(tr.mean[k])
        S = np.cov(x.T)
        se = np.sqrt((np.outer(np.diag(S), np.diag(S)) + S**2) / n)  # sd of sample covariance
        assert np.all(np.abs(S - tr.cov[k + 1]) < 5 * se)
        assert np.all(np.abs(x.mean(0) - tr.mean[k + 1]) < 5 * np.sqrt(np.diag(S) / n))


def test_layers_match_particles_with_true_softmax(rng):
    """A residual network on N tokens (true softmax attention) tracks the Gaussian layers to
    O(N^{-1/2}): the error shrinks by about 2 when N grows 4×."""
    d, tau, n_layers = 2, 0.1, 3
    p = general_params(rng, d)
    g = Gaussian(np.zeros(d), 0.5 * np.eye(d))
    tr = layers(p, g, n_layers, tau)
    errs = []
    for n in (1500, 6000):
        trials = [simulate(p, g.sample(n, np.random.default_rng(s)), tau * n_layers,
                           n_steps=n_layers, method="euler") for s in range(4)]
        errs.append(np.mean([np.abs(run.cov - tr.cov).max() for run in trials]))
    assert errs[1] < errs[0] / 1.4
    assert errs[1] < 5 / np.sqrt(6000)


def test_layers_converge_to_flow(rng):
    """Explicit-Euler layers are first order in τ: halving τ halves the distance to the flow."""
    d = 3
    p, g = general_params(rng, d), random_gaussian(rng, d)
    ref = flow(p, g, 1.0, t_eval=[0.0, 1.0])
    errs = [np.abs(layers(p, g, n, 1.0 / n).cov[-1] - ref.cov[-1]).max() for n in (50, 100, 200)]
    ratios = np.array(errs[:-1]) / np.array(errs[1:])
    assert np.all(np.abs(ratios - 2) < 0.1)


@pytest.mark.parametrize("d, r", [(3, 1), (5, 2)])
def test_rank_is_invariant_along_layers(rng, d, r):
    g = Gaussian(rng.standard_normal(d), random_cov(rng, d, rank=r))
    tr = layers(general_params(rng, d), g, 20, 0.05)
    for S in tr.cov:
        assert Gaussian(np.zeros(d), S).rank(1e-9 * np.linalg.norm(S)) == r


@pytest.mark.parametrize("args, message", [
    ((2.5, 0.1), "integer"),
    ((0, 0.1), "≥ 1"),
    ((True, 0.1), "integer"),
    ((3, -0.1), "positive"),
])
def test_layers_reject_bad_input(rng, args, message):
    with pytest.raises(InvalidInputError, match=message):
        layers(general_params(rng, 2), random_gaussian(rng, 2), *args)


def test_layers_param_list_must_match_depth(rng):
    p = general_params(rng, 2)
    with pytest.raises(InvalidInputError, match="n_layers = 3"):
        layers([p, p], random_gaussian(rng, 2), 3, 0.1)


def test_layers_report_overflow_as_its_own_kind_of_blowup():
    """A finite stack of layers has no finite-time blow-up: leaving the floating-point range is
    "blowup" of kind "overflow" at the depth of the first layer that overflows, with the finite
    states before it; `flow` says "singularity"."""
    big = Gaussian(np.zeros(2), 1e150 * np.eye(2))
    p = Params(A=np.eye(2), B=np.eye(2), V=np.eye(2))
    tr = layers(p, big, 10, 1.0)
    assert tr.status == "blowup" and tr.blowup_kind == "overflow"
    assert 1 <= len(tr) < 11 and tr.blowup_time == len(tr) * 1.0
    assert np.all(np.isfinite(tr.cov)) and np.all(np.isfinite(tr.mean))
    np.testing.assert_array_equal(tr.t, np.arange(len(tr)))
    ok = layers(p, big, 1, 1e-300)
    assert ok.status == "completed" and ok.blowup_kind is None and len(ok) == 2
    assert flow(p, Gaussian(np.zeros(2), np.eye(2)), 5.0).blowup_kind == "singularity"


def test_layers_have_a_budget_and_refuse_non_finite_params(rng):
    p = general_params(rng, 2)
    with pytest.raises(SolverError, match="max_steps"):
        layers(p, random_gaussian(rng, 2), 10**12, 0.1)  # refused before any work or memory
    with pytest.raises(SolverError, match="max_steps"):
        layers(p, random_gaussian(rng, 2), 11, 0.1, max_steps=10)
    assert len(layers(p, random_gaussian(rng, 2), 10, 0.1, max_steps=10)) == 11
    bad = Params(A=np.eye(2))
    bad.A.setflags(write=True)
    bad.A[0, 0] = np.nan
    with pytest.raises(InvalidInputError, match="NaN"):
        layers([p, bad], random_gaussian(rng, 2), 2, 0.1)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 5), n=st.integers(1, 8))
def test_layers_keep_covariances_symmetric_psd(seed, d, n):
    rng = np.random.default_rng(seed)
    g = random_gaussian(rng, d, rank=int(rng.integers(0, d + 1)))
    tr = layers(general_params(rng, d), g, n, 0.1)
    assert len(tr) == n + 1
    for S in tr.cov:
        assert np.array_equal(S, S.T)
        eig = np.linalg.eigvalsh(S)
        assert eig[0] >= -1e-9 * max(eig[-1], 1.0)
