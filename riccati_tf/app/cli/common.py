"""What every subcommand shares: the handlers' return type (Outcome), the exit codes, the
bound on one result's size, and the human summaries (aligned tables of the numbers that
matter; --json prints every number).
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ...display import DIGITS
from ...io.serialize import to_jsonable
from ...io.spec import (
    SpecError,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ...flows.integrate import Trajectory


__all__: list[str] = []


#: what a subcommand handler returns: (result for --json, summary text or None, figure or None)
Outcome = tuple[Any, str | None, "Figure | None"]


EXIT_INVALID, EXIT_NUMERICAL = 2, 3


#: most numbers in one result (states × (d + d²)): bounds the output and its memory
MAX_OUTPUT = 2_000_000


#: width of wrapped text in human summaries
TEXT_WIDTH = 100


def _output_size(where: str, n_states: int, d: int) -> None:
    """Refuse a result of more than MAX_OUTPUT numbers before it is computed."""
    size = n_states * (d + d * d)
    if size > MAX_OUTPUT:
        raise SpecError(f"{where}: {n_states} states of dimension d = {d} make {size} numbers, "
                        f"over the limit {MAX_OUTPUT} (cli.MAX_OUTPUT)")


def _g(x: Any) -> str:
    """A number as shown in summaries (DIGITS significant digits), yes/no, or — for None."""
    if x is None:
        return "—"
    if isinstance(x, bool | np.bool_):
        return "yes" if x else "no"
    if isinstance(x, int | np.integer):
        return str(int(x))
    return f"{float(x):.{DIGITS}g}"


def _vector(v: npt.ArrayLike) -> str:
    return "[" + ", ".join(_g(x) for x in np.asarray(v, dtype=float).ravel()) + "]"


def table(rows: Sequence[Sequence[object]], header: Sequence[object] | None = None) -> str:
    """Rows of cells as left-aligned text columns separated by two spaces."""
    cells = [[str(c) for c in r] for r in ([header] if header else []) + list(rows)]
    n = max(len(r) for r in cells)
    widths = [max(len(r[i]) for r in cells if i < len(r)) for i in range(n)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)).rstrip()
                     for r in cells)


def _eigenvalues(cov: npt.ArrayLike) -> np.ndarray:
    """Eigenvalues of Σ, largest first."""
    return np.linalg.eigvalsh(np.asarray(cov, dtype=float))[::-1]


def _rank(cov: npt.ArrayLike) -> int:
    from ...state.validation import psd_rank

    return int(psd_rank(np.asarray(cov, dtype=float)))


def _wrap(label: str, text: str) -> str:
    return textwrap.fill(" ".join(str(text).split()), width=TEXT_WIDTH,
                         initial_indent=f"{label}: ", subsequent_indent="  ")


def _state_rows(tr: Trajectory, label: str) -> list[list[str]]:
    """start / end columns of a trajectory: time, mean, Σ eigenvalues, rank."""
    ends = (0, -1)
    return [[label, *(_g(tr.t[i]) for i in ends)],
            ["mean", *(_vector(tr.mean[i]) for i in ends)],
            ["Σ eigenvalues", *(_vector(_eigenvalues(tr.cov[i])) for i in ends)],
            ["rank Σ", *(_g(_rank(tr.cov[i])) for i in ends)]]


def trajectory_text(tr: Trajectory, title: str, label: str = "t") -> str:
    """status, method, T* and the start and final states of a Trajectory."""
    blow = (f"{_g(tr.blowup_time)} (the last output is t = {_g(tr.t[-1])}, before T*)"
            if tr.blowup_time is not None else "none (no blow-up)")
    head = table([["status", tr.status], ["method", tr.method], ["T*", blow],
                  ["outputs", f"{len(tr.t)} times from {_g(tr.t[0])} to {_g(tr.t[-1])}"]])
    states = table(_state_rows(tr, label), header=["", "start", "end"])
    return f"{title}\n{head}\n\n{states}\n\n(--json prints every output time in full)"


def generic_text(result: dict) -> str:
    """A result mapping as `key  value` lines, every value in full (JSON for lists)."""
    data = to_jsonable(result)
    return table([[key, value if isinstance(value, str) else
                   json.dumps(value, ensure_ascii=False)] for key, value in data.items()])
