"""Figures as files and notebook images, built without pyplot; and pyplot axes for `.plot()`.

Every figure the command line and the report write is a `Figure` (a matplotlib Figure that
Jupyter shows as a PNG through `_repr_png_`) created directly, not through `matplotlib.pyplot`:
no backend is selected, no rcParams change and nothing is registered with pyplot's figure
manager, so a caller's own pyplot session is left as it was. `save_figure` writes one as a PNG
file, never over a file that is not a PNG image.

The results' own `.plot(ax=None)` methods (`Trajectory`, `Certificate`, `ControlPlan`,
`SweepResult`) behave like pandas' and xarray's: they draw into `ax` when one is given (then
nothing global changes), else into a new pyplot figure (`pyplot_axes`), so that ``tr.plot();
plt.show()`` or ``plt.savefig(...)`` works in a script; they return the Axes.
"""

from __future__ import annotations

import io
import math
import os
from pathlib import Path
from typing import Any

from matplotlib.axis import Axis
from matplotlib.figure import Figure as _MatplotlibFigure
from matplotlib.text import Text

from ..errors import InvalidInputError
from .files import check_creatable

__all__ = ["DPI", "MIN_TEXT_KEY", "PAGE_FIGSIZE", "PANEL_SIZE", "SCREEN_DPI", "new_figure",
           "pyplot_axes", "save_figure"]

#: size in inches of a one-panel figure: a column of a printed page, 1280 × 800 px at DPI
PANEL_SIZE = (6.4, 4.0)
#: size in inches of a figure of several panels as wide as a page: the report's 1100 CSS px show
#: its 200-dpi pixels at 0.55, so that its 8-point text reads at 9.2 pt
PAGE_FIGSIZE = (10.0, 7.5)
#: resolution of the PNG files (`save_figure`, `figure_png`): print quality
DPI = 200
#: resolution of the image a notebook shows (`Figure._repr_png_`): a one-panel figure 640 px wide
SCREEN_DPI = 100


class Figure(_MatplotlibFigure):
    """A matplotlib Figure that Jupyter displays as a PNG image (no pyplot backend involved)."""

    def _repr_png_(self) -> bytes:
        return figure_png(self, dpi=SCREEN_DPI)


def new_figure(nrows: int = 1, ncols: int = 1, *, figsize: tuple[float, float] = PANEL_SIZE,
               **subplots_kw: Any) -> tuple[Figure, Any]:
    """(fig, axes): a `Figure` of the given size in inches and its nrows × ncols axes.

    The figure is created directly, not through `matplotlib.pyplot`: no backend is selected,
    no rcParams change and nothing is registered with pyplot's figure manager; Jupyter shows it
    as a PNG (`Figure._repr_png_`).

    Parameters
    ----------
    nrows, ncols : int, default 1
        The grid of axes.
    figsize : tuple (float, float), default PANEL_SIZE
        Width and height in inches.
    **subplots_kw
        Passed to `matplotlib.figure.Figure.subplots` (sharex, sharey, ...).

    Returns
    -------
    fig : Figure
        The figure.
    axes : matplotlib.axes.Axes or ndarray of Axes
        A single Axes for 1 × 1, else an array, as `Figure.subplots` returns them.

    Raises
    ------
    ValueError
        When matplotlib refuses the grid (nrows or ncols < 1).

    See Also
    --------
    riccati_tf.io.plots.plot_covariance : draws into such axes.
    riccati_tf.sweep.plot.phase_diagram : a two-panel figure made with it.

    References
    ----------
    .. [1] J. D. Hunter, "Matplotlib: A 2D graphics environment", Computing in Science &
       Engineering 9(3), 2007.

    Examples
    --------
    >>> from riccati_tf.io.figures import new_figure
    >>> fig, axes = new_figure(1, 2, figsize=(8.0, 3.0))
    >>> type(fig).__name__, axes.shape, fig.get_size_inches().tolist()
    ('Figure', (2,), [8.0, 3.0])
    """
    fig = Figure(figsize=figsize)
    return fig, fig.subplots(nrows, ncols, **subplots_kw)


def pyplot_axes(ax: Any = None, nrows: int = 1, ncols: int = 1, *,
                figsize: tuple[float, float] = PANEL_SIZE) -> Any:
    """`ax` when given, else the nrows × ncols axes of a new pyplot figure.

    What the results' `.plot(ax=None)` draw into: with no `ax`, ``matplotlib.pyplot.figure``
    makes a new current figure (pyplot's backend, rcParams and figure manager, as for any
    pyplot call), which ``plt.show()`` shows and ``plt.savefig`` writes. The command line and
    the report never come here: they draw into `new_figure` figures.

    Parameters
    ----------
    ax : matplotlib.axes.Axes or sequence of Axes, optional
        Returned as it is when given.
    nrows, ncols : int, default 1
        The grid of axes of the new figure.
    figsize : tuple (float, float), default PANEL_SIZE
        Its width and height in inches.

    Returns
    -------
    matplotlib.axes.Axes or ndarray of Axes
        `ax`, or the new figure's axes (one Axes for 1 × 1).

    Raises
    ------
    ValueError
        From pyplot's `Figure.subplots` for a grid below 1 × 1.

    See Also
    --------
    new_figure : a figure without pyplot (for files).

    References
    ----------
    .. [1] pandas.DataFrame.plot and xarray.DataArray.plot, which draw into a given Axes or
       a new pyplot figure, and return the Axes.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from riccati_tf.io.figures import pyplot_axes
    >>> ax = pyplot_axes()
    >>> ax.figure is plt.gcf(), pyplot_axes(ax) is ax
    (True, True)
    >>> plt.close(ax.figure)
    """
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    return plt.figure(figsize=figsize).subplots(nrows, ncols)


