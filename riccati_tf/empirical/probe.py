"""Gaussian or real tokens through a real Transformer encoder, layer by layer (SPEC §7).

N tokens replace the output of the encoder's embedding module (a forward hook): by default
x_i ~ N(m, C) with (m, C) the moments of the model's embedding output over its embedding tables
(d = hidden size; N(0, I_d) on request or for a model that reads pixels), or real inputs (text,
token ids, hidden states; `encoders.loading.model_inputs`), which keep their own sequences. A
model with a position limit (config.max_position_embeddings, e.g. 512 for BERT) sees Gaussian
tokens as ⌈N / limit⌉ sequences of at most the limit (`encoders.sequences`), each its
own empirical measure; forward hooks capture every layer's hidden states h^ℓ and every attention
sublayer's input z and output a, and the hidden states of all sequences are pooled.

Gaussianity of each layer (`gaussianity`): the statistics are affine invariant and need n ≫ r
points in rank r to have power (with n ≈ d the whitened cloud of any distribution looks alike).
When n ≥ FULL_RATIO · d they are computed in R^d; otherwise on the projection x ↦ Θᵀx onto
k = PROJECTED_DIMENSION orthonormal random directions Θ (d × k, drawn from the seed and shared
by all layers): a Gaussian cloud projects to a Gaussian, and k ≪ n. Each is calibrated against
its Monte-Carlo null of the same (n, rank); `acceptance_band` gives each statistic's accepted
interval at α/len(TESTS) for that layer alone. Those statistics average over directions and miss
a single heavy-tailed coordinate, so every layer is also tested coordinate by coordinate and on
MARGINAL_DIRECTIONS random directions in R^d (`gaussianity.marginal_test`: skewness and excess
kurtosis against their exact finite-n nulls), which names heavy-tailed coordinates (massive
activations). The verdict corrects across everything: weighted Holm over all layers and all
p-values at family-wise level α, each layer weighing 1, half on its len(TESTS) multivariate
p-values (Monte-Carlo, with a fitted tail beyond the simulated range: `tail_p_value`) and half
on its 2(d + L) marginal ones; a layer is rejected when one of its adjusted p-values is ≤ α.
Gaussian input tokens are layer 0 itself: it is rejected with probability at most α.

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
layers from the inputs' moments (m, C)) is measured against the same pooled hidden states
(`encoders.comparison`) and stored as `ProbeResult.prediction` (None, with the reason, for a
family `extract` does not support).

Works with `transformers` encoders that have an `embeddings` module and a list of encoder
layers whose attention module's class name ends in "Attention" (`encoders.loading`: loading,
the layer list, the attention child and the capture; BertModel, RobertaModel, ModernBertModel,
DeiTModel), and with GPT-2-family decoders, whose tokens are placed where their word + position
embeddings go; their attention is causal, so they get no moment prediction (the mean-field flow
is of unmasked attention, `extraction.CAUSAL_REFUSAL`). torch and transformers are imported
inside the functions only.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidInputError
from ..state.validation import as_count, as_seed, as_time
from .defaults import DEFAULT_TOKENS, MAX_TOKENS
from .encoders.loading import MAX_HIDDEN, require_transformers
from .encoders.sequences import Inputs
from .gaussianity import (
    MAX_NULL,
    MIN_MARGINAL_N,
    TESTS,
    acceptance_band,
    holm,
    marginal_test,
    normality_test,
    tail_p_value,
)
from .gaussianity.distances import directions
from .gaussianity.normality import check_alpha

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .encoders.comparison import Comparison

__all__ = ["DEFAULT_TOKENS", "FAMILIES", "FULL_RATIO", "MAX_TOKENS", "PROJECTED_DIMENSION",
           "REPORTED", "ProbeResult", "probe", "tiny_model"]

#: statistics reported per layer (TESTS plus the relative moment errors)
REPORTED = (*TESTS, "third", "fourth")
#: the two-sided test among TESTS (as in `gaussianity.normality_test`)
TWO_SIDED = ("kurtosis",)
FAMILIES = ("deit", "modernbert", "bert", "roberta")
#: the statistics are computed in R^d when n ≥ FULL_RATIO · d, else on PROJECTED_DIMENSION
#: random directions (module docstring)
FULL_RATIO = 50
PROJECTED_DIMENSION = 8
#: bounds of `tiny_model`: hidden size, encoder layers and attention heads
MAX_MODEL_LAYERS = 64
MAX_MODEL_HEADS = 64


@dataclass(frozen=True, eq=False)
class ProbeResult:
    """Per-layer Gaussianity of hidden states for Gaussian input tokens, the result of `probe`.

    Index 0 of every per-layer array is the Gaussian input at the embedding output, index ℓ
    the output of layer ℓ. The attention residual ρ measures how far each attention sublayer is
    from the affine map z ↦ V(m + Σ B z) that SPEC §2 predicts on a Gaussian cloud.

    Parameters
    ----------
    model : str
        The class name of the model.
    n_tokens : int
        The Gaussian tokens fed to it.
    hidden_size : int
        Its hidden size d.
    seed : int
        The seed of the tokens, the projection, the directions and the null.
    alpha : float
        The level of each layer's test.
    lengths : tuple of int
        The sequences the n_tokens were cut into.
    position_limit : int or None
        The model's position limit (None without one).
    dimension : int
        The k of the tested projection (= hidden_size when projected is False).
    projected : bool
        Whether the statistics were computed on k random directions (else whitened in R^d).
    layers : (L+1,) ndarray of int
        0, 1, ..., L.
    rank : (L+1,) ndarray of int
        The rank of each layer's whitened cloud.
    stats : dict of str to (L+1,) ndarray
        The statistics of REPORTED per layer.
    p_values : dict of str to (L+1,) ndarray
        The Monte-Carlo p-values of TESTS per layer.
    reject : (L+1,) ndarray of bool
        Whether the layer is rejected by the weighted Holm procedure over all layers and all
        p-values (TESTS and the marginal tests; module docstring) at family-wise level alpha.
    band_low, band_high : dict of str to (L+1,) ndarray
        The accepted interval of each statistic (`acceptance_band`; −inf below a one-sided
        statistic; for "third" and "fourth", which the decision does not use, the interval a
        test at the same level would accept).
    null_median, null_q95 : dict of str to (L+1,) ndarray
        The median and 95 % quantile of the Monte-Carlo null of the same n and rank.
    attention_residual : (L,) ndarray of float
        The pooled relative residual ρ of the affine fits of each attention sublayer (NaN when
        a layer has no attention child found or a sequence is too short for the fit).
    residual_scale : float
        ρ_free, the value of ρ for an output unrelated to its input.
    prediction : Comparison or None
        The moment prediction measured against the hidden states, None when the family is not
        supported or it was not requested.
    prediction_note : str
        Why prediction is None ("" otherwise).
    inputs : Inputs, optional
        The tokens fed (text, token ids, hidden states or Gaussian; their source and notes).
    adjusted_p : (L+1,) ndarray, optional
        The smallest Holm-adjusted p-value of each layer (reject ⇔ adjusted_p ≤ alpha).
    max_kurtosis : (L+1,) ndarray, optional
        The largest excess kurtosis of a coordinate (Gaussian: about ±5√(24/n)).
    heavy_tailed : tuple of tuple of int, optional
        Per layer, the coordinates rejected as heavy-tailed (`marginal_test`), by decreasing
        kurtosis.
    n_directions : int, optional
        The random directions of the marginal tests (0: not run, n < MIN_MARGINAL_N).

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field (the result is frozen).

    See Also
    --------
    probe : produces it.
    riccati_tf.empirical.gaussianity.normality_test : the per-layer test.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".
    .. [2] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    >>> from riccati_tf.empirical.probe import probe, tiny_model
    >>> result = probe(tiny_model("bert", hidden_size=8, n_heads=2, n_layers=1),
    ...                n_tokens=128, n_null=100)
    >>> round(result.level, 4), result.as_dict()["layers"], result.prediction_note
    (0.0125, [0, 1], '')
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
    inputs: Inputs | None = None
    adjusted_p: np.ndarray | None = None
    max_kurtosis: np.ndarray | None = None
    heavy_tailed: tuple[tuple[int, ...], ...] = ()
    n_directions: int = 0

    @property
    def level(self) -> float:
        """The per-statistic level α / len(TESTS) of the Bonferroni decision."""
        return self.alpha / len(TESTS)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready numbers (lists of floats; ±inf and NaN are left to `to_jsonable`)."""
        def listed(d: dict[str, np.ndarray]) -> dict[str, list[Any]]:
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
                "prediction_note": self.prediction_note,
                "inputs": None if self.inputs is None else self.inputs.to_json(),
                "correction": "holm", "n_directions": self.n_directions,
                "adjusted_p": (None if self.adjusted_p is None
                               else np.asarray(self.adjusted_p).tolist()),
                "max_kurtosis": (None if self.max_kurtosis is None
                                 else np.asarray(self.max_kurtosis).tolist()),
                "heavy_tailed": [list(c) for c in self.heavy_tailed]}


def tiny_model(family: str = "deit", *, hidden_size: int = 32, n_layers: int = 2,
               n_heads: int = 2, initializer_range: float = 0.02, seed: int = 0) -> Any:
    """A randomly initialised encoder of the given family, for tests and demonstrations.

    Intermediate size 4·hidden_size; DeiT and ModernBERT (8192 positions) in float32; BERT and
    RoBERTa (512 positions) in float64 (`encoders.tiny.tiny_encoder`). No download.

    Parameters
    ----------
    family : {"deit", "modernbert", "bert", "roberta"}, optional
        The model family (FAMILIES; default "deit").
    hidden_size : int, optional
        The hidden size d, at most MAX_HIDDEN and a multiple of n_heads (default 32).
    n_layers : int, optional
        Encoder layers, at most MAX_MODEL_LAYERS (default 2).
    n_heads : int, optional
        Attention heads, at most MAX_MODEL_HEADS (default 2).
    initializer_range : float, optional
        The standard deviation of the weights, > 0 (0.02 in the published models).
    seed : int, optional
        The torch seed of the weights (default 0).

    Returns
    -------
    transformers.PreTrainedModel
        The encoder (DeiTModel, ModernBertModel, BertModel or RobertaModel) in evaluation mode.

    Raises
    ------
    InvalidInputError
        For an unknown family, a count outside its bound, hidden_size not a multiple of
        n_heads, an odd ModernBERT head size (rotary embeddings), or a non-positive
        initializer_range.
    ImportError
        Without torch and transformers (the install command in the message).

    See Also
    --------
    probe : the per-layer Gaussianity of a model.
    riccati_tf.empirical.encoders.tiny.tiny_encoder : float64 encoders of every family.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> from riccati_tf.empirical.probe import tiny_model
    >>> model = tiny_model("deit", hidden_size=8, n_heads=2, n_layers=1)
    >>> type(model).__name__, model.config.hidden_size, model.config.num_hidden_layers
    ('DeiTModel', 8, 1)
    """
    require_transformers()
    import torch
    from transformers import DeiTConfig, DeiTModel, ModernBertConfig, ModernBertModel

    if not isinstance(family, str) or family not in FAMILIES:
        raise InvalidInputError(f"family must be one of {FAMILIES}, got {family!r}")
    hidden_size = as_count("hidden_size", hidden_size, maximum=MAX_HIDDEN,
                                   limit="probe.MAX_HIDDEN")
    n_layers = as_count("n_layers", n_layers, maximum=MAX_MODEL_LAYERS,
                                limit="probe.MAX_MODEL_LAYERS")
    n_heads = as_count("n_heads", n_heads, maximum=MAX_MODEL_HEADS,
                               limit="probe.MAX_MODEL_HEADS")
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
                     limit="probe.MAX_TOKENS")
    as_seed("seed", seed)
    as_count("n_null", n_null, maximum=MAX_NULL, limit="gaussianity.MAX_NULL")
    check_alpha(alpha)


def tested_dimension(n_tokens: int, d: int) -> int:
    """k: d when n_tokens ≥ FULL_RATIO · d (whitened in R^d), else min(PROJECTED_DIMENSION, d)
    random directions (module docstring)."""
    return d if n_tokens >= FULL_RATIO * d else min(PROJECTED_DIMENSION, d)


def projection(d: int, k: int, seed: int) -> NDArray[np.float64] | None:
    """Θ (d × k) with orthonormal columns spanning k random directions drawn from seed (None for
    k = d: no projection)."""
    seed = as_seed("seed", seed)
    return None if k == d else np.linalg.qr(directions(d, k, seed))[0]


def _prediction(model: Any, hidden: list[np.ndarray], lengths: tuple[int, ...],
                limit: int | None, *, seed: int, alpha: float, inputs: Inputs
                ) -> tuple[Comparison | None, str]:
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
    return measure(hidden, predict_moments(encoder, inputs.mean, inputs.cov), lengths=lengths,
                   position_limit=limit, model=type(model).__name__, seed=seed,
                   alpha=alpha), ""


def probe(model: Any, *, n_tokens: int = DEFAULT_TOKENS, seed: int = 0, n_null: int = 200,
          alpha: float = 0.05, predict: bool = True, inputs: Inputs | None = None
          ) -> ProbeResult:
    """Gaussianity of each layer's hidden states for Gaussian tokens fed at the embedding output.

    Tokens x_i ~ N(0, I_d) replace the embedding output, cut into sequences within the model's
    position limit; every layer's pooled hidden states are tested with `normality_test` (in
    R^d when n_tokens ≥ FULL_RATIO · d, else on PROJECTED_DIMENSION random directions), every
    attention sublayer is fitted by an affine map per sequence (the relative residual ρ,
    against ρ_free), and the Gaussian moment prediction of `encoders.predict_moments` is set
    against the hidden states (module docstring).

    Parameters
    ----------
    model : transformers.PreTrainedModel
        An encoder with an `embeddings` module and a list of layers (e.g. from `load_model`).
    n_tokens : int, optional
        All tokens, 2 ≤ n_tokens ≤ MAX_TOKENS, more than k + 1 for k tested dimensions
        (default DEFAULT_TOKENS).
    seed : int, optional
        Fixes the tokens, the projection, the sliced-W2 directions and the null (default 0).
    n_null : int, optional
        Gaussian samples in each Monte-Carlo null, at most MAX_NULL (default 200).
    alpha : float, optional
        The level of each layer's test, in (0, 1) (default 0.05).
    predict : bool, optional
        Also measure the moment prediction (`ProbeResult.prediction`; default True).
    inputs : Inputs, optional
        The tokens to feed (`encoders.loading.model_inputs`: text, token ids, hidden states,
        or Gaussian tokens); n_tokens is then theirs. Default: n_tokens Gaussian tokens
        matched to the moments of the model's embedding output (`model_inputs`).

    Returns
    -------
    ProbeResult
        The per-layer statistics, p-values, verdicts, accepted intervals, attention residuals
        and the moment comparison.

    Raises
    ------
    InvalidInputError
        If the model has no integer config.hidden_size in [1, MAX_HIDDEN], an argument is
        outside its bound, n_tokens ≤ k + 1, the model has no `embeddings` module or layer list,
        or it fails on a sequence.
    ImportError
        Without torch.

    See Also
    --------
    ProbeResult : the fields.
    tiny_model : a small random encoder to probe.
    riccati_tf.empirical.encoders.compare : the moment comparison alone.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".
    .. [2] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    >>> from riccati_tf.empirical.probe import probe, tiny_model
    >>> model = tiny_model("bert", hidden_size=8, n_heads=2, n_layers=1)
    >>> result = probe(model, n_tokens=128, n_null=100)
    >>> result.lengths, result.dimension, result.projected
    ((128,), 8, False)

    The input is accepted as Gaussian; the output of layer 1, which ends in a LayerNorm, is
    rejected (at d = 8 the normalised tokens lie near a sphere), while its mean and covariance
    agree with the moment prediction within their sampling floors:

    >>> result.reject.tolist(), result.prediction.consistent.tolist()
    ([False, True], [True, True])

    On a Gaussian cloud attention is affine (SPEC §2): ρ is far below ρ_free.

    >>> bool(result.attention_residual[0] < 0.01 < 0.9 < result.residual_scale)
    True
    """
    from .encoders import position_limit
    from .encoders.comparison import capture_sequences, pooled_hidden
    from .encoders.loading import model_inputs

    config = getattr(model, "config", None)
    d = getattr(config, "hidden_size", None)
    if not isinstance(d, int) or not 1 <= d <= MAX_HIDDEN:
        raise InvalidInputError(f"model must be a transformers encoder with an integer "
                                f"config.hidden_size in [1, {MAX_HIDDEN}], got {d!r}")
    if inputs is not None:
        if not isinstance(inputs, Inputs) or inputs.tokens.shape[1] != d:
            raise InvalidInputError(f"inputs must be Inputs of dimension {d} (model_inputs)")
        n_tokens = inputs.n_tokens
    check_probe_arguments(n_tokens=n_tokens, seed=seed, n_null=n_null, alpha=alpha)
    k = tested_dimension(n_tokens, d)
    if n_tokens <= k + 1:
        raise InvalidInputError(f"n_tokens = {n_tokens} must exceed {k + 1}: the statistics "
                                f"in {k} dimensions need more points than dimensions + 1")
    limit = position_limit(model)
    if inputs is None:
        inputs = model_inputs(model, n_tokens=n_tokens, seed=seed)
    lengths, tokens = inputs.lengths, inputs.tokens
    captures = capture_sequences(model, tokens, lengths)
    hidden = pooled_hidden(captures)
    theta = projection(d, k, seed)
    tests = [normality_test(h if theta is None else h @ theta, alpha=alpha, n_null=n_null,
                            seed=seed) for h in hidden]
    adjusted, marginals = _corrected(tests, hidden, alpha=alpha, seed=seed)

    def per_layer(fn: Callable[[Any, str], Any]) -> dict[str, np.ndarray]:
        return {name: np.array([fn(t, name) for t in tests]) for name in REPORTED}

    bands = per_layer(lambda t, name: acceptance_band(t.null.values[name], alpha,
                                                      name in TWO_SIDED, len(TESTS)))
    residual = []
    for i in range(len(hidden) - 1):
        pairs = [(c[1][i], c[2][i]) for c in captures]
        residual.append(np.nan if pairs[0][0] is None else
                        pooled_affine_residual(*map(list, zip(*pairs, strict=True))))
    comparison, note = ((None, "not requested") if not predict else
                        _prediction(model, hidden, lengths, limit, seed=seed, alpha=alpha,
                                    inputs=inputs))
    return ProbeResult(
        type(model).__name__, n_tokens, d, seed, alpha, lengths, limit, k, theta is not None,
        np.arange(len(hidden)), np.array([t.stats.rank for t in tests]),
        per_layer(lambda t, name: getattr(t.stats, name)),
        {name: np.array([t.p_values[name] for t in tests]) for name in TESTS},
        adjusted <= alpha,
        {name: band[:, 0] for name, band in bands.items()},
        {name: band[:, 1] for name, band in bands.items()},
        per_layer(lambda t, name: t.null.quantile(name, 0.5)),
        per_layer(lambda t, name: t.null.quantile(name, 0.95)),
        np.array(residual), residual_scale(lengths, d), comparison, note, inputs,
        adjusted_p=adjusted, max_kurtosis=np.array(
            [np.nan if m is None else np.nanmax(m.kurtosis["coordinate"], initial=-np.inf)
             for m in marginals]),
        heavy_tailed=tuple(() if m is None else m.heavy_tailed for m in marginals),
        n_directions=0 if marginals[0] is None else marginals[0].kurtosis["direction"].size)


def _corrected(tests: list[Any], hidden: list[np.ndarray], *, alpha: float, seed: int
               ) -> tuple[NDArray[np.float64], list[Any]]:
    """(the smallest Holm-adjusted p-value of each layer, each layer's `marginal_test` or None)
    with Holm's procedure over every layer's len(TESTS) Monte-Carlo p-values and its marginal
    p-values together (module docstring)."""
    marginals = [marginal_test(h, alpha=alpha, seed=seed)
                 if h.shape[0] >= MIN_MARGINAL_N and np.ptp(h, axis=0).max() > 0 else None
                 for h in hidden]
    blocks, weights = [], []
    for t, m in zip(tests, marginals, strict=True):
        mc = [tail_p_value(t.null.values[name], getattr(t.stats, name), name in TWO_SIDED)
              for name in TESTS]
        rest = [] if m is None else [v.ravel() for v in m.p_values.values()]
        size = sum(v.size for v in rest)
        blocks.append(np.concatenate([mc, *rest]))
        # each layer weighs 1; half of it on the multivariate tests, half on the marginal ones
        share = 0.5 if size else 1.0
        weights.append(np.concatenate([np.full(len(TESTS), share / len(TESTS)),
                                       np.full(size, 0.5 / max(size, 1))]))
    flat = holm(np.concatenate(blocks), np.concatenate(weights))
    cuts = np.cumsum([b.size for b in blocks])[:-1]
    return np.array([np.nanmin(b) for b in np.split(flat, cuts)]), marginals


def _edge(value: float | None, side: int = 1) -> str:
    """A band edge for the table: an unbounded one (None, ±inf) is ∞ on the upper side
    (side = 1) and −∞ on the lower (side = −1)."""
    if value is None or not np.isfinite(value):
        return "∞" if side > 0 else "−∞"
    return f"{value:.4g}"


def probe_table(numbers: dict[str, Any]) -> str:
    """The per-layer numbers of `ProbeResult.as_dict` (as written to probe.json) as a text table:
    a line on the sequences and the tested space, a header, one line per layer with the energy
    and kurtosis against the interval their tests accept, the layer's smallest Holm-adjusted
    p-value (the verdict rejects when it is ≤ α; the smallest raw p-value for numbers without
    it), whether the moment prediction is within its sampling floor, the verdict and the
    attention residual ρ."""
    n_seq, space = numbers["sequences"], (
        f"on {numbers['dimension']} random directions of R^{numbers['hidden_size']}"
        if numbers["projected"] else f"in R^{numbers['hidden_size']}")
    level = numbers["alpha"] / len(TESTS)
    scale = numbers["residual_scale"]
    fed = (numbers.get("inputs") or {}).get("kind", "gaussian")
    lines = [f"{numbers['model']}: {numbers['n_tokens']} "
             f"{'Gaussian tokens' if fed == 'gaussian' else fed + ' tokens'} in {n_seq} sequence"
             f"{'s' * (n_seq > 1)} of ≤ {max(numbers['lengths'])} ("
             + ("no position limit" if numbers["position_limit"] is None else
                f"position limit {numbers['position_limit']}")
             + f"), tested {space}; accepted intervals at "
             f"α/{len(TESTS)} = {level:.3g}; ρ_free = "
             f"{'none' if scale is None or not np.isfinite(scale) else f'{scale:.3f}'}"
             + (f" (figure: {numbers['figure']})" if "figure" in numbers else ""),
             *([f"inputs: {numbers['inputs']['description']}"] if numbers.get("inputs") else []),
             f"{'layer':>5} {'energy':>9} {'accepts ≤':>9} {'kurtosis':>9} "
             f"{'accepts':>19} {'Holm p':>7} {'moments':>8} {'Gaussian?':>9} {'attn ρ':>7}"]
    stats, low, high = numbers["stats"], numbers["band_low"], numbers["band_high"]
    residual = [None, *numbers["attention_residual"]]
    prediction = numbers.get("prediction")
    for i, layer in enumerate(numbers["layers"]):
        adjusted = numbers.get("adjusted_p")
        p_min = (adjusted[i] if adjusted is not None else
                 min(numbers["p_values"][name][i] for name in numbers["p_values"]))
        rho = "" if residual[i] is None or not np.isfinite(residual[i]) else f"{residual[i]:.3f}"
        moments = ("—" if prediction is None else
                   "ok" if prediction["consistent"][i] else "deviates")
        band = f"[{_edge(low['kurtosis'][i], -1)}, {_edge(high['kurtosis'][i])}]"
        lines.append(f"{layer:>5} {stats['energy'][i]:>9.4g} {_edge(high['energy'][i]):>9} "
                     f"{stats['kurtosis'][i]:>9.4g} {band:>19} {p_min:>7.3f} {moments:>8} "
                     f"{'rejected' if numbers['reject'][i] else 'accepted':>9} {rho:>7}")
    if all(r is None or not np.isfinite(r) for r in residual[1:]):
        lines.append(f"attn ρ: none — the shortest sequence has {min(numbers['lengths'])} "
                     f"tokens, not more than d + 1 = {numbers['hidden_size'] + 1}: an affine fit "
                     f"to it is exact, so there is no residual to measure")
    heavy = numbers.get("heavy_tailed") or []
    if any(heavy):
        lines.append("heavy-tailed coordinates (rejected by the marginal test, by decreasing "
                     "kurtosis): " + "; ".join(f"layer {layer} {list(c)}" for layer, c in
                                                zip(numbers["layers"], heavy, strict=False) if c))
    notes = (numbers.get("inputs") or {}).get("notes") or []
    lines += [f"note: {n}" for n in notes]
    edges = [*high["energy"], *low["kurtosis"], *high["kurtosis"]]  # the edges shown
    if any(v is None or not np.isfinite(v) for v in edges):
        lines.append(f"∞: too few null samples for the test at α/{len(TESTS)} to reject on that "
                     f"side (a larger n_null bounds it)")
    return "\n".join(lines)


def plot_probe(result: ProbeResult) -> Figure:
    """Each statistic per layer against its accepted interval (`acceptance_band`, the same
    test and level as the verdict: a marker outside its bar ⇔ that statistic rejects), and the
    attention sublayers' pooled affine residual ρ against ρ_free. Returns the Figure (no
    pyplot)."""
    from ..io.figures import new_figure

    fig, axes = new_figure(4, 2, figsize=(11, 15))  # two columns: legible at a page's width
    fig.set_layout_engine("constrained")  # titles, labels and the suptitle kept apart
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
    legend.legend(handles[0] + extra[0], handles[1] + extra[1], loc="center", fontsize=10)
    space = (f"in R^{result.hidden_size}" if not result.projected else
             f"on {result.dimension} random directions of R^{result.hidden_size}")
    n_seq = len(result.lengths)
    fed = "Gaussian" if result.inputs is None or not result.inputs.real else result.inputs.kind
    fig.suptitle(textwrap.fill(
        f"{result.model}: {result.n_tokens} {fed} tokens in {n_seq} sequence"
        f"{'s' * (n_seq > 1)} of ≤ {max(result.lengths)}, tested {space} (Bonferroni, "
        f"α = {result.alpha:g}: a layer is rejected when any of {', '.join(TESTS)} is outside "
        f"its bar)", 80), fontsize=13)
    return fig
