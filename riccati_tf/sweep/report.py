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

import numpy as np

from .runner import certify_columns, run_sweep


def phase_spec(n: int, chunk_size: int = 2000) -> dict:
    """The built-in (v, a) grid of n × n scalar-V layers (n even keeps v = 0 and a = 0 off it)."""
    return {
        "analysis": "certify",
        "family": {"grid": {"v": {"linspace": [-1.0, 1.0, n]},
                            "a": {"linspace": [-1.2, 1.2, n]}}},
        "chunk_size": chunk_size,
        "params": {"A": {"const": [[0.0, 0.3], [0.0, -0.6]], "a": [[1.0, 0.0], [0.0, 1.0]]},
                   "B": [[1.0, 0.2], [0.2, 0.6]], "v": {"v": 1.0}},
        "initial": {"mean": [0.0, 0.0], "cov": [[1.0, 0.3], [0.3, 0.5]]},
        "plot": {"x": "v", "y": "a"},
    }


@dataclass(frozen=True, eq=False)
class SweepSection:
    """What the report shows of the sweep: a title, an HTML body, PNG figures {name: bytes} and
    every number the body quotes (`riccati_tf.app.report` wraps it into a section of its page)."""

    title: str
    body: str
    figures: dict[str, bytes]
    numbers: dict


def report_section(quick: bool) -> SweepSection:
    """Phase diagram of the scalar-V regimes over (v, a) by a batched sweep (SPEC §5)."""
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
    regime = np.asarray(table.column("regime").to_pylist(), dtype=object)
    path = np.asarray(table.column("path").to_pylist(), dtype=object)
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
    numbers = {
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

