"""Figures of trajectories, built without pyplot (`io.figures.new_figure`).

Every plotting function takes an optional `ax` to draw into and returns the `Figure`; no backend
is selected, no rcParams change and nothing is registered with pyplot's figure manager.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import numpy.typing as npt

from ..flows.integrate import Trajectory, flow
from ..io.figures import Figure, new_figure
from ..state.params import Gaussian, Params
from ..state.validation import psd_rank

if TYPE_CHECKING:
    from ..empirical.particles import ParticleRun
    from ..stability.equilibria import Equilibrium

__all__ = ["plot_covariance", "plot_flow"]

#: points of the geometric refinement t = T*(1 − 2^−k), k = 1, …, BLOWUP_REFINEMENT, towards T*
BLOWUP_REFINEMENT = 30
#: share of [0, T*] shown past the blow-up time T*
BLOWUP_MARGIN = 0.05
EPS = np.finfo(float).eps


def _axes(ax: Any) -> Any:
    """ax, or the single Axes of a new one-panel figure when ax is None."""
    return new_figure()[1] if ax is None else ax


def number(x: float) -> str:
    """A time or an eigenvalue as shown in figures: four significant digits."""
    return f"{x:.4g}"


def spectrum(cov: np.ndarray, rank: int | None = None) -> tuple[np.ndarray, int]:
    """(λ, r): the r largest eigenvalues of each Σ(t) in cov (k, d, d), in decreasing order, each
    floored at eps · λ_max(Σ(t)), so that rounding noise of an exactly zero eigenvalue is not drawn
    across hundreds of decades of a log axis.

    rank: r when known; default the numerical rank (d · eps · λ_max) of the first Σ, which every
    later Σ(t) = Φ Σ0 Φᵀ shares (rank invariance, SPEC §3); rounding noise of an integration does
    not raise it.
    """
    r = psd_rank(cov[0]) if rank is None else rank
    eig = np.linalg.eigvalsh(cov)[:, ::-1][:, :r]
    floor = EPS * np.maximum(eig[:, :1], 0.0)
    return np.maximum(eig, floor), r


def _mark_blowup(ax: Any, blowup_time: float | None, t: np.ndarray) -> None:
    """The blow-up time as a dashed vertical line; the x-axis spans the times t drawn and ends at
    least a margin past T*, so that the line lies inside the axes."""
    if blowup_time is None:
        return
    ax.axvline(blowup_time, color="crimson", ls="--", lw=1.2, label=f"T* = {number(blowup_time)}")
    t0 = float(np.min(t))
    ax.set_xlim(t0, max(blowup_time + BLOWUP_MARGIN * (blowup_time - t0), float(np.max(t))))


def plot_covariance(traj: Trajectory, *, title: str = "", ax: Any = None, rank: int | None = None,
                    equilibrium: Equilibrium | npt.ArrayLike | None = None) -> Figure:
    """Eigenvalues λ1 ≥ … ≥ λr of Σ(t) on a log scale, with the blow-up time T* marked.

    Σ(t) solves Σ̇ = AΣ + ΣAᵀ + VΣBΣ + ΣBᵀΣVᵀ (SPEC §2); its rank r is invariant (SPEC §3), so
    only the r largest eigenvalues are drawn, each floored at eps·λ_max(Σ(t)) (`spectrum`) so
    that rounding noise of an exactly zero eigenvalue is not drawn across hundreds of decades.
    A blow-up time T* is a dashed vertical line, and the x-axis ends a margin past it.

    Parameters
    ----------
    traj : Trajectory
        The trajectory (of `riccati_tf.flow`, `riccati_tf.layers` or a steering plan).
    title : str, default ""
        The axes' title.
    ax : matplotlib.axes.Axes, optional
        Draw into this Axes (default: a new one-panel figure).
    rank : int, optional
        The rank r of Σ when known (default: the numerical rank of Σ(t[0])).
    equilibrium : Equilibrium or (d, d) array_like, optional
        An equilibrium (or the covariance Σ* itself) the flow converges to; its nonzero
        eigenvalues are drawn as dotted horizontal lines.

    Returns
    -------
    Figure
        The figure of the axes drawn into.

    Raises
    ------
    numpy.linalg.LinAlgError
        When the eigenvalues of a non-finite Σ(t) cannot be computed.

    See Also
    --------
    plot_flow : integrates the flow and draws it, resolved up to T*.
    riccati_tf.flow : the trajectory.
    riccati_tf.equilibria : the equilibria Σ*.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §3 "Rank invariance" and §5 "Time-invariant parameters:
       equilibria, stability, blow-up".

    Examples
    --------
    >>> from riccati_tf import certify, flow
    >>> from riccati_tf.app.examples import regime_examples
    >>> from riccati_tf.app.plotting import plot_covariance
    >>> params, g0, horizon = regime_examples()["converges"]
    >>> cert = certify(params, g0.cov, g0.mean)
    >>> fig = plot_covariance(flow(params, g0, horizon), equilibrium=cert.equilibrium)
    >>> [line.get_label() for line in fig.axes[0].get_lines()[:3]]
    ['λ1(Σ), final 0.8969', 'λ2(Σ), final 0.4796', 'λ(Σ*) = 0.8969, 0.4796']
    """
    ax = _axes(ax)
    lam, r = spectrum(traj.cov, rank)
    for i in range(r):
        final = "" if traj.blowup_time is not None else f", final {number(lam[-1, i])}"
        ax.semilogy(traj.t, lam[:, i], lw=1.6, label=f"λ{i + 1}(Σ){final}")
    if r == 0:
        ax.text(0.5, 0.5, "Σ(t) = 0", transform=ax.transAxes, ha="center", va="center")
    if equilibrium is not None:
        # an Equilibrium (its cov), or the covariance matrix itself
        _mark_equilibrium(ax, getattr(equilibrium, "cov", cast(Any, equilibrium)))
    _mark_blowup(ax, traj.blowup_time, traj.t)
    ax.set_yscale("log")
    ax.set_xlabel("t (depth)")
    ax.set_ylabel("eigenvalues of Σ(t)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    handles = ax.get_legend_handles_labels()[0]  # none for Σ = 0: the legend then is its title
    ax.legend(handles=handles, fontsize=8, title=f"rank {r} of d = {traj.cov.shape[1]}",
              title_fontsize=8)
    return ax.figure


def _mark_equilibrium(ax: Any, cov: npt.ArrayLike) -> None:
    """The nonzero eigenvalues of Σ* as dotted horizontal lines, one legend entry."""
    lam, r = spectrum(np.asarray(cov, dtype=float)[None])
    for i in range(r):
        ax.axhline(lam[0, i], color="0.35", ls=":", lw=1.2,
                   label="λ(Σ*) = " + ", ".join(number(v) for v in lam[0]) if i == 0 else None)


def blowup_grid(blowup_time: float, n_points: int) -> np.ndarray:
    """Output times on [0, T*): n_points equally spaced ones and T*(1 − 2^−k), k = 1, …,
    BLOWUP_REFINEMENT, which resolve Σ(t) ~ (T* − t)⁻¹ as it grows by a factor 2 per point."""
    k = np.arange(1, BLOWUP_REFINEMENT + 1)
    uniform = np.linspace(0.0, blowup_time, n_points, endpoint=False)
    return np.unique(np.concatenate([uniform, blowup_time * (1.0 - 2.0 ** -k)]))


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
    plot_covariance : draws a trajectory already computed.
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
    ax = _axes(ax)
    ax.plot(run.t, np.trace(run.cov, axis1=1, axis2=2), "o", ms=3,
            label=f"particles (N = {run.n_tokens})")
    ax.plot(traj.t, np.trace(traj.cov, axis1=1, axis2=2), "-", label="Gaussian flow")
    if traj.blowup_time is not None:
        ax.set_yscale("log")
    _mark_blowup(ax, traj.blowup_time, np.concatenate([run.t, traj.t]))
    ax.set_xlabel("t (depth)")
    ax.set_ylabel("tr Σ(t)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return ax.figure
