"""The `riccati-tf` parser and dispatch: the subcommands (COMMANDS), their options, `main` (one
line and an exit code per error) and the console script `entry`; `riccati-tf report`.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import sys
import textwrap
import warnings
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from ...errors import InvalidInputError, SolverError
from ...io.serialize import to_jsonable
from ...io.spec import (
    SpecError,
    load_spec,
    one_line,
)
from ...sweep.cli import add_sweep_arguments, cmd_sweep, cmd_sweep_plot
from ...sweep.store import exit_process
from ..specs import SCHEMAS, example_text, key_problems, render_fields
from .analysis import cmd_certify, cmd_derive, cmd_equilibria, cmd_flow, cmd_layers
from .common import EXIT_INVALID, EXIT_NUMERICAL, TEXT_WIDTH, Outcome, generic_text
from .design import cmd_design
from .models import _add_input_arguments, cmd_atlas, cmd_compare, cmd_probe
from .particles import cmd_particles, cmd_prescribed, cmd_relu_drift
from .steering import STEER_MAX_DIM, STEER_SHOOTING_MAX_DIM, cmd_steer

if TYPE_CHECKING:

    pass


__all__: list[str] = []


def cmd_report(args: argparse.Namespace, _spec: dict | None) -> Outcome:
    from ..report import write_report

    if Path(args.out).exists() and not Path(args.out).is_dir():
        raise InvalidInputError(f"--out: {args.out} exists and is not a folder")
    page = write_report(args.out, quick=args.quick, model=args.model)
    print(f"report written to {page.parent.resolve()}/ (open {page.name})")
    return None, None, None


COMMANDS: dict[str, tuple[str, Callable, bool]] = {
    "derive": ("derive the moment equations of a Transformer field (SymPy; LaTeX out)",
               cmd_derive, True),
    "flow": ("integrate the mean-covariance flow of a spec (exact or Runge-Kutta), with constant "
             "params or a piecewise schedule (e.g. a steering plan)", cmd_flow, True),
    "layers": ("propagate a Gaussian through exact discrete residual layers", cmd_layers, True),
    "equilibria": ("equilibria of the covariance flow with residuals and stability",
                   cmd_equilibria, True),
    "certify": ("certify convergence, collapse or blow-up of a time-invariant layer", cmd_certify,
                True),
    "steer": ("controls steering one Gaussian to another, verified by integration; --json gives "
              "the plan as a flow spec", cmd_steer, True),
    "design": ("design a layer whose Gaussian flow is attracted to a target N(m*, Σ*) (scalar "
               "value matrices), with its certificate, flows from random starts and "
               "controllability; writes design.html and design.json", cmd_design, True),
    "particles": ("simulate N tokens with softmax attention against the Gaussian flow from their "
                  "empirical moments", cmd_particles, True),
    "probe": ("feed Gaussian tokens to a saved Transformer encoder; per-layer Gaussianity",
              cmd_probe, False),
    "atlas": ("stability atlas of a saved Transformer encoder: per-layer regime and blow-up "
              "time of the multi-head attention flow up to the horizon, per-head spectral "
              "masses and growth rates", cmd_atlas, False),
    "compare": ("predicted hidden-state moments of a saved Transformer encoder against the "
                "model, one layer at a time and chained, with baselines and the validity map "
                "of the attention formula", cmd_compare, False),
    "prescribed": ("particles vs the Gaussian flow: bounded (opposite signs) vs blow-up "
                   "(equal signs)", cmd_prescribed, False),
    "relu-drift": ("drift away from Gaussianity under a ReLU feed-forward layer", cmd_relu_drift,
                   False),
    "sweep": ("map a parameter family through certify / flow / particles (chunked Parquet, "
              "resumable, Dask)", cmd_sweep, True),
    "sweep-plot": ("phase diagram (PNG) of a sweep's results", cmd_sweep_plot, False),
    "report": ("run the built-in analyses and write an HTML report", cmd_report, False),
}


#: subcommands that draw a figure with --plot FILE (the others do not offer --plot)
PLOTTING = ("flow", "layers", "certify", "steer", "design", "particles", "sweep", "sweep-plot")


#: subcommands that print their numbers as JSON with --json
JSON_OUTPUT = ("derive", "flow", "layers", "equilibria", "certify", "steer", "design",
               "particles", "sweep", "probe", "atlas", "compare", "prescribed", "relu-drift")


class _Parser(argparse.ArgumentParser):
    """argparse with errors on one line (`riccati-tf flow: error: ...`), exit 2, and an epilog
    that may be a function, called when the help is shown (so that building the parser imports
    nothing heavy)."""

    def error(self, message: str) -> Any:
        text = one_line(str(message))
        self.exit(EXIT_INVALID, f"{self.prog}: error: {text} (see {self.prog} --help)\n")

    def format_help(self) -> str:
        if callable(self.epilog):
            self.epilog = self.epilog()
        return super().format_help()


def _integer(text: str) -> int:
    """A decimal integer (the range is checked by the function it is passed to)."""
    try:
        return int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text[:40]!r}") from None


def _version() -> str:
    try:
        return importlib.metadata.version("riccati-tf")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree, not installed
        return "unknown (not installed)"


def _spec_epilog(name: str) -> str:
    """The --help epilog of a subcommand that reads a spec: the table of its fields
    (`specs.render_fields`); for steer also its control configurations."""
    text = render_fields(SCHEMAS[name])
    if name != "steer":
        return text
    from ...reachability.lie import CONFIGURATIONS

    lines = [f"  {key:<18} {conf.summary}" for key, conf in CONFIGURATIONS.items()]
    routes = textwrap.fill(
        "affine and full: two constant affine pieces (polar route); attention: tracking "
        "attention; the others: multiple shooting after a Lie-bracket rank test "
        f"(d ≤ {STEER_SHOOTING_MAX_DIM}; d ≤ {STEER_MAX_DIM} otherwise).", TEXT_WIDTH - 8)
    return text + "\n\ncontrols:\n" + "\n".join(lines) + "\n" + routes


class _PrintExample(argparse.Action):
    """--example: print the subcommand's example spec (`specs.example_text` of `const`) and
    exit 0, as --version does (so no spec path is needed)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs["default"] = argparse.SUPPRESS
        super().__init__(option_strings, argparse.SUPPRESS, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        parser._print_message(example_text(self.const), sys.stdout)
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of `riccati-tf`: one subcommand per entry of COMMANDS.

    Each subcommand that reads a spec takes it as its positional argument, offers --example
    (print the example spec, exit 0) and ends its help with the table of the spec's fields
    (`specs.render_fields`); those of JSON_OUTPUT offer --json, those of PLOTTING offer
    --plot FILE, every one offers --debug. Errors are one line ending in "(see PROG --help)",
    with exit code 2. The documentation's command-line reference is generated from this
    parser.

    Returns
    -------
    argparse.ArgumentParser
        The parser (prog "riccati-tf"); `parse_args` gives a Namespace whose `command` names
        the subcommand.

    Raises
    ------
    argparse.ArgumentError
        Only for conflicting option definitions, a bug of this module (the optional
        dependencies of the model subcommands are imported only when they run).

    See Also
    --------
    main : parses argv with it and runs the subcommand.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2–§7 (the subcommands' mathematics).

    Examples
    --------
    >>> from riccati_tf.app.cli import build_parser
    >>> args = build_parser().parse_args(["certify", "layer.json", "--json"])
    >>> args.command, args.spec, args.json, args.plot
    ('certify', 'layer.json', True, None)
    """
    from ...empirical.defaults import DEFAULT_HORIZON, MAX_NULL
    from ...empirical.defaults import DEFAULT_TOKENS as PROBE_DEFAULT
    from ...empirical.defaults import EXPERIMENT_MAX_TOKENS as EXPERIMENT_TOKENS
    from ...empirical.defaults import MAX_TOKENS as PROBE_TOKENS

    parser = _Parser(
        prog="riccati-tf",
        description="Gaussian (mean-field) dynamics of Transformers: moment equations, Riccati "
                    "flows, certificates and reachability. Spec files are JSON or YAML with "
                    "matrices as nested lists.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    # also before the subcommand; a subcommand's own --debug would overwrite a shared dest
    parser.add_argument("--debug", dest="debug_all", action="store_true",
                        help="show tracebacks and warnings (also accepted after the subcommand)")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, (help_text, _handler, needs_spec) in COMMANDS.items():
        if needs_spec:  # the epilog, the spec's fields laid out as written, is made when shown
            epilog: Any = partial(_spec_epilog, name)  # (_Parser.format_help calls it)
            p = sub.add_parser(name, help=help_text, description=textwrap.fill(help_text, 78),
                               epilog=epilog,
                               formatter_class=argparse.RawDescriptionHelpFormatter)
            p.add_argument("spec", help="spec file (.json, .yaml or .yml; fields below)")
            p.add_argument("--example", action=_PrintExample, const=name,
                           help="print a complete example spec (YAML) and exit")
        else:
            p = sub.add_parser(name, help=help_text, description=help_text)
        if name in JSON_OUTPUT:
            p.add_argument("--json", action="store_true",
                           help="print every number as JSON (default: a summary)")
        if name in PLOTTING:
            p.add_argument("--plot", metavar="FILE", help="write a PNG figure to FILE")
        p.add_argument("--debug", action="store_true", help="show tracebacks")
    probe = sub.choices["probe"]
    probe.add_argument("--n-tokens", type=_integer, default=PROBE_DEFAULT, metavar="N",
                       help=f"Gaussian tokens fed to the encoder, cut into sequences of at most "
                            f"the model's position limit (default %(default)s; more than "
                            f"min(8, d) + 1, at most probe.MAX_TOKENS = {PROBE_TOKENS})")
    probe.add_argument("--n-null", type=_integer, default=200, metavar="N",
                       help=f"Gaussian samples simulated for the null distributions (default "
                            f"%(default)s; 1 to gaussianity.MAX_NULL = {MAX_NULL})")
    atlas = sub.choices["atlas"]
    atlas.add_argument("--position-free", action="store_true",
                       help="analyse the position-free part of rotary attention (ModernBERT; "
                            "refused without this flag)")
    atlas.add_argument("--horizon", type=float, default=DEFAULT_HORIZON, metavar="T",
                       help="depth up to which each layer's attention flow is classified; a "
                            "blow-up after it is not reported (default %(default)s)")
    atlas.add_argument("--chained", action="store_true",
                       help="with real tokens, start each layer from the Gaussian closures' "
                            "prediction chained from the input moments instead of the moments "
                            "measured at the layer's attention input (the default)")
    comp = sub.choices["compare"]
    comp.add_argument("--n-tokens", type=_integer, default=2048, metavar="N",
                      help="Gaussian tokens fed to the encoder, cut into sequences of at most "
                           "the model's position limit (default %(default)s)")
    comp.add_argument("--seed", type=_integer, default=0,
                      help="random seed (default %(default)s)")
    comp.add_argument("--position-free", action="store_true",
                      help="predict the position-free part of rotary attention (ModernBERT)")
    comp.add_argument("--out", default="compare", metavar="DIR",
                      help="output folder for comparison.png and comparison.json (default "
                           "%(default)s; created if missing)")
    for name in ("probe", "atlas", "compare"):
        sub.choices[name].add_argument(
            "--model", metavar="PATH", default=None,
            help="folder saved with save_pretrained (BERT, RoBERTa, ModernBERT, ViT, DeiT); "
                 "default: a randomly initialised encoder (nothing is downloaded)")
        _add_input_arguments(sub.choices[name])
    sub.choices["atlas"].add_argument("--out", default="atlas", metavar="DIR",
                                      help="output folder for atlas.png, atlas.json and "
                                           "atlas_inputs.npz (default %(default)s; created "
                                           "if missing)")
    for name in ("probe", "prescribed", "relu-drift"):
        sub.choices[name].add_argument("--seed", type=_integer, default=0,
                                       help="random seed (default %(default)s; 0 ≤ seed ≤ "
                                            "2⁶³ − 1)")
        sub.choices[name].add_argument("--out", default=name, metavar="DIR",
                                       help="output folder for the figure and the numbers "
                                            "(default %(default)s; created if missing)")
    for name, least in (("prescribed", 2), ("relu-drift", 4)):
        sub.choices[name].add_argument("--n-tokens", type=_integer, default=2000, metavar="N",
                                       help=f"tokens (default %(default)s; {least} to "
                                            f"experiments.MAX_TOKENS = {EXPERIMENT_TOKENS})")
    sub.choices["design"].add_argument("--out", default="design", metavar="DIR",
                                       help="output folder for design.html and design.json "
                                            "(default %(default)s; created if missing)")
    add_sweep_arguments(sub)
    rep = sub.choices["report"]
    rep.add_argument("--out", default="report", metavar="DIR",
                     help="output folder (default %(default)s)")
    rep.add_argument("--quick", action="store_true",
                     help="smaller, faster run (a minute or two of CPU)")
    rep.add_argument("--model", metavar="PATH", default=None,
                     help="Transformer folder (save_pretrained) analysed by the probe and the "
                          "model section; default: encoders with random weights (a DeiT-tiny "
                          "shape and a small BERT), named as such in the report")
    return parser


def _stdout_to_devnull() -> None:
    """After a BrokenPipeError: point the stdout descriptor at /dev/null, so that the flush at
    exit does not fail a second time (the recipe of the Python documentation, `signal`)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a real file (captured, closed)
        pass


def _say(args: argparse.Namespace, kind: str, exc: object) -> None:
    # one line; control and bidirectional characters (from spec keys, paths) escaped; with
    # --json a JSON object {"command", "kind", "message"}, as the results are
    text = one_line(str(exc)) or type(exc).__name__
    if sys.stderr is None:  # started with stderr closed (2>&-): print(file=None) is stdout
        return
    line = (json.dumps({"command": args.command, "kind": kind, "message": text},
                       ensure_ascii=False) if getattr(args, "json", False) else
            f"riccati-tf {args.command}: {kind}: {text}")
    try:
        print(line, file=sys.stderr)
    except (OSError, ValueError):  # stderr closed meanwhile: nothing more to say
        pass


def _run(args: argparse.Namespace) -> int:
    _help, handler, needs_spec = COMMANDS[args.command]
    plot = getattr(args, "plot", None)
    try:
        if plot is not None:
            from ...io.figures import check_output_file

            check_output_file(plot, "--plot")
        spec = load_spec(args.spec) if needs_spec else None
        problems = key_problems(SCHEMAS[args.command], spec) if needs_spec else []
        if len(problems) > 1:  # every misspelt or missing key at once (values: one at a time)
            raise SpecError(f"{len(problems)} problems: " + "; ".join(problems))
        out = handler(args, spec)
        result, text, figure = out if len(out) == 3 else (out[0], None, out[1])
        if result is not None:
            if getattr(args, "json", False):
                print(json.dumps(to_jsonable(result), allow_nan=False, ensure_ascii=False))
            else:
                print(generic_text(result) if text is None else text)
        if sys.stdout is not None:  # None when started with stdout closed (>&-)
            sys.stdout.flush()  # a closed pipe shows here, not at exit
        if plot is not None and figure is not None:
            from ...io.figures import save_figure

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
    """Run `riccati-tf argv` (default sys.argv[1:]); returns the exit code.

    The subcommands (`riccati-tf --help`) derive the moment equations, integrate the
    mean-covariance flow ṁ = (A + V)m + VΣBm + b, Σ̇ = AΣ + ΣAᵀ + VΣBΣ + ΣBᵀΣVᵀ (SPEC §2),
    propagate discrete layers, list equilibria, certify convergence, collapse or blow-up
    (SPEC §5–§6), steer one Gaussian to another (SPEC §4), design a layer with a prescribed
    attracting Gaussian (SPEC §5; design.html and design.json), simulate particles, probe real
    encoders (SPEC §7), run parameter sweeps and write the HTML report. Output: a summary, or
    with --json every number as one JSON document (strict: no NaN); --plot FILE writes a PNG
    after the numbers are printed. Tracebacks and warnings only with --debug. A reader that
    closes stdout early ends the run quietly with exit code 0.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after the program name (default: sys.argv[1:]).

    Returns
    -------
    int
        The exit code: 0 success, 2 invalid spec or arguments (one line on stderr naming the
        field or option), 3 numerical failure (a SolverError, one line), 1 an unexpected error.

    Raises
    ------
    SystemExit
        From argparse, for --help, --version, --example (code 0) and invalid arguments
        (code 2).
    Exception
        Only with --debug: the error of the subcommand, with its traceback.

    See Also
    --------
    build_parser : the argument parser.
    riccati_tf.io.spec.load_spec : how spec files are read.
    riccati_tf.io.serialize.to_jsonable : how --json output is made.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2–§7 (riccati_tf/SPEC.md, installed with the package).

    Examples
    --------
    >>> import json
    >>> import tempfile
    >>> from pathlib import Path
    >>> from riccati_tf.app.cli import main
    >>> spec = {"params": {"A": [[0.2, -0.3], [0.3, 0.2]], "B": [[1, 0.2], [0.2, 0.6]],
    ...                    "V": [[0.3, 0], [0, 0.3]]},
    ...         "initial": {"mean": [1, -0.5], "cov": [[1, 0.3], [0.3, 0.5]]}}
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = Path(tmp) / "layer.json"
    ...     _ = path.write_text(json.dumps(spec))
    ...     code = main(["certify", str(path), "--json"])
    {"regime": "blows_up", "exact": true, ...}
    >>> code
    0

    A missing file is exit code 2 (and one line on stderr):

    >>> main(["certify", "no-such-file.json"])
    2
    """
    args = build_parser().parse_args(argv)
    args.debug = args.debug or args.debug_all
    try:
        with warnings.catch_warnings():
            if not args.debug:  # the contract is one line on stderr: numpy's warnings are
                warnings.simplefilter("ignore")  # shown with --debug only
            return _run(args)
    except BrokenPipeError:  # the reader closed stdout (| head): stop quietly
        _stdout_to_devnull()
        return 0


def entry() -> NoReturn:
    """The `riccati-tf` console script: `main`, then `riccati_tf.sweep.store.exit_process` (a
    sweep's pyarrow thread pools may otherwise abort the finished process at exit); argparse's
    own exits (--help, usage errors) keep their codes."""
    try:
        code = main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
    exit_process(code)

