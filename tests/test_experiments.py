"""The prescribed-attention and ReLU-drift experiments, and their figures."""

import json

import numpy as np
import pytest

from riccati_tf import Gaussian, Params, flow
from riccati_tf.app import experiments as ex
from riccati_tf.empirical.particles import FeedForward, empirical_moments
from riccati_tf.errors import InvalidInputError
from riccati_tf.state.moments import moment_arrays


@pytest.fixture(scope="module")
def prescribed():
    return ex.prescribed_attention(n_tokens=1000, n_steps=40)


def wishart_bound(cov, n):
    """4 × rms of ‖S_N − Σ‖_F / ‖Σ‖_F over N-point Gaussian clouds (E‖S − Σ‖² =
    ((tr Σ)² + ‖Σ‖_F²)/(N − 1))."""
    return 4 * np.sqrt((np.trace(cov) ** 2 + np.sum(cov**2)) / (n - 1)) / np.linalg.norm(cov)


def test_opposite_definiteness_stays_bounded_and_on_the_gaussian_flow(prescribed):
    case = prescribed.opposite
    assert case.blowup_time is None
    assert case.gaussian_cov.shape == case.particle_cov.shape  # no blow-up on the horizon
    # the cloud's own sampling error propagated by a contracting flow: within the N^{-1/2} bound
    bounds = [wishart_bound(c, 1000) for c in case.gaussian_cov]
    assert np.all(case.rel_error <= bounds)
    assert case.growth.max() <= case.gaussian_growth.max() * (1 + max(bounds))
    # bounded: the Gaussian settles at Σ* (A = aI, scalar V: Σ* = P*⁻¹, 2a P* = G)
    p = case.params
    sigma_star = np.linalg.inv(p.G / (2 * 0.3))
    np.testing.assert_allclose(case.gaussian_cov[-1], sigma_star, rtol=1e-2)


def test_equal_definiteness_blows_up_at_the_predicted_time(prescribed):
    case = prescribed.equal
    fitted = Gaussian(*empirical_moments(ex.PRESCRIBED_START.sample(
        1000, np.random.default_rng(0))))
    rk = flow(case.params, fitted, 10.0, method="rk")  # independent of the closed form
    assert case.blowup_time == pytest.approx(rk.blowup_time, rel=1e-6)
    # the particles reach 2, 4 and 8 times their initial spread when the Gaussian does (1–2%
    # measured at N = 1000), and keep growing past T* (no finite-N blow-up: finite cloud)
    np.testing.assert_allclose(prescribed.crossing_particles[:3],
                               prescribed.crossing_gaussian[:3], rtol=0.04)
    assert np.all(prescribed.crossing_gaussian[:3] < case.blowup_time)
    assert prescribed.growth_at_blowup > 8
    assert case.growth[-1] > prescribed.growth_at_blowup
    assert case.gaussian_cov.shape[0] < case.particle_cov.shape[0]


def test_first_crossing_interpolates():
    t = np.array([0.0, 1.0, 2.0])
    assert ex.first_crossing(t, np.array([1.0, 2.0, 4.0]), 3.0) == pytest.approx(1.5)
    assert np.isnan(ex.first_crossing(t, np.array([1.0, 2.0, 4.0]), 5.0))


def test_relu_closure_matches_monte_carlo(rng):
    params, _ = ex.relu_params()
    ff = FeedForward(W=rng.standard_normal((2, 3)), U=rng.standard_normal((3, 2)),
                     c=rng.standard_normal(3))
    g = Gaussian(np.array([0.3, -0.4]), np.array([[0.8, 0.2], [0.2, 0.5]]))
    dm, dS = ex.relu_closure_rhs(params, ff, g.mean, g.cov)
    x = g.sample(400_000, rng)
    v = np.maximum(x @ ff.U.T + ff.c, 0) @ ff.W.T  # the ReLU term alone, sampled
    dm0, dS0 = moment_arrays(params, g.mean, g.cov)
    xc = x - x.mean(axis=0)
    cross = xc.T @ (v - v.mean(axis=0)) / x.shape[0]
    se_mean = v.std(axis=0) / np.sqrt(x.shape[0])
    np.testing.assert_array_less(np.abs(dm - dm0 - v.mean(axis=0)), 5 * se_mean)
    se_cross = np.sqrt(np.mean((xc[:, :, None] * v[:, None, :]) ** 2, axis=0) / x.shape[0])
    np.testing.assert_array_less(np.abs(dS - dS0 - cross - cross.T), 5 * (se_cross + se_cross.T))


