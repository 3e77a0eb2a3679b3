"""Command line: `riccati-tf <subcommand> [SPEC] [--json] [--plot FILE] [--debug]`.

Output: a summary per subcommand (aligned tables of the numbers that matter, LaTeX and Unicode
printed as they are), or with --json every number in full as one JSON document. --plot is
offered by the subcommands that draw a figure (PLOTTING). `steer --json` holds the plan as a
flow spec (field `plan`: a piecewise `schedule`) that `riccati-tf flow` replays. Long runs show
tqdm progress bars on stderr when it is a terminal (`experiments.progress_bar`).

Exit codes: 0 success, 2 invalid spec or arguments (one line naming the field or option),
3 numerical failure (a SolverError, one line), 1 a bug (anything unexpected; no user input is
meant to reach it). Tracebacks and warnings only with --debug. A reader that closes stdout early
(`riccati-tf flow spec.json --json | head -c 100`) ends the run quietly with exit 0, as Unix
filters do.

Specs are read by `riccati_tf.io.spec` (strict JSON or YAML 1.2, bounded sizes, unknown keys
refused at every level). Each subcommand's spec is described once, in `app.specs.SCHEMAS`: the
top-level keys it accepts, the table of fields that ends its --help, and the example spec that
`riccati-tf SUBCOMMAND --example` prints. Sizes that decide the cost of a run are bounded
before anything is allocated, by the module constants below (each message names its constant).
The output of --plot and the folder of --out are checked before the computation; the result is
printed before the figure is written, so a figure that then cannot be written (a full disk)
still leaves the numbers on stdout, and the exit code is 2 with a line naming the path.
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
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np
import numpy.typing as npt

from ..display import DIGITS
from ..errors import InvalidInputError, SolverError
from ..io.serialize import json_document, params_json, to_jsonable
from ..io.spec import (
    MAX_DIM,
    MAX_HEADS,
    SpecError,
    check_keys,
    check_mapping,
    check_numeric,
    field,
    load_spec,
    one_line,
    parse_choice,
    parse_gaussian,
    parse_number,
    parse_params,
    parse_times,
)
from ..state.params import Gaussian, Params
from ..sweep.cli import add_sweep_arguments, cmd_sweep, cmd_sweep_plot
from ..sweep.store import exit_process
from .specs import SCHEMAS, example_text, key_problems, render_fields

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..empirical.particles import ParticleRun
    from ..flows.integrate import Trajectory
    from ..reachability.steering import ControlPlan
    from ..stability.certificates import Certificate
    from ..stability.equilibria import Equilibrium

__all__ = ["build_parser", "main"]

#: what a subcommand handler returns: (result for --json, summary text or None, figure or None)
Outcome = tuple[Any, str | None, "Figure | None"]

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
#: particles runs of more pair interactions than this (about 3 s) show a progress bar
PROGRESS_WORK = 3 * 10 ** 7
#: chunks of a particles run with a progress bar (the bar moves once per chunk)
PROGRESS_CHUNKS = 100
#: tolerances of the flow spec a steering plan is written as (tighter than flow's defaults, so
#: that the replay's integration error stays well below the plan's tolerance DEFAULT_TOL = 1e-8:
#: an open-loop tracking plan, B(t) = Σ(t)⁺R, amplifies integration errors)
REPLAY_RTOL, REPLAY_ATOL = 1e-12, 1e-14
#: random starts of a design spec: the default and the most
DESIGN_STARTS, DESIGN_MAX_STARTS = 5, 20
#: the default horizon of a design spec is DESIGN_HORIZON_RATES / min(rate, mean_rate) (the
#: slower of the covariance's and the mean's decay rates: errors of e^{−40} ≈ 4e−18 times the
#: start's), at most DESIGN_MAX_HORIZON; a horizon given is at most DESIGN_MAX_HORIZON too
DESIGN_HORIZON_RATES, DESIGN_MAX_HORIZON = 40.0, 10_000.0
#: library argument names of attracting_layer's messages → the design spec's fields
DESIGN_ARGUMENTS = (("target cov", "target: cov"), ("target mean", "target: mean"),
                    ("heads", "heads:"), ("v", "v:"), ("B", "B:"), ("A0", "A0:"),
                    ("criterion", "criterion:"), ("gain", "gain:"), ("scale", "scale:"),
                    ("rank", "rank:"))
#: width of wrapped text in human summaries
TEXT_WIDTH = 100
#: rows of the particles summary table
PARTICLES_ROWS = 6
#: what the particles are compared with
PARTICLES_REFERENCE = ("Gaussian flow from the empirical moments (mean, unbiased covariance) of "
                       "the drawn tokens")


def _output_size(where: str, n_states: int, d: int) -> None:
    """Refuse a result of more than MAX_OUTPUT numbers before it is computed."""
    size = n_states * (d + d * d)
    if size > MAX_OUTPUT:
        raise SpecError(f"{where}: {n_states} states of dimension d = {d} make {size} numbers, "
                        f"over the limit {MAX_OUTPUT} (cli.MAX_OUTPUT)")


# --- human summaries: aligned tables of the numbers that matter; --json prints every number --


def _g(x: Any) -> str:
    """A number as shown in summaries (DIGITS significant digits), yes/no, or — for None."""
    if x is None:
        return "—"
    if isinstance(x, bool | np.bool_):
        return "yes" if x else "no"
    if isinstance(x, int | np.integer):
        return str(int(x))
    return f"{float(x):.{DIGITS}g}"


def _vector(v: npt.ArrayLike) -> str:
    return "[" + ", ".join(_g(x) for x in np.asarray(v, dtype=float).ravel()) + "]"


def table(rows: Sequence[Sequence[object]], header: Sequence[object] | None = None) -> str:
    """Rows of cells as left-aligned text columns separated by two spaces."""
    cells = [[str(c) for c in r] for r in ([header] if header else []) + list(rows)]
    n = max(len(r) for r in cells)
    widths = [max(len(r[i]) for r in cells if i < len(r)) for i in range(n)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)).rstrip()
                     for r in cells)


def _eigenvalues(cov: npt.ArrayLike) -> np.ndarray:
    """Eigenvalues of Σ, largest first."""
    return np.linalg.eigvalsh(np.asarray(cov, dtype=float))[::-1]


def _rank(cov: npt.ArrayLike) -> int:
    from ..state.validation import psd_rank

    return int(psd_rank(np.asarray(cov, dtype=float)))


def _wrap(label: str, text: str) -> str:
    return textwrap.fill(" ".join(str(text).split()), width=TEXT_WIDTH,
                         initial_indent=f"{label}: ", subsequent_indent="  ")


def _state_rows(tr: Trajectory, label: str) -> list[list[str]]:
    """start / end columns of a trajectory: time, mean, Σ eigenvalues, rank."""
    ends = (0, -1)
    return [[label, *(_g(tr.t[i]) for i in ends)],
            ["mean", *(_vector(tr.mean[i]) for i in ends)],
            ["Σ eigenvalues", *(_vector(_eigenvalues(tr.cov[i])) for i in ends)],
            ["rank Σ", *(_g(_rank(tr.cov[i])) for i in ends)]]


def trajectory_text(tr: Trajectory, title: str, label: str = "t") -> str:
    """status, method, T* and the start and final states of a Trajectory."""
    blow = (f"{_g(tr.blowup_time)} (the last output is t = {_g(tr.t[-1])}, before T*)"
            if tr.blowup_time is not None else "none (no blow-up)")
    head = table([["status", tr.status], ["method", tr.method], ["T*", blow],
                  ["outputs", f"{len(tr.t)} times from {_g(tr.t[0])} to {_g(tr.t[-1])}"]])
    states = table(_state_rows(tr, label), header=["", "start", "end"])
    return f"{title}\n{head}\n\n{states}\n\n(--json prints every output time in full)"


def certificate_text(cert: Certificate, checked: bool | None = None) -> str:
    """The certificate as a table; `checked`, when given, is the result of `cert.check()` (which
    replays numerical evidence, so the caller that already has it passes it on)."""
    eq = cert.equilibrium
    if cert.tolerance:
        tolerance = ", ".join(f"{k} = {_g(v)}" for k, v in cert.tolerance.items())
    elif cert.exact:
        tolerance = "none: every premise decided in exact rational arithmetic"
    else:
        tolerance = "none: no verdict was decided"
    checked = cert.check() if checked is None else checked
    residuals = [f"equilibrium {_g(eq.residual)}" if eq is not None else None,
                 f"λ_min(P) = {_g(cert.lyapunov_min_eig)}" if cert.lyapunov is not None else None,
                 f"λ_min(Q) = {_g(cert.rhs_min_eig)}" if cert.lyapunov_rhs is not None else None,
                 f"Kantorovich radius {_g(cert.kantorovich_radius)}"
                 if cert.kantorovich_radius is not None else None]
    rows = [["regime", cert.regime],
            ["exact", _g(cert.exact) + (" (premises decided in rational arithmetic)"
                                        if cert.exact else " (decided in floating point with the "
                                        "tolerances below)" if cert.tolerance else
                                        " (no theorem applied)")],
            ["global", _g(cert.global_) + (" (for every Σ0 ≻ 0)" if cert.global_ else
                                           " (for this Σ0)")],
            ["theorem", cert.theorem],
            ["tolerance", tolerance],
            ["T*", _g(cert.blowup_time)],
            ["rate", _g(cert.rate)],
            ["threshold", _g(cert.threshold)],
            ["bound", "—" if cert.bound is None else
             f"λ_max(Σ(t)) ≤ {_g(cert.bound)} for all t ≥ 0"],
            ["residuals", "; ".join(r for r in residuals if r) or "—"],
            ["check()", "passed" if checked else "FAILED"]]
    if cert.blowup_direction is not None:
        rows.append(["blow-up direction", _vector(cert.blowup_direction)])
    if eq is not None:
        rows += [["Σ* eigenvalues", _vector(_eigenvalues(eq.cov))],
                 ["m*", "—" if eq.mean is None else _vector(eq.mean)]]
    return f"certificate\n{table(rows)}\n\n{_wrap('reason', cert.reason)}"


def equilibria_text(eqs: Sequence[Equilibrium]) -> str:
    rows = [[str(i + 1), _g(e.stable), str(e.rank), _g(e.spectral_abscissa), _g(e.residual),
             e.method, _vector(_eigenvalues(e.cov)), "—" if e.mean is None else _vector(e.mean)]
            for i, e in enumerate(eqs)]
    head = f"{len(eqs)} equilibri{'um' if len(eqs) == 1 else 'a'} Σ* of the covariance flow"
    return head + "\n" + table(rows, header=["#", "stable", "rank", "abscissa", "residual",
                                             "method", "Σ* eigenvalues", "m*"])


# --- steering plans as flow specs -------------------------------------------------------------


def piece_json(piece: Any) -> dict:
    """One piece of a ControlPlan as an entry of a flow spec's schedule."""
    from .schedule import TRACKING_FIELDS

    out = {"t_start": piece.t0, "t_end": piece.t1}
    if hasattr(piece, "layer"):
        out["params"] = params_json(piece.layer)
    else:
        out["tracking"] = {key: getattr(piece, key) for key in TRACKING_FIELDS}
    return out


