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

import html
import re

from ..errors import InvalidInputError

__all__ = ["latex_to_mathml", "text_with_math"]
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


#: a word of plain text, where a brace group may hold spaces (e^{−2Re λ t} is one word)
_WORD = re.compile(r"(?:[^\s{}]|\{[^{}]*\})+")
#: a TeX superscript or subscript (x^{…}, x^k, x_{…}, x_k): the mark of a formula in plain text
_SCRIPT = re.compile(r"[\^_](?:\{|\w)")
#: a script that is a word of two or more letters (λ_max)
_WORD_SCRIPT = re.compile(r"([\^_])([A-Za-z]{2,})")
#: sentence punctuation that ends a word but not its formula
_TRAILING = ".,;:"
#: Unicode spellings in plain-text formulas → LaTeX (a transpose mark inside a superscript
#: becomes a nested superscript; Σ0 and W∞ are subscripted as in the mathematics)
UNICODE_TEX = {"ᵀ": r"^{\top}", "−": "-", "Σ0": r"\Sigma_{0}", "W∞": r"W_{\infty}",
               "Σ": r"\Sigma ", "λ": r"\lambda ", "∩": r"\cap ", "∞": r"\infty ",
               "Re ": r"\operatorname{Re} ", "ker": r"\ker "}


def text_with_math(text: str) -> str:
    """HTML of a plain-text sentence whose formulas are written TeX-like in Unicode.

    The reasons of certificates are sentences such as "Σ(t) ⪯ e^{At}Σ0e^{Aᵀt} → 0". Each word
    holding a superscript or subscript (``^{…}``, ``^k``, ``_{…}``, ``_k``; trailing
    punctuation excluded) becomes inline MathML (`latex_to_mathml`) after its Unicode spellings
    are turned into LaTeX (UNICODE_TEX: ᵀ, −, Σ0, W∞, Σ, λ, ...; a word after ^ or _ set
    upright, as λ_max); the rest is escaped text, so no ``^{`` is shown raw.

    Parameters
    ----------
    text : str
        The plain-text sentence.

    Returns
    -------
    str
        HTML: escaped text with inline <math> elements.

    Raises
    ------
    InvalidInputError
        When a formula opens a LaTeX environment without its \\end.

    See Also
    --------
    latex_to_mathml : the conversion of one formula.
    riccati_tf.app.report.write_report : the report whose certificate reasons it renders.

    References
    ----------
    .. [1] W3C, "Mathematical Markup Language (MathML) Version 3.0", 2nd ed., 2014.

    Examples
    --------
    >>> from riccati_tf.io.htmlmath import text_with_math
    >>> html = text_with_math("Σ(t) → e^{At}Σ0 for t > 0.")
    >>> html.startswith("Σ(t) → <math"), html.endswith("</math> for t &gt; 0.")
    (True, True)
    >>> "<msub><mi>&#x003A3;</mi><mrow><mn>0</mn></mrow></msub>" in html   # Σ0 as Σ₀
    True
    """
    parts, start = [], 0
    for word in _WORD.finditer(text):
        formula = word.group().rstrip(_TRAILING)
        if not _SCRIPT.search(formula):
            continue
        parts += [html.escape(text[start:word.start()]),
                  latex_to_mathml(_unicode_to_tex(formula), display=False)]
        start = word.start() + len(formula)
    return "".join(parts) + html.escape(text[start:])


def _unicode_to_tex(formula: str) -> str:
    """formula with the spellings of UNICODE_TEX replaced (longest first) and a word after
    ^ or _ set upright as one script (λ_max: the subscript "max", not m followed by ax)."""
    formula = _WORD_SCRIPT.sub(r"\1{\\mathrm{\2}}", formula)
    for plain in sorted(UNICODE_TEX, key=len, reverse=True):
        formula = formula.replace(plain, UNICODE_TEX[plain])
    return formula


def latex_to_mathml(latex: str, *, display: bool = True) -> str:
    """A <math> element for a LaTeX string (block when display is True).

    Browsers render MathML natively, so a page of equations needs no script or network. The
    environments latex2mathml leaves as rows of literal ``&`` (ARRAYS: aligned, gathered,
    alignat, eqnarray, multline, ...) are first rewritten as ``array`` (`as_arrays`), nested
    ones included; equation numbers are not drawn.

    Parameters
    ----------
    latex : str
        The LaTeX of one formula (as SymPy prints it, e.g. the moment equations
        \\dot{\\Sigma} = A\\Sigma + \\Sigma A^{\\top} + ...).
    display : bool, default True
        A block (display="block") or an inline (display="inline") element.

    Returns
    -------
    str
        The <math> element.

    Raises
    ------
    InvalidInputError
        When an environment of ARRAYS has no matching \\end.
    ImportError
        When latex2mathml is not installed.

    See Also
    --------
    text_with_math : formulas inside a plain-text sentence.
    riccati_tf.symbolic.latex.system_latex : the LaTeX of derived moment equations.

    References
    ----------
    .. [1] W3C, "Mathematical Markup Language (MathML) Version 3.0", 2nd ed., 2014.

    Examples
    --------
    >>> from riccati_tf.io.htmlmath import latex_to_mathml
    >>> print(latex_to_mathml("x^{2}", display=False).replace("><", ">\\n<"))
    <math xmlns="http://www.w3.org/1998/Math/MathML" display="inline">
    <mrow>
    <msup>
    <mi>x</mi>
    <mrow>
    <mn>2</mn>
    </mrow>
    </msup>
    </mrow>
    </math>

    An ``aligned`` environment becomes a table of right- and left-aligned cells:

    >>> block = latex_to_mathml(r"\\begin{aligned} a &= b \\\\ c &= d \\end{aligned}")
    >>> block.count("<mtr>"), 'columnalign="left"' in block
    (2, True)
    """
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
