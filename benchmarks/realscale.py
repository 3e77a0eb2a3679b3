"""Real-model scale: flows and certificates of BERT-shaped layers, in Lyapunov units and memory.

Layers of BERT shape (`bert_layer`): A = 0 and 12 heads `Head(Q, K, V, O)` of rank d/12 from
i.i.d. Gaussian factors, Q and K scaled so that the logits ⟨Qx, Ky⟩ of N(0, 0.26 I) tokens have
standard deviation LOGIT_STD = 2.3, V and O with variance 1/d; Σ0 = 0.26 I. One BLAS thread
(threadpoolctl); a unit is one scipy.linalg.solve_continuous_lyapunov of the same d, timed in
the same run (CPU time, fastest of its rounds). Sections:

1. flow — `flow(p, N(0, Σ0), t_final, method="rk")` to past T* (t_final = 2 T*) with its defaults
   (101 output times, dense output) against the variants dense_output=False and
   t_eval=[0, t_final]: units, right-hand sides, and for the default the peak of tracemalloc
   and the peak RSS (VmHWM) of a spawned process that runs the call alone (interpreter and imports
   included). Targets: default ≤ 1.2 × the fastest
   variant; ≤ 60 units at d = 768; peak ≤ 1.5 GB at d = 768.
2. certify — `certify(p, Σ0)` on the same blow-up layers and on `benchmarks.certify`'s blow-up
   case (d = 128): units, and T* against an independent DOP853 integration of the covariance
   ODE written from the factors (`benchmarks.multihead.reference`, rtol 1e-12). Targets: ≤ 40
   units at d = 128, ≤ 60 at d = 384 and 768; T* to 1e-8 relative.
3. rk vs scipy — `flow(..., method="rk", dense_output=False)` against plain
   `solve_ivp(method="DOP853")` of the same right-hand side at the same rtol 1e-10, atol 1e-12
   and output times, on a converging layer (A = −I/2 + noise, 4 heads of rank d/4) and a
   growing one (the same heads, A = 0) to t = 1, covariance alone and with a mean: per case the
   median of 15 interleaved per-round CPU-time ratios (the order alternating), right-hand sides
   counted in a separate call. Target: median ratio ≤ 1.0 over d = 8, 32, 128.
4. encoder — a 12-layer BERT-base-shaped encoder, `bert_layer(768, seed=ℓ)` for ℓ = 0 … 11, run
   in a spawned process: from Σ0 = 0.26 I, per layer `certify(p_ℓ, Σ_in)` and the rk flow
   (dense_output=False) from Σ_in to min(T*, 1), one layer's depth; Σ(1) is the next layer's
   input. One progress line per layer. Targets: every layer certified (a regime, not
   "undetermined"), ≤ 15 minutes of CPU time, peak RSS ≤ 4 GB.
5. exact — the exact flow with a mean against DOP853 at rtol 1e-13 at equal accuracy, d = 8 and
   32 (`benchmarks.exact_mean`). Target: ≥ 5× at the end state.

Run: python -m benchmarks.realscale [--quick] [--d D ...]
[--section flow certify parity encoder exact]
(--quick: d = 384 only for sections 1–2, d = 8, 32 for section 3, d = 384 for section 4;
--d sets sections 1–2; the encoder is not in the default sections: it runs about 10 minutes).
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import time
import tracemalloc

import numpy as np
from scipy.integrate import solve_ivp

from riccati_tf import Gaussian, Head, Params, certify, flow
from riccati_tf.state.moments import drift_arrays

from ._timing import clear_layer_caches, pin_one_thread
from .exact_mean import exact_section
from .multihead import lyapunov_unit, reference

HEADS, LOGIT_STD, TOKEN_VAR = 12, 2.3, 0.26
DIMENSIONS, QUICK = (384, 768), (384,)
PARITY_D, PARITY_QUICK = (8, 32, 128), (8, 32)
FLOW_RATIO, FLOW_UNITS_768, FLOW_GB_768 = 1.2, 60.0, 1.5
CERTIFY_128, CERTIFY_LARGE, T_RTOL = 40.0, 60.0, 1e-8
PARITY_TARGET = 1.0
ENCODER_LAYERS, ENCODER_D, ENCODER_DEPTH = 12, 768, 1.0
ENCODER_MINUTES, ENCODER_GB = 15.0, 4.0


def bert_layer(d: int, seed: int = 0) -> Params:
    """A = 0 and HEADS heads of rank d/HEADS: logits xᵀK_hᵀQ_hy of N(0, TOKEN_VAR·I) tokens with
    standard deviation LOGIT_STD (entries of Q, K with variance s², s² = LOGIT_STD /
    (TOKEN_VAR·d·√r): E‖K_hᵀQ_h‖_F² = r d² s⁴), V and O with variance 1/d."""
    rng = np.random.default_rng(seed)
    r = d // HEADS
    s = np.sqrt(LOGIT_STD / (TOKEN_VAR * d * np.sqrt(r)))
    heads = [Head(s * rng.standard_normal((r, d)), s * rng.standard_normal((r, d)),
                  rng.standard_normal((r, d)) / np.sqrt(d),
                  rng.standard_normal((d, r)) / np.sqrt(d)) for _ in range(HEADS)]
    return Params(np.zeros((d, d)), heads=heads)


def unit_of(d: int) -> float:
    """One solve_continuous_lyapunov of size d (CPU seconds), as benchmarks.multihead times it."""
    rng = np.random.default_rng(d)
    M = -np.eye(d) + 0.1 * rng.standard_normal((d, d)) / np.sqrt(d)
    Q = rng.standard_normal((d, d))
    return lyapunov_unit(M, Q @ Q.T, repeat=3)


def _counting(fn):
    """fn wrapped so that the right-hand sides of rk are counted (rk.run._rk_rhs)."""
    import riccati_tf.flows.rk.run as rk_run
    original = rk_run._rk_rhs
    count = [0]

    def rhs_factory(*args, **kwargs):
        rhs = original(*args, **kwargs)

        def counted(t, y):
            count[0] += 1
            return rhs(t, y)
        return counted

    def run():
        rk_run._rk_rhs = rhs_factory
        try:
            return fn(), count[0]
        finally:
            rk_run._rk_rhs = original
    return run


def peak_rss() -> float:
    """This process's peak resident set size in bytes: VmHWM of /proc/self/status (Linux), the
    high-water mark of its own address space. Not ru_maxrss, which a spawned process inherits
    from its parent (fork keeps it across exec): a child of a parent that peaked at 2 GB
    reports at least 2 GB whatever it uses itself."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def _default_flow(d: int, t_final: float, conn) -> None:
    """In a spawned child: the default flow of `bert_layer(d)` from N(0, TOKEN_VAR·I) to
    t_final, then its own peak RSS (bytes) sent back."""
    limiter, _ = pin_one_thread()
    flow(bert_layer(d), Gaussian(np.zeros(d), TOKEN_VAR * np.eye(d)), t_final, method="rk")
    conn.send(peak_rss())
    del limiter


