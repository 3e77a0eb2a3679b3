"""Render the plain-text formulas of docs/SPEC.md as LaTeX (MathJax) without editing the file.

SPEC.md writes its mathematics in Unicode inside code spans and indented blocks. At build time
(`source-read`) every code span that is a formula becomes inline math, every indented block a
display, and the few formulas written in running text (`RUNNING_TEXT`) become inline math. The
translation is mechanical (`to_latex`); a character it does not know stops the build, so a new
symbol in SPEC.md cannot be rendered wrong silently.
"""

import re

#: documents whose formulas are translated
DOCUMENTS = ("SPEC",)
#: formulas SPEC.md writes in running text, outside code spans (each must occur)
RUNNING_TEXT = ("Σ(t) → Σ* = P*⁻¹ ≻ 0", "−(LᵀP + PL)", "O(N^{-1/2})")
#: a code span that names a folder of the repository, not a formula
PATH = re.compile(r"^[\w.]+/$")

SYMBOLS = {
    "Σ": r"\Sigma ", "Φ": r"\Phi ", "μ": r"\mu ", "τ": r"\tau ", "λ": r"\lambda ",
    "σ": r"\sigma ", "∇": r"\nabla ", "∂": r"\partial ", "∫": r"\int ", "∈": r"\in ",
    "⟨": r"\langle ", "⟩": r"\rangle ", "×": r"\times ", "−": "-", "·": r"\cdot ",
    "⪰": r"\succeq ", "⪯": r"\preceq ", "≻": r"\succ ", "≺": r"\prec ", "≲": r"\lesssim ",
    "∞": r"\infty ", "~": r"\sim ", "→": r"\to ", "ᵀ": r"^{\top}", "⁻¹": "^{-1}", "⁺": "^{+}",
    "²": "^{2}", "ᶜ": "^{c}", "‖": r"\|",
}
DOTTED = {"Σ̇": r"\dot{\Sigma}", "Φ̇": r"\dot{\Phi}", "σ̇": r"\dot{\sigma}", "ṁ": r"\dot{m}",
          "ẋ": r"\dot{x}", "ż": r"\dot{z}", "Ṗ": r"\dot{P}"}
OPERATORS = ("softmax", "relu", "vech", "rank", "exp", "log", "det", "div", "Re", "min")
GREEK_OR_LETTER = "ΣΦτμλσA-Za-z"


def _error(message: str) -> Exception:
    """A Sphinx ExtensionError (imported here: the translation itself needs no Sphinx)."""
    from sphinx.errors import ExtensionError

    return ExtensionError("spec_math: " + message)


def _block_matrix(match: re.Match) -> str:
    a, b, c, d = match.groups()
    return rf"\begin{{bmatrix}} {a} & {b} \\ {c} & {d} \end{{bmatrix}}"


def to_latex(text: str) -> str:
    """The LaTeX of one plain-text SPEC formula (Unicode symbols, `_`/`^{}` sub/superscripts)."""
    s = re.sub(r"\[\[(.+?), (.+?)\], \[(.+?), (.+?)\]\]", _block_matrix, text)
    s = re.sub(r"Σ_([hj]) ", r"\\sum_{\1} ", s)             # Σ_h V_h …: a sum over heads
    s = s.replace("Σ u_i", r"\sum_i u_i").replace("∂t", r"\partial_t ")
    s = re.sub(r"_(max|min)\b", r"_{\\\1}", s)
    s = re.sub(r"_([a-z]{2,})\b", r"_{\\text{\1}}", s)      # m_end, m_target
    s = re.sub(rf"(?<![\w\\])([{GREEK_OR_LETTER}])(\d|k\b|k(?=ᵀ))", r"\1_{\2}", s)  # Σ0, Lk
    s = re.sub(r"([A-Za-zΣ∞])\*(ᵀ?)", lambda m: m[1] + ("^{*\\top}" if m[2] else "^{*}"), s)
    s = s.replace("W∞", r"W_{\infty}")
    s = re.sub(r"(?<![\^_\\\w])\{(.*)\}", r"\\{\1\\}", s)  # a set {…}, not a TeX group
    s = re.sub(r"\bR\^", r"\\mathbb{R}^", s)
    s = re.sub(r"\bN\(", r"\\mathcal{N}(", s)
    s = re.sub(r"\bE\[", r"\\mathbb{E}[", s)
    s = re.sub(r"\b(SO|GL)\b", r"\\mathrm{\1}", s)
    s = re.sub(r"/scale\b", r"/\\text{scale}", s)
    s = re.sub(rf"(?<![\\{{])\b({'|'.join(OPERATORS)})(?=\b|_)", r"\\operatorname{\1}", s)
    for plain, tex in DOTTED.items():
        s = s.replace(plain, tex)
    for plain, tex in SYMBOLS.items():
        s = s.replace(plain, tex)
    s = re.sub(r"\^\{([^{}]*)\}\^\{([^{}]*)\}", r"^{\1\2}", s)   # X^{*}^{-1} → X^{*-1}
    left = sorted({c for c in s if ord(c) > 127})
    if left:
        raise _error(f"no LaTeX for {left} in formula {text!r}")
    return re.sub(r" +", " ", s).strip()


