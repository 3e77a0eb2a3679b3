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
(d) A 1 000-configuration d = 3 flow sweep (scalar V, t_final = 3; about a third of the layers blow
    up): the sweep's flow columns (`compute_chunk`: two output times per flow, `flow_end`) against
    `flow` with its default grid of 101 output times, the end state read, row by row — status and
    T* equal, eigenvalues within 1e-12 ‖Σ‖₂ times Σ's conditioning T*/(T* − t) near a blow-up,
    |m| within the exact flow's grid dependence — and both wall times. Target: ≥ 10×. Then the
    same per row, by status (completed rows; blow-up rows, whose state is read at the last
    default-grid time before T*).
(e) Scalar-V certify at d = 8 and 32 (beyond certificates.EXACT_MAX_D: premises decided with
    tolerances), on (a)'s ensemble lifted to R^d and on its part with a ≤ −0.1: batched path
    against the per-case loop, verdicts compared, batched share; and the peak memory
    (tracemalloc) of the stacked classifier as the sweep calls it (with the heads) and of its
    Lyapunov solves (`lyapunov_stack`, two right-hand sides) on a chunk of the default size at
    d = 32.

Run: python -m benchmarks.sweep
"""

from __future__ import annotations

import importlib
import tempfile
import time
import tracemalloc

import numpy as np

from riccati_tf import Gaussian, flow
from riccati_tf.sweep import (
    certify_columns,
    classify_scalar,
    compute_chunk,
    parse_family,
    run_sweep,
)
from riccati_tf.sweep.batched import g_matrix, lyapunov_stack, quadratic_constants, scalar_values
from riccati_tf.sweep.family import DEFAULT_CHUNK
from riccati_tf.sweep.runner import flow_end

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
                   "B": B, "V": {"v": [[1.0, 0.0], [0.0, 1.0]]}},
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


def flow_spec(n: int) -> dict:
    eye = np.eye(3).tolist()
    return {
        "analysis": "flow", "t_final": 3.0, "chunk_size": 250,
        "family": {"random": {"n": n, "seed": 11, "axes": {
            "v": {"uniform": [-1.0, 1.0]}, "a": {"uniform": [-1.0, 0.5]},
            "s": {"loguniform": [0.2, 5.0]}}}},
        "params": {"A": {"const": [[0.0, 0.3, 0.0], [-0.3, -0.2, 0.1], [0.0, 0.0, -0.4]],
                         "a": eye},
                   "B": [[1.0, 0.2, 0.0], [0.2, 0.6, 0.1], [0.0, 0.1, 0.8]],
                   "V": {"v": np.eye(3).tolist()},
                   "b": [0.2, -0.1, 0.0]},
        "initial": {"mean": [0.5, 0.0, 0.1],
                    "cov": {"const": [[0.0, 0.1, 0.0], [0.1, 0.0, 0.0], [0.0, 0.0, 0.0]],
                            "s": eye}},
    }


def timed_rows(family, run):
    """(trajectory, seconds) of run(params, gaussian, t_final) for every configuration."""
    for c in range(family.n_chunks):
        chunk = family.chunk(c)
        for i in range(len(chunk)):
            start = time.perf_counter()
            tr = run(chunk.params(i), Gaussian(chunk.mean[i], chunk.cov[i]), family.t_final)
            yield tr, time.perf_counter() - start


def default_grid_columns(family) -> dict[str, np.ndarray]:
    """The flow columns the slow way: `flow` with its default 101 output times, end read; and
    each row's time ("seconds")."""
    rows = []
    for tr, seconds in timed_rows(family, flow):
        eig = np.linalg.eigvalsh(tr.cov[-1])
        rows.append((tr.status, np.nan if tr.blowup_time is None else tr.blowup_time,
                     eig[0], eig[-1], np.linalg.norm(tr.mean[-1]), seconds))
    names = ("status", "blowup_time", "cov_eig_min", "cov_eig_max", "mean_norm", "seconds")
    return {k: np.array(v) for k, v in zip(names, zip(*rows, strict=True), strict=True)}


def run_flow_case() -> None:
    spec = flow_spec(1000)
    family = parse_family(spec)
    start = time.perf_counter()
    parts = [compute_chunk(spec, c)[1] for c in range(family.n_chunks)]
    t_new = time.perf_counter() - start
    new = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    start = time.perf_counter()
    old = default_grid_columns(family)
    t_old = time.perf_counter() - start
    T = old["blowup_time"]
    grid_t = np.where(np.isnan(T), family.t_final,
                      np.floor(T / (family.t_final / 100) * (1 - 1e-15)) * family.t_final / 100)
    kappa = np.where(np.isnan(T), 1.0, T / (T - grid_t))
    eig_dev = max(float(np.max(np.abs(new[k] - old[k]) / (kappa * old["cov_eig_max"])))
                  for k in ("cov_eig_min", "cov_eig_max"))
    same_t = np.isnan(T) == np.isnan(new["blowup_time"])
    t_dev = float(np.nanmax(np.abs(new["blowup_time"] - T) / T))
    m_dev = float(np.max(np.abs(new["mean_norm"] - old["mean_norm"]) / old["mean_norm"]))
    print(f"(d) flow, {family.n_configs} configurations, d = 3: status "
          f"{dict(zip(*np.unique(old['status'], return_counts=True), strict=True))}; rows with "
          f"a different status {int(np.sum(new['status'] != old['status']))}, different "
          f"blow-up/completion {int(np.sum(~same_t))}")
    print(f"  max |ΔT*|/T* {t_dev:.1e}; max |Δλ(Σ)| / (κ‖Σ‖₂) {eig_dev:.1e}; "
          f"max |Δ|m|| / |m| {m_dev:.1e}")
    print(f"  sweep flow columns {t_new:.2f} s ({1e3 * t_new / family.n_configs:.2f} ms/config), "
          f"default-grid flow per case {t_old:.2f} s ({1e3 * t_old / family.n_configs:.2f} "
          f"ms/config): speed-up {t_old / t_new:.1f}×")
    per_row = np.array([seconds for _, seconds in timed_rows(family, flow_end)])
    for status in np.unique(old["status"]):
        rows = old["status"] == status
        mine, theirs = per_row[rows].mean(), old["seconds"][rows].mean()
        print(f"  {status} rows ({int(rows.sum())}): flow_end {1e3 * mine:.2f} ms, default grid "
              f"{1e3 * theirs:.2f} ms per row: {theirs / mine:.1f}×")


