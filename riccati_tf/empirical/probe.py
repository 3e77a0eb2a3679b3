"""Gaussian tokens through a real Transformer encoder, layer by layer (SPEC §7).

N tokens x_i ~ N(0, I_d) (d = hidden size) replace the output of the encoder's embedding module
(a forward hook). A model with a position limit (config.max_position_embeddings, e.g. 512 for
BERT) sees them as ⌈N / limit⌉ sequences of at most the limit (`encoders.sequences`), each its
own empirical measure; forward hooks capture every layer's hidden states h^ℓ and every attention
sublayer's input z and output a, and the hidden states of all sequences are pooled.

Gaussianity of each layer (`gaussianity`): the statistics are affine invariant and need n ≫ r
points in rank r to have power (with n ≈ d the whitened cloud of any distribution looks alike).
When n ≥ FULL_RATIO · d they are computed in R^d; otherwise on the projection x ↦ Θᵀx onto
k = PROJECTED_DIMENSION orthonormal random directions Θ (d × k, drawn from the seed and shared
by all layers): a Gaussian cloud projects to a Gaussian, and k ≪ n. Each is calibrated against
its Monte-Carlo null of the same (n, rank), and a layer is rejected when the smallest of the
len(TESTS) p-values is below α/len(TESTS) (Bonferroni); `acceptance_band` turns the same rule
into each statistic's accepted interval (a statistic outside it ⇔ a rejection).

Attention: the theory says attention acts on a Gaussian cloud N(m, Σ) as the affine map
z ↦ V(m + Σ B z) (SPEC §2), one map per sequence (its own empirical measure). The relative
residual of the least-squares affine fits a_s ≈ [z_s, 1] Θ_s, pooled over the sequences s,

    ρ = √( Σ_s ‖a_s − [z_s, 1] Θ̂_s‖_F² / Σ_s ‖a_s − ā_s‖_F² ),

vanishes for position-free attention as the sequences grow. A fit of d + 1 coefficients to n_s
points explains part of anything: an output unrelated to its input has ρ ≈ ρ_free =
√(Σ_s (n_s − d − 1) / Σ_s (n_s − 1)) (`residual_scale`), so ρ is read against ρ_free; ρ is NaN
when a sequence has n_s ≤ d + 1 points (the fit is exact). (Rotary position embeddings, as in
ModernBERT, make attention depend on the token index and ρ need not vanish.)

Moments: the Gaussian moment prediction of `encoders` (`predict_moments` of the extracted
layers, N(0, I) input) is measured against the same pooled hidden states (`encoders.comparison`)
and stored as `ProbeResult.prediction` (None, with the reason, for a family `extract` does not
support).

Works with `transformers` encoders that have an `embeddings` module and a list of encoder
layers whose attention module's class name ends in "Attention" (`encoders.loading`: loading,
the layer list, the attention child and the capture; BertModel, RobertaModel, ModernBertModel,
DeiTModel). torch and transformers are imported inside the functions only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InvalidInputError
from ..state.validation import as_count, as_seed, as_time
from .encoders.loading import MAX_HIDDEN, require_transformers
from .gaussianity import MAX_NULL, TESTS, acceptance_band, check_alpha, directions, normality_test

if TYPE_CHECKING:
    from .encoders.comparison import Comparison

#: statistics reported per layer (TESTS plus the relative moment errors)
REPORTED = (*TESTS, "third", "fourth")
#: the two-sided test among TESTS (as in `gaussianity.normality_test`)
TWO_SIDED = ("kurtosis",)
FAMILIES = ("deit", "modernbert", "bert", "roberta")
#: most Gaussian tokens fed to an encoder (all sequences together)
MAX_TOKENS = 8192
#: default number of Gaussian tokens: 4 sequences of a 512-position model, n ≫ k
DEFAULT_TOKENS = 2048
#: the statistics are computed in R^d when n ≥ FULL_RATIO · d, else on PROJECTED_DIMENSION
#: random directions (module docstring)
FULL_RATIO = 50
PROJECTED_DIMENSION = 8
#: bounds of `tiny_model`: hidden size, encoder layers and attention heads
MAX_MODEL_LAYERS = 64
MAX_MODEL_HEADS = 64


@dataclass(frozen=True, eq=False)
class ProbeResult:
    """Per-layer Gaussianity of hidden states for Gaussian input tokens.

    layers (L+1,): 0 is the Gaussian input at the embedding output, ℓ the output of layer ℓ;
    lengths: the sequences the n_tokens were cut into (position_limit: the model's limit, None
    without one); dimension: the k of the tested projection (= hidden_size when projected is
    False: whitened in R^d); stats[name], p_values[name] (L+1,) for name in REPORTED (p-values
    for TESTS only); reject (L+1,) bool (normality_test at alpha); band_low[name],
    band_high[name] (L+1,): the accepted interval of the decision (`acceptance_band`, −inf
    below a one-sided statistic; for "third" and "fourth", which the decision does not use,
    the interval a test at the same level would accept); null_median[name], null_q95[name]:
    the median and 95 % quantile of the Monte-Carlo null of the same n and rank; rank (L+1,);
    attention_residual (L,) the pooled relative residual ρ of the affine fits of each
    attention sublayer (NaN when a layer has no attention child found or a sequence is too
    short for the fit) and residual_scale its value ρ_free for an unrelated output;
    prediction: the moment prediction measured against the hidden states
    (`encoders.Comparison`), None when the family is not supported (prediction_note says why).
    """

    model: str
    n_tokens: int
    hidden_size: int
    seed: int
    alpha: float
    lengths: tuple[int, ...]
    position_limit: int | None
    dimension: int
    projected: bool
    layers: np.ndarray
    rank: np.ndarray
    stats: dict[str, np.ndarray]
    p_values: dict[str, np.ndarray]
    reject: np.ndarray
    band_low: dict[str, np.ndarray]
    band_high: dict[str, np.ndarray]
    null_median: dict[str, np.ndarray]
    null_q95: dict[str, np.ndarray]
    attention_residual: np.ndarray
    residual_scale: float
    prediction: Comparison | None
    prediction_note: str

    @property
    def level(self) -> float:
        """The per-statistic level α / len(TESTS) of the Bonferroni decision."""
        return self.alpha / len(TESTS)

    def as_dict(self) -> dict:
        """JSON-ready numbers (lists of floats; ±inf and NaN are left to `to_jsonable`)."""
        def listed(d):
            return {k: np.asarray(v).tolist() for k, v in d.items()}

        return {"model": self.model, "n_tokens": self.n_tokens, "hidden_size": self.hidden_size,
                "seed": self.seed, "alpha": self.alpha, "sequences": len(self.lengths),
                "lengths": list(self.lengths), "position_limit": self.position_limit,
                "dimension": self.dimension, "projected": self.projected,
                "layers": self.layers.tolist(), "rank": self.rank.tolist(),
                "stats": listed(self.stats), "p_values": listed(self.p_values),
                "reject": self.reject.tolist(), "band_low": listed(self.band_low),
                "band_high": listed(self.band_high), "null_median": listed(self.null_median),
                "null_q95": listed(self.null_q95),
                "attention_residual": self.attention_residual.tolist(),
                "residual_scale": self.residual_scale,
                "prediction": None if self.prediction is None else self.prediction.to_json(),
                "prediction_note": self.prediction_note}


def tiny_model(family: str = "deit", *, hidden_size: int = 32, n_layers: int = 2,
               n_heads: int = 2, initializer_range: float = 0.02, seed: int = 0):
    """A randomly initialised encoder of the given family (FAMILIES) with intermediate size
    4·hidden_size; initializer_range is the standard deviation of the weights (0.02 in the
    published models). DeiT and ModernBERT (8192 positions) in float32; BERT and RoBERTa (512
    positions) in float64 (`encoders.tiny.tiny_encoder`). For tests and demonstrations: no
    download."""
    require_transformers()
    import torch
    from transformers import DeiTConfig, DeiTModel, ModernBertConfig, ModernBertModel

    if not isinstance(family, str) or family not in FAMILIES:
        raise InvalidInputError(f"family must be one of {FAMILIES}, got {family!r}")
    hidden_size = as_count("hidden_size", hidden_size, maximum=MAX_HIDDEN,
                                   limit="models.MAX_HIDDEN")
    n_layers = as_count("n_layers", n_layers, maximum=MAX_MODEL_LAYERS,
                                limit="models.MAX_MODEL_LAYERS")
    n_heads = as_count("n_heads", n_heads, maximum=MAX_MODEL_HEADS,
                               limit="models.MAX_MODEL_HEADS")
    if hidden_size % n_heads:
        raise InvalidInputError(f"hidden_size = {hidden_size} must be a multiple of n_heads = "
                                f"{n_heads} (each head gets hidden_size / n_heads dimensions)")
    if family == "modernbert" and (hidden_size // n_heads) % 2:
        raise InvalidInputError(f"ModernBERT's rotary embeddings need an even head size; "
                                f"hidden_size / n_heads = {hidden_size // n_heads}")
    initializer_range = as_time("initializer_range", initializer_range)
    seed = as_seed("seed", seed)
    common = {"hidden_size": hidden_size, "num_hidden_layers": n_layers,
              "num_attention_heads": n_heads, "intermediate_size": 4 * hidden_size,
              "initializer_range": initializer_range}
    if family in ("bert", "roberta"):
        from .encoders.tiny import tiny_encoder

        return tiny_encoder(family, hidden_size=hidden_size, n_heads=n_heads, n_layers=n_layers,
                            initializer_range=initializer_range, seed=seed)
    torch.manual_seed(seed)
    if family == "deit":
        return DeiTModel(DeiTConfig(image_size=32, patch_size=16, **common)).eval()
    config = ModernBertConfig(vocab_size=64, max_position_embeddings=8192,
                              global_attn_every_n_layers=1, pad_token_id=0, bos_token_id=1,
                              eos_token_id=2, cls_token_id=1, sep_token_id=2, **common)
    return ModernBertModel(config).eval()


def affine_residual(z: np.ndarray, a: np.ndarray) -> float:
    """ρ = ‖a − [z, 1]Θ̂‖_F / ‖a − ā‖_F with Θ̂ the least-squares solution."""
    return pooled_affine_residual([z], [a])


def _affine_sums(z: np.ndarray, a: np.ndarray) -> tuple[float, float]:
    """(‖a − [z, 1]Θ̂‖_F², ‖a − ā‖_F²) of one sequence's least-squares affine fit."""
    design = np.hstack([z, np.ones((z.shape[0], 1))])
    theta, *_ = np.linalg.lstsq(design, a, rcond=None)
    return (float(np.sum((a - design @ theta) ** 2)),
            float(np.sum((a - a.mean(axis=0)) ** 2)))


