"""What the command line and the report show of a real encoder: the atlas and the comparison
with the model, as text, JSON, PNG figures and an HTML fragment.

`write_atlas` is the `atlas` subcommand (atlas.json, atlas.png, atlas_inputs.npz); `analyse`
runs extraction, prediction, atlas and comparison once; `report_parts` is the body, figures,
numbers and files of a report section. A model is a folder saved with save_pretrained
(`encoders.loading.load_model`) or, when no folder is given, a small random BERT encoder
(`DEFAULT_SHAPE`), which the report names as such ("random weights", `model_description`).
"""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...io.figures import figure_png
from ...io.files import OutputFolder
from ...io.paths import relative_paths
from ...io.serialize import json_document
from ...state.validation import as_seed, as_time
from .atlas import DEFAULT_HORIZON, Atlas, atlas
from .comparison import Comparison, compare
from .extraction import ROTARY_FAMILY, check_model, extract
from .figures import plot_atlas, plot_comparison
from .inputfiles import check_input_files
from .loading import model_inputs
from .measured import measured_moments
from .propagation import predict_moments
from .sequences import Inputs

__all__ = ["DEFAULT_SHAPE", "FULL_TOKENS", "QUICK_TOKENS"]

#: the random encoder analysed when no model folder is given
DEFAULT_SHAPE: dict[str, Any] = {"family": "bert", "hidden_size": 128, "n_heads": 4, "n_layers": 4,
                 "initializer_range": 0.05}
#: Gaussian tokens of the comparison (quick report / full report and CLI)
QUICK_TOKENS, FULL_TOKENS = 1024, 4096


@dataclass(frozen=True, eq=False)
class ModelAnalysis:
    """The atlas and the comparison with the model, from one extraction and prediction."""

    atlas: Atlas
    comparison: Comparison
    inputs: Inputs | None = None

    def to_json(self) -> dict[str, Any]:
        return {"atlas": self.atlas.to_json(), "comparison": self.comparison.to_json(),
                "inputs": None if self.inputs is None else self.inputs.to_json()}

    def summary(self) -> str:
        fed = "" if self.inputs is None else f"inputs: {self.inputs.describe()}\n"
        return fed + self.atlas.summary() + "\n" + self.comparison.summary()


@dataclass(frozen=True, eq=False)
class ReportParts:
    """An HTML body, PNG figures {name: bytes}, the numbers it quotes and extra files."""

    body: str
    figures: dict[str, bytes]
    numbers: dict[str, Any]
    files: dict[str, bytes]


def load(model_path: str | None, *, seed: int = 0) -> Any:
    """The model in a folder (no download), or a DEFAULT_SHAPE random encoder for None (its
    weights drawn with `seed`)."""
    seed = as_seed("seed", seed)
    if model_path is None:
        from .tiny import tiny_encoder

        return tiny_encoder(seed=seed, **DEFAULT_SHAPE)
    from .loading import load_model

    return load_model(model_path)


def model_description(model_path: str | None, model: Any) -> str:
    """What the report names: the folder and the model's class, layers, heads and d; or, for
    no folder, that the DEFAULT_SHAPE encoder has random weights."""
    config = model.config
    shape = (f"{type(model).__name__}, d = {config.hidden_size}, "
             f"{config.num_attention_heads} heads, {config.num_hidden_layers} layers")
    if model_path is None:
        return (f"random weights: a {shape} with N(0, "
                f"{DEFAULT_SHAPE['initializer_range']:g}²) weights built here (no trained model "
                f"given)")
    return f"{model_path} ({shape})"


def _position_free(model: Any, position_free: bool | None) -> bool:
    """None: the position-free part exactly when the family has position-dependent attention."""
    if position_free is None:
        return getattr(model.config, "model_type", None) in ROTARY_FAMILY
    return bool(position_free)