@pytest.fixture(scope="module")
def drift():
    return ex.relu_drift(n_tokens=500, n_steps=15, n_null=100)


def test_relu_drifts_away_from_gaussianity_while_the_affine_layer_does_not(drift):
    assert np.all(drift.affine["energy"] <= drift.null_q99["energy"])
    assert drift.relu["energy"][-1] > 10 * drift.null_q99["energy"]
    assert 0 < drift.drift_time < drift.t[-1]
    assert np.all(np.diff(drift.relu["fourth"][5:]) > 0)


def test_the_gaussian_closure_is_only_a_short_time_approximation(drift):
    # at the first step the closure is within the sampling error; by the end it is off by much
    # more (the cloud is no longer Gaussian)
    assert drift.closure_error[1] < 0.05
    assert drift.closure_error[-1] > 5 * drift.closure_error[1]


def test_run_functions_write_figures_and_numbers(tmp_path):
    numbers = ex.run_prescribed(tmp_path, n_tokens=300, n_steps=20)
    stored = json.loads((tmp_path / "prescribed.json").read_text())
    assert stored["blowup_time"] == numbers["blowup_time"] > 0
    assert (tmp_path / "prescribed.png").stat().st_size > 10_000
    numbers = ex.run_relu_drift(tmp_path, n_tokens=200, n_null=50)
    assert len(json.loads((tmp_path / "relu_drift.json").read_text())["t"]) == 31
    assert (tmp_path / "relu_drift.png").stat().st_size > 10_000


def test_numeric_relu_closure_matches_the_symbolic_derivation():
    """The closed-form closure used by the experiments and the SymPy-derived, compiled closure
    (rectified-Gaussian moments, riccati_tf.symbolic) are two independent computations."""
    from riccati_tf.symbolic import compile_moment_rhs, transformer_system

    rng = np.random.default_rng(5)
    d, k = 3, 4
    params = Params(A=rng.standard_normal((d, d)), B=rng.standard_normal((d, d)) / 3,
                    V=rng.standard_normal((d, d)) / 3, b=rng.standard_normal(d))
    ff = FeedForward(W=rng.standard_normal((d, k)), U=rng.standard_normal((k, d)),
                     c=rng.standard_normal(k))
    X = rng.standard_normal((d, d))
    g = Gaussian(rng.standard_normal(d), X @ X.T / d + 0.1 * np.eye(d))
    dm, dS = ex.relu_closure_rhs(params, ff, g.mean, g.cov)
    dm_sym, dS_sym = compile_moment_rhs(transformer_system(d, ffn="relu", width=k))(
        params, g, ffn=ff)
    np.testing.assert_allclose(dm_sym, dm, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dS_sym, dS, rtol=1e-10, atol=1e-12)


# --- argument bounds of the experiments and of their building blocks -------------------------


@pytest.mark.parametrize("kwargs, message", [
    ({"n_tokens": ex.MAX_TOKENS + 1}, "experiments.MAX_TOKENS"),
    ({"n_tokens": 10 ** 12}, "experiments.MAX_TOKENS"),
    ({"n_tokens": 1}, "n_tokens must be ≥ 2"),
    ({"seed": -1}, "seed must be ≥ 0"),
    ({"seed": 2 ** 64}, "validation.MAX_SEED"),
    ({"seed": 0.5}, "seed must be an integer"),
    ({"n_steps": 10 ** 9}, "experiments.MAX_STEPS"),
    ({"t_opposite": float("inf")}, "t_opposite must be finite"),
    ({"overshoot": -1.0}, "overshoot must be positive"),
])
def test_prescribed_refuses_bad_arguments_before_any_work(kwargs, message):
    with pytest.raises(InvalidInputError, match=message):
        ex.prescribed_attention(**kwargs)


@pytest.mark.parametrize("kwargs, message", [
    ({"n_tokens": 3}, "n_tokens must be ≥ 4"),
    ({"n_null": 10 ** 9}, "gaussianity.MAX_NULL"),
    ({"n_null": 0}, "n_null must be ≥ 1"),
    ({"t_final": -1.0}, "t_final must be positive"),
    ({"seed": -5}, "seed must be ≥ 0"),
])
def test_relu_drift_refuses_bad_arguments_before_any_work(kwargs, message):
    with pytest.raises(InvalidInputError, match=message):
        ex.relu_drift(**kwargs)