def pooled_affine_residual(zs: list[np.ndarray], outs: list[np.ndarray]) -> float:
    """ρ = √(Σ_s ‖a_s − [z_s, 1]Θ̂_s‖_F² / Σ_s ‖a_s − ā_s‖_F²): one affine fit per sequence
    (module docstring); NaN when a sequence has no more points than coefficients (exact fit)."""
    if any(z.shape[0] <= z.shape[1] + 1 for z in zs):
        return float("nan")
    resid, total = np.sum([_affine_sums(z, a) for z, a in zip(zs, outs, strict=True)], axis=0)
    return float(np.sqrt(resid / total))


def residual_scale(lengths: tuple[int, ...], d: int) -> float:
    """ρ_free = √(Σ_s (n_s − d − 1) / Σ_s (n_s − 1)): the expected ρ of a least-squares affine
    fit (d + 1 coefficients per sequence) to an output independent of its input; NaN when a
    sequence has n_s ≤ d + 1."""
    n = np.asarray(lengths)
    if np.any(n <= d + 1):
        return float("nan")
    return float(np.sqrt(np.sum(n - d - 1) / np.sum(n - 1)))


def check_probe_arguments(*, n_tokens: int, seed: int = 0, n_null: int = 200,
                          alpha: float = 0.05) -> None:
    """The bounds of `probe` that do not depend on the model: 2 ≤ n_tokens ≤ MAX_TOKENS,
    0 ≤ seed ≤ validation.MAX_SEED, 1 ≤ n_null ≤ gaussianity.MAX_NULL, 0 < alpha < 1."""
    as_count("n_tokens", n_tokens, minimum=2, maximum=MAX_TOKENS,
                     limit="models.MAX_TOKENS")
    as_seed("seed", seed)
    as_count("n_null", n_null, maximum=MAX_NULL, limit="gaussianity.MAX_NULL")
    check_alpha(alpha)


