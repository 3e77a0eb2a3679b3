"""Spec files for the command line: JSON or YAML (yaml.safe_load), matrices as nested lists.

    params:  {A: [[..]], B: [[..]], V: [[..]], b: [..]}    # or heads: [{V: .., B: ..}, ...]
    initial: {mean: [..], cov: [[..]]}
    t_final: 5.0

Every problem is reported as one `SpecError` naming the field (`params.A: must be a square
matrix, got shape (2, 3)`). Strings are never evaluated: numbers and lists only.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

from .errors import InvalidInputError
from .model import Gaussian, Params


class SpecError(InvalidInputError):
    """A spec that lacks a field or holds an invalid value; the message names the field."""


def load_spec(path: str | Path) -> dict:
    """Read a JSON (.json) or YAML (.yaml/.yml, safe loader) spec file into a mapping."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"{path}: cannot read the spec file ({exc.strerror})") from None
    is_yaml = path.suffix.lower() in (".yaml", ".yml")
    try:
        if is_yaml:
            import yaml

            data = yaml.safe_load(text)
        else:
            data = json.loads(text)
    except Exception as exc:  # any parse failure becomes one line for the user
        raise SpecError(f"{path}: not valid {'YAML' if is_yaml else 'JSON'} "
                        f"({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise SpecError(f"{path}: the spec must be a mapping of fields, got {type(data).__name__}")
    return data


def check_keys(spec: dict, allowed, where: str = "") -> None:
    """Refuse keys of `spec` outside `allowed`, naming the first one and the closest allowed key
    (``initial.metod: unknown field; did you mean 'method'?``). `where` is the prefix of the
    mapping ("" at the top level, "params." inside params)."""
    allowed = tuple(allowed)
    for key in spec:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else \
                f"; allowed: {', '.join(sorted(allowed))}"
            raise SpecError(f"{where}{key}: unknown field{hint}")


def field(spec: dict, name: str, where: str = "", *, default: Any = ...) -> Any:
    """spec[name], or a SpecError naming the missing field."""
    if name in spec:
        return spec[name]
    if default is ...:
        raise SpecError(f"{where}{name}: missing field")
    return default


def check_numeric(value, where: str) -> None:
    """Reject strings anywhere inside a nested list (they are never evaluated)."""
    if isinstance(value, str):
        raise SpecError(f"{where}: must be a number or a list of numbers, got the string {value!r}")
    if isinstance(value, list | tuple):
        for i, v in enumerate(value):
            check_numeric(v, f"{where}[{i}]")


def _convert(where: str, build, *args, **kwargs):
    try:
        return build(*args, **kwargs)
    except SpecError:
        raise
    except InvalidInputError as exc:
        raise SpecError(f"{where}: {exc}") from None


def parse_params(spec: dict, where: str = "params") -> Params:
    """Params from {A, B, V, b} or {A, heads: [{V, B}, ...], b}."""
    if not isinstance(spec, dict):
        raise SpecError(f"{where}: must be a mapping with A (and B, V, b or heads)")
    unknown = set(spec) - {"A", "B", "V", "b", "heads"}
    if unknown:
        raise SpecError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    kwargs = {}
    for key in ("A", "B", "V", "b"):
        if key in spec:
            check_numeric(spec[key], f"{where}.{key}")
            kwargs[key] = spec[key]
    if "A" not in kwargs:
        raise SpecError(f"{where}.A: missing field")
    if "heads" in spec:
        heads = spec["heads"]
        if not isinstance(heads, list) or not heads:
            raise SpecError(f"{where}.heads: must be a non-empty list of {{V, B}} mappings")
        pairs = []
        for h, head in enumerate(heads):
            if not isinstance(head, dict):
                raise SpecError(f"{where}.heads[{h}]: must be a mapping with V and B")
            for key in ("V", "B"):
                here = f"{where}.heads[{h}]"
                check_numeric(field(head, key, here + "."), f"{here}.{key}")
            pairs.append((head["V"], head["B"]))
        kwargs["heads"] = pairs
    return _convert(where, Params, **kwargs)


def parse_gaussian(spec: dict, where: str) -> Gaussian:
    """Gaussian from {mean, cov}."""
    if not isinstance(spec, dict):
        raise SpecError(f"{where}: must be a mapping with mean and cov")
    mean, cov = field(spec, "mean", f"{where}."), field(spec, "cov", f"{where}.")
    check_numeric(mean, f"{where}.mean")
    check_numeric(cov, f"{where}.cov")
    return _convert(where, Gaussian, mean, cov)


def parse_number(spec: dict, name: str, where: str = "", *, default: Any = ..., kind=float):
    """A number field (int when kind is int); bools and strings are refused."""
    value = field(spec, name, where, default=default)
    if value is default and default is not ...:
        return value
    ok = isinstance(value, int) if kind is int else isinstance(value, int | float)
    if isinstance(value, bool) or not ok:
        raise SpecError(f"{where}{name}: must be {'an integer' if kind is int else 'a number'}, "
                        f"got {value!r}")
    return kind(value)
