"""Command line: `riccati-tf <subcommand> [SPEC] [--json] [--plot FILE] [--debug]`.

Exit codes: 0 success, 2 invalid spec or arguments (one line naming the field or option),
3 numerical failure (a SolverError, one line), 1 a bug (anything unexpected; no user input is
meant to reach it). Tracebacks and warnings only with --debug. A reader that closes stdout early
(`riccati-tf flow spec.json --json | head -c 100`) ends the run quietly with exit 0, as Unix
filters do.

Specs are read by `riccati_tf.spec` (strict JSON or YAML 1.2, bounded sizes, unknown keys
refused at every level). Sizes that decide the cost of a run are bounded before anything is
allocated, by the module constants below (each message names its constant). The output of
--plot and the folder of --out are checked before the computation; the result is printed
before the figure is written, so a figure that then cannot be written (a full disk) still
leaves the numbers on stdout, and the exit code is 2 with a line naming the path.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

from .errors import InvalidInputError, SolverError
from .serialize import to_jsonable
from .spec import (
    MAX_DIM,
    MAX_HEADS,
    SpecError,
    check_keys,
    field,
    load_spec,
    parse_choice,
    parse_gaussian,
    parse_number,
    parse_params,
    parse_times,
)
from .sweep.cli import add_sweep_arguments, cmd_sweep, cmd_sweep_plot

EXIT_INVALID, EXIT_NUMERICAL = 2, 3

#: most output times (t_eval) of a flow spec
MAX_T_EVAL = 10_000
#: most discrete layers (n_layers) of a layers spec
MAX_LAYERS = 100_000
#: most numbers in one result (states × (d + d²)): bounds the output and its memory
MAX_OUTPUT = 2_000_000
#: most tokens (n_tokens) of a particles spec
MAX_TOKENS = 100_000
#: most steps (n_steps) of a particles spec
MAX_STEPS = 100_000
#: n_tokens² · n_steps · heads of a particles spec: the pair interactions, which set the time
#: (about 10⁷ a second on one core)
MAX_PARTICLE_WORK = 10 ** 9
#: largest d for steer with controls that have a constructive route (affine, full, attention)
STEER_MAX_DIM = 8
#: largest d for steer with the other controls (multiple shooting after Lie-bracket rank tests,
#: whose cost grows steeply with d)
STEER_SHOOTING_MAX_DIM = 3
#: the controls of steer with a constructive route
STEER_CONSTRUCTIVE = ("affine", "full", "attention")


def _output_size(where: str, n_states: int, d: int) -> None:
    """Refuse a result of more than MAX_OUTPUT numbers before it is computed."""
    size = n_states * (d + d * d)
    if size > MAX_OUTPUT:
        raise SpecError(f"{where}: {n_states} states of dimension d = {d} make {size} numbers, "
                        f"over the limit {MAX_OUTPUT} (cli.MAX_OUTPUT)")


# --- subcommands: each takes (args, spec) and returns (result dict, figure or None); the
# figure is drawn when args.plot is set and written by main after the result is printed ------

def cmd_flow(args, spec):
    from . import flows
    from .plotting import plot_flow

    check_keys(spec, ("params", "initial", "t_final", "t_eval", "method", "rtol", "atol"))
    params = parse_params(field(spec, "params"))
    g0 = parse_gaussian(field(spec, "initial"), "initial")
    t_final = parse_number(spec, "t_final")
    kwargs = {k: parse_number(spec, k) for k in ("rtol", "atol") if k in spec}
    method = parse_choice(spec, "method", ("auto", "exact", "rk"), default="auto")
    t_eval = parse_times(spec, "t_eval", max_len=MAX_T_EVAL, limit="cli.MAX_T_EVAL")
    default_outputs = getattr(flows, "DEFAULT_OUTPUTS", 101)
    _output_size("t_eval", default_outputs if t_eval is None else len(t_eval), g0.d)
    tr = flows.flow(params, g0, t_final, method=method, t_eval=t_eval, **kwargs)
    return tr, (plot_flow(params, g0, t_final, method=method, t_eval=t_eval, title="flow",
                          **kwargs) if args.plot else None)


def cmd_layers(args, spec):
    from .flows import layers
    from .plotting import plot_covariance

    check_keys(spec, ("params", "layers", "initial", "n_layers", "tau"))
    g0 = parse_gaussian(field(spec, "initial"), "initial")
    n_layers = parse_number(spec, "n_layers", kind=int, minimum=1, maximum=MAX_LAYERS,
                            limit="cli.MAX_LAYERS")
    tau = parse_number(spec, "tau")
    _output_size("n_layers", n_layers + 1, g0.d)
    if "layers" in spec:
        if "params" in spec:
            raise SpecError("layers: give either params (one layer repeated) or layers (one "
                            "params mapping per layer), not both")
        raw = field(spec, "layers")
        if not isinstance(raw, list):
            raise SpecError("layers: must be a list of params mappings")
        if len(raw) != n_layers:
            raise SpecError(f"layers: {len(raw)} params mapping{'s' * (len(raw) != 1)}, but "
                            f"n_layers = {n_layers}")
        params = [parse_params(p, f"layers[{i}]") for i, p in enumerate(raw)]
    else:
        params = parse_params(field(spec, "params"))
    tr = layers(params, g0, n_layers, tau)
    return tr, (plot_covariance(tr, title="layers") if args.plot else None)


def cmd_derive(args, spec):
    """Derive the moment equations of a Transformer field with SymPy."""
    from .symbolic import transformer_system
    from .symbolic.latex import system_latex

    check_keys(spec, ("d", "heads", "kernel", "ffn"))
    system = transformer_system(
        parse_number(spec, "d", kind=int, minimum=1, maximum=MAX_DIM, limit="spec.MAX_DIM"),
        heads=parse_number(spec, "heads", default=1, kind=int, minimum=1, maximum=MAX_HEADS,
                           limit="spec.MAX_HEADS"),
        kernel=parse_choice(spec, "kernel", ("dot", "l2"), default="dot"),
        ffn=parse_choice(spec, "ffn", ("affine", "relu"), default="affine"))
    return {"d": system.d, "exact": system.exact, "options": system.options,
            "latex": system_latex(system)}, None


def cmd_equilibria(args, spec):
    from .equilibrium import equilibria

    check_keys(spec, ("params", "which"))
    params = parse_params(field(spec, "params"))
    eqs = equilibria(params, which=parse_choice(spec, "which", ("stable", "all"),
                                                default="stable"))
    return {"equilibria": list(eqs)}, None


def cmd_certify(args, spec):
    from .certificates import certify
    from .flows import flow
    from .plotting import plot_covariance

    check_keys(spec, ("params", "initial"))
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
    from .lie import CONFIGURATIONS
    from .steering import steer

    check_keys(spec, ("start", "target", "T", "controls"))
    start = parse_gaussian(field(spec, "start"), "start")
    target = parse_gaussian(field(spec, "target"), "target")
    T = parse_number(spec, "T")
    controls = parse_choice(spec, "controls", tuple(CONFIGURATIONS), default="affine")
    limit, name = ((STEER_MAX_DIM, "cli.STEER_MAX_DIM") if controls in STEER_CONSTRUCTIVE
                   else (STEER_SHOOTING_MAX_DIM, "cli.STEER_SHOOTING_MAX_DIM"))
    if start.d > limit:
        raise SpecError(f"start: steer with controls {controls!r} is limited to d ≤ {limit} "
                        f"({name}), got d = {start.d}")
    plan = steer(start, target, T, controls=controls)
    result = {k: getattr(plan, k) for k in ("controls", "route", "success", "residual",
                                            "tolerance", "message", "breakpoints")}

    fig = None
    if args.plot:
        from .plotting import plot_covariance

        fig = plot_covariance(plan.integrate(), title=f"steer ({plan.route})")
    return result, fig


def cmd_particles(args, spec):
    from .flows import flow
    from .particles import MAX_SEED, simulate
    from .plotting import plot_particles

    check_keys(spec, ("params", "initial", "n_tokens", "seed", "t_final", "n_steps", "method"))
    params = parse_params(field(spec, "params"))
    g0 = parse_gaussian(field(spec, "initial"), "initial")
    n_tokens = parse_number(spec, "n_tokens", kind=int, minimum=2, maximum=MAX_TOKENS,
                            limit="cli.MAX_TOKENS")
    n_steps = parse_number(spec, "n_steps", kind=int, minimum=1, maximum=MAX_STEPS,
                           limit="cli.MAX_STEPS")
    seed = parse_number(spec, "seed", default=0, kind=int, minimum=0, maximum=MAX_SEED,
                        limit="particles.MAX_SEED")
    t_final = parse_number(spec, "t_final")
    method = parse_choice(spec, "method", ("rk4", "euler"), default="rk4")
    work = n_tokens ** 2 * n_steps * len(params.heads)
    if work > MAX_PARTICLE_WORK:
        raise SpecError(f"n_tokens: n_tokens² · n_steps · heads = {n_tokens}² · {n_steps} · "
                        f"{len(params.heads)} = {work:.3g} pair interactions, over the limit "
                        f"{MAX_PARTICLE_WORK:.0e} (cli.MAX_PARTICLE_WORK); use fewer tokens or "
                        f"steps, or riccati_tf.particles.simulate")
    _output_size("n_steps", n_steps + 1, g0.d)
    rng = np.random.default_rng(seed)
    run = simulate(params, g0.sample(n_tokens, rng), t_final, n_steps=n_steps, method=method)
    ref = flow(params, g0, run.t[-1], t_eval=run.t)
    k = len(ref.t)
    scale = np.linalg.norm(ref.cov[:k], axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):  # Σ = 0: NaN, printed as null
        rel = np.linalg.norm(run.cov[:k] - ref.cov, axis=(1, 2)) / scale
    result = {"t": run.t, "mean": run.mean, "cov": run.cov, "n_tokens": run.n_tokens,
              "gaussian_status": ref.status, "gaussian_blowup_time": ref.blowup_time,
              "cov_rel_error": rel}
    return result, (plot_particles(run, ref) if args.plot else None)


def _models_extra(exc: ImportError) -> InvalidInputError:
    return InvalidInputError(f"{exc}; install the extra: pip install 'riccati-tf[models]'")


def cmd_probe(args, _spec):
    from .experiments import probe_table, run_probe

    try:
        numbers = run_probe(args.model, args.out, n_tokens=args.n_tokens, seed=args.seed,
                            n_null=args.n_null)
    except ImportError as exc:
        raise _models_extra(exc) from None
    print(probe_table(numbers))
    print(f"figure and numbers written to {Path(args.out) / 'probe.png'}, probe.json")
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
#: subcommands that draw no figure (the others return their figure when args.plot is set)
_NO_FIGURE = ("derive", "equilibria")


class _Parser(argparse.ArgumentParser):
    """argparse with errors on one line (`riccati-tf flow: error: ...`), exit 2."""

    def error(self, message):
        text = " ".join(str(message).split())
        self.exit(EXIT_INVALID, f"{self.prog}: error: {text} (see {self.prog} --help)\n")


def _integer(text: str) -> int:
    """A decimal integer (the range is checked by the function it is passed to)."""
    try:
        return int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text[:40]!r}") from None


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="riccati-tf",
        description="Gaussian (mean-field) dynamics of Transformers: moment equations, Riccati "
                    "flows, certificates and reachability. Spec files are JSON or YAML with "
                    "matrices as nested lists.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
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
    probe.add_argument("--n-tokens", type=_integer, default=1000,
                       help="Gaussian tokens fed to the encoder (at most models.MAX_TOKENS)")
    probe.add_argument("--n-null", type=_integer, default=200,
                       help="Gaussian samples simulated for the null distributions (at most "
                            "gaussianity.MAX_NULL)")
    for name in ("probe", "prescribed", "relu-drift"):
        sub.choices[name].add_argument("--seed", type=_integer, default=0,
                                       help="random seed, 0 ≤ seed ≤ 2⁶³ − 1")
        sub.choices[name].add_argument("--out", default="report", help="output folder")
    for name in ("prescribed", "relu-drift"):
        sub.choices[name].add_argument("--n-tokens", type=_integer, default=2000,
                                       help="tokens (at most experiments.MAX_TOKENS)")
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


def _stdout_to_devnull() -> None:
    """After a BrokenPipeError: point the stdout descriptor at /dev/null, so that the flush at
    exit does not fail a second time (the recipe of the Python documentation, `signal`)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a real file (captured, closed)
        pass


