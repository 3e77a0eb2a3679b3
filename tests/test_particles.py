"""The N-token system: streaming softmax, field, integrators, backends, and the Gaussian limit."""

import numpy as np
import pytest
from scipy.linalg import expm

from riccati_tf import Gaussian, Params, flow
from riccati_tf.empirical.gaussianity import statistics
from riccati_tf.empirical.particles import (
    FLOAT32_VELOCITY_RTOL,
    FeedForward,
    attention_field,
    empirical_moments,
    multi_head_attention,
    simulate,
    softmax_means,
    velocity,
)
from riccati_tf.errors import InvalidInputError, SolverError
from riccati_tf.state.moments import moment_arrays


def dense_attention(x, y, B, V, beta=None):
    """The full n×N softmax, max-subtracted per row."""
    logits = x @ B.T @ y.T + (0 if beta is None else beta)
    w = np.exp(logits - logits.max(axis=1, keepdims=True))
    return (w / w.sum(axis=1, keepdims=True)) @ y @ V.T


def relu_term(ff, x):
    return np.maximum(x @ ff.U.T + ff.c, 0) @ ff.W.T


@pytest.mark.parametrize("scale", [0.3, 30.0])
@pytest.mark.parametrize("block", [64, 1024])
def test_attention_field_matches_the_dense_softmax(rng, scale, block):
    x, y = rng.standard_normal((700, 3)), rng.standard_normal((1300, 3))
    B, V = scale * rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    beta = rng.standard_normal(1300)
    np.testing.assert_allclose(attention_field(x, y, B, V, block=block),
                               dense_attention(x, y, B, V), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(attention_field(x, y, B, V, key_bias=beta, block=block),
                               dense_attention(x, y, B, V, beta), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("block", [100, 1024])
def test_multi_head_attention_shares_the_keys_of_all_heads(rng, block):
    # three heads of very different logit scales, with a key bias, against one dense softmax
    # per head; the queries of all heads pass through one softmax_means call
    x, y = rng.standard_normal((300, 4)), rng.standard_normal((900, 4))
    heads = [(rng.standard_normal((4, 4)), s * rng.standard_normal((4, 4)))
             for s in (0.1, 1.0, 20.0)]
    beta = rng.standard_normal(900)
    want = sum(dense_attention(x, y, B, V, beta) for V, B in heads)
    np.testing.assert_allclose(multi_head_attention(x, y, heads, key_bias=beta, block=block),
                               want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(softmax_means(x, y, block=block),
                               dense_attention(x, y, np.eye(4), np.eye(4)),
                               rtol=1e-12, atol=1e-12)


def test_attention_field_survives_a_late_dominant_key():
    # the first key block has logits 0, the last key a logit 1000 above: exp would overflow in
    # the single-shift pass; the row is recomputed with running maxima
    y = np.zeros((300, 1))
    y[-1] = 10.0
    x = np.array([[1.0], [-1.0]])
    out = attention_field(x, y, np.array([[100.0]]), np.eye(1), block=100)
    np.testing.assert_allclose(out, dense_attention(x, y, np.array([[100.0]]), np.eye(1)),
                               rtol=1e-14, atol=1e-300)
    assert out[0, 0] == pytest.approx(10.0) and out[1, 0] == 0.0


def test_velocity_is_the_multi_head_field_plus_relu(rng):
    x = rng.standard_normal((400, 3))
    heads = [(rng.standard_normal((3, 3)), rng.standard_normal((3, 3))) for _ in range(2)]
    p = Params(A=rng.standard_normal((3, 3)), b=rng.standard_normal(3), heads=heads)
    ff = FeedForward(W=rng.standard_normal((3, 5)), U=rng.standard_normal((5, 3)),
                     c=rng.standard_normal(5))
    want = x @ p.A.T + p.b + sum(dense_attention(x, x, B, V) for V, B in heads)
    np.testing.assert_allclose(velocity(p, x), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(velocity(p, x, feedforward=ff), want + relu_term(ff, x),
                               rtol=1e-12, atol=1e-12)


def test_feedforward_shapes_are_checked():
    with pytest.raises(InvalidInputError, match="W must be"):
        FeedForward(W=np.ones((2, 3)), U=np.ones((4, 2)))
    with pytest.raises(InvalidInputError, match="U must be"):
        FeedForward(W=np.ones((2, 3)), U=np.ones(3))
    with pytest.raises(InvalidInputError, match="NaN"):
        FeedForward(W=np.ones((2, 1)), U=np.array([[np.nan, 0.0]]))
    with pytest.raises(InvalidInputError, match="feedforward must be"):
        simulate(Params(A=np.eye(3)), np.ones((4, 3)), 1.0, n_steps=1,
                 feedforward=FeedForward(W=np.ones((2, 1)), U=np.ones((1, 2))))


def test_bad_arguments_are_refused():
    x = np.random.default_rng(0).standard_normal((10, 2))
    p = Params(A=np.eye(2))
    with pytest.raises(InvalidInputError, match="method"):
        simulate(p, x, 1.0, n_steps=1, method="midpoint")
    with pytest.raises(InvalidInputError, match="backend"):
        simulate(p, x, 1.0, n_steps=1, backend="jax")
    with pytest.raises(InvalidInputError, match="params must be"):
        simulate(Params(A=np.eye(3)), x, 1.0, n_steps=1)
    with pytest.raises(InvalidInputError, match="n_steps"):
        simulate(p, x, 1.0, n_steps=0)


def test_euler_is_the_residual_network(rng):
    x0 = rng.standard_normal((300, 2))
    p = Params(A=rng.standard_normal((2, 2)), B=np.eye(2), V=0.5 * np.eye(2))
    ff = FeedForward(W=rng.standard_normal((2, 4)), U=rng.standard_normal((4, 2)))
    run = simulate(p, x0, 0.3, n_steps=3, method="euler", keep_particles=True, feedforward=ff)
    x = x0
    for _ in range(3):
        x = x + 0.1 * (x @ p.A.T + dense_attention(x, x, p.B, p.V) + relu_term(ff, x))
    np.testing.assert_allclose(run.particles[-1], x, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(run.cov[-1], np.cov(x.T), rtol=1e-12)


def test_rk4_on_a_linear_field_has_fourth_order_error(rng):
    A = rng.standard_normal((3, 3))
    x0 = rng.standard_normal((50, 3))
    exact = x0 @ expm(A).T
    errs = [np.abs(simulate(Params(A=A), x0, 1.0, n_steps=n, keep_particles=True).particles[-1]
                   - exact).max() for n in (10, 20)]
    assert 2**4 * 0.8 < errs[0] / errs[1] < 2**4 * 1.2


def test_time_varying_params_and_feedforward(rng):
    x0 = rng.standard_normal((200, 2))
    U = rng.standard_normal((3, 2))

    def params(t):
        return Params(A=np.array([[0.0, t], [-t, 0.1]]), B=(1 + t) * np.eye(2), V=-np.eye(2))

    def ff(t):
        return FeedForward(W=np.cos(t) * np.ones((2, 3)), U=U)

    run = simulate(params, x0, 0.2, n_steps=2, method="euler", keep_particles=True,
                   feedforward=ff)
    x = x0
    for t in (0.0, 0.1):
        p = params(t)
        x = x + 0.1 * (x @ p.A.T + dense_attention(x, x, p.B, p.V) + relu_term(ff(t), x))
    np.testing.assert_allclose(run.particles[-1], x, rtol=1e-12, atol=1e-12)


def test_overflow_is_reported():
    x0 = np.random.default_rng(1).standard_normal((20, 1))
    with pytest.raises(SolverError, match="overflowed"):
        simulate(Params(A=[[1e308]]), 10 * x0, 1.0, n_steps=1, method="euler")


def test_an_overflowing_empirical_covariance_is_reported():
    # tokens of 1e200 are finite but their covariance is not: refused, never a ParticleRun
    # with an infinite Σ̂ (it was returned, with a RuntimeWarning only)
    x0 = np.random.default_rng(1).standard_normal((20, 2))
    with pytest.raises(SolverError, match=r"empirical covariance .* overflows float64 at t = 0"):
        simulate(Params(A=-np.eye(2)), 1e200 * x0, 0.1, n_steps=1)
    with pytest.raises(SolverError, match=r"empirical covariance .* at t = 0\.1"):
        simulate(Params(A=1e6 * np.eye(2)), 1e150 * x0, 0.1, n_steps=1, method="euler")
    run = simulate(Params(A=-np.eye(2)), 1e150 * x0, 0.1, n_steps=1)  # Σ̂ ~ 1e300: kept
    assert np.all(np.isfinite(run.cov)) and run.cov[0, 0, 0] > 1e299
    # Σ̂ = 1.44e308 is representable although Σ (x − m̂)² overflows on the way: formed on the
    # centred cloud scaled by a power of two
    x = np.zeros((3, 1))
    x[:2, 0] = [1.2e154, -1.2e154]
    _, S = empirical_moments(x)
    assert S[0, 0] == pytest.approx(1.2e154 ** 2, rel=1e-15)  # (2 · 1.44e308) / (N − 1 = 2)
    small = np.random.default_rng(2).standard_normal((30, 3))  # moderate clouds: unscaled
    c = small - small.mean(axis=0)
    assert np.array_equal(empirical_moments(small)[1], c.T @ c / 29)


def test_metrics_per_step_are_the_gaussianity_statistics(rng):
    x0 = rng.standard_normal((300, 2))
    ff = FeedForward(W=-np.eye(2), U=np.eye(2))
    run = simulate(Params(A=0.1 * np.eye(2)), x0, 0.5, n_steps=2, feedforward=ff,
                   keep_particles=True, metrics=True, metrics_seed=4)
    for k in range(3):
        want = statistics(run.particles[k], seed=4)
        assert run.metrics["energy"][k] == want.energy
        assert run.metrics["kurtosis"][k] == want.kurtosis
    assert run.metrics["energy"][-1] > run.metrics["energy"][0]  # the ReLU skews the cloud


def test_torch_backend_matches_numpy(rng):
    pytest.importorskip("torch")
    x0 = rng.standard_normal((500, 3))
    p = Params(A=0.1 * rng.standard_normal((3, 3)), heads=[(np.eye(3), rng.standard_normal(
        (3, 3))), (-0.5 * np.eye(3), np.eye(3))])
    ff = FeedForward(W=rng.standard_normal((3, 4)), U=rng.standard_normal((4, 3)))
    a = simulate(p, x0, 0.4, n_steps=2, feedforward=ff, keep_particles=True)
    b = simulate(p, x0, 0.4, n_steps=2, feedforward=ff, keep_particles=True, backend="torch",
                 block=128)
    assert b.backend.startswith("torch:")
    np.testing.assert_allclose(b.particles, a.particles, rtol=1e-12, atol=1e-12)


def two_head_layer(rng, d):
    """Logits ⟨B_h x, y⟩ of size ≲ 3 for standard Gaussian tokens (the documented float32
    case)."""
    return Params(A=0.1 * rng.standard_normal((d, d)), b=rng.standard_normal(d),
                  heads=[(rng.standard_normal((d, d)), rng.standard_normal((d, d)) / d),
                         (np.eye(d), -0.5 * np.eye(d) / d)])


def test_torch_scaled_dot_product_attention_layout_matches_the_dense_softmax(rng):
    # the 4-D (1, heads, n, d) path that float32 and CUDA use, here in float64 on the CPU:
    # several query blocks, heads folded after the softmax
    torch = pytest.importorskip("torch")
    from riccati_tf.empirical.particles import _TorchOps

    x = rng.standard_normal((500, 3))
    heads = [(rng.standard_normal((3, 3)), s * rng.standard_normal((3, 3))) for s in (0.5, 5.0)]
    got = _TorchOps("cpu", "float64").sdpa_attention(torch.tensor(x), heads, 128)
    want = sum(dense_attention(x, x, B, V) for V, B in heads)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)


def test_float32_attention_is_accurate_to_the_documented_tolerance(rng):
    pytest.importorskip("torch")
    x = rng.standard_normal((3000, 8))
    p = two_head_layer(rng, 8)
    exact = velocity(p, x)
    v32 = velocity(p, x, backend="torch", dtype="float32", block=1000)
    err = np.linalg.norm(v32 - exact) / np.linalg.norm(exact)
    assert 1e-9 < err <= FLOAT32_VELOCITY_RTOL  # float32 ran (err > 0) within the bound
    run = simulate(p, x[:400], 0.2, n_steps=2, backend="torch", dtype="float32",
                   keep_particles=True)
    ref = simulate(p, x[:400], 0.2, n_steps=2, keep_particles=True)
    assert run.backend == "torch:cpu:float32"
    np.testing.assert_allclose(run.particles, ref.particles, rtol=0, atol=1e-5)


@pytest.mark.parametrize("backend, dtype, message", [
    ("numpy", "float32", "needs backend='torch'"),
    ("torch", "float16", "dtype must be one of"),
    ("torch", np.float32, "dtype must be one of"),
    ("numpy", ["float64"], "dtype must be one of"),
])
def test_bad_dtypes_are_refused(backend, dtype, message):
    x = np.random.default_rng(0).standard_normal((10, 2))
    with pytest.raises(InvalidInputError, match=message):
        simulate(Params(A=np.eye(2)), x, 1.0, n_steps=1, backend=backend, dtype=dtype)
    with pytest.raises(InvalidInputError, match=message):
        velocity(Params(A=np.eye(2)), x, backend=backend, dtype=dtype)


# --- the Gaussian limit: O(N^{-1/2}) agreement with the moment equations (SPEC §7) -----------

# ‖Σ^{1/2} B Σ^{1/2}‖ stays ≲ 0.6 on the horizons below: the log-weights ⟨Bx, y⟩ of the softmax
# have variance xᵀBᵀΣBx = O(1) for typical tokens, so the finite-N softmax estimates the tilted
# mean m + ΣBx with an effective sample size ∝ N. (With B three times larger, the norm grows
# from 1 to 2.2 over t ∈ [0, 0.3] and a 7% covariance bias persists at N = 20 000.)
LAYER = Params(A=np.array([[0.2, 0.3], [-0.1, 0.1]]),
               B=np.array([[0.8, 0.3], [0.0, 0.6]]) / 3,
               V=3 * np.array([[0.7, 0.2], [-0.1, 0.5]]))
START = Gaussian(np.array([0.3, -0.2]), np.array([[1.0, 0.3], [0.3, 0.6]]))


def covariance_rate_error(n, seed):
    """‖Ṡ_N − F(S_N)‖_F / ‖F(S_N)‖_F at t = 0: the empirical covariance's time derivative
    under the particle field against the moment equations at the empirical moments."""
    x = START.sample(n, np.random.default_rng(seed))
    m, S = empirical_moments(x)
    v = velocity(LAYER, x)
    rate = (x - m).T @ (v - v.mean(axis=0)) / (n - 1)
    _, dS = moment_arrays(LAYER, m, S)
    return np.linalg.norm(rate + rate.T - dS) / np.linalg.norm(dS)


def test_covariance_rate_error_decays_like_inverse_square_root_of_n():
    # calibrate the constant at N = 400 (root-mean-square over 30 clouds), then check the bound
    # 4 · rms(400) · sqrt(400 / N) at N = 5000 and N = 20 000: an error that does not decay
    # like N^{-1/2} breaks it at the larger N
    rms = np.sqrt(np.mean([covariance_rate_error(400, s) ** 2 for s in range(30)]))
    for n in (5000, 20_000):
        assert covariance_rate_error(n, 7) <= 4 * rms * np.sqrt(400 / n), n


def wishart_bound(cov, n):
    """4 × the root-mean-square of ‖S_N − Σ‖_F / ‖Σ‖_F for N Gaussian points:
    E‖S_N − Σ‖_F² = ((tr Σ)² + ‖Σ‖_F²) / (N − 1)."""
    return 4 * np.sqrt((np.trace(cov) ** 2 + np.sum(cov**2)) / (n - 1)) / np.linalg.norm(cov)


#: N = 20 000 for one step: 16 s of CPU, in make test-long with the three-step run below
@pytest.mark.parametrize("n, n_steps", [(5000, 2), pytest.param(20_000, 1, marks=pytest.mark.long)])
def test_particles_follow_the_gaussian_flow_at_short_times(n, n_steps):
    h = 0.05
    x0 = START.sample(n, np.random.default_rng(11))
    run = simulate(LAYER, x0, n_steps * h, n_steps=n_steps)
    gauss = flow(LAYER, START, n_steps * h, t_eval=run.t)
    for cov_n, cov in zip(run.cov, gauss.cov, strict=True):
        err = np.linalg.norm(cov_n - cov) / np.linalg.norm(cov)
        assert err <= wishart_bound(cov, n)
    mean_err = np.linalg.norm(run.mean[-1] - gauss.mean[-1])
    assert mean_err <= 4 * np.sqrt(np.trace(gauss.cov[-1]) / n)


@pytest.mark.long  # N = 20 000 over three steps: a minute of CPU; one step of it runs above
def test_particles_follow_the_gaussian_flow_for_three_steps_at_n_20000():
    n, h = 20_000, 0.1
    x0 = START.sample(n, np.random.default_rng(12))
    run = simulate(LAYER, x0, 3 * h, n_steps=3)
    gauss = flow(LAYER, START, 3 * h, t_eval=run.t)
    for cov_n, cov in zip(run.cov, gauss.cov, strict=True):
        assert np.linalg.norm(cov_n - cov) / np.linalg.norm(cov) <= wishart_bound(cov, n)


def test_attention_memory_is_linear_in_n(rng):
    import tracemalloc

    n, d = 8000, 2  # the dense softmax would hold n² = 6.4e7 floats (512 MB)
    x = rng.standard_normal((n, d))
    tracemalloc.start()
    attention_field(x, x, np.eye(d), np.eye(d))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 8e6  # measured 2.4 MB: one 256 × 1024 block of logits plus O(n d) arrays


def test_counts_and_seeds_are_bounded_before_allocation():
    from riccati_tf.empirical.particles import MAX_KEPT, MAX_STEPS
    from riccati_tf.state.validation import MAX_SEED, as_count, as_seed

    x = np.random.default_rng(0).standard_normal((10, 2))
    p = Params(A=np.eye(2))
    with pytest.raises(InvalidInputError, match=r"particles\.MAX_STEPS"):
        simulate(p, x, 1.0, n_steps=MAX_STEPS + 1)
    with pytest.raises(InvalidInputError, match=r"particles\.MAX_STEPS"):
        simulate(p, x, 1.0, n_steps=10 ** 15)  # refused before np.arange allocates it
    with pytest.raises(InvalidInputError, match=r"particles\.MAX_KEPT"):
        cloud = np.zeros((100, 2))
        simulate(p, cloud, 1.0, n_steps=MAX_KEPT // cloud.size, keep_particles=True)
    with pytest.raises(InvalidInputError, match="metrics_seed must be ≥ 0"):
        simulate(p, x, 1.0, n_steps=1, metrics=True, metrics_seed=-1)
    assert as_seed("seed", MAX_SEED) == MAX_SEED
    for bad in (-1, MAX_SEED + 1, 1.0, True, "3", None):
        with pytest.raises(InvalidInputError, match="seed"):
            as_seed("seed", bad)
    with pytest.raises(InvalidInputError, match=r"n must be ≤ 5 \(X.LIMIT\), got ≈1e400"):
        as_count("n", 10 ** 400, maximum=5, limit="X.LIMIT")


@pytest.mark.parametrize("x0, message", [
    ([[1.0, "a"], [2.0, 3.0]], "string"),
    ([[1.0], [2.0, 3.0]], "rectangular"),
    (np.ones((3, 0)), "N ≥ 2"),
    (np.ones((1, 2)), "N ≥ 2"),
    ([[np.inf, 0.0], [0.0, 0.0]], "NaN or Inf"),
])
def test_clouds_are_validated(x0, message):
    with pytest.raises(InvalidInputError, match=message):
        simulate(Params(A=np.eye(2)), x0, 1.0, n_steps=1)


def test_a_bad_torch_device_is_an_input_error():
    pytest.importorskip("torch")
    with pytest.raises(InvalidInputError, match="device"):
        simulate(Params(A=np.eye(2)), np.ones((3, 2)), 1.0, n_steps=1, backend="torch",
                 device="no-such-device")


def test_an_unavailable_torch_device_is_an_input_error():
    # a device torch knows but this machine lacks: refused by name before any work (it was an
    # AssertionError from torch's lazy CUDA initialisation)
    torch = pytest.importorskip("torch")
    missing = [dev for dev, ok in (("cuda", torch.cuda.is_available()),
                                   ("mps", torch.backends.mps.is_available())) if not ok]
    if not missing:
        pytest.skip("every probed device is present")
    with pytest.raises(InvalidInputError, match=f"device '{missing[0]}.*not available"):
        simulate(Params(A=np.eye(2)), np.ones((3, 2)), 1.0, n_steps=1, backend="torch",
                 device=missing[0])
