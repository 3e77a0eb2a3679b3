"""Phase diagrams of a sweep: the regime (or flow status) of every configuration over two axes.

Left panel: one colour per regime — a filled map when the two axes form a full grid (every (x, y)
pair once), else a scatter of all configurations (a projection when the family has more axes).
Right panel: log₁₀ T* of the blowing-up configurations (the blow-up time in depth). With one axis
the diagram is a strip: regime against x, T* on the right.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InvalidInputError
from .store import read_manifest, read_results

if TYPE_CHECKING:
    from ..io.figures import Figure

__all__ = ["REGIME_COLORS", "phase_diagram", "plot_sweep"]

REGIME_COLORS = {"converges": "#2a9d8f", "collapses": "#264653", "blows_up": "#e76f51",
                 "grows": "#f4a261", "bounded": "#8ab17d", "undetermined": "#b0b0b0",
                 "completed": "#2a9d8f", "blowup": "#e76f51", "error": "#000000"}


def _category(columns: dict) -> tuple[str, np.ndarray]:
    for key in ("regime", "status"):
        if key in columns:
            return key, np.asarray(columns[key], dtype=object)
    raise InvalidInputError("the results hold neither a regime nor a status column")


def _full_grid(x: np.ndarray, y: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(xs, ys, index grid) when the (x, y) pairs are a full grid, each pair once; else None."""
    xs, xi = np.unique(x, return_inverse=True)
    ys, yi = np.unique(y, return_inverse=True)
    if xs.size * ys.size != x.size:
        return None
    grid = np.full((ys.size, xs.size), -1)
    grid[yi, xi] = np.arange(x.size)
    return (xs, ys, grid) if np.all(grid >= 0) else None


def _edges(v: np.ndarray) -> np.ndarray:
    if v.size == 1:
        return np.array([v[0] - 0.5, v[0] + 0.5])
    mid = 0.5 * (v[1:] + v[:-1])
    return np.concatenate([[2 * v[0] - mid[0]], mid, [2 * v[-1] - mid[-1]]])


def phase_diagram(columns: dict[str, Any], x: str, y: str | None = None, *,
                  title: str = "", ax: Any = None) -> Figure:
    """A matplotlib Figure of the regimes over axes x (and y) from a {column: values} mapping.

    Left panel: one colour per regime of SPEC §5 (REGIME_COLORS; or per flow status) — a
    filled map when the (x, y) pairs form a full grid (every pair once), else a scatter of all
    configurations (a projection when the family has more axes), with the count of each regime
    in the legend. Right panel: log₁₀ T* of the blowing-up configurations. With y None the
    diagram is a strip: the regime against x, T* on the right.

    Parameters
    ----------
    columns : dict of str to (n,) array_like
        The results' columns (as `read_results` gives them): a "regime" or "status" column,
        the axes x (and y) and, optionally, "blowup_time" (NaN where there is none).
    x : str
        The column on the horizontal axis.
    y : str, optional
        The column on the vertical axis; None draws the strip over x alone.
    title : str, default ""
        The left panel's title (default: "<regime or status> over x × y").
    ax : matplotlib.axes.Axes or sequence of two Axes, optional
        Draw the regime panel into this Axes (one Axes: the T* panel is left out), or both
        panels into a pair (default: a new two-panel figure).

    Returns
    -------
    riccati_tf.io.figures.Figure
        The figure drawn into: a new two-panel one unless `ax` is given (not drawn through
        pyplot).

    Raises
    ------
    InvalidInputError
        When the columns hold neither a regime nor a status column.
    KeyError
        When x (or y) is not a column.

    See Also
    --------
    plot_sweep : the diagram of a results folder, written to a PNG file.
    riccati_tf.sweep.runner.run_sweep : computes the columns.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.sweep.plot import phase_diagram
    >>> columns = {"v": np.array([-1.0, 1.0, -1.0, 1.0]), "a": np.array([-1.0, -1.0, 1.0, 1.0]),
    ...            "regime": np.array(["collapses", "blows_up", "converges", "blows_up"]),
    ...            "blowup_time": np.array([np.nan, 0.8, np.nan, 0.3])}
    >>> fig = phase_diagram(columns, "v", "a")
    >>> [ax.get_title() for ax in fig.axes[:2]]
    ['regime over v × a', 'blow-up time']
    """
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    from ..io.figures import new_figure

    key, cat = _category(columns)
    present = [c for c in REGIME_COLORS if np.any(cat == c)]
    present += sorted(set(cat.tolist()) - set(present))
    codes = np.array([present.index(c) for c in cat])
    colors = [REGIME_COLORS.get(c, "#7b2cbf") for c in present]
    cmap = ListedColormap(colors)
    xv = np.asarray(columns[x], dtype=float)
    tstar = np.asarray(columns.get("blowup_time", np.full(xv.size, np.nan)), dtype=float)
    if ax is None:
        fig, (ax, ax2) = new_figure(1, 2, figsize=(10.0, 4.6))
    elif isinstance(ax, list | tuple | np.ndarray):
        ax, ax2 = ax
        fig = ax.figure
    else:
        fig, ax2 = ax.figure, None
    if y is None:
        ax.scatter(xv, codes, c=codes, cmap=cmap, vmin=-0.5, vmax=len(present) - 0.5, s=8)
        ax.set_yticks(range(len(present)), present)
        ax.set_ylabel(key)
        if ax2 is not None:
            ax2.semilogy(xv, tstar, ".", ms=3, color=REGIME_COLORS["blows_up"])
            ax2.set_xlabel(x)
            ax2.set_ylabel("blow-up time T*")
    else:
        yv = np.asarray(columns[y], dtype=float)
        grid = _full_grid(xv, yv)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_tstar = np.log10(tstar)
        if grid is not None:
            xs, ys, index = grid
            ax.pcolormesh(_edges(xs), _edges(ys), codes[index], cmap=cmap, vmin=-0.5,
                          vmax=len(present) - 0.5)
            if ax2 is not None:
                img = ax2.pcolormesh(_edges(xs), _edges(ys), log_tstar[index], cmap="magma_r")
        else:
            ax.scatter(xv, yv, c=codes, cmap=cmap, vmin=-0.5, vmax=len(present) - 0.5, s=6,
                       linewidths=0)
            if ax2 is not None:
                img = ax2.scatter(xv, yv, c=log_tstar, cmap="magma_r", s=6, linewidths=0)
        ax.set_ylabel(y)
        if ax2 is not None:
            ax2.set_xlabel(x)
            ax2.set_ylabel(y)
            if np.any(np.isfinite(tstar)):
                fig.colorbar(img, ax=ax2, label="log₁₀ T* (blow-up time)")
            ax2.set_title("blow-up time")
        counts = {c: int(np.sum(cat == c)) for c in present}
        ax.legend(handles=[Patch(color=col, label=f"{c} ({counts[c]})")
                           for c, col in zip(present, colors, strict=True)],
                  fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.13),
                  ncol=min(3, len(present)), frameon=False)
    ax.set_xlabel(x)
    ax.set_title(title or f"{key} over {x}" + (f" × {y}" if y else ""))
    return fig