def _peak_rss_child(d: int, t_final: float) -> float:
    """Peak resident set size (GB) of a fresh (spawned) process that imports the package and
    runs the default flow alone: interpreter, numpy and the run, nothing of this process."""
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_default_flow, args=(d, t_final, child))
    proc.start()
    peak = parent.recv()
    proc.join()
    return peak / 2**30


def measure(fn, memory: bool = False) -> tuple[object, float, int, float]:
    """(result, CPU seconds, right-hand sides, tracemalloc peak in GB or NaN) of one call, every
    per-layer cache cleared first; with memory, a second call under tracemalloc (which slows
    Python code several-fold: not the timed one) gives the peak."""
    clear_layer_caches()
    start = time.process_time()
    out, calls = _counting(fn)()
    cpu = time.process_time() - start
    peak = np.nan
    if memory:
        clear_layer_caches()
        tracemalloc.start()
        fn()
        peak = tracemalloc.get_traced_memory()[1] / 2**30
        tracemalloc.stop()
    return out, cpu, calls, peak


def flow_section(dims: tuple[int, ...]) -> list[str]:
    """Section 1; returns the verdict lines."""
    verdicts = []
    for d in dims:
        p, cov0 = bert_layer(d), TOKEN_VAR * np.eye(d)
        g = Gaussian(np.zeros(d), cov0)
        unit = unit_of(d)
        probe = flow(p, g, 1e3, method="rk", t_eval=[0.0, 1e3], dense_output=False)
        if probe.blowup_time is None:
            print(f"d = {d}: no blow-up by t = 1e3; skipped")
            continue
        t_final = 2 * float(probe.blowup_time)
        options = {"default": {}, "dense_output=False": {"dense_output": False},
                   "t_eval=[0, t_final]": {"t_eval": [0.0, t_final], "dense_output": False}}
        variants = {name: (lambda p=p, g=g, t_final=t_final, kw=kw:
                           flow(p, g, t_final, method="rk", **kw))
                    for name, kw in options.items()}
        units: dict[str, float] = {}
        gb = np.nan
        for name, fn in variants.items():
            default = name == "default"
            tr, cpu, calls, peak = measure(fn, memory=default)
            units[name] = cpu / unit
            line = (f"d = {d:3d} flow {name:20s} {cpu / unit:7.1f} units ({cpu:.1f} s), "
                    f"{calls} rhs, T* = {tr.blowup_time:.10g}")
            if default:  # the memory of the default call: tracemalloc, and a child's RSS
                rss = _peak_rss_child(d, t_final)
                gb = max(peak, rss)
                line += f", tracemalloc peak {peak:.2f} GB, child RSS peak {rss:.2f} GB"
            print(line, flush=True)
        ratio = units["default"] / min(units.values())
        verdicts.append(f"# flow d = {d}: default / fastest {ratio:.2f} (target ≤ {FLOW_RATIO}): "
                        f"{'PASS' if ratio <= FLOW_RATIO else 'FAIL'}")
        if d == 768:
            ok = units["default"] <= FLOW_UNITS_768 and gb <= FLOW_GB_768
            verdicts.append(f"# flow d = 768: {units['default']:.1f} units (≤ {FLOW_UNITS_768:g}), "
                            f"peak {gb:.2f} GB (≤ {FLOW_GB_768:g}): {'PASS' if ok else 'FAIL'}")
    return verdicts


