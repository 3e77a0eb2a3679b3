"""The trace-normalised covariance flow (the cloud after LayerNorm, SPEC §13): the trace is
kept; with A = 0 it is the moment flow projected onto tr Σ = c in the time dτ = (tr Σ/c) dt
(checked against the exact closed form of a scalar-V layer, mpmath-free: the closed form is
evaluated by the package's exact flow and the time change by quadrature); a blow-up of Σ
concentrates the normalised cloud on the blow-up direction; and N tokens moved by softmax
attention and re-scaled at every step follow it to O(N^-1/2)."""

import numpy as np
import pytest

from riccati_tf import Gaussian, Params, flow
from riccati_tf.empirical.particles import empirical_moments, velocity
from riccati_tf.errors import InvalidInputError
from riccati_tf.flows.normalised import normalised_flow, normalised_rhs, participation_ratio


def test_trace_is_kept_and_psd_stays():
    rng = np.random.default_rng(0)
    d = 5
    heads = [(rng.standard_normal((d, d)) / d, rng.standard_normal((d, d)) / d)
             for _ in range(3)]
    p = Params(0.2 * rng.standard_normal((d, d)), heads=heads)
    R = rng.standard_normal((d, d))
    run = normalised_flow(p, R @ R.T / d, 4.0)
    traces = np.trace(run.cov, axis1=1, axis2=2)
    np.testing.assert_allclose(traces, traces[0], rtol=1e-7)
    assert run.trace_drift <= 1e-7
    assert min(np.linalg.eigvalsh(S)[0] for S in run.cov) > -1e-9 * traces[0]
    assert abs(np.trace(normalised_rhs(p, run.cov[-1]))) <= 1e-12 * np.abs(run.cov[-1]).sum()


def test_without_drift_it_is_the_moment_flow_in_the_time_tau():
    """A = 0, V = vI: Σ̂(τ(t)) = cΣ(t)/tr Σ(t) with τ(t) = ∫ tr Σ/c, Σ(t) from the exact flow
    (closed form) up to 0.9 T*, τ by Simpson's rule on two grids (their difference bounds the
    quadrature's error); the normalised flow integrated independently to τ(t)."""
    from scipy.integrate import simpson

    d = 3
    B = np.array([[1.0, 0.3, 0.0], [-0.2, 0.8, 0.1], [0.0, 0.4, 0.6]])
    p = Params(np.zeros((d, d)), B=B, V=1.0 * np.eye(d))
    cov0 = np.diag([1.0, 0.6, 0.3])
    c = float(np.trace(cov0))
    blow = flow(p, Gaussian(np.zeros(d), cov0), 50.0, method="exact")
    assert blow.status == "blowup"
    t_end = 0.9 * blow.blowup_time

    def tau(n):
        ts = np.linspace(0.0, t_end, n)
        tr = flow(p, Gaussian(np.zeros(d), cov0), t_end, method="exact", t_eval=ts)
        return simpson(np.trace(tr.cov, axis1=1, axis2=2), x=ts) / c, tr.cov[-1]

    (tau_coarse, _), (tau_fine, end) = tau(401), tau(801)
    run = normalised_flow(p, cov0, float(tau_fine), n_eval=2, rtol=1e-11)
    expected = c * end / np.trace(end)
    speed = np.linalg.norm(normalised_rhs(p, expected))
    err = np.linalg.norm(run.cov[-1] - expected)
    assert err <= 10 * abs(tau_fine - tau_coarse) * speed + 1e-8 * c, err
    assert participation_ratio(expected) < participation_ratio(cov0)


def test_a_blowup_concentrates_the_cloud_on_its_direction():
    """V = B = I, A = 0: Σ(t) = Σ0(I − 2tΣ0)⁻¹ blows up along Σ0's top eigenvector; the
    normalised cloud's participation ratio falls towards 1 and its top eigenvector is e1."""
    p = Params(np.zeros((3, 3)), B=np.eye(3), V=np.eye(3))
    run = normalised_flow(p, np.diag([1.0, 0.7, 0.5]), 40.0)
    assert run.trend == "concentrates"
    assert run.ratio[-1] < 1.05 and np.all(np.diff(run.ratio) <= 1e-6)  # rtol 1e-8
    _, U = np.linalg.eigh(run.cov[-1])
    assert abs(U[0, -1]) > 0.999
    # opposite signs (V = −I): Σ → 0 like 1/t, the normalised cloud spreads towards c I/d
    spread = normalised_flow(Params(np.zeros((3, 3)), B=np.eye(3), V=-np.eye(3)),
                             np.diag([1.0, 0.7, 0.5]), 40.0)
    assert spread.trend == "spreads" and spread.ratio[-1] > 2.9
    assert participation_ratio(np.eye(3)) == 3.0


@pytest.mark.parametrize("seed", range(3))
def test_particles_rescaled_at_every_step_follow_the_normalised_flow(seed):
    """N = 1000 tokens ẋ_i = v_i − κ(x_i − m̂), v_i = X[μ_N](x_i) the softmax attention of the
    whole cloud, κ = tr Cov(x, v)/tr Ĉ (the global re-scaling that keeps tr Ĉ, the particles'
    own κ = tr F/(2 tr Σ)), RK4: the trace is kept, and the empirical covariance at t = 1 is
    within 0.3 of how far the normalised moment flow (from the particles' own empirical
    covariance) moved, and 4× closer to it than to the moment flow merely rescaled to the
    same trace at the same t (which ignores the time change)."""
    d, n, T, steps = 2, 1000, 1.0, 20
    p = Params(np.zeros((d, d)), B=np.array([[0.6, 0.2], [0.0, 0.5]]),
               V=np.array([[0.8, 0.1], [-0.1, 0.7]]))
    cov0 = np.array([[1.0, 0.3], [0.3, 0.5]])

    def field(x):
        m = x.mean(axis=0)
        v = velocity(p, x)
        kappa = np.sum((x - m) * (v - v.mean(axis=0))) / np.sum((x - m) ** 2)
        return v - kappa * (x - m)

    x = np.random.default_rng(7 * seed + n).multivariate_normal(np.zeros(d), cov0, size=n)
    start = empirical_moments(x)[1]
    h = T / steps
    for _ in range(steps):
        k1 = field(x)
        k2 = field(x + 0.5 * h * k1)
        k3 = field(x + 0.5 * h * k2)
        k4 = field(x + h * k3)
        x = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    C = empirical_moments(x)[1]
    assert np.trace(C) == pytest.approx(np.trace(start), rel=1e-5)  # RK4's error
    ref = normalised_flow(p, start, T, n_eval=2).cov[-1]
    S = flow(p, Gaussian(np.zeros(d), start), T, method="rk").cov[-1]
    rescaled = np.trace(start) * S / np.trace(S)
    error = np.linalg.norm(C - ref)
    assert error < 0.3 * np.linalg.norm(ref - start)
    assert error < 0.25 * np.linalg.norm(C - rescaled)


@pytest.mark.parametrize("bad", [np.zeros((2, 2)), np.array([[1.0, 0.0], [0.0, -1.0]]),
                                 np.full((2, 2), np.nan)])
def test_bad_starts_are_refused(bad):
    with pytest.raises(InvalidInputError):
        normalised_flow(Params(B=np.eye(2), V=np.eye(2)), bad, 1.0)
