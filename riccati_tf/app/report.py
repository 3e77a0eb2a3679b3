"""The main job: `riccati-tf report` writes DIR/index.html (self-contained) and DIR/summary.json.

The report is a list of sections; each builder returns its HTML, its figures and every number it
quotes, so the page and summary.json always say the same thing.

The report never overwrites a file it did not write (`riccati_tf.io.files`: the folder's marker
lists what riccati-tf wrote there with SHA-256 checksums): a file of the same name as one the
report writes that is not listed, or was changed since, is refused (InvalidInputError naming
it) before the sections run. Rerunning into the report's own folder replaces its own files.
"""

from __future__ import annotations

import base64
import html
import json
import math
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt
import tqdm

from ..flows.integrate import flow
from ..io.figures import figure_png, min_text_px, new_figure
from ..io.files import OutputFolder
from ..io.htmlmath import latex_to_mathml, text_with_math
from ..io.plots import plot_ellipses
from ..io.serialize import to_jsonable
from ..reachability.steering import steer
from ..stability.certificates import certify
from ..state.params import Gaussian
from ..state.validation import psd_rank
from .examples import regime_examples
from .plotting import plot_covariance

__all__ = ["PAGE", "SUMMARY", "write_report"]

#: significant digits of the numbers in the report's tables
DIGITS = 4
#: magnitudes written in fixed notation; a cell with a nonzero value outside [low, high) is
#: written in scientific notation throughout, so that one cell never mixes the two
FIXED_RANGE = (1e-3, 1e4)


@dataclass(frozen=True)
class Options:
    """What a section builder may use: the output folder, the quick flag, an optional model."""

    out: Path
    quick: bool = False
    model: str | None = None


@dataclass(frozen=True)
class Section:
    """One part of the report: a title, an HTML body, PNG figures and the numbers it quotes;
    files: other files it adds to the folder {name: bytes}; captions: {figure name: what the
    figure shows} (caption and alt text; a figure without one is described by the section);
    skipped: why the section was left out (an optional part missing), None when it ran;
    summary: its finding in one sentence of plain text (the page's summary table)."""

    key: str
    title: str
    body: str
    figures: dict[str, bytes] = field(default_factory=dict)
    numbers: dict = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)
    captions: dict[str, str] = field(default_factory=dict)
    skipped: str | None = None
    summary: str = ""

    def caption(self, name: str) -> str:
        """The caption of figure `name` (its description, never its file name)."""
        return self.captions.get(name, f"Figure of the section “{self.title}”.")


