"""Equations for HTML pages: LaTeX (as SymPy prints it) to MathML, which browsers render natively,
so a report needs no script or network to show its equations."""

from __future__ import annotations


def latex_to_mathml(latex: str, *, display: bool = True) -> str:
    """A <math> element for a LaTeX string (block when display is True)."""
    from latex2mathml.converter import convert

    return convert(latex, display="block" if display else "inline")
