"""`riccati-tf design`: a layer attracted to a prescribed Gaussian N(m*, Σ*) (SPEC §5), its checks
(certificate, flows from random starts, controllability) and, with `repair`, the nearest stable
layer; design.html and design.json.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import InvalidInputError
from ...io.spec import (
    MAX_DIM,
    MAX_HEADS,
    SpecError,
    check_keys,
    check_mapping,
    check_numeric,
    field,
    parse_choice,
    parse_gaussian,
    parse_number,
    parse_params,
)
from ...state.params import Gaussian, Params
from ..specs import SCHEMAS
from .common import Outcome, _g, _rank, _vector, table

if TYPE_CHECKING:

    pass


__all__: list[str] = []


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
    from ...design.target import CRITERIA, GAINS

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
    from ...design.target import attracting_layer

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
    from ...design.repair import CHANGES

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


def cmd_design(args: argparse.Namespace, spec: dict) -> Outcome:
    """A layer attracting the spec's target (design.target.attracting_layer), its certificate,
    flows from random starts and controllability; design.html and design.json go to --out."""
    from ...io.files import OutputFolder
    from ...state.validation import MAX_SEED
    from .._design_report import DESIGN_JSON, DESIGN_PAGE, design_files, run_design, run_repair

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