def display(block: str) -> str:
    """A display formula: columns separated by runs of spaces, a trailing (remark) as text."""
    formula, _, remark = re.match(r"(.*?)(\s{4,}\((.*)\))?$", block.strip()).group(1, 2, 3)
    parts = [to_latex(p) for p in re.split(r"\s{3,}", formula)]
    tex = r" \qquad ".join(parts)
    if remark:
        words = re.split(r"(Σ0)", remark)
        text = "".join(f"${to_latex(w)}$" if w == "Σ0" else w for w in words)
        tex += rf" \qquad \text{{({text})}}"
    return tex


def _indented_block(match: re.Match) -> str:
    indent = match.group(1)[:-4]
    lines = [line.strip() for line in match.group(0).splitlines() if line.strip()]
    body = " \\\\\n".join(f"{indent}{display(line)}" for line in lines)
    if len(lines) > 1:                      # aligned at the first "="
        body = re.sub(r"(?m)^(\s*[^=\n]*?) = ", r"\1 &= ", body)
        body = f"{indent}\\begin{{aligned}}\n{body}\n{indent}\\end{{aligned}}"
    return f"{indent}$$\n{body}\n{indent}$$\n"


def _code_span(match: re.Match) -> str:
    code = match.group(1)
    return match.group(0) if PATH.match(code) else f"${to_latex(code)}$"


def render(source: str) -> str:
    """SPEC.md with its formulas as MyST math ($…$ and $$…$$)."""
    for formula in RUNNING_TEXT:
        if formula not in source:
            raise _error(f"running-text formula {formula!r} not in SPEC.md")
    out = re.sub(r"(?m)(?<=\n\n)( {4,})\S.*\n(?:\1\S.*\n)*", _indented_block, source)
    out = re.sub(r"`([^`]+)`", _code_span, out)
    for formula in RUNNING_TEXT:
        out = out.replace(formula, f"${to_latex(formula)}$")
    return out


def equations(solved: dict[str, tuple[str, ...]], source: str) -> dict[str, str]:
    """{object: one-line LaTeX display} of the SPEC formulas each object solves; every formula
    must occur verbatim in SPEC.md (so the API pages cannot quote a formula SPEC dropped)."""
    missing = [f for formulas in solved.values() for f in formulas if f not in source]
    if missing:
        raise _error(f"formulas not in SPEC.md: {missing}")
    latex = {}
    for name, formulas in solved.items():
        lines = [to_latex(f) for f in formulas]
        if len(lines) > 1:
            rows = r" \\ ".join(re.sub(r"^([^=]*?) = ", r"\1 &= ", ln, count=1) for ln in lines)
            latex[name] = rf"\begin{{aligned}} {rows} \end{{aligned}}"
        else:
            latex[name] = lines[0]
    return latex


def _source_read(app, docname: str, source: list[str]) -> None:
    if docname in DOCUMENTS:
        source[0] = render(source[0])


def setup(app):
    app.connect("source-read", _source_read)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
