"""Render the package's plain-text docstrings under reStructuredText, formulas typeset.

The docstrings of riccati_tf write mathematics in plain text (SPEC notation): `|x|` is an
absolute value, `global_` an attribute name, `*` a product or a starred equilibrium, and an
indented block after a paragraph is a formula or a table laid out in columns.
reStructuredText would read these as substitutions, references, emphasis and block quotes.
Before numpydoc parses a docstring, this hook escapes those characters outside inline literals
and doctests, and turns each indented block into

* display math (``.. math::``, translated by spec_math.to_latex) when it is a formula: every
  line states a relation (``=``, ``≤``, ``≥``, ``≈``, ``≠``, ``<``, ``>``, ``⪯``, ``⪰``, ``≺``,
  ``≻``, ``→``, ``⇒``) before its first gap of two or more spaces, so a line opening with a
  label column (``CARE   Aᵀ X …``, ``mean error  …``) makes the block a table; and every
  column of every line translates (no code such as ``#``, quotes, ``->`` or ``name=value``,
  no character spec_math does not know). Columns (gaps of three or more spaces) are set side
  by side, or, in a long line, each column stating a relation (not a parenthesised remark)
  on a row of its own; rows are aligned at their first relation;
* otherwise a plain-text literal block (``.. code-block:: text``: not highlighted as Python;
  docs/_static/docstrings.css wraps it rather than cutting it off).

In running text, a formula holding a dotted symbol (``Σ̇``, ``ṁ``), ``^{``, ``_{`` or ``∫``
becomes inline math (``:math:``): the words around that symbol up to the first word of prose
(three letters or more, or a short word such as "in", "on"; an operator such as "log" is not
prose), a clause's comma outside brackets, or a line break that no operator continues. When
that does not translate or its brackets do not balance, the longest translatable part holding
the symbol is taken, or nothing: it stays text. Doctests (``>>>``) are left as they are.
A line that opens with a parameter or field name of the object and a colon (``params: …``,
``max_steps: …``) starts a paragraph, as it does in the source.
"""

import inspect
import re
import unicodedata

import spec_math

#: runs before numpydoc (priority 500) on the raw docstring
PRIORITY = 400
#: inline literals and interpreted text (`x`, ``x``), left as they are
INLINE = re.compile(r"(``.+?``|`[^`]+`)")
#: plain-text characters with a meaning in reStructuredText: |, *, and a name's trailing _
SPECIAL = re.compile(r"([|*])|(?<=\w)_(?=[\s.,;:)\]]|$)")
#: a line describing fields: `name: …` or `name, other: …` at the start of the line
FIELD = re.compile(r"^([A-Za-z_]\w*(?:, [A-Za-z_]\w*)*): \S")
#: a numpydoc section underline: such docstrings keep their structure as written
SECTION = re.compile(r"^\s*-{3,}\s*$")
#: a relation sign: a line of a formula states one before its first gap of 2+ spaces
RELATION = re.compile(r"[=≤≥≈≠<>⪯⪰≺≻→⇒]")
#: the gap between the columns of a formula line
COLUMN_GAP = re.compile(r"\s{3,}")
#: a parenthesised remark after a formula: "(equality for G = 0: the linear flow)."
REMARK = re.compile(r"^\(.*\)[.,;]?$")
#: a formula line longer than this (characters) sets its columns one under the other
LONG_LINE = 64
#: what makes a running-text formula: a dotted symbol, a TeX sub/superscript group, ∫
TRIGGER = re.compile("\u0307|\\^\\{|_\\{|∫")
#: a word that makes a token prose, not part of a running-text formula
PROSE_WORD = re.compile(rf"(?<![\w_^{{\\])(?:{spec_math.WORD})(?![\w(])")
#: what neither starts nor ends a formula: a relation sign or arrow with one side missing
ENDS = "=≤≥≈≠<>⪯⪰≺≻→⇒↦∝"
#: a line ending or starting with one of these continues a running-text formula across lines
CONTINUES = ENDS + "+−-·×/∘⊗"
#: the first relation in a translated formula line (where aligned rows align)
TEX_RELATION = re.compile(r" (=|\\le|\\ge|\\approx|\\ne|\\preceq|\\succeq|\\prec|\\succ|\\to|<|>) ")


def escape(text: str) -> str:
    """One line with |, * and trailing underscores escaped outside inline literals."""
    parts = INLINE.split(text)
    return "".join(p if i % 2 else SPECIAL.sub(lambda m: "\\" + m[0], p)
                   for i, p in enumerate(parts))


def indent_of(line: str) -> int:
    return len(line) - len(line.lstrip())


