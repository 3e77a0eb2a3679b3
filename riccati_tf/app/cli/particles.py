"""`riccati-tf particles`, `prescribed` and `relu-drift`: N-token simulations against the Gaussian
flow (SPEC §1, §7), with progress bars for long runs.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

import numpy as np

from ...io.spec import (
    SpecError,
    check_keys,
    field,
    parse_choice,
    parse_gaussian,
    parse_number,
    parse_params,
)
from ...state.params import Gaussian, Params
from ..specs import SCHEMAS
from .common import Outcome, _g, _output_size, table

if TYPE_CHECKING:

    from ...empirical.particles import ParticleRun
    from ...flows.integrate import Trajectory


__all__: list[str] = []


#: most tokens (n_tokens) of a particles spec
MAX_TOKENS = 100_000


#: most steps (n_steps) of a particles spec
MAX_STEPS = 100_000


#: n_tokens² · n_steps · heads of a particles spec: the pair interactions, which set the time
#: (about 10⁷ a second on one core)
MAX_PARTICLE_WORK = 10 ** 9


#: particles runs of more pair interactions than this (about 3 s) show a progress bar
PROGRESS_WORK = 3 * 10 ** 7


#: chunks of a particles run with a progress bar (the bar moves once per chunk)
PROGRESS_CHUNKS = 100


#: rows of the particles summary table
PARTICLES_ROWS = 6


#: what the particles are compared with
PARTICLES_REFERENCE = ("Gaussian flow from the empirical moments (mean, unbiased covariance) of "
                       "the drawn tokens")


def simulate_with_progress(params: Params, x0: np.ndarray, t_final: float, *, n_steps: int,
                           method: str, work: int) -> ParticleRun:
    """`particles.simulate` with a progress bar: a run of more than PROGRESS_WORK pair
    interactions is cut into chunks of whole steps (each starting from the previous chunk's
    cloud; the parameters are constant in depth, so the steps are the same)."""
    from ...empirical.particles import MAX_KEPT, ParticleRun, simulate
    from ..experiments import progress_bar

    if work <= PROGRESS_WORK:
        return simulate(params, x0, t_final, n_steps=n_steps, method=method)
    per_chunk = max(1, min(-(-n_steps // PROGRESS_CHUNKS), MAX_KEPT // x0.size - 1))
    h = t_final / n_steps
    ts, means, covs, done, x = [], [], [], 0, x0
    with progress_bar(n_steps, "particles", unit="step") as bar:
        while done < n_steps:
            k = min(per_chunk, n_steps - done)
            run = simulate(params, x, k * h if done + k < n_steps else t_final - done * h,
                           n_steps=k, method=method, keep_particles=True)
            assert run.particles is not None  # simulated with keep_particles=True
            x, keep = run.particles[-1], slice(1, None) if done else slice(None)
            ts.append(done * h + run.t[keep])
            means.append(run.mean[keep])
            covs.append(run.cov[keep])
            done += k
            bar.update(k)
    t = np.concatenate(ts)
    t[-1] = t_final
    return ParticleRun(t, np.concatenate(means), np.concatenate(covs), x0.shape[0], method)


def cmd_particles(args: argparse.Namespace, spec: dict) -> Outcome:
    from ...empirical.particles import empirical_moments
    from ...flows.integrate import flow
    from ...state.validation import MAX_SEED
    from ..plotting import plot_particles

    check_keys(spec, SCHEMAS["particles"].names)
    params = parse_params(field(spec, "params"))
    g0 = parse_gaussian(field(spec, "initial"), "initial")
    n_tokens = parse_number(spec, "n_tokens", kind=int, minimum=2, maximum=MAX_TOKENS,
                            limit="cli.MAX_TOKENS")
    n_steps = parse_number(spec, "n_steps", kind=int, minimum=1, maximum=MAX_STEPS,
                           limit="cli.MAX_STEPS")
    seed = parse_number(spec, "seed", default=0, kind=int, minimum=0, maximum=MAX_SEED,
                        limit="validation.MAX_SEED")
    t_final = parse_number(spec, "t_final")
    method = parse_choice(spec, "method", ("rk4", "euler"), default="rk4")
    work = n_tokens ** 2 * n_steps * len(params.heads)
    if work > MAX_PARTICLE_WORK:
        raise SpecError(f"n_tokens: n_tokens² · n_steps · heads = {n_tokens}² · {n_steps} · "
                        f"{len(params.heads)} = {work:.3g} pair interactions, over the limit "
                        f"{MAX_PARTICLE_WORK:.0e} (cli.MAX_PARTICLE_WORK); use fewer tokens or "
                        f"steps, or riccati_tf.empirical.particles.simulate")
    _output_size("n_steps", n_steps + 1, g0.d)
    x0 = g0.sample(n_tokens, np.random.default_rng(seed))
    run = simulate_with_progress(params, x0, t_final, n_steps=n_steps, method=method, work=work)
    drawn = Gaussian(*empirical_moments(x0))
    ref = flow(params, drawn, run.t[-1], t_eval=run.t)
    k = len(ref.t)
    scale = np.linalg.norm(ref.cov[:k], axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):  # Σ = 0: NaN, printed as null
        rel = np.linalg.norm(run.cov[:k] - ref.cov, axis=(1, 2)) / scale
    result = {"t": run.t, "mean": run.mean, "cov": run.cov, "n_tokens": run.n_tokens,
              "reference": PARTICLES_REFERENCE, "reference_mean": drawn.mean,
              "reference_cov": drawn.cov, "gaussian_status": ref.status,
              "gaussian_blowup_time": ref.blowup_time, "cov_rel_error": rel}
    return result, particles_text(run, ref, rel), (plot_particles(run, ref) if args.plot
                                                   else None)


def particles_text(run: ParticleRun, ref: Trajectory, rel: np.ndarray) -> str:
    k = len(ref.t)
    shown = sorted(set(np.linspace(0, k - 1, min(k, PARTICLES_ROWS)).round().astype(int)))
    rows = [[_g(run.t[i]), _g(np.trace(run.cov[i])), _g(np.trace(ref.cov[i])), _g(rel[i])]
            for i in shown]
    blow = "" if ref.blowup_time is None else \
        f"\nthe Gaussian flow blows up at T* = {_g(ref.blowup_time)}; compared up to it"
    return (f"{run.n_tokens} tokens, {len(run.t) - 1} {run.method} steps, against the "
            f"{PARTICLES_REFERENCE}{blow}\n"
            + table(rows, header=["t", "tr Σ particles", "tr Σ Gaussian", "‖ΔΣ‖/‖Σ‖"])
            + f"\nlargest relative error {_g(np.nanmax(rel))}: the finite-n error of the N → ∞ "
            f"limit the Gaussian flow describes (it falls as n_tokens grows); --json prints "
            f"every step")


def cmd_prescribed(args: argparse.Namespace, _spec: dict | None) -> Outcome:
    from ..experiments import run_prescribed

    n = run_prescribed(args.out, n_tokens=args.n_tokens, seed=args.seed, progress=True)
    rows = [[_g(K), _g(p), _g(g)] for K, p, g in zip(
        n["equal_growth_levels"], n["equal_crossing_particles"], n["equal_crossing_gaussian"],
        strict=True)]
    text = (f"{n['n_tokens']} tokens (seed {n['seed']}) against the Gaussian flow from their "
            f"empirical moments\n"
            + table([["opposite signs (G ≻ 0)", f"bounded: tr Σ grows at most "
                      f"{_g(n['opposite_max_growth'])}-fold, largest ‖ΔΣ‖/‖Σ‖ "
                      f"{_g(n['opposite_max_rel_error'])}"],
                     ["equal signs (G ≺ 0)", f"the Gaussian flow blows up at T* = "
                      f"{_g(n['blowup_time'])}; the particles' tr Σ has grown "
                      f"{_g(n['equal_growth_at_blowup'])}-fold there"]])
            + "\n\nfirst time tr Σ(t) / tr Σ(0) reaches K (equal signs)\n"
            + table(rows, header=["K", "particles", "Gaussian"])
            + f"\n\nfigure: {n['figure']}")
    return n, text, None


def cmd_relu_drift(args: argparse.Namespace, _spec: dict | None) -> Outcome:
    from ..experiments import run_relu_drift

    n = run_relu_drift(args.out, n_tokens=args.n_tokens, seed=args.seed, progress=True)
    drift = ("never, within t ≤ " + _g(n["t"][-1]) if n["drift_time"] is None
             else f"t = {_g(n['drift_time'])}")
    rows = [[name, _g(q)] for name, q in n["null_q99"].items()]
    text = (f"{n['n_tokens']} tokens (seed {n['seed']}) under attention with a ReLU "
            f"feed-forward term\nthe energy statistic leaves the 99 % band of Gaussian clouds "
            f"at {drift}\n\n99 % quantiles of the statistics for exactly Gaussian clouds\n"
            + table(rows, header=["statistic", "q99"])
            + f"\n\nlargest error of the Gaussian moment closure ‖ΔΣ‖/‖Σ‖: "
              f"{_g(max(n['closure_error']))}\nfigure: {n['figure']}")
    return n, text, None
