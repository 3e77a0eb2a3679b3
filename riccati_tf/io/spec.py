"""Spec files for the command line: JSON or YAML, matrices as nested lists.

    params:  {A: [[..]], B: [[..]], V: [[..]], b: [..]}    # or heads: [{V: .., B: ..}, ...]
    initial: {mean: [..], cov: [[..]]}
    t_final: 5.0

Every problem is reported as one `SpecError` naming the field (`params.A: must be a square
matrix, got shape (2, 3)`). Strings are never evaluated: numbers and lists only.

Reading is strict and bounded, whatever the file holds:

- a regular file (a folder, named pipe, device or socket is refused before anything is read:
  a FIFO without a writer would block for ever, /dev/zero never ends; `files.read_regular`);
- at most MAX_SPEC_BYTES bytes of UTF-8 text (a byte-order mark is allowed), not empty;
- JSON as RFC 8259 has it: no NaN / Infinity literals, no key twice in one object;
- YAML by the YAML 1.2 core schema (``1e3``, ``1E3``, ``.5``, ``-2e-3`` are floats, ``0o17`` and
  ``0x1F`` integers, only true/false are booleans, no timestamps, no ``<<`` merge keys), the
  safe constructors only (no Python objects), no key twice in one mapping, at most
  MAX_YAML_ALIASES aliases (``*name``; a "billion laughs" document is refused);
- nested at most MAX_SPEC_DEPTH deep, at most MAX_SPEC_NODES values with aliases expanded,
  mapping keys are strings, and no number beyond the float range (JSON ``1e400``, an integer
  with 400 digits): these are refused at load time, naming the field;
- the spec is a mapping.

The parse helpers then check, before any array is allocated, that numbers are numbers (not
strings, booleans or null), finite, and that matrices and vectors have at most MAX_DIM rows
(and columns) and that heads lists hold at most MAX_HEADS heads. Unknown keys are refused at
every level by `check_keys`, with the closest allowed key as a suggestion. (A flow spec's
piecewise `schedule` is read by `app.schedule` with these helpers.)
"""

from __future__ import annotations

import difflib
import json
import math
import re
import sys
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from ..errors import InvalidInputError
from ..state.params import Gaussian, Params
from .files import read_regular

__all__ = ["MAX_DIM", "MAX_HEADS", "MAX_SPEC_BYTES", "MAX_SPEC_DEPTH",
           "MAX_SPEC_NODES", "MAX_YAML_ALIASES", "escape_controls", "load_spec", "one_line"]

_T = TypeVar("_T")

#: largest spec file read, in bytes
MAX_SPEC_BYTES = 8 * 1024 * 1024
#: deepest nesting of mappings and lists in a spec (a matrix inside params is at depth 3)
MAX_SPEC_DEPTH = 16
#: most values (mappings, lists and scalars) in a spec, counted with YAML aliases expanded
MAX_SPEC_NODES = 2_000_000
#: most YAML aliases (``*name``) in one spec
MAX_YAML_ALIASES = 32
#: largest dimension d of a matrix or a vector in a spec
MAX_DIM = 64
#: most attention heads in a spec
MAX_HEADS = 32
#: largest magnitude of a float (numbers beyond it are refused, not rounded to inf)
FLOAT_MAX = sys.float_info.max


#: Unicode categories escaped in messages (`escape_controls`): controls (C0, DEL, C1), format
#: characters (bidirectional overrides and isolates, zero-width ones, the byte-order mark),
#: surrogates, private use, unassigned code points, line and paragraph separators
ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def escape_controls(text: str) -> str:
    r"""`text` with every control, format, bidirectional, private-use, unassigned and separator
    character written as its escape (\x00, \u202e, \n), so that a message quoting a spec's keys
    or a path shows them instead of acting on the terminal.

    A key or file name from a spec may hold NUL, ESC (terminal escape sequences), a line break
    or the right-to-left override U+202E (which displays the rest of the line reversed); each
    character of a category in ESCAPED_CATEGORIES is replaced by its Python escape, every
    other character (letters of any script, mathematical symbols, the space) is kept.

    Parameters
    ----------
    text : str
        The message.

    Returns
    -------
    str
        The message with those characters escaped.

    Raises
    ------
    TypeError
        Never for a str (text is not checked otherwise).

    See Also
    --------
    one_line : one terminal line of a message, with this escaping.

    References
    ----------
    .. [1] The Unicode Standard, §4.5 "General Category"; Unicode Standard Annex #9
       "Unicode Bidirectional Algorithm" (the override U+202E and the isolates).

    Examples
    --------
    >>> from riccati_tf.io.spec import escape_controls
    >>> print(escape_controls("params.\u202eevil\x00\x1b[31m: unknown field; Σ ⪰ 0"))
    params.\u202eevil\x00\x1b[31m: unknown field; Σ ⪰ 0
    """
    if text.isprintable():  # nothing to escape (the common case)
        return text
    return "".join(c.encode("unicode_escape").decode("ascii")
                   if unicodedata.category(c) in ESCAPED_CATEGORIES else c for c in text)


