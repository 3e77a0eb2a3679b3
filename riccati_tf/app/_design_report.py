"""`riccati-tf design`: a layer with a prescribed attracting Gaussian, checked three ways.

The layer is `riccati_tf.design.target.attracting_layer` of the spec's target. `run_design`
certifies it from a full-rank start (`Design.certificate`), integrates the exact flow from
random admissible starts up to the horizon (the errors ‖Σ(t) − Σ*‖/‖Σ*‖ and ‖m(t) − m*‖ drawn
against depth) and asks whether the control system around it keeps the Lie-algebra rank at the
target (`riccati_tf.design.joint.joint_controllability`). With a layer to repair, `run_repair`
certifies it from its start, moves it to `riccati_tf.design.repair.nearest_stable` (the change,
its distance and route, the certificates after) and asks the same controllability question of the
repaired layer. `design_files` makes the report section of it: design.html (self-contained, as
`riccati_tf.app.report` writes its page: figure inline, equations as MathML) and design.json,
the numbers the page quotes and `--json` prints.
"""

from __future__ import annotations

import html
from typing import Any

import numpy as np

from ..design.joint import joint_controllability
from ..design.repair import nearest_stable
from ..design.target import Design
from ..flows.integrate import flow
from ..io.figures import Figure, figure_png
from ..io.htmlmath import latex_to_mathml, text_with_math
from ..io.serialize import json_document, params_json
from ..stability.certificates.entry import certify
from ..state.params import Gaussian, Params
from .plotting import plot_convergence
from .report import Section, _page, significant

__all__: list[str] = []

#: the files `riccati-tf design` writes into its --out folder
DESIGN_PAGE, DESIGN_JSON = "design.html", "design.json"
#: output times of each flow (equally spaced on [0, horizon])
OUTPUTS = 201
#: the random starts: Σ0 = ℓ (LLᵀ/d + FLOOR · I) with ℓ = tr Σ*/d and L standard normal d×d,
#: m0 = m* + SPREAD √ℓ z with z standard normal
FLOOR, SPREAD = 0.1, 2.0
#: the figure's name inside the page
FIGURE = "design_flows.png"


def random_starts(design: Design, n: int, seed: int) -> list[Gaussian]:
    """n random full-rank starts N(m0, Σ0) around the target's scale (see FLOOR, SPREAD);
    every one is admissible (`Design.admits`: Σ0 ≻ 0)."""
    rng = np.random.default_rng(seed)
    target = design.target
    d = target.d
    level = float(np.trace(target.cov)) / d
    starts = []
    for _ in range(n):
        L = rng.standard_normal((d, d))
        cov = L @ L.T / d + FLOOR * np.eye(d)
        starts.append(Gaussian(target.mean + SPREAD * np.sqrt(level) * rng.standard_normal(d),
                               level * 0.5 * (cov + cov.T)))
    return starts