def certify_section(dims: tuple[int, ...]) -> list[str]:
    """Section 2; returns the verdict lines."""
    from .certify import blowup_case
    verdicts = []
    cases = [(128, "benchmarks.certify blow-up", *blowup_case())]
    cases += [(d, "BERT-shaped", bert_layer(d), TOKEN_VAR * np.eye(d)) for d in dims]
    for d, what, p, cov0 in cases:
        unit = unit_of(d)
        best, cert = np.inf, None
        for _ in range(1 if d > 128 else 3):
            cert, cpu, calls, _ = measure(lambda p=p, cov0=cov0: certify(p, cov0))
            best = min(best, cpu)
        assert cert is not None
        units = best / unit
        line = (f"d = {d:3d} certify {what:28s} {units:7.1f} units ({best:.1f} s), "
                f"{calls} rhs, {cert.regime}")
        ok_t = True
        if cert.regime == "blows_up":
            T, _ = reference(p, cov0, 2 * cert.blowup_time)
            err = np.inf if T is None else abs(T - cert.blowup_time) / T
            ok_t = err <= T_RTOL
            line += f" T* = {cert.blowup_time:.10g}, DOP853 {T}, rel. err {err:.1e}"
        print(line, flush=True)
        target = CERTIFY_128 if d == 128 else CERTIFY_LARGE
        ok = units <= target and ok_t
        verdicts.append(f"# certify d = {d} ({what}): {units:.1f} units (≤ {target:g}), T* "
                        f"{'agrees' if ok_t else 'DISAGREES'}: {'PASS' if ok else 'FAIL'}")
    return verdicts


