"""Command line: `riccati-tf <subcommand> [SPEC] [--json] [--plot FILE] [--debug]`.

Exit codes: 0 success, 2 invalid spec or arguments (one line naming the field), 3 numerical
failure (a SolverError), 1 anything unexpected. Tracebacks only with --debug.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from .errors import InvalidInputError, SolverError
from .serialize import to_jsonable
from .spec import field, load_spec, parse_gaussian, parse_number, parse_params
from .sweep.cli import add_sweep_arguments, cmd_sweep, cmd_sweep_plot
from .validation import as_count

EXIT_INVALID, EXIT_NUMERICAL = 2, 3


# --- subcommands: each takes (args, spec) and returns (result dict, figure or None) ----------

def cmd_flow(args, spec):
    from .flows import flow
    from .plotting import plot_flow

    params = parse_params(field(spec, "params"))
    g0 = parse_gaussian(field(spec, "initial"), "initial")
    t_final = parse_number(spec, "t_final")
    kwargs = {k: parse_number(spec, k) for k in ("rtol", "atol") if k in spec}
    method = field(spec, "method", default="auto")
    t_eval = field(spec, "t_eval", default=None)
    tr = flow(params, g0, t_final, method=method, t_eval=t_eval, **kwargs)
    return tr, (plot_flow(params, g0, t_final, method=method, t_eval=t_eval, title="flow",
                          **kwargs) if args.plot else None)


def cmd_layers(args, spec):
    from .flows import layers
    from .plotting import plot_covariance

    g0 = parse_gaussian(field(spec, "initial"), "initial")
    n_layers = parse_number(spec, "n_layers", kind=int)
    tau = parse_number(spec, "tau")
    if "layers" in spec:
        raw = field(spec, "layers")
        if not isinstance(raw, list):
            raise InvalidInputError("layers: must be a list of params mappings")
        params = [parse_params(p, f"layers[{i}]") for i, p in enumerate(raw)]
    else:
        params = parse_params(field(spec, "params"))
    tr = layers(params, g0, n_layers, tau)
    return tr, (plot_covariance(tr, title="layers") if args.plot else None)


def _no_plot(args, command: str) -> None:
    if getattr(args, "plot", None):
        raise InvalidInputError(f"--plot: {command} draws no figure")


def _choice(spec: dict, name: str, default: str, allowed: tuple[str, ...]) -> str:
    value = field(spec, name, default=default)
    if value not in allowed:
        raise InvalidInputError(f"{name}: must be one of {', '.join(allowed)}, got {value!r}")
    return value


def cmd_derive(args, spec):
    """Derive the moment equations of a Transformer field with SymPy."""
    from .symbolic import transformer_system
    from .symbolic.latex import system_latex

    _no_plot(args, "derive")
    system = transformer_system(parse_number(spec, "d", kind=int),
                                heads=parse_number(spec, "heads", default=1, kind=int),
                                kernel=_choice(spec, "kernel", "dot", ("dot", "l2")),
                                ffn=_choice(spec, "ffn", "affine", ("affine", "relu")))
    return {"d": system.d, "exact": system.exact, "options": system.options,
            "latex": system_latex(system)}, None


def cmd_equilibria(args, spec):
    from .equilibrium import equilibria

    _no_plot(args, "equilibria")
    eqs = equilibria(parse_params(field(spec, "params")),
                     which=_choice(spec, "which", "stable", ("stable", "all")))
    return {"equilibria": list(eqs)}, None


def cmd_certify(args, spec):
    from .certificates import certify
    from .flows import flow
    from .plotting import plot_covariance

    params = parse_params(field(spec, "params"))
    g0 = parse_gaussian(field(spec, "initial"), "initial")
    cert = certify(params, g0.cov, g0.mean)
    result = {k: getattr(cert, k) for k in ("regime", "exact", "global_", "theorem", "reason",
                                            "rate", "blowup_time", "blowup_direction",
                                            "threshold", "equilibrium")}
    result["check"] = cert.check()
    fig = None
    if args.plot:
        horizon = cert.blowup_time or cert.horizon or 10.0 / max(np.abs(params.A).max(), 1e-3)
        fig = plot_covariance(flow(params, g0, horizon), title=f"certify: {cert.regime}",
                              equilibrium=cert.equilibrium)
    return result, fig


def cmd_steer(args, spec):
    from .steering import steer

    start = parse_gaussian(field(spec, "start"), "start")
    target = parse_gaussian(field(spec, "target"), "target")
    plan = steer(start, target, parse_number(spec, "T"),
                 controls=field(spec, "controls", default="affine"))
    result = {k: getattr(plan, k) for k in ("controls", "route", "success", "residual",
                                            "tolerance", "message", "breakpoints")}
    fig = None
    if args.plot:
        from .plotting import plot_covariance

        fig = plot_covariance(plan.integrate(), title=f"steer ({plan.route})")
    return result, fig


def cmd_particles(args, spec):
    from .flows import flow
    from .particles import simulate
    from .plotting import plot_particles

    params = parse_params(field(spec, "params"))
    g0 = parse_gaussian(field(spec, "initial"), "initial")
    n_tokens = as_count("n_tokens", parse_number(spec, "n_tokens", kind=int), minimum=2)
    rng = np.random.default_rng(parse_number(spec, "seed", default=0, kind=int))
    run = simulate(params, g0.sample(n_tokens, rng), parse_number(spec, "t_final"),
                   n_steps=parse_number(spec, "n_steps", kind=int),
                   method=_choice(spec, "method", "rk4", ("rk4", "euler")))
    ref = flow(params, g0, run.t[-1], t_eval=run.t)
    k = len(ref.t)
    scale = np.linalg.norm(ref.cov[:k], axis=(1, 2))
    result = {"t": run.t, "mean": run.mean, "cov": run.cov, "n_tokens": run.n_tokens,
              "gaussian_status": ref.status, "gaussian_blowup_time": ref.blowup_time,
              "cov_rel_error": np.linalg.norm(run.cov[:k] - ref.cov, axis=(1, 2)) / scale}
    return result, (plot_particles(run, ref) if args.plot else None)


def cmd_probe(args, _spec):
    from .experiments import probe_table, run_probe

    try:
        numbers = run_probe(args.model, args.out, n_tokens=args.n_tokens, seed=args.seed,
                            n_null=args.n_null)
    except ImportError as exc:
        raise InvalidInputError(f"{exc}; install the extra: pip install 'riccati-tf[models]'") \
            from None
    print(probe_table(numbers))
    print(f"figure and numbers written to {args.out}/probe.png, probe.json")
    return None, None


def cmd_prescribed(args, _spec):
    from .experiments import run_prescribed

    print(json.dumps(to_jsonable(run_prescribed(args.out, n_tokens=args.n_tokens,
                                                seed=args.seed)), indent=1))
    return None, None


def cmd_relu_drift(args, _spec):
    from .experiments import run_relu_drift

    n = run_relu_drift(args.out, n_tokens=args.n_tokens, seed=args.seed)
    print(json.dumps(to_jsonable({k: n[k] for k in ("drift_time", "null_q99", "figure")}),
                     indent=1))
    return None, None


def cmd_report(args, _spec):
    from .report import write_report

    if Path(args.out).exists() and not Path(args.out).is_dir():
        raise InvalidInputError(f"--out: {args.out} exists and is not a folder")
    page = write_report(args.out, quick=args.quick, model=args.model)
    print(f"report written to {page.parent.resolve()}/ (open {page.name})")
    return None, None


COMMANDS: dict[str, tuple[str, Callable, bool]] = {
    "derive": ("derive the moment equations of a Transformer field (SymPy; LaTeX out)",
               cmd_derive, True),
    "flow": ("integrate the mean-covariance flow of a spec (exact or Runge-Kutta)", cmd_flow, True),
    "layers": ("propagate a Gaussian through exact discrete residual layers", cmd_layers, True),
    "equilibria": ("equilibria of the covariance flow with residuals and stability",
                   cmd_equilibria, True),
    "certify": ("certify convergence, collapse or blow-up of a time-invariant layer", cmd_certify,
                True),
    "steer": ("controls steering one Gaussian to another, verified by integration", cmd_steer,
              True),
    "particles": ("simulate N tokens with softmax attention against the Gaussian flow",
                  cmd_particles, True),
    "probe": ("feed Gaussian tokens to a saved Transformer encoder; per-layer Gaussianity",
              cmd_probe, False),
    "prescribed": ("particles vs the Gaussian flow: bounded (opposite signs) vs blow-up "
                   "(equal signs)", cmd_prescribed, False),
    "relu-drift": ("drift away from Gaussianity under a ReLU feed-forward layer", cmd_relu_drift,
                   False),
    "sweep": ("map a parameter family through certify / flow / particles (chunked Parquet, "
              "resumable, Dask)", cmd_sweep, True),
    "sweep-plot": ("phase diagram (PNG) of a sweep's results", cmd_sweep_plot, False),
    "report": ("run the built-in analyses and write an HTML report", cmd_report, False),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="riccati-tf",
        description="Gaussian (mean-field) dynamics of Transformers: moment equations, Riccati "
                    "flows, certificates and reachability. Spec files are JSON or YAML with "
                    "matrices as nested lists.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (help_text, _handler, needs_spec) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if needs_spec:
            p.add_argument("spec", help="spec file (.json, .yaml or .yml)")
            p.add_argument("--json", action="store_true", help="print machine-readable results")
            p.add_argument("--plot", metavar="FILE", help="write a PNG figure")
        p.add_argument("--debug", action="store_true", help="show tracebacks")
    probe = sub.choices["probe"]
    probe.add_argument("--model", metavar="PATH", default=None,
                       help="folder saved with save_pretrained (ModernBERT, DeiT); default: a "
                            "randomly initialised DeiT-tiny-shaped encoder")
    probe.add_argument("--n-tokens", type=int, default=1000)
    probe.add_argument("--n-null", type=int, default=200,
                       help="Gaussian samples simulated for the null distributions")
    for name in ("probe", "prescribed", "relu-drift"):
        sub.choices[name].add_argument("--seed", type=int, default=0)
        sub.choices[name].add_argument("--out", default="report", help="output folder")
    for name in ("prescribed", "relu-drift"):
        sub.choices[name].add_argument("--n-tokens", type=int, default=2000)
    add_sweep_arguments(sub)
    rep = sub.choices["report"]
    rep.add_argument("--out", default="report", help="output folder (default: report)")
    rep.add_argument("--quick", action="store_true", help="smaller, faster run (≤ 1 minute)")
    rep.add_argument("--model", metavar="PATH", default=None,
                     help="Transformer folder (save_pretrained) for the probe; default: a random "
                          "DeiT-tiny-shaped encoder")
    return parser


def _print_human(result) -> None:
    data = to_jsonable(result)
    if isinstance(data, dict):
        for key, value in data.items():
            text = json.dumps(value)
            print(f"{key}: {text if len(text) <= 300 else text[:297] + '...'}")
    else:
        print(json.dumps(data))


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _help, handler, needs_spec = COMMANDS[args.command]
    try:
        spec = load_spec(args.spec) if needs_spec else None
        result, fig = handler(args, spec)
        if fig is not None:
            from .plotting import save_figure

            save_figure(fig, args.plot)
        if result is not None:
            if args.json:
                print(json.dumps(to_jsonable(result)))
            else:
                _print_human(result)
        return 0
    except InvalidInputError as exc:
        if args.debug:
            raise
        print(f"riccati-tf {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except SolverError as exc:
        if args.debug:
            raise
        print(f"riccati-tf {args.command}: numerical failure: {exc}", file=sys.stderr)
        return EXIT_NUMERICAL
    except Exception as exc:
        if args.debug:
            raise
        print(f"riccati-tf {args.command}: unexpected error ({type(exc).__name__}: {exc}); "
              "rerun with --debug for the traceback", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
