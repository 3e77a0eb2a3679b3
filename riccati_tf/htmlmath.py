"""Equations for HTML pages: LaTeX (as SymPy prints it) to MathML, which browsers render natively,
so a report needs no script or network to show its equations.

latex2mathml lays out `cases`, `matrix` and `array` as <mtable>, but leaves `aligned` as a row of
literal `&`. `as_arrays` therefore rewrites the alignment environments (`aligned`, `align`,
`align*`, wherever they are nested) as `array`s of right- and left-aligned columns before the
conversion: rows split on `\\`, columns on `&`, each cell after an alignment point opened with
`{}` as TeX does, so that its leading `=` or `+` keeps the spacing of a binary operator.
Equation numbers of `align` are not drawn.
"""

from __future__ import annotations

import re

from .errors import InvalidInputError

#: environments rewritten as arrays; their columns alternate right and left alignment
ALIGNMENTS = ("aligned", "align", "align*")

#: tokens that nest or separate: \begin{…}, \end{…}, a row break, an escape, braces, a column break
_TOKEN = re.compile(r"\\begin\{([^}]*)\}|\\end\{[^}]*\}|\\\\|\\.|[{}&]", re.DOTALL)
_ALIGNMENT = re.compile(r"\\begin\{(" + "|".join(map(re.escape, ALIGNMENTS)) + r")\}")


def latex_to_mathml(latex: str, *, display: bool = True) -> str:
    """A <math> element for a LaTeX string (block when display is True)."""
    from latex2mathml.converter import convert

    return convert(as_arrays(latex), display="block" if display else "inline")


def as_arrays(latex: str) -> str:
    """latex with every alignment environment (ALIGNMENTS) rewritten as `array{rlrl…}`."""
    begin = _ALIGNMENT.search(latex)
    if begin is None:
        return latex
    body_end, end = _matching_end(latex, begin.end())
    rows = [_split(row, "&") for row in _split(latex[begin.end():body_end], r"\\")]
    if len(rows) > 1 and not "".join(rows[-1]).strip():
        rows.pop()  # a trailing \\
    width = max(len(cells) for cells in rows)
    body = r" \\ ".join(" & ".join("{}" * (j % 2) + as_arrays(cell) for j, cell in enumerate(cells))
                        for cells in rows)
    return (latex[:begin.start()] + rf"\begin{{array}}{{{('rl' * width)[:width]}}}" + body
            + r"\end{array}" + as_arrays(latex[end:]))


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
