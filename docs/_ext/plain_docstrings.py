"""Render the package's plain-text docstrings faithfully under reStructuredText.

The docstrings of riccati_tf write mathematics in plain text (SPEC notation): `|x|` is an
absolute value, `global_` an attribute name, `*` a product or a starred equilibrium, and an
indented block after a paragraph is a formula table laid out in columns. reStructuredText would
read these as substitutions, references, emphasis and block quotes. Before numpydoc parses a
docstring, this hook escapes those characters outside inline literals and marks each indented
block as a literal block, so the text is shown exactly as written. A line that opens with a
parameter or field name of the object and a colon (`params: …`, `max_steps: …`) starts a
paragraph, as it does in the source.
"""

import inspect
import re

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


def plain(lines: list[str], names: set[str] = frozenset()) -> list[str]:
    """The docstring's lines with plain text escaped, indented blocks made literal and a
    paragraph started at each line describing one of `names`."""
    out: list[str] = []
    if any(SECTION.match(line) for line in lines):
        names = frozenset()
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
            if previous.strip() and _starts_field(line, names):
                out.append("")
            out.append(escape(line))
        previous = line
    return out


def _paragraph_indent(out: list[str]) -> int:
    """Indentation of the last non-blank line written."""
    return next((indent_of(ln) for ln in reversed(out) if ln.strip()), 0)


def _process(app, what, name, obj, options, lines: list[str]) -> None:
    lines[:] = plain(lines, field_names(obj) if callable(obj) else set())


def setup(app):
    app.connect("autodoc-process-docstring", _process, priority=PRIORITY)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
