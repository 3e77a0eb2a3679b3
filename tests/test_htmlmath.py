"""LaTeX to MathML: the aligned blocks of system_latex become tables, with no LaTeX left over."""

import html
import re
import xml.etree.ElementTree as ET

import pytest

from riccati_tf.errors import InvalidInputError
from riccati_tf.io.htmlmath import as_arrays, latex_to_mathml, text_with_math
from riccati_tf.symbolic import transformer_system
from riccati_tf.symbolic.latex import system_latex

NS = "{http://www.w3.org/1998/Math/MathML}"


def _texts(mathml: str) -> list[str]:
    root = ET.fromstring(mathml)
    return [t for element in root.iter() for t in (element.text, element.tail) if t]


def _rows(mathml: str) -> list:
    return ET.fromstring(mathml).findall(f".//{NS}mtable/{NS}mtr")


@pytest.mark.parametrize(("d", "options", "form"), [
    (2, {}, "matrix"),
    (2, {}, "entries"),
    (1, {"kernel": "dot", "ffn": "relu"}, "auto"),
])
def test_system_latex_renders_as_a_table_without_latex_left(d, options, form):
    latex = system_latex(transformer_system(d, **options), form=form)
    mathml = latex_to_mathml(latex)
    texts = _texts(mathml)
    assert not [t for t in texts if "&" in t], "an alignment point was left as text"
    assert not [t for t in texts if "\\" in t], "a LaTeX command was left as text"
    top = ET.fromstring(mathml).find(f".//{NS}mtable")  # the outermost table
    assert top is not None and len(top.findall(f"./{NS}mtr")) == latex.count(r" \\ ") + 1
    cells = top.findall(f"./{NS}mtr/{NS}mtd")
    assert {c.get("columnalign") for c in cells} == {"right", "left"}


def test_nested_and_fenced_alignments():
    latex = (r"\left(\begin{aligned}a &= \begin{aligned} b &= c \\ d &= e \end{aligned} \\ "
             r"f &= g \\\end{aligned}\right)")
    assert as_arrays(latex).count(r"\begin{array}{rl}") == 2
    mathml = latex_to_mathml(latex, display=False)
    assert 'display="inline"' in mathml
    assert not [t for t in _texts(mathml) if "&" in t or "\\" in t]
    assert len(_rows(mathml)) == 4  # two outer rows (trailing \\ dropped), two inner


def test_cases_and_escaped_ampersand():
    mathml = latex_to_mathml(r"f = \begin{cases} x & x > 0 \\ 0 & \text{else} \end{cases}")
    assert len(_rows(mathml)) == 2
    assert "&#x00026;" in latex_to_mathml(r"a \& b")  # a literal & stays a character


def test_unclosed_environment_is_named():
    with pytest.raises(InvalidInputError, match="without its"):
        latex_to_mathml(r"\begin{aligned} a &= b")


@pytest.mark.parametrize(("environment", "body"), [
    ("align*", r"a &= b \\ c &= d"),
    ("gathered", r"a = b \\ c = d"),
    ("gather", r"a = b \\ c = d"),
    ("multline", r"a = b \\ + c"),
    ("eqnarray", r"a &=& b \\ c &=& d"),
    ("alignat}{2", r"a &= b & c &= d \\ e &= f"),
    ("split", r"a &= b \\ &= d"),
])
def test_every_multiline_environment_becomes_a_table(environment, body):
    name = environment.split("}")[0]
    mathml = latex_to_mathml(rf"\begin{{{environment}}} {body} \end{{{name}}}")
    assert not [t for t in _texts(mathml) if "&" in t or "\\" in t]
    assert len(_rows(mathml)) == 2


@pytest.mark.parametrize(("text", "formulas"), [
    ("G ⪰ 0 and A is Hurwitz: Σ(t) ⪯ e^{At}Σ0e^{Aᵀt} → 0 (SPEC §5).", ["e^{At}Σ0e^{Aᵀt}"]),
    ("for x, x*Σ(t)⁻¹x = e^{−2Re λ t} x*Σ0⁻¹x → 0, on ∩_k ker(GA^k).",
     ["e^{−2Re λ t}", "∩_k", "ker(GA^k)"]),
    ("so λ_max(−W(t)Σ0) reaches 1 <b>", ["λ_max(−W(t)Σ0)"]),
    ("no formula here: Σ* = U₁P⁻¹U₁ᵀ, 2 < 3.", []),
])
def test_plain_text_formulas_become_inline_mathml(text, formulas):
    """Each word written TeX-like (with ^ or _) becomes one inline <math>; the text around it is
    escaped and kept, and no TeX markup is left in the text or in the MathML."""
    out = text_with_math(text)
    maths = re.findall(r"<math[^>]*>.*?</math>", out)
    assert len(maths) == len(formulas)
    rest = re.sub(r"<math[^>]*>.*?</math>", "\0", out)
    assert html.unescape(rest).split("\0") == _split_around(text, formulas)
    for mathml in maths:
        assert 'display="inline"' in mathml
        assert not any(mark in t for t in _texts(mathml) for mark in ("^", "_", "{", "\\"))


def _split_around(text: str, formulas: list[str]) -> list[str]:
    """text cut at each formula, in order (the independent reading of which words are math)."""
    parts = []
    for formula in formulas:
        before, text = text.split(formula, 1)
        parts.append(before)
    return [*parts, text]


def test_a_word_script_is_one_upright_script():
    mathml = re.search(r"<math.*</math>", text_with_math("so λ_max(W) = 1")).group()
    sub = ET.fromstring(mathml).find(f".//{NS}msub")
    assert "".join(sub[1].itertext()) == "max" and "".join(sub[0].itertext()) == "λ"
