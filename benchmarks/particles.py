"""Particle-system throughput and memory (run: python -m benchmarks.particles).

One field evaluation X[μ_N](x_i) (an Euler step; an RK4 step is four) costs 4 N² d flops in its
two matrix products (logits and weighted values) plus N² exponentials. Its rate is reported as a
fraction of this machine's one-thread matmul rate measured in the same run. Peak memory of one
RK4 step at N = 65 536, d = 16 is measured in a child process: tracemalloc's peak (numpy
allocations are traced) and the process's resident-set high-water mark (VmHWM of
/proc/self/status; getrusage's ru_maxrss would carry the parent's value across exec).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from riccati_tf import Params
from riccati_tf.particles import simulate, velocity

SIZES = [(4096, 16), (4096, 64), (16_384, 16), (16_384, 64)]
MEMORY_N, MEMORY_D, MEMORY_LIMIT_MB = 65_536, 16, 300.0


def best_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def matmul_rate(n: int = 1024) -> float:
    """flop/s of one n×n by n×n product (2 n³ flops), best of 5."""
    a = np.random.default_rng(0).standard_normal((n, n))
    return 2 * n**3 / best_time(lambda: a @ a, 5)


def layer(d: int, rng) -> Params:
    return Params(A=0.1 * rng.standard_normal((d, d)), B=rng.standard_normal((d, d)) / d,
                  V=np.eye(d))


def field_rate(n: int, d: int, backend: str = "numpy") -> float:
    rng = np.random.default_rng(1)
    p, x = layer(d, rng), rng.standard_normal((n, d))
    if backend == "numpy":
        t = best_time(lambda: velocity(p, x), 2)
    else:
        # an Euler step through simulate (one evaluation, plus the moments)
        t = best_time(lambda: simulate(p, x, 0.1, n_steps=1, method="euler", backend=backend), 2)
    return 4 * n * n * d / t, t


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


def memory_child() -> None:
    import tracemalloc

    rng = np.random.default_rng(2)
    x = rng.standard_normal((MEMORY_N, MEMORY_D))
    p = layer(MEMORY_D, rng)
    base_rss = high_water_mb()
    tracemalloc.start()
    t0 = time.perf_counter()
    simulate(p, x, 0.1, n_steps=1, method="rk4")
    elapsed = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    print(json.dumps({"traced_peak_mb": peak / 2**20, "seconds": elapsed,
                      "base_rss_mb": base_rss, "max_rss_mb": high_water_mb()}))


def main() -> None:
    with threadpool_limits(limits=1):
        print("BLAS threads:", {i["internal_api"]: i["num_threads"] for i in threadpool_info()})
        base = matmul_rate()
        print(f"one-thread matmul rate (1024², best of 5): {base / 1e9:.1f} GFLOP/s")
        print(f"{'N':>7} {'d':>4} {'backend':>8} {'seconds':>8} {'GFLOP/s':>8} {'of matmul':>9}")
        rows = [(n, d, "numpy") for n, d in SIZES]
        try:
            import torch

            torch.set_num_threads(1)
            rows += [(4096, 16, "torch"), (4096, 64, "torch")]
        except ImportError:
            print("(torch not installed: numpy backend only)")
        for n, d, backend in rows:
            rate, t = field_rate(n, d, backend)
            print(f"{n:>7} {d:>4} {backend:>8} {t:>8.3f} {rate / 1e9:>8.2f} {rate / base:>9.2f}")
    child = subprocess.run([sys.executable, "-m", "benchmarks.particles", "--memory-child"],
                           capture_output=True, text=True, check=True,
                           env={"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
                                "PATH": "/usr/bin:/bin"})
    mem = json.loads(child.stdout.strip().splitlines()[-1])
    verdict = "under" if mem["traced_peak_mb"] < MEMORY_LIMIT_MB else "OVER"
    print(f"one RK4 step at N = {MEMORY_N}, d = {MEMORY_D} ({mem['seconds']:.1f} s): traced "
          f"peak {mem['traced_peak_mb']:.1f} MB ({verdict} {MEMORY_LIMIT_MB:.0f} MB); process "
          f"RSS high-water {mem['max_rss_mb']:.1f} MB, of which {mem['base_rss_mb']:.1f} MB "
          f"before the step (interpreter, libraries, the cloud)")


if __name__ == "__main__":
    if "--memory-child" in sys.argv:
        with threadpool_limits(limits=1):
            memory_child()
    else:
        main()
