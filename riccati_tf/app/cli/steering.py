"""`riccati-tf steer`: controls taking one Gaussian to another (SPEC §4), the plan written as a
flow spec (`plan_spec`) that `riccati-tf flow` replays, its summary and figure.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

import numpy as np

from ...io.serialize import params_json
from ...io.spec import (
    SpecError,
    check_keys,
    field,
    parse_choice,
    parse_gaussian,
    parse_number,
)
from ..specs import SCHEMAS
from .common import Outcome, _eigenvalues, _g, _vector, _wrap, table

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ...reachability.steering import ControlPlan


__all__: list[str] = []


#: largest d for steer with controls that have a constructive route (affine, full, attention)
STEER_MAX_DIM = 8


#: largest d for steer with the other controls (multiple shooting after Lie-bracket rank tests,
#: whose cost grows steeply with d)
STEER_SHOOTING_MAX_DIM = 3


#: the controls of steer with a constructive route
STEER_CONSTRUCTIVE = ("affine", "full", "attention")


#: tolerances of the flow spec a steering plan is written as (tighter than flow's defaults, so
#: that the replay's integration error stays well below the plan's tolerance DEFAULT_TOL = 1e-8:
#: an open-loop tracking plan, B(t) = Σ(t)⁺R, amplifies integration errors)
REPLAY_RTOL, REPLAY_ATOL = 1e-12, 1e-14


def piece_json(piece: Any) -> dict:
    """One piece of a ControlPlan as an entry of a flow spec's schedule."""
    from ..schedule import TRACKING_FIELDS

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
    from ...io.figures import new_figure
    from ..plotting import spectrum

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


def cmd_steer(args: argparse.Namespace, spec: dict) -> Outcome:
    from ...reachability.lie import CONFIGURATIONS
    from ...reachability.steering import steer

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