def plan_spec(plan: ControlPlan) -> dict:
    """The flow spec that replays a ControlPlan: initial, t_final, the schedule and the
    tolerances REPLAY_RTOL, REPLAY_ATOL."""
    return {"initial": {"mean": plan.start.mean, "cov": plan.start.cov},
            "t_final": plan.pieces[-1].t1, "schedule": [piece_json(p) for p in plan.pieces],
            "rtol": REPLAY_RTOL, "atol": REPLAY_ATOL}


def replay(schedule: list, g0: Gaussian, t_final: float, *, method: str,
           t_eval: npt.ArrayLike | None, **tolerances: Any) -> Trajectory:
    """`flows.flow` piece by piece along a schedule of `schedule.parse_schedule` (never stepping
    across a breakpoint); the state at each t_end starts the next piece. Output at t_eval
    (default DEFAULT_OUTPUTS equally spaced times); a blow-up ends the trajectory."""
    from ..flows import integrate as flows

    grid = np.linspace(0.0, t_final, flows.DEFAULT_OUTPUTS) if t_eval is None else \
        np.asarray(t_eval, dtype=float)
    if grid.size and (grid[0] < 0 or grid[-1] > t_final or np.any(np.diff(grid) < 0)):
        raise SpecError(f"t_eval: must be increasing times in [0, t_final] = [0, {t_final!r}]")
    ts: list[np.ndarray] = []
    means: list[np.ndarray] = []
    covs: list[np.ndarray] = []
    methods: list[str] = []
    state, tr = g0, None
    for k, (t0, t1, piece) in enumerate(schedule):
        inside = grid[(grid > t0) & (grid <= t1)] if k else grid[grid <= t1]
        local = np.unique(np.concatenate([[0.0], inside - t0, [t1 - t0]]))
        layer: Params | Callable[[float], Params]
        if isinstance(piece, Params):
            layer, how = piece, method
        elif method == "exact":
            raise SpecError(f"method: exact needs constant parameters, but schedule[{k}] is a "
                            f"tracking piece (time-varying); use auto or rk")
        else:
            def varying(s: float, piece: Any = piece, t0: float = t0) -> Params:
                return piece.params(t0 + s)
            layer, how = varying, "rk"
        tr = flows.flow(layer, state, t1 - t0, method=how, t_eval=local, **tolerances)
        where = np.searchsorted(local, inside - t0)
        ok = where < len(tr.t)
        ts.append(inside[ok])
        means.append(tr.mean[where[ok]])
        covs.append(tr.cov[where[ok]])
        methods.append(tr.method)
        if tr.status != "completed":
            tr = replace(tr, blowup_time=None if tr.blowup_time is None else
                         t0 + tr.blowup_time)
            break
        state = tr.gaussian(-1)
    assert tr is not None  # parse_schedule gives at least one piece
    d = g0.d
    return replace(tr, t=np.concatenate(ts), mean=np.concatenate(means).reshape(-1, d),
                   cov=np.concatenate(covs).reshape(-1, d, d),
                   method="+".join(dict.fromkeys(methods)))