def tested_dimension(n_tokens: int, d: int) -> int:
    """k: d when n_tokens ≥ FULL_RATIO · d (whitened in R^d), else min(PROJECTED_DIMENSION, d)
    random directions (module docstring)."""
    return d if n_tokens >= FULL_RATIO * d else min(PROJECTED_DIMENSION, d)


def projection(d: int, k: int, seed: int) -> np.ndarray | None:
    """Θ (d × k) with orthonormal columns spanning k random directions drawn from seed (None for
    k = d: no projection)."""
    return None if k == d else np.linalg.qr(directions(d, k, seed))[0]


def _prediction(model, hidden: list[np.ndarray], lengths: tuple[int, ...], limit, *,
                seed: int, alpha: float):
    """(Comparison, "") of the moment prediction against the pooled hidden states, or
    (None, reason) when `encoders.extract` refuses the model."""
    from .encoders import extract, predict_moments
    from .encoders.comparison import measure
    from .encoders.extraction import ROTARY_FAMILY

    position_free = getattr(model.config, "model_type", None) in ROTARY_FAMILY
    try:
        encoder = extract(model, position_free=position_free)
    except InvalidInputError as exc:
        return None, f"no moment prediction: {exc}"
    return measure(hidden, predict_moments(encoder), lengths=lengths, position_limit=limit,
                   model=type(model).__name__, seed=seed, alpha=alpha), ""


