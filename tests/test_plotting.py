"""Figures: no global matplotlib state, rank-r spectra on log axes, blow-ups resolved up to T*."""

import warnings
from types import SimpleNamespace

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest

import riccati_tf as rt
from riccati_tf.app import experiments, plotting
from riccati_tf.app.cli import cmd_flow
from riccati_tf.app.examples import regime_examples
from riccati_tf.empirical.particles import simulate
from riccati_tf.io import figures
from riccati_tf.sweep.plot import phase_diagram

EPS = np.finfo(float).eps
REGIMES = regime_examples()


def _particles_figure():
    params, g0, _ = REGIMES["blows_up"]
    run = simulate(params, g0.sample(40, np.random.default_rng(0)), 1.0, n_steps=5)
    return plotting.plot_particles(run, rt.flow(params, g0, 1.0, t_eval=run.t))


def _probe_figure():
    models = pytest.importorskip("riccati_tf.empirical.probe")
    pytest.importorskip("transformers")
    model = models.tiny_model("deit", hidden_size=8, n_layers=1, n_heads=1)
    return experiments.plot_probe(models.probe(model, n_tokens=30, n_null=10))


#: every function of the package that draws, with small inputs
DRAWINGS = {
    "plot_covariance": lambda: plotting.plot_covariance(rt.flow(*REGIMES["converges"])),
    "plot_flow": lambda: plotting.plot_flow(*REGIMES["blows_up"]),
    "plot_particles": _particles_figure,
    "new_figure": lambda: figures.new_figure(2, 2)[0],
    "phase_diagram": lambda: phase_diagram(
        {"a": np.linspace(0.0, 1.0, 4), "regime": np.array(["converges", "converges",
                                                             "blows_up", "blows_up"], object),
         "blowup_time": np.array([np.nan, np.nan, 2.0, 1.0])}, "a"),
    "plot_prescribed": lambda: experiments.plot_prescribed(
        experiments.prescribed_attention(n_tokens=50, n_steps=5)),
    "plot_relu_drift": lambda: experiments.plot_relu_drift(
        experiments.relu_drift(n_tokens=50, n_null=10)),
    "plot_probe": _probe_figure,
}


@pytest.fixture
def user_backend():
    """A backend of the user's choosing (not Agg), restored afterwards."""
    before = matplotlib.get_backend()
    matplotlib.use("svg")
    yield matplotlib.get_backend()
    matplotlib.use(before)


@pytest.mark.parametrize("name", DRAWINGS)
def test_drawing_leaves_matplotlib_global_state_alone(name, user_backend):
    params = dict(matplotlib.rcParams)
    figures = plt.get_fignums()
    out = DRAWINGS[name]()
    assert matplotlib.get_backend() == user_backend
    assert dict(matplotlib.rcParams) == params
    assert plt.get_fignums() == figures
    if isinstance(out, matplotlib.figure.Figure):
        assert out.canvas.manager is None  # not a pyplot figure


def test_figures_show_in_jupyter_as_png():
    fig = plotting.plot_covariance(rt.flow(*REGIMES["collapses"]))
    assert fig._repr_png_().startswith(b"\x89PNG\r\n\x1a\n")


def _curves(fig):
    """The eigenvalue curves of a plot_covariance figure."""
    return [line for line in fig.axes[0].lines if line.get_label().startswith("λ")
            and line.get_xdata().size > 2]


@pytest.mark.parametrize("method", ["exact", "rk"])
def test_rank_deficient_covariance_draws_only_its_rank(method):
    u = np.array([[1.0], [-0.5], [0.25]])
    params = rt.Params(A=np.diag([0.3, -0.2, 0.1]), B=np.eye(3), V=-np.eye(3))
    traj = rt.flow(params, rt.Gaussian(np.zeros(3), u @ u.T), 3.0, method=method)
    fig = plotting.plot_covariance(traj)
    curves = _curves(fig)
    assert len(curves) == 1
    assert "rank 1" in fig.axes[0].get_legend().get_title().get_text()
    lam_max = np.linalg.eigvalsh(traj.cov)[:, -1]
    for line in curves:
        assert np.all(line.get_ydata() >= EPS * lam_max)