def steer_text(plan: ControlPlan) -> str:
    rows = [["controls", plan.controls], ["route", plan.route],
            ["success", _g(bool(plan.success))],
            ["residual", f"{_g(plan.residual)} (terminal relative error; tolerance "
                         f"{_g(plan.tolerance)})"],
            ["t_final", _g(plan.t_final)]]
    pieces = []
    for i, p in enumerate(plan.pieces):
        if hasattr(p, "layer"):
            A, B, V, b = p.layer.A, p.layer.B, p.layer.V, p.layer.b
            kind = "constant"
        else:
            A, B, V, b = p.arrays(p.t0)
            kind = "tracking: B(t) = Σ(t)⁺R, b(t)"
        norms = [_g(np.linalg.norm(x)) if x is not None else "heads" for x in (A, b, V, B)]
        pieces.append([str(i + 1), _g(p.t0), _g(p.t1), kind, *norms])
    return (f"steering plan\n{table(rows)}\n{_wrap('message', plan.message)}\n\n"
            + table(pieces, header=["piece", "t_start", "t_end", "controls", "‖A‖", "‖b‖",
                                    "‖V‖", "‖B‖ (at t_start)"])
            + "\n\nstart  " + f"mean {_vector(plan.start.mean)}, Σ eigenvalues "
            f"{_vector(_eigenvalues(plan.start.cov))}"
            + "\ntarget " + f"mean {_vector(plan.target.mean)}, Σ eigenvalues "
            f"{_vector(_eigenvalues(plan.target.cov))}"
            + "\n\n--json prints every matrix; its field plan is a flow spec that "
              "`riccati-tf flow` replays.")


def steer_figure(plan: ControlPlan) -> Figure:
    """Mean components and Σ eigenvalues along the plan, the target's marked (×) at T."""
    from ..io.figures import new_figure
    from .plotting import spectrum

    tr = plan.integrate()
    fig, (ax_m, ax_s) = new_figure(1, 2, figsize=(10.0, 3.6))
    for i in range(plan.start.d):
        line, = ax_m.plot(tr.t, tr.mean[:, i], lw=1.5, label=f"m{i + 1}(t)")
        ax_m.plot([plan.t_final], [plan.target.mean[i]], "x", ms=10, mew=2, color=line.get_color())
    lam, r = spectrum(tr.cov)
    want = spectrum(plan.target.cov[None], r)[0][0]
    for i in range(r):
        line, = ax_s.semilogy(tr.t, lam[:, i], lw=1.5, label=f"λ{i + 1}(Σ(t))")
        ax_s.plot([plan.t_final], [want[i]], "x", ms=10, mew=2, color=line.get_color())
    for ax, what in ((ax_m, "mean components"), (ax_s, "eigenvalues of Σ(t)")):
        ax.plot([], [], "kx", ms=8, mew=2, label="target at T")
        for t in plan.breakpoints[1:-1]:
            ax.axvline(t, color="0.6", ls=":", lw=1)
        ax.set_xlabel("t (depth)")
        ax.set_ylabel(what)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"steer: controls {plan.controls}, route {plan.route}, residual "
                 f"{plan.residual:.2g}")
    fig.tight_layout()
    return fig


