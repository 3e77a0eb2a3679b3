"""Figures of the encoder analyses, built without pyplot (`io.figures.new_figure`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.ticker import MaxNLocator

from ...io.figures import PAGE_FIGSIZE, new_figure
from ...io.plots import plain_log_labels
from .atlas import SOURCE_WORDS, Atlas
from .comparison import Comparison

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["plot_atlas", "plot_comparison"]


def _integer_ticks(*axes: Any) -> None:
    """Layers and heads are counted: integer ticks on the given axes (ax.xaxis, ax.yaxis)."""
    for axis in axes:
        axis.set_major_locator(MaxNLocator(integer=True))


def plot_atlas(result: Atlas) -> Figure:
    """The stability atlas: per-head heat maps and per-layer blow-up times.

    Heat maps (layers × heads) of the signed spectral mass Σλ/Σ|λ| of sym(V_h) and of sym(B_h)
    (graded where the inertia of a rank-d_h head is always (d_h, d − 2d_h, d_h)), of each
    head's share 2 tr(V_hΣ0B_hΣ0)/tr Σ0 of the relative rate d ln tr Σ/dt at the layer's input
    moments, and of its growth rate γ_h on its own range; and per layer the blow-up time T* of
    the multi-head flow with A = 0 and with A = E[J_MLP] and of the scalar fit (open markers),
    up to the horizon (dashed; none drawn where there is no blow-up before it).

    Parameters
    ----------
    result : Atlas
        The atlas to draw.

    Returns
    -------
    matplotlib.figure.Figure
        Five panels with their colour bars and a legend panel on a 2 × 3 grid of page width
        (PAGE_FIGSIZE), built without pyplot.

    Raises
    ------
    ValueError
        From matplotlib if the atlas arrays do not have the shapes of `Atlas`.

    See Also
    --------
    atlas : computes the atlas.
    plot_comparison : the figure of the moment comparison.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders import (Encoder, EncoderLayer, HeadFactors,
    ...     LayerNormParams, MLPParams, atlas, plot_atlas)
    >>> I, z = np.eye(2), np.zeros(2)
    >>> head = HeadFactors(I, z, I, z, I, z, I, 1.0)  # B = V = I: signs "same"
    >>> mlp = MLPParams(np.zeros((2, 2)), z, I, z, "relu")  # E[J_MLP] = 0
    >>> norm = LayerNormParams(np.ones(2), z, 1e-5)
    >>> encoder = Encoder((EncoderLayer((head,), z, None, norm, mlp, "pre"),), "bert", None,
    ...                   False)
    >>> fig = plot_atlas(atlas(encoder))
    >>> [ax.get_title() for ax in fig.axes[:5]][4]
    'blow-up time T* (layers)'
    """
    fig, grid = new_figure(2, 3, figsize=PAGE_FIGSIZE)
    axes = list(grid.ravel())
    share = result.trace_rate / np.maximum(result.input_trace, np.finfo(float).tiny)[:, None]

    def spread(x: np.ndarray) -> float:
        top = float(np.max(np.abs(x))) if x.size else 0.0
        return top if top > 0 else 1.0

    maps = [(result.v_mass, "sym(V_h): Σλ/Σ|λ|"), (result.b_mass, "sym(B_h): Σλ/Σ|λ|"),
            (share, "2 tr(V_hΣ0B_hΣ0) / tr Σ0"), (result.growth_rate, "γ_h = max Re λ(V_hΣ0B_h)")]
    for ax, (data, title) in zip(axes, maps, strict=False):
        top = spread(data)  # the colour range ±max |value|: small values stay visible
        image = ax.imshow(data, cmap="RdBu_r", vmin=-top, vmax=top, aspect="auto",
                          origin="lower",
                          extent=(0.5, data.shape[1] + 0.5, 0.5, data.shape[0] + 0.5))
        ax.set(title=title, xlabel="head", ylabel="layer")
        _integer_ticks(ax.xaxis, ax.yaxis)
        fig.colorbar(image, ax=ax)
    layers = np.arange(1, result.regime.size + 1)
    ax = axes[4]
    ax.plot(layers, result.blowup_time, "o", label="multi-head, A = 0")
    ax.plot(layers, result.blowup_time_mlp, "s", label="multi-head, A = E[J_MLP]")
    ax.plot(layers, result.scalar_blowup_time, "D", mfc="none", color="0.4",
            label="scalar fit v_h I, A = 0")
    ax.axhline(result.horizon, ls="--", color="0.5", label=f"horizon {result.horizon:.3g}")
    ax.set(title="blow-up time T* (layers)", xlabel="layer", ylabel="T*")
    _integer_ticks(ax.xaxis)
    ax.set_yscale("log")
    plain_log_labels(ax.yaxis)
    # in a panel of its own: inside the axes the legend can hide a marker
    axes[5].axis("off")
    axes[5].legend(*ax.get_legend_handles_labels(), loc="center", title="T* before the horizon")
    fig.suptitle(f"{result.model}: Σ0 of each layer {SOURCE_WORDS[result.moments_source]}")
    fig.tight_layout()
    return fig


def _finite(x: np.ndarray) -> np.ndarray:
    """x with its non-finite entries as NaN (left out of a line: a layer whose moments vanish
    has undefined relative errors)."""
    x = np.asarray(x, dtype=float)
    return np.where(np.isfinite(x), x, np.nan)


def _log_if_positive(ax: Any, series: list[np.ndarray]) -> None:
    """A logarithmic y axis when every finite value plotted is positive: errors spread over
    decades, and one outlier flattens a linear axis."""
    values = np.concatenate([np.ravel(x) for x in series])
    values = values[np.isfinite(values)]
    if values.size and np.all(values > 0):
        ax.set_yscale("log")
        plain_log_labels(ax.yaxis)


def plot_comparison(result: Comparison) -> Figure:
    """The moment comparison over depth: the prediction and its baselines against the model.

    With baselines (`Comparison.baselines`), three panels over the layers ℓ: the covariance
    error ‖Ĉ_ℓ − Σ_ℓ‖_F / ‖Ĉ_ℓ‖_F one layer at a time (from the measured layer ℓ − 1) and
    chained (from the input onwards) for the prediction, no_change, no_attention and oracle, with
    the sampling floor shaded (layers the validity map flags are marked); and tr Σ_ℓ and the top
    eigenvalue predicted (one layer and chained) against the measured ones. A fourth panel
    (always) shows the projected covariance error ‖Ĉ_k − ΘᵀΣ_ℓΘ‖_F / ‖ΘᵀΣ_ℓΘ‖_F against its
    floor (median and the verdict's 1 − α/2 quantile).

    Parameters
    ----------
    result : Comparison
        The comparison to draw.

    Returns
    -------
    matplotlib.figure.Figure
        Four panels (one without baselines), built without pyplot.

    Raises
    ------
    KeyError
        If result.errors or result.floors lacks "cov_k".

    See Also
    --------
    compare : computes the comparison.
    plot_atlas : the figure of the stability atlas.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> from riccati_tf.empirical.encoders import compare, plot_comparison
    >>> from riccati_tf.empirical.encoders.tiny import tiny_encoder
    >>> model = tiny_encoder("bert", hidden_size=8, n_heads=2, n_layers=1, max_positions=64)
    >>> fig = plot_comparison(compare(model, n_tokens=256, n_sim=50, n_sim_full=2))
    >>> [ax.get_title() for ax in fig.axes][:3]
    ['one layer: covariance error', 'chained: covariance error', 'trace and top eigenvalue']
    """
    base = result.baselines
    fig, grid = new_figure(2 if base is not None else 1, 2 if base is not None else 1,
                           figsize=PAGE_FIGSIZE if base is not None else (5.0, 3.8),
                           squeeze=False)
    axes = list(grid.ravel())
    layers = np.arange(result.consistent.size)
    if base is not None:
        styles = {"prediction": ("o-", "C0"), "no_change": ("s--", "C1"),
                  "no_attention": ("^--", "C2"), "oracle": ("d:", "C3")}
        flagged = (np.array([], dtype=int) if result.validity is None
                   else np.flatnonzero(result.validity.layer_flagged) + 1)
        for ax, row, title in zip(axes[:2], (0, 1), ("one layer: covariance error",
                                                    "chained: covariance error"), strict=True):
            ax.fill_between(layers[1:], 0, _finite(base.floor["cov"][1:]), color="0.85",
                            label="sampling floor (RMS)")
            for name, (style, colour) in styles.items():
                ax.plot(layers[1:], _finite(base.methods[name].cov[row, 1:]), style, color=colour,
                        label=name)
            if flagged.size:  # along the top edge of the panel
                ax.plot(flagged, np.full(flagged.size, 0.97), "kx",
                        transform=ax.get_xaxis_transform(), label="validity map flags the layer")
            ax.set(title=title, xlabel="layer", ylabel="‖Ĉ − Σ‖_F / ‖Ĉ‖_F")
            _log_if_positive(ax, [base.methods[name].cov[row, 1:] for name in styles])
            _integer_ticks(ax.xaxis)
            ax.legend(fontsize="small")
        ax = axes[2]
        pred = base.methods["prediction"]
        ax.plot(layers, _finite(base.measured_trace), "ko-", label="tr measured")
        ax.plot(layers, _finite(pred.trace[0]), "C0s--", label="tr predicted, one layer")
        ax.plot(layers, _finite(pred.trace[1]), "C0^:", label="tr predicted, chained")
        ax.plot(layers, _finite(base.measured_top[:, 0]), "o-", color="0.5", label="λ1 measured")
        ax.plot(layers, _finite(pred.top[0, :, 0]), "C1s--", label="λ1 predicted, one layer")
        ax.plot(layers, _finite(pred.top[1, :, 0]), "C1^:", label="λ1 predicted, chained")
        ax.set(title="trace and top eigenvalue", xlabel="layer", ylabel="value")
        _log_if_positive(ax, [base.measured_top[:, 0], pred.top[:, :, 0], pred.trace,
                              base.measured_trace])
        _integer_ticks(ax.xaxis)
        ax.legend(fontsize="small")
    ax = axes[-1]
    floor = result.floors["cov_k"]
    ax.fill_between(layers, 0, _finite(floor[:, 1]), color="0.85",
                    label=f"Gaussian floor ({1 - result.alpha / 2:.3g} quantile)")
    ax.plot(layers, _finite(floor[:, 0]), "--", color="0.5", label="floor median")
    ax.plot(layers, _finite(result.errors["cov_k"]), "o-", label="measured vs predicted")
    ax.set(title="covariance error on k directions", xlabel="layer", ylabel="relative error")
    _log_if_positive(ax, [result.errors["cov_k"], floor[:, 0]])
    _integer_ticks(ax.xaxis)
    ax.legend(fontsize="small")
    fig.suptitle(f"{result.model}: {result.n_tokens} tokens in {len(result.lengths)} sequences")
    fig.tight_layout()
    return fig