def ensemble_d(d: int, n: int) -> dict:
    """(a)'s ensemble in R^d: A = diag(0, …, −0.6) + aI + ωJ (J skew), V = vI,
    B = βB1 + S (B1 ≻ 0, S skew: G definite), Σ0 = sI + I + cC."""
    rng = np.random.default_rng(d)
    J = rng.standard_normal((d, d))
    J = (J - J.T) / np.sqrt(d)
    X = rng.standard_normal((d, d))
    B1 = X @ X.T / d + 0.2 * np.eye(d)
    S = rng.standard_normal((d, d))
    S = 0.5 * (S - S.T) / np.sqrt(d)
    C = rng.standard_normal((d, d))
    C = (C + C.T) / (4 * np.sqrt(d))
    eye = np.eye(d).tolist()
    spec = ensemble(n)
    spec["params"] = {"A": {"const": np.diag(np.linspace(0.0, -0.6, d)).tolist(), "a": eye,
                            "w": J.tolist()},
                      "B": {"const": S.tolist(), "beta": B1.tolist()}, "V": {"v": eye}}
    spec["initial"] = {"cov": {"const": eye, "s": eye, "c": C.tolist()}}
    return spec


def peak_memory(fn) -> float:
    """Peak traced memory (MB) of one call."""
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 1e6


def memory_case(d: int) -> None:
    spec = ensemble_d(d, DEFAULT_CHUNK)
    spec["chunk_size"] = DEFAULT_CHUNK
    chunk = parse_family(spec).chunk(0)
    _, v = scalar_values(chunk.V)
    G = g_matrix(v, chunk.B)
    mb = peak_memory(lambda: classify_scalar(chunk.A, G, chunk.cov,
                                             quadratic_constants(chunk.V, chunk.B),
                                             heads=(chunk.V, chunk.B)))
    A = chunk.A - 2.0 * np.eye(d)  # Hurwitz: the threshold's two Lyapunov solves
    rhs = np.stack([G, -np.broadcast_to(np.eye(d), A.shape)], axis=1)
    start = time.perf_counter()
    lyap = peak_memory(lambda: lyapunov_stack(A, rhs))
    t_lyap = time.perf_counter() - start
    print(f"  d = {d}, chunk of {DEFAULT_CHUNK}: peak memory of the stacked classifier "
          f"{mb:.0f} MB; of lyapunov_stack (2 right-hand sides) {lyap:.0f} MB in {t_lyap:.2f} s "
          f"(a Kronecker k²×k² stack would hold {DEFAULT_CHUNK * d ** 4 * 8 / 1e9:.1f} GB)")


def main() -> None:
    _limiter, settings = pin_one_thread()
    print(settings)
    importlib.import_module("control")  # certify's local certificates: a one-off import of seconds
    print("(a) target: every verdict identical, batched ≥ 20× faster than the per-case loop")
    run_case("(a) definite G", ensemble(10_000), batched_repeat=3)
    print("(b) informative: indefinite G goes to certify's numerical evidence")
    run_case("(b) unconstrained B", ensemble(1_000, definite=False), batched_repeat=1)
    with tempfile.TemporaryDirectory() as tmp:
        res = run_sweep(ensemble(10_000), tmp)
        print(f"(c) run_sweep in-process, 10 chunks to Parquet: {res.wall_time:.2f} s, "
              f"counts {res.counts}")
    print("(d) target: ≥ 10× over flow with its default 101 output times, identical columns")
    run_flow_case()
    print("(e) target: batched ≥ 5× the per-case loop at d = 8 and 32, ≤ 1 GB at d = 32")
    for d, n in ((8, 200), (32, 100)):
        run_case(f"(e) d = {d}", ensemble_d(d, n), batched_repeat=3)
        stable = ensemble_d(d, n)
        stable["family"]["random"]["axes"]["a"] = {"uniform": [-1.5, -0.1]}
        run_case(f"(e) d = {d}, a ≤ −0.1 (no anti-stable A)", stable, batched_repeat=3)
    memory_case(32)


if __name__ == "__main__":
    main()