def regimes_section(opts: Options) -> Section:
    """The three scalar-V regimes of SPEC §5 by the exact closed form, cross-checked by rk."""
    figures, captions, numbers, rows = {}, {}, {}, []
    n_out = 101 if opts.quick else 401
    for name, (params, g0, horizon) in regime_examples().items():
        t_eval = np.linspace(0.0, horizon, n_out)
        ex = flow(params, g0, horizon, method="exact", t_eval=t_eval)
        if ex.blowup_time is not None:  # resolve the approach to T*
            t_eval = ex.blowup_time * (1 - np.geomspace(1, 1e-4, n_out))
            ex = flow(params, g0, horizon, method="exact", t_eval=np.append(0.0, t_eval[1:]))
            t_eval = ex.t
        rk = flow(params, g0, horizon, method="rk", t_eval=t_eval)
        k = min(len(ex), len(rk))
        agree = float(np.max(np.abs(ex.cov[:k] - rk.cov[:k])) / np.max(np.abs(ex.cov[:k])))
        final = np.linalg.eigvalsh(ex.cov[-1])
        rank = psd_rank(g0.cov)  # rank invariance (SPEC §3): Σ(t) keeps the rank of Σ0
        numbers[name] = {
            "status": ex.status, "blowup_time": ex.blowup_time,
            "blowup_time_rk": rk.blowup_time, "final_t": float(ex.t[-1]),
            "final_cov_eigenvalues": final.tolist(), "exact_vs_rk_rel_diff": agree,
            "G_eigenvalues": np.linalg.eigvalsh(params.G).tolist(),
            "A_eigenvalues_real": np.sort(np.linalg.eigvals(params.A).real).tolist(),
        }
        cert = certify(params, g0.cov, g0.mean)
        numbers[name]["certificate"] = {
            "regime": cert.regime, "exact": cert.exact, "global": cert.global_,
            "theorem": cert.theorem, "check": cert.check(), "rate": cert.rate,
            "blowup_time": cert.blowup_time, "reason": cert.reason}
        figures[f"regime_{name}.png"] = figure_png(plot_covariance(
            ex, title=name, rank=rank, equilibrium=cert.equilibrium))
        captions[f"regime_{name}.png"] = _regime_caption(name, ex.blowup_time, cert.equilibrium)
        t_star = "—" if ex.blowup_time is None else f"{ex.blowup_time:.12g}"
        rows.append(f"<tr><td>{name}</td><td>{ex.status}</td><td>{t_star}</td>"
                    f"<td>{eigenvalue_cell(final, rank)}</td><td>{agree:.1e}</td>"
                    f"<td><b>{cert.regime}</b> ({'exact' if cert.exact else 'numerical'}, "
                    f"check() = {cert.check()})<br><small>{text_with_math(cert.reason)}</small>"
                    "</td></tr>")
    body = (
        "<p>Scalar value matrices V = vI, G = −v(B + Bᵀ), turn the covariance equation into a "
        "Riccati equation with the exact solution</p>"
        + latex_to_mathml(r"\dot{\Sigma} = A\Sigma + \Sigma A^{\top} - \Sigma G \Sigma, \qquad "
                          r"\Sigma(t) = e^{At}\Sigma_0\left(I + W(t)\Sigma_0\right)^{-1}"
                          r"e^{A^{\top}t}, \qquad W(t) = \int_0^t e^{A^{\top}s} G e^{As}\,ds")
        + "<p>Each curve is the closed form; the last column is its maximum relative "
        "difference to an independent Runge–Kutta integration (rtol 1e-10).</p>"
        "<table><tr><th>regime</th><th>status</th><th>T*</th><th>final λ(Σ)</th>"
        "<th>exact vs rk</th><th>certificate</th></tr>" + "".join(rows) + "</table>")
    found = "; ".join(
        f"{name}: {n['certificate']['regime']}"
        + (f" at T* = {n['blowup_time']:.6g}" if n["blowup_time"] is not None else "")
        + f" (check() {n['certificate']['check']})" for name, n in numbers.items())
    return Section("regimes", "Regimes of the covariance flow and their certificates (SPEC §5–§6)",
                   body, figures, numbers, captions=captions,
                   summary=f"Three scalar-V layers certified from the closed form: {found}.")


def _regime_caption(name: str, blowup_time: float | None, equilibrium: Any) -> str:
    """What the regime figure draws: the eigenvalues of Σ(t), T*, the marked λ(Σ*)."""
    cov = None if equilibrium is None else getattr(equilibrium, "cov", equilibrium)
    marked = cov is not None and psd_rank(np.asarray(cov)) > 0
    return (f"Regime “{name}”: the eigenvalues of the covariance Σ(t) of the closed-form flow "
            "against depth t, on a log scale"
            + ("" if blowup_time is None else
               f", growing without bound as t approaches the blow-up time T* = "
               f"{blowup_time:.4g} (dashed)")
            + (", with the eigenvalues of the limit Σ* dotted" if marked else
               ", all tending to 0 (the limit Σ* = 0)" if cov is not None else "") + ".")


def significant(values: list[float]) -> list[str]:
    """HTML of numbers to DIGITS significant digits, all in one notation: fixed when every
    nonzero finite |value| lies in FIXED_RANGE (0.6668, 1.480), else scientific
    (6.668 × 10⁻¹, 1.480 × 10⁴); an exact zero is written 0, ±Inf ∞ and −∞, NaN "undefined"
    (a value no number stands for, such as an error relative to zero)."""
    nonzero = [abs(v) for v in values if v != 0 and math.isfinite(v)]
    fixed = all(FIXED_RANGE[0] <= v < FIXED_RANGE[1] for v in nonzero)
    return [_special(v) if not math.isfinite(v) else "0" if v == 0 else
            _fixed(v) if fixed else _scientific(v) for v in values]


def _special(value: float) -> str:
    """NaN and ±Inf as the report writes them."""
    return "undefined" if math.isnan(value) else "∞" if value > 0 else "−∞"


def _fixed(value: float) -> str:
    """value to DIGITS significant digits in fixed notation, trailing zeros kept (1.480)."""
    return f"{value:#.{DIGITS}g}".rstrip(".").replace("-", "−")


