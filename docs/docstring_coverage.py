"""Docstring and annotation coverage of riccati_tf's public API.

A public callable is a function or class named in the ``__all__`` of a module of ``riccati_tf``
(every module declares one; modules whose name starts with ``_`` are internal). Each one needs
the numpydoc sections of the API reference:

- Parameters, naming every parameter of its signature (a class: of its constructor);
- Returns (Yields for a generator), unless it is a class or annotated ``-> None``;
- Raises, See Also, References, and Examples with at least one ``>>>`` line;

and complete annotations: every parameter and the return value.

    python docs/docstring_coverage.py            # the three counts, then what is missing
    python docs/docstring_coverage.py --quiet    # the counts only

Exit status 0 when the three counts are equal, every callable is annotated and every module
declares ``__all__``; 1 otherwise.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import pkgutil
import sys
from dataclasses import dataclass
from types import ModuleType

from numpydoc.docscrape import NumpyDocString

PACKAGE = "riccati_tf"
#: sections every public callable has (Parameters and Returns where they apply)
ALWAYS = ("Raises", "See Also", "References", "Examples")


@dataclass(frozen=True)
class Entry:
    """One public callable and what its docstring and annotations lack."""

    name: str
    missing: tuple[str, ...]
    has_examples: bool


def modules(package: str = PACKAGE) -> list[ModuleType]:
    """Every public module of the package, imported (``__main__`` and ``_private`` left out)."""
    root = importlib.import_module(package)
    found = [root]
    for info in pkgutil.walk_packages(root.__path__, package + "."):
        parts = info.name.split(".")
        if any(p.startswith("_") for p in parts[1:]):
            continue
        found.append(importlib.import_module(info.name))
    return found


def _signature(obj) -> inspect.Signature | None:
    try:
        return inspect.signature(obj)
    except (TypeError, ValueError):
        return None


def _parameters(sig: inspect.Signature | None) -> list[inspect.Parameter]:
    if sig is None:
        return []
    return [p for p in sig.parameters.values() if p.name not in ("self", "cls")]


def _documented_names(doc: NumpyDocString) -> set[str]:
    names: set[str] = set()
    for section in ("Parameters", "Other Parameters"):
        for param in doc[section]:
            names |= {n.strip().lstrip("*") for n in param.name.split(",")}
    return names


def check(obj, name: str) -> Entry:
    """The numpydoc sections and annotations `obj` lacks."""
    text = inspect.getdoc(obj) or ""
    missing: list[str] = []
    try:
        doc = NumpyDocString(text)
    except Exception as exc:  # numpydoc refuses malformed sections
        return Entry(name, (f"unparsable docstring ({exc})",), False)
    if not "".join(doc["Summary"]).strip():
        missing.append("Summary")
    is_class = inspect.isclass(obj)
    sig = _signature(obj)
    params = _parameters(sig)
    if params:
        undocumented = {p.name for p in params} - _documented_names(doc)
        if undocumented:
            missing.append("Parameters (" + ", ".join(sorted(undocumented)) + ")")
    if not is_class:
        returns_none = sig is not None and sig.return_annotation in (None, "None")
        if inspect.isgeneratorfunction(obj):
            if not doc["Yields"]:
                missing.append("Yields")
        elif not returns_none and not doc["Returns"]:
            missing.append("Returns")
    for section in ALWAYS:
        if not doc[section]:
            missing.append(section)
    has_examples = ">>>" in "\n".join(doc["Examples"])
    if doc["Examples"] and not has_examples:
        missing.append("Examples (no >>> line)")
    unannotated = [p.name for p in params if p.annotation is inspect.Parameter.empty]
    if unannotated:
        missing.append("annotations (" + ", ".join(unannotated) + ")")
    if not is_class and sig is not None and sig.return_annotation is inspect.Signature.empty:
        missing.append("return annotation")
    return Entry(name, tuple(missing), has_examples)


def public_callables(package: str = PACKAGE) -> tuple[dict[str, object], list[str]]:
    """({qualified name: object} of the public callables, [modules without __all__])."""
    seen: dict[int, str] = {}
    found: dict[str, object] = {}
    without_all: list[str] = []
    for module in modules(package):
        names = getattr(module, "__all__", None)
        if names is None:
            without_all.append(module.__name__)
            continue
        for attr in names:
            obj = getattr(module, attr)
            if not (inspect.isfunction(inspect.unwrap(obj)) or inspect.isclass(obj)):
                continue  # constants; functools.cache wrappers count as their function
            if id(obj) in seen:
                continue
            qualified = f"{obj.__module__}.{obj.__qualname__}"
            seen[id(obj)] = qualified
            found[qualified] = obj
    return found, without_all


def coverage(package: str = PACKAGE) -> tuple[list[Entry], list[str]]:
    """The entry of every public callable, sorted by name, and the modules without __all__."""
    found, without_all = public_callables(package)
    return [check(obj, name) for name, obj in sorted(found.items())], without_all


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quiet", action="store_true", help="print the counts only")
    args = parser.parse_args(argv)
    entries, without_all = coverage()
    complete = sum(not e.missing for e in entries)
    examples = sum(e.has_examples for e in entries)
    print(f"public callables with all numpydoc sections: {complete} / with an Examples section: "
          f"{examples} / total: {len(entries)}")
    if not args.quiet:
        for module in without_all:
            print(f"{module}: no __all__")
        for e in entries:
            if e.missing:
                print(f"{e.name}: missing {', '.join(e.missing)}")
    ok = complete == examples == len(entries) and not without_all
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
