"""Figures of trajectories, built without pyplot (`io.figures.new_figure`): a flow resolved up to
its blow-up, a particle run against its Gaussian flow; a trajectory itself is drawn by
`riccati_tf.io.plots.plot_covariance` (also importable from here).

Every plotting function takes an optional `ax` to draw into and returns the `Figure`; no backend
is selected, no rcParams change and nothing is registered with pyplot's figure manager.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..flows.integrate import Trajectory, flow
from ..io.figures import Figure, new_figure
from ..io.plots import axes_of, blowup_grid, mark_blowup, plot_covariance
from ..io.plots import spectrum as spectrum  # the command line's steering figure uses it
from ..state.params import Gaussian, Params

if TYPE_CHECKING:
    from ..empirical.particles import ParticleRun
    from ..stability.equilibria import Equilibrium

# plot_covariance (the drawing of a trajectory, imported above for the existing callers) is
# documented as riccati_tf.io.plots.plot_covariance
__all__ = ["plot_flow"]


def plot_flow(params: Params | Callable[[float], Params], gaussian: Gaussian, t_final: float, *,
              title: str = "", ax: Any = None,
              equilibrium: Equilibrium | npt.ArrayLike | None = None, n_points: int = 101,
              **flow_options: Any) -> Figure:
    """`plot_covariance` of `riccati_tf.flow(params, gaussian, t_final, **flow_options)`.

    The flow of Σ̇ = AΣ + ΣAᵀ + VΣBΣ + ΣBᵀΣVᵀ from the Gaussian, drawn as the eigenvalues of
    Σ(t). When it blows up at T* it is recomputed on `blowup_grid(T*, n_points)` (equally
    spaced times and T*(1 − 2^−k), k = 1, …, BLOWUP_REFINEMENT), so the curve is resolved up to
    T*, where Σ(t) ~ (T* − t)⁻¹, instead of stopping at the last point of an equally spaced grid
    before it.

    Parameters
    ----------
    params : Params or callable t -> Params
        The layer (constant, or depth-dependent).
    gaussian : Gaussian
        The initial Gaussian N(m0, Σ0).
    t_final : float
        The horizon, t_final > 0.
    title : str, default ""
        The axes' title.
    ax : matplotlib.axes.Axes, optional
        Draw into this Axes (default: a new one-panel figure).
    equilibrium : Equilibrium or (d, d) array_like, optional
        Σ*, drawn as dotted lines (`plot_covariance`).
    n_points : int, default 101
        Equally spaced points on [0, T*) after a blow-up.
    **flow_options
        Passed to `riccati_tf.flow` (method, t_eval, rtol, atol, ...).

    Returns
    -------
    Figure
        The figure of the axes drawn into.

    Raises
    ------
    InvalidInputError
        From `riccati_tf.flow`: invalid parameters, Gaussian, horizon or options.
    SolverError
        From `riccati_tf.flow`: the integration failed.

    See Also
    --------
    riccati_tf.io.plots.plot_covariance : draws a trajectory already computed.
    riccati_tf.Certificate.plot : the flow of a certificate, over a window chosen from it.
    riccati_tf.flow : the trajectory.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations" and §5
       "Time-invariant parameters: equilibria, stability, blow-up".

    Examples
    --------
    >>> from riccati_tf.app.examples import regime_examples
    >>> from riccati_tf.app.plotting import plot_flow
    >>> params, g0, horizon = regime_examples()["blows_up"]
    >>> ax = plot_flow(params, g0, horizon, title="blows_up").axes[0]
    >>> [line.get_label() for line in ax.get_lines()]
    ['λ1(Σ)', 'λ2(Σ)', 'T* = 1.102']
    >>> print(round(ax.get_xlim()[1], 4))          # a margin of 5 % past T*
    1.1566
    """
    traj = flow(params, gaussian, t_final, **flow_options)
    if traj.blowup_time is not None:
        options = {**flow_options, "t_eval": blowup_grid(traj.blowup_time, n_points)}
        traj = flow(params, gaussian, t_final, **options)
    return plot_covariance(traj, title=title, ax=ax, equilibrium=equilibrium)


def plot_particles(run: ParticleRun, traj: Trajectory, *, ax: Any = None) -> Figure:
    """tr Σ of a particle run (points) against the Gaussian flow (line), T* marked if any.
    Returns the Figure."""
    ax = axes_of(ax)
    ax.plot(run.t, np.trace(run.cov, axis1=1, axis2=2), "o", ms=3,
            label=f"particles (N = {run.n_tokens})")
    ax.plot(traj.t, np.trace(traj.cov, axis1=1, axis2=2), "-", label="Gaussian flow")
    if traj.blowup_time is not None:
        ax.set_yscale("log")
    mark_blowup(ax, traj.blowup_time, np.concatenate([run.t, traj.t]))
    ax.set_xlabel("t (depth)")
    ax.set_ylabel("tr Σ(t)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return ax.figure


def plot_convergence(t: npt.ArrayLike, cov_errors: npt.ArrayLike, mean_errors: npt.ArrayLike, *,
                     labels: list[str] | None = None, title: str = "") -> Figure:
    """Two panels against depth t, one line per trajectory, on log scales of the errors: the
    relative covariance error ‖Σ(t) − Σ*‖_F/‖Σ*‖_F (left) and the mean error ‖m(t) − m*‖
    (right); `cov_errors` and `mean_errors` are (n, k) for n trajectories at the k times `t`
    (an exact zero is not drawn). Returns the Figure."""
    t = np.asarray(t, dtype=float)
    panels = np.asarray(cov_errors, dtype=float), np.asarray(mean_errors, dtype=float)
    fig, axes = new_figure(1, 2, figsize=(10.0, 3.6))
    names = labels or [f"start {i + 1}" for i in range(len(panels[0]))]
    for ax, errors, what in zip(axes, panels, ("‖Σ(t) − Σ*‖ / ‖Σ*‖", "‖m(t) − m*‖"),
                                strict=True):
        for label, err in zip(names, errors, strict=True):
            ax.semilogy(t, np.where(err > 0, err, np.nan), lw=1.5, label=label)
        ax.set_xlabel("t (depth)")
        ax.set_ylabel(what)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
