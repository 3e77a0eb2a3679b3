"""Render the plain-text formulas of docs/SPEC.md as LaTeX (MathJax) without editing the file.

SPEC.md writes its mathematics in Unicode inside code spans and indented blocks. At build time
(`source-read`) every code span that is a formula becomes inline math, every indented block a
display, and the few formulas written in running text (`RUNNING_TEXT`) become inline math. The
translation is mechanical (`to_latex`); a character it does not know stops the build, so a new
symbol in SPEC.md cannot be rendered wrong silently.
"""

import re
import unicodedata

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
    "∞": r"\infty ", "~": r"\sim ", "→": r"\to ", "ᵀ": r"^{\top}", "ᶜ": "^{c}", "‖": r"\|",
    # the docstrings' symbols
    "α": r"\alpha ", "β": r"\beta ", "γ": r"\gamma ", "δ": r"\delta ", "ε": r"\varepsilon ",
    "ζ": r"\zeta ", "η": r"\eta ", "θ": r"\theta ", "κ": r"\kappa ", "ν": r"\nu ",
    "ξ": r"\xi ", "π": r"\pi ", "ρ": r"\rho ", "φ": r"\varphi ", "χ": r"\chi ", "ψ": r"\psi ",
    "ω": r"\omega ", "Γ": r"\Gamma ", "Δ": r"\Delta ", "Θ": r"\Theta ", "Λ": r"\Lambda ",
    "Π": r"\Pi ", "Ψ": r"\Psi ", "Ω": r"\Omega ", "ℓ": r"\ell ",
    "≤": r"\le ", "≥": r"\ge ", "≈": r"\approx ", "≠": r"\ne ", "⋚": r"\lesseqgtr ",
    "∘": r"\circ ", "⊗": r"\otimes ", "⇒": r"\Rightarrow ", "↦": r"\mapsto ", "∩": r"\cap ",
    "∪": r"\cup ", "⊆": r"\subseteq ", "⊂": r"\subset ", "∀": r"\forall ", "∃": r"\exists ",
    "±": r"\pm ", "∓": r"\mp ", "∝": r"\propto ", "⋯": r"\cdots ", "∏": r"\prod ",
    "½": r"\tfrac{1}{2}", "…": r"\ldots ", "–": "-",
}
#: combining accents (Σ̇, ṁ, m̂, b̄ and their precomposed forms) and their TeX
ACCENTS = {"\u0307": "dot", "\u0302": "hat", "\u0304": "bar", "\u0303": "tilde"}
#: superscript and subscript characters, written as ^{…} and _{…}
SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")
SUBSCRIPTS = str.maketrans("₀₁₂₃₄₅₆₇₈₉₋₊", "0123456789-+")
OPERATORS = ("softmax", "relu", "vech", "vec", "rank", "expm", "exp", "log", "det", "div", "Re",
             "min", "max", "diag", "tr", "Cov", "ker", "sqrt", "sup", "inf", "conj")
GREEK_OR_LETTER = "ΣΦτμλσA-Za-z"
#: ASCII that is code, not mathematics: a formula holding one of these is not translated
CODE = re.compile(r"""[#"$%&\\`@]|->|==|\b__\w|\b\w+=\w""")
#: a word of prose inside a formula ("in each phase", "(row-major vec)"): three letters or
#: more (a capital at most first), or one of the short words; runs of them become \text{…}
SHORT_WORDS = ("in", "on", "of", "at", "as", "if", "or", "is", "by", "to", "an", "be", "so", "up",
               "go", "it", "no", "we")
WORD = (r"(?:(?:[A-Z][a-z]{2,}|[a-z]{3,}|[A-Z]{3,})(?:'[a-z]+)?(?:-[A-Za-z]+)*|"
        + "|".join(SHORT_WORDS) + ")")
PROSE = re.compile(rf"( ?)(?<![\\{{\w_^])({WORD}(?:[ ,:]+{WORD})*)(?![A-Za-z0-9{{(])( ?)")


def _error(message: str) -> Exception:
    """A Sphinx ExtensionError (imported here: the translation itself needs no Sphinx)."""
    from sphinx.errors import ExtensionError

    return ExtensionError("spec_math: " + message)


def _block_matrix(match: re.Match) -> str:
    a, b, c, d = match.groups()
    return rf"\begin{{bmatrix}} {a} & {b} \\ {c} & {d} \end{{bmatrix}}"


def _sum(match: re.Match) -> str:
    """Σ_h, Σ_{k ≥ 1} as a sum when the term after it carries the index (Σ_h V_h, Σ_k a_k²);
    else a covariance with a subscript (Σ_k Φᵀ, Σ_i / …)."""
    index = re.match(r"\{?(\w+)", match[1])[1]
    term = re.match(r"\s?(\S*)", match.string[match.end():])[1]
    if any(re.search(rf"_\S*{i}", term) for i in index):
        return r"\sum_{" + match[1].strip("{}") + "}"
    return match[0]


