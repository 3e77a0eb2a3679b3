"""Figures of trajectories, built without pyplot.

Every figure is a `Figure` (a matplotlib Figure that Jupyter shows as a PNG through `_repr_png_`)
created directly, not through `matplotlib.pyplot`: no backend is selected, no rcParams change and
nothing is registered with pyplot's figure manager, so a caller's own pyplot session is left as it
was. Every plotting function takes an optional `ax` to draw into and returns the Figure.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure as _MatplotlibFigure

from ..errors import InvalidInputError
from ..flows.integrate import flow
from ..io.files import check_creatable
from ..state.validation import psd_rank

#: size in inches of a one-panel figure
PANEL_SIZE = (5.0, 3.4)
#: points of the geometric refinement t = T*(1 − 2^−k), k = 1, …, BLOWUP_REFINEMENT, towards T*
BLOWUP_REFINEMENT = 30
#: share of [0, T*] shown past the blow-up time T*
BLOWUP_MARGIN = 0.05
EPS = np.finfo(float).eps


class Figure(_MatplotlibFigure):
    """A matplotlib Figure that Jupyter displays as a PNG image (no pyplot backend involved)."""

    def _repr_png_(self) -> bytes:
        return figure_png(self)


def new_figure(nrows: int = 1, ncols: int = 1, *, figsize=PANEL_SIZE, **subplots_kw):
    """(fig, axes): a `Figure` of the given size in inches and its nrows × ncols axes (a single
    Axes for 1 × 1, else an array, as `Figure.subplots` returns them)."""
    fig = Figure(figsize=figsize)
    return fig, fig.subplots(nrows, ncols, **subplots_kw)


def _axes(ax):
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


def _mark_blowup(ax, blowup_time: float | None, t: np.ndarray) -> None:
    """The blow-up time as a dashed vertical line; the x-axis spans the times t drawn and ends at
    least a margin past T*, so that the line lies inside the axes."""
    if blowup_time is None:
        return
    ax.axvline(blowup_time, color="crimson", ls="--", lw=1.2, label=f"T* = {number(blowup_time)}")
    t0 = float(np.min(t))
    ax.set_xlim(t0, max(blowup_time + BLOWUP_MARGIN * (blowup_time - t0), float(np.max(t))))


def plot_covariance(traj, *, title: str = "", ax=None, rank: int | None = None,
                    equilibrium=None):
    """Eigenvalues λ1 ≥ … ≥ λr of Σ(t) on a log scale (`spectrum`), with the blow-up time T*
    marked when there is one.

    traj: a `Trajectory`. rank: the rank r of Σ when known (default: numerical). equilibrium: an
    `Equilibrium` or a covariance matrix Σ* the flow converges to; its nonzero eigenvalues are
    drawn as dotted horizontal lines. ax: draw into this Axes (default: a new figure).
    Returns the Figure.
    """
    ax = _axes(ax)
    lam, r = spectrum(traj.cov, rank)
    for i in range(r):
        final = "" if traj.blowup_time is not None else f", final {number(lam[-1, i])}"
        ax.semilogy(traj.t, lam[:, i], lw=1.6, label=f"λ{i + 1}(Σ){final}")
    if r == 0:
        ax.text(0.5, 0.5, "Σ(t) = 0", transform=ax.transAxes, ha="center", va="center")
    if equilibrium is not None:
        _mark_equilibrium(ax, getattr(equilibrium, "cov", equilibrium))
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


def _mark_equilibrium(ax, cov: np.ndarray) -> None:
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


def plot_flow(params, gaussian, t_final: float, *, title: str = "", ax=None,
              equilibrium=None, n_points: int = 101, **flow_options):
    """`plot_covariance` of `riccati_tf.flow(params, gaussian, t_final, **flow_options)`; when the
    flow blows up at T* it is recomputed on `blowup_grid(T*, n_points)`, so the curve is resolved
    up to T* instead of stopping at the last point of an equally spaced grid before it.
    Returns the Figure.
    """
    traj = flow(params, gaussian, t_final, **flow_options)
    if traj.blowup_time is not None:
        options = {**flow_options, "t_eval": blowup_grid(traj.blowup_time, n_points)}
        traj = flow(params, gaussian, t_final, **options)
    return plot_covariance(traj, title=title, ax=ax, equilibrium=equilibrium)


def plot_particles(run, traj, *, ax=None):
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


#: the first bytes of every PNG file
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _head(path: Path) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(len(PNG_SIGNATURE))
    except OSError:
        return b""


def check_output_file(path, what: str = "figure") -> Path:
    """`path` as a PNG file that can be written: not a folder, not an existing file other than
    a PNG image (a table, a text: never overwritten), and its nearest existing ancestor a folder
    this process may write into (missing folders in between are created on writing). Raises
    InvalidInputError naming the path and the reason; checked before anything is computed, so
    that a long run does not end on a path that cannot take its output."""
    path = Path(path)
    try:
        if str(path) in ("", ".") or path.is_dir():
            raise InvalidInputError(f"{what} path {str(path)!r} is a folder; give a file name "
                                    f"(such as {path / 'figure.png'})")
        if path.is_file() and _head(path) != PNG_SIGNATURE:
            raise InvalidInputError(f"{what} path {path} exists and is not a PNG image; "
                                    f"refusing to overwrite it")
        if path.exists() and not os.access(path, os.W_OK):
            raise InvalidInputError(f"{what} path {path} cannot be written (permission denied)")
    except OSError as exc:
        raise InvalidInputError(f"{what} path {path}: {exc.strerror or exc}") from None
    check_creatable(path, f"{what} path {path}")
    return path


def save_figure(fig, path) -> Path:
    """Write the figure as a PNG file (parent folders created). A path that cannot be written
    (a folder, below a file, no permission, a full disk, an existing file that is not a PNG:
    `check_output_file`) raises InvalidInputError naming it."""
    path = check_output_file(path)
    data = figure_png(fig)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    except OSError as exc:
        raise InvalidInputError(f"cannot write the figure to {path} "
                                f"({exc.strerror or type(exc).__name__})") from None
    return path


def figure_png(fig) -> bytes:
    """The figure as PNG bytes (110 dpi, tight bounding box)."""
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return buf.getvalue()
