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
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ...errors import InvalidInputError
from ...state.params import Gaussian
from ...state.validation import as_count, as_covariance, as_time, as_vector
from .extraction import extract, position_limit
from .propagation import MomentPrediction, predict_moments
from .sequences import sequence_lengths, split

__all__ = ["DEFAULT_DIRECTIONS", "DEFAULT_SIMS", "DEFAULT_SIMS_FULL", "Comparison", "compare"]

#: random directions of the projected comparison
DEFAULT_DIRECTIONS = 4
#: simulated Gaussian clouds for the projected floors and for the d-dimensional floors
DEFAULT_SIMS = 200
DEFAULT_SIMS_FULL = 10


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

    def to_json(self) -> dict[str, Any]:
        """JSON-ready numbers."""
        return {"model": self.model, "n_tokens": self.n_tokens, "sequences": len(self.lengths),
                "lengths": list(self.lengths), "position_limit": self.position_limit,
                "position_free": self.position_free, "seed": self.seed, "alpha": self.alpha,
                "directions": self.directions,
                "errors": {k: v.tolist() for k, v in self.errors.items()},
                "floors": {k: v.tolist() for k, v in self.floors.items()},
                "consistent": self.consistent.tolist()}

    def summary(self) -> str:
        """One line per layer: errors against their floors and the verdict."""
        n = len(self.lengths)
        lines = [f"{self.model}: {self.n_tokens} tokens in {n} sequence{'s' * (n > 1)} of "
                 f"length {min(self.lengths)}–{max(self.lengths)} (position limit "
                 f"{self.position_limit}); floors at the {1 - self.alpha / 2:.3g} quantile"]
        for i, ok in enumerate(self.consistent):
            parts = [f"{k} {self.errors[k][i]:.3g} (floor {self.floors[k][i, 1]:.3g})"
                     for k in self.errors]
            lines.append(f"layer {i}: " + ", ".join(parts)
                         + f" → {'consistent' if ok else 'deviates'}")
        return "\n".join(lines)


def _errors(dev: np.ndarray, C_hat: np.ndarray, C: np.ndarray) -> tuple[float, float]:
    return (float(np.linalg.norm(dev) / np.sqrt(max(np.trace(C), np.finfo(float).tiny))),
            float(np.linalg.norm(C_hat - C) / max(np.linalg.norm(C), np.finfo(float).tiny)))


def _measured(x: np.ndarray, m: NDArray[np.float64] | float, C: np.ndarray
              ) -> tuple[float, float]:
    return _errors(x.mean(axis=0) - m, np.cov(x, rowvar=False), C)


def _floor(C: np.ndarray, n: int, n_sim: int, rng: np.random.Generator, q: float
           ) -> NDArray[np.float64]:
    """(2, 2): [mean, cov] × [median, q-quantile] of the errors of n_sim Gaussian clouds of
    size n with covariance C (simulated in its eigenbasis: the errors are rotation invariant)."""
    lam = np.clip(np.linalg.eigvalsh(C), 0.0, None)
    D = np.diag(lam)
    sims = np.array([_measured(rng.standard_normal((n, lam.size)) * np.sqrt(lam), 0.0, D)
                     for _ in range(n_sim)])
    return np.quantile(sims, [0.5, q], axis=0).T


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


def measure(hidden: list[np.ndarray], prediction: MomentPrediction, *,
            lengths: tuple[int, ...], position_limit: int | None = None, model: str = "model",
            seed: int = 0, directions: int = DEFAULT_DIRECTIONS, n_sim: int = DEFAULT_SIMS,
            n_sim_full: int = DEFAULT_SIMS_FULL, alpha: float = 0.05) -> Comparison:
    """The comparison of captured hidden states (L+1 arrays (n, d), the tokens of all sequences
    pooled, e.g. `pooled_hidden`) with a prediction (module docstring); lengths and
    position_limit describe how the tokens were cut, model names it; seed draws Θ and the
    floors."""
    n, d = hidden[0].shape
    if len(hidden) != prediction.means.shape[0] or prediction.means.shape[1] != d:
        raise InvalidInputError(f"{len(hidden)} captured layers of dimension {d} do not match the "
                                f"prediction's {prediction.means.shape[0]} of dimension "
                                f"{prediction.means.shape[1]}")
    k = as_count("directions", directions, maximum=d)
    seed = as_count("seed", seed, minimum=0)
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
    return Comparison(model, n, tuple(lengths), position_limit, prediction.position_free, seed,
                      alpha, k, errors, floors, consistent, prediction)


def compare(model: Any, *, n_tokens: int, seed: int = 0, mean0: ArrayLike | None = None,
            cov0: ArrayLike | None = None, position_free: bool = False,
            directions: int = DEFAULT_DIRECTIONS, n_sim: int = DEFAULT_SIMS,
            n_sim_full: int = DEFAULT_SIMS_FULL, alpha: float = 0.05,
            prediction: MomentPrediction | None = None,
            progress: Callable[[int, int], None] | None = None) -> Comparison:
    """Measured hidden-state moments of `model` against `predict_moments` (module docstring).

    Tokens x_i ~ N(mean0, cov0) replace the embedding output, cut into sequences within the
    model's position limit; for every layer the measured mean and covariance are compared with
    (m_ℓ, Σ_ℓ), in R^d and on k random directions, each error next to its sampling floor. A
    layer is consistent when both projected errors are within the 1 − α/2 quantile of their
    floors.

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

    Returns
    -------
    Comparison
        The errors, floors and verdicts per layer.

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
    n_tokens = as_count("n_tokens", n_tokens, minimum=2)
    seed = as_count("seed", seed, minimum=0)
    source = Gaussian(np.zeros(d) if mean0 is None else as_vector("mean0", mean0, d),
                      np.eye(d) if cov0 is None else as_covariance("cov0", cov0, d))
    if prediction is None:
        prediction = predict_moments(extract(model, position_free=position_free),
                                     source.mean, source.cov)
    limit = position_limit(model)
    lengths = sequence_lengths(n_tokens, limit)
    tokens = source.sample(n_tokens, np.random.default_rng(seed))
    hidden = pooled_hidden(capture_sequences(model, tokens, lengths, progress))
    return measure(hidden, prediction, lengths=lengths, position_limit=limit,
                   model=type(model).__name__, seed=seed, directions=directions, n_sim=n_sim,
                   n_sim_full=n_sim_full, alpha=alpha)