def _decomposed(c: str) -> str:
    """A precomposed accented letter (ṁ, â) as letter + combining accent; others unchanged."""
    nfd = unicodedata.normalize("NFD", c)
    return nfd if set(nfd) & set(ACCENTS) else c


def _accent(match: re.Match) -> str:
    base = match[1]
    return rf"\{ACCENTS[match[2]]}{{{SYMBOLS.get(base, base).strip()}}}"


def _prose(match: re.Match) -> str:
    before, words, after = match.groups()
    if all(w in OPERATORS for w in re.split(r"[ ,:]+", words)):
        return match[0]
    return rf"\text{{{before}{words}{after}}}"


def to_latex(text: str) -> str:
    """The LaTeX of one plain-text SPEC formula (Unicode symbols, `_`/`^{}` sub/superscripts).

    Words of prose inside it ("in each phase", "(equality for G = 0)") are set as text; code
    (#, quotes, `->`, `name=value`) and a character without a translation raise."""
    if CODE.search(text):
        raise _error(f"code, not a formula: {text!r}")
    s = "".join(_decomposed(c) for c in text)
    s = re.sub("[⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺]+", lambda m: "^{" + m[0].translate(SUPERSCRIPTS) + "}", s)
    s = re.sub("[₀₁₂₃₄₅₆₇₈₉₋₊]+", lambda m: "_{" + m[0].translate(SUBSCRIPTS) + "}", s)
    s = re.sub(r"\b([A-Z][A-Z0-9]+(?:_[A-Z0-9]+)+)\b",         # a constant: STEP_KAPPA
               lambda m: r"\mathrm{" + m[1].replace("_", r"\_") + "}", s)
    s = re.sub(r"\[\[(.+?), (.+?)\], \[(.+?), (.+?)\]\]", _block_matrix, s)
    s = re.sub(r"√\(([^()]*(?:\([^()]*\)[^()]*)*)\)", r"\\sqrt{\1}", s)
    s = re.sub(r"√((?:[\w!]+|\{[^{}]*\})+)", r"\\sqrt{\1}", s)  # √p₊: p_{+} whole
    s = re.sub(r"Σ_([hijks]{1,2}|\{[^{}]*[=≤≥∈<>][^{}]*\})(?=[\s(])", _sum, s)
    s = re.sub(r"Π_(\w)", r"\\prod_{\1}", s)
    s = re.sub(r"∩_(\w)", r"\\bigcap_{\1}", s)
    s = s.replace("Σ u_i", r"\sum_i u_i").replace("∂t", r"\partial_t ")
    s = re.sub(r"_(max|min)\b", r"_{\\\1}", s)
    s = re.sub(r"_([A-Za-z]),([a-z])(?![A-Za-z0-9])", r"_{\1,\2}", s)   # W_K,h: key of head h
    s = re.sub(r"_([hijkls]{2,4})(?![A-Za-z0-9])", r"_{\1}", s)          # ρ_ij, T_ijkl: indices
    s = re.sub(r"_([a-z]{2,})(?![A-Za-z0-9])", r"_{\\text{\1}}", s)      # m_end, m_target
    s = re.sub(r"(?<![\w\\{_])([A-Za-z])(\d|k\b|k(?=ᵀ))", r"\1_{\2}", s)     # Lk, f0
    s = re.sub(r"(?<!\\)([ΣΦτμλσ])(\d|k\b|k(?=ᵀ))", r"\1_{\2}", s)          # Σ0, SΣ0
    s = re.sub(r"([A-Za-zΣ∞])\*(ᵀ?)", lambda m: m[1] + ("^{*\\top}" if m[2] else "^{*}"), s)
    s = s.replace("W∞", r"W_{\infty}")
    s = re.sub(r"(?<![\^_\\\w])\{(.*)\}", r"\\{\1\\}", s)  # a set {…}, not a TeX group
    s = re.sub(r"\bR\^", r"\\mathbb{R}^", s)
    s = re.sub(r"\bN\(", r"\\mathcal{N}(", s)
    s = re.sub(r"(?<![A-Za-z\\])E\[", r"\\mathbb{E}[", s)
    s = re.sub(r"\b(SO|GL)\b", r"\\mathrm{\1}", s)
    s = re.sub(r"/scale\b", r"/\\text{scale}", s)
    s = re.sub(rf"(?<![\\\w])(?<!operatorname\{{)(?<!text\{{)({'|'.join(OPERATORS)})(?=\b|_)",
               r"\\operatorname{\1}", s)
    s = re.sub(f"(\\S)([{''.join(ACCENTS)}])", _accent, s)
    for plain, tex in SYMBOLS.items():
        s = s.replace(plain, tex)
    while re.search(r"\^\{([^{}]*)\}\^\{([^{}]*)\}", s):        # X^{*}^{-1} → X^{*-1}
        s = re.sub(r"\^\{([^{}]*)\}\^\{([^{}]*)\}", r"^{\1\2}", s)
    s = PROSE.sub(_prose, s)
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
