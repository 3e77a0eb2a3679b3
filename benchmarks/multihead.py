"""Stability of real-shape multi-head layers: `equilibria` and `certify` in Lyapunov units.

The family: d = 24, 48, 96, 192, 384 (--quick: d ≤ 96), 12 heads of rank r = d/12 given as
`Head(Q, K, V, O)` factors with i.i.d. N(0, 1/d) entries (logits ⟨Qx, Ky⟩ of N(0, I) tokens have
standard deviation ≈ √r, 1.4 … 5.7), and A = 0, Hurwitz (−I/2 + noise) or anti-stable
(I/2 + noise), noise i.i.d. N(0, 0.01/d); Σ0 = I. Per d and kind: the CPU time of one
`equilibria(params)` (run as `equilibrium_search`, whose work spent and completeness are printed)
and one `certify(params, Σ0)` (every per-layer cache cleared first; the fastest of three calls) in
units of one scipy.linalg.solve_continuous_lyapunov of the same d timed in the same run (before and
after each layer's two calls, geometric mean: the unit follows the machine's load), the regime,
and its agreement with an independent integration: scipy's DOP853 (rtol 1e-12, atol 1e-14 tr Σ0)
of the covariance ODE written out here from the factors — T* (the time tr Σ reaches 1e10 tr Σ0)
to 1e-6 relative for "blows_up", Σ(t) against Σ* to 1e-8 relative to ‖Σ0‖ at the
certificate's horizon plus 40/rate for "converges"/"collapses". Targets: median ≤ 60 units per
call of each, none over 300. One BLAS thread (threadpoolctl).

Run: python -m benchmarks.multihead [--quick] [--d D ...]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.integrate import solve_ivp
from scipy.linalg import solve_continuous_lyapunov

from riccati_tf import Certificate, Head, Params, certify
from riccati_tf.stability.equilibria import equilibrium_search

from ._timing import clear_layer_caches, pin_one_thread

DIMENSIONS, QUICK = (24, 48, 96, 192, 384), (24, 48, 96)
KINDS = ("zero", "hurwitz", "antistable")
HEADS, MEDIAN_TARGET, MAX_TARGET = 12, 60.0, 300.0
T_RTOL, COV_RTOL = 1e-6, 1e-8


def layer(d: int, kind: str, seed: int = 0) -> Params:
    """12 heads of rank d/12 from i.i.d. N(0, 1/d) factors; A of the given kind."""
    rng = np.random.default_rng(seed)
    r = max(1, d // HEADS)

    def w(*shape):
        return rng.standard_normal(shape) / np.sqrt(d)
    heads = [Head(w(r, d), w(r, d), w(r, d), w(d, r)) for _ in range(HEADS)]
    noise = 0.1 * rng.standard_normal((d, d)) / np.sqrt(d)
    A = {"zero": np.zeros((d, d)), "hurwitz": -0.5 * np.eye(d) + noise,
         "antistable": 0.5 * np.eye(d) + noise}[kind]
    return Params(A, heads=heads)


def reference(p: Params, cov0: np.ndarray, t_final: float) -> tuple[float | None, np.ndarray]:
    """DOP853 of Σ̇ = AΣ + ΣAᵀ + Σ_h (O_h(V_hΣK_hᵀ)(Q_hΣ) + transpose) from the factors (dense
    heads: V_hΣB_hΣ + transpose), to t_final or until tr Σ reaches 1e10 tr Σ0: (that time or
    None, Σ at the end)."""
    d = p.d
    factors = [(h.Q, h.K, h.V, h.O) for h in p.factors if h is not None]
    dense = [p.heads[i] for i, h in enumerate(p.factors) if h is None]
    tr0 = float(np.trace(cov0))

    def rhs(_t, y):
        S = y.reshape(d, d)
        out = p.A @ S
        for Q, K, V, O in factors:
            out = out + O @ ((V @ S @ K.T) @ (Q @ S))
        for V, B in dense:
            out = out + V @ S @ B @ S
        return (out + out.T).ravel()

    def big(_t, y):
        return float(np.trace(y.reshape(d, d))) - 1e10 * tr0
    big.terminal = True  # type: ignore[attr-defined]  # solve_ivp stops at the event
    sol = solve_ivp(rhs, (0.0, t_final), cov0.ravel(), method="DOP853", rtol=1e-12,
                    atol=1e-14 * tr0, events=big)
    T = float(sol.t_events[0][0]) if sol.t_events[0].size else None
    return T, sol.y[:, -1].reshape(d, d)


def lyapunov_unit(M: np.ndarray, Q: np.ndarray, repeat: int = 5) -> float:
    """CPU time of one solve_continuous_lyapunov(M, Q), best of `repeat` rounds of ≥ 0.05 s
    (CPU time, as the calls are timed: other processes on the machine do not count)."""
    best = np.inf
    for _ in range(repeat):
        n, start = 0, time.process_time()
        while True:
            solve_continuous_lyapunov(M, Q)
            n += 1
            elapsed = time.process_time() - start
            if elapsed >= 0.05:
                break
        best = min(best, elapsed / n)
    return best


def timed(fn, repeat: int = 3):
    """(result, CPU seconds): the fastest of `repeat` calls, every per-layer cache cleared
    before each (as the Lyapunov unit is the fastest of its rounds)."""
    best = np.inf
    for _ in range(repeat):
        clear_layer_caches()
        start = time.process_time()
        out = fn()
        best = min(best, time.process_time() - start)
    return out, best


def agreement(p: Params, cov0: np.ndarray, cert: Certificate) -> str:
    """The verdict against DOP853, in words with the error."""
    if cert.regime == "blows_up":
        T, _ = reference(p, cov0, 2 * cert.blowup_time)
        if T is None:
            return "DISAGREES (DOP853: no blow-up by 2 T*)"
        err = abs(T - cert.blowup_time) / T
        return f"{'agrees' if err <= T_RTOL else 'DISAGREES'} (T* rel. err {err:.1e})"
    if cert.regime in ("converges", "collapses"):
        rate = cert.rate if cert.rate and cert.rate > 0 else 1.0
        t = (cert.horizon or 0.0) + 40.0 / rate
        T, S = reference(p, cov0, t)
        if T is not None:
            return "DISAGREES (DOP853 blows up)"
        err = float(np.linalg.norm(S - cert.equilibrium.cov) / np.linalg.norm(cov0))
        return f"{'agrees' if err <= COV_RTOL else 'DISAGREES'} (Σ* err {err:.1e} at t = {t:.3g})"
    return "no verdict to compare"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="d ≤ 96 only")
    parser.add_argument("--d", type=int, nargs="+", help="these d only (default: the family's)")
    args = parser.parse_args(argv)
    limiter, line = pin_one_thread()
    print(line)
    units: dict[str, list[float]] = {"equilibria": [], "certify": []}
    for d in args.d or (QUICK if args.quick else DIMENSIONS):
        rng = np.random.default_rng(d)
        M = -np.eye(d) + 0.1 * rng.standard_normal((d, d)) / np.sqrt(d)
        Q = rng.standard_normal((d, d))
        Q = Q @ Q.T
        before = lyapunov_unit(M, Q)
        print(f"# d = {d}: unit = one solve_continuous_lyapunov, {1e3 * before:.3g} ms")
        for kind in KINDS:
            p, cov0 = layer(d, kind), np.eye(d)
            search, t_eq = timed(lambda p=p: equilibrium_search(p))
            cert, t_c = timed(lambda p=p, cov0=cov0: certify(p, cov0))
            after = lyapunov_unit(M, Q)  # the unit around each pair of calls: load may drift
            unit, before = float(np.sqrt(before * after)), after
            units["equilibria"].append(t_eq / unit)
            units["certify"].append(t_c / unit)
            found = ", ".join(f"rank {e.rank} stable {e.stable}" for e in search.equilibria) \
                or "none"
            w = search.spent
            state = "undetermined" if search.undetermined else \
                "complete" if search.complete else "searched"
            print(f"d = {d:3d} {kind:10s} equilibria {t_eq / unit:7.1f} units ({found}; {state}, "
                  f"{w.newton_iterations} Newton, {w.lyapunov_solves} Lyapunov, "
                  f"{w.rhs_evaluations} rhs); "
                  f"certify {t_c / unit:7.1f} units, {cert.regime}"
                  + (f" T* = {cert.blowup_time:.10g}" if cert.blowup_time else "")
                  + f"; {agreement(p, cov0, cert)}", flush=True)
            if cert.regime == "undetermined":
                print(f"#   reason: {cert.reason}")
            if search.undetermined:
                print(f"#   equilibria undetermined: {search.reason}")
    for name, values in units.items():
        med, top = float(np.median(values)), float(np.max(values))
        ok = med <= MEDIAN_TARGET and top <= MAX_TARGET
        print(f"# {name}: median {med:.1f} units (target ≤ {MEDIAN_TARGET:g}), max {top:.1f} "
              f"(target ≤ {MAX_TARGET:g}): {'PASS' if ok else 'FAIL'}")
    del limiter


if __name__ == "__main__":
    main()