def one_line(text: str) -> str:
    r"""`text` as one line for a terminal: runs of ASCII whitespace (spaces, tabs, line breaks
    of the message's own layout) become one space, and every other control, format,
    bidirectional or separator character is escaped (`escape_controls`), U+0085 and U+2028
    included, so that nothing quoted from a spec or an argument is lost or acts on the terminal.

    Parameters
    ----------
    text : str
        The message.

    Returns
    -------
    str
        One line.

    Raises
    ------
    TypeError
        Never for a str (text is not checked otherwise).

    See Also
    --------
    escape_controls : the escaping.
    riccati_tf.app.cli.main : prints every refusal through it.

    References
    ----------
    .. [1] The Unicode Standard, §4.5 "General Category".

    Examples
    --------
    >>> from riccati_tf.io.spec import one_line
    >>> print(one_line("unrecognized arguments:\n  --bogus\u2028\u202e"))
    unrecognized arguments: --bogus\u2028\u202e
    """
    return escape_controls(_ASCII_SPACE.sub(" ", text).strip(" "))


_ASCII_SPACE = re.compile(r"[ \t\n\r\f\v]+")


class SpecError(InvalidInputError):
    """A spec that lacks a field or holds an invalid value; the message names the field (with
    control and bidirectional characters of keys and paths escaped, `escape_controls`)."""

    def __init__(self, message: str = "", *args: object) -> None:
        super().__init__(escape_controls(str(message)), *args)


