"""The drawing of a covariance trajectory: the eigenvalues of Σ(t) on a log scale.

The figure every result draws of itself (`riccati_tf.Trajectory.plot`,
`riccati_tf.Certificate.plot`, `riccati_tf.ControlPlan.plot`) and `riccati_tf.app.plotting`
draws for the command line and the report. The functions take the trajectory's arrays (any
object with ``t``, ``cov`` and ``blowup_time``, such as a `riccati_tf.Trajectory`), never compute
one, and build their figures with `riccati_tf.io.figures.new_figure`: no pyplot, no backend
selected, no rcParams changed, nothing registered with pyplot's figure manager.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np
import numpy.typing as npt
from matplotlib.ticker import LogFormatter

from ..errors import InvalidInputError
from ..state.validation import as_array, psd_rank
from .figures import Figure, new_figure

if TYPE_CHECKING:
    from ..stability.equilibria import Equilibrium

__all__ = ["BLOWUP_MARGIN", "BLOWUP_REFINEMENT", "blowup_grid", "plot_covariance",
           "plot_ellipses"]

#: points of the geometric refinement t = T*(1 − 2^−k), k = 1, …, BLOWUP_REFINEMENT, towards T*
BLOWUP_REFINEMENT = 30
#: share of [0, T*] shown past the blow-up time T*
BLOWUP_MARGIN = 0.05
EPS = np.finfo(float).eps


class CovarianceTrajectory(Protocol):
    """What `plot_covariance` reads of a trajectory (a `riccati_tf.Trajectory` has it)."""

    @property
    def t(self) -> np.ndarray: ...

    @property
    def cov(self) -> np.ndarray: ...

    @property
    def blowup_time(self) -> float | None: ...


def axes_of(ax: Any) -> Any:
    """ax, or the single Axes of a new one-panel figure when ax is None."""
    return new_figure()[1] if ax is None else ax


def number(x: float) -> str:
    """A time or an eigenvalue as shown in figures: four significant digits."""
    return f"{x:.4g}"


def spectrum(cov: np.ndarray, rank: int | None = None,
             resolution: float | None = None) -> tuple[np.ndarray, int]:
    """(λ, r): the r largest eigenvalues of each Σ(t) in cov (k, d, d), in decreasing order, each
    floored at ε · λ_max(Σ(t)), ε = max(d · eps, resolution), so that neither rounding noise of
    an exactly zero eigenvalue nor the error of an integration (resolution: its rtol) is drawn
    as dynamics across decades of a log axis.

    rank: r when known; default the numerical rank (d · eps · λ_max) of the first Σ, which every
    later Σ(t) = Φ Σ0 Φᵀ shares (rank invariance, SPEC §3); rounding noise of an integration does
    not raise it.
    """
    r = psd_rank(cov[0]) if rank is None else rank
    eig = np.linalg.eigvalsh(cov)[:, ::-1][:, :r]
    floor = max(cov.shape[-1] * EPS, resolution or 0.0) * np.maximum(eig[:, :1], 0.0)
    return np.maximum(eig, floor), r


def plain_log_labels(axis: Any) -> None:
    """Tick labels of a log axis as plain numbers (2, 3, 0.05) instead of 2 × 10⁰ where its view
    spans less than two decades (minor ticks labelled then, thinned by matplotlib's
    `LogFormatter`); a wider axis keeps its powers of ten. Call it once the data are plotted
    (the view interval autoscales to them when read)."""
    low, high = sorted(axis.get_view_interval())
    if axis.get_scale() == "log" and low > 0 and high / low < 100:
        axis.set_major_formatter(_PlainLogFormatter(labelOnlyBase=False))
        axis.set_minor_formatter(_PlainLogFormatter(labelOnlyBase=False,
                                                    minor_thresholds=(2, 0.5)))


class _PlainLogFormatter(LogFormatter):
    """The ticks matplotlib's LogFormatter labels, written with three significant digits (0.6,
    2, 40) instead of 6e-01."""

    def __call__(self, x: float, pos: int | None = None) -> str:
        return f"{x:.3g}" if super().__call__(x, pos) else ""


def mark_blowup(ax: Any, blowup_time: float | None, t: np.ndarray) -> None:
    """The blow-up time as a dashed vertical line; the x-axis spans the times t drawn and ends at
    least a margin past T*, so that the line lies inside the axes."""
    if blowup_time is None:
        return
    ax.axvline(blowup_time, color="crimson", ls="--", lw=1.2, label=f"T* = {number(blowup_time)}")
    t0 = float(np.min(t))
    ax.set_xlim(t0, max(blowup_time + BLOWUP_MARGIN * (blowup_time - t0), float(np.max(t))))


def plot_covariance(traj: CovarianceTrajectory, *, title: str = "", ax: Any = None,
                    rank: int | None = None,
                    equilibrium: Equilibrium | npt.ArrayLike | None = None,
                    target: npt.ArrayLike | None = None) -> Figure:
    """Eigenvalues λ1 ≥ … ≥ λr of Σ(t) on a log scale, with the blow-up time T* marked.

    Σ(t) solves Σ̇ = AΣ + ΣAᵀ + VΣBΣ + ΣBᵀΣVᵀ (SPEC §2); its rank r is invariant (SPEC §3), so
    only the r largest eigenvalues are drawn, each floored at eps·λ_max(Σ(t)) (`spectrum`) so
    that rounding noise of an exactly zero eigenvalue is not drawn across hundreds of decades.
    A blow-up time T* is a dashed vertical line, and the x-axis ends a margin past it.

    Parameters
    ----------
    traj : Trajectory
        The trajectory (of `riccati_tf.flow`, `riccati_tf.layers` or a steering plan), or any
        object with its arrays ``t`` (k,), ``cov`` (k, d, d) and its ``blowup_time``.
    title : str, default ""
        The axes' title.
    ax : matplotlib.axes.Axes, optional
        Draw into this Axes (default: a new one-panel figure).
    rank : int, optional
        The rank r of Σ when known (default: the numerical rank of Σ(t[0])).
    equilibrium : Equilibrium or (d, d) array_like, optional
        An equilibrium (or the covariance Σ* itself) the flow converges to; its nonzero
        eigenvalues are drawn as dotted horizontal lines.
    target : (d, d) array_like, optional
        A covariance Σ1 the trajectory is steered to at its last time (`riccati_tf.steer`); its
        r largest eigenvalues are drawn as crosses (×) at that time, one per curve.

    Returns
    -------
    Figure
        The figure holding the Axes drawn into (a new one when `ax` is None).

    Raises
    ------
    numpy.linalg.LinAlgError
        When the eigenvalues of a non-finite Σ(t) cannot be computed.

    See Also
    --------
    riccati_tf.Trajectory.plot : this figure of a trajectory.
    riccati_tf.app.plotting.plot_flow : integrates the flow and draws it, resolved up to T*.
    riccati_tf.equilibria : the equilibria Σ*.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §3 "Rank invariance" and §5 "Time-invariant parameters:
       equilibria, stability, blow-up".

    Examples
    --------
    >>> from riccati_tf import certify, flow
    >>> from riccati_tf.app.examples import regime_examples
    >>> from riccati_tf.io.plots import plot_covariance
    >>> params, g0, horizon = regime_examples()["converges"]
    >>> cert = certify(params, g0.cov, g0.mean)
    >>> fig = plot_covariance(flow(params, g0, horizon), equilibrium=cert.equilibrium)
    >>> [line.get_label() for line in fig.axes[0].get_lines()[:3]]
    ['λ1(Σ), final 0.8969', 'λ2(Σ), final 0.4796', 'λ(Σ*) = 0.8969, 0.4796']
    """
    ax = axes_of(ax)
    lam, r = spectrum(traj.cov, rank, getattr(traj, "rtol", None))
    lines = []
    for i in range(r):
        final = "" if traj.blowup_time is not None else f", final {number(lam[-1, i])}"
        lines += ax.semilogy(traj.t, lam[:, i], lw=1.6, label=f"λ{i + 1}(Σ){final}")
    if r == 0:
        ax.text(0.5, 0.5, "Σ(t) = 0", transform=ax.transAxes, ha="center", va="center")
    if equilibrium is not None:
        # an Equilibrium (its cov), or the covariance matrix itself
        _mark_equilibrium(ax, getattr(equilibrium, "cov", cast(Any, equilibrium)))
    if target is not None:
        want = spectrum(np.asarray(target, dtype=float)[None], r)[0][0]
        for line, value in zip(lines, want, strict=True):
            ax.plot([traj.t[-1]], [value], "x", ms=9, mew=2, color=line.get_color())
        ax.plot([], [], "kx", ms=8, mew=2,
                label="target λ(Σ1) = " + ", ".join(number(v) for v in want))
    mark_blowup(ax, traj.blowup_time, traj.t)
    ax.set_yscale("log")
    ax.set_xlabel("t (depth)")
    ax.set_ylabel("eigenvalues of Σ(t)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    plain_log_labels(ax.yaxis)
    handles = ax.get_legend_handles_labels()[0]  # none for Σ = 0: the legend then is its title
    ax.legend(handles=handles, fontsize=8, title=f"rank {r} of d = {traj.cov.shape[1]}",
              title_fontsize=8)
    return ax.figure


def plot_ellipses(t: np.ndarray, mean: np.ndarray, cov: np.ndarray, *, n_between: int = 4,
                  ax: Any = None, title: str = "") -> Any:
    """The Gaussians N(m(t), Σ(t)) of a path as their one-standard-deviation ellipses
    {m + Σ^{1/2}u : ‖u‖ = 1}, projected on the plane P of the two leading eigenvectors of
    Σ(t0) + Σ(t_end): the start (solid), the end (dashed) and n_between states between them
    (thin grey), each ellipse that of P m and P Σ Pᵀ.

    Parameters
    ----------
    t : (k,) ndarray of float
        The times of the path.
    mean : (k, d) ndarray of float
        m(t).
    cov : (k, d, d) ndarray of float
        Σ(t), positive semidefinite.
    n_between : int, default 4
        States drawn between start and end, equally spaced in time.
    ax : matplotlib.axes.Axes, optional
        Draw into this Axes (default: a new one-panel figure).
    title : str, default ""
        The title of the Axes.

    Returns
    -------
    matplotlib.axes.Axes
        The Axes holding the ellipses, equal aspect, with a legend.

    Raises
    ------
    InvalidInputError
        When the shapes do not fit together ((k,), (k, d), (k, d, d), k ≥ 1) or an entry is
        not finite (the plane and the square roots would be undefined).

    See Also
    --------
    plot_covariance : the eigenvalues of Σ(t) along the same path.
    riccati_tf.steer : plans whose paths the report draws this way.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §3 "Rank invariance" (a rank-r Σ draws a degenerate ellipse)
       and §4 (the steering paths drawn).

    Examples
    --------
    >>> from riccati_tf.io.plots import plot_ellipses
    >>> import numpy as np
    >>> t = np.array([0.0, 0.5, 1.0])
    >>> cov = np.array([np.diag([4.0, 1.0]), np.diag([2.0, 1.0]), np.eye(2)])
    >>> ax = plot_ellipses(t, np.zeros((3, 2)), cov, n_between=1)
    >>> [line.get_label() for line in ax.get_lines()]
    ['1 between', 'start, t = 0', 'end, t = 1']
    """
    t, mean, cov = (as_array(f"plot_ellipses: {name}", x, ndim=n) for name, x, n in
                    (("t", t, 1), ("mean", mean, 2), ("cov", cov, 3)))
    k, d = mean.shape
    if k < 1 or d < 1 or t.shape != (k,) or cov.shape != (k, d, d):
        raise InvalidInputError(f"plot_ellipses: t, mean, cov must have shapes (k,), (k, d), "
                                f"(k, d, d), got {t.shape}, {mean.shape}, {cov.shape}")
    ax = axes_of(ax)
    ends = cov[0] + cov[-1]
    basis = np.linalg.eigh((ends + ends.T) / 2)[1][:, ::-1][:, :min(2, cov.shape[-1])]
    circle = np.stack([np.cos(np.linspace(0, 2 * np.pi, 181)),
                       np.sin(np.linspace(0, 2 * np.pi, 181))])

    def ellipse(i: int) -> np.ndarray:
        lam, vec = np.linalg.eigh(basis.T @ cov[i] @ basis)
        root = vec @ np.diag(np.sqrt(np.maximum(lam, 0.0))) @ vec.T
        points = (basis.T @ mean[i])[:, None] + root @ circle[:root.shape[0]]
        return points if points.shape[0] == 2 else np.vstack([points, np.zeros_like(points)])

    middle = np.unique(np.searchsorted(t, np.linspace(t[0], t[-1], n_between + 2)[1:-1]))
    for j, i in enumerate(middle):
        ax.plot(*ellipse(int(i)), color="0.6", lw=0.8,
                label=f"{len(middle)} between" if j == 0 else None)
    ax.plot(*ellipse(0), color="C0", lw=2, label=f"start, t = {number(t[0])}")
    ax.plot(*ellipse(len(t) - 1), color="C3", lw=2, ls="--", label=f"end, t = {number(t[-1])}")
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("first principal axis of Σ(start) + Σ(end)")
    ax.set_ylabel("second principal axis")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return ax


def _mark_equilibrium(ax: Any, cov: npt.ArrayLike) -> None:
    """The nonzero eigenvalues of Σ* as dotted horizontal lines, one legend entry."""
    lam, r = spectrum(np.asarray(cov, dtype=float)[None])
    for i in range(r):
        ax.axhline(lam[0, i], color="0.35", ls=":", lw=1.2,
                   label="λ(Σ*) = " + ", ".join(number(v) for v in lam[0]) if i == 0 else None)


def blowup_grid(blowup_time: float, n_points: int) -> np.ndarray:
    """Output times on [0, T*) that resolve Σ(t) up to a blow-up at T*.

    n_points equally spaced times and T*(1 − 2^−k), k = 1, …, BLOWUP_REFINEMENT, which resolve
    Σ(t) ~ (T* − t)⁻¹ as it grows by a factor 2 per point, instead of stopping at the last point
    of an equally spaced grid before T*.

    Parameters
    ----------
    blowup_time : float
        T* > 0.
    n_points : int
        The equally spaced times on [0, T*), 0 included.

    Returns
    -------
    (k,) ndarray of float
        The times, increasing, all below T*.

    Raises
    ------
    ValueError
        When n_points is negative (`numpy.linspace`).

    See Also
    --------
    riccati_tf.flow : integrates on these times (``t_eval``).
    riccati_tf.Certificate.plot : draws a blow-up on them.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 (the blow-up at T*, where Σ(t) grows as (T* − t)⁻¹).

    Examples
    --------
    >>> from riccati_tf.io.plots import blowup_grid
    >>> t = blowup_grid(1.0, 4)
    >>> t[:6].tolist(), bool(t[-1] < 1.0), len(t)
    ([0.0, 0.25, 0.5, 0.75, 0.875, 0.9375], True, 32)
    """
    k = np.arange(1, BLOWUP_REFINEMENT + 1)
    uniform = np.linspace(0.0, blowup_time, n_points, endpoint=False)
    return np.unique(np.concatenate([uniform, blowup_time * (1.0 - 2.0 ** -k)]))
