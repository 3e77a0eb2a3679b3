"""Results draw themselves like pandas' plots: Trajectory, Certificate, ControlPlan and
SweepResult `.plot(ax=None)` return the Axes with the expected artists, draw into a given Axes
leaving matplotlib's global state alone, or into a new pyplot figure (so `plt.show()` and
`plt.savefig` work in a script); the command line's figures never touch pyplot; a
certificate's window is chosen from its dynamics."""

import json
import os
import struct
import subprocess
import sys
from dataclasses import replace

import matplotlib
import numpy as np
import pytest
from matplotlib.axes import Axes

import riccati_tf as rt
from riccati_tf.app.examples import regime_examples
from riccati_tf.io import figures
from riccati_tf.io.figures import Figure, figure_png, new_figure

REGIMES = regime_examples()
EPS = np.finfo(float).eps
ROT = np.array([[0.0, -1.0], [1.0, 0.0]])
G0 = rt.Gaussian(np.zeros(2), np.array([[1.0, 0.3], [0.3, 0.5]]))


def _certificate(name):
    params, g0, _ = REGIMES[name]
    return rt.certify(params, g0.cov, g0.mean)


def _plan():
    start = rt.Gaussian(np.zeros(2), np.array([[1.0, 0.3], [0.3, 0.5]]))
    return rt.steer(start, rt.Gaussian(np.array([1.0, 0.0]), np.diag([4.0, 0.25])), 1.0)


def _sweep(tmp_path):
    spec = {"family": {"grid": {"v": [-1.0, 1.0], "a": [-0.5, 0.5]}},
            "params": {"A": {"a": [[1, 0], [0, 1]]}, "B": [[1, 0], [0, 1]],
                       "V": {"v": [[1, 0], [0, 1]]}},
            "initial": {"cov": [[1, 0], [0, 1]]}}
    from riccati_tf.sweep import run_sweep

    return run_sweep(spec, tmp_path / "sweep")


def _curves(ax):
    """The eigenvalue curves λi(Σ(t)) of an axes."""
    return [line for line in ax.lines if line.get_label().startswith("λ")
            and np.size(line.get_xdata()) > 2]


def _levels(ax):
    """The y values of the dotted horizontal lines (an equilibrium's eigenvalues)."""
    return sorted(line.get_ydata()[0] for line in ax.lines if line.get_linestyle() == ":"
                  and np.ptp(line.get_ydata()) == 0)


#: every result that draws itself, with small inputs: name -> (make the result, plot it)
RESULTS = {
    "trajectory": lambda tmp: rt.flow(*REGIMES["converges"]),
    "certificate": lambda tmp: _certificate("blows_up"),
    "plan": lambda tmp: _plan(),
    "sweep": _sweep,
}


@pytest.fixture(autouse=True)
def _close_pyplot_figures():
    """Each test's pyplot figures are closed after it (`.plot()` without ax opens one)."""
    yield
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")


@pytest.mark.parametrize("name", RESULTS)
def test_plot_without_ax_draws_into_a_new_pyplot_figure(name, tmp_path):
    import matplotlib.pyplot as plt

    result = RESULTS[name](tmp_path)
    before = plt.get_fignums()
    got = result.plot()
    axes = list(got) if name == "sweep" else [got]  # the sweep: its two panels
    assert all(isinstance(ax, Axes) for ax in axes) and len(axes) == (2 if name == "sweep" else 1)
    fig = axes[0].figure
    assert plt.get_fignums() == [*before, fig.number] and plt.gcf() is fig
    assert all(ax.has_data() and ax.get_xlabel() and ax.get_ylabel() for ax in axes)


@pytest.mark.parametrize("name", RESULTS)
def test_plot_draws_into_the_given_axes_and_leaves_global_state_alone(name, tmp_path):
    result = RESULTS[name](tmp_path)
    pyplot = sys.modules.get("matplotlib.pyplot")  # imported by other tests, or not at all
    before = dict(matplotlib.rcParams), matplotlib.get_backend(), pyplot and pyplot.get_fignums()
    fig, axes = new_figure(1, 3)
    assert result.plot(axes[1]) is axes[1]
    assert not axes[0].has_data() and axes[1].has_data() and not axes[2].has_data()
    assert isinstance(fig, Figure) and fig.canvas.manager is None  # not a pyplot figure
    assert (dict(matplotlib.rcParams), matplotlib.get_backend(),
            pyplot and pyplot.get_fignums()) == before


