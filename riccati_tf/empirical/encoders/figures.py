"""Figures of the encoder analyses, built without pyplot (`riccati_tf.app.plotting.new_figure`)."""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import MaxNLocator

from ...app.plotting import new_figure
from .atlas import Atlas
from .comparison import Comparison


def _integer_ticks(*axes) -> None:
    """Layers and heads are counted: integer ticks on the given axes (ax.xaxis, ax.yaxis)."""
    for axis in axes:
        axis.set_major_locator(MaxNLocator(integer=True))


def plot_atlas(result: Atlas):
    """Heat maps (layers × heads) of the signature balance (n+ − n−)/(n+ + n−) of sym(V_h) and of
    sym(B_h) and of ‖V_h − v_hI‖_F/‖V_h‖_F, and the blow-up times per layer (A = 0 and
    A = E[J_MLP]; none drawn where there is none). Returns the Figure (no pyplot)."""
    fig, axes = new_figure(1, 4, figsize=(16.0, 3.6))

    def balance(n):
        return (n[..., 0] - n[..., 2]) / np.maximum(n[..., 0] + n[..., 2], 1)

    maps = [(balance(result.v_inertia), "sym(V_h): (n+ − n−)/(n+ + n−)", "RdBu", -1, 1),
            (balance(result.b_inertia), "sym(B_h): (n+ − n−)/(n+ + n−)", "RdBu", -1, 1),
            (result.scalar_distance, "‖V_h − v_h I‖_F / ‖V_h‖_F", "viridis", 0, 1)]
    for ax, (data, title, cmap, lo, hi) in zip(axes, maps, strict=False):
        image = ax.imshow(data, cmap=cmap, vmin=lo, vmax=hi, aspect="auto", origin="lower",
                          extent=(0.5, data.shape[1] + 0.5, 0.5, data.shape[0] + 0.5))
        ax.set(title=title, xlabel="head", ylabel="layer")
        _integer_ticks(ax.xaxis, ax.yaxis)
        fig.colorbar(image, ax=ax)
    layers = np.arange(1, result.regime.size + 1)
    ax = axes[3]
    ax.plot(layers, result.blowup_time, "o", label="A = 0")
    ax.plot(layers, result.blowup_time_mlp, "s", label="A = E[J_MLP]")
    ax.set(title="blow-up time T* (none: not drawn)", xlabel="layer", ylabel="T*")
    _integer_ticks(ax.xaxis)
    if np.any(np.isfinite(result.blowup_time)) or np.any(np.isfinite(result.blowup_time_mlp)):
        ax.set_yscale("log")
    ax.legend()
    fig.tight_layout()
    return fig


def plot_comparison(result: Comparison):
    """Per layer, the projected mean and covariance errors of the prediction against their
    sampling floors (median and the verdict's quantile). Returns the Figure (no pyplot)."""
    fig, axes = new_figure(1, 2, figsize=(10.0, 3.6))
    layers = np.arange(result.consistent.size)
    for ax, name, title in zip(axes, ("mean_k", "cov_k"),
                               ("mean error on k directions", "covariance error on k directions"),
                               strict=True):
        floor = result.floors[name]
        ax.fill_between(layers, 0, floor[:, 1], color="0.85",
                        label=f"Gaussian floor ({1 - result.alpha / 2:.3g} quantile)")
        ax.plot(layers, floor[:, 0], "--", color="0.5", label="floor median")
        ax.plot(layers, result.errors[name], "o-", label="measured vs predicted")
        ax.set(title=title, xlabel="layer", ylabel="relative error")
        _integer_ticks(ax.xaxis)
        ax.legend(fontsize="small")
    fig.suptitle(f"{result.model}: {result.n_tokens} tokens in {len(result.lengths)} sequences")
    fig.tight_layout()
    return fig