def _scientific(value: float) -> str:
    """value as m × 10<sup>k</sup>, m to DIGITS significant digits."""
    mantissa, exponent = f"{value:.{DIGITS - 1}e}".split("e")
    return f"{mantissa.replace('-', '−')} × 10<sup>{int(exponent):d}</sup>".replace("<sup>-",
                                                                                     "<sup>−")


def eigenvalue_cell(eigenvalues: npt.ArrayLike, rank: int) -> str:
    """HTML of the eigenvalues of a PSD matrix of known rank r, largest first (as the command
    line lists them): the r largest by `significant`, then the d − r smallest, exactly 0 (their
    computed values are rounding noise), written 0; "(rank r)" follows when r < d."""
    lam = np.sort(np.asarray(eigenvalues, dtype=float))[::-1]
    d = lam.size
    shown = np.concatenate([lam[:rank], np.zeros(d - rank)])
    return ", ".join(significant(shown.tolist())) + (f" (rank {rank})" if rank < d else "")


def proofs_section(opts: Options) -> Section:
    """Every derivation in proofs/ re-proved: symbolic simplification or exact rational points."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "proofs" / "_verify.py").exists():
        why = "proofs/ is not next to this installation (installed without the source tree)"
        return Section("proofs", "Proofs (SPEC §2–§5)", f"<p>{why}; skipped.</p>", skipped=why)
    sys.path.insert(0, str(root))
    try:
        import importlib
        import pkgutil

        import proofs
        from proofs import _verify

        names = sorted(m.name for m in pkgutil.iter_modules(proofs.__path__)
                       if not m.name.startswith("_"))
        results = {n: _verify.evaluate(importlib.import_module(f"proofs.{n}").CLAIMS)
                   for n in names}
    finally:
        sys.path.remove(str(root))
    rows, numbers = [], {}
    for name, verdicts in results.items():
        ok = sum(v.passed for v in verdicts)
        methods = sorted({v.method.split(",")[0] for v in verdicts})
        numbers[name] = [{"claim": v.claim, "method": v.method, "passed": v.passed,
                          "seconds": v.seconds} for v in verdicts]
        rows.append(f"<tr><td>proofs.{name}</td><td>{ok} / {len(verdicts)}</td>"
                    f"<td>{html.escape('; '.join(methods))}</td></tr>")
    total = sum(len(v) for v in results.values())
    passed = sum(v.passed for vs in results.values() for v in vs)
    body = (f"<p>{passed} of {total} claims proved, each by symbolic simplification to zero "
            "(fixed d or dimension-free matrix form) or by exact evaluation at random rational "
            "points; rerun one with <code>python -m proofs.&lt;name&gt;</code>.</p>"
            "<table><tr><th>module</th><th>claims proved</th><th>methods</th></tr>"
            + "".join(rows) + "</table>")
    return Section("proofs", "Proofs (SPEC §2–§5)", body, {}, numbers,
                   summary=f"{passed} of {total} claims of {len(results)} proof modules proved "
                           "symbolically or at exact rational points.")


def steering_section(opts: Options) -> Section:
    """Exact steering between Gaussians of equal rank, full and rank-deficient (SPEC §3–§4)."""
    rng = np.random.default_rng(7)
    X, Y = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    u, w = rng.standard_normal((3, 1)), rng.standard_normal((3, 1))
    cases = {
        "full rank, affine": (Gaussian(rng.standard_normal(3), X @ X.T / 3),
                              Gaussian(rng.standard_normal(3), Y @ Y.T / 3), "affine"),
        "full rank, attention": (Gaussian(rng.standard_normal(3), X @ X.T / 3),
                                 Gaussian(rng.standard_normal(3), Y @ Y.T / 3), "attention"),
        "rank 1, affine": (Gaussian(np.zeros(3), u @ u.T), Gaussian(np.ones(3), w @ w.T),
                           "affine"),
    }
    rows, figures, captions = [], {}, {}
    numbers: dict[str, dict[str, Any]] = {}
    for i, (name, (start, target, controls)) in enumerate(cases.items()):
        plan = steer(start, target, 1.0, controls=controls)
        error = plan.verify()
        numbers[name] = {"route": plan.route, "pieces": len(plan.pieces), "verify": error,
                         "success": plan.success, "rank": start.rank()}
        rows.append(f"<tr><td>{name}</td><td>{plan.route}</td><td>{len(plan.pieces)}</td>"
                    f"<td>{error:.2e}</td></tr>")
        path = plan.integrate()
        fig, (left, right) = new_figure(1, 2, figsize=(10.0, 4.0))
        plot_ellipses(path.t, path.mean, path.cov, ax=right, title="start → target")
        plot_covariance(path, title="eigenvalues of Σ(t)", ax=left, target=target.cov)
        fig.suptitle(name)
        figures[f"steer_{i}.png"] = figure_png(fig)
        captions[f"steer_{i}.png"] = (
            f"Steering, {name} ({plan.route} route): left, the eigenvalues of the covariance "
            "Σ(t) (log scale) along the integrated plan, from those of Σ0 at t = 0 to those of "
            "the target Σ1 (crosses) at t = 1; right, the one-standard-deviation ellipses of "
            "N(m(t), Σ(t)) on the plane of the two leading eigenvectors of Σ0 + Σ1: start "
            "(solid), end of the plan (dashed), and the states between (grey).")
    body = ("<p>Controls on [0, 1] steering N(m0, Σ0) to N(m1, Σ1) with rank Σ0 = rank Σ1 (the "
            "rank is invariant, SPEC §3): piecewise-constant affine layers A = log P/τ1, "
            "A = log Q/τ2 (polar route) or attention with B(t) = Σ(t)⁺. The terminal error is "
            "measured by integrating the plan.</p><table><tr><th>case</th><th>route</th>"
            "<th>pieces</th><th>terminal relative error</th></tr>" + "".join(rows) + "</table>")
    worst = max(n["verify"] for n in numbers.values())
    return Section("steering", "Steering one Gaussian to another (SPEC §4)", body, figures,
                   numbers, captions=captions,
                   summary=f"{sum(n['success'] for n in numbers.values())} of {len(numbers)} "
                           f"plans reach their target; largest terminal relative error "
                           f"{worst:.1e} (measured by integrating each plan).")


def validation_section(opts: Options) -> Section:
    """Particles, ReLU drift and a Transformer encoder against the Gaussian theory (SPEC §7).

    Particles with true softmax attention against the Gaussian flow; Gaussianity of a ReLU
    network and of a Transformer encoder, layer by layer."""
    from ..empirical.probe import DEFAULT_TOKENS
    from .experiments import run_prescribed, run_probe, run_relu_drift

    n_tokens = 500 if opts.quick else 2000
    scratch = tempfile.TemporaryDirectory()  # the experiments' files, handed to write_report
    numbers = {"prescribed": run_prescribed(scratch.name, n_tokens=n_tokens,
                                            n_steps=30 if opts.quick else 60),
               "relu_drift": run_relu_drift(scratch.name, n_tokens=n_tokens,
                                            n_null=50 if opts.quick else 200)}
    captions = {
        "prescribed.png": "Prescribed attention: the trace of the particle covariance against "
                          "the Gaussian flow over time, for opposite definiteness (bounded) and "
                          "for equal definiteness (growing towards the predicted blow-up time "
                          "T*).",
        "relu_drift.png": "ReLU feed-forward: the energy statistic and the fourth-moment error "
                          "of the token cloud over time (log scale), with and without the ReLU "
                          "term, against the median (dotted) and 99 % quantile (dashed) of "
                          "exactly Gaussian clouds of the same size; right: the relative "
                          "covariance error of the ReLU cloud to the Gaussian moment closure."}
    body = ("<p>Prescribed attention: N tokens from a Gaussian, moved by the particle system of "
            "SPEC §1, against the Gaussian flow. Opposite definiteness stays bounded; equal "
            "definiteness follows the flow towards the predicted blow-up time T* = "
            f"{numbers['prescribed']['blowup_time']:.6g}. ReLU feed-forward: the cloud leaves the "
            "Gaussian family; the dashed lines are the 99 % quantiles of the statistics for "
            "exactly Gaussian clouds of the same size.</p>")
    try:
        # 200 null samples: fewer cannot reject the two-sided kurtosis test at α/4 = 0.0125
        probe = run_probe(opts.model, scratch.name,
                          n_tokens=300 if opts.quick else DEFAULT_TOKENS, n_null=200)
    except ImportError as exc:
        body += f"<p>Model probe skipped: {html.escape(str(exc))}.</p>"
    else:
        numbers["probe"] = probe
        captions["probe.png"] = (
            f"Probe of {probe['model']}: per layer, each Gaussianity statistic of the hidden "
            f"states for {probe['n_tokens']} Gaussian input tokens against the Monte-Carlo "
            "null of exactly Gaussian clouds of the same size; last panel: the relative "
            "residual ρ of the affine fit of each attention sublayer.")
    figures, files = {}, {}
    with scratch:
        for name, n in numbers.items():
            png = Path(n["figure"])
            figures[png.name] = png.read_bytes()
            n["figure"] = str(opts.out / png.name)
            files[f"{name}.json"] = json.dumps(to_jsonable(n), indent=1,
                                               allow_nan=False).encode()
    if "probe" in numbers:
        body += _probe_paragraph(numbers["probe"])
    p = numbers["prescribed"]
    summary = (f"{p['n_tokens']} particles against the Gaussian flow: opposite definiteness "
               f"within {p['opposite_max_rel_error']:.1%} of it; equal definiteness grows "
               f"towards T* = {p['blowup_time']:.4g}.")
    if "probe" in numbers:
        accepted = sum(not r for r in numbers["probe"]["reject"])
        summary += (f" {numbers['probe']['model']}: {accepted} of "
                    f"{len(numbers['probe']['reject'])} layers accepted as Gaussian.")
    return Section("validation", "Particles and real Transformers (SPEC §7)", body, figures,
                   numbers, files, captions, summary=summary)


def _probe_paragraph(probe: dict) -> str:
    """What the probe's numbers say: sequences, tested space, verdicts, moment prediction."""
    n_seq, lengths = probe["sequences"], probe["lengths"]
    space = (f"on {probe['dimension']} random orthonormal directions (n = {probe['n_tokens']} is "
             f"not much larger than d = {probe['hidden_size']})" if probe["projected"] else
             f"in R^{probe['hidden_size']}")
    accepted = sum(not r for r in probe["reject"])
    prediction = probe["prediction"]
    moments = (html.escape(probe["prediction_note"]) if prediction is None else
               f"the Gaussian moment prediction is within the sampling floor at "
               f"{sum(prediction['consistent'])} of {len(prediction['consistent'])} layers")
    limit = probe["position_limit"]
    cut = ("one sequence (the model has no position limit)" if limit is None else
           f"{n_seq} sequence{'s' * (n_seq > 1)} of at most {max(lengths)} tokens (position "
           f"limit {limit}; attention acts within each)")
    model = (f"{probe['model']} in {probe['model_path']}" if probe.get("model_path") else
             f"{probe['model']} with random weights: no trained model was given")
    return ("<p>Model probe: Gaussian tokens through a Transformer encoder "
            f"({html.escape(str(model))}), {probe['n_tokens']} tokens in {cut}. "
            "The statistics are "
            f"computed {space} and calibrated by a Monte-Carlo null; a layer is accepted as "
            f"Gaussian when no statistic is outside the interval its test accepts (Bonferroni, "
            f"α = {probe['alpha']:g}): {accepted} of {len(probe['reject'])} layers. The "
            f"attention residual ρ is to be read against {probe['residual_scale']:.3g}, its "
            f"value for an output unrelated to the input; {moments}.</p>{probe_table_html(probe)}")