def _scaled(x: np.ndarray, ref: np.ndarray, axes: tuple[int, ...]
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(‖x − ref‖/c, ‖ref‖/c, c) over `axes` (Frobenius / Euclidean), c = max(|x|, |ref|) per
    state (1 where both are 0): no square, difference or norm leaves the float range, whatever
    the scale of the states (1e±300)."""
    ref = np.broadcast_to(ref, x.shape)
    c = np.maximum(np.max(np.abs(x), axis=axes), np.max(np.abs(ref), axis=axes))
    c = np.where(c > 0, c, 1.0)
    cb = np.expand_dims(c, axes)
    return (np.linalg.norm(x / cb - ref / cb, axis=axes), np.linalg.norm(ref / cb, axis=axes), c)


def relative_error(x: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """‖x − ref‖_F/‖ref‖_F over the last two axes, without overflow or underflow (`_scaled`);
    NaN (undefined) where ref = 0 and x ≠ 0, 0 where both are."""
    num, den, _ = _scaled(x, ref, (-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(num == 0, 0.0, np.where(den > 0, num / den, np.nan))


def distance(x: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """‖x − ref‖ over the last axis, without overflow in the squares (`_scaled`; Inf only when
    the distance itself exceeds the float range)."""
    num, _, c = _scaled(x, ref, (-1,))
    with np.errstate(over="ignore"):
        return num * c


def _errors(design: Design, cov: np.ndarray, mean: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(‖Σ − Σ*‖_F/‖Σ*‖_F, ‖m − m*‖) of states (k, d, d), (k, d)."""
    target = design.target
    return relative_error(cov, target.cov), distance(mean, target.mean)


def run_design(design: Design, *, starts: int, seed: int, horizon: float) -> tuple[dict, Figure]:
    """The numbers of the design report and its figure.

    The certificate is taken from the first random start; the flows are the exact closed form
    (`flow(..., method="exact")`) at OUTPUTS equally spaced times on [0, horizon]; the
    controllability is `joint_controllability(design.params, design.target)`."""
    gaussians = random_starts(design, starts, seed)
    cert = design.certificate(gaussians[0])
    checked = cert.check()
    eq = cert.equilibrium
    eq_cov: float | None = None
    eq_mean: float | None = None
    if eq is not None:
        eq_cov = float(relative_error(eq.cov, design.target.cov))
        if eq.mean is not None:
            eq_mean = float(distance(eq.mean, design.target.mean))
    certificate = {
        "start": {"mean": gaussians[0].mean, "cov": gaussians[0].cov},
        "regime": cert.regime, "exact": cert.exact, "global": cert.global_,
        "theorem": cert.theorem, "reason": cert.reason, "rate": cert.rate,
        "check": checked, "equilibrium": eq,
        "equilibrium_cov_error": eq_cov, "equilibrium_mean_error": eq_mean,
        "equilibrium_error": None if eq_cov is None or eq_mean is None else max(eq_cov, eq_mean)}
    grid = np.linspace(0.0, horizon, OUTPUTS)
    runs: list[dict[str, Any]] = []
    cov_err, mean_err, finals = [], [], []
    for g0 in gaussians:
        tr = flow(design.params, g0, horizon, method="exact", t_eval=grid)
        rel, dm = _errors(design, tr.cov, tr.mean)
        cov_err.append(np.pad(rel, (0, OUTPUTS - rel.size), constant_values=np.nan))
        mean_err.append(np.pad(dm, (0, OUTPUTS - dm.size), constant_values=np.nan))
        runs.append({"mean": g0.mean, "cov": g0.cov, "admissible": design.admits(g0.cov),
                     "status": tr.status, "cov_error": rel, "mean_error": dm,
                     "final_cov_error": float(rel[-1]), "final_mean_error": float(dm[-1]),
                     "final_error": float(max(rel[-1], dm[-1]))})
        finals.append(float(max(rel[-1], dm[-1])))
    controllability = _controllability(design.params, design.target)
    p = design.params
    numbers = {
        "target": {"mean": design.target.mean, "cov": design.target.cov, "rank": design.rank},
        "layer": params_json(p),
        "design": {"criterion": design.criterion, "heads": len(p.heads),
                   "v": list(p.value_scalars or ()), "G": design.G, "K": design.K,
                   "basis": design.basis, "rate": design.rate, "rate_bound": design.rate_bound,
                   "mean_rate": design.mean_rate, "residual_cov": design.residual_cov,
                   "residual_mean": design.residual_mean},
        "certificate": certificate,
        "flows": {"horizon": horizon, "method": "exact", "seed": seed, "t": grid,
                  "starts": runs,
                  "max_final_error": max(finals)},
        "controllability": controllability}
    figure = plot_convergence(grid, cov_err, mean_err, title=(
        f"design: {starts} start{'s' * (starts > 1)} landing on the target N(m*, Σ*)"))
    return numbers, figure


def _controllability(params: Params, at: Gaussian) -> dict:
    """`joint_controllability(params, at)` as the report's numbers."""
    jc = joint_controllability(params, at)
    return {"decided": jc.decided, "reason": jc.reason, "full": list(jc.full),
            "configurations": [
                {"configuration": name, "rank": None if r is None else r.rank,
                 "expected": None if r is None else r.expected,
                 "full": None if r is None else bool(r.full)}
                for name, r in zip(jc.configurations, jc.results, strict=True)]}


def run_repair(params: Params, start: Gaussian, change: str) -> dict:
    """The numbers of the repair part: `certify(params, Σ0)` before, `nearest_stable(params, Σ0,
    change=change)` (route, distance, per-head distances, the changed matrices before and after,
    a certificate after with its check()), and the controllability of the repaired layer at its
    certified equilibrium, or at the start when it has none."""
    before = certify(params, start.cov, start.mean)
    rep = nearest_stable(params, start, change=change)
    after = rep.certificates[0]
    eq = after.equilibrium
    at = start if eq is None else Gaussian(start.mean if eq.mean is None else eq.mean, eq.cov)
    return {
        "start": {"mean": start.mean, "cov": start.cov},
        "before": {"regime": before.regime, "blowup_time": before.blowup_time,
                   "theorem": before.theorem, "check": before.check()},
        "change": rep.change, "norm": rep.norm, "route": rep.route, "margin": rep.margin,
        "distance": rep.distance, "per_head": rep.per_head,
        "original": params_json(params), "repaired": params_json(rep.params),
        "after": {"regime": after.regime, "theorem": after.theorem, "reason": after.reason,
                  "check": after.check(), "certified": rep.all_certified},
        "controllability": _controllability(rep.params, at)}


def _controllability_html(ctrl: dict) -> str:
    if not ctrl["decided"]:
        return f"<p>{html.escape(ctrl['reason'])}</p>"
    return ("<table><tr><th>configuration</th><th>rank</th><th>expected</th><th>full</th></tr>"
            + "".join(f"<tr><td>{html.escape(c['configuration'])}</td><td>{c['rank']}</td>"
                      f"<td>{c['expected']}</td><td>{'yes' if c['full'] else 'no'}</td></tr>"
                      for c in ctrl["configurations"])
            + f"</table><p>{html.escape(ctrl['reason'])}</p>")


def _layer_rows(layer: dict, keys: tuple[str, ...] = ("A", "b", "V", "B")) -> list[tuple[str, str]]:
    """Rows A, b and per head V_h, B_h of a `params_json` layer, those named in keys."""
    heads = ([(layer["V"], layer["B"])] if "V" in layer else
             [(h["V"], h["B"]) for h in layer["heads"]])
    rows: list[tuple[str, str]] = [(k, _cells(layer[k])) for k in ("A", "b") if k in keys]
    for h, (V, B) in enumerate(heads, 1):
        rows += [(f"{k}_{h}", _cells(M)) for k, M in (("V", V), ("B", B)) if k in keys]
    return rows


def _repair_html(rep: dict) -> str:
    """The repair part of the section."""
    before, after = rep["before"], rep["after"]
    t_star = ("" if before["blowup_time"] is None
              else f", T* = {_number(before['blowup_time'])}")
    rows = [("before", f"<b>{html.escape(before['regime'])}</b>{t_star} (check() "
                       f"{'passed' if before['check'] else 'FAILED'})"),
            ("change", f"{html.escape(rep['change'])} ({html.escape(rep['norm'])} norm), route "
                       f"{html.escape(rep['route'])}"),
            ("distance", _number(rep["distance"])),
            ("per head", _cells(rep["per_head"])),
            ("after", f"<b>{html.escape(after['regime'])}</b> ({html.escape(after['theorem'])};"
                      f" check() {'passed' if after['check'] else 'FAILED'})"),
            ("certified", "yes" if after["certified"] else
             "<b>no</b>: the regime is not one of converges, collapses, bounded, or check() "
             "failed"),
            ("reason", text_with_math(after["reason"]))]
    changed = (rep["change"],)
    return ("<h3>The nearest stable layer</h3><p>The given layer, from its start, moved by the "
            "least change of its " + html.escape(rep["change"])
            + " matrices into a certified regime (riccati_tf.design.repair.nearest_stable).</p>"
            + _rows(rows) + "<h4>What changed: before</h4>"
            + _rows(_layer_rows(rep["original"], changed)) + "<h4>after</h4>"
            + _rows(_layer_rows(rep["repaired"], changed))
            + "<h4>Controllability of the repaired layer</h4>"
            + _controllability_html(rep["controllability"]))


def _cells(values: Any, scale: float | None = None) -> str:
    """A vector or matrix as HTML: rows of `significant` numbers in brackets; a nonzero entry
    within the rounding of the computation, |x| ≤ n·u·scale (u the unit roundoff, n the entries
    of a row, scale the largest |entry| unless given), is written ≈ 0."""
    arr = np.atleast_2d(np.asarray(values, dtype=float))
    top = _largest(arr) if scale is None else scale
    noise = (arr != 0) & (np.abs(arr) <= arr.shape[-1] * np.finfo(float).eps * top)
    rows = []
    for row, mask in zip(arr, noise, strict=True):
        cells = significant(np.where(mask, 0.0, row).tolist())
        rows.append("[" + ", ".join("≈ 0" if rounding else cell
                                    for rounding, cell in zip(mask, cells, strict=True)) + "]")
    return "<br>".join(rows)


def _largest(*arrays: Any) -> float:
    """max |entry| over the arrays (0 for empty ones)."""
    return max(float(np.max(np.abs(np.asarray(a, dtype=float)), initial=0.0)) for a in arrays)


def _number(x: float | None) -> str:
    return "—" if x is None else significant([float(x)])[0]


def _rows(rows: list[tuple[str, str]]) -> str:
    return "<table>" + "".join(f"<tr><th>{html.escape(k)}</th><td>{v}</td></tr>"
                               for k, v in rows) + "</table>"


def design_section(numbers: dict, png: bytes) -> Section:
    """The report section of `run_design`'s numbers and figure (PNG bytes)."""
    layer, des, cert = numbers["layer"], numbers["design"], numbers["certificate"]
    flows, ctrl = numbers["flows"], numbers["controllability"]
    layer_rows = _layer_rows(layer)
    design_rows = [("criterion", html.escape(des["criterion"])), ("G", _cells(des["G"])),
                   ("K", _cells(des["K"], scale=_largest(des["G"], des["K"]))),
                   ("rate", f"{_number(des['rate'])} (bound {_number(des['rate_bound'])})"),
                   ("mean rate", _number(des["mean_rate"])),
                   ("residual (Σ*)", _number(des["residual_cov"])),
                   ("residual (m*)", _number(des["residual_mean"]))]
    cert_rows = [("regime", f"<b>{html.escape(cert['regime'])}</b>"),
                 ("theorem", html.escape(cert["theorem"])),
                 ("exact", "yes" if cert["exact"] else "no"),
                 ("check()", "passed" if cert["check"] else "FAILED"),
                 ("‖Σ_eq − Σ*‖/‖Σ*‖", _number(cert["equilibrium_cov_error"])),
                 ("‖m_eq − m*‖", _number(cert["equilibrium_mean_error"])),
                 ("reason", text_with_math(cert["reason"]))]
    start_rows = "".join(
        f"<tr><td>{i}</td><td>{'yes' if r['admissible'] else 'no'}</td><td>{r['status']}</td>"
        f"<td>{_number(r['final_cov_error'])}</td><td>{_number(r['final_mean_error'])}</td></tr>"
        for i, r in enumerate(flows["starts"], 1))
    target = numbers["target"]
    body = (
        "<p>With value matrices V_h = v_h I, v_h &lt; 0, and G = −Σ_h v_h (B_h + B_hᵀ) ≻ 0, the "
        "layer</p>"
        + latex_to_mathml(r"A = \tfrac12 \Sigma^* G \Pi + K \Sigma^{*+} - \tfrac{\kappa}{2}"
                          r"(I - \Pi), \qquad b = -K^* m^*, \qquad K = -K^{\top}")
        + f"<p>makes N(m*, Σ*) attract every admissible start (target mean {_cells(target['mean'])}"
        f", covariance of rank {target['rank']}: {_cells(target['cov'])}).</p>"
        "<h3>The layer</h3>" + _rows(layer_rows)
        + "<h3>Parametrisation, rates and residuals</h3>" + _rows(design_rows)
        + "<h3>Certificate from a full-rank start (start 1)</h3>" + _rows(cert_rows)
        + f"<h3>Flows from {len(flows['starts'])} random starts (exact, up to t = "
        f"{_number(flows['horizon'])})</h3><table><tr><th>start</th><th>admissible</th>"
        "<th>status</th><th>final ‖Σ − Σ*‖/‖Σ*‖</th><th>final ‖m − m*‖</th></tr>"
        + start_rows + "</table><h3>Controllability at the target</h3>"
        + _controllability_html(ctrl)
        + ("" if numbers.get("repair") is None else _repair_html(numbers["repair"])))
    caption = (f"Flows of the designed layer from {len(flows['starts'])} random full-rank starts: "
               "the relative covariance error ‖Σ(t) − Σ*‖/‖Σ*‖ (left) and the mean error "
               "‖m(t) − m*‖ (right) against depth t, on log scales, one line per start.")
    return Section("design", "A layer with a prescribed attracting Gaussian (SPEC §5)", body,
                   {FIGURE: png}, numbers, captions={FIGURE: caption})


def design_files(numbers: dict, figure: Figure) -> dict[str, bytes]:
    """{DESIGN_PAGE: the HTML page, DESIGN_JSON: the numbers} of a design run."""
    page = _page([design_section(numbers, figure_png(figure))],
                 title="riccati_tf design: a layer with a prescribed attracting Gaussian")
    return {DESIGN_PAGE: page.encode("utf-8"), DESIGN_JSON: json_document(numbers)}
