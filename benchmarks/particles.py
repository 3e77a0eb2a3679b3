"""Particle-field speed against its matmul + exp limit, and memory (python -m benchmarks.particles).

One field evaluation X[μ_N](x_i) (an Euler step; an RK4 step is four) with H heads costs, for
each head and each block of QUERY_BLOCK queries by BLOCK keys, two matrix products with inner
dimension d + 1 (the shifted logits; then the numerators and the denominator together) and the
exp of the block's logits. The limit of a row is the time of exactly these operations over all
N² / (QUERY_BLOCK · BLOCK) blocks of one head, written with plain numpy ("np lim") and with
plain torch ("th lim") in the row's dtype, times the number of heads; ×limit divides by the
faster of the two, ×numpy is the speed relative to the numpy backend, rel err the Frobenius
distance of the velocity to the numpy one. The row "sdpa64" is scaled_dot_product_attention in
float64, which the torch backend does not use on the CPU. BLAS and torch run one thread, and
times are the process's CPU seconds (other processes share the cores and would inflate wall
times); the kernels and the limits are timed in turn, REPEAT times, and the best is kept.

Peak memory of one Euler step of `simulate` at N = 65 536, d = 16 is measured per backend in a
child process: tracemalloc's peak (numpy allocations) and the growth of the process's
resident-set high-water mark during the step (VmHWM of /proc/self/status, which also counts
torch's allocations).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from riccati_tf import Params
from riccati_tf.empirical.particles import BLOCK, QUERY_BLOCK, simulate, velocity

N_TOKENS, DIM, HEADS = 16_384, 64, (1, 4)
#: (backend, dtype) rows of the speed table
KERNELS = (("numpy", "float64"), ("torch", "float64"), ("torch", "float32"))
#: alternate timings of each kernel and its limit; the best is kept
REPEAT = 3
#: label of the float64 scaled_dot_product_attention path, timed for comparison (on the CPU the
#: torch backend runs the numpy kernel in float64 instead)
SDPA64 = "sdpa64"
MEMORY_N, MEMORY_D, MEMORY_LIMIT_MB = 65_536, 16, 200.0


def layer(d: int, heads: int, rng) -> Params:
    """A layer with logits ⟨B_h x, y⟩ of order one for standard Gaussian tokens."""
    return Params(A=0.1 * rng.standard_normal((d, d)),
                  heads=[(np.eye(d), rng.standard_normal((d, d)) / d) for _ in range(heads)])


def timed(fn) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def numpy_limit(n: int, d: int, heads: int, dtype: str) -> None:
    """The two products and the exp of every block, in numpy."""
    rng = np.random.default_rng(0)
    q = (rng.standard_normal((QUERY_BLOCK, d + 1)) / np.sqrt(d)).astype(dtype)
    keys = rng.standard_normal((n, d + 1)).astype(dtype)
    logits = np.empty((QUERY_BLOCK, BLOCK), dtype)
    part = np.empty((QUERY_BLOCK, d + 1), dtype)
    for _ in range(heads * n // QUERY_BLOCK):
        for j0 in range(0, n, BLOCK):
            kj = keys[j0:j0 + BLOCK]
            np.matmul(q, kj.T, out=logits)
            np.exp(logits, out=logits)
            np.matmul(logits, kj, out=part)


def torch_limit(n: int, d: int, heads: int, dtype: str) -> None:
    """The same operations in torch."""
    import torch

    dt = getattr(torch, dtype)
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(QUERY_BLOCK, d + 1, generator=gen, dtype=dt) / d ** 0.5
    keys = torch.randn(n, d + 1, generator=gen, dtype=dt)
    logits = torch.empty(QUERY_BLOCK, BLOCK, dtype=dt)
    part = torch.empty(QUERY_BLOCK, d + 1, dtype=dt)
    for _ in range(heads * n // QUERY_BLOCK):
        for j0 in range(0, n, BLOCK):
            kj = keys[j0:j0 + BLOCK]
            torch.matmul(q, kj.T, out=logits)
            logits.exp_()
            torch.matmul(logits, kj, out=part)


def sdpa_float64(p: Params, x: np.ndarray) -> np.ndarray:
    """A x + b plus the attention of all heads by scaled_dot_product_attention in float64."""
    from riccati_tf.empirical.particles import _TorchOps

    ops = _TorchOps("cpu", "float64")
    xt = ops.asarray(x)
    return ops.to_numpy(xt @ ops.asarray(p.A).T + ops.asarray(p.b)
                        + ops.sdpa_attention(xt, list(p.heads), BLOCK))


def speed_rows() -> list[dict]:
    """Best-of-REPEAT seconds of one field evaluation per kernel and number of heads, against
    the limit of one head (best of numpy and torch) times the number of heads."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((N_TOKENS, DIM))
    layers = {h: layer(DIM, h, rng) for h in HEADS}
    best, results = {}, {}

    def keep(key, fn):
        t0 = time.process_time()
        out = fn()
        best[key] = min(time.process_time() - t0, best.get(key, np.inf))
        return out

    for _ in range(REPEAT):
        for dtype in ("float64", "float32"):
            keep(("numpy limit", dtype), lambda dt=dtype: numpy_limit(N_TOKENS, DIM, 1, dt))
            keep(("torch limit", dtype), lambda dt=dtype: torch_limit(N_TOKENS, DIM, 1, dt))
        for heads, p in layers.items():
            for backend, dtype in KERNELS:
                results[heads, backend, dtype] = keep(
                    (heads, backend, dtype),
                    lambda p=p, b=backend, dt=dtype: velocity(p, x, backend=b, dtype=dt))
            results[heads, SDPA64, "float64"] = keep((heads, SDPA64, "float64"),
                                                     lambda p=p: sdpa_float64(p, x))
    rows = []
    for heads in HEADS:
        exact = results[heads, "numpy", "float64"]
        for backend, dtype in (*KERNELS, (SDPA64, "float64")):
            limits = [heads * best["numpy limit", dtype], heads * best["torch limit", dtype]]
            seconds = best[heads, backend, dtype]
            err = np.linalg.norm(results[heads, backend, dtype] - exact) / np.linalg.norm(exact)
            rows.append({"heads": heads, "backend": backend, "dtype": dtype,
                         "seconds": seconds, "limits": limits, "ratio": seconds / min(limits),
                         "speedup": best[heads, "numpy", "float64"] / seconds, "rel_err": err})
    return rows


