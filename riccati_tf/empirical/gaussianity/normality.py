"""The calibrated test of H0: x ~ N(m, Σ) (`normality_test`): Monte-Carlo p-values of TESTS with
a Bonferroni decision, and Mardia's asymptotic p-values for reference."""

from __future__ import annotations

import numbers

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from ...errors import InvalidInputError
from .constants import N_DIRECTIONS, TESTS
from .distances import statistics
from .null import _mc_p_value, null_distribution
from .results import GaussianityStats, NormalityTest

__all__ = ["normality_test"]


def asymptotic_p_values(s: GaussianityStats) -> dict[str, float]:
    """Mardia's asymptotic p-values: n k b1 / 6 ~ χ²_{r(r+1)(r+2)/6} with the small-sample
    factor k = (r+1)(n+1)(r+3) / (n((n+1)(r+1) − 6)), and
    (b2 − r(r+2)(n−1)/(n+1)) / √(8r(r+2)/n) ~ N(0, 1) (two-sided)."""
    n, r = s.n, s.rank
    k = (r + 1) * (n + 1) * (r + 3) / (n * ((n + 1) * (r + 1) - 6))
    skew = stats.chi2.sf(n * k * s.skewness / 6, r * (r + 1) * (r + 2) / 6)
    z = (s.kurtosis - r * (r + 2) * (n - 1) / (n + 1)) / np.sqrt(8 * r * (r + 2) / n)
    return {"skewness": float(skew), "kurtosis": float(2 * stats.norm.sf(abs(z)))}


def check_alpha(alpha: object) -> float:
    """A significance level: a real number in (0, 1)."""
    if (isinstance(alpha, bool) or not isinstance(alpha, numbers.Real)
            or not 0 < float(alpha) < 1):
        raise InvalidInputError(f"alpha must be a number in (0, 1), got {alpha!r}")
    return float(alpha)


def normality_test(x: ArrayLike, *, alpha: float = 0.05, n_null: int = 200, seed: int = 0,
                   n_directions: int = N_DIRECTIONS) -> NormalityTest:
    """Test H0: x ~ N(m, Σ) with Monte-Carlo calibrated p-values (module docstring).

    The observed statistics are set against their null distribution for the same (n, rank):
    p = (1 + #{null ≥ observed}) / (1 + n_null) (two-sided for the kurtosis), and H0 is
    rejected when the smallest p-value of TESTS is below alpha / len(TESTS) (Bonferroni;
    measured size 0.01 at α = 0.05, module docstring). With n_null ≤ len(TESTS) / alpha − 1
    no sample can be rejected (the smallest p-value is 1 / (1 + n_null)).

    Parameters
    ----------
    x : (n, d) array_like
        The sample, one point per row.
    alpha : float, optional
        The level, in (0, 1) (default 0.05).
    n_null : int, optional
        Gaussian samples in the Monte-Carlo null, at most MAX_NULL (default 200).
    seed : int, optional
        Fixes the sliced-W2 directions (shared with the null) and the null simulation.
    n_directions : int, optional
        Directions of the sliced W2 distance (default N_DIRECTIONS).

    Returns
    -------
    NormalityTest
        The statistics, the p-values, the verdict and the null.

    Raises
    ------
    InvalidInputError
        If alpha is not a number in (0, 1), or for the invalid samples and arguments of
        `statistics` and `null_distribution` (non-finite or degenerate x, n ≤ rank + 1, counts
        beyond their bounds).

    See Also
    --------
    statistics : the observed statistics.
    null_distribution : the calibration.
    acceptance_band : each statistic's accepted interval under the same rule.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".
    .. [2] K. V. Mardia, "Measures of multivariate skewness and kurtosis with applications",
       Biometrika 57(3), 1970.
    .. [3] G. J. Székely and M. L. Rizzo, "A new test for multivariate normality",
       J. Multivariate Anal. 93(1), 2005.

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.empirical.gaussianity import normality_test
    >>> rng = np.random.default_rng(0)
    >>> normality_test(rng.standard_normal((100, 2)), n_null=100).reject
    False
    >>> normality_test(rng.uniform(size=(100, 2)), n_null=100).reject
    True
    """
    check_alpha(alpha)
    observed = statistics(x, seed=seed, n_directions=n_directions)
    null = null_distribution(observed.n, observed.rank, n_null=n_null, seed=seed,
                             n_directions=n_directions)
    p = {name: _mc_p_value(null.values[name], getattr(observed, name), name == "kurtosis")
         for name in TESTS}
    reject = min(p.values()) * len(TESTS) < alpha
    return NormalityTest(observed, p, asymptotic_p_values(observed), alpha, bool(reject), null)