def probe_table_html(probe: dict) -> str:
    """The per-layer numbers of the probe (as in probe.json, `models.probe_table`) as an HTML
    table: energy and kurtosis against the intervals their tests accept (at α/4), the smallest
    p-value, the moment prediction, the verdict and the attention residual ρ."""
    prediction, residual = probe.get("prediction"), [None, *probe["attention_residual"]]
    stats, low, high = probe["stats"], probe["band_low"], probe["band_high"]

    def edge(value: float | None) -> str:
        return "none" if value is None or not np.isfinite(value) else significant([value])[0]

    rows = []
    for i, layer in enumerate(probe["layers"]):
        p_min = min(p[i] for p in probe["p_values"].values())
        rho = residual[i]
        cells = [str(layer), significant([stats["energy"][i]])[0], edge(high["energy"][i]),
                 significant([stats["kurtosis"][i]])[0],
                 f"[{edge(low['kurtosis'][i])}, {edge(high['kurtosis'][i])}]", f"{p_min:.3f}",
                 "—" if prediction is None else
                 "within floor" if prediction["consistent"][i] else "deviates",
                 "rejected" if probe["reject"][i] else "accepted",
                 "—" if rho is None or not np.isfinite(rho) else f"{rho:.3f}"]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    level = probe["alpha"] / (len(probe["p_values"]))
    head = ("layer", "energy", "energy accepted ≤", "kurtosis", "kurtosis accepted in",
            "smallest p", "moment prediction", "Gaussian?", "attention ρ")
    return (f'<table class="probe"><caption>Per layer: the statistics of the hidden states '
            f"against the intervals their tests accept at α/{len(probe['p_values'])} = "
            f"{level:.3g}; ρ against ρ_free = {edge(probe['residual_scale'])}.</caption><tr>"
            + "".join(f"<th>{h}</th>" for h in head) + "</tr>" + "".join(rows) + "</table>")


