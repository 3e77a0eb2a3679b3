"""Figures of trajectories (matplotlib, Agg backend, imported lazily)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np


def pyplot():
    """matplotlib.pyplot on the non-interactive Agg backend (imported on first use)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_covariance(traj, *, title: str = "", ax=None):
    """Eigenvalues of Σ(t) on a log scale, with the blow-up time T* marked when there is one."""
    plt = pyplot()
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(5.0, 3.4))
    eig = np.linalg.eigvalsh(traj.cov)
    for i in range(eig.shape[1]):
        ax.semilogy(traj.t, np.clip(eig[:, i], 1e-300, None), lw=1.6, label=f"λ{i + 1}(Σ)")
    if traj.blowup_time is not None:
        ax.axvline(traj.blowup_time, color="crimson", ls="--", lw=1.2,
                   label=f"T* = {traj.blowup_time:.6g}")
    ax.set_xlabel("t (depth)")
    ax.set_ylabel("eigenvalues of Σ(t)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return fig if fig is not None else ax.figure


def plot_particles(run, traj, *, ax=None):
    """tr Σ of a particle run (points) against the Gaussian flow (line), T* marked if any."""
    plt = pyplot()
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(5.0, 3.4))
    ax.plot(run.t, np.trace(run.cov, axis1=1, axis2=2), "o", ms=3,
            label=f"particles (N = {run.n_tokens})")
    ax.plot(traj.t, np.trace(traj.cov, axis1=1, axis2=2), "-", label="Gaussian flow")
    if traj.blowup_time is not None:
        ax.axvline(traj.blowup_time, color="crimson", ls="--", label=f"T* = {traj.blowup_time:.4g}")
        ax.set_yscale("log")
    ax.set_xlabel("t (depth)")
    ax.set_ylabel("tr Σ(t)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return fig if fig is not None else ax.figure


def save_figure(fig, path) -> Path:
    """Write the figure as a PNG file (parent folders created) and close it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(figure_png(fig))
    return path


def figure_png(fig) -> bytes:
    """The figure as PNG bytes (and closes it)."""
    plt = pyplot()
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()