# --- subcommands: each takes (args, spec) and returns (result for --json, summary text,
# figure or None); the figure is drawn when args.plot is set and written by main after the
# result is printed ---------------------------------------------------------------------------

def cmd_flow(args: argparse.Namespace, spec: dict) -> Outcome:
    from ..flows import integrate as flows
    from .plotting import plot_covariance, plot_flow
    from .schedule import parse_schedule

    check_keys(spec, SCHEMAS["flow"].names)
    if "params" in spec and "schedule" in spec:
        raise SpecError("schedule: give either params (constant in depth) or schedule "
                        "(piecewise constant), not both")
    g0 = parse_gaussian(field(spec, "initial"), "initial")
    t_final = parse_number(spec, "t_final")
    kwargs = {k: parse_number(spec, k) for k in ("rtol", "atol") if k in spec}
    method = parse_choice(spec, "method", ("auto", "exact", "rk"), default="auto")
    t_eval = parse_times(spec, "t_eval", max_len=MAX_T_EVAL, limit="cli.MAX_T_EVAL")
    _output_size("t_eval", flows.DEFAULT_OUTPUTS if t_eval is None else len(t_eval), g0.d)
    if "schedule" in spec:
        schedule = parse_schedule(spec, "schedule", g0.d, t_final)
        tr = replay(schedule, g0, t_final, method=method, t_eval=t_eval, **kwargs)
        title = f"flow along a schedule of {len(schedule)} pieces"
        fig = plot_covariance(tr, title="flow (schedule)") if args.plot else None
        return tr, trajectory_text(tr, title), fig
    if "params" not in spec:
        raise SpecError("params: missing field (or give schedule: a list of pieces)")
    params = parse_params(spec["params"])
    tr = flows.flow(params, g0, t_final, method=method, t_eval=t_eval, **kwargs)
    return tr, trajectory_text(tr, f"flow on [0, {_g(t_final)}]"), (
        plot_flow(params, g0, t_final, method=method, t_eval=t_eval, title="flow", **kwargs)
        if args.plot else None)


def cmd_layers(args: argparse.Namespace, spec: dict) -> Outcome:
    from ..flows.integrate import layers
    from .plotting import plot_covariance

    check_keys(spec, SCHEMAS["layers"].names)
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
        params: Params | list[Params] = [parse_params(p, f"layers[{i}]")
                                         for i, p in enumerate(raw)]
    else:
        params = parse_params(field(spec, "params"))
    tr = layers(params, g0, n_layers, tau)
    text = trajectory_text(tr, f"{n_layers} discrete residual layers, τ = {_g(tau)}",
                           label="t = layer · τ")
    return tr, text, (plot_covariance(tr, title="layers") if args.plot else None)


def cmd_derive(args: argparse.Namespace, spec: dict) -> Outcome:
    """Derive the moment equations of a Transformer field with SymPy."""
    from ..symbolic import transformer_system
    from ..symbolic.latex import system_latex

    check_keys(spec, SCHEMAS["derive"].names)
    system = transformer_system(
        parse_number(spec, "d", kind=int, minimum=1, maximum=MAX_DIM, limit="spec.MAX_DIM"),
        heads=parse_number(spec, "heads", default=1, kind=int, minimum=1, maximum=MAX_HEADS,
                           limit="spec.MAX_HEADS"),
        kernel=parse_choice(spec, "kernel", ("dot", "l2"), default="dot"),
        ffn=parse_choice(spec, "ffn", ("affine", "relu"), default="affine"))
    latex = system_latex(system)
    options = ", ".join(f"{k} = {v}" for k, v in system.options.items())
    exact = ("exact: a Gaussian stays Gaussian" if system.exact else
             "not exact: a Gaussian moment closure (the field does not keep Gaussians Gaussian)")
    lines = latex.replace(" \\\\ ", " \\\\\n")  # one equation a line, still valid LaTeX
    text = f"moment equations, d = {system.d}, {options}\n{exact}\n\nLaTeX:\n{lines}"
    return {"d": system.d, "exact": system.exact, "options": system.options,
            "latex": latex}, text, None


def _repeated_eigenvalue(A: np.ndarray) -> complex | None:
    """An eigenvalue of A that repeats within √AXIS_RTOL·‖A‖_F (equilibrium's test), or None."""
    from ..stability.riccati import AXIS_RTOL

    eig = np.linalg.eigvals(A)
    gap = np.abs(eig[:, None] - eig[None, :]) + np.diag(np.full(eig.size, np.inf))
    if eig.size > 1 and gap.min() <= np.sqrt(AXIS_RTOL) * np.linalg.norm(A):
        return eig[np.unravel_index(np.argmin(gap), gap.shape)[0]]
    return None