def model_section(opts: Options) -> Section:
    """A real encoder: predicted against measured moments and the stability atlas (SPEC §7)."""
    from ..empirical.encoders.loading import require_transformers

    title = "A real encoder: moment prediction and stability atlas (SPEC §2, §5, §7)"
    try:
        require_transformers()
    except ImportError as exc:
        return Section("model", title, f"<p>Model section skipped: {html.escape(str(exc))}. "
                       "Install the optional dependencies to see the moment prediction and the "
                       "stability atlas of a real encoder.</p>", skipped=str(exc))
    from ..empirical.encoders.outputs import report_parts

    parts = report_parts(opts.model, quick=opts.quick)
    c, name = parts.numbers["comparison"], parts.numbers["model_description"]
    if parts.numbers["random_weights"]:
        title = ("A random-weight encoder (no model given): moment prediction and stability "
                 "atlas (SPEC §2, §5, §7)")
    captions = {
        "model_comparison.png": (
            f"Predicted against measured moments of {name}: per layer, the relative error "
            f"of the mean (left) and of the covariance (right) on {c['directions']} random "
            f"directions between the Gaussian moment prediction and the model's hidden states "
            f"for {c['n_tokens']} tokens in {c['sequences']} sequences, against the sampling "
            f"floor of exactly Gaussian clouds (grey, {1 - c['alpha'] / 2:.3g} quantile); "
            f"within it at {sum(c['consistent'])} of {len(c['consistent'])} layers."),
        "model_atlas.png": (
            f"Stability atlas of {name}: per layer and head, the signed spectral mass "
            "Σλ/Σ|λ| of sym(V_h) and of sym(B_h), the head's share 2 tr(V_hΣ0B_hΣ0)/tr Σ0 of "
            "d ln tr Σ/dt and its growth rate on its own range (heat maps); right: each "
            "layer's blow-up time T* of the multi-head attention flow with A = 0 and with "
            "A = E[J_MLP], and of the scalar fit (open markers), up to the horizon (dashed; "
            "absent where there is no blow-up before it).")}
    blows = [i for i, r in enumerate(parts.numbers["atlas"]["regime"]) if r == "blows_up"]
    summary = (f"{name}: the moment prediction is within the sampling floor at "
               f"{sum(c['consistent'])} of {len(c['consistent'])} layers; the attention flow "
               f"(A = 0) blows up before the horizon at {len(blows)} of "
               f"{len(parts.numbers['atlas']['regime'])} layers.")
    return Section("model", title, parts.body, parts.figures, parts.numbers, parts.files,
                   captions, summary=summary)