def parity_layer(d: int, kind: str, with_mean: bool, seed: int = 1) -> tuple[Params, Gaussian]:
    """4 heads of rank d/4 (N(0, 1/d) factors), A = −I/2 + noise ("converging") or 0
    ("growing"); a mean and bias when with_mean."""
    rng = np.random.default_rng(seed)
    r = max(1, d // 4)

    def w(*shape):
        return rng.standard_normal(shape) / np.sqrt(d)
    heads = [Head(w(r, d), w(r, d), w(r, d), w(d, r)) for _ in range(4)]
    A = -0.5 * np.eye(d) + 0.1 * w(d, d) if kind == "converging" else np.zeros((d, d))
    b = rng.standard_normal(d) if with_mean else None
    m0 = rng.standard_normal(d) if with_mean else np.zeros(d)
    return Params(A, b=b, heads=heads), Gaussian(m0, np.eye(d))


def parity_section(dims: tuple[int, ...], rtol: float = 1e-10, atol: float = 1e-12,
                   rounds: int = 15) -> list[str]:
    """Section 3; returns the verdict lines. Per case `rounds` interleaved rounds of one rk and
    one DOP853 call each (CPU time, the order alternating), the ratio the median of the
    per-round ratios (robust to a busy machine: both calls of a round see about the same
    load); the medians of the CPU times are printed."""
    ratios = []
    for d in dims:
        for kind in ("converging", "growing"):
            for with_mean in (False, True):
                p, g = parity_layer(d, kind, with_mean)
                T, t_eval = (5.0 if kind == "converging" else 1.0), None
                t_eval = np.linspace(0.0, T, 101)
                y0 = (np.concatenate([g.mean, g.cov.ravel()]) if with_mean else g.cov.ravel())

                def rhs(_t, y, p=p, d=d, with_mean=with_mean):
                    if with_mean:
                        X, dm = drift_arrays(p, y[:d], y[d:].reshape(d, d))
                        return np.concatenate([dm, (X + X.T).ravel()])
                    X, _ = drift_arrays(p, None, y.reshape(d, d))
                    return (X + X.T).ravel()

                def ours(p=p, g=g, T=T):
                    return flow(p, g, T, method="rk", rtol=rtol, atol=atol, dense_output=False)

                def theirs(y0=y0, T=T, t_eval=t_eval, rhs=rhs):
                    return solve_ivp(rhs, (0.0, T), y0, method="DOP853", rtol=rtol, atol=atol,
                                     t_eval=t_eval)
                # right-hand sides counted in a call of their own: the counting wrapper
                # (a Python call per right-hand side) stays out of the timed calls
                _, _, n_rk, _ = measure(ours)
                sol = theirs()
                cpu = {"rk": [], "scipy": []}
                round_ratios = []
                for i in range(rounds):  # interleaved, the order alternating round by round
                    for name in (("rk", "scipy") if i % 2 == 0 else ("scipy", "rk")):
                        if name == "rk":
                            clear_layer_caches()
                        start = time.process_time()
                        (ours if name == "rk" else theirs)()
                        cpu[name].append(time.process_time() - start)
                    round_ratios.append(cpu["rk"][-1] / cpu["scipy"][-1])
                ratio = float(np.median(round_ratios))  # the median of per-round ratios
                ratios.append(ratio)
                print(f"d = {d:3d} {kind:10s} {'mean' if with_mean else 'cov ':4s} rk "
                      f"{1e3 * np.median(cpu['rk']):8.1f} ms ({n_rk} rhs), DOP853 "
                      f"{1e3 * np.median(cpu['scipy']):8.1f} ms ({sol.nfev} rhs): ratio "
                      f"{ratio:.2f}", flush=True)
    med = float(np.median(ratios))
    return [f"# rk / scipy DOP853: median {med:.2f} (target ≤ {PARITY_TARGET:g}): "
            f"{'PASS' if med <= PARITY_TARGET else 'FAIL'}"]


def _encoder(d: int, n_layers: int, conn) -> None:
    """In a spawned child: the encoder of section 4, printing a line per layer; sends back
    (layers certified, CPU seconds, peak RSS in bytes)."""
    limiter, _ = pin_one_thread()
    start = time.process_time()
    cov = TOKEN_VAR * np.eye(d)
    certified = 0
    for layer in range(n_layers):
        p = bert_layer(d, seed=layer)
        t0 = time.process_time()
        cert = certify(p, cov)
        t1 = time.process_time()
        certified += cert.regime != "undetermined"
        end = min(cert.blowup_time or ENCODER_DEPTH, ENCODER_DEPTH)
        tr = flow(p, Gaussian(np.zeros(d), cov), end, method="rk", t_eval=[0.0, end],
                  dense_output=False)
        t2 = time.process_time()
        rss = peak_rss() / 2**30
        print(f"layer {layer + 1:2d}/{n_layers}: tr Σ_in = {np.trace(cov):.4g}, certify "
              f"{t1 - t0:6.1f} s ({cert.regime}"
              + (f", T* = {cert.blowup_time:.6g}" if cert.blowup_time else "")
              + f"), flow to t = {end:.3g} {t2 - t1:6.1f} s ({tr.status}); CPU so far "
              f"{(t2 - start) / 60:.1f} min, peak RSS {rss:.2f} GB", flush=True)
        if tr.status != "completed":
            break  # a blow-up inside the layer: there is no input for the next one
        cov = tr.cov[-1]
    conn.send((certified, time.process_time() - start,
               peak_rss()))
    del limiter


def encoder_section(d: int = ENCODER_D, n_layers: int = ENCODER_LAYERS) -> list[str]:
    """Section 4 (in a spawned process, whose peak RSS is the run's alone); returns the verdict
    lines."""
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_encoder, args=(d, n_layers, child))
    proc.start()
    certified, cpu, rss = parent.recv()
    proc.join()
    gb = rss / 2**30
    ok = certified == n_layers and cpu <= 60 * ENCODER_MINUTES and gb <= ENCODER_GB
    return [f"# encoder d = {d}, {n_layers} layers: {certified} certified, {cpu / 60:.1f} min CPU "
            f"(≤ {ENCODER_MINUTES:g}), peak RSS {gb:.2f} GB (≤ {ENCODER_GB:g}): "
            f"{'PASS' if ok else 'FAIL'}"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="d = 384 (sections 1–2), 8 and 32")
    parser.add_argument("--d", type=int, nargs="+", help="these d for sections 1–2")
    parser.add_argument("--section", nargs="+",
                        choices=("flow", "certify", "parity", "encoder", "exact"),
                        default=("flow", "certify", "parity", "exact"))
    args = parser.parse_args(argv)
    limiter, line = pin_one_thread()
    print(line)
    dims = tuple(args.d or (QUICK if args.quick else DIMENSIONS))
    verdicts: list[str] = []
    if "flow" in args.section:
        verdicts += flow_section(dims)
    if "certify" in args.section:
        verdicts += certify_section(dims)
    if "parity" in args.section:
        verdicts += parity_section(PARITY_QUICK if args.quick else PARITY_D)
    if "encoder" in args.section:
        verdicts += encoder_section(384 if args.quick else ENCODER_D)
    if "exact" in args.section:
        verdicts += exact_section()
    print("\n".join(verdicts))
    del limiter


if __name__ == "__main__":
    main()
