"""The predicted moments against the model itself (SPEC §7).

N tokens x_i ~ N(m_0, Σ_0) are placed at the embedding output of the model (cut into sequences
within its position limit, `sequences`), and every layer's hidden states are captured. For each
layer ℓ the measured mean m̂ and covariance Ĉ (unbiased) are compared with the prediction
(m_ℓ, Σ_ℓ) of `predict_moments`:

    mean error  ‖m̂ − m_ℓ‖ / √tr Σ_ℓ,      covariance error  ‖Ĉ − Σ_ℓ‖_F / ‖Σ_ℓ‖_F,

in R^d and on k ≪ n random orthonormal directions Θ (d × k), where the same errors use Θᵀm and
ΘᵀΣΘ. Next to each error stands its sampling floor: the same distance for an exactly Gaussian
cloud N(m_ℓ, Σ_ℓ) of the same n, simulated (n_sim clouds projected on Θ, n_sim_full clouds in
R^d). A layer is `consistent` when both projected errors are within the (1 − α/2) quantile of
their floors: in k dimensions n ≫ k and the test has power against O(√(k/n)) deviations that
the d-dimensional errors (dominated by sampling noise of order √(d/n)) cannot see.

Against baselines (`Baselines`). Each layer ℓ ≥ 1 is predicted in two modes, "one_layer" (from
the measured moments (m̂_{ℓ−1}, Ĉ_{ℓ−1}) of the previous layer) and "chained" (from the input
moments (m_0, Σ_0) onwards), by four methods:

- prediction:   the Gaussian closures of `predict_moments` (one layer: `layer_moments` at the
  measured moments);
- no_change:    (m_ℓ, Σ_ℓ) = (m_{ℓ−1}, Σ_{ℓ−1});
- no_attention: the layer with its attention sublayer removed (heads and output bias), pushed
  through the same closures;
- oracle:       n tokens of the Gaussian N(m_{ℓ−1}, Σ_{ℓ−1}) in sequences of the measured
  lengths, pushed through the real layer and moment-matched: the best any Gaussian
  moment-matching can do.

Each error is normalised by the measured moments,

    cov error  e = ‖Ĉ_ℓ − Σ_ℓ‖_F / ‖Ĉ_ℓ‖_F,    mean error  ‖m̂_ℓ − m_ℓ‖ / √tr Ĉ_ℓ,

and reported raw and floor-corrected, √max(e² − f², 0): for an error that is a bias plus an
independent sampling error, E e² = bias² + f², with f² the mean square of the same error of an
exact Gaussian sample of the measured moments at the same n (one sample for the three
deterministic methods; two independent samples for the oracle, which is itself sampled). The
top-k eigenvalues and the trace of every predicted Σ_ℓ stand beside the measured ones, and the
validity map of the attention formula (`validity`) says where the N → ∞ limit does not apply.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ...errors import InvalidInputError
from ...state.params import Gaussian
from ...state.validation import as_count, as_covariance, as_seed, as_time, as_vector
from .closures import GATED_SAMPLES
from .extraction import extract, position_limit
from .factors import Encoder, EncoderLayer
from .floors import _baseline_floor, _errors, _floor, _relative_errors
from .forward import layer_forward
from .hermite import DEFAULT_TERMS
from .propagation import MomentPrediction, layer_moments, predict_moments
from .sequences import Inputs, sequence_lengths, split
from .validity import ValidityMap, validity_map
from .verdicts import NOT_APPLICABLE_RATIO, layer_verdict

__all__ = ["DEFAULT_DIRECTIONS", "DEFAULT_SIMS", "DEFAULT_SIMS_FULL", "DEFAULT_TOP", "METHODS",
           "MODES", "Baselines", "Comparison", "MethodErrors", "compare", "measure"]

#: random directions of the projected comparison
DEFAULT_DIRECTIONS = 4
#: simulated Gaussian clouds for the projected floors and for the d-dimensional floors
DEFAULT_SIMS = 200
DEFAULT_SIMS_FULL = 10
#: eigenvalues of the predicted and measured covariances reported per layer
DEFAULT_TOP = 5
#: the prediction and its baselines (module docstring)
METHODS = ("prediction", "no_change", "no_attention", "oracle")
#: one layer from the measured previous layer; chained from the input onwards
MODES = ("one_layer", "chained")


@dataclass(frozen=True, eq=False)
class MethodErrors:
    """The errors of one method against the measured moments, per mode and layer ℓ = 0..L.

    Row 0 of every array is the mode "one_layer" (each layer from the measured moments of the
    previous one), row 1 "chained" (from the input moments onwards); column ℓ = 0 is the input
    itself (both modes predict the input moments there).

    Parameters
    ----------
    cov : (2, L+1) ndarray
        ‖Ĉ_ℓ − Σ_ℓ‖_F / ‖Ĉ_ℓ‖_F.
    cov_corrected : (2, L+1) ndarray
        √max(cov² − f², 0) with f the method's floor.
    mean : (2, L+1) ndarray
        ‖m̂_ℓ − m_ℓ‖ / √tr Ĉ_ℓ.
    mean_corrected : (2, L+1) ndarray
        The same with the floor subtracted.
    top : (2, L+1, k) ndarray
        The k largest eigenvalues of the predicted Σ_ℓ.
    trace : (2, L+1) ndarray
        tr Σ_ℓ.

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field.

    See Also
    --------
    Baselines : the four methods and the measured spectrum.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders.comparison import MethodErrors
    >>> z = np.zeros((2, 3))
    >>> errors = MethodErrors(z, z, z, z, np.zeros((2, 3, 1)), z)
    >>> sorted(errors.to_json()), sorted(errors.to_json()["chained"])
    (['chained', 'one_layer'], ['cov', 'cov_corrected', 'mean', 'mean_corrected', 'top', 'trace'])
    """

    cov: np.ndarray
    cov_corrected: np.ndarray
    mean: np.ndarray
    mean_corrected: np.ndarray
    top: np.ndarray
    trace: np.ndarray

    def to_json(self) -> dict[str, Any]:
        """{mode: {quantity: per-layer list}} (NaN where a method could not be run)."""
        return {mode: {name: _finite_or_none(getattr(self, name)[i])
                       for name in ("cov", "cov_corrected", "mean", "mean_corrected", "top",
                                    "trace")}
                for i, mode in enumerate(MODES)}


def _finite_or_none(a: np.ndarray) -> Any:
    """a.tolist() with NaN as None (JSON has no NaN)."""
    return np.where(np.isfinite(a), a, np.array(None, dtype=object)).tolist()


@dataclass(frozen=True, eq=False)
class Baselines:
    """The prediction and the baselines against the measured moments (module docstring).

    Parameters
    ----------
    methods : dict of str to MethodErrors
        The errors of "prediction", "no_change", "no_attention" and "oracle" (METHODS).
    measured_top : (L+1, k) ndarray
        The k largest eigenvalues of the measured Ĉ_ℓ.
    measured_trace : (L+1,) ndarray
        tr Ĉ_ℓ.
    floor : dict of str to (L+1,) ndarray
        The RMS errors of exact Gaussian samples of the measured moments at the same n: "cov"
        and "mean" of one sample against the moments (the floor of the deterministic methods),
        "cov_two" and "mean_two" of one sample against another (the oracle's floor).
    oracle_layers : str
        What the oracle pushed its samples through: "model" (the model's own layer modules) or
        "factors" (`layer_forward` on the extracted factors; for a position-free extraction
        that is the position-free layer, not the model's).

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field.

    See Also
    --------
    Comparison : carries it.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> from riccati_tf.empirical.encoders import compare
    >>> from riccati_tf.empirical.encoders.tiny import tiny_encoder
    >>> model = tiny_encoder("bert", hidden_size=8, n_heads=2, n_layers=1, max_positions=64)
    >>> b = compare(model, n_tokens=256, n_sim=50, n_sim_full=2).baselines
    >>> sorted(b.methods), b.methods["oracle"].cov.shape, b.oracle_layers
    (['no_attention', 'no_change', 'oracle', 'prediction'], (2, 2), 'model')
    """

    methods: dict[str, MethodErrors]
    measured_top: np.ndarray
    measured_trace: np.ndarray
    floor: dict[str, np.ndarray]
    oracle_layers: str

    def to_json(self) -> dict[str, Any]:
        """The four methods under their names (METHODS), the measured spectrum and the floors."""
        return {**{name: self.methods[name].to_json() for name in METHODS},
                "measured": {"top": _finite_or_none(self.measured_top),
                             "trace": _finite_or_none(self.measured_trace)},
                "floor": {k: _finite_or_none(v) for k, v in self.floor.items()},
                "oracle_layers": self.oracle_layers}

    def table(self) -> str:
        """The covariance errors per layer, raw and floor-corrected, and the spectra."""
        lines = ["covariance error ‖Ĉ_ℓ − Σ_ℓ‖_F / ‖Ĉ_ℓ‖_F per layer, raw (floor-corrected "
                 "√(e² − f²)); f = RMS error of an exact Gaussian sample of the measured "
                 "moments at the same n (the oracle's: of two samples)"]
        for i, mode in enumerate(MODES):
            title = ("one layer (from the measured layer ℓ − 1)" if mode == "one_layer"
                     else "chained (from the input onwards)")
            rows = [["layer", "floor", "floor(2)", *METHODS, "best"]]
            for ell in range(1, self.measured_trace.size):
                values = {m: (self.methods[m].cov[i, ell], self.methods[m].cov_corrected[i, ell])
                          for m in METHODS}
                finite = {m: v[0] for m, v in values.items() if np.isfinite(v[0])}
                rows.append([str(ell), f"{self.floor['cov'][ell]:.3g}",
                             f"{self.floor['cov_two'][ell]:.3g}",
                             *(f"{v[0]:.3g} ({v[1]:.3g})" if np.isfinite(v[0]) else "—"
                               for v in values.values()),
                             min(finite, key=lambda m: finite[m]) if finite else "—"])
            lines += [f"{title}:", _aligned(rows)]
        k = self.measured_top.shape[1]
        rows = [["layer", "tr measured", *(f"tr {m}" for m in METHODS),
                 f"λ1..λ{k} measured", "λ1..λ" + str(k) + " prediction"]]
        for ell in range(self.measured_trace.size):
            rows.append([str(ell), f"{self.measured_trace[ell]:.4g}",
                         *(f"{self.methods[m].trace[0, ell]:.4g}/"
                           f"{self.methods[m].trace[1, ell]:.4g}" for m in METHODS),
                         " ".join(f"{v:.3g}" for v in self.measured_top[ell]),
                         " ".join(f"{v:.3g}" for v in self.methods["prediction"].top[1, ell])])
        lines += ["trace of Σ_ℓ (one layer/chained) and the top eigenvalues (prediction "
                  "chained):", _aligned(rows)]
        return "\n".join(lines)


def _aligned(rows: list[list[str]]) -> str:
    widths = [max(len(r[j]) for r in rows) for j in range(len(rows[0]))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                     for r in rows)


@dataclass(frozen=True, eq=False)
class Comparison:
    """Measured against predicted moments per layer ℓ = 0..L (module docstring).

    The errors are ‖m̂ − m_ℓ‖ / √tr Σ_ℓ ("mean") and ‖Ĉ − Σ_ℓ‖_F / ‖Σ_ℓ‖_F ("cov") in R^d,
    and the same on k random directions ("mean_k", "cov_k"); each stands next to its sampling
    floor, the same distance for an exactly Gaussian cloud N(m_ℓ, Σ_ℓ) of the same size.

    Parameters
    ----------
    model : str
        The name of the model.
    n_tokens : int
        The tokens of all sequences.
    lengths : tuple of int
        The lengths of the sequences the tokens were cut into.
    position_limit : int or None
        The model's position limit.
    position_free : bool
        Whether the prediction used the position-free part of the attention.
    seed : int
        The seed of the directions and the floors.
    alpha : float
        The level: the floors' upper quantile is 1 − α/2.
    directions : int
        The number k of random directions.
    errors : dict of str to (L+1,) ndarray
        The errors "mean", "cov", "mean_k", "cov_k" per layer.
    floors : dict of str to (L+1, 2) ndarray
        Their floors per layer: (median, 1 − α/2 quantile).
    consistent : (L+1,) ndarray of bool
        Both projected errors are within the 1 − α/2 quantile of their floors.
    prediction : MomentPrediction
        The prediction measured.
    baselines : Baselines or None, optional
        The prediction one layer at a time and chained against no_change, no_attention and
        oracle, normalised by the measured moments (None when the layers were not available).
    validity : ValidityMap or None, optional
        Where the N → ∞ attention formula applies to the measured sequences (None as above).

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field.

    See Also
    --------
    compare : produces it.
    plot_comparison : its figure.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> from riccati_tf.empirical.encoders import compare
    >>> from riccati_tf.empirical.encoders.tiny import tiny_encoder
    >>> model = tiny_encoder("bert", hidden_size=8, n_heads=2, n_layers=1, max_positions=64)
    >>> result = compare(model, n_tokens=256, n_sim=50, n_sim_full=2)
    >>> sorted(result.errors), result.floors["cov_k"].shape
    (['cov', 'cov_k', 'mean', 'mean_k'], (2, 2))
    >>> print(result.summary().splitlines()[0])
    BertModel: 256 tokens in 4 sequences of length 64–64 (position limit 64); floors at the
    0.975 quantile
    """

    model: str
    n_tokens: int
    lengths: tuple[int, ...]
    position_limit: int | None
    position_free: bool
    seed: int
    alpha: float
    directions: int
    errors: dict[str, np.ndarray]
    floors: dict[str, np.ndarray]
    consistent: np.ndarray
    prediction: MomentPrediction
    baselines: Baselines | None = None
    validity: ValidityMap | None = None

    def to_json(self) -> dict[str, Any]:
        """JSON-ready numbers: the projected test ("errors", "floors", "consistent"), the
        methods under their names ("prediction", "no_change", "no_attention", "oracle", with
        "measured" and "floor"; absent without baselines) and "validity"."""
        out = {"model": self.model, "n_tokens": self.n_tokens, "sequences": len(self.lengths),
               "lengths": list(self.lengths), "position_limit": self.position_limit,
               "position_free": self.position_free, "seed": self.seed, "alpha": self.alpha,
               "directions": self.directions,
               "errors": {k: v.tolist() for k, v in self.errors.items()},
               "floors": {k: v.tolist() for k, v in self.floors.items()},
               "consistent": self.consistent.tolist()}
        if self.baselines is not None:
            out.update(self.baselines.to_json())
        if self.validity is not None:
            out["validity"] = self.validity.to_json()
        if self.baselines is not None:
            out["verdicts"] = self.verdicts()
            out["diagnosis"] = self.diagnosis()
        return out

    def verdicts(self) -> list[str]:
        """Per layer ℓ = 1..L the verdict of `verdicts.layer_verdict` on the one-layer
        covariance errors, the floors as the scale (empty without baselines)."""
        if self.baselines is None:
            return []
        methods, floor = self.baselines.methods, self.baselines.floor
        return [layer_verdict({m: float(methods[m].cov[0, ell]) for m in METHODS},
                              float(floor["cov"][ell]), float(floor["cov_two"][ell]))
                for ell in range(1, self.consistent.size)]

    def diagnosis(self) -> list[str]:
        """Per layer ℓ = 1..L: the verdict (`verdicts`) with its numbers, and where the
        prediction loses, what the validity map and the oracle say about why (empty without
        baselines)."""
        if self.baselines is None:
            return []
        methods, floor = self.baselines.methods, self.baselines.floor
        out = []
        for ell, verdict in enumerate(self.verdicts(), start=1):
            e = {m: float(methods[m].cov[0, ell]) for m in METHODS}
            f, f2 = float(floor["cov"][ell]), float(floor["cov_two"][ell])
            margin = min(e["no_change"], e["no_attention"]) - e["prediction"]
            versus = (f"prediction {e['prediction']:.3g} vs no_change {e['no_change']:.3g}, "
                      f"no_attention {e['no_attention']:.3g}, oracle {e['oracle']:.3g}; "
                      f"floor {f:.3g}, oracle's floor {f2:.3g}")
            if verdict == "undetermined":
                text = "undetermined: an error or a floor is not finite"
            elif verdict == "not_applicable":
                text = (f"no Gaussian closure applies here: the oracle (a Gaussian through the "
                        f"real layer) misses by {e['oracle']:.3g}, at least "
                        f"{NOT_APPLICABLE_RATIO:g}× its floor {f2:.3g}")
            elif verdict == "within_floor":
                text = (f"within the floor: the prediction and the best baseline differ by "
                        f"{abs(margin):.3g}, below the floor {f:.3g}")
            elif verdict == "beats":
                text = (f"the prediction beats both baselines by {margin:.3g}, above the floor "
                        f"{f:.3g}")
            else:
                text = f"the prediction loses by {-margin:.3g}; " + self._why_it_loses(ell, e)
            out.append(f"layer {ell}: {versus}: {text}")
        return out

    def _why_it_loses(self, ell: int, e: dict[str, float]) -> str:
        """What the validity map and the LayerNorm closures say about a loss at layer ℓ."""
        v = self.validity
        if v is not None and bool(v.layer_flagged[ell - 1]):
            heads = np.flatnonzero(v.flagged[ell - 1]) + 1
            return (f"the attention formula is flagged (heads {heads.tolist()}, median "
                    f"effective tokens {np.nanmin(v.effective_tokens[ell - 1]):.3g}–"
                    f"{np.nanmax(v.effective_tokens[ell - 1]):.3g}, attention output bias "
                    f"{v.layer_bias[ell - 1]:.3g} vs floor {v.layer_floor[ell - 1]:.3g})")
        kappa = self.prediction.norm_kappa[ell - 1]
        return ("the attention formula is clear: the loss is in the LayerNorm / feed-forward "
                "closures (LayerNorm κ " + ", ".join(f"{k:.3g}" for k in kappa if np.isfinite(k))
                + f"); a Gaussian through the real layer reaches {e['oracle']:.3g}")

    def summary(self) -> str:
        """The errors of the prediction and the baselines per layer (one layer and chained,
        raw and floor-corrected), the spectra, the validity map and the projected test."""
        n = len(self.lengths)
        lines = [f"{self.model}: {self.n_tokens} tokens in {n} sequence{'s' * (n > 1)} of "
                 f"length {min(self.lengths)}–{max(self.lengths)} (position limit "
                 f"{self.position_limit}); floors at the {1 - self.alpha / 2:.3g} quantile"]
        if self.baselines is not None:
            lines.append(self.baselines.table())
        if self.validity is not None:
            lines.append(self.validity.summary())
        lines += self.diagnosis()
        lines.append(f"on {self.directions} random directions (errors relative to the "
                     f"prediction; within the floor's {1 - self.alpha / 2:.3g} quantile: "
                     f"consistent):")
        for i, ok in enumerate(self.consistent):
            parts = [f"{k} {self.errors[k][i]:.3g} (floor {self.floors[k][i, 1]:.3g})"
                     for k in self.errors]
            lines.append(f"layer {i}: " + ", ".join(parts)
                         + f" → {'consistent' if ok else 'beyond the floor'}")
        return "\n".join(lines)


def _measured(x: np.ndarray, m: NDArray[np.float64] | float, C: np.ndarray
              ) -> tuple[float, float]:
    return _errors(x.mean(axis=0) - m, np.cov(x, rowvar=False), C)


def capture_sequences(model: Any, tokens: np.ndarray, lengths: tuple[int, ...],
                      progress: Callable[[int, int], None] | None = None
                      ) -> list[tuple[list[np.ndarray], list[Any], list[Any]]]:
    """`loading.capture` of each sequence (the tokens cut by `lengths`): a list of
    (hidden, attn_in, attn_out) per sequence. A model that fails on a sequence is refused
    (InvalidInputError naming the error)."""
    from .loading import capture

    out = []
    for i, seq in enumerate(split(tokens, lengths)):
        try:
            out.append(capture(model, seq))
        except InvalidInputError:
            raise
        except (RuntimeError, ValueError, TypeError, IndexError, KeyError,
                AttributeError) as exc:
            detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise InvalidInputError(f"{type(model).__name__} could not run on a sequence of "
                                    f"{seq.shape[0]} tokens ({type(exc).__name__}: "
                                    f"{detail})") from None
        if progress is not None:
            progress(i + 1, len(lengths))
    return out


def pooled_hidden(captures: list[tuple[list[np.ndarray], list[Any], list[Any]]]
                  ) -> list[np.ndarray]:
    """Every layer's hidden states (L+1 arrays (n, d)), the tokens of all sequences stacked."""
    return [np.vstack(layer) for layer in zip(*(c[0] for c in captures), strict=True)]


LayerRunner = Callable[[int, np.ndarray, tuple[int, ...]], np.ndarray]


class _Stop(Exception):
    """Ends a forward pass once the layer of interest has run."""


def model_layer_runner(model: Any) -> LayerRunner:
    """run(i, tokens, lengths): the tokens (the sequences stacked) through the model's own layer
    i, sequence by sequence (the layer's input is replaced by a hook; the forward pass stops
    after it). Layer i runs in the first slot of the model's layer list for the pass (the
    layers before it would compute what the hook discards), and the list is restored after."""
    import torch

    from .extraction import layer_container
    from .loading import dummy_inputs

    container = layer_container(model)
    layers = list(container)
    embeddings = getattr(model, "embeddings", None)
    if embeddings is None:
        raise InvalidInputError(f"{type(model).__name__} has no `embeddings` module to feed")
    dtype = next(model.parameters()).dtype

    def one(i: int, seq: np.ndarray) -> np.ndarray:
        x = torch.tensor(seq[None], dtype=dtype)
        out: list[np.ndarray] = []

        def replace_input(_module, args, kwargs):
            if args:
                return (x, *args[1:]), kwargs
            return args, {**kwargs, "hidden_states": x}

        def keep(_module, _args, output):
            value = output[0] if isinstance(output, tuple | list) else output
            out.append(value[0].detach().to(torch.float64).cpu().numpy())
            raise _Stop

        handles = [embeddings.register_forward_hook(lambda _m, _a, _o: x),
                   layers[i].register_forward_pre_hook(replace_input, with_kwargs=True),
                   layers[i].register_forward_hook(keep)]
        container[0] = layers[i]
        try:
            with torch.inference_mode():
                model(**dummy_inputs(model, seq.shape[0]))
        except _Stop:
            pass
        finally:
            container[0] = layers[0]
            for handle in handles:
                handle.remove()
        return out[0]

    def run(i: int, tokens: np.ndarray, lengths: tuple[int, ...]) -> np.ndarray:
        return np.vstack([one(i, seq) for seq in split(tokens, lengths)])

    return run


def factor_layer_runner(encoder: Encoder) -> LayerRunner:
    """run(i, tokens, lengths): the tokens through `layer_forward` of the extracted layer i,
    sequence by sequence."""
    def run(i: int, tokens: np.ndarray, lengths: tuple[int, ...]) -> np.ndarray:
        return np.vstack([layer_forward(encoder.layers[i], seq) for seq in split(tokens, lengths)])

    return run


def _without_attention(layer: EncoderLayer) -> EncoderLayer:
    """The layer with its attention sublayer removed (no heads, no output bias)."""
    return dataclasses.replace(layer, heads=(), out_bias=np.zeros(layer.d))


def _sample(mean: np.ndarray, cov: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    lam, U = np.linalg.eigh(0.5 * (cov + cov.T))
    return mean + (rng.standard_normal((n, mean.size)) * np.sqrt(np.clip(lam, 0.0, None))) @ U.T


def _moments(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return x.mean(axis=0), np.cov(x, rowvar=False)


def _top(C: np.ndarray, k: int) -> np.ndarray:
    return np.linalg.eigvalsh(0.5 * (C + C.T))[::-1][:k]


def baselines(hidden: list[np.ndarray], prediction: MomentPrediction, encoder: Encoder,
              run_layer: LayerRunner, lengths: tuple[int, ...], *, top: int = DEFAULT_TOP,
              n_sim: int = DEFAULT_SIMS_FULL, seed: int = 0, oracle_layers: str = "model"
              ) -> Baselines:
    """The prediction and the baselines one layer at a time and chained (module docstring);
    seed draws the Monte-Carlo floors (as in `measure`)."""
    n = hidden[0].shape[0]
    L = len(encoder.layers)
    k = min(top, encoder.d)
    rng = np.random.default_rng([as_seed("seed", seed), 3])
    measured = [_moments(x) for x in hidden]
    stripped = [_without_attention(layer) for layer in encoder.layers]

    def closure(layer: EncoderLayer, m: np.ndarray, C: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
        return layer_moments(layer, m, 0.5 * (C + C.T), terms=DEFAULT_TERMS,
                             gated_samples=GATED_SAMPLES, seed=0).out

    def oracle(i: int, m: np.ndarray, C: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        out = run_layer(i, _sample(m, C, n, rng), lengths)
        if not np.all(np.isfinite(out)):
            return np.full_like(m, np.nan), np.full_like(C, np.nan)
        return _moments(out)

    steps: dict[str, Callable[[int, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]] = {
        "prediction": lambda i, m, C: closure(encoder.layers[i], m, C),
        "no_change": lambda i, m, C: (m, C),
        "no_attention": lambda i, m, C: closure(stripped[i], m, C),
        "oracle": oracle}
    source = (prediction.means[0], prediction.covs[0])
    moments: dict[str, list[list[tuple[np.ndarray, np.ndarray]]]] = {}
    for name, step in steps.items():
        one, chain = [source], [source]
        for i in range(L):
            one.append(step(i, *measured[i]))
            if name != "prediction":
                chain.append(chain[-1] if not np.all(np.isfinite(chain[-1][1]))
                             else step(i, *chain[-1]))
        if name == "prediction":  # the chained prediction is the one measured
            chain = list(zip(prediction.means, prediction.covs, strict=True))
        moments[name] = [one, chain]
    floors = np.array([_baseline_floor(m, C, n, n_sim, rng) for m, C in measured])
    floor = {"cov": floors[:, 0], "mean": floors[:, 1], "cov_two": floors[:, 2],
             "mean_two": floors[:, 3]}
    methods = {}
    for name in METHODS:
        f_cov = floor["cov_two"] if name == "oracle" else floor["cov"]
        f_mean = floor["mean_two"] if name == "oracle" else floor["mean"]
        cov, mean = np.empty((2, L + 1)), np.empty((2, L + 1))
        tops, traces = np.full((2, L + 1, k), np.nan), np.full((2, L + 1), np.nan)
        for r, run in enumerate(moments[name]):
            for ell, ((m, C), (m_hat, C_hat)) in enumerate(zip(run, measured, strict=True)):
                if not (np.all(np.isfinite(m)) and np.all(np.isfinite(C))):
                    cov[r, ell] = mean[r, ell] = np.nan
                    continue
                cov[r, ell], mean[r, ell] = _relative_errors(m_hat, C_hat, m, C)
                tops[r, ell], traces[r, ell] = _top(C, k), np.trace(C)
        with np.errstate(invalid="ignore"):
            methods[name] = MethodErrors(
                cov, np.sqrt(np.clip(cov ** 2 - f_cov ** 2, 0.0, None)),
                mean, np.sqrt(np.clip(mean ** 2 - f_mean ** 2, 0.0, None)), tops, traces)
    return Baselines(methods, np.array([_top(C, k) for _, C in measured]),
                     np.array([np.trace(C) for _, C in measured]), floor, oracle_layers)


def measure(hidden: list[np.ndarray], prediction: MomentPrediction, *,
            lengths: tuple[int, ...], position_limit: int | None = None, model: str = "model",
            seed: int = 0, directions: int = DEFAULT_DIRECTIONS, n_sim: int = DEFAULT_SIMS,
            n_sim_full: int = DEFAULT_SIMS_FULL, alpha: float = 0.05,
            encoder: Encoder | None = None, run_layer: LayerRunner | None = None,
            top: int = DEFAULT_TOP) -> Comparison:
    """The comparison of captured hidden states with a prediction, its baselines and the
    validity map of the attention formula (module docstring).

    Parameters
    ----------
    hidden : list of (n, d) ndarray
        The L+1 captured layers, the tokens of all sequences pooled (e.g. `pooled_hidden`).
    prediction : MomentPrediction
        The chained prediction (`predict_moments`).
    lengths : tuple of int
        The lengths of the sequences the tokens were cut into.
    position_limit : int or None, optional
        The model's position limit (reported).
    model : str, optional
        The model's name (reported).
    seed : int, optional
        Draws Θ, the floors and the oracle's tokens (default 0).
    directions, n_sim, n_sim_full, alpha : optional
        As in `compare`.
    encoder : Encoder, optional
        The extracted layers, for the one-layer prediction, the baselines and the validity map
        (e.g. prediction.encoder); without it only the projected test is made.
    run_layer : callable (i, tokens, lengths) -> ndarray, optional
        Pushes tokens through layer i for the oracle (default: `layer_forward` on the
        extracted factors; `compare` passes the model's own layers).
    top : int, optional
        Eigenvalues reported per covariance, ≥ 1 (default DEFAULT_TOP).

    Returns
    -------
    Comparison
        The errors, floors, verdicts, baselines and validity map per layer.

    Raises
    ------
    InvalidInputError
        If the hidden states do not match the prediction, a count, seed or alpha is out of
        range, or the lengths do not add up to the tokens.

    See Also
    --------
    compare : draws the tokens and runs the model.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders import extract, predict_moments
    >>> from riccati_tf.empirical.encoders.comparison import capture_sequences, measure
    >>> from riccati_tf.empirical.encoders.comparison import pooled_hidden
    >>> from riccati_tf.empirical.encoders.tiny import tiny_encoder
    >>> model = tiny_encoder("bert", hidden_size=8, n_heads=2, n_layers=1, max_positions=64)
    >>> x = np.random.default_rng(0).standard_normal((128, 8))
    >>> hidden = pooled_hidden(capture_sequences(model, x, (64, 64)))
    >>> prediction = predict_moments(extract(model))
    >>> result = measure(hidden, prediction, lengths=(64, 64), n_sim=20,
    ...                  encoder=prediction.encoder)
    >>> result.baselines.oracle_layers, result.validity.flagged.shape
    ('factors', (1, 2))
    """
    n, d = hidden[0].shape
    if len(hidden) != prediction.means.shape[0] or prediction.means.shape[1] != d:
        raise InvalidInputError(f"{len(hidden)} captured layers of dimension {d} do not match the "
                                f"prediction's {prediction.means.shape[0]} of dimension "
                                f"{prediction.means.shape[1]}")
    k = as_count("directions", directions, maximum=d)
    seed = as_seed("seed", seed)
    n_sim = as_count("n_sim", n_sim, minimum=2)
    n_sim_full = as_count("n_sim_full", n_sim_full, minimum=2)
    alpha = as_time("alpha", alpha, maximum=1.0)
    rng = np.random.default_rng([seed, 1])
    theta = np.linalg.qr(rng.standard_normal((d, k)))[0]
    q = 1 - alpha / 2
    error_rows: dict[str, list[float]] = {name: [] for name in ("mean", "cov", "mean_k",
                                                                "cov_k")}
    floor_rows: dict[str, list[np.ndarray]] = {name: [] for name in error_rows}
    for x, m, C in zip(hidden, prediction.means, prediction.covs, strict=True):
        Ck = theta.T @ C @ theta
        values = (*_measured(x, m, C), *_measured(x @ theta, m @ theta, Ck))
        bands = np.vstack([_floor(C, n, n_sim_full, rng, q), _floor(Ck, n, n_sim, rng, q)])
        for name, value, band in zip(error_rows, values, bands, strict=True):
            error_rows[name].append(value)
            floor_rows[name].append(band)
    errors = {k_: np.array(v) for k_, v in error_rows.items()}
    floors = {k_: np.array(v) for k_, v in floor_rows.items()}
    consistent = ((errors["mean_k"] <= floors["mean_k"][:, 1])
                  & (errors["cov_k"] <= floors["cov_k"][:, 1]))
    lengths = tuple(int(v) for v in lengths)
    if sum(lengths) != n:
        raise InvalidInputError(f"the sequence lengths add up to {sum(lengths)}, not to the "
                                f"{n} captured tokens")
    top = as_count("top", top)
    base, valid = None, None
    if encoder is not None:
        oracle_layers = "model" if run_layer is not None else "factors"
        runner = run_layer if run_layer is not None else factor_layer_runner(encoder)
        base = baselines(hidden, prediction, encoder, runner, lengths, top=top,
                         n_sim=n_sim_full, seed=seed, oracle_layers=oracle_layers)
        valid = validity_map(encoder, hidden, lengths, seed=seed) if min(lengths) >= 2 else None
    return Comparison(model, n, lengths, position_limit, prediction.position_free, seed,
                      alpha, k, errors, floors, consistent, prediction, base, valid)


def compare(model: Any, *, n_tokens: int, seed: int = 0, mean0: ArrayLike | None = None,
            cov0: ArrayLike | None = None, position_free: bool = False,
            directions: int = DEFAULT_DIRECTIONS, n_sim: int = DEFAULT_SIMS,
            n_sim_full: int = DEFAULT_SIMS_FULL, alpha: float = 0.05,
            prediction: MomentPrediction | None = None,
            progress: Callable[[int, int], None] | None = None,
            top: int = DEFAULT_TOP, inputs: Inputs | None = None) -> Comparison:
    """Measured hidden-state moments of `model` against `predict_moments` and baselines.

    Tokens x_i ~ N(mean0, cov0) replace the embedding output, cut into sequences within the
    model's position limit. For every layer ℓ the measured (m̂_ℓ, Ĉ_ℓ) are set against the
    prediction and the baselines no_change, no_attention and oracle, one layer at a time (from
    (m̂_{ℓ−1}, Ĉ_{ℓ−1})) and chained (from (mean0, cov0)):

        ‖Ĉ_ℓ − Σ_ℓ‖_F / ‖Ĉ_ℓ‖_F,   ‖m̂_ℓ − m_ℓ‖ / √tr Ĉ_ℓ,

    raw and with the sampling floor subtracted (√(e² − f²)), next to the top eigenvalues and
    traces; `validity_map` says where the N → ∞ attention formula applies (module docstring).
    On k random directions a layer is consistent when both projected errors are within the
    1 − α/2 quantile of their floors.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        The encoder (with `embeddings` and a layer list).
    n_tokens : int
        Tokens drawn with `seed`, ≥ 2.
    seed : int, optional
        Seeds the tokens, the directions and the floors (default 0).
    mean0 : (d,) array_like, optional
        The tokens' mean (default 0).
    cov0 : (d, d) array_like, symmetric positive semidefinite, optional
        The tokens' covariance (default I).
    position_free : bool, optional
        Passed to `extract` when the prediction is made here.
    directions : int, optional
        The number k of random directions, ≤ d (default DEFAULT_DIRECTIONS).
    n_sim : int, optional
        Gaussian clouds simulated for the projected floors, ≥ 2 (default DEFAULT_SIMS).
    n_sim_full : int, optional
        Gaussian clouds simulated for the d-dimensional floors, ≥ 2 (default DEFAULT_SIMS_FULL).
    alpha : float, optional
        The level, in (0, 1] (default 0.05).
    prediction : MomentPrediction, optional
        Reuse one (else extracted and predicted here).
    progress : callable (int, int) -> None, optional
        Called as progress(i, n) after each of the n sequences.
    top : int, optional
        Eigenvalues reported per covariance, ≥ 1 (default DEFAULT_TOP).
    inputs : Inputs, optional
        The tokens to feed instead (`loading.model_inputs`: text, token ids, hidden states or
        Gaussian tokens, in their own sequences); their moments replace mean0 and cov0, and
        n_tokens is theirs.

    Returns
    -------
    Comparison
        The errors, floors and verdicts per layer; the prediction one layer at a time and
        chained against the baselines no_change, no_attention and oracle (the oracle through
        the model's own layers), normalised by the measured moments, raw and floor-corrected;
        the spectra; the validity map of the attention formula.

    Raises
    ------
    InvalidInputError
        If a count, seed or alpha is out of range; mean0 or cov0 is not a finite vector or a
        symmetric positive semidefinite matrix of the hidden size; `extract` refuses the model;
        the prediction does not match the model's layers; or the model fails on a sequence.
    SolverError
        If the prediction made here overflows float64.

    See Also
    --------
    predict_moments : the prediction.
    Comparison : the fields.
    plot_comparison : its figure.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".
    .. [2] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    >>> from riccati_tf.empirical.encoders import compare
    >>> from riccati_tf.empirical.encoders.tiny import tiny_encoder
    >>> model = tiny_encoder("bert", hidden_size=8, n_heads=2, n_layers=1, max_positions=64)
    >>> result = compare(model, n_tokens=256, n_sim=50, n_sim_full=2)
    >>> result.lengths, result.consistent.tolist()
    ((64, 64, 64, 64), [True, True])
    """
    d = model.config.hidden_size
    if inputs is not None:
        if not isinstance(inputs, Inputs) or inputs.tokens.shape[1] != d:
            raise InvalidInputError(f"inputs must be Inputs of dimension {d} (model_inputs)")
        n_tokens, mean0, cov0 = inputs.n_tokens, inputs.mean, inputs.cov
    n_tokens = as_count("n_tokens", n_tokens, minimum=2)
    seed = as_seed("seed", seed)
    source = Gaussian(np.zeros(d) if mean0 is None else as_vector("mean0", mean0, d),
                      np.eye(d) if cov0 is None else as_covariance("cov0", cov0, d))
    if prediction is None:
        prediction = predict_moments(extract(model, position_free=position_free),
                                     source.mean, source.cov)
    limit = position_limit(model)
    lengths = sequence_lengths(n_tokens, limit) if inputs is None else inputs.lengths
    tokens = (source.sample(n_tokens, np.random.default_rng(seed)) if inputs is None else
              inputs.tokens)
    hidden = pooled_hidden(capture_sequences(model, tokens, lengths, progress))
    encoder = prediction.encoder
    if encoder is None:
        encoder = extract(model, position_free=prediction.position_free)
    return measure(hidden, prediction, lengths=lengths, position_limit=limit,
                   model=type(model).__name__, seed=seed, directions=directions, n_sim=n_sim,
                   n_sim_full=n_sim_full, alpha=alpha, encoder=encoder,
                   run_layer=model_layer_runner(model), top=top)
