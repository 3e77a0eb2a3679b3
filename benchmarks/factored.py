"""Factored attention heads and the fixed cost of the rk flow (SPEC §2 moment equations).

(a) moment RHS (ṁ, Σ̇) of a d = 384, 12-head, rank-32 layer: heads as `Head(Q, K, V, O)`
    factors vs the same heads as dense (V_h, B_h) pairs — target ≥ 8× faster, equal to ≤ 1e-12
    relative. Dense heads are timed twice: through the package (Σ̇ = MΣ + ΣMᵀ with
    M = A + Σ_h (V_hΣ)B_h, 2H + 1 products of d×d matrices) and in the former evaluation
    AΣ + Σ_h (V_hΣ)(B_hΣ) (1 + 3H products), written out here;
(b) flow(method="rk") of that layer to t = 2 — target ≤ 15 units; the same heads given as dense
    (V_h, B_h) pairs, which flow factors itself (pivoted QR, `state.lowrank.factored_layer`),
    and integrated as given (`rk.run._rk_flow`, 2H + 1 products per right-hand side);
(c) flow(method="rk") vs plain scipy solve_ivp DOP853 (no event, no dense output) on the same
    moment system at d = 8 with the same number of right-hand-side evaluations — target ≤ 1.2×;
(d) where flow starts factoring dense heads (state.lowrank.FACTOR_MIN_D): per d, the RHS of
    H heads of rank d/H as dense pairs and as factors, and the one-off cost of factoring them
    (two pivoted QRs per head): the number of dense right-hand sides that pays for it.

Times are CPU seconds of this process (time.process_time: other processes on the machine do not
count), best of interleaved repeats, one BLAS thread. "unit" = one
scipy.linalg.solve_continuous_lyapunov of the same d, timed in the same run.
Run: python -m benchmarks.factored
"""

from __future__ import annotations

import time

import numpy as np
from scipy.integrate import solve_ivp
from scipy.linalg import solve_continuous_lyapunov

import riccati_tf.flows.rk.run as rk_run
from riccati_tf import Gaussian, Params, flow
from riccati_tf.flows import integrate
from riccati_tf.state.lowrank import FACTOR_MIN_D, factored_layer, value_factors
from riccati_tf.state.moments import moment_arrays
from riccati_tf.state.params import Head

from ._timing import pin_one_thread

D, HEADS, RANK, T = 384, 12, 32, 2.0
SMALL_D, SMALL_T = 8, 2.0
RTOL, ATOL = 1e-10, 1e-12  # flow's defaults


def cpu_times(fns: dict, repeat: int) -> dict:
    """Best CPU time of each callable over `repeat` interleaved rounds."""
    best = dict.fromkeys(fns, np.inf)
    for _ in range(repeat):
        for name, fn in fns.items():
            start = time.process_time()
            fn()
            best[name] = min(best[name], time.process_time() - start)
    return best


def model_layer(rng, d: int = D, heads: int = HEADS, rank: int = RANK):
    """A layer at encoder scale: A = −I/2 + small noise, heads with the logit scale 1/√rank folded
    into Q, weights of size 1/√d; m0, b random, Σ0 = XXᵀ/d."""
    def w(*shape):
        return rng.standard_normal(shape) / np.sqrt(d)

    hs = [Head(w(rank, d) / np.sqrt(rank), w(rank, d), w(rank, d), w(d, rank))
          for _ in range(heads)]
    A = -0.5 * np.eye(d) + 0.1 * w(d, d)
    X = rng.standard_normal((d, d))
    return Params(A, b=w(d), heads=hs), Gaussian(w(d), X @ X.T / d)


def former_dense_rhs(p: Params, m: np.ndarray, S: np.ndarray):
    """ṁ = (A + Σ_h V_h)m + Σ_h V_hΣB_h m + b, Σ̇ = X + Xᵀ with X = AΣ + Σ_h (V_hΣ)(B_hΣ)."""
    X = p.A @ S
    dm = p.A @ m + p.b
    for V, B in p.heads:
        VS = V @ S
        X += VS @ (B @ S)
        dm += V @ m + VS @ (B @ m)
    return dm, X + X.T


def rel_diff(a, b) -> float:
    return max(np.abs(x - y).max() / np.abs(y).max() for x, y in zip(a, b, strict=True))


def unit_time(d: int, rng) -> float:
    A = rng.standard_normal((d, d)) / np.sqrt(d) - 2 * np.eye(d)
    return cpu_times({"lyap": lambda: solve_continuous_lyapunov(A, np.eye(d))}, 5)["lyap"]