def cmd_equilibria(args: argparse.Namespace, spec: dict) -> Outcome:
    from ..stability.equilibria import equilibria

    check_keys(spec, SCHEMAS["equilibria"].names)
    params = parse_params(field(spec, "params"))
    which = parse_choice(spec, "which", ("stable", "all"), default="stable")
    try:
        eqs = equilibria(params, which=which)
    except SolverError:
        lam = _repeated_eigenvalue(params.A) if which == "all" else None
        if lam is None:
            raise
        raise SpecError(f"which: all lists one equilibrium per invariant subspace of A, and A "
                        f"has the repeated eigenvalue {_g(lam.real)}"
                        f"{'' if lam.imag == 0 else f' ± {_g(abs(lam.imag))}i'}, whose "
                        f"invariant subspaces need not be finitely many (then neither are the "
                        f"equilibria), so they cannot be listed; use which: stable for the "
                        f"stable equilibrium, or certify for where a given Σ0 goes") from None
    return {"equilibria": list(eqs)}, equilibria_text(eqs), None


def cmd_certify(args: argparse.Namespace, spec: dict) -> Outcome:
    from ..stability.certificates import certify

    check_keys(spec, SCHEMAS["certify"].names)
    params = parse_params(field(spec, "params"))
    g0 = parse_gaussian(field(spec, "initial"), "initial")
    cert = certify(params, g0.cov, g0.mean)
    result = {k: getattr(cert, k) for k in ("regime", "exact", "theorem", "reason", "tolerance",
                                            "rate", "blowup_time", "blowup_direction",
                                            "bound",
                                            "threshold", "equilibrium", "lyapunov_min_eig",
                                            "rhs_min_eig", "kantorovich_radius")}
    result["global"] = cert.global_
    result["check"] = cert.check()

    # the window follows the dynamics (Certificate.plot): up to T*, or until Σ* is reached
    fig = cert.plot() if args.plot else None
    return result, certificate_text(cert, result["check"]), fig


def cmd_steer(args: argparse.Namespace, spec: dict) -> Outcome:
    from ..reachability.lie import CONFIGURATIONS
    from ..reachability.steering import steer

    check_keys(spec, SCHEMAS["steer"].names)
    start = parse_gaussian(field(spec, "start"), "start")
    target = parse_gaussian(field(spec, "target"), "target")
    if "t_final" in spec and "T" in spec:
        raise SpecError("T: give the horizon once, as t_final (T is its older name)")
    horizon = "T" if "T" in spec else "t_final"
    t_final = parse_number(spec, horizon)
    if not t_final > 0:
        raise SpecError(f"{horizon}: must be positive, got {t_final!r}")
    controls = parse_choice(spec, "controls", tuple(CONFIGURATIONS), default="affine")
    limit, name = ((STEER_MAX_DIM, "cli.STEER_MAX_DIM") if controls in STEER_CONSTRUCTIVE
                   else (STEER_SHOOTING_MAX_DIM, "cli.STEER_SHOOTING_MAX_DIM"))
    if start.d > limit:
        raise SpecError(f"start: steer with controls {controls!r} is limited to d ≤ {limit} "
                        f"({name}), got d = {start.d}")
    plan = steer(start, target, t_final, controls=controls)
    result = {k: getattr(plan, k) for k in ("controls", "route", "success", "residual",
                                            "tolerance", "message", "breakpoints")}
    result["target"] = {"mean": plan.target.mean, "cov": plan.target.cov}
    result["plan"] = plan_spec(plan)
    return result, steer_text(plan), (steer_figure(plan) if args.plot else None)


def _design_heads(spec: dict) -> tuple[int, Any, Any]:
    """(heads, v, B) of a design spec, the counts agreeing: heads given, or the number of v's or
    of B's given as lists, else 1."""
    v = spec.get("v", -1.0)
    check_numeric(v, "v", max_len=MAX_HEADS, max_depth=1, limit="spec.MAX_HEADS", finite=True)
    n_v = len(v) if isinstance(v, list) else None
    B, n_B = spec.get("B"), None
    if B is not None:
        check_numeric(B, "B", max_len=MAX_DIM, max_depth=3, finite=True)
        try:
            arr = np.asarray(B, dtype=float)
        except ValueError:  # ragged
            arr = np.empty(0)
        if arr.ndim not in (2, 3) or 0 in arr.shape:
            raise SpecError("B: must be a d×d matrix (one head) or a list of d×d matrices (one "
                            "per head)")
        n_B = arr.shape[0] if arr.ndim == 3 else None
    if "heads" in spec:
        heads = parse_number(spec, "heads", kind=int, minimum=1, maximum=MAX_HEADS,
                             limit="spec.MAX_HEADS")
    elif n_v is not None and n_B is not None and n_v != n_B:
        raise SpecError(f"heads: v lists {n_v} values and B {n_B} matrices; give one of each per "
                        f"head")
    else:
        heads = n_v or n_B or 1
    if n_v is not None and n_v != heads:
        raise SpecError(f"heads: {heads} head{'s' * (heads > 1)}, but v lists {n_v} values "
                        f"(give one number for all heads or one per head)")
    if B is not None and n_B is None and heads > 1:
        raise SpecError(f"heads: {heads} heads, but B is a single matrix (give one per head)")
    if n_B is not None and n_B != heads:
        raise SpecError(f"heads: {heads} head{'s' * (heads > 1)}, but B lists {n_B} matrices "
                        f"(one per head)")
    return heads, v, B