def probe(model, *, n_tokens: int = DEFAULT_TOKENS, seed: int = 0, n_null: int = 200,
          alpha: float = 0.05, predict: bool = True) -> ProbeResult:
    """Gaussianity of each layer's hidden states for tokens x_i ~ N(0, I_d) fed at the embedding
    output (module docstring). model: a transformers encoder (e.g. from `load_model`);
    n_tokens: all tokens, cut into sequences within the model's position limit; seed fixes the
    tokens, the projection, the sliced-W2 directions and the null; n_null: Gaussian samples in
    the Monte-Carlo null; predict: also measure the moment prediction (`prediction`)."""
    from .encoders import position_limit, sequence_lengths
    from .encoders.comparison import capture_sequences, pooled_hidden

    config = getattr(model, "config", None)
    d = getattr(config, "hidden_size", None)
    if not isinstance(d, int) or not 1 <= d <= MAX_HIDDEN:
        raise InvalidInputError(f"model must be a transformers encoder with an integer "
                                f"config.hidden_size in [1, {MAX_HIDDEN}], got {d!r}")
    check_probe_arguments(n_tokens=n_tokens, seed=seed, n_null=n_null, alpha=alpha)
    k = tested_dimension(n_tokens, d)
    if n_tokens <= k + 1:
        raise InvalidInputError(f"n_tokens = {n_tokens} must exceed {k + 1}: the statistics "
                                f"in {k} dimensions need more points than dimensions + 1")
    limit = position_limit(model)
    lengths = sequence_lengths(n_tokens, limit)
    tokens = np.random.default_rng(seed).standard_normal((n_tokens, d))
    captures = capture_sequences(model, tokens, lengths)
    hidden = pooled_hidden(captures)
    theta = projection(d, k, seed)
    tests = [normality_test(h if theta is None else h @ theta, alpha=alpha, n_null=n_null,
                            seed=seed) for h in hidden]

    def per_layer(fn):
        return {name: np.array([fn(t, name) for t in tests]) for name in REPORTED}

    bands = per_layer(lambda t, name: acceptance_band(t.null.values[name], alpha,
                                                      name in TWO_SIDED, len(TESTS)))
    residual = []
    for i in range(len(hidden) - 1):
        pairs = [(c[1][i], c[2][i]) for c in captures]
        residual.append(np.nan if pairs[0][0] is None else
                        pooled_affine_residual(*map(list, zip(*pairs, strict=True))))
    comparison, note = ((None, "not requested") if not predict else
                        _prediction(model, hidden, lengths, limit, seed=seed, alpha=alpha))
    return ProbeResult(
        type(model).__name__, n_tokens, d, seed, alpha, lengths, limit, k, theta is not None,
        np.arange(len(hidden)), np.array([t.stats.rank for t in tests]),
        per_layer(lambda t, name: getattr(t.stats, name)),
        {name: np.array([t.p_values[name] for t in tests]) for name in TESTS},
        np.array([t.reject for t in tests]),
        {name: band[:, 0] for name, band in bands.items()},
        {name: band[:, 1] for name, band in bands.items()},
        per_layer(lambda t, name: t.null.quantile(name, 0.5)),
        per_layer(lambda t, name: t.null.quantile(name, 0.95)),
        np.array(residual), residual_scale(lengths, d), comparison, note)


