"""The exact flow with a mean against scipy's DOP853 at equal accuracy (issue #28, item 4).

For d = 8 and 32, the scalar-V layer of `benchmarks.flows.scalar_problem` (seed 0; converging
covariance, full-rank Σ0, mean and bias) to T = 5, one BLAS thread (threadpoolctl):

- exact: `flow(p, Gaussian(m0, Σ0), T, method="exact", t_eval=...)`;
- scipy: `solve_ivp(rhs, (0, T), y0, method="DOP853", rtol=1e-13, atol=1e-15, t_eval=...)` on
  the moment equations (ṁ, Σ̇) with the package's right-hand side
  (`riccati_tf.state.moments.drift_arrays`).

Each is timed in CPU time over ROUNDS interleaved rounds of one call each, the order alternating
round by round, the ratio the median of the per-round ratios (as in `benchmarks.realscale`'s
parity section), at two output grids: the end state (t_eval = [0, T]; the target: exact ≥ 5×
faster than scipy) and the flow's default 101 output times (reported, no target). Errors are
the largest difference of the mean from an independent reference, DOP853 at rtol 2.3e-14 and
atol 1e-16 (the tightest rtol scipy takes), relative to the reference's largest entry; exact
must be at least as accurate as scipy (or within 1e-15, the reference's own level).

Run: python -m benchmarks.exact_mean
"""

from __future__ import annotations

import time

import numpy as np
from scipy.integrate import solve_ivp

from riccati_tf import Gaussian, Params, flow
from riccati_tf.state.moments import drift_arrays

from ._timing import pin_one_thread
from .flows import scalar_problem

T_FINAL = 5.0
RTOL, ATOL = 1e-13, 1e-15
REF_RTOL, REF_ATOL = 2.3e-14, 1e-16
TARGET = 5.0
ROUNDS = 15
#: errors at or below this (the reference's own level) count as equal
ERROR_FLOOR = 1e-15


def _cpu(fn) -> tuple[object, float]:
    start = time.process_time()
    out = fn()
    return out, time.process_time() - start


def compare(d: int, t_eval: np.ndarray) -> dict[str, float]:
    """The median per-round ratio scipy/exact, the median times and the mean errors."""
    A, B, V, cov0, m0, b = scalar_problem(d, np.random.default_rng(0))
    p = Params(A=A, B=B, V=V, b=b)
    g = Gaussian(m0, cov0)
    y0 = np.concatenate([m0, cov0.ravel()])

    def rhs(_t, y):
        X, dm = drift_arrays(p, y[:d], y[d:].reshape(d, d))
        return np.concatenate([dm, (X + X.T).ravel()])

    def scipy_run(rtol=RTOL, atol=ATOL):
        return solve_ivp(rhs, (0.0, T_FINAL), y0, method="DOP853", rtol=rtol, atol=atol,
                         t_eval=t_eval)

    runs = {"exact": lambda: flow(p, g, T_FINAL, method="exact", t_eval=t_eval),
            "scipy": scipy_run}
    cpu: dict[str, list[float]] = {"exact": [], "scipy": []}
    out = {}
    for i in range(ROUNDS):  # interleaved, the order alternating round by round
        for name in (("exact", "scipy") if i % 2 == 0 else ("scipy", "exact")):
            out[name], seconds = _cpu(runs[name])
            cpu[name].append(seconds)
    tr, sol = out["exact"], out["scipy"]
    ref = scipy_run(REF_RTOL, REF_ATOL).y[:d].T
    size = np.abs(ref).max()
    return {"ratio": float(np.median(np.divide(cpu["scipy"], cpu["exact"]))),
            "exact": float(np.median(cpu["exact"])), "scipy": float(np.median(cpu["scipy"])),
            "nfev": sol.nfev,
            "err_exact": float(np.abs(tr.mean - ref).max() / size),
            "err_scipy": float(np.abs(sol.y[:d].T - ref).max() / size)}


def exact_section(dims: tuple[int, ...] = (8, 32)) -> list[str]:
    """Print a line per case; return the verdict lines (the target applies to the end state)."""
    _limiter, settings = pin_one_thread()
    print(settings)
    verdicts = []
    for d in dims:
        for label, t_eval in (("end state", np.array([0.0, T_FINAL])),
                              ("101 output times", np.linspace(0.0, T_FINAL, 101))):
            r = compare(d, t_eval)
            ratio = r["ratio"]
            print(f"d = {d:3d} {label:16s} exact {1e3 * r['exact']:7.2f} ms, DOP853 "
                  f"{1e3 * r['scipy']:7.2f} ms ({r['nfev']} rhs): {ratio:.1f}×, mean error "
                  f"exact {r['err_exact']:.1e}, scipy {r['err_scipy']:.1e}", flush=True)
            accurate = r["err_exact"] <= max(r["err_scipy"], ERROR_FLOOR)
            if label == "end state":
                ok = ratio >= TARGET and accurate
                verdicts.append(
                    f"# exact with mean d = {d} (end state): {ratio:.1f}× scipy DOP853 "
                    f"(≥ {TARGET:g}), error {r['err_exact']:.1e} vs scipy "
                    f"{r['err_scipy']:.1e}: {'PASS' if ok else 'FAIL'}")
            else:
                verdicts.append(
                    f"# exact with mean d = {d} (101 output times, no target): {ratio:.1f}× "
                    f"scipy DOP853, error {r['err_exact']:.1e} vs scipy {r['err_scipy']:.1e}"
                    f"{'' if accurate else ' (less accurate than scipy)'}")
    return verdicts


def main():
    for line in exact_section():
        print(line)


if __name__ == "__main__":
    main()
