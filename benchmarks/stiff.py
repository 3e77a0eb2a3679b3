"""Stiff flows: the stabilising-sign and random-sign families of real shape, in Lyapunov units.

Layers from `riccati_tf.empirical.families` (12 heads of rank d/12, Σ0 = I/2): per d and family,
`flow(p, N(0, Σ0), t_final)` with "auto" (DOP853, switching to Rodas4 where its steps collapse)
and, for the stabilising-sign family, "implicit" from the start: CPU time in units of one
scipy.linalg.solve_continuous_lyapunov of the same d (timed in the same run), the method, the
switch time, the status, tr Σ at the end, or the SolverError's message. Then the A = 0 and Hurwitz
variants of the stabilising-sign family with "auto" against "rk" (the same DOP853 path where
no switch happens: the ratio is the cost of the stiffness monitor). Then `certify` on the
stabilising-sign family's variants (d ≤ 48, where its Rodas4 continuation solves directly): the
regime, CPU time in units, and the reason. One BLAS thread (threadpoolctl).

Run: python -m benchmarks.stiff [--quick] [--d D ...] [--t-final T] [--rtol R] [--precision]
(--quick: d = 24, t_final = 20; default d = 24, 48, 96, t_final = 20. The target of a flow to
t = 1000 is out of reach on this family: Σ grows like e^{0.65 t}, and the heads' blocks
Ṽ_h Σ K_hᵀ that the slow manifold keeps of order one are a share ρ_h ~ 1/‖Σ‖ of Σ, below the
unit roundoff by t ≈ 50 (--precision prints ρ_h along the flow; SPEC §11).)
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from riccati_tf import certify, flow
from riccati_tf.empirical.families import family_cases
from riccati_tf.errors import SolverError

from ._timing import pin_one_thread
from .realscale import unit_of

DIMENSIONS, QUICK = (24, 48, 96), (24,)


def timed(fn, *args, **kwargs):
    """(fn(*args, **kwargs) or its SolverError, CPU seconds)."""
    start = time.process_time()
    try:
        out = fn(*args, **kwargs)
    except SolverError as exc:
        out = exc
    return out, time.process_time() - start


def describe(out) -> str:
    if isinstance(out, SolverError):
        return f"SolverError: {str(out)[:90]}"
    switch = "" if out.switch_time is None else f" (switch at t = {out.switch_time:.3g})"
    if out.status == "blowup":
        return f"{out.method}{switch}, blowup at T* = {out.blowup_time:.6g}"
    return (f"{out.method}{switch}, {out.status}, t_end = {out.t[-1]:.4g}, "
            f"tr Σ = {np.trace(out.cov[-1]):.3g}")


def family_section(sizes, t_final: float, rtol: float) -> None:
    print(f"## families to t = {t_final:g}, rtol {rtol:g}")
    for d in sizes:
        unit = unit_of(d)
        for family, methods in (("opposite", ("auto", "implicit")), ("random_sign", ("auto",))):
            case = family_cases((d,), 1, family=family)[0]
            for method in methods:
                out, cpu = timed(flow, case.params, case.initial, t_final, method=method,
                                 rtol=rtol, t_eval=[t_final])
                print(f"d = {d:4d}  {family:12s} {method:9s} {cpu / unit:9.1f} units  "
                      f"({cpu:.2f} s)  {describe(out)}", flush=True)


def rk_section(sizes, rtol: float) -> None:
    print("## A = 0 and Hurwitz variants: auto against rk (t = 10)")
    for d in sizes:
        unit = unit_of(d)
        for family in ("zero_A", "hurwitz"):
            case = family_cases((d,), 1, family=family)[0]
            cpu = {}
            for method in ("rk", "auto"):
                out, cpu[method] = timed(flow, case.params, case.initial, 10.0, method=method,
                                         rtol=rtol)
            print(f"d = {d:4d}  {family:8s} rk {cpu['rk'] / unit:8.2f} units, auto "
                  f"{cpu['auto'] / unit:8.2f} units (ratio {cpu['auto'] / cpu['rk']:.2f}); "
                  f"{describe(out)}", flush=True)


def certify_section(sizes, cases: int) -> None:
    print(f"## certify on the stabilising-sign family ({cases} variants per d)")
    for d in sizes:
        unit = unit_of(d)
        for case in family_cases((d,), cases, family="opposite"):
            cert, cpu = timed(certify, case.params, case.initial)
            print(f"{case.name:40s} {cert.regime:12s} {cpu / unit:9.0f} units ({cpu:.2f} s)  "
                  f"{cert.reason[:110]}", flush=True)


def restrained_share(params, cov: np.ndarray) -> np.ndarray:
    """ρ_h = ‖V_h Σ B_h‖_F / (‖V_h‖_F ‖Σ‖_F ‖B_h‖_F) per head: the share of Σ that the heads'
    blocks Ṽ_h Σ K_hᵀ hold; a float64 Σ carries them with relative error ≈ u/ρ_h (SPEC §11)."""
    n = np.linalg.norm(cov)
    return np.array([np.linalg.norm(V @ cov @ B) / (np.linalg.norm(V) * n * np.linalg.norm(B))
                     for V, B in params.heads])


def precision_section(sizes, times=(10.0, 20.0, 30.0, 40.0)) -> None:
    print("## the heads' blocks on the slow manifold: min and max ρ_h over heads, in units of u")
    u = np.finfo(float).eps / 2
    for d in sizes:
        case = family_cases((d,), 1, family="opposite")[0]
        out, cpu = timed(flow, case.params, case.initial, times[-1], method="implicit",
                         rtol=1e-7, t_eval=list(times), max_steps=20_000)
        if isinstance(out, SolverError):
            print(f"d = {d:4d}  {describe(out)}", flush=True)
            continue
        for t, cov in zip(out.t, out.cov, strict=True):
            rho = restrained_share(case.params, cov)
            print(f"d = {d:4d}  t = {t:5.1f}  ‖Σ‖_F = {np.linalg.norm(cov):9.3g}  ρ_h in "
                  f"[{rho.min():.3g}, {rho.max():.3g}] = [{rho.min() / u:.3g} u, "
                  f"{rho.max() / u:.3g} u]", flush=True)
        print(f"d = {d:4d}  ({cpu:.2f} s)", flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--d", type=int, nargs="+")
    parser.add_argument("--t-final", type=float)
    parser.add_argument("--rtol", type=float, default=1e-10)
    parser.add_argument("--cases", type=int, default=6, help="certify: variants per d")
    parser.add_argument("--precision", action="store_true",
                        help="only the heads' blocks ρ_h along the flow to t = 40 (d ≤ 48)")
    args = parser.parse_args(argv)
    _, line = pin_one_thread()
    print(line)
    sizes = tuple(args.d) if args.d else (QUICK if args.quick else DIMENSIONS)
    t_final = args.t_final or 20.0
    if args.precision:
        precision_section(tuple(d for d in sizes if d <= 48))
        return
    family_section(sizes, t_final, args.rtol)
    rk_section(sizes, args.rtol)
    certify_section(tuple(d for d in sizes if d <= 48), 2 if args.quick else args.cases)


if __name__ == "__main__":
    main()