def design_options(spec: dict, target: Gaussian) -> dict[str, Any]:
    """The keyword arguments of `attracting_layer` from a design spec, every contradiction
    refused naming its field (criterion closest without A0, A0 with min_norm, gain or scale
    with B, heads against the v's and B's, rank above the target's numerical rank)."""
    from ..design.target import CRITERIA, GAINS

    heads, v, B = _design_heads(spec)
    criterion = parse_choice(spec, "criterion", CRITERIA, default="min_norm")
    if criterion == "closest" and "A0" not in spec:
        raise SpecError("A0: missing field (criterion closest needs the matrix A0 that A is to "
                        "be closest to)")
    if criterion != "closest" and "A0" in spec:
        raise SpecError(f"A0: used by criterion closest only, but criterion is {criterion} "
                        f"(remove A0 or set criterion: closest)")
    options: dict[str, Any] = {"v": v, "heads": heads, "criterion": criterion}
    if "A0" in spec:
        check_numeric(spec["A0"], "A0", max_len=MAX_DIM, max_depth=2, finite=True)
        options["A0"] = spec["A0"]
    if B is not None:
        for key in ("gain", "scale"):
            if key in spec:
                raise SpecError(f"{key}: sets G when B is not given, but B is given (remove "
                                f"{key} or B)")
        options["B"] = B
    else:
        options["gain"] = parse_choice(spec, "gain", GAINS, default="precision")
        options["scale"] = parse_number(spec, "scale", default=1.0)
        if not options["scale"] > 0:
            raise SpecError(f"scale: must be > 0, got {options['scale']!r}")
    if "rank" in spec:
        rank = parse_number(spec, "rank", kind=int, minimum=1, maximum=MAX_DIM,
                            limit="spec.MAX_DIM")
        top = _rank(target.cov)
        if rank > top:
            raise SpecError(f"rank: must be ≤ {top}, the numerical rank of target.cov, got "
                            f"{rank}")
        options["rank"] = rank
    return options


def design_layer(target: Gaussian, options: dict[str, Any]) -> Any:
    """`attracting_layer(target, **options)`, its InvalidInputError renamed onto the spec's
    fields (DESIGN_ARGUMENTS: "v must be < 0" → "v: must be < 0")."""
    from ..design.target import attracting_layer

    try:
        return attracting_layer(target, **options)
    except SpecError:
        raise
    except InvalidInputError as exc:
        text = str(exc)
        for argument, name in DESIGN_ARGUMENTS:
            if text.startswith(argument + " "):
                raise SpecError(f"{name} {text[len(argument) + 1:]}") from None
        raise SpecError(f"target: {text}") from None


def repair_options(spec: Any) -> tuple[Params, Gaussian, str] | None:
    """(layer, start, change) of a design spec's `repair` mapping, or None without one."""
    from ..design.repair import CHANGES

    if spec is None:
        return None
    check_mapping(spec, "repair", ("params", "initial", "change"), "with params and initial")
    params = parse_params(field(spec, "params", "repair."), "repair.params")
    start = parse_gaussian(field(spec, "initial", "repair."), "repair.initial")
    if start.d != params.d:
        raise SpecError(f"repair.initial: the start has d = {start.d}, the layer d = {params.d}")
    return params, start, parse_choice(spec, "change", CHANGES, "repair.", default="B")


def design_text(numbers: dict, files: dict[str, Path]) -> str:
    """The summary of `riccati-tf design`: the layer's rates and residuals, the certificate,
    the flows' final errors and the controllability verdict."""
    des, cert, flows = numbers["design"], numbers["certificate"], numbers["flows"]
    ctrl = numbers["controllability"]
    target = numbers["target"]
    d = len(target["mean"])
    rows = [["target", f"d = {d}, rank Σ* = {target['rank']}"],
            ["layer", f"{des['heads']} head{'s' * (des['heads'] > 1)}, v = {_vector(des['v'])}, "
                      f"criterion {des['criterion']}"],
            ["rate", f"{_g(des['rate'])} (covariance; bound {_g(des['rate_bound'])})"],
            ["mean rate", _g(des["mean_rate"])],
            ["residuals", f"Σ* {_g(des['residual_cov'])}; m* {_g(des['residual_mean'])}"],
            ["regime", f"{cert['regime']} (from start 1; {cert['theorem']}; check() "
                       f"{'passed' if cert['check'] else 'FAILED'})"],
            ["equilibrium", f"‖Σ_eq − Σ*‖/‖Σ*‖ = {_g(cert['equilibrium_cov_error'])}, "
                            f"‖m_eq − m*‖ = {_g(cert['equilibrium_mean_error'])}"],
            ["flows", f"{len(flows['starts'])} starts, exact, t ≤ {_g(flows['horizon'])}: "
                      f"largest final error {_g(flows['max_final_error'])}"]]
    if ctrl["decided"]:
        rows += [[f"controllable ({c['configuration']})",
                  f"{_g(c['full'])}: rank {c['rank']} of {c['expected']}"]
                 for c in ctrl["configurations"]]
    else:
        rows.append(["controllability", ctrl["reason"]])
    rep = numbers.get("repair")
    if rep is not None:
        verdict = ("certified" if rep["after"]["certified"] else
                   f"NOT certified: {rep['after']['regime']} is not an accepted regime"
                   if rep["after"]["check"] else "NOT certified")
        rows += [["repair", f"{rep['before']['regime']} → {rep['after']['regime']} ({verdict}; "
                            f"check() {'passed' if rep['after']['check'] else 'FAILED'}): change "
                            f"{rep['change']}, distance {_g(rep['distance'])}, route "
                            f"{rep['route']}"],
                 ["repaired controllable", "; ".join(
                     f"{c['configuration']} {_g(c['full'])}"
                     for c in rep["controllability"]["configurations"])
                  if rep["controllability"]["decided"] else rep["controllability"]["reason"]]]
    written = ", ".join(str(path) for path in files.values())
    return f"designed layer\n{table(rows)}\n\nwritten: {written} (--json prints every number)"