def high_water_mb() -> float:
    """VmHWM of this process in MB (Linux), NaN elsewhere."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def memory_child(backend: str, dtype: str) -> None:
    import tracemalloc

    import torch

    torch.set_num_threads(1)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((MEMORY_N, MEMORY_D))
    p = layer(MEMORY_D, 1, rng)
    simulate(p, x[:64], 0.1, n_steps=1, method="euler", backend=backend, dtype=dtype)  # warm up
    base_rss = high_water_mb()
    tracemalloc.start()
    t0 = time.process_time()
    simulate(p, x, 0.1, n_steps=1, method="euler", backend=backend, dtype=dtype)
    elapsed = time.process_time() - t0
    _, peak = tracemalloc.get_traced_memory()
    print(json.dumps({"traced_peak_mb": peak / 2**20, "seconds": elapsed,
                      "base_rss_mb": base_rss, "rss_growth_mb": high_water_mb() - base_rss}))


def memory_row(backend: str, dtype: str) -> dict:
    child = subprocess.run([sys.executable, "-m", "benchmarks.particles", "--memory-child",
                            backend, dtype], capture_output=True, text=True, check=True,
                           env={"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
                                "PATH": "/usr/bin:/bin"})
    return json.loads(child.stdout.strip().splitlines()[-1])


def main() -> None:
    import torch

    torch.set_num_threads(1)
    with threadpool_limits(limits=1):
        print("BLAS threads:", {i["internal_api"]: i["num_threads"] for i in threadpool_info()},
              "| torch threads:", torch.get_num_threads())
        print(f"one field evaluation (= one Euler step) at N = {N_TOKENS}, d = {DIM}; limit = "
              f"two products + exp per ({QUERY_BLOCK} × {BLOCK}) block × heads; CPU seconds, "
              f"best of {REPEAT}")
        print(f"{'heads':>5} {'backend':>7} {'dtype':>7} {'CPU s':>8} {'np lim':>7} "
              f"{'th lim':>7} {'×limit':>7} {'×numpy':>7} {'rel err':>8}")
        for r in speed_rows():
            print(f"{r['heads']:>5} {r['backend']:>7} {r['dtype']:>7} {r['seconds']:>8.3f} "
                  f"{r['limits'][0]:>7.3f} {r['limits'][1]:>7.3f} {r['ratio']:>7.2f} "
                  f"{r['speedup']:>7.2f} {r['rel_err']:>8.1e}")
    print(f"one Euler step at N = {MEMORY_N}, d = {MEMORY_D} (child processes); limit "
          f"{MEMORY_LIMIT_MB:.0f} MB")
    print(f"{'backend':>7} {'dtype':>7} {'CPU s':>8} {'traced MB':>9} {'RSS +MB':>8} "
          f"{'base RSS':>8}  verdict")
    for backend, dtype in KERNELS:
        m = memory_row(backend, dtype)
        grown = max(m["traced_peak_mb"], m["rss_growth_mb"])
        verdict = "under" if grown < MEMORY_LIMIT_MB else "OVER"
        print(f"{backend:>7} {dtype:>7} {m['seconds']:>8.1f} {m['traced_peak_mb']:>9.1f} "
              f"{m['rss_growth_mb']:>8.1f} {m['base_rss_mb']:>8.1f}  {verdict}")


if __name__ == "__main__":
    if "--memory-child" in sys.argv:
        with threadpool_limits(limits=1):
            memory_child(*sys.argv[sys.argv.index("--memory-child") + 1:][:2])
    else:
        main()