def test_spectrum_floors_at_d_eps_times_the_largest_eigenvalue():
    cov = np.array([np.diag([2.0, 1e-300, -1e-17]), np.diag([4.0, 1e-20, 0.0])])
    lam, r = plotting.spectrum(cov, rank=2)
    assert r == 2
    np.testing.assert_array_equal(lam, [[2.0, 6.0 * EPS], [4.0, 12.0 * EPS]])


def test_spectrum_floors_an_integrated_flow_at_its_tolerance():
    """An eigenvalue below rtol · λ_max of an integrated Σ(t) is the integration's error, not
    dynamics: drawn at that floor, it cannot zig-zag over decades."""
    rng = np.random.default_rng(3)
    noise = 10.0 ** rng.uniform(-15, -11, 6)  # an eigenvalue that is zero up to the error
    cov = np.array([np.diag([1.0, 0.5, x]) for x in noise])
    lam, r = plotting.spectrum(cov, rank=3, resolution=1e-10)
    assert r == 3 and np.all(lam[:, 2] == 1e-10) and np.all(lam[:, :2] == [1.0, 0.5])
    params, g0, horizon = regime_examples()["collapses"]
    traj = rt.flow(params, g0, horizon, method="rk", rtol=1e-9)
    fig = plotting.plot_covariance(traj)
    lam_max = np.linalg.eigvalsh(traj.cov)[:, -1]
    for line in fig.axes[0].get_lines()[:2]:
        assert np.all(line.get_ydata() >= 1e-9 * lam_max)


@pytest.mark.parametrize("low, high, expect_plain", [(1.7, 8.5, True), (0.02, 0.9, True),
                                                     (1e-3, 8.5e4, False)])
def test_log_axis_labels_are_plain_numbers_within_two_decades(low, high, expect_plain):
    from riccati_tf.io.figures import new_figure
    from riccati_tf.io.plots import plain_log_labels

    fig, ax = new_figure()
    ax.semilogy([0, 1], [low, high])
    plain_log_labels(ax.yaxis)
    fig.draw_without_rendering()
    labels = [t.get_text() for t in (*ax.get_yticklabels(), *ax.get_yticklabels(minor=True))
              if t.get_text()]
    powers = [t for t in labels if "times" in t or "10^" in t]
    assert labels and (not powers if expect_plain else len(powers) == len(labels))


def test_ellipses_are_the_projected_one_sigma_contours():
    """Each drawn ellipse x satisfies (x − Pm)ᵀ (PΣPᵀ)⁻¹ (x − Pm) = 1 for the plane P of the
    two leading eigenvectors of Σ(start) + Σ(end)."""
    from riccati_tf.io.plots import plot_ellipses

    rng = np.random.default_rng(5)
    t = np.linspace(0.0, 1.0, 11)
    X = rng.standard_normal((11, 4, 4))
    cov = X @ X.transpose(0, 2, 1) + 0.1 * np.eye(4)
    mean = rng.standard_normal((11, 4))
    ax = plot_ellipses(t, mean, cov, n_between=3)
    P = np.linalg.eigh(cov[0] + cov[-1])[1][:, ::-1][:, :2]
    lines = ax.get_lines()
    assert len(lines) == 5 and [ln.get_linestyle() for ln in lines[-2:]] == ["-", "--"]
    drawn_at = [int(np.searchsorted(t, s)) for s in np.linspace(0, 1, 5)[1:-1]] + [0, 10]
    for line, i in zip(lines, drawn_at, strict=True):
        x = np.vstack([line.get_xdata(), line.get_ydata()]) - (P.T @ mean[i])[:, None]
        S = P.T @ cov[i] @ P
        q = np.einsum("ik,ij,jk->k", x, np.linalg.inv(S), x)
        np.testing.assert_allclose(q, 1.0, rtol=1e-10)


def test_full_rank_curves_have_labels_and_final_values():
    fig = plotting.plot_covariance(rt.flow(*REGIMES["collapses"]), title="collapses")
    ax = fig.axes[0]
    assert ax.get_ylabel() and ax.get_xlabel() and ax.get_title() == "collapses"
    labels = [line.get_label() for line in _curves(fig)]
    assert len(labels) == 2 and all(", final " in label for label in labels)