@pytest.mark.parametrize("run", [
    lambda out: ex.run_prescribed(out, n_tokens=300),
    lambda out: ex.run_relu_drift(out, n_tokens=300),
    lambda out: ex.run_probe(None, out, n_tokens=300),
])
@pytest.mark.parametrize("where", ["file", "below a file"])
def test_run_functions_refuse_an_output_path_before_computing(tmp_path, run, where):
    taken = tmp_path / "taken"
    taken.write_text("the user's file")
    out = taken if where == "file" else taken / "sub"
    with pytest.raises(InvalidInputError, match="not a folder"):
        run(out)
    assert taken.read_text() == "the user's file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]


def test_check_output_folder_accepts_new_nested_folders(tmp_path):
    assert ex.check_output_folder(tmp_path / "a" / "b") == tmp_path / "a" / "b"
    assert not (tmp_path / "a").exists()  # checked, not created
    with pytest.raises(InvalidInputError, match="folder path"):
        ex.check_output_folder("")


def test_gaussianity_bounds():
    from riccati_tf.empirical import gaussianity as gs

    x = np.random.default_rng(0).standard_normal((30, 2))
    with pytest.raises(InvalidInputError, match=r"gaussianity\.MAX_NULL"):
        gs.null_distribution(30, 2, n_null=gs.MAX_NULL + 1)
    with pytest.raises(InvalidInputError, match=r"gaussianity\.MAX_NULL_SAMPLE"):
        gs.null_distribution(10 ** 9, 2, n_null=1)
    with pytest.raises(InvalidInputError, match=r"gaussianity\.MAX_DIRECTIONS"):
        gs.statistics(x, n_directions=10 ** 9)
    with pytest.raises(InvalidInputError, match=r"gaussianity\.MAX_GRAM_BLOCK"):
        gs.statistics(x, block=10 ** 9)
    with pytest.raises(InvalidInputError, match="seed must be ≥ 0"):
        gs.statistics(x, seed=-1)
    for alpha in (0.0, 1.0, "0.05", float("nan"), True):
        with pytest.raises(InvalidInputError, match="alpha"):
            gs.normality_test(x, alpha=alpha)


def test_model_probe_bounds_without_building_a_model():
    from riccati_tf.empirical import probe as probing

    with pytest.raises(InvalidInputError, match=r"probe\.MAX_TOKENS"):
        probing.check_probe_arguments(n_tokens=probing.MAX_TOKENS + 1)
    with pytest.raises(InvalidInputError, match=r"gaussianity\.MAX_NULL"):
        probing.check_probe_arguments(n_tokens=100, n_null=10 ** 9)
    with pytest.raises(InvalidInputError, match="seed must be ≥ 0"):
        probing.check_probe_arguments(n_tokens=100, seed=-1)
    with pytest.raises(InvalidInputError, match="alpha"):
        probing.check_probe_arguments(n_tokens=100, alpha=2.0)
    with pytest.raises(InvalidInputError, match=r"config\.hidden_size"):
        probing.probe(object(), n_tokens=100)


@pytest.mark.parametrize("kwargs, message", [
    ({"hidden_size": 10 ** 6}, "probe.MAX_HIDDEN"),
    ({"n_layers": 10 ** 6}, "probe.MAX_MODEL_LAYERS"),
    ({"n_heads": 10 ** 6}, "probe.MAX_MODEL_HEADS"),
    ({"hidden_size": 30, "n_heads": 4}, "multiple of n_heads"),
    ({"seed": -1}, "seed must be ≥ 0"),
    ({"initializer_range": float("nan")}, "initializer_range"),
    ({"family": "gpt"}, "family"),
])
def test_tiny_model_bounds(kwargs, message):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from riccati_tf.empirical.probe import tiny_model

    with pytest.raises(InvalidInputError, match=message):
        tiny_model(**kwargs)


def test_load_model_refuses_a_garbled_folder(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from riccati_tf.empirical.encoders.loading import load_model

    (tmp_path / "config.json").write_text("[1, 2, 3]")
    with pytest.raises(InvalidInputError, match="could not load"):
        load_model(tmp_path)
    (tmp_path / "config.json").write_text('{"model_type": "no-such-model"}')
    with pytest.raises(InvalidInputError, match="could not load"):
        load_model(str(tmp_path))
    with pytest.raises(InvalidInputError, match="str or a Path"):
        load_model(3)
