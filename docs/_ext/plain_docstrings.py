"""Render the package's plain-text docstrings faithfully under reStructuredText.

The docstrings of riccati_tf write mathematics in plain text (SPEC notation): `|x|` is an
absolute value, `global_` an attribute name, `*` a product or a starred equilibrium, and an
indented block after a paragraph is a formula table laid out in columns. reStructuredText would
read these as substitutions, references, emphasis and block quotes. Before numpydoc parses a
docstring, this hook escapes those characters outside inline literals and marks each indented
block as a literal block, so the text is shown exactly as written.
"""

import re

#: runs before numpydoc (priority 500) on the raw docstring
PRIORITY = 400
#: inline literals and interpreted text (`x`, ``x``), left as they are
INLINE = re.compile(r"(``.+?``|`[^`]+`)")
#: plain-text characters with a meaning in reStructuredText: |, *, and a name's trailing _
SPECIAL = re.compile(r"([|*])|(?<=\w)_(?=[\s.,;:)\]]|$)")


def escape(text: str) -> str:
    """One line with |, * and trailing underscores escaped outside inline literals."""
    parts = INLINE.split(text)
    return "".join(p if i % 2 else SPECIAL.sub(lambda m: "\\" + m[0], p)
                   for i, p in enumerate(parts))


def indent_of(line: str) -> int:
    return len(line) - len(line.lstrip())


def plain(lines: list[str]) -> list[str]:
    """The docstring's lines with plain text escaped and indented blocks made literal."""
    out: list[str] = []
    literal_indent = None
    previous = ""
    for line in lines:
        if literal_indent is not None and (not line.strip() or indent_of(line) >= literal_indent):
            out.append(line)
            continue
        literal_indent = None
        starts_block = (line.strip() and not previous.strip() and out
                        and indent_of(line) > _paragraph_indent(out))
        if starts_block and not line.lstrip().startswith(">>>"):
            out[-1:] = ["", "::", ""]
            out.append(line)
            literal_indent = indent_of(line)
        else:
            out.append(escape(line))
        previous = line
    return out


def _paragraph_indent(out: list[str]) -> int:
    """Indentation of the last non-blank line written."""
    return next((indent_of(ln) for ln in reversed(out) if ln.strip()), 0)


def _process(app, what, name, obj, options, lines: list[str]) -> None:
    lines[:] = plain(lines)


def setup(app):
    app.connect("autodoc-process-docstring", _process, priority=PRIORITY)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