def simulate_with_progress(params: Params, x0: np.ndarray, t_final: float, *, n_steps: int,
                           method: str, work: int) -> ParticleRun:
    """`particles.simulate` with a progress bar: a run of more than PROGRESS_WORK pair
    interactions is cut into chunks of whole steps (each starting from the previous chunk's
    cloud; the parameters are constant in depth, so the steps are the same)."""
    from ..empirical.particles import MAX_KEPT, ParticleRun, simulate
    from .experiments import progress_bar

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
    from ..empirical.particles import empirical_moments
    from ..flows.integrate import flow
    from ..state.validation import MAX_SEED
    from .plotting import plot_particles

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
            + f"\nlargest relative error {_g(np.nanmax(rel))}; --json prints every step")


def cmd_design(args: argparse.Namespace, spec: dict) -> Outcome:
    """A layer attracting the spec's target (design.target.attracting_layer), its certificate,
    flows from random starts and controllability; design.html and design.json go to --out."""
    from ..io.files import OutputFolder
    from ..state.validation import MAX_SEED
    from ._design_report import DESIGN_JSON, DESIGN_PAGE, design_files, run_design, run_repair

    check_keys(spec, SCHEMAS["design"].names)
    target = parse_gaussian(field(spec, "target"), "target")
    options = design_options(spec, target)
    starts = parse_number(spec, "starts", default=DESIGN_STARTS, kind=int, minimum=1,
                          maximum=DESIGN_MAX_STARTS, limit="cli.DESIGN_MAX_STARTS")
    seed = parse_number(spec, "seed", default=0, kind=int, minimum=0, maximum=MAX_SEED,
                        limit="validation.MAX_SEED")
    horizon = parse_number(spec, "horizon", default=None, maximum=DESIGN_MAX_HORIZON,
                           limit="cli.DESIGN_MAX_HORIZON")
    if horizon is not None and not horizon > 0:
        raise SpecError(f"horizon: must be positive, got {horizon!r}")
    design = design_layer(target, options)
    if horizon is None:
        horizon = min(DESIGN_HORIZON_RATES / min(design.rate, design.mean_rate),
                      DESIGN_MAX_HORIZON)
    repair = repair_options(spec.get("repair"))
    folder = OutputFolder.open(args.out)
    folder.check((DESIGN_PAGE, DESIGN_JSON))
    numbers, figure = run_design(design, starts=starts, seed=seed, horizon=horizon)
    numbers["repair"] = None if repair is None else run_repair(*repair)
    numbers["files"] = {"html": str(folder.path / DESIGN_PAGE),
                        "json": str(folder.path / DESIGN_JSON)}
    files = folder.write(design_files(numbers, figure))
    return numbers, design_text(numbers, files), figure


def _add_input_arguments(p: argparse.ArgumentParser) -> None:
    """--text, --tokens, --hidden and --input of the model subcommands."""
    files = p.add_mutually_exclusive_group()
    files.add_argument("--text", metavar="FILE", default=None,
                       help="real input: passages one a line, tokenized with the tokenizer "
                            "saved in the model folder; each passage its own sequence")
    files.add_argument("--tokens", metavar="FILE", default=None,
                       help="real input: a .npy of token ids (one row a sequence) or a .npz of "
                            "sequences (ragged: one array and 'lengths'); never unpickled")
    files.add_argument("--hidden", metavar="FILE", default=None,
                       help="real input: a .npz of hidden states of the embedding output "
                            "(arrays (n, d) or (S, n, d), one sequence each)")
    p.add_argument("--input", choices=("data", "matched", "standard"), default=None,
                   help="data: the file's tokens (the default with a file); matched: Gaussian "
                        "tokens with the moments of the file, else of the embedding output "
                        "over the embedding tables (the default without a file); standard: "
                        "N(0, I)")


def _inputs(args: argparse.Namespace) -> dict[str, Any]:
    """The input keywords of model_inputs from --text/--tokens/--hidden/--input."""
    files = {k: getattr(args, k, None) for k in ("text", "tokens", "hidden")}
    choice = getattr(args, "input", None)
    if choice == "data" and not any(v is not None for v in files.values()):
        raise InvalidInputError("--input data needs a file: --text, --tokens or --hidden")
    return {**files, "gaussian": None if choice in (None, "data") else choice}


def _models_extra(exc: ImportError) -> InvalidInputError:
    return InvalidInputError(f"{exc}; install the extra: pip install 'riccati-tf[models]'")


def cmd_probe(args: argparse.Namespace, _spec: dict | None) -> Outcome:
    from .experiments import probe_table, run_probe

    try:
        numbers = run_probe(args.model, args.out, n_tokens=args.n_tokens, seed=args.seed,
                            n_null=args.n_null, progress=True, **_inputs(args))
    except ImportError as exc:
        raise _models_extra(exc) from None
    text = (probe_table(numbers) + f"\nfigure and numbers written to "
            f"{Path(args.out) / 'probe.png'}, probe.json")
    return numbers, text, None


def cmd_atlas(args: argparse.Namespace, _spec: dict | None) -> Outcome:
    """Per layer: the regime and T* of the multi-head, general-V attention flow up to the
    horizon (A = 0 and A = E[J_MLP], with who decided); per head: signed spectral masses, trace
    and growth rates, the scalar fit as an extra column (SPEC §5, encoders.atlas)."""
    from ..empirical.encoders import tty_progress
    from ..empirical.encoders.outputs import write_atlas

    try:
        result, numbers = write_atlas(args.model, args.out, position_free=args.position_free,
                                      horizon=args.horizon, progress=tty_progress("atlas"),
                                      **_inputs(args))
    except ImportError as exc:
        raise _models_extra(exc) from None
    text = (f"moments from: {numbers['input_tokens']['description']}\n" + result.summary()
            + f"\nfigure and numbers written to {numbers['figure']}, "
            f"{numbers['json']}; input moments to {numbers['inputs']}")
    return numbers, text, None