def rhs_rows(pf: Params, g: Gaussian):
    pd = Params(pf.A, b=pf.b, heads=[tuple(pair) for pair in pf.heads])
    m, S = g.mean, g.cov
    diff = rel_diff(moment_arrays(pf, m, S), moment_arrays(pd, m, S))
    diff_former = rel_diff(moment_arrays(pf, m, S), former_dense_rhs(pd, m, S))
    t = cpu_times({"factored": lambda: moment_arrays(pf, m, S),
                   "dense": lambda: moment_arrays(pd, m, S),
                   "former": lambda: former_dense_rhs(pd, m, S)}, 7)
    return t, diff, diff_former


def counted_evaluations(fn) -> int:
    """Right-hand-side evaluations of the rk integration inside fn()."""
    count = [0]
    original = integrate.drift_arrays

    def counting(*args):
        count[0] += 1
        return original(*args)

    integrate.drift_arrays = counting
    try:
        fn()
    finally:
        integrate.drift_arrays = original
    return count[0]


def plain_dop853(p: Params, g: Gaussian, atol, t_eval):
    """scipy solve_ivp DOP853 on the state (m, vec Σ) with the package's moment RHS."""
    d = g.d

    def rhs(_t, y):
        dm, dS = moment_arrays(p, y[:d], y[d:].reshape(d, d))
        return np.concatenate([dm, dS.ravel()])

    y0 = np.concatenate([g.mean, g.cov.ravel()])
    return solve_ivp(rhs, (0.0, SMALL_T), y0, method="DOP853", rtol=RTOL, atol=atol,
                     t_eval=t_eval)


def small_case(rng, centred: bool):
    d = SMALL_D
    A = -0.3 * np.eye(d) + rng.standard_normal((d, d)) / np.sqrt(d)
    heads = [(rng.standard_normal((d, d)) / d, rng.standard_normal((d, d)) / d)
             for _ in range(2)]
    X = rng.standard_normal((d, d))
    m0, b = (np.zeros(d), None) if centred else (rng.standard_normal(d), rng.standard_normal(d))
    return Params(A, b=b, heads=heads), Gaussian(m0, X @ X.T / d)


def overhead_rows(rng):
    """(case, nfev rk, nfev plain, CPU times) at d = 8 and flow's default tolerances and output
    times; the plain run gets the per-entry atol that rk uses (rk.run._scaled_atol), so both take
    the same steps (rk adds one evaluation: its end-of-run blow-up check)."""
    rows = []
    t_eval = np.linspace(0.0, SMALL_T, integrate.DEFAULT_OUTPUTS)
    for label, centred in [("m0, b ≠ 0", False), ("m0 = b = 0", True)]:
        p, g = small_case(rng, centred)
        atol = rk_run._scaled_atol(g, ATOL, RTOL)
        n_rk = counted_evaluations(lambda p=p, g=g: flow(p, g, SMALL_T, method="rk"))
        n_plain = plain_dop853(p, g, atol, t_eval).nfev
        t = cpu_times({"rk": lambda p=p, g=g: flow(p, g, SMALL_T, method="rk"),
                       "rk, no dense output": lambda p=p, g=g: flow(
                           p, g, SMALL_T, method="rk", dense_output=False),
                       "plain": lambda p=p, g=g, a=atol: plain_dop853(p, g, a, t_eval)}, 40)
        rows.append((label, n_rk, n_plain, t))
    return rows


