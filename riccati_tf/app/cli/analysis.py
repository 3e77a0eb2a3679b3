"""`riccati-tf flow`, `layers`, `derive`, `equilibria` and `certify`: the moment equations, their
flows (constant parameters or a piecewise schedule), equilibria and certificates (SPEC §2, §5–§6).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ...errors import SolverError
from ...io.spec import (
    MAX_DIM,
    MAX_HEADS,
    SpecError,
    check_keys,
    field,
    parse_choice,
    parse_gaussian,
    parse_number,
    parse_params,
    parse_times,
)
from ...state.params import Gaussian, Params
from ..specs import SCHEMAS
from .common import Outcome, _eigenvalues, _g, _output_size, _vector, _wrap, table, trajectory_text

if TYPE_CHECKING:

    from ...flows.integrate import Trajectory
    from ...stability.certificates import Certificate
    from ...stability.equilibria import Equilibrium


__all__: list[str] = []


#: most output times (t_eval) of a flow spec
MAX_T_EVAL = 10_000


#: most discrete layers (n_layers) of a layers spec
MAX_LAYERS = 100_000


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


def replay(schedule: list, g0: Gaussian, t_final: float, *, method: str,
           t_eval: npt.ArrayLike | None, **tolerances: Any) -> Trajectory:
    """`flows.flow` piece by piece along a schedule of `schedule.parse_schedule` (never stepping
    across a breakpoint); the state at each t_end starts the next piece. Output at t_eval
    (default DEFAULT_OUTPUTS equally spaced times); a blow-up ends the trajectory."""
    from ...flows import integrate as flows

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


def cmd_flow(args: argparse.Namespace, spec: dict) -> Outcome:
    from ...flows import integrate as flows
    from ..plotting import plot_covariance, plot_flow
    from ..schedule import parse_schedule

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
    from ...flows.integrate import layers
    from ..plotting import plot_covariance

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
    from ...symbolic import transformer_system
    from ...symbolic.latex import system_latex

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
    from ...stability.riccati import AXIS_RTOL

    eig = np.linalg.eigvals(A)
    gap = np.abs(eig[:, None] - eig[None, :]) + np.diag(np.full(eig.size, np.inf))
    if eig.size > 1 and gap.min() <= np.sqrt(AXIS_RTOL) * np.linalg.norm(A):
        return eig[np.unravel_index(np.argmin(gap), gap.shape)[0]]
    return None


def cmd_equilibria(args: argparse.Namespace, spec: dict) -> Outcome:
    from ...stability.equilibria import equilibria

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
    from ...stability.certificates import certify

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
    fig = None
    if args.plot:  # a figure built without pyplot (`cert.plot()` alone would use pyplot)
        from ...io.figures import new_figure

        fig, ax = new_figure()
        cert.plot(ax=ax)
    return result, certificate_text(cert, result["check"]), fig