def analyse(model: Any, *, n_tokens: int = FULL_TOKENS, seed: int = 0,
            position_free: bool | None = None, horizon: float = DEFAULT_HORIZON,
            progress: Callable[[int, int], None] | None = None,
            inputs: Inputs | None = None) -> ModelAnalysis:
    """Extraction, moment prediction from the inputs' moments, atlas and comparison with the
    model on the inputs (default: n_tokens Gaussian tokens matched to the embedding output,
    drawn with seed, `loading.model_inputs`). position_free=None takes the position-free part
    of a rotary family (and says so in every output)."""
    seed = as_seed("seed", seed)
    if inputs is None:
        inputs = model_inputs(model, n_tokens=n_tokens, seed=seed)
    encoder = extract(model, position_free=_position_free(model, position_free))
    prediction = predict_moments(encoder, inputs.mean, inputs.cov, progress=progress)
    result = atlas(encoder, prediction=prediction, horizon=horizon)
    result = dataclasses.replace(result, model=type(model).__name__)
    comparison = compare(model, n_tokens=n_tokens, seed=seed, prediction=prediction,
                         progress=progress, inputs=inputs)
    return ModelAnalysis(result, comparison, inputs)


def write_atlas(model_path: str | None, out_dir: str | Path, *, position_free: bool = False,
                horizon: float = DEFAULT_HORIZON,
                progress: Callable[[int, int], None] | None = None,
                text: str | Path | None = None, tokens: str | Path | None = None,
                hidden: str | Path | None = None, gaussian: str | None = None,
                chained: bool = False) -> tuple[Atlas, dict[str, Any]]:
    """The atlas of the model in model_path (None: DEFAULT_SHAPE) → out_dir/atlas.json,
    out_dir/atlas.png and out_dir/atlas_inputs.npz (the per-layer input moments and drifts every
    T* starts from, `Atlas.inputs`), never over a file riccati-tf did not write
    (`riccati_tf.io.files`); returns the Atlas and its numbers (with the three paths). The
    moments are predicted from those of the inputs (`loading.model_inputs`: a text, token-id
    or hidden-state file, else the embedding output over the embedding tables, or N(0, I) for
    gaussian="standard"; "input_tokens" in the numbers): with real tokens each layer starts
    from the moments measured at its attention input (`measured_moments`) unless chained,
    with Gaussian inputs from the chained prediction (`Atlas.moments_source`); out_dir,
    horizon and the files are checked before the model is loaded, the model (`check_model`)
    before it is analysed."""
    names = ("atlas.png", "atlas.json", "atlas_inputs.npz")
    folder = OutputFolder.open(out_dir)
    folder.check(names)
    horizon = as_time("horizon", horizon)
    check_input_files(text=text, tokens=tokens, hidden=hidden, gaussian=gaussian)
    model = load(model_path)
    check_model(model)
    fed = model_inputs(model, text=text, tokens=tokens, hidden=hidden, gaussian=gaussian,
                       n_tokens=2, seed=0)
    encoder = extract(model, position_free=position_free)
    source = "measured" if fed.real and not chained else "chained"
    prediction = (measured_moments(model, encoder, fed) if source == "measured" else
                  predict_moments(encoder, fed.mean, fed.cov))
    result = atlas(encoder, prediction=prediction, horizon=horizon, progress=progress,
                   moments_source=source)
    result = dataclasses.replace(result, model=type(model).__name__)
    numbers = {**result.to_json(), "model_path": model_path, "input_tokens": fed.to_json(),
               "figure": str(folder.path / "atlas.png"),
               "json": str(folder.path / "atlas.json"),
               "inputs": str(folder.path / "atlas_inputs.npz")}
    folder.write({"atlas.png": figure_png(plot_atlas(result)),
                  "atlas.json": json_document(relative_paths(numbers, folder.path, (
                      model_path, text, tokens, hidden))),
                  "atlas_inputs.npz": result.inputs()})
    return result, numbers


