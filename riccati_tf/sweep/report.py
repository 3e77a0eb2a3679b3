"""The sweep section of `riccati-tf report`: a phase diagram over (v, a) of the scalar-V layer

    A(a) = [[a, 0.3], [0, a − 0.6]],  V = vI,  B = [[1, 0.2], [0.2, 0.6]],
    Σ0 = [[1, 0.3], [0.3, 0.5]],

so G = −v(B + Bᵀ) is ≻ 0 for v < 0 and ≺ 0 for v > 0, and A has the eigenvalues a and a − 0.6
(Hurwitz for a < 0, mixed for 0 < a < 0.6, anti-stable beyond). SPEC §5 predicts: v < 0 —
collapse (a < 0) or convergence (to a rank-1 equilibrium for mixed spectrum, rank 2 beyond);
v > 0 — blow-up whenever a > 0, and for a < 0 blow-up iff λ_max(W∞Σ0) > 1. The grid runs through
`run_sweep` (batched classifier) and a random subsample is re-classified by `certify` per case.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .runner import certify_columns, run_sweep

__all__ = ["SweepSection", "report_section"]


def phase_spec(n: int, chunk_size: int = 2000) -> dict:
    """The built-in (v, a) grid of n × n scalar-V layers (n even keeps v = 0 and a = 0 off it),
    in chunks of chunk_size."""
    return {
        "analysis": "certify",
        "family": {"grid": {"v": {"linspace": [-1.0, 1.0, n]},
                            "a": {"linspace": [-1.2, 1.2, n]}}},
        "chunk_size": chunk_size,
        "params": {"A": {"const": [[0.0, 0.3], [0.0, -0.6]], "a": [[1.0, 0.0], [0.0, 1.0]]},
                   "B": [[1.0, 0.2], [0.2, 0.6]], "V": {"v": [[1, 0], [0, 1]]}},
        "initial": {"mean": [0.0, 0.0], "cov": [[1.0, 0.3], [0.3, 0.5]]},
        "plot": {"x": "v", "y": "a"},
    }


@dataclass(frozen=True, eq=False)
class SweepSection:
    """What the report shows of the sweep: a title, an HTML body, PNG figures and numbers.

    `riccati_tf.app.report` wraps it into a section of its page; summary.json holds `numbers`,
    so the page and the summary say the same thing.

    Parameters
    ----------
    title : str
        The section's heading.
    body : str
        Its HTML (paragraphs and a table of regime counts).
    figures : dict of str to bytes
        PNG figures {file name: bytes}.
    numbers : dict
        Every number the body quotes (JSON values).

    Raises
    ------
    TypeError
        When a field is missing (the dataclass constructor).

    See Also
    --------
    report_section : builds it.
    riccati_tf.app.report.write_report : writes the report it is a section of.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".

    Examples
    --------
    >>> from riccati_tf.sweep.report import SweepSection
    >>> section = SweepSection("Phase diagram", "<p>...</p>", {}, {"n_configs": 0})
    >>> section.title, section.numbers["n_configs"]
    ('Phase diagram', 0)
    """

    title: str
    body: str
    figures: dict[str, bytes]
    numbers: dict


def report_section(quick: bool) -> SweepSection:
    """Phase diagram of the scalar-V regimes over (v, a) by a batched sweep (SPEC §5).

    The layers A(a) = [[a, 0.3], [0, a − 0.6]], V = vI, B = [[1, 0.2], [0.2, 0.6]] from
    Σ0 = [[1, 0.3], [0.3, 0.5]] (module docstring): Σ̇ = AΣ + ΣAᵀ − ΣGΣ with G = −v(B + Bᵀ).
    The n × n grid (`phase_spec`; n = 40 quick, else 160) runs through `run_sweep` in a
    temporary folder (the batched classifier), its phase diagram is drawn by `plot_sweep`, and a
    random subsample (60 quick, else 300 layers, seed 0) is classified again by `certify`, one
    layer at a time; the section quotes the agreement and the time per layer of both.

    Parameters
    ----------
    quick : bool
        The smaller grid and subsample (`riccati-tf report --quick`).

    Returns
    -------
    SweepSection
        Title, HTML body, the figure "sweep_phase_diagram.png" and the numbers: n_configs,
        grid, wall_time_s, regime_counts, batched_share, certify_subsample, certify_agree,
        certify_seconds_per_case, sweep_seconds_per_case.

    Raises
    ------
    ImportError
        When matplotlib is not installed (the phase diagram needs it).

    See Also
    --------
    riccati_tf.sweep.runner.run_sweep : runs the grid.
    riccati_tf.sweep.plot.plot_sweep : draws the phase diagram.
    riccati_tf.app.report.write_report : the report this section belongs to.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".

    Examples
    --------
    The section sweeps this family (a call takes seconds, so it is shown, not run, here):

    >>> from riccati_tf.sweep.family import parse_family
    >>> from riccati_tf.sweep.report import phase_spec
    >>> family = parse_family(phase_spec(40))       # what report_section(quick=True) sweeps
    >>> family.n_configs, family.axis_names, family.plot_axes
    (1600, ('v', 'a'), ('v', 'a'))
    """
    from .family import parse_family
    from .plot import plot_sweep

    n, n_check = (40, 60) if quick else (160, 300)
    spec = phase_spec(n)
    with tempfile.TemporaryDirectory() as tmp:
        result = run_sweep(spec, Path(tmp) / "sweep")
        table = result.table()
        png = Path(tmp) / "phase.png"
        plot_sweep(result.out_dir, png)
        figure = png.read_bytes()
    regime, path = table["regime"], table["path"]
    # per-case certify on a random subsample of the same grid
    family = parse_family(spec)
    rng = np.random.default_rng(0)
    picks = np.sort(rng.choice(family.n_configs, size=min(n_check, family.n_configs),
                               replace=False))
    agree, per_case = 0, 0.0
    for c in np.unique(picks // family.chunk_size):
        chunk = family.chunk(int(c))
        local = picks[picks // family.chunk_size == c] - c * family.chunk_size
        sub = chunk.take(local)
        start = time.perf_counter()
        ref = certify_columns(sub, batched=False)
        per_case += time.perf_counter() - start
        agree += int(np.sum(ref["regime"] == regime[sub.ids]))
    batched_share = float(np.mean(path == "batched"))
    numbers: dict[str, Any] = {
        "n_configs": result.n_configs, "grid": [n, n], "wall_time_s": result.wall_time,
        "regime_counts": result.counts, "batched_share": batched_share,
        "certify_subsample": int(picks.size), "certify_agree": agree,
        "certify_seconds_per_case": per_case / picks.size,
        "sweep_seconds_per_case": result.wall_time / result.n_configs,
    }
    rows = "".join(f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in result.counts.items())
    body = (
        "<p>Scalar-V layers A(a) = [[a, 0.3], [0, a − 0.6]], V = vI, B = [[1, 0.2], [0.2, 0.6]] "
        "from Σ0 = [[1, 0.3], [0.3, 0.5]]: G = −v(B + Bᵀ) is positive definite for v &lt; 0 and "
        "negative definite for v &gt; 0; A is Hurwitz for a &lt; 0, mixed for 0 &lt; a &lt; 0.6. "
        f"The {n} × {n} grid ({result.n_configs} layers) was classified by the batched form of "
        f"<code>certify</code>'s SPEC §5 rules in {result.wall_time:.2f} s "
        f"({1e6 * numbers['sweep_seconds_per_case']:.0f} µs per layer, "
        f"{100 * batched_share:.1f} % on the batched path); <code>certify</code> itself, one "
        f"layer at a time, agrees on {agree} of {picks.size} randomly chosen layers and takes "
        f"{1e3 * numbers['certify_seconds_per_case']:.1f} ms per layer. The blow-up boundary for "
        "a &lt; 0 is the curve λ<sub>max</sub>(W<sub>∞</sub>Σ<sub>0</sub>) = 1, "
        "A<sup>T</sup>W<sub>∞</sub> + W<sub>∞</sub>A + |G| = 0.</p>"
        "<table><tr><th>regime</th><th>layers</th></tr>" + rows + "</table>")
    return SweepSection("Phase diagram of a parameter sweep (SPEC §5, batched)", body,
                        {"sweep_phase_diagram.png": figure}, numbers)