def cmd_compare(args: argparse.Namespace, _spec: dict | None) -> Outcome:
    """Predicted moments against a saved encoder's own hidden states, one layer at a time and
    chained, with the baselines no_change, no_attention and oracle and the validity map of the
    attention formula (encoders.compare)."""
    from ..empirical.encoders import compare, plot_comparison, tty_progress
    from ..empirical.encoders.extraction import check_model
    from ..empirical.encoders.inputfiles import check_input_files
    from ..empirical.encoders.loading import model_inputs
    from ..empirical.encoders.outputs import load
    from ..io.figures import figure_png
    from ..io.files import OutputFolder
    from ..state.validation import as_count

    folder = OutputFolder.open(args.out)
    folder.check(("comparison.png", "comparison.json"))
    as_count("--n-tokens", args.n_tokens, minimum=2)
    check_input_files(**_inputs(args))
    try:
        model = load(args.model)
        check_model(model)
        inputs = model_inputs(model, n_tokens=args.n_tokens, seed=args.seed, **_inputs(args))
        result = compare(model, n_tokens=args.n_tokens, seed=args.seed, inputs=inputs,
                         position_free=args.position_free, progress=tty_progress("compare"))
    except ImportError as exc:
        raise _models_extra(exc) from None
    numbers = {**result.to_json(), "inputs": inputs.to_json(), "model_path": args.model,
               "figure": str(folder.path / "comparison.png"),
               "json": str(folder.path / "comparison.json")}
    folder.write({"comparison.png": figure_png(plot_comparison(result)),
                  "comparison.json": json_document(numbers)})
    text = (f"inputs: {inputs.describe()}\n" + result.summary()
            + f"\nfigure and numbers written to {numbers['figure']}, {numbers['json']}")
    return numbers, text, None


def cmd_prescribed(args: argparse.Namespace, _spec: dict | None) -> Outcome:
    from .experiments import run_prescribed

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
    from .experiments import run_relu_drift

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


def cmd_report(args: argparse.Namespace, _spec: dict | None) -> Outcome:
    from .report import write_report

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
PLOTTING = ("flow", "layers", "certify", "steer", "design", "particles", "sweep")
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
    from ..reachability.lie import CONFIGURATIONS

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
    from ..empirical.defaults import DEFAULT_HORIZON, MAX_NULL
    from ..empirical.defaults import DEFAULT_TOKENS as PROBE_DEFAULT
    from ..empirical.defaults import EXPERIMENT_MAX_TOKENS as EXPERIMENT_TOKENS
    from ..empirical.defaults import MAX_TOKENS as PROBE_TOKENS

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
    comp = sub.choices["compare"]
    comp.add_argument("--n-tokens", type=_integer, default=2048, metavar="N",
                      help="Gaussian tokens fed to the encoder, cut into sequences of at most "
                           "the model's position limit (default %(default)s)")
    comp.add_argument("--seed", type=_integer, default=0,
                      help="random seed (default %(default)s)")
    comp.add_argument("--position-free", action="store_true",
                      help="predict the position-free part of rotary attention (ModernBERT)")
    comp.add_argument("--out", default="report", metavar="DIR",
                      help="output folder for comparison.png and comparison.json (default "
                           "%(default)s; created if missing)")
    for name in ("probe", "atlas", "compare"):
        sub.choices[name].add_argument(
            "--model", metavar="PATH", default=None,
            help="folder saved with save_pretrained (BERT, RoBERTa, ModernBERT, ViT, DeiT); "
                 "default: a randomly initialised encoder (nothing is downloaded)")
        _add_input_arguments(sub.choices[name])
    sub.choices["atlas"].add_argument("--out", default="report", metavar="DIR",
                                      help="output folder for atlas.png, atlas.json and "
                                           "atlas_inputs.npz (default %(default)s; created "
                                           "if missing)")
    for name in ("probe", "prescribed", "relu-drift"):
        sub.choices[name].add_argument("--seed", type=_integer, default=0,
                                       help="random seed (default %(default)s; 0 ≤ seed ≤ "
                                            "2⁶³ − 1)")
        sub.choices[name].add_argument("--out", default="report", metavar="DIR",
                                       help="output folder for the figure and the numbers "
                                            "(default %(default)s; created if missing)")
    for name, least in (("prescribed", 2), ("relu-drift", 4)):
        sub.choices[name].add_argument("--n-tokens", type=_integer, default=2000, metavar="N",
                                       help=f"tokens (default %(default)s; {least} to "
                                            f"experiments.MAX_TOKENS = {EXPERIMENT_TOKENS})")
    sub.choices["design"].add_argument("--out", default="report", metavar="DIR",
                                       help="output folder for design.html and design.json "
                                            "(default %(default)s; created if missing)")
    add_sweep_arguments(sub)
    rep = sub.choices["report"]
    rep.add_argument("--out", default="report", metavar="DIR",
                     help="output folder (default %(default)s)")
    rep.add_argument("--quick", action="store_true", help="smaller, faster run (≤ 1 minute)")
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


def generic_text(result: dict) -> str:
    """A result mapping as `key  value` lines, every value in full (JSON for lists)."""
    data = to_jsonable(result)
    return table([[key, value if isinstance(value, str) else
                   json.dumps(value, ensure_ascii=False)] for key, value in data.items()])


def _run(args: argparse.Namespace) -> int:
    _help, handler, needs_spec = COMMANDS[args.command]
    plot = getattr(args, "plot", None)
    try:
        if plot is not None:
            from ..io.figures import check_output_file

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
            from ..io.figures import save_figure

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


if __name__ == "__main__":
    entry()
