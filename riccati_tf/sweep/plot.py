"""Phase diagrams of a sweep: the regime (or flow status) of every configuration over two axes.

Left panel: one colour per regime — a filled map when the two axes form a full grid (every (x, y)
pair once), else a scatter of all configurations (a projection when the family has more axes).
Right panel: log₁₀ T* of the blowing-up configurations (the blow-up time in depth). With one axis
the diagram is a strip: regime against x, T* on the right.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import InvalidInputError
from .store import read_manifest, read_results

REGIME_COLORS = {"converges": "#2a9d8f", "collapses": "#264653", "blows_up": "#e76f51",
                 "grows": "#f4a261", "undetermined": "#b0b0b0", "completed": "#2a9d8f",
                 "blowup": "#e76f51", "error": "#000000"}


def _category(columns: dict) -> tuple[str, np.ndarray]:
    for key in ("regime", "status"):
        if key in columns:
            return key, np.asarray(columns[key], dtype=object)
    raise InvalidInputError("the results hold neither a regime nor a status column")


def _full_grid(x: np.ndarray, y: np.ndarray):
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


def phase_diagram(columns: dict, x: str, y: str | None = None, *, title: str = ""):
    """A matplotlib Figure of the regimes over axes x (and y) from a {column: values} mapping."""
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    from ..app.plotting import new_figure

    key, cat = _category(columns)
    present = [c for c in REGIME_COLORS if np.any(cat == c)]
    present += sorted(set(cat.tolist()) - set(present))
    codes = np.array([present.index(c) for c in cat])
    colors = [REGIME_COLORS.get(c, "#7b2cbf") for c in present]
    cmap = ListedColormap(colors)
    xv = np.asarray(columns[x], dtype=float)
    tstar = np.asarray(columns.get("blowup_time", np.full(xv.size, np.nan)), dtype=float)
    fig, (ax, ax2) = new_figure(1, 2, figsize=(11.0, 4.6))
    if y is None:
        ax.scatter(xv, codes, c=codes, cmap=cmap, vmin=-0.5, vmax=len(present) - 0.5, s=8)
        ax.set_yticks(range(len(present)), present)
        ax.set_ylabel(key)
        ax2.semilogy(xv, tstar, ".", ms=3, color=REGIME_COLORS["blows_up"])
        ax2.set_xlabel(x)
        ax2.set_ylabel("blow-up time T*")
    else:
        yv = np.asarray(columns[y], dtype=float)
        grid = _full_grid(xv, yv)
        if grid is not None:
            xs, ys, index = grid
            ax.pcolormesh(_edges(xs), _edges(ys), codes[index], cmap=cmap, vmin=-0.5,
                          vmax=len(present) - 0.5)
            with np.errstate(divide="ignore", invalid="ignore"):
                img = ax2.pcolormesh(_edges(xs), _edges(ys), np.log10(tstar[index]),
                                     cmap="magma_r")
        else:
            ax.scatter(xv, yv, c=codes, cmap=cmap, vmin=-0.5, vmax=len(present) - 0.5, s=6,
                       linewidths=0)
            with np.errstate(divide="ignore", invalid="ignore"):
                img = ax2.scatter(xv, yv, c=np.log10(tstar), cmap="magma_r", s=6, linewidths=0)
        ax.set_ylabel(y)
        ax2.set_xlabel(x)
        ax2.set_ylabel(y)
        if np.any(np.isfinite(tstar)):
            fig.colorbar(img, ax=ax2, label="log₁₀ T* (blow-up time)")
        ax2.set_title("blow-up time")
        counts = {c: int(np.sum(cat == c)) for c in present}
        ax.legend(handles=[Patch(color=col, label=f"{c} ({counts[c]})")
                           for c, col in zip(present, colors, strict=True)],
                  fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.13),
                  ncol=min(3, len(present)), frameon=False)
    ax.set_xlabel(x)
    ax.set_title(title or f"{key} over {x}" + (f" × {y}" if y else ""))
    return fig


def diagram_inputs(results_path, x: str | None = None, y: str | None = None):
    """(columns, x, y) for phase_diagram from a results folder or .parquet file: x, y default to
    the spec's `plot: {x, y}` (else its first two axes) recorded in the folder's manifest, else to
    the first two columns after config_id."""
    path = Path(results_path)
    table = read_results(path)
    columns = {name: table.column(name).to_numpy(zero_copy_only=False)
               for name in table.column_names}
    folder = path if path.is_dir() else path.parent
    default = (None, None)
    if (folder / "manifest.json").exists():
        default = tuple(read_manifest(folder).get("plot") or (None, None))
    if default[0] is None:
        names = [c for c in table.column_names if c != "config_id"]
        default = (names[0], names[1] if len(names) > 1 and names[1] not in (
            "regime", "status") else None)
    x = x or default[0]
    y = y if y is not None else (default[1] if x == default[0] else None)
    for name in (x, y):
        if name is not None and name not in columns:
            raise InvalidInputError(f"{name!r} is not a column of the results "
                                    f"({', '.join(table.column_names)})")
    return columns, x, y


def plot_sweep(results_path, out_png, *, x: str | None = None, y: str | None = None) -> Path:
    """Write the phase diagram of a sweep's results (folder or .parquet) to out_png (PNG).
    x, y: the axes (defaults as in diagram_inputs). Returns the path written. An existing
    out_png that is not a PNG image (a table, a text) is refused, never overwritten."""
    from ..app.plotting import check_output_file, save_figure

    out = check_output_file(out_png, "--out")
    columns, x, y = diagram_inputs(results_path, x, y)
    return save_figure(phase_diagram(columns, x, y), out)