def brief(value: object, width: int = 60) -> str:
    """repr(value) cut to `width` characters (a spec value quoted in a message)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10 ** 30:
        digits = int(abs(value).bit_length() * math.log10(2)) + 1  # str() is refused > 4300
        return f"{'-' if value < 0 else ''}≈1e{digits - 1} ({digits} digits)"
    text = repr(value)
    return text if len(text) <= width else text[:width - 1] + "…"


# --- reading ---------------------------------------------------------------------------------


class _BadValue:
    """A value the parser met but refuses; the tree check reports it with its field."""

    __slots__ = ("message",)

    def __init__(self, message: str):
        self.message = message

    def __repr__(self) -> str:
        return f"<{self.message}>"


class _DuplicateKeys(dict):
    """A mapping in which `duplicate` appeared twice (the tree check reports it)."""

    duplicate: Any = None


def _json_constant(name: str) -> _BadValue:
    return _BadValue(f"{name} is not a number in JSON (JSON has no NaN or Infinity); give a "
                     f"finite number")


def _json_float(text: str) -> float | _BadValue:
    value = float(text)
    if math.isinf(value):
        return _BadValue(f"{brief(text)} is beyond the float range (±{FLOAT_MAX:.3g})")
    return value


def _json_object(pairs: list[tuple[str, Any]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            dup = _DuplicateKeys(out)
            dup.duplicate = key
            return dup
        out[key] = value
    return out


@cache
def _yaml_loader() -> type:
    """A YAML loader class: the safe constructors, YAML 1.2 core-schema scalars, duplicate keys
    recorded (libyaml's C parser when available)."""
    import yaml

    base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class SpecLoader(base):
        yaml_implicit_resolvers: ClassVar[dict] = {}

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            if not isinstance(node, yaml.MappingNode):
                return super().construct_mapping(node, deep=deep)
            out: dict = {}
            for key_node, value_node in node.value:
                key = self.construct_object(key_node, deep=deep)
                try:
                    hash(key)
                except TypeError:
                    raise yaml.constructor.ConstructorError(
                        None, None, "found an unhashable key (a list or mapping as a key)",
                        key_node.start_mark) from None
                if key in out:
                    dup = _DuplicateKeys(out)
                    dup.duplicate = key
                    return dup
                out[key] = self.construct_object(value_node, deep=deep)
            return out

        def construct_yaml_map(self, node: Any) -> Iterator[Any]:
            yield self.construct_mapping(node, deep=True)

    def construct_int(loader: Any, node: Any) -> int:
        text = loader.construct_scalar(node)
        sign = -1 if text.startswith("-") else 1
        body = text.lstrip("+-")
        if body[:2] in ("0o", "0x"):
            return sign * int(body[2:], 8 if body[1] == "o" else 16)
        return sign * int(body)

    def construct_float(loader: Any, node: Any) -> float | _BadValue:
        text = loader.construct_scalar(node)
        low = text.lower()
        if low in (".nan", "+.nan", "-.nan"):
            return math.nan
        if low.lstrip("+-") == ".inf":
            return -math.inf if low.startswith("-") else math.inf
        value = float(text)
        if math.isinf(value):
            return _BadValue(f"{brief(text)} is beyond the float range (±{FLOAT_MAX:.3g})")
        return value

    def construct_bool(loader: Any, node: Any) -> bool:
        return loader.construct_scalar(node).lower() == "true"

    core = [  # (tag, regexp, first characters): YAML 1.2.2 §10.3.2, the core schema
        ("null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
        ("bool", r"^(?:true|True|TRUE|false|False|FALSE)$", list("tTfF")),
        ("int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", list("-+0123456789")),
        ("float", r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                  r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$", list("-+.0123456789")),
    ]
    for tag, pattern, first in core:
        SpecLoader.add_implicit_resolver(f"tag:yaml.org,2002:{tag}", re.compile(pattern), first)
    SpecLoader.add_constructor("tag:yaml.org,2002:int", construct_int)
    SpecLoader.add_constructor("tag:yaml.org,2002:float", construct_float)
    SpecLoader.add_constructor("tag:yaml.org,2002:bool", construct_bool)
    SpecLoader.add_constructor("tag:yaml.org,2002:map", SpecLoader.construct_yaml_map)
    return SpecLoader


def _scan_yaml_events(text: str, loader: type) -> None:
    """Refuse more than MAX_YAML_ALIASES aliases and nesting beyond MAX_SPEC_DEPTH from the
    event stream (before any node is composed)."""
    import yaml

    aliases = depth = 0
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, yaml.AliasEvent):
            aliases += 1
            if aliases > MAX_YAML_ALIASES:
                line = event.start_mark.line + 1 if event.start_mark else "?"
                raise SpecError(f"more than {MAX_YAML_ALIASES} YAML aliases (*{event.anchor} on "
                                f"line {line}); the limit is spec.MAX_YAML_ALIASES")
        elif isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_SPEC_DEPTH:
                raise SpecError(f"nested more than {MAX_SPEC_DEPTH} levels deep "
                                f"(spec.MAX_SPEC_DEPTH)")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _yaml_error(exc: BaseException) -> str:
    import yaml

    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem:
        mark = exc.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        context = f"{exc.context}: " if exc.context else ""
        return f"{context}{exc.problem}{where}"
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _join(where: str, key: object) -> str:
    return f"{where}.{key}" if where else str(key)


def check_tree(data: object) -> None:
    """Refuse values a parser let through: nesting beyond MAX_SPEC_DEPTH, more than
    MAX_SPEC_NODES values (aliases expanded), non-string keys, duplicate keys, NaN/Infinity
    literals of JSON and numbers beyond the float range; the message names the field."""
    stack = [(data, "", 0)]
    count = 0
    while stack:
        value, where, depth = stack.pop()
        count += 1
        if count > MAX_SPEC_NODES:
            raise SpecError(f"more than {MAX_SPEC_NODES} values (spec.MAX_SPEC_NODES, YAML "
                            f"aliases expanded)")
        if depth > MAX_SPEC_DEPTH:
            raise SpecError(f"{where or 'spec'}: nested more than {MAX_SPEC_DEPTH} levels deep "
                            f"(spec.MAX_SPEC_DEPTH)")
        if isinstance(value, _BadValue):
            raise SpecError(f"{where or 'spec'}: {value.message}")
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > FLOAT_MAX:
            raise SpecError(f"{where or 'spec'}: the integer {brief(value)} is beyond the float "
                            f"range (±{FLOAT_MAX:.3g})")
        if isinstance(value, dict):
            if isinstance(value, _DuplicateKeys):
                raise SpecError(f"{_join(where, value.duplicate)}: the key appears twice in one "
                                f"mapping")
            children = []
            for key, item in value.items():
                if not isinstance(key, str):
                    raise SpecError(f"{where or 'spec'}: keys must be strings, got the "
                                    f"{type(key).__name__} {brief(key)}")
                children.append((item, _join(where, key), depth + 1))
            stack.extend(reversed(children))
        elif isinstance(value, list):
            stack.extend((item, f"{where}[{i}]", depth + 1)
                         for i, item in reversed(list(enumerate(value))))


def load_spec(path: str | Path) -> dict:
    """Read a JSON or YAML spec file into a mapping, strictly and within bounded sizes.

    A file whose suffix is .yaml or .yml is read as YAML 1.2 (core schema, safe constructors
    only), any other as JSON (RFC 8259). The rules of the module docstring hold whatever the
    file holds: at most MAX_SPEC_BYTES bytes of UTF-8 text, no NaN/Infinity literal in JSON,
    no key twice in one mapping, at most MAX_YAML_ALIASES aliases, nesting at most
    MAX_SPEC_DEPTH deep, at most MAX_SPEC_NODES values, string keys, and no number beyond the
    float range. Strings are never evaluated. The fields themselves (params, initial, ...) are
    checked later by the command that reads them.

    Parameters
    ----------
    path : str or pathlib.Path
        The spec file.

    Returns
    -------
    dict
        The spec's top-level mapping {field: value}; values are numbers, strings, booleans,
        None, lists and mappings.

    Raises
    ------
    SpecError
        (an InvalidInputError) naming the file and the problem: it cannot be read or is not a
        regular file (a folder, named pipe, device or socket), is larger
        than MAX_SPEC_BYTES, is not UTF-8, is empty, is not valid JSON / YAML, breaks one of the
        limits above (the message names the field), or its top level is not a mapping.

    See Also
    --------
    riccati_tf.app.cli.main : the command line, whose subcommands read their SPEC with it.
    riccati_tf.sweep.family.parse_family : checks a sweep spec loaded by it.

    References
    ----------
    .. [1] T. Bray (ed.), "The JavaScript Object Notation (JSON) Data Interchange Format",
       RFC 8259, 2017.
    .. [2] "YAML Ain't Markup Language (YAML) version 1.2", revision 1.2.2, 2021, §10.3
       "Core Schema".

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from riccati_tf.io.spec import load_spec
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = Path(tmp) / "flow.yaml"
    ...     _ = path.write_text("{params: {A: [[0, 1], [-1, 0]]}, t_final: 1e1}")
    ...     load_spec(path)
    {'params': {'A': [[0, 1], [-1, 0]]}, 't_final': 10.0}

    A key given twice is refused, naming it:

    >>> from riccati_tf.errors import InvalidInputError
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = Path(tmp) / "spec.json"
    ...     _ = path.write_text('{"t_final": 1, "t_final": 2}')
    ...     try:
    ...         load_spec(path)
    ...     except InvalidInputError as exc:
    ...         print(str(exc).endswith("t_final: the key appears twice in one mapping"))
    True
    """
    path = Path(path)
    try:
        raw = read_regular(path, MAX_SPEC_BYTES)  # a FIFO or device is refused, not waited on
    except OSError as exc:
        raise SpecError(f"{path}: cannot read the spec file "
                        f"({exc.strerror or type(exc).__name__})") from None
    if len(raw) > MAX_SPEC_BYTES:
        raise SpecError(f"{path}: the spec file is larger than {MAX_SPEC_BYTES} bytes "
                        f"(spec.MAX_SPEC_BYTES)")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset "
                        f"{exc.start})") from None
    if not text.strip():
        raise SpecError(f"{path}: the spec file is empty")
    is_yaml = path.suffix.lower() in (".yaml", ".yml")
    kind = "YAML" if is_yaml else "JSON"
    try:
        if is_yaml:
            import yaml

            loader = _yaml_loader()
            _scan_yaml_events(text, loader)
            data = yaml.load(text, Loader=loader)  # a SafeLoader subclass
        else:
            data = json.loads(text, object_pairs_hook=_json_object,
                              parse_constant=_json_constant, parse_float=_json_float)
    except SpecError as exc:
        raise SpecError(f"{path}: {exc}") from None
    except RecursionError:
        raise SpecError(f"{path}: not valid {kind} (nested more than {MAX_SPEC_DEPTH} levels "
                        f"deep, spec.MAX_SPEC_DEPTH)") from None
    except Exception as exc:  # any parse failure becomes one line for the user
        detail = _yaml_error(exc) if is_yaml else str(exc).splitlines()[0]
        raise SpecError(f"{path}: not valid {kind} ({detail})") from None
    if data is None:
        raise SpecError(f"{path}: the spec file is empty (no fields)")
    check_tree(data)
    if not isinstance(data, dict):
        raise SpecError(f"{path}: the spec must be a mapping of fields, got {_kind(data)}")
    return data


# --- fields ----------------------------------------------------------------------------------


def check_keys(spec: dict, allowed: Iterable[str], where: str = "") -> None:
    """Refuse keys of `spec` outside `allowed`, naming the first one and the closest allowed key
    (``initial.metod: unknown field; did you mean 'method'?``). `where` is the prefix of the
    mapping ("" at the top level, "params." inside params)."""
    for problem in unknown_keys(spec, allowed, where):
        raise SpecError(problem)


def unknown_keys(spec: dict, allowed: Iterable[str], where: str = "") -> list[str]:
    """The message of `check_keys` for every key of `spec` outside `allowed`, in order."""
    allowed = tuple(allowed)
    out = []
    for key in spec:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else \
                f"; allowed: {', '.join(sorted(allowed))}"
            out.append(escape_controls(f"{where}{key}: unknown field{hint}"))
    return out


def check_mapping(spec: object, where: str, allowed: Iterable[str], what: str) -> dict:
    """`spec` as a mapping with keys in `allowed` (`what` describes it in the message)."""
    if not isinstance(spec, dict):
        raise SpecError(f"{where}: must be a mapping {what}, got {_kind(spec)}")
    check_keys(spec, allowed, f"{where}.")
    return spec


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return f"the boolean {value}"
    if isinstance(value, str):
        return f"the string {brief(value)}"
    if value is None:
        return "null"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return brief(value)


def field(spec: dict, name: str, where: str = "", *, default: Any = ...) -> Any:
    """spec[name], or a SpecError naming the missing field."""
    if name in spec:
        return spec[name]
    if default is ...:
        raise SpecError(f"{where}{name}: missing field")
    return default


def check_numeric(value: object, where: str, *, max_len: int | None = None,
                  max_depth: int | None = None, limit: str = "spec.MAX_DIM",
                  finite: bool = False) -> None:
    """Refuse anything but numbers inside a nested list: strings (never evaluated), booleans,
    null, mappings and integers beyond the float range; NaN and ±Inf too when `finite`.
    max_len bounds the length of every list (named `limit` in the message), max_depth the
    nesting."""
    if isinstance(value, list | tuple):
        if max_depth is not None and max_depth <= 0:
            raise SpecError(f"{where}: nested too deeply (a number was expected here)")
        if max_len is not None and len(value) > max_len:
            raise SpecError(f"{where}: {len(value)} entries exceed the limit {max_len} "
                            f"({limit})")
        for i, v in enumerate(value):
            check_numeric(v, f"{where}[{i}]", max_len=max_len,
                          max_depth=None if max_depth is None else max_depth - 1, limit=limit,
                          finite=finite)
        return
    if isinstance(value, str):
        raise SpecError(f"{where}: must be a number or a list of numbers, got the string "
                        f"{brief(value)}")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SpecError(f"{where}: must be a number or a list of numbers, got {_kind(value)}")
    if isinstance(value, int) and abs(value) > FLOAT_MAX:
        raise SpecError(f"{where}: the integer {brief(value)} is beyond the float range")
    if finite and isinstance(value, float) and not math.isfinite(value):
        raise SpecError(f"{where}: must be a finite number, got {value}")


def _matrix(value: object, where: str) -> None:
    check_numeric(value, where, max_len=MAX_DIM, max_depth=2, finite=True)


def _convert(where: str, build: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    try:
        return build(*args, **kwargs)
    except SpecError:
        raise
    except InvalidInputError as exc:
        raise SpecError(f"{where}: {exc}") from None


PARAMS_KEYS = ("A", "B", "V", "b", "heads")


def parse_params(spec: dict, where: str = "params") -> Params:
    """Params from {A, B, V, b} or {A, heads: [{V, B}, ...], b}; as in `Params`, a missing
    A, B, V or b is zero (d from the fields given)."""
    check_mapping(spec, where, PARAMS_KEYS, "with A, B, V, b or heads (A = 0 when omitted)")
    kwargs = {}
    for key in ("A", "B", "V", "b"):
        if key in spec:
            _matrix(spec[key], f"{where}.{key}")
            kwargs[key] = spec[key]
    if "heads" in spec:
        heads = spec["heads"]
        if not isinstance(heads, list) or not heads:
            raise SpecError(f"{where}.heads: must be a non-empty list of {{V, B}} mappings")
        if len(heads) > MAX_HEADS:
            raise SpecError(f"{where}.heads: {len(heads)} heads exceed the limit {MAX_HEADS} "
                            f"(spec.MAX_HEADS)")
        pairs = []
        for h, head in enumerate(heads):
            here = f"{where}.heads[{h}]"
            check_mapping(head, here, ("V", "B"), "with V and B")
            for key in ("V", "B"):
                _matrix(field(head, key, here + "."), f"{here}.{key}")
            pairs.append((head["V"], head["B"]))
        kwargs["heads"] = pairs
    return _convert(where, Params, **kwargs)


def parse_gaussian(spec: dict, where: str) -> Gaussian:
    """Gaussian from {mean, cov}."""
    check_mapping(spec, where, ("mean", "cov"), "with mean and cov")
    mean, cov = field(spec, "mean", f"{where}."), field(spec, "cov", f"{where}.")
    _matrix(mean, f"{where}.mean")
    _matrix(cov, f"{where}.cov")
    return _convert(where, Gaussian, mean, cov)


def parse_number(spec: dict, name: str, where: str = "", *, default: Any = ...,
                 kind: type = float, minimum: float | None = None, maximum: float | None = None,
                 limit: str | None = None) -> Any:
    """A number field (int when kind is int); bools, strings, null, NaN/Inf and integers beyond
    the float range are refused, and so are values outside [minimum, maximum] (`limit` names the
    constant behind maximum in the message)."""
    value = field(spec, name, where, default=default)
    if value is default and default is not ...:
        return value
    ok = isinstance(value, int) if kind is int else isinstance(value, int | float)
    if isinstance(value, bool) or not ok:
        raise SpecError(f"{where}{name}: must be {'an integer' if kind is int else 'a number'}, "
                        f"got {_kind(value)}")
    if kind is not int:
        if isinstance(value, int) and abs(value) > FLOAT_MAX:
            raise SpecError(f"{where}{name}: the integer {brief(value)} is beyond the float range")
        if not math.isfinite(value):
            raise SpecError(f"{where}{name}: must be a finite number, got {value}")
    if minimum is not None and value < minimum:
        raise SpecError(f"{where}{name}: must be ≥ {minimum}, got {brief(value)}")
    if maximum is not None and value > maximum:
        raise SpecError(f"{where}{name}: must be ≤ {maximum}"
                        f"{f' ({limit})' if limit else ''}, got {brief(value)}")
    return kind(value)


def parse_choice(spec: dict, name: str, allowed: Iterable[str], where: str = "", *,
                 default: Any = ...) -> str:
    """A string field that must be one of `allowed`."""
    allowed = tuple(allowed)
    value = field(spec, name, where, default=default)
    if not isinstance(value, str) or value not in allowed:
        close = difflib.get_close_matches(value, allowed, n=1, cutoff=0.6) \
            if isinstance(value, str) else []
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise SpecError(f"{where}{name}: must be one of {', '.join(allowed)}, got "
                        f"{_kind(value) if not isinstance(value, str) else brief(value)}{hint}")
    return value


def parse_times(spec: dict, name: str, where: str = "", *, max_len: int,
                limit: str) -> list | None:
    """An optional list of numbers (output times), at most max_len of them; None if absent."""
    value = field(spec, name, where, default=None)
    if value is None:
        return None
    if not isinstance(value, list):
        raise SpecError(f"{where}{name}: must be a list of numbers, got {_kind(value)}")
    check_numeric(value, f"{where}{name}", max_len=max_len, max_depth=1, limit=limit,
                  finite=True)
    return value
