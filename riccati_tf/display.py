"""Compact notebook displays shared by the result classes: an HTML table and a LaTeX matrix.

The result classes (`riccati_tf.Trajectory`, `riccati_tf.Certificate`, ...) show themselves in
a notebook through `_repr_html_` and `_repr_latex_`, built from these three functions: numbers in
DIGITS significant digits, a two-column table, and a matrix up to LATEX_MAX_D × LATEX_MAX_D.
"""

from __future__ import annotations

import html

import numpy as np
import numpy.typing as npt

__all__ = ["DIGITS", "LATEX_MAX_D", "REPR_DIGITS", "REPR_MAX_D", "REPR_SHORT_DIGITS", "Markup",
           "array_text", "html_table", "latex_matrix", "number", "repr_number"]

#: matrices larger than this (d × d) are not written out in LaTeX (the display would not fit)
LATEX_MAX_D = 8
#: vectors and matrices of dimension d ≤ REPR_MAX_D are written out in reprs, in REPR_DIGITS
#: significant digits (a repr stays one readable line)
REPR_MAX_D = 4
REPR_DIGITS = 6
#: significant digits of the scalars in the one-line reprs of results (Certificate, ControlPlan)
REPR_SHORT_DIGITS = 4
#: significant digits of the numbers in the displays (the command line's summaries use the same)
DIGITS = 6


def number(x: float | None, digits: int = DIGITS, missing: str = "—") -> str:
    """A number as text in DIGITS significant digits.

    Parameters
    ----------
    x : float or None
        The number (any real scalar: Python, NumPy); None for a quantity that does not exist,
        e.g. the blow-up time of a flow without blow-up.
    digits : int, optional
        Significant digits (default DIGITS; the one-line reprs use REPR_SHORT_DIGITS).
    missing : str, optional
        The text for None (default "—"; the reprs write "None", as Python does).

    Returns
    -------
    str
        ``f"{x:.6g}"`` (DIGITS = 6), or ``'—'`` for None (as the command line writes it).

    Raises
    ------
    ValueError, TypeError
        When `x` is neither None nor a real number (its format has no ``g`` presentation).

    See Also
    --------
    html_table : the table whose cells hold these numbers.
    latex_matrix : a matrix in the same digits.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §6 "Certificates" (the evidence these displays summarise).

    Examples
    --------
    >>> from riccati_tf.display import number
    >>> number(3.14159265), number(1e-7 / 3), number(None), number(None, missing="None")
    ('3.14159', '3.33333e-08', '—', 'None')
    """
    return missing if x is None else f"{x:.{digits}g}"


def repr_number(x: float | None) -> str:
    """A scalar as the one-line reprs of results write it: REPR_SHORT_DIGITS significant digits,
    None as ``None``.

    Parameters
    ----------
    x : float or None
        The number, or None for a quantity that does not exist.

    Returns
    -------
    str
        ``number(x, REPR_SHORT_DIGITS, "None")``.

    Raises
    ------
    ValueError, TypeError
        As `number`.

    See Also
    --------
    number : the displays' format.

    References
    ----------
    .. [1] Python's ``repr(None)``.

    Examples
    --------
    >>> from riccati_tf.display import repr_number
    >>> repr_number(1 / 3), repr_number(None)
    ('0.3333', 'None')
    """
    return number(x, REPR_SHORT_DIGITS, "None")


def array_text(x: npt.ArrayLike, max_d: int = REPR_MAX_D) -> str | None:
    """A vector or matrix as one line of nested lists in REPR_DIGITS significant digits, or None
    when a dimension exceeds `max_d`.

    Parameters
    ----------
    x : array_like of float, 1-D or 2-D
        The vector (d,) or matrix (d, k).
    max_d : int, optional
        The largest dimension written out (default REPR_MAX_D = 4).

    Returns
    -------
    str or None
        ``[1, 0.5]`` or ``[[1, 0], [0, 2]]``; None for a larger array.

    Raises
    ------
    ValueError
        When `x` has more than two dimensions or is not real.

    See Also
    --------
    number : one number in the displays' digits.

    References
    ----------
    .. [1] NumPy's ``array_repr``, whose brackets this follows (without changing print options).

    Examples
    --------
    >>> from riccati_tf.display import array_text
    >>> array_text([[1.0, 1 / 3], [1 / 3, 2.0]]), array_text([0.0] * 5)
    ('[[1, 0.333333], [0.333333, 2]]', None)
    """
    a = np.asarray(x, dtype=float) + 0.0  # −0.0 written as 0
    if a.ndim not in (1, 2):
        raise ValueError(f"array_text takes a vector or a matrix, got {a.ndim} dimensions")
    if max(a.shape, default=0) > max_d:
        return None
    if a.ndim == 1:
        return "[" + ", ".join(f"{v:.{REPR_DIGITS}g}" for v in a) + "]"
    return "[" + ", ".join(f"[{', '.join(f'{v:.{REPR_DIGITS}g}' for v in row)}]"
                           for row in a) + "]"


