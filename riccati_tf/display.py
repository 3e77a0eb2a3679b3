"""Compact notebook displays shared by the result classes: an HTML table and a LaTeX matrix."""

from __future__ import annotations

import html

import numpy as np

#: matrices larger than this (d × d) are not written out in LaTeX (the display would not fit)
LATEX_MAX_D = 8
#: significant digits of the numbers in the displays
DIGITS = 4


def number(x) -> str:
    """x in DIGITS significant digits ('None' for None)."""
    return "None" if x is None else f"{x:.{DIGITS}g}"


def html_table(title: str, rows: list[tuple[str, object]]) -> str:
    """A two-column HTML table (name, value), every cell escaped."""
    body = "".join(f"<tr><th style='text-align:left'>{html.escape(str(k))}</th>"
                   f"<td style='text-align:left'>{html.escape(str(v))}</td></tr>" for k, v in rows)
    return f"<table><caption>{html.escape(title)}</caption>{body}</table>"


def latex_matrix(M: np.ndarray) -> str | None:
    r"""M as a LaTeX pmatrix (DIGITS significant digits), or None when M is larger than
    LATEX_MAX_D × LATEX_MAX_D."""
    M = np.atleast_2d(np.asarray(M, dtype=float))
    if max(M.shape) > LATEX_MAX_D:
        return None
    rows = [" & ".join(_latex_number(x) for x in row) for row in M]
    return r"\begin{pmatrix}" + r" \\ ".join(rows) + r"\end{pmatrix}"


def _latex_number(x: float) -> str:
    mant, _, exp = f"{x:.{DIGITS}g}".partition("e")
    return mant if not exp else rf"{mant} \cdot 10^{{{int(exp)}}}"