def diagram_inputs(results_path: str | Path, x: str | None = None, y: str | None = None
                   ) -> tuple[dict[str, np.ndarray], str, str | None]:
    """(columns, x, y) for phase_diagram from a results folder or file: x, y default to
    the spec's `plot: {x, y}` (else its first two axes) recorded in the folder's manifest, else to
    the first two columns after config_id."""
    path = Path(results_path)
    table = read_results(path)
    columns = dict(table)
    if not {"regime", "status"} & set(columns):
        raise InvalidInputError(f"{str(path)!r} is no sweep's results: it holds neither a "
                                f"regime nor a status column (columns: "
                                f"{', '.join(table.column_names) or 'none'})")
    folder = path if path.is_dir() else path.parent
    default: tuple[str | None, ...] = (None, None)
    if (folder / "manifest.json").exists():
        default = tuple(read_manifest(folder).get("plot") or (None, None))
    if default[0] is None:
        names = [c for c in table.column_names if c != "config_id"]
        default = (names[0], names[1] if len(names) > 1 and names[1] not in (
            "regime", "status") else None)
    x = x or default[0]
    assert x is not None  # default[0] is the manifest's axis or the first column
    y = y if y is not None else (default[1] if x == default[0] else None)
    for name in (x, y):
        if name is not None and name not in columns:
            raise InvalidInputError(f"{name!r} is not a column of the results "
                                    f"({', '.join(table.column_names)})")
    return columns, x, y


def plot_sweep(results_path: str | Path, out_png: str | Path, *, x: str | None = None,
               y: str | None = None) -> Path:
    """Write the phase diagram of a sweep's results (folder or .parquet) to out_png (PNG).

    The `phase_diagram` of the results: the SPEC §5 regime (or flow status) of every
    configuration over two axes, and log₁₀ T* of those that blow up. out_png is checked before
    the results are read: an existing file that is not a PNG image (a table, a text) is
    refused, never overwritten.

    Parameters
    ----------
    results_path : str or pathlib.Path
        A sweep's results folder, or a .parquet file.
    out_png : str or pathlib.Path
        The PNG file to write (parent folders are created).
    x : str, optional
        The horizontal axis; default the spec's ``plot: {x, y}`` recorded in the folder's
        manifest, else its first axis.
    y : str, optional
        The vertical axis; default as for x (the second axis), None for a one-axis family.

    Returns
    -------
    pathlib.Path
        The path written.

    Raises
    ------
    InvalidInputError
        out_png is a folder, an existing file other than a PNG image, or cannot be written;
        the results cannot be read (`read_results`); x or y is not a column of the results.

    See Also
    --------
    phase_diagram : the figure itself, from columns.
    riccati_tf.sweep.runner.run_sweep : writes the results folder.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".

    Examples
    --------
    >>> import tempfile
    >>> from riccati_tf.sweep import plot_sweep, run_sweep
    >>> spec = {"family": {"grid": {"v": [-1.0, 1.0], "a": [-0.5, 0.5]}},
    ...         "params": {"A": {"a": [[1, 0], [0, 1]]}, "B": [[1, 0], [0, 1]],
    ...                    "V": {"v": [[1, 0], [0, 1]]}},
    ...         "initial": {"cov": [[1, 0], [0, 1]]}}
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     result = run_sweep(spec, f"{tmp}/sweep")
    ...     png = plot_sweep(result.out_dir, f"{tmp}/phase.png")
    ...     png.name, png.read_bytes()[1:4]
    ('phase.png', b'PNG')
    """
    from ..io.figures import check_output_file, save_figure

    out = check_output_file(out_png, "--out")
    columns, x, y = diagram_inputs(results_path, x, y)
    return save_figure(phase_diagram(columns, x, y), out)