def sweep_section(opts: Options) -> Section:
    """Phase diagram of a batched parameter sweep (regimes over v and the spectrum of A)."""
    from ..sweep import report_section

    section = report_section(opts.quick)
    n = section.numbers
    caption = (f"Phase diagram of {n['n_configs']} scalar-V layers on a {n['grid'][0]} × "
               f"{n['grid'][1]} grid over v (the scale of the value matrix) and a (the spectrum "
               "of A): left, the regime certified for each layer ("
               + ", ".join(f"{k} {v}" for k, v in n["regime_counts"].items())
               + "); right, log₁₀ of the blow-up time T* where the layer blows up.")
    return Section("sweep", section.title, section.body, section.figures, n,
                   captions={name: caption for name in section.figures},
                   summary=f"{n['n_configs']} layers classified by the batched certificate: "
                           + ", ".join(f"{k} {v}" for k, v in n["regime_counts"].items())
                           + ".")


SECTIONS: list[Callable[[Options], Section]] = [proofs_section, regimes_section,
                                                steering_section, validation_section,
                                                model_section, sweep_section]


def _page(sections: list[Section], title: str = "riccati_tf report") -> str:
    """The self-contained HTML page: a summary table first (for more than one section), then
    each section with its figures inline."""
    parts = []
    for s in sections:
        imgs = "".join(
            f'<figure data-file="{html.escape(name)}"><img alt="{html.escape(s.caption(name))}" '
            f'{_text_size_attribute(png)}src="data:image/png;base64,'
            f'{base64.b64encode(png).decode()}"><figcaption>{html.escape(s.caption(name))}'
            "</figcaption></figure>" for name, png in s.figures.items())
        parts.append(f'<section id="{s.key}"><h2>{html.escape(s.title)}</h2>{s.body}'
                     f'<div class="figs">{imgs}</div></section>')
    style = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;"
             "line-height:1.45}table{border-collapse:collapse;max-width:100%}"
             "td,th{border:1px solid #bbb;padding:3px 8px;overflow-wrap:break-word}"
             "pre{white-space:pre-wrap;overflow-wrap:anywhere;font-size:85%}"
             "details{margin:.5em 0}summary{cursor:pointer;color:#333}"
             ".figs{display:flex;flex-wrap:wrap;gap:12px}figure{margin:0;max-width:100%}"
             "figure img{max-width:100%;height:auto}figcaption{font-size:80%;color:#555}")
    head = html.escape(title)
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{head}</title>"
            f"<style>{style}</style></head><body><h1>{head}</h1>"
            f"{_summary_table(sections) if len(sections) > 1 else ''}{''.join(parts)}"
            f"<script>{_RENDER_CHECK}</script></body></html>")