def _layer_table(analysis: ModelAnalysis) -> str:
    """HTML: one row a layer ℓ = 1…L of what the model section finds there: the input trace,
    the attention flow's regime (A = 0) and T* in layers, one τ = 1 step's growth of tr Σ, the
    normalised flow's trend, and the moment prediction's verdict against the sampling floor
    (— without baselines)."""
    a, verdicts = analysis.atlas, analysis.comparison.verdicts()
    rows = []
    for i in range(a.regime.size):
        t_star = ("—" if not np.isfinite(a.blowup_time[i]) else f"{a.blowup_time[i]:.4g}")
        norm = a.normalised[i]
        shape = ("undefined (Σ0 = 0)" if norm is None else
                 f"{norm.trend} ({norm.ratio[0]:.3g} → {norm.ratio[-1]:.3g})")
        verdict = verdicts[i] if i < len(verdicts) else "—"
        rows.append(f"<tr><td>{i + 1}</td><td>{a.input_trace[i]:.4g}</td>"
                    f"<td>{html.escape(a.regime[i])}</td><td>{t_star}</td>"
                    f"<td>× {a.step_growth[i]:.4g}</td>"
                    f"<td>{html.escape(shape)}</td><td>{html.escape(verdict)}</td></tr>")
    return ("<table><tr><th>layer</th><th>tr Σ0</th><th>attention flow (A = 0)</th>"
            "<th>T* (layers)</th><th>tr Σ after one τ = 1 step</th>"
            "<th>after LayerNorm (participation ratio)</th><th>moment prediction</th></tr>"
            + "".join(rows) + "</table>")


def report_parts(model_path: str | None, *, quick: bool = False, seed: int = 0) -> ReportParts:
    """The model section of the report: what SPEC §7 predicts for a real encoder and what the
    model does (module docstring); seed draws the random encoder (model_path None) and the
    tokens of `analyse`."""
    model = load(model_path, seed=seed)
    check_model(model)
    analysis = analyse(model, n_tokens=QUICK_TOKENS if quick else FULL_TOKENS, seed=seed)
    c = analysis.comparison
    name = model_description(model_path, model)
    fed = analysis.inputs
    body = (f"<p><b>Model analysed:</b> {html.escape(name)}.</p>"
            + ("<p><b>Random weights.</b> No trained model was given (riccati-tf report "
               "--model DIR analyses a folder saved with save_pretrained): the numbers below "
               "describe a randomly initialised encoder and say nothing about trained ones "
               "(its heads are near-random matrices, so ‖V_h − v_hI‖/‖V_h‖ ≈ 1 and "
               "near-identity layers keep Gaussian input Gaussian by construction).</p>"
               if model_path is None else "")
            + "<p>The encoder layer by layer. Each layer's Params are extracted (heads kept "
            "factored: B_h = W_K,hᵀW_Q,h/√d_h, V_h = W_O,hW_V,h); the Gaussian moments of "
            f"the inputs ({html.escape(fed.describe() if fed is not None else 'N(0, I)')}) "
            "are pushed through the attention sublayers exactly (SPEC §2) and "
            "through the LayerNorms and feed-forward blocks by Gaussian closures, and compared "
            f"with the model's own hidden states for {c.n_tokens} tokens in {len(c.lengths)} "
            f"sequence(s) of at most {max(c.lengths)} ("
            + ("no position limit" if c.position_limit is None else
               f"position limit {c.position_limit}") + "); "
            "the errors on random directions stand next to the sampling floor of exactly "
            "Gaussian clouds of the same size. The atlas gives every layer's multi-head, "
            "general-V attention flow (SPEC §5) up to the horizon and per-head spectral "
            "masses and growth rates; the scalar fit V_h ≈ v_hI only as an extra column."
            + (" Attention is position dependent in this model (rotary embeddings): the "
               "analysis uses its position-free part." if c.position_free else "")
            + "</p>" + _layer_table(analysis)
            + "<details><summary>Every number, as <code>riccati-tf compare</code> and "
            f"<code>riccati-tf atlas</code> print them</summary><pre>"
            f"{html.escape(analysis.summary())}</pre></details>")
    figures = {"model_atlas.png": figure_png(plot_atlas(analysis.atlas)),
               "model_comparison.png": figure_png(plot_comparison(c))}
    numbers = {**analysis.to_json(), "model_path": model_path, "model_description": name,
               "random_weights": model_path is None}
    files = {"model.json": json_document(numbers)}
    return ReportParts(body, figures, numbers, files)
