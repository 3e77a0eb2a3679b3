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

import numpy as np

from ...errors import InvalidInputError
from ...state.params import Gaussian
from ...state.validation import as_count, as_time
from .extraction import extract, position_limit
from .propagation import MomentPrediction, predict_moments
from .sequences import sequence_lengths, split

#: random directions of the projected comparison
DEFAULT_DIRECTIONS = 4
#: simulated Gaussian clouds for the projected floors and for the d-dimensional floors
DEFAULT_SIMS = 200
DEFAULT_SIMS_FULL = 10


@dataclass(frozen=True, eq=False)
class Comparison:
    """Measured against predicted moments per layer ℓ = 0..L (module docstring).

    errors[name] (L+1,) and floors[name] (L+1, 2) (median, 1 − α/2 quantile) for name in
    ("mean", "cov", "mean_k", "cov_k") (the _k ones on the k directions); consistent (L+1,);
    lengths: the lengths of the sequences the tokens were cut into (position_limit: the limit).
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

    def to_json(self) -> dict:
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


def _measured(x: np.ndarray, m: np.ndarray, C: np.ndarray) -> tuple[float, float]:
    return _errors(x.mean(axis=0) - m, np.cov(x, rowvar=False), C)


def _floor(C: np.ndarray, n: int, n_sim: int, rng, q: float) -> np.ndarray:
    """(2, 2): [mean, cov] × [median, q-quantile] of the errors of n_sim Gaussian clouds of
    size n with covariance C (simulated in its eigenbasis: the errors are rotation invariant)."""
    lam = np.clip(np.linalg.eigvalsh(C), 0.0, None)
    D = np.diag(lam)
    sims = np.array([_measured(rng.standard_normal((n, lam.size)) * np.sqrt(lam), 0.0, D)
                     for _ in range(n_sim)])
    return np.quantile(sims, [0.5, q], axis=0).T


def capture_sequences(model, tokens: np.ndarray, lengths: tuple[int, ...],
                      progress: Callable[[int, int], None] | None = None) -> list[tuple]:
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


def pooled_hidden(captures: list[tuple]) -> list[np.ndarray]:
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
    errors = {name: [] for name in ("mean", "cov", "mean_k", "cov_k")}
    floors = {name: [] for name in errors}
    for x, m, C in zip(hidden, prediction.means, prediction.covs, strict=True):
        Ck = theta.T @ C @ theta
        values = (*_measured(x, m, C), *_measured(x @ theta, m @ theta, Ck))
        bands = np.vstack([_floor(C, n, n_sim_full, rng, q), _floor(Ck, n, n_sim, rng, q)])
        for name, value, band in zip(errors, values, bands, strict=True):
            errors[name].append(value)
            floors[name].append(band)
    errors = {k_: np.array(v) for k_, v in errors.items()}
    floors = {k_: np.array(v) for k_, v in floors.items()}
    consistent = ((errors["mean_k"] <= floors["mean_k"][:, 1])
                  & (errors["cov_k"] <= floors["cov_k"][:, 1]))
    return Comparison(model, n, tuple(lengths), position_limit, prediction.position_free, seed,
                      alpha, k, errors, floors, consistent, prediction)


def compare(model, *, n_tokens: int, seed: int = 0, mean0=None, cov0=None,
            position_free: bool = False, directions: int = DEFAULT_DIRECTIONS,
            n_sim: int = DEFAULT_SIMS, n_sim_full: int = DEFAULT_SIMS_FULL,
            alpha: float = 0.05, prediction: MomentPrediction | None = None,
            progress: Callable[[int, int], None] | None = None) -> Comparison:
    """Measured hidden-state moments of `model` against `predict_moments` (module docstring).

    n_tokens: tokens drawn from N(mean0, cov0) (default N(0, I)) with `seed`, cut into sequences
    within the model's position limit; prediction: reuse one (else extracted and predicted
    here); progress(i, n) is called after each sequence; directions, n_sim, n_sim_full and
    alpha as in `measure`.
    """
    d = model.config.hidden_size
    n_tokens = as_count("n_tokens", n_tokens, minimum=2)
    seed = as_count("seed", seed, minimum=0)
    source = Gaussian(np.zeros(d) if mean0 is None else mean0,
                      np.eye(d) if cov0 is None else cov0)
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