def _say(args, kind: str, exc) -> None:
    text = " ".join(str(exc).split()) or type(exc).__name__
    if sys.stderr is None:  # started with stderr closed (2>&-): print(file=None) is stdout
        return
    try:
        print(f"riccati-tf {args.command}: {kind}: {text}", file=sys.stderr)
    except (OSError, ValueError):  # stderr closed meanwhile: nothing more to say
        pass


def _run(args) -> int:
    _help, handler, needs_spec = COMMANDS[args.command]
    plot = getattr(args, "plot", None)
    try:
        if plot is not None:
            if args.command in _NO_FIGURE:
                raise InvalidInputError(f"--plot: {args.command} draws no figure")
            from .plotting import check_output_file

            check_output_file(plot, "--plot")
        spec = load_spec(args.spec) if needs_spec else None
        result, figure = handler(args, spec)
        if result is not None:
            if args.json:
                print(json.dumps(to_jsonable(result), allow_nan=False))
            else:
                _print_human(result)
        if sys.stdout is not None:  # None when started with stdout closed (>&-)
            sys.stdout.flush()  # a closed pipe shows here, not at exit
        if plot is not None and figure is not None:
            from .plotting import save_figure

            try:
                save_figure(figure, plot)
            except InvalidInputError as exc:
                raise InvalidInputError(f"--plot: {exc}") from None
        return 0
    except BrokenPipeError:
        raise
    except InvalidInputError as exc:
        if args.debug:
            raise
        _say(args, "error", exc)
        return EXIT_INVALID
    except SolverError as exc:
        if args.debug:
            raise
        _say(args, "numerical failure", exc)
        return EXIT_NUMERICAL
    except Exception as exc:
        if args.debug:
            raise
        _say(args, "unexpected error", f"({type(exc).__name__}: {exc}); rerun with --debug "
                                       "for the traceback")
        return 1


def main(argv: list[str] | None = None) -> int:
    """Run `riccati-tf argv` (default sys.argv[1:]); returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        with warnings.catch_warnings():
            if not args.debug:  # the contract is one line on stderr: numpy's warnings are
                warnings.simplefilter("ignore")  # shown with --debug only
            return _run(args)
    except BrokenPipeError:  # the reader closed stdout (| head): stop quietly
        _stdout_to_devnull()
        return 0


if __name__ == "__main__":
    sys.exit(main())