def _summary_table(sections: list[Section]) -> str:
    """The page's first table: each section (a link to it) and its finding in one sentence."""
    rows = "".join(
        f'<tr><td><a href="#{s.key}">{html.escape(s.title)}</a></td>'
        f"<td>{html.escape(s.summary or (f'skipped: {s.skipped}' if s.skipped else ''))}</td>"
        "</tr>" for s in sections)
    return (f'<section id="summary"><h2>Summary</h2><table><tr><th>section</th>'
            f"<th>what it finds</th></tr>{rows}</table></section>")


def _text_size_attribute(png: bytes) -> str:
    """The img attribute data-min-text-px: the smallest text's height in image pixels."""
    px = min_text_px(png)
    return "" if px is None else f'data-min-text-px="{px:.4g}" '


# After loading, the page records how many figures decoded, in all and per section
# (data-figures-loaded-KEY, data-figures-total-KEY), how many equations laid out with a
# non-empty box, the page's scroll width against the window's width, and the smallest figure
# text as rendered, in hundredths of a CSS point (the figure's smallest text height in image
# pixels × shown width / natural width × 3/4 pt per CSS px), read back by the headless-browser
# test through --dump-dom.
_RENDER_CHECK = """
window.addEventListener('load', function () {
  var imgs = Array.from(document.images), maths = Array.from(document.querySelectorAll('math'));
  var root = document.documentElement.dataset;
  function loaded(list) {
    return list.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length; }
  root.figuresTotal = imgs.length;
  root.figuresLoaded = loaded(imgs);
  document.querySelectorAll('section').forEach(function (s) {
    var own = Array.from(s.querySelectorAll('img'));
    var key = s.id.charAt(0).toUpperCase() + s.id.slice(1);
    root['figuresTotal' + key] = own.length;
    root['figuresLoaded' + key] = loaded(own);
  });
  root.equationsTotal = maths.length;
  root.equationsRendered = maths.filter(function (m) {
    var r = m.getBoundingClientRect(); return r.width > 0 && r.height > 0; }).length;
  root.scrollWidth = document.documentElement.scrollWidth;
  root.windowWidth = document.documentElement.clientWidth;
  var sized = imgs.filter(function (i) { return i.dataset.minTextPx && i.naturalWidth > 0; });
  root.figuresSized = sized.length;
  var pt = sized.map(function (i) {
    return parseFloat(i.dataset.minTextPx) * i.getBoundingClientRect().width / i.naturalWidth
      * 0.75; });
  root.minFigureTextCentipt = Math.floor(100 * Math.min.apply(null, pt.concat([1e6])));
});
"""


#: the files every report writes (checked before the sections run)
PAGE, SUMMARY = "index.html", "summary.json"