def field_names(obj) -> set[str]:
    """Names a docstring of `obj` may describe line by line: parameters, fields, annotations."""
    names = set(getattr(obj, "__annotations__", None) or ())
    names |= set(getattr(obj, "__dataclass_fields__", None) or ())
    try:
        names |= set(inspect.signature(obj).parameters)
    except (TypeError, ValueError):
        pass
    return names


def _starts_field(line: str, names: set[str]) -> bool:
    match = FIELD.match(line)
    return bool(match) and set(match[1].split(", ")) <= names


# --- indented blocks: display math or plain text ----------------------------------------------

def formula_latex(block: list[str]) -> str | None:
    """The LaTeX display of an indented block when it is a formula (see the module docstring),
    else None."""
    lines = [ln.strip() for ln in block if ln.strip()]
    if not lines or not all(RELATION.search(re.split(r"\s{2,}", ln)[0]) for ln in lines):
        return None
    rows = []
    try:
        for line in lines:
            columns = COLUMN_GAP.split(line)
            row = [spec_math.to_latex(columns[0])]
            for column in columns[1:]:     # a column stating no relation is a remark
                if len(line) > LONG_LINE and RELATION.search(column) and not REMARK.match(column):
                    rows.append(r" \qquad ".join(row))
                    row = []
                row.append(spec_math.to_latex(column))
            rows.append(r" \qquad ".join(row))
    except Exception:           # spec_math's ExtensionError: not (translatable) mathematics
        return None
    if len(rows) == 1:
        return rows[0]
    aligned = [TEX_RELATION.sub(lambda m: " &" + m[0].lstrip(), r, count=1)
               if TEX_RELATION.search(r) else "& " + r for r in rows]
    return "\\begin{aligned}\n" + " \\\\\n".join(aligned) + "\n\\end{aligned}"


def _block(block: list[str], indent: str) -> list[str]:
    """The reStructuredText of an indented block: a math directive or a plain-text literal."""
    while block and not block[-1].strip():
        block = block[:-1]
    tex = formula_latex(block)
    if tex is not None:
        return [f"{indent}.. math::", "", *(f"{indent}   {ln}" for ln in tex.splitlines()), ""]
    return [f"{indent}.. code-block:: text", "", *block, ""]


# --- running text: inline math --------------------------------------------------------------

def _triggers(token: str) -> bool:
    return bool(TRIGGER.search(unicodedata.normalize("NFD", token)))


def _is_prose(token: str) -> bool:
    core = token.strip(".,;:()[]\"'")
    if not core or '"' in token or "`" in token or "§" in token:
        return True
    words = [w for w in PROSE_WORD.findall(core) if w not in spec_math.OPERATORS]
    return bool(words) and not _triggers(core)


def _balanced(text: str) -> bool:
    depth = {"(": 0, "[": 0, "{": 0}
    close = {")": "(", "]": "[", "}": "{"}
    for c in text:
        if c in depth:
            depth[c] += 1
        elif c in close:
            depth[close[c]] -= 1
            if depth[close[c]] < 0:
                return False
    return not any(depth.values())


def _trim(span: str) -> tuple[int, int]:
    """(start, end) offsets of a formula inside its span of tokens: a clause's punctuation and an
    unmatched opening or closing bracket at either end stay text."""
    start, end = 0, len(span)
    changed = True
    while changed and start < end:
        changed = False
        while start < end and (span[start] in ENDS or span[start].isspace()):
            start += 1
        while end > start and (span[end - 1] in ".,;:" + ENDS or span[end - 1].isspace()):
            end -= 1
            changed = True
        if span[start] in "([" and not _balanced(span[start:end]) \
                and _balanced(span[start + 1:end]):
            start += 1
            changed = True
        if end > start and span[end - 1] in ")]" and not _balanced(span[start:end]) \
                and _balanced(span[start:end - 1]):
            end -= 1
            changed = True
    return start, end


def _unmatched(text: str) -> tuple[int, int]:
    """(opening, closing) brackets of `text` left unmatched."""
    stack: list[str] = []
    closing = 0
    for c in text:
        if c in "([{":
            stack.append(c)
        elif c in ")]}":
            if stack:
                stack.pop()
            else:
                closing += 1
    return len(stack), closing


def _translate(text: str, tokens: list, first: int, last: int, i: int) -> tuple | None:
    """(start, end, LaTeX) of the longest formula among tokens first..last that holds token i:
    trimmed (_trim), balanced and translatable; None when there is none."""
    for f in range(first, i + 1):
        for ln in range(last, i - 1, -1):
            begin, end = tokens[f][0], tokens[ln][1]
            a, b = _trim(text[begin:end])
            formula = " ".join(text[begin + a:begin + b].split())
            if not formula or not _balanced(formula):
                continue
            try:
                return begin + a, begin + b, spec_math.to_latex(formula)
            except Exception:   # not translatable
                continue
    return None