class Markup(str):
    """A table cell that is HTML already (such as a sentence with MathML from
    `riccati_tf.io.htmlmath.text_with_math`): `html_table` writes it as it is.

    Raises
    ------
    None
        A str.

    See Also
    --------
    html_table : writes every other cell escaped.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §6 "Certificates" (the reasons shown this way).

    Examples
    --------
    >>> from riccati_tf.display import Markup, html_table
    >>> "<b>" in html_table("T", [("a", Markup("<b>x</b>")), ("b", "<b>")])
    True
    """

    __slots__ = ()


def html_table(title: str, rows: list[tuple[str, object]]) -> str:
    """A two-column HTML table (name, value) with a caption, every cell escaped but a `Markup`
    value.

    Parameters
    ----------
    title : str
        The caption.
    rows : list of (str, object)
        The rows in order: a name and a value, each written with ``str`` and HTML-escaped (a
        `Markup` value as it is).

    Returns
    -------
    str
        ``<table><caption>title</caption><tr><th>name</th><td>value</td></tr>...</table>``
        (cells left-aligned).

    Raises
    ------
    ValueError
        When a row is not a pair (it cannot be unpacked into name and value).

    See Also
    --------
    number : the numbers the result classes put in the cells.
    latex_matrix : the LaTeX display of a matrix.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §6 "Certificates" (the evidence these displays summarise).

    Examples
    --------
    >>> from riccati_tf.display import html_table
    >>> html_table("Flow", [("status", "completed"), ("T*", "<1")])
    "<table><caption>Flow</caption><tr><th style='text-align:left'>status</th><td
    style='text-align:left'>completed</td></tr><tr><th style='text-align:left'>T*</th><td
    style='text-align:left'>&lt;1</td></tr></table>"
    """
    body = "".join(f"<tr><th style='text-align:left'>{html.escape(str(k))}</th>"
                   f"<td style='text-align:left'>"
                   f"{v if isinstance(v, Markup) else html.escape(str(v))}</td></tr>"
                   for k, v in rows)
    return f"<table><caption>{html.escape(title)}</caption>{body}</table>"


def latex_matrix(M: npt.ArrayLike) -> str | None:
    r"""A matrix as a LaTeX ``pmatrix`` in DIGITS significant digits.

    Parameters
    ----------
    M : (p, q) array_like of float
        The matrix; a scalar or a vector is read as a 1 × 1 or a 1 × q matrix.

    Returns
    -------
    str or None
        ``\begin{pmatrix}a & b \\ c & d\end{pmatrix}``, a power of ten written as
        ``\cdot 10^{k}``; None when M is larger than LATEX_MAX_D × LATEX_MAX_D (the display
        would not fit).

    Raises
    ------
    ValueError, TypeError
        When `M` cannot be converted to a float array.

    See Also
    --------
    number : the same digits as plain text.
    html_table : the HTML display of the result classes.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up" (the equilibria Σ* these displays show).

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.display import latex_matrix
    >>> print(latex_matrix([[1.0, 2e-9], [0.0, 1 / 3]]))
    \begin{pmatrix}1 & 2 \cdot 10^{-9} \\ 0 & 0.3333\end{pmatrix}
    >>> latex_matrix(np.eye(9)) is None
    True
    """
    A = np.atleast_2d(np.asarray(M, dtype=float))
    if max(A.shape) > LATEX_MAX_D:
        return None
    rows = [" & ".join(_latex_number(x) for x in row) for row in A]
    return r"\begin{pmatrix}" + r" \\ ".join(rows) + r"\end{pmatrix}"


def _latex_number(x: float) -> str:
    mant, _, exp = f"{x:.{DIGITS}g}".partition("e")
    return mant if not exp else rf"{mant} \cdot 10^{{{int(exp)}}}"
