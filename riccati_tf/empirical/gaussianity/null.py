"""The Monte-Carlo null of the statistics at (n, r) (`null_distribution`, cached) and its
p-values p = (1 + #{null ≥ observed}) / (1 + n_null): the band a test accepts
(`acceptance_band`) and the p-value refined beyond the simulated range (`tail_p_value`)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from ...errors import InvalidInputError
from ...state.validation import as_count, as_seed
from ..defaults import MAX_NULL
from .constants import GRAM_BLOCK, MAX_DIRECTIONS, MAX_NULL_SAMPLE, N_DIRECTIONS, TESTS
from .distances import _whitened_statistics, directions, whiten
from .results import NullDistribution

__all__ = ["acceptance_band", "null_distribution", "tail_p_value"]


_NULL_CACHE: dict[tuple[int, int, int, int, int], NullDistribution] = {}


def null_distribution(n: int, rank: int, *, n_null: int = 200, seed: int = 0,
                      n_directions: int = N_DIRECTIONS) -> NullDistribution:
    """Statistics of n_null standard Gaussian samples of shape (n, rank) (Monte-Carlo null).

    The statistics are affine invariant, so their law under H0: x ~ N(m, Σ) depends only on
    (n, r) and on the sliced-W2 directions. Results are cached in `_NULL_CACHE` by
    (n, rank, n_null, seed, n_directions); call `_NULL_CACHE.clear()` to drop them.

    Parameters
    ----------
    n : int
        The sample size, ≥ 3 and > rank + 1.
    rank : int
        The dimension r of the samples, ≥ 1.
    n_null : int, optional
        The number of simulated samples, at most MAX_NULL (default 200).
    seed : int, optional
        Seeds the samples and the sliced-W2 directions (default 0).
    n_directions : int, optional
        Directions of the sliced W2 distance, at most MAX_DIRECTIONS (default N_DIRECTIONS).

    Returns
    -------
    NullDistribution
        The n_null values of every statistic.

    Raises
    ------
    InvalidInputError
        If an argument is not a valid integer within its bound, n ≤ rank + 1, or one sample
        would hold more than MAX_NULL_SAMPLE numbers (n · rank).

    See Also
    --------
    normality_test : turns the null into p-values.
    acceptance_band : the accepted interval of one statistic.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.empirical.gaussianity import null_distribution
    >>> null = null_distribution(50, 1, n_null=20)
    >>> null.n, null.rank, null.values["energy"].shape
    (50, 1, (20,))
    >>> null_distribution(50, 1, n_null=20) is null  # cached
    True
    """
    key = (as_count("n", n, minimum=3), as_count("rank", rank),
           as_count("n_null", n_null, maximum=MAX_NULL, limit="gaussianity.MAX_NULL"),
           as_seed("seed", seed),
           as_count("n_directions", n_directions, maximum=MAX_DIRECTIONS,
                            limit="gaussianity.MAX_DIRECTIONS"))
    if key[0] <= key[1] + 1:
        raise InvalidInputError(f"n = {n} must exceed rank + 1 = {rank + 1}")
    if key[0] * key[1] > MAX_NULL_SAMPLE:
        raise InvalidInputError(f"a null sample of n · rank = {key[0]} · {key[1]} numbers exceeds "
                                f"the limit {MAX_NULL_SAMPLE} (gaussianity.MAX_NULL_SAMPLE)")
    if key not in _NULL_CACHE:
        rng = np.random.default_rng([seed, n, rank])
        theta = directions(rank, n_directions, seed)
        rows = [_whitened_statistics(whiten(rng.standard_normal((n, rank))), theta,
                                     GRAM_BLOCK).as_dict() for _ in range(n_null)]
        values = {name: np.array([row[name] for row in rows]) for name in rows[0]
                  if name not in ("n", "rank")}
        _NULL_CACHE[key] = NullDistribution(n, rank, seed, values)
    return _NULL_CACHE[key]


def _p_of_count(count: ArrayLike, n_null: int, two_sided: bool) -> NDArray[np.float64]:
    """The p-value (1 + count) / (1 + n_null) of `count` null values at least as extreme as the
    observation on one side (doubled, capped at 1, for a two-sided test)."""
    p = (1 + np.asarray(count)) / (1 + n_null)
    return np.minimum(1.0, 2 * p) if two_sided else p


def _mc_p_value(null: np.ndarray, observed: float, two_sided: bool) -> float:
    upper = _p_of_count(np.sum(null >= observed), null.size, two_sided)
    if not two_sided:
        return float(upper)
    return float(min(upper, _p_of_count(np.sum(null <= observed), null.size, two_sided)))


def acceptance_band(null: np.ndarray, alpha: float, two_sided: bool,
                    n_tests: int = len(TESTS)) -> tuple[float, float]:
    """The interval [low, high] of one statistic that the decision of `normality_test` accepts.

    With p the Monte-Carlo p-value of the null sample and a Bonferroni correction over n_tests
    statistics,

        p · n_tests < alpha   ⇔   observed < low  or  observed > high.

    With k* the largest count of null values beyond the observation that still rejects, high
    is the (k* + 1)-th largest null value and, two-sided, low the (k* + 1)-th smallest.

    Parameters
    ----------
    null : (n_null,) ndarray of float
        The null values of the statistic (e.g. `NullDistribution.values[name]`).
    alpha : float
        The level of the whole decision, in (0, 1) (not validated here).
    two_sided : bool
        Whether the statistic is tested on both sides (the kurtosis in `normality_test`).
    n_tests : int, optional
        The statistics of the Bonferroni decision (default len(TESTS)).

    Returns
    -------
    low : float
        The lower edge: −inf for a one-sided test.
    high : float
        The upper edge. A side where no observation can reject (too few null samples) is
        unbounded (−inf, inf).

    Raises
    ------
    AttributeError
        If null is not a numpy array (it is not converted; an empty null gives (−inf, inf)).

    See Also
    --------
    normality_test : the decision this interval restates.
    null_distribution : the null values.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    99 null values 1, ..., 99: one-sided at 5 % the three largest null values may exceed the
    observation; two-sided, one on each side.

    >>> import numpy as np
    >>> from riccati_tf.empirical.gaussianity import acceptance_band
    >>> acceptance_band(np.arange(1.0, 100.0), 0.05, False, n_tests=1)
    (-inf, 96.0)
    >>> acceptance_band(np.arange(1.0, 100.0), 0.05, True, n_tests=1)
    (2.0, 98.0)
    """
    counts = np.arange(null.size + 1)
    rejecting = counts[_p_of_count(counts, null.size, two_sided) * n_tests < alpha]
    if rejecting.size == 0:
        return -np.inf, np.inf
    k = int(rejecting.max())
    ordered = np.sort(null)
    high = float(ordered[-1 - k]) if k < null.size else -np.inf
    low = float(ordered[k]) if two_sided and k < null.size else -np.inf
    return low, high


def tail_p_value(null: np.ndarray, observed: float, two_sided: bool) -> float:
    """The Monte-Carlo p-value (1 + #{null ≥ observed})/(1 + n_null) (two-sided: doubled, the
    smaller side), refined beyond the simulated range, where the count is 0 and the p-value
    cannot go below 1/(1 + n_null): there the tail of a law fitted to the null's mean and
    variance (two-sided: normal; one-sided, positive statistics: gamma) is used when smaller.

    Parameters
    ----------
    null : (n_null,) ndarray of float
        The null values of the statistic (e.g. `NullDistribution.values[name]`).
    observed : float
        The observed statistic.
    two_sided : bool
        Whether the statistic is tested on both sides.

    Returns
    -------
    float
        The p-value.

    Raises
    ------
    ValueError
        From numpy for an empty null.

    See Also
    --------
    normality_test : the Monte-Carlo p-values it refines.
    holm : the correction that needs p-values below 1/(1 + n_null).

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.empirical.gaussianity import tail_p_value
    >>> null = np.random.default_rng(0).gamma(4.0, 1.0, 200)
    >>> tail_p_value(null, 2.0, False) > 0.5, tail_p_value(null, 40.0, False) < 1e-9
    (True, True)
    """
    p = _mc_p_value(null, observed, two_sided)
    if not (observed > null.max() or (two_sided and observed < null.min())):
        return p
    m, v = float(np.mean(null)), float(np.var(null, ddof=1))
    if not v > 0:
        return p
    if two_sided:
        fitted = 2 * stats.norm.sf(abs(observed - m) / np.sqrt(v))
    elif null.min() >= 0 and m > 0:
        fitted = stats.gamma.sf(observed, m * m / v, scale=v / m)
    else:
        fitted = stats.norm.sf((observed - m) / np.sqrt(v))
    return float(min(p, fitted))