#: a plain script, as a user writes it: pyplot with the Agg backend, no notebook
SCRIPT = """
import sys
import matplotlib.pyplot as plt
import numpy as np
import riccati_tf as rt
from matplotlib.axes import Axes

p = rt.Params(A=0.5 * np.eye(2), B=np.eye(2), V=-1.0 * np.eye(2))
g = rt.Gaussian(mean=[1.0, 0.0], cov=[[1.0, 0.3], [0.3, 0.5]])
plt.figure(figsize=(6.4, 4.0))
plt.savefig(sys.argv[2])                    # the same figure, empty: the baseline
plt.close("all")
tr = rt.flow(p, g, 10.0)
tr.plot()
plt.savefig(sys.argv[1])
ax = rt.certify(p, g).plot()
print(isinstance(ax, Axes), ax.figure is plt.gcf(), len(plt.get_fignums()))
"""


def test_plot_then_savefig_in_a_plain_script(tmp_path):
    png, empty = tmp_path / "tr.png", tmp_path / "empty.png"
    env = {**os.environ, "MPLBACKEND": "Agg"}
    run = subprocess.run([sys.executable, "-c", SCRIPT, str(png), str(empty)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["True", "True", "2"]
    data = png.read_bytes()
    assert data.startswith(figures.PNG_SIGNATURE)
    # the curves, labels and legend drawn: far more than the same figure left empty
    assert len(data) > 3 * len(empty.read_bytes())


def test_command_line_figures_do_not_use_pyplot(tmp_path):
    spec = tmp_path / "c.json"
    spec.write_text(json.dumps({"params": {"A": [[0.5, 0.0], [0.0, 0.5]],
                                           "B": [[1.0, 0.0], [0.0, 1.0]],
                                           "V": [[-1.0, 0.0], [0.0, -1.0]]},
                                "initial": {"mean": [1.0, 0.0],
                                            "cov": [[1.0, 0.3], [0.3, 0.5]]}}))
    code = ("import sys\nfrom riccati_tf.app.cli import main\n"
            f"code = main(['certify', {str(spec)!r}, '--plot', {str(tmp_path / 'c.png')!r}])\n"
            "plt = sys.modules.get('matplotlib.pyplot')\n"  # python-control imports it
            "print(code, plt.get_fignums() if plt else [])")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert run.stdout.split()[-2:] == ["0", "[]"], run.stderr  # no figure given to pyplot
    assert (tmp_path / "c.png").read_bytes().startswith(figures.PNG_SIGNATURE)


def test_trajectory_plot_draws_its_rank_and_the_equilibrium():
    u = np.array([[1.0], [-0.5], [0.25]])
    params = rt.Params(A=np.diag([0.3, -0.2, 0.1]), B=np.eye(3), V=-np.eye(3))
    ax = rt.flow(params, rt.Gaussian(np.zeros(3), u @ u.T), 3.0).plot(title="rank 1")
    assert len(_curves(ax)) == 1 and ax.get_title() == "rank 1"
    eq = _certificate("converges").equilibrium
    ax = rt.flow(*REGIMES["converges"]).plot(equilibrium=eq)
    assert len(_curves(ax)) == 2
    np.testing.assert_allclose(_levels(ax), np.linalg.eigvalsh(eq.cov), rtol=1e-12)


def test_blowing_up_certificate_is_drawn_up_to_its_t_star():
    cert = _certificate("blows_up")
    ax = cert.plot()
    (mark,) = [line for line in ax.lines if line.get_label().startswith("T*")]
    assert mark.get_xdata()[0] == pytest.approx(cert.blowup_time, rel=1e-9)
    t = _curves(ax)[0].get_xdata()
    assert len(_curves(ax)) == 2 and np.sum(t < cert.blowup_time) >= 100
    assert cert.blowup_time - t.max() < 1e-6 * cert.blowup_time
    left, right = ax.get_xlim()
    assert left == 0.0 and cert.blowup_time < right < 1.1 * cert.blowup_time
    assert "blows_up" in ax.get_title()


def test_a_title_names_each_word_once():
    """A numerical certificate whose theorem is "numerical" is titled "(numerical)", not
    "(numerical, numerical)"; an exact one keeps both words."""
    exact = _certificate("blows_up")
    assert exact.plot().get_title() == f"blows_up (exact, {exact.theorem})"
    numerical = replace(_certificate("converges"), exact=False, theorem="numerical")
    assert numerical.plot().get_title() == "converges (numerical)"


def _settling_time(cert, factor, t_max):
    """The first time at which ‖Σ(t) − Σ*‖_F has fallen by factor (on a fine grid)."""
    t = np.linspace(0.0, t_max, 20_001)
    traj = rt.flow(cert.params, rt.Gaussian(cert.mean0, cert.cov0), t_max, t_eval=t)
    gap = np.linalg.norm(traj.cov - cert.equilibrium.cov, axis=(1, 2))
    return t[np.argmax(gap <= gap[0] / factor)]


@pytest.mark.parametrize("case", ["rate", "long horizon, no rate", "algebraic collapse"])
def test_converging_window_shows_the_transient(case):
    """The time at which the distance to Σ* has fallen 100-fold lies beyond 10 % of the x-axis,
    and the window reaches past it: the approach is drawn, not squeezed into a sliver."""
    if case == "algebraic collapse":  # A skew, G ≻ 0: ‖Σ(t)‖ ~ 1/t, no rate ("psd_marginal")
        cert = rt.certify(rt.Params(A=ROT, B=np.eye(2), V=-np.eye(2)), G0)
        assert cert.theorem == "psd_marginal" and cert.rate is None
    else:
        cert = _certificate("converges")
        if case != "rate":
            cert = replace(cert, rate=None, horizon=400.0)
    ax = cert.plot()
    left, right = ax.get_xlim()
    t100 = _settling_time(cert, 100.0, right)
    assert left + 0.1 * (right - left) < t100 < right
    np.testing.assert_allclose(_levels(ax), np.linalg.eigvalsh(cert.equilibrium.cov)[
        np.linalg.eigvalsh(cert.equilibrium.cov) > 0], rtol=1e-12)


def test_converging_window_ends_once_settled():
    """With a rate, about ln(1e6)/rate; a 400-long horizon without one is cut as well."""
    cert = _certificate("converges")
    end = _curves(cert.plot())[0].get_xdata().max()
    assert end == pytest.approx(np.log(1e6) / cert.rate, rel=0.1)
    cut = _curves(replace(cert, rate=None, horizon=400.0).plot())[0].get_xdata().max()
    assert cut < 40.0


def test_bounded_window_spans_a_few_periods():
    cert = rt.certify(rt.Params(A=ROT), G0)
    assert cert.regime == "bounded"
    end = _curves(cert.plot())[0].get_xdata().max()
    assert end == pytest.approx(3 * 2 * np.pi)


def test_plan_plot_marks_the_target_at_t():
    plan = _plan()
    ax = plan.plot()
    assert len(_curves(ax)) == 2
    crosses = [line for line in ax.lines
               if line.get_marker() == "x" and np.size(line.get_xdata())]
    assert [c.get_xdata()[0] for c in crosses] == [plan.t_final] * 2
    np.testing.assert_allclose(sorted(c.get_ydata()[0] for c in crosses),
                               np.linalg.eigvalsh(plan.target.cov), rtol=1e-12)
    for curve, cross in zip(_curves(ax), crosses, strict=True):
        assert curve.get_color() == cross.get_color()
        assert curve.get_ydata()[-1] == pytest.approx(cross.get_ydata()[0], rel=1e-6)


def test_sweep_plot_is_the_phase_diagram(tmp_path):
    result = _sweep(tmp_path)
    axes = result.plot()
    assert [ax.get_title() for ax in axes] == ["regime over v × a", "blow-up time"]
    fig, ax = new_figure()
    assert result.plot(ax, x="a", y="v") is ax and ax.get_title() == "regime over a × v"
    assert len(fig.axes) == 1


def _png_size(png):
    """(width, height) in pixels from a PNG's IHDR chunk."""
    return struct.unpack(">II", png[16:24])


def test_one_panel_files_are_print_sized():
    """A one-panel figure is written at least 1200 px wide (6.4 × 4 in at 200 dpi); a notebook
    shows it at screen resolution."""
    fig, ax = new_figure()
    _certificate("converges").plot(ax)
    assert tuple(fig.get_size_inches()) == figures.PANEL_SIZE
    width, height = _png_size(figure_png(fig))
    assert width >= 1200 and 700 <= height < width
    assert _png_size(fig._repr_png_())[0] < 800