def _is_tty(stream: Any) -> bool:
    """Whether `stream` is a terminal (a progress bar is drawn only there)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def write_report(out_dir: str | Path = "report", *, quick: bool = False,
                 model: str | None = None, log: IO[str] | None = None) -> Path:
    """Run every section, write out_dir/index.html, out_dir/summary.json and the PNG figures.

    The sections (SECTIONS): the proofs of proofs/ re-proved; the three scalar-V regimes of
    Σ̇ = AΣ + ΣAᵀ − ΣGΣ (SPEC §5) by the exact closed form, cross-checked by Runge–Kutta, with
    their certificates (SPEC §6); exact steering between Gaussians of equal rank (SPEC §3–§4);
    particles, ReLU drift and a Transformer encoder against the Gaussian theory (SPEC §7); the
    moment prediction and stability atlas of a real encoder; the phase diagram of a batched
    parameter sweep. Each section returns its HTML, its figures and every number it quotes, so
    the page (self-contained: figures inline, equations as MathML) and summary.json say the
    same thing. One line per section goes to `log` (a progress bar when it is a terminal).

    Parameters
    ----------
    out_dir : str or pathlib.Path, default "report"
        The output folder (created if missing).
    quick : bool, default False
        Smaller runs (`riccati-tf report --quick`, a minute or two of CPU).
    model : str, optional
        A local Transformer folder (`save_pretrained`) for the probe; default a random
        DeiT-tiny-shaped encoder (nothing is downloaded).
    log : text stream, optional
        Where the section lines go (default: sys.stderr at the time of the call).

    Returns
    -------
    pathlib.Path
        The page, out_dir/index.html.

    Raises
    ------
    InvalidInputError
        When out_dir is not a folder or cannot be created, holds a marker riccati-tf did not
        write, or holds a file of the same name as one the report writes that the report did
        not write (or that changed since): refused naming it, before the sections run for the
        page and the summary, before anything is written for the others. When model is not a
        folder holding config.json: refused before the sections run.
    SolverError
        When a computation of a section fails numerically.

    See Also
    --------
    riccati_tf.app.cli.main : ``riccati-tf report [--out DIR] [--quick] [--model PATH]``.
    riccati_tf.io.files.OutputFolder : the never-overwrite rule of the output folder.
    riccati_tf.sweep.report.report_section : the sweep section.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2–§7 (riccati_tf/SPEC.md, installed with the package).

    Examples
    --------
    The whole report takes a minute or more; what the example shows is the check that runs
    first, which never lets it overwrite a file it did not write:

    >>> import io
    >>> import tempfile
    >>> from pathlib import Path
    >>> from riccati_tf.app.report import write_report
    >>> from riccati_tf.errors import InvalidInputError
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = (Path(tmp) / "index.html").write_text("<p>my page</p>")
    ...     try:
    ...         write_report(tmp, quick=True, log=io.StringIO())
    ...     except InvalidInputError as exc:
    ...         print("refused:", (Path(tmp) / "index.html").read_text())
    refused: <p>my page</p>
    """
    log = sys.stderr if log is None else log  # the stream of the moment, not of import time
    folder = OutputFolder.open(out_dir)
    folder.check((PAGE, SUMMARY))
    if model is not None:  # before the sections, which take minutes
        from ..empirical.encoders.loading import check_model_path

        check_model_path(model)
    out = folder.path
    opts = Options(out, quick, model)
    sections, files = [], {}
    summary: dict[str, Any] = {"quick": quick, "model": model}
    bar = tqdm.tqdm(total=len(SECTIONS), desc="report sections", file=log,
                    disable=not _is_tty(log))

    def say(line: str) -> None:
        bar.write(line, file=log)
        log.flush()

    with bar:
        for i, build in enumerate(SECTIONS, 1):
            start = time.perf_counter()
            say(f"[{i}/{len(SECTIONS)}] {(build.__doc__ or build.__name__).splitlines()[0]}")
            section = build(opts)
            sections.append(section)
            summary[section.key] = section.numbers
            files.update(section.figures)
            files.update(section.files)
            say(f"      skipped: {section.skipped}" if section.skipped else
                f"      done in {time.perf_counter() - start:.1f} s")
            bar.update()
    files[PAGE] = _page(sections).encode("utf-8")
    files[SUMMARY] = json.dumps(to_jsonable(summary), indent=2, allow_nan=False).encode("utf-8")
    return folder.write(files)[PAGE]