#: the first bytes of every PNG file
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _head(path: Path) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(len(PNG_SIGNATURE))
    except OSError:
        return b""


def check_output_file(path: str | Path, what: str = "figure") -> Path:
    """`path` as a PNG file that can be written: a name ending in .png or without an extension
    (out.pdf would get PNG bytes), not a folder, not an existing file other than a PNG image (a
    table, a text: never overwritten), and its nearest existing ancestor a folder this process
    may write into (missing folders in between are created on writing). Raises
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
    if path.suffix and path.suffix.lower() != ".png":
        raise InvalidInputError(f"{what} path {path}: figures are written as PNG images; give a "
                                f"name ending in .png (not {path.suffix})")
    check_creatable(path, f"{what} path {path}")
    return path


def save_figure(fig: _MatplotlibFigure, path: str | Path) -> Path:
    """Write a figure as a PNG file (DPI = 200 dpi, tight bounding box), parent folders created.

    An existing PNG image at `path` is replaced; any other existing file is never overwritten.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure, e.g. from `new_figure` or a plotting function of the package.
    path : str or pathlib.Path
        The PNG file to write.

    Returns
    -------
    pathlib.Path
        The path written.

    Raises
    ------
    InvalidInputError
        When the path cannot take the figure: a folder, a path below a file, no permission, a
        full disk, or an existing file that is not a PNG image (checked by its signature).

    See Also
    --------
    new_figure : a figure built without pyplot.
    riccati_tf.app.plotting.plot_flow : a figure of a trajectory.

    References
    ----------
    .. [1] ISO/IEC 15948:2004, "Portable Network Graphics (PNG): Functional specification"
       (the eight-byte file signature).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from riccati_tf.io.figures import new_figure, save_figure
    >>> fig, ax = new_figure()
    >>> _ = ax.plot([0, 1], [1, 0])
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     written = save_figure(fig, Path(folder) / "line.png")
    ...     print(written.name, written.read_bytes()[1:4])
    line.png b'PNG'
    """
    path = check_output_file(path)
    data = figure_png(fig)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    except OSError as exc:
        raise InvalidInputError(f"cannot write the figure to {path} "
                                f"({exc.strerror or type(exc).__name__})") from None
    return path


#: the PNG text key under which `figure_png` records the height in image pixels of the figure's
#: smallest text (its font size in points × dpi / 72): a page showing the image at w of its
#: natural width W renders that text at MIN_TEXT_KEY × w / W CSS pixels
MIN_TEXT_KEY = "riccati_tf:min-text-px"


def smallest_text_pt(fig: _MatplotlibFigure) -> float:
    """The smallest font size in points among the figure's drawn texts: titles, axis and tick
    labels in view, legends and annotations that are visible and not empty (inf when there is
    none)."""
    fig.draw_without_rendering()  # ticks and their labels are laid out by a draw
    sizes = [t.get_fontsize() for t in _drawn_texts(fig)
             if t.get_visible() and t.get_text().strip()]
    return float(min(sizes, default=float("inf")))


def _drawn_texts(artist: Any) -> list[Text]:
    """The Text artists below `artist`; of an axis only the labels of the ticks in its view
    interval, its label and its offset text."""
    if isinstance(artist, Axis):
        low, high = sorted(artist.get_view_interval())
        slack = 1e-9 * (high - low)
        ticks = [t for t in (*artist.get_major_ticks(), *artist.get_minor_ticks())
                 if t.get_visible() and t.get_loc() is not None
                 and low - slack <= t.get_loc() <= high + slack]
        return [*(label for t in ticks for label in (t.label1, t.label2)), artist.label,
                artist.get_offset_text()]
    found = [artist] if isinstance(artist, Text) else []
    for child in artist.get_children():
        if child.get_visible():
            found += _drawn_texts(child)
    return found


def figure_png(fig: _MatplotlibFigure, dpi: float = DPI) -> bytes:
    """The figure as PNG bytes (dpi: DPI = 200 for files, SCREEN_DPI in a notebook; tight bounding
    box; laid out tightly unless the figure has a layout engine of its own), with the pixel
    height of its smallest text, `smallest_text_pt` × dpi / 72, under the PNG text key
    MIN_TEXT_KEY."""
    buf = io.BytesIO()
    if fig.get_layout_engine() is None:
        fig.tight_layout()
    smallest = smallest_text_pt(fig) * dpi / 72
    metadata = {MIN_TEXT_KEY: f"{smallest:.4g}"} if math.isfinite(smallest) else {}
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", metadata=metadata)
    return buf.getvalue()


def min_text_px(png: bytes) -> float | None:
    """The height in image pixels of the smallest text of a PNG written by `figure_png` (None
    for an image without the record, or bytes that are no image)."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(png)) as image:
            value = getattr(image, "text", {}).get(MIN_TEXT_KEY)
    except UnidentifiedImageError:
        return None
    return None if value is None else float(value)
