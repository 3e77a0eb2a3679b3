"""Equations for HTML pages: LaTeX (as SymPy prints it) to MathML, which browsers render natively,
so a report needs no script or network to show its equations.

latex2mathml lays out `cases`, `matrix`, `array` and `split` as <mtable>, but leaves `aligned`,
`gathered`, `alignat`, `eqnarray` and `multline` as rows of literal `&`. `as_arrays` therefore
rewrites those environments (ARRAYS, wherever they are nested) as `array`s before the conversion:
rows split on `\\`, columns on `&`, each left-aligned cell after an alignment point opened with
`{}` as TeX does, so that its leading `=` or `+` keeps the spacing of a binary operator.
Equation numbers are not drawn, and every line of `multline` is centred.
"""

from __future__ import annotations

import re

from .errors import InvalidInputError

#: environments rewritten as arrays: name → alignments of its columns (r, l, c), repeated as needed
ARRAYS = {
    **dict.fromkeys(("aligned", "align", "align*", "alignedat", "alignat", "alignat*"), "rl"),
    **dict.fromkeys(("gathered", "gather", "gather*", "multline", "multline*"), "c"),
    **dict.fromkeys(("eqnarray", "eqnarray*"), "rcl"),
}

#: tokens that nest or separate: \begin{…}, \end{…}, a row break, an escape, braces, a column break
_TOKEN = re.compile(r"\\begin\{[^}]*\}|\\end\{[^}]*\}|\\\\|\\.|[{}&]", re.DOTALL)
#: the opening of an environment of ARRAYS, with the column count of alignat
_BEGIN = re.compile(r"\\begin\{(" + "|".join(map(re.escape, ARRAYS)) + r")\}(?:\{\d+\})?")


def latex_to_mathml(latex: str, *, display: bool = True) -> str:
    """A <math> element for a LaTeX string (block when display is True)."""
    from latex2mathml.converter import convert

    return convert(as_arrays(latex), display="block" if display else "inline")


def as_arrays(latex: str) -> str:
    """latex with every environment of ARRAYS rewritten as an `array` (e.g. `aligned` as
    `array{rlrl…}`), nested ones included."""
    begin = _BEGIN.search(latex)
    if begin is None:
        return latex
    body_end, end = _matching_end(latex, begin.end())
    rows = [_split(row, "&") for row in _split(latex[begin.end():body_end], r"\\")]
    if len(rows) > 1 and not "".join(rows[-1]).strip():
        rows.pop()  # a trailing \\
    width = max(len(cells) for cells in rows)
    columns = (ARRAYS[begin.group(1)] * width)[:width]
    body = r" \\ ".join(" & ".join("{}" * (j > 0 and columns[j] == "l") + as_arrays(cell)
                                    for j, cell in enumerate(cells)) for cells in rows)
    return (latex[:begin.start()] + rf"\begin{{array}}{{{columns}}}" + body + r"\end{array}"
            + as_arrays(latex[end:]))


def _depth_change(token: re.Match) -> int:
    """+1 for { and \\begin, −1 for } and \\end, 0 for anything else."""
    text = token.group()
    if text == "{" or text.startswith(r"\begin"):
        return 1
    return -1 if text == "}" or text.startswith(r"\end") else 0


def _matching_end(latex: str, start: int) -> tuple[int, int]:
    """(start, end) of the \\end closing the environment whose body starts at start."""
    depth = 1
    for token in _TOKEN.finditer(latex, start):
        depth += _depth_change(token)
        if depth == 0:
            if not token.group().startswith(r"\end"):
                break
            return token.start(), token.end()
    raise InvalidInputError("LaTeX environment without its \\end: "
                            f"{latex[max(0, start - 30):start + 30]!r}")


def _split(latex: str, separator: str) -> list[str]:
    """latex split at the separators (`\\\\` or `&`) outside braces and nested environments."""
    parts, depth, start = [], 0, 0
    for token in _TOKEN.finditer(latex):
        depth += _depth_change(token)
        if depth == 0 and token.group() == separator:
            parts.append(latex[start:token.start()])
            start = token.end()
    return [*parts, latex[start:]]