def _joins(text: str, left: tuple, right: tuple) -> bool:
    """Whether two neighbouring tokens can belong to one formula: on one line, or the line
    ends or the next one starts with an operator (the formula continues)."""
    return "\n" not in text[left[1]:right[0]] or left[2][-1] in CONTINUES \
        or right[2][0] in CONTINUES


def _formula_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, LaTeX) of the running-text formulas of `text` (no inline literal in it):
    from a token holding a trigger, the tokens that are not prose on either side, up to a
    clause's comma or stop outside brackets."""
    tokens = [(m.start(), m.end(), m[0]) for m in re.finditer(r"\S+", text)]
    spans: list[tuple[int, int, str]] = []
    i = 0
    while i < len(tokens):
        if not _triggers(tokens[i][2]) or _is_prose(tokens[i][2]):
            i += 1
            continue
        first = last = i
        floor = spans[-1][3] + 1 if spans else 0
        while first > floor and not _is_prose(tokens[first - 1][2]):
            inside = text[tokens[first][0]:tokens[i][1]]
            if not _unmatched(inside)[1] and (tokens[first - 1][2][-1] in ",;:." or
                                              not _joins(text, tokens[first - 1], tokens[first])):
                break
            first -= 1
        while last + 1 < len(tokens) and not _is_prose(tokens[last + 1][2]):
            inside = text[tokens[i][0]:tokens[last][1]]
            if not _unmatched(inside)[0] and (tokens[last][2][-1] in ",;." or
                                              not _joins(text, tokens[last], tokens[last + 1])):
                break
            last += 1
        found = _translate(text, tokens, first, last, i)
        if found:
            i = next((k for k in range(i, len(tokens)) if tokens[k][0] >= found[1]), len(tokens))
            spans.append((*found, i - 1))
        else:
            i += 1
    return [span[:3] for span in spans]


def inline_math(text: str) -> str:
    """A paragraph (lines joined by newlines) with its running-text formulas as :math: roles and
    the rest escaped."""
    out = []
    for i, part in enumerate(INLINE.split(text)):
        if i % 2:
            out.append(part)
            continue
        pos = 0
        for start, end, tex in _formula_spans(part):
            out.append("\n".join(escape(ln) for ln in part[pos:start].split("\n")))
            out.append(f":math:`{tex}`")
            pos = end
        out.append("\n".join(escape(ln) for ln in part[pos:].split("\n")))
    return "".join(out)


def _paragraphs(lines: list[str], text: list[bool]) -> list[str]:
    """The lines, each run of running-text lines of one indentation processed by inline_math."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        if not text[i]:
            out.append(lines[i])
            i += 1
            continue
        j = i + 1
        while j < len(lines) and text[j] and indent_of(lines[j]) == indent_of(lines[i]):
            j += 1
        out += inline_math("\n".join(lines[i:j])).split("\n")
        i = j
    return out


def plain(lines: list[str], names: set[str] = frozenset()) -> list[str]:
    """The docstring's lines with plain text escaped and its formulas typeset, indented blocks
    made display math or plain-text literals, and a paragraph started at each line describing
    one of `names`."""
    out: list[str] = []
    text: list[bool] = []          # out[k] is running text (escaped later, formulas found)
    if any(SECTION.match(line) for line in lines):
        names = frozenset()
    previous = ""
    k = 0
    while k < len(lines):
        line = lines[k]
        starts_block = (line.strip() and not previous.strip() and out
                        and indent_of(line) > _paragraph_indent(out))
        if line.lstrip().startswith(">>>"):        # a doctest, up to the next blank line
            while k < len(lines) and lines[k].strip():
                out.append(lines[k])
                text.append(False)
                k += 1
            previous = ""
            continue
        if starts_block:
            level = indent_of(line)
            block = []
            while k < len(lines) and (not lines[k].strip() or indent_of(lines[k]) >= level):
                block.append(lines[k])
                k += 1
            new = _block(block, " " * _paragraph_indent(out))
            out += new
            text += [False] * len(new)
            previous = block[0]        # no block starts right after a block
            continue
        if previous.strip() and _starts_field(line, names):
            out.append("")
            text.append(False)
        out.append(line)
        text.append(bool(line.strip()) and not SECTION.match(line))
        previous = line
        k += 1
    return _paragraphs(out, text)


def _paragraph_indent(out: list[str]) -> int:
    """Indentation of the last non-blank line written."""
    return next((indent_of(ln) for ln in reversed(out) if ln.strip()), 0)


def _process(app, what, name, obj, options, lines: list[str]) -> None:
    lines[:] = plain(lines, field_names(obj) if callable(obj) else set())


def setup(app):
    app.connect("autodoc-process-docstring", _process, priority=PRIORITY)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