def _edge(value) -> str:
    """A band edge for the table (None, ±inf: unbounded)."""
    if value is None or not np.isfinite(value):
        return "none"
    return f"{value:.4g}"


def probe_table(numbers: dict) -> str:
    """The per-layer numbers of `ProbeResult.as_dict` (as written to probe.json) as a text table:
    a line on the sequences and the tested space, a header, one line per layer with the energy
    and kurtosis against the interval their tests accept, the smallest p-value, whether the
    moment prediction is within its sampling floor, the verdict and the attention residual ρ."""
    n_seq, space = numbers["sequences"], (
        f"on {numbers['dimension']} random directions of R^{numbers['hidden_size']}"
        if numbers["projected"] else f"in R^{numbers['hidden_size']}")
    level = numbers["alpha"] / len(TESTS)
    scale = numbers["residual_scale"]
    lines = [f"{numbers['model']}: {numbers['n_tokens']} Gaussian tokens in {n_seq} sequence"
             f"{'s' * (n_seq > 1)} of ≤ {max(numbers['lengths'])} (position limit "
             f"{numbers['position_limit']}), tested {space}; accepted intervals at "
             f"α/{len(TESTS)} = {level:.3g}; ρ_free = "
             f"{'none' if scale is None or not np.isfinite(scale) else f'{scale:.3f}'}"
             + (f" (figure: {numbers['figure']})" if "figure" in numbers else ""),
             f"{'layer':>5} {'energy':>9} {'accepts ≤':>9} {'kurtosis':>9} "
             f"{'accepts':>19} {'min p':>7} {'moments':>8} {'Gaussian?':>9} {'attn ρ':>7}"]
    stats, low, high = numbers["stats"], numbers["band_low"], numbers["band_high"]
    residual = [None, *numbers["attention_residual"]]
    prediction = numbers.get("prediction")
    for i, layer in enumerate(numbers["layers"]):
        p_min = min(numbers["p_values"][name][i] for name in numbers["p_values"])
        rho = "" if residual[i] is None or not np.isfinite(residual[i]) else f"{residual[i]:.3f}"
        moments = ("—" if prediction is None else
                   "ok" if prediction["consistent"][i] else "deviates")
        band = f"[{_edge(low['kurtosis'][i])}, {_edge(high['kurtosis'][i])}]"
        lines.append(f"{layer:>5} {stats['energy'][i]:>9.4g} {_edge(high['energy'][i]):>9} "
                     f"{stats['kurtosis'][i]:>9.4g} {band:>19} {p_min:>7.3f} {moments:>8} "
                     f"{'rejected' if numbers['reject'][i] else 'accepted':>9} {rho:>7}")
    return "\n".join(lines)


