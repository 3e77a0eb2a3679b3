"""Symbolic-engine benchmarks (issue: symbolic engine).

Compiled matrix-form right-hand side vs plain element-wise `lambdify` of the same derived
softmax-attention system (one head) at d = 4, 8, 16:

* derive + compile: `transformer_system(d)` + `compile_moment_rhs(mode="matrix")` with every
  cache cleared (the first row of a fresh process also pays SymPy's one-off warm-up, reported
  separately), against the element-wise derivation (`system.dmean`, `system.dcov`) +
  `sympy.lambdify` without cse, run in a child process with a wall-clock budget (its source grows
  like d⁵; a run over budget is reported as such);
* per call: (Params, Gaussian) → (ṁ, Σ̇) for both, plus the element-wise `lambdify(cse=True)`
  path (`mode="elementwise"`) and `riccati_tf.moment_rhs` for reference.

Targets: compiled per call ≥ 10× faster than plain lambdify at d = 8; derive + compile ≤ 2 s at
d = 16. Run: python -m benchmarks.symbolic [--plain-budget SECONDS]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time

import numpy as np
import sympy as sp

from riccati_tf import Gaussian, Params, moment_rhs
from riccati_tf.symbolic import clear_caches, compile_moment_rhs, transformer_system

from ._timing import best_time, pin_one_thread

DIMS = (4, 8, 16)
PLAIN_BUDGET_S = 900.0


def problem(d: int, seed: int = 0):
    rng = np.random.default_rng(seed + d)
    A, B, V = (rng.standard_normal((d, d)) / np.sqrt(d) for _ in range(3))
    X = rng.standard_normal((d, d))
    return Params(A, B=B, V=V, b=rng.standard_normal(d)), Gaussian(rng.standard_normal(d),
                                                                   X @ X.T / d)


def compiled_path(d: int):
    clear_caches()
    t0 = time.perf_counter()
    rhs = compile_moment_rhs(transformer_system(d), mode="matrix")
    return rhs, time.perf_counter() - t0


def plain_lambdify_path(d: int):
    """Element-wise derivation + plain lambdify (no cse), called with the raw arrays."""
    clear_caches()
    t0 = time.perf_counter()
    s = transformer_system(d)
    (V, B), = s.layer.heads
    f = sp.lambdify([s.layer.A, s.layer.b, V, B, s.gaussian.mean, s.gaussian.cov],
                    [s.dmean, s.dcov])

    def rhs(p: Params, g: Gaussian):
        out_m, out_S = f(p.A.ravel(), p.b, p.V.ravel(), p.B.ravel(), g.mean, g.cov.ravel())
        return np.asarray(out_m, dtype=float).reshape(-1), np.asarray(out_S, dtype=float)

    return rhs, time.perf_counter() - t0


def _plain_child(d: int, conn) -> None:
    _limiter, _ = pin_one_thread()
    rhs, t_build = plain_lambdify_path(d)
    p, g = problem(d)
    ref = moment_rhs(p, g)
    out = rhs(p, g)
    diff = max(np.abs(out[k] - ref[k]).max() / np.abs(ref[k]).max() for k in (0, 1))
    conn.send((t_build, best_time(lambda: rhs(p, g), repeat=3), diff))
    conn.close()


def plain_in_child(d: int, budget: float):
    """(build seconds, seconds per call, max rel diff) or None when over the budget."""
    parent, child = mp.get_context("fork").Pipe(duplex=False)
    proc = mp.get_context("fork").Process(target=_plain_child, args=(d, child))
    proc.start()
    result = parent.recv() if parent.poll(budget) else None
    proc.join(1.0 if result is not None else 0.0)
    if proc.is_alive():
        proc.terminate()
        proc.join()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plain-budget", type=float, default=PLAIN_BUDGET_S,
                        help="wall-clock seconds allowed for each plain-lambdify build")
    args = parser.parse_args()
    _limiter, settings = pin_one_thread()
    print(__doc__.strip().splitlines()[0])
    print(settings)
    _, cold = compiled_path(2)
    print(f"# first derive + compile in this process (SymPy warm-up included): {cold:.2f} s")
    print(f"{'d':>3}  {'derive+compile':>14}  {'plain derive+lambdify':>21}  "
          f"{'compiled/call':>13}  {'plain/call':>11}  {'cse/call':>9}  {'moment_rhs':>10}  "
          f"{'speed-up':>8}  {'max rel diff':>12}")
    rows = {}
    for d in DIMS:
        p, g = problem(d)
        fast, t_fast = compiled_path(d)
        cse = compile_moment_rhs(transformer_system(d), mode="elementwise")
        ref = moment_rhs(p, g)
        diff = max(np.abs(f(p, g)[k] - ref[k]).max() / np.abs(ref[k]).max()
                   for f in (fast, cse) for k in (0, 1))
        c_fast = best_time(lambda f=fast, p=p, g=g: f(p, g))
        c_cse = best_time(lambda f=cse, p=p, g=g: f(p, g))
        c_ref = best_time(lambda p=p, g=g: moment_rhs(p, g))
        plain = plain_in_child(d, args.plain_budget)
        if plain is None:
            build, call, speed = f"> {args.plain_budget:.0f} s", "—", float("nan")
        else:
            diff = max(diff, plain[2])
            build, call = f"{plain[0]:.2f} s", f"{plain[1] * 1e6:.0f} µs"
            speed = plain[1] / c_fast
        rows[d] = (t_fast, speed)
        print(f"{d:>3}  {t_fast:>12.3f} s  {build:>21}  {c_fast * 1e6:>10.1f} µs  {call:>11}  "
              f"{c_cse * 1e6:>6.0f} µs  {c_ref * 1e6:>7.1f} µs  {speed:>7.0f}×  {diff:>12.1e}")
    ok_speed, ok_time = rows[8][1] >= 10, rows[16][0] <= 2.0
    print(f"target: compiled per call ≥ 10× plain lambdify at d = 8: {rows[8][1]:.0f}× "
          f"({'met' if ok_speed else 'NOT met'})")
    print(f"target: derive + compile ≤ 2 s at d = 16: {rows[16][0]:.3f} s "
          f"({'met' if ok_time else 'NOT met'})")


if __name__ == "__main__":
    main()