def crossover_rows(rng):
    """(d, H, dense RHS s, factored RHS s, factoring s) for H heads of rank d/H."""
    rows = []
    for d, heads in ((16, 4), (32, 4), (64, 8), (128, 8)):
        pf, g = model_layer(rng, d, heads, d // heads)
        pd = Params(pf.A, b=pf.b, heads=[tuple(pair) for pair in pf.heads])
        m, S = g.mean, g.cov

        def factor(pd=pd):
            value_factors.cache_clear()
            factored_layer.cache_clear()
            return factored_layer(pd)

        repeat = 200 if d < 64 else 30
        t = cpu_times({"dense": lambda pd=pd, m=m, S=S: moment_arrays(pd, m, S),
                       "factored": lambda pf=pf, m=m, S=S: moment_arrays(pf, m, S),
                       "factoring": factor}, repeat)
        rows.append((d, heads, t["dense"], t["factored"], t["factoring"]))
    return rows


def main():
    _limiter, settings = pin_one_thread()
    print(settings + "; CPU time (time.process_time)")
    rng = np.random.default_rng(0)
    unit = unit_time(D, rng)
    print(f"\nunit: solve_continuous_lyapunov at d = {D}: {1e3 * unit:.1f} ms")
    pf, g = model_layer(rng)
    t, diff, diff_former = rhs_rows(pf, g)
    print(f"\n(a) moment RHS (ṁ, Σ̇), d = {D}, {HEADS} heads of rank {RANK}   "
          f"target ≥ 8×, ≤ 1e-12 relative")
    print(f"{'heads':>42} {'time [ms]':>10} {'factored ×':>11} {'rel. diff':>10}")
    print(f"{'factored Head(Q, K, V, O)':>42} {1e3 * t['factored']:>10.2f} {1.0:>10.1f}× "
          f"{'':>10}")
    print(f"{'dense (V_h, B_h), package (2H + 1 products)':>42} {1e3 * t['dense']:>10.2f} "
          f"{t['dense'] / t['factored']:>10.1f}× {diff:>10.1e}")
    print(f"{'dense, former AΣ + Σ(VΣ)(BΣ) (1 + 3H)':>42} {1e3 * t['former']:>10.2f} "
          f"{t['former'] / t['factored']:>10.1f}× {diff_former:>10.1e}")
    print(f"\n(b) flow(method='rk') of that layer to t = {T:g} (m0, b ≠ 0; 101 output times)   "
          f"target ≤ 15 units")
    pd = Params(pf.A, b=pf.b, heads=[tuple(pair) for pair in pf.heads])

    def from_pairs():  # the pivoted QR factorisations paid by every call
        value_factors.cache_clear()
        factored_layer.cache_clear()
        return flow(pd, g, T, method="rk")

    n_eval = counted_evaluations(lambda: flow(pf, g, T, method="rk"))
    tb = cpu_times({"Head factors": lambda: flow(pf, g, T, method="rk"),
                    "Head factors, dense_output=False": lambda: flow(
                        pf, g, T, method="rk", dense_output=False),
                    "dense pairs (factored by flow)": from_pairs}, 2)
    t_out = np.linspace(0.0, T, integrate.DEFAULT_OUTPUTS)
    tb |= cpu_times({"dense pairs as given": lambda: rk_run._rk_flow(
        pd, g, t_out, T, RTOL, ATOL, dense_output=True)}, 1)
    ref, got = rk_run._rk_flow(pd, g, t_out, T, RTOL, ATOL), from_pairs()
    print(f"{'heads':>34} {'RHS evals':>10} {'time [s]':>9} {'units':>7}")
    for name, seconds in tb.items():
        print(f"{name:>34} {n_eval:>10} {seconds:>9.2f} {seconds / unit:>7.1f}")
    print(f"  dense pairs factored by flow vs as given: Σ(t) within "
          f"{np.abs(got.cov - ref.cov).max() / np.abs(ref.cov).max():.1e} relative (rtol "
          f"{RTOL:g}); {len(ref.t)} output times each")
    print(f"\n(c) flow(method='rk') vs plain solve_ivp DOP853, d = {SMALL_D}, 2 dense heads, to "
          f"t = {SMALL_T:g}, 101 output times   target ≤ 1.2×")
    print(f"{'case':>12} {'nfev rk':>8} {'nfev plain':>11} {'plain [ms]':>11} {'rk [ms]':>8} "
          f"{'ratio':>6} {'rk no dense [ms]':>17} {'ratio':>6}")
    for label, n_rk, n_plain, tc in overhead_rows(rng):
        plain, rk, bare = tc["plain"], tc["rk"], tc["rk, no dense output"]
        print(f"{label:>12} {n_rk:>8} {n_plain:>11} {1e3 * plain:>11.2f} {1e3 * rk:>8.2f} "
              f"{rk / plain:>6.2f} {1e3 * bare:>17.2f} {bare / plain:>6.2f}")
    print(f"\n(d) dense heads factored by flow from d = {FACTOR_MIN_D} on: RHS of H heads of "
          f"rank d/H, and the factoring's cost in dense RHS")
    print(f"{'d':>5} {'H':>3} {'dense [µs]':>11} {'factored [µs]':>14} {'speed-up':>9} "
          f"{'factoring [µs]':>15} {'break-even RHS':>15}")
    for d, heads, dense, fact, cost in crossover_rows(rng):
        even = cost / (dense - fact) if dense > fact else np.inf
        print(f"{d:>5} {heads:>3} {1e6 * dense:>11.1f} {1e6 * fact:>14.1f} "
              f"{dense / fact:>8.2f}× {1e6 * cost:>15.1f} {even:>15.1f}")


if __name__ == "__main__":
    main()