def plot_probe(result: ProbeResult):
    """Each statistic per layer against its accepted interval (`acceptance_band`, the same
    test and level as the verdict: a marker outside its bar ⇔ that statistic rejects), and the
    attention sublayers' pooled affine residual ρ against ρ_free. Returns the Figure (no
    pyplot)."""
    from ..app.plotting import new_figure

    fig, axes = new_figure(2, 4, figsize=(16, 7))
    for ax, name in zip(axes.flat, REPORTED, strict=False):
        stat, low, high = result.stats[name], result.band_low[name], result.band_high[name]
        # an unbounded side (below a one-sided test; too few null samples to reject) is drawn
        # past every statistic
        shown = np.concatenate([stat, result.null_median[name], low[np.isfinite(low)],
                                high[np.isfinite(high)]])
        margin = 0.05 * max(np.ptp(shown), np.finfo(float).tiny)
        ax.vlines(result.layers, np.where(np.isfinite(low), low, shown.min() - margin),
                  np.where(np.isfinite(high), high, shown.max() + margin), colors="0.8",
                  linewidths=10, label=f"accepted by the test at α/{len(TESTS)} = "
                  f"{result.level:.3g} (unbounded sides drawn to the edge)")
        ax.plot(result.layers, result.null_median[name], "_", color="0.4", ms=12,
                label="median of the Gaussian null")
        outside = (stat > high) | (stat < low)
        ax.plot(result.layers[~outside], stat[~outside], "o", color="C0",
                label="hidden states: accepted")
        ax.plot(result.layers[outside], stat[outside], "X", color="C3",
                label="hidden states: rejected by this statistic")
        ax.set_title(name + ("" if name in TESTS else " (not in the verdict)"))
        ax.set_xlabel("layer")
        ax.set_xticks(result.layers)
    ax = axes.flat[len(REPORTED)]
    ax.plot(result.layers[1:], result.attention_residual, "o-", color="C2",
            label="attention: affine-fit residual ρ")
    if np.isfinite(result.residual_scale):
        ax.axhline(result.residual_scale, color="k", ls="--", label="ρ_free (unrelated output)")
    ax.set_title("attention: affine-fit residual ρ")
    ax.set_xlabel("layer")
    ax.set_xticks(result.layers[1:])
    legend = axes.flat[len(REPORTED) + 1]
    legend.axis("off")
    handles = axes.flat[0].get_legend_handles_labels()
    extra = ax.get_legend_handles_labels()
    legend.legend(handles[0] + extra[0], handles[1] + extra[1], loc="center", fontsize=8)
    space = (f"in R^{result.hidden_size}" if not result.projected else
             f"on {result.dimension} random directions of R^{result.hidden_size}")
    n_seq = len(result.lengths)
    fig.suptitle(f"{result.model}: {result.n_tokens} Gaussian tokens in {n_seq} sequence"
                 f"{'s' * (n_seq > 1)} of ≤ {max(result.lengths)}, tested {space} "
                 f"(Bonferroni, α = {result.alpha:g}: a layer is rejected when any of "
                 f"{', '.join(TESTS)} is outside its bar)")
    return fig
