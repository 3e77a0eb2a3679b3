"""Sweep benchmark (issue: parameter sweeps at scale).

(a) A 10 000-configuration d = 2 scalar-V random ensemble over the definiteness of V and B
    (v, β), the spectrum of A (a, ω) and the initial covariance (s, c):
        A = [[a, ω], [−ω, a − 0.6]],  V = vI,  B = β[[1, 0.2], [0.2, 0.6]] + [[0, 0.5], [−0.5, 0]],
        Σ0 = [[s, c], [c, 1]].
    Classified by the batched path (`certify_columns`) and by `certify` one configuration at a
    time; every field is compared and the wall times are reported — target: identical verdicts,
    batched ≥ 20× faster. The batched time is the best of 3; the per-case loop runs once.
(b) The same with B drawn without a definiteness constraint (1 000 configurations): G is then
    indefinite in about half the cases, which certify settles by numerical evidence and the sweep
    hands to certify — the share and the resulting speed-up are reported.
(c) The whole sweep of (a) through run_sweep in this process (Parquet chunks and manifest).

Run: python -m benchmarks.sweep
"""

from __future__ import annotations

import tempfile
import time

import numpy as np

from riccati_tf.sweep import certify_columns, parse_family, run_sweep

from ._timing import best_time, pin_one_thread

SKEW = [[0.0, 0.5], [-0.5, 0.0]]


def ensemble(n: int, definite: bool = True) -> dict:
    axes = {"v": {"uniform": [-1.0, 1.0]}, "beta": {"uniform": [-1.0, 1.0]},
            "a": {"uniform": [-1.5, 1.5]}, "w": {"uniform": [-1.0, 1.0]},
            "s": {"loguniform": [0.1, 10.0]}, "c": {"uniform": [-0.3, 0.3]}}
    B = {"const": SKEW, "beta": [[1.0, 0.2], [0.2, 0.6]]}
    if not definite:  # B = β B1 + γ B2 + skew with B1, B2 of opposite signatures
        axes["g"] = {"uniform": [-1.0, 1.0]}
        B["g"] = [[0.0, 1.0], [0.0, -0.5]]
    return {
        "analysis": "certify",
        "family": {"random": {"n": n, "seed": 2026, "axes": axes}},
        "chunk_size": 1000,
        "params": {"A": {"const": [[0.0, 0.0], [0.0, -0.6]], "a": [[1.0, 0.0], [0.0, 1.0]],
                         "w": [[0.0, 1.0], [-1.0, 0.0]]},
                   "B": B, "v": {"v": 1.0}},
        "initial": {"cov": {"const": [[0.0, 0.0], [0.0, 1.0]], "s": [[1.0, 0.0], [0.0, 0.0]],
                            "c": [[0.0, 1.0], [1.0, 0.0]]}},
    }


def classify_all(family, batched: bool) -> dict[str, np.ndarray]:
    parts = [certify_columns(family.chunk(c), batched=batched) for c in range(family.n_chunks)]
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def compare(got: dict, ref: dict) -> tuple[int, float]:
    """(number of configurations whose verdict differs, max relative difference of numbers)."""
    differ = np.zeros(got["regime"].size, dtype=bool)
    for name in ("regime", "theorem", "exact", "global"):
        differ |= got[name] != ref[name]
    worst = 0.0
    for name in ("rate", "blowup_time", "threshold"):
        a, b = got[name], ref[name]
        differ |= np.isnan(a) != np.isnan(b)
        ok = np.isfinite(a) & np.isfinite(b) & (b != 0)
        if ok.any():
            worst = max(worst, float(np.max(np.abs(a[ok] - b[ok]) / np.abs(b[ok]))))
    return int(differ.sum()), worst


def run_case(label: str, spec: dict, batched_repeat: int) -> None:
    family = parse_family(spec)
    got = classify_all(family, True)
    t_batched = best_time(lambda: classify_all(family, True), repeat=batched_repeat,
                          min_time=0.0)
    start = time.perf_counter()
    ref = classify_all(family, False)
    t_loop = time.perf_counter() - start
    n_diff, worst = compare(got, ref)
    share = float(np.mean(got["path"] == "batched"))
    regimes = {r: int(np.sum(ref["regime"] == r)) for r in np.unique(ref["regime"])}
    print(f"{label}: {family.n_configs} configurations, d = {family.d}; regimes {regimes}")
    print(f"  batched path share {100 * share:.1f} %; verdicts differing from per-case certify: "
          f"{n_diff}; max relative difference of rate/T*/threshold {worst:.2e}")
    print(f"  batched {t_batched:.3f} s ({1e6 * t_batched / family.n_configs:.1f} µs/config), "
          f"per-case certify loop {t_loop:.2f} s ({1e3 * t_loop / family.n_configs:.2f} "
          f"ms/config): speed-up {t_loop / t_batched:.1f}×")


def main() -> None:
    _limiter, settings = pin_one_thread()
    print(settings)
    print("(a) target: every verdict identical, batched ≥ 20× faster than the per-case loop")
    run_case("(a) definite G", ensemble(10_000), batched_repeat=3)
    print("(b) informative: indefinite G goes to certify's numerical evidence")
    run_case("(b) unconstrained B", ensemble(1_000, definite=False), batched_repeat=1)
    with tempfile.TemporaryDirectory() as tmp:
        res = run_sweep(ensemble(10_000), tmp)
        print(f"(c) run_sweep in-process, 10 chunks to Parquet: {res.wall_time:.2f} s, "
              f"counts {res.counts}")


if __name__ == "__main__":
    main()
