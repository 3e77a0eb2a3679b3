"""The public API's docstrings (numpydoc sections, runnable Examples) and annotations, counted by
docs/docstring_coverage.py; the Examples themselves run as doctests (pytest --doctest-modules)."""

import importlib.util
import inspect
import re
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "docs" / "docstring_coverage.py"


@pytest.fixture(scope="module")
def coverage():
    spec = importlib.util.spec_from_file_location("docstring_coverage", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_every_module_declares_its_public_names(coverage):
    _, without_all = coverage.public_callables()
    assert without_all == []


def test_every_public_callable_has_all_sections_and_annotations(coverage):
    entries, _ = coverage.coverage()
    missing = [f"{e.name}: {', '.join(e.missing)}" for e in entries if e.missing]
    assert missing == []
    assert all(e.has_examples for e in entries)


def test_the_checker_finds_what_is_missing(coverage):
    """A docstring without sections and an unannotated parameter are both reported."""

    def bare(x, y: int = 0):
        """Only a summary."""
        return x

    entry = coverage.check(bare, "bare")
    for need in ("Parameters (x, y)", "Returns", "Raises", "See Also", "References", "Examples",
                 "annotations (x)", "return annotation"):
        assert need in entry.missing
    assert not entry.has_examples


def test_the_checker_accepts_a_complete_docstring(coverage):
    def full(x: float, *, scale: float = 1.0) -> float:
        """Scaled value.

        Parameters
        ----------
        x : float
            The value.
        scale : float, optional
            The factor.

        Returns
        -------
        float
            ``scale * x``.

        Raises
        ------
        ValueError
            Never.

        See Also
        --------
        abs

        References
        ----------
        .. [1] SPEC §1.

        Examples
        --------
        >>> full(2.0)
        2.0
        """
        return scale * x

    entry = coverage.check(full, "full")
    assert entry.missing == ()
    assert entry.has_examples
    assert inspect.getdoc(full).count("Parameters") == 1


def _autosummary_entries(text: str) -> set[str]:
    """Full names of the autosummary entries of an rst page, under its current module."""
    current, entries, in_block = "", set(), False
    for line in text.splitlines():
        directive = re.match(r"\.\. (currentmodule|automodule):: (\S+)", line)
        if directive:
            current, in_block = directive[2], False
        elif line.startswith(".. autosummary::"):
            in_block = True
        elif in_block and re.match(r"^   [\w.]+$", line):
            entries.add(f"{current}.{line.strip()}" if current else line.strip())
        elif in_block and line and not line.startswith("   "):
            in_block = False
    return entries


def test_every_public_module_is_in_the_api_reference(coverage):
    """Each module that declares public names has its page in one of docs/api/*.rst."""
    listed = set().union(*(_autosummary_entries(p.read_text())
                           for p in (SCRIPT.parent / "api").glob("*.rst")))
    leaves = {m.__name__ for m in coverage.modules() if not hasattr(m, "__path__")}
    assert sorted(leaves - listed) == []