def test_blow_up_is_resolved_up_to_t_star():
    params, g0, horizon = REGIMES["blows_up"]
    fig = plotting.plot_flow(params, g0, horizon)
    t_star = rt.flow(params, g0, horizon).blowup_time
    ax = fig.axes[0]
    t = _curves(fig)[0].get_xdata()
    assert np.sum(t < t_star) >= 50
    assert t_star - t.max() < 1e-6 * t_star
    (mark,) = [line for line in ax.lines if line.get_label().startswith("T*")]
    left, right = ax.get_xlim()
    assert left < mark.get_xdata()[0] < right
    assert ax.get_ylabel()


def test_flow_plot_from_the_command_line_is_refined():
    """Σ̇ = 2Σ² from Σ0 = I: Σ(t) = I / (1 − 2t), T* = 1/2 (11 of 101 default points before)."""
    spec = {"params": {"A": [[0.0, 0.0], [0.0, 0.0]], "B": [[1.0, 0.0], [0.0, 1.0]],
                       "V": [[1.0, 0.0], [0.0, 1.0]]},
            "initial": {"mean": [0.0, 0.0], "cov": [[1.0, 0.0], [0.0, 1.0]]}, "t_final": 5.0}
    traj, _text, fig = cmd_flow(SimpleNamespace(plot="flow.png"), spec)
    assert traj.blowup_time == pytest.approx(0.5, rel=1e-9)
    t = _curves(fig)[0].get_xdata()
    assert np.sum(t < 0.5) >= 50
    assert fig.axes[0].get_xlim()[1] > 0.5


def test_converging_plot_marks_the_equilibrium():
    params, g0, horizon = REGIMES["converges"]
    eq = rt.certify(params, g0.cov, g0.mean).equilibrium
    fig = plotting.plot_flow(params, g0, horizon, equilibrium=eq)
    marks = [line.get_ydata()[0] for line in fig.axes[0].lines
             if line.get_linestyle() == ":"]
    np.testing.assert_allclose(sorted(marks), np.linalg.eigvalsh(eq.cov), rtol=1e-12)
    assert any(text.get_text().startswith("λ(Σ*)")
               for text in fig.axes[0].get_legend().get_texts())


def test_axes_argument_draws_into_a_given_figure():
    fig, axes = figures.new_figure(1, 2)
    params, g0, horizon = REGIMES["converges"]
    assert plotting.plot_flow(params, g0, horizon, ax=axes[1]) is fig
    assert not axes[0].lines and axes[1].lines


def test_particles_past_t_star_stay_in_view():
    params, g0, _ = REGIMES["blows_up"]
    run = simulate(params, g0.sample(40, np.random.default_rng(1)), 1.5, n_steps=15)
    traj = rt.flow(params, g0, 1.5, t_eval=run.t)
    ax = plotting.plot_particles(run, traj).axes[0]
    left, right = ax.get_xlim()
    assert traj.blowup_time < 1.5
    assert left <= run.t.min() and run.t.max() <= right
    assert left < traj.blowup_time < right


def test_zero_covariance_is_said_not_drawn():
    params = rt.Params(A=-np.eye(2), B=np.eye(2), V=-np.eye(2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. matplotlib's "no artists with labels"
        ax = plotting.plot_flow(params, rt.Gaussian(np.ones(2), np.zeros((2, 2))), 1.0).axes[0]
    assert not _curves(ax.figure)
    assert ax.get_legend().get_title().get_text().startswith("rank 0")
    assert any(text.get_text() == "Σ(t) = 0" for text in ax.texts)


@pytest.mark.parametrize("bad", ["nan", "shape"])
def test_ellipses_refuse_non_finite_or_mismatched_input(bad):
    from riccati_tf.errors import InvalidInputError
    from riccati_tf.io.plots import plot_ellipses

    t, mean, cov = np.array([0.0, 1.0]), np.zeros((2, 2)), np.array([np.eye(2), np.eye(2)])
    if bad == "nan":
        cov[1, 0, 0] = np.nan
    else:
        mean = np.zeros((3, 2))
    with pytest.raises(InvalidInputError, match="plot_ellipses"):
        plot_ellipses(t, mean, cov)

