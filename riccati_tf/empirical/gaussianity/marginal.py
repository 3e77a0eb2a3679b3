"""The marginal tests (`marginal_test`): skewness and excess kurtosis of every coordinate and of
random directions against their exact finite-n nulls, corrected by Holm's procedure (`holm`)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from ...errors import InvalidInputError
from ...state.validation import as_cloud, as_count, as_seed
from .constants import MARGINAL_DIRECTIONS, MARGINAL_FAMILIES, MAX_DIRECTIONS, MIN_MARGINAL_N
from .distances import directions
from .normality import check_alpha
from .results import MarginalTest

__all__ = ["holm", "marginal_test"]


def holm(p_values: ArrayLike, weights: ArrayLike | None = None) -> NDArray[np.float64]:
    """Holm's step-down adjusted p-values, optionally weighted: with the hypotheses ordered by
    p_i/w_i and W_k the total weight of those not yet rejected before step k,
    p̃_(k) = max_{j ≤ k} min(1, p_(j) W_j / w_(j)) (equal weights: (m − k + 1) p_(k)). Rejecting
    every p̃ ≤ α controls the family-wise error at α under any dependence.

    Parameters
    ----------
    p_values : array_like of float
        The p-values, any shape (NaN: an untestable hypothesis, adjusted to NaN and given no
        weight).
    weights : array_like of float, optional
        Positive weights of the same shape (default: equal); only their ratios matter.

    Returns
    -------
    ndarray
        The adjusted p-values, of the same shape.

    Raises
    ------
    InvalidInputError
        If a p-value is outside [0, 1] or a weight is not positive and finite.

    See Also
    --------
    marginal_test : uses it over coordinates and directions.

    References
    ----------
    .. [1] S. Holm, "A simple sequentially rejective multiple test procedure", Scand. J.
       Statist. 6(2), 1979.

    Examples
    --------
    >>> from riccati_tf.empirical.gaussianity import holm
    >>> holm([0.01, 0.04, 0.03, 0.2]).round(3).tolist()
    [0.04, 0.09, 0.09, 0.2]
    >>> holm([0.01, 0.04], weights=[3.0, 1.0]).round(4).tolist()  # 0.01·4/3, then 0.04·1/1
    [0.0133, 0.04]
    """
    p = np.asarray(p_values, dtype=float)
    if np.any((p < 0) | (p > 1)):
        raise InvalidInputError("p-values must lie in [0, 1]")
    w = np.ones(p.shape) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != p.shape or not np.all(np.isfinite(w) & (w > 0)):
        raise InvalidInputError("weights must be positive finite numbers, one per p-value")
    flat, wf = p.ravel(), w.ravel()
    valid = np.flatnonzero(~np.isnan(flat))
    out = np.full(flat.shape, np.nan)
    order = valid[np.argsort(flat[valid] / wf[valid], kind="stable")]
    remaining = np.cumsum(wf[order][::-1])[::-1]  # W_k
    out[order] = np.minimum(1.0, np.maximum.accumulate(flat[order] * remaining / wf[order]))
    return out.reshape(p.shape)


def _moment_p_values(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(g1, g2, p of g1, p of g2) of each column of x (n ≥ MIN_MARGINAL_N rows); NaN for a
    constant column."""
    n = x.shape[0]
    c = x - x.mean(axis=0)
    m2 = np.mean(c * c, axis=0)
    constant = m2 <= (np.finfo(float).eps * np.max(np.abs(x), axis=0, initial=0.0)) ** 2 * n
    safe = np.where(constant, 1.0, m2)
    g1 = np.mean(c**3, axis=0) / safe**1.5
    b2 = np.mean(c**4, axis=0) / safe**2
    # D'Agostino (1970): Y = g1 √((n+1)(n+3)/(6(n−2))) to Z = δ asinh(Y/a)
    y = g1 * np.sqrt((n + 1) * (n + 3) / (6.0 * (n - 2)))
    beta2 = (3.0 * (n * n + 27 * n - 70) * (n + 1) * (n + 3)
             / ((n - 2.0) * (n + 5) * (n + 7) * (n + 9)))
    w2 = -1 + np.sqrt(2 * (beta2 - 1))
    delta = 1 / np.sqrt(0.5 * np.log(w2))
    a = np.sqrt(2 / (w2 - 1))
    z1 = delta * np.arcsinh(y / a)
    # Anscombe and Glynn (1983): the exact mean, variance and skewness of b2 at n
    e = 3.0 * (n - 1) / (n + 1)
    var = 24.0 * n * (n - 2) * (n - 3) / ((n + 1.0) ** 2 * (n + 3) * (n + 5))
    root_beta1 = (6.0 * (n * n - 5 * n + 2) / ((n + 7.0) * (n + 9))
                  * np.sqrt(6.0 * (n + 3) * (n + 5) / (n * (n - 2.0) * (n - 3))))
    A = 6 + 8 / root_beta1 * (2 / root_beta1 + np.sqrt(1 + 4 / root_beta1**2))
    xs = (b2 - e) / np.sqrt(var)
    denom = 1 + xs * np.sqrt(2 / (A - 4))
    ratio = np.where(denom > 0, (1 - 2 / A) / np.where(denom > 0, denom, 1.0), np.inf)
    z2 = np.where(denom > 0, ((1 - 2 / (9 * A)) - np.cbrt(ratio)) / np.sqrt(2 / (9 * A)),
                  -np.inf)  # b2 below the transformation's support: extremely light tails
    p1, p2 = 2 * stats.norm.sf(np.abs(z1)), 2 * stats.norm.sf(np.abs(z2))
    nan = np.where(constant, np.nan, 1.0)
    return g1 * nan, (b2 - 3) * nan, p1 * nan, p2 * nan


def marginal_test(x: ArrayLike, *, alpha: float = 0.05,
                  n_directions: int = MARGINAL_DIRECTIONS, seed: int = 0) -> MarginalTest:
    """Skewness and excess kurtosis of every coordinate and of n_directions random directions,
    each against its exact finite-n null, Holm-corrected (module docstring).

    For each column v of [x, x̃ Θ] (x̃ the coordinate-standardised sample, Θ (d × L) uniform
    unit directions from the seed), g1 = m3/m2^{3/2} and g2 = m4/m2² − 3 with m_k the central
    moments; D'Agostino's and Anscombe–Glynn's transformations turn them into two-sided
    p-values, and Holm's procedure over the 2(d + L) hypotheses decides at family-wise level
    alpha.

    Parameters
    ----------
    x : (n, d) array_like
        The sample, one point per row, n ≥ MIN_MARGINAL_N.
    alpha : float, optional
        The family-wise level, in (0, 1) (default 0.05).
    n_directions : int, optional
        The random directions L, at most MAX_DIRECTIONS (default MARGINAL_DIRECTIONS).
    seed : int, optional
        Draws the directions (default 0).

    Returns
    -------
    MarginalTest
        The statistics, raw and adjusted p-values, the heavy-tailed coordinates and the
        verdict.

    Raises
    ------
    InvalidInputError
        If x is not a finite (n, d) array with n ≥ MIN_MARGINAL_N, all its coordinates are
        constant, or alpha, n_directions or seed is invalid.

    See Also
    --------
    normality_test : the affine-invariant multivariate test.
    holm : the correction.

    Notes
    -----
    Cost O(n (d + L) + n d L). Under H0 every fixed projection of a Gaussian sample is a
    Gaussian sample, so each p-value is (up to the accuracy of the transformations, verified
    by simulation in the tests) uniform; the directions are fixed in the standardised space,
    whose scales are estimated to O(n^{-1/2}).

    References
    ----------
    .. [1] R. B. D'Agostino, "Transformation to normality of the null distribution of g1",
       Biometrika 57(3), 1970.
    .. [2] F. J. Anscombe and W. J. Glynn, "Distribution of the kurtosis statistic b2 for
       normal samples", Biometrika 70(1), 1983.
    .. [3] S. Holm, "A simple sequentially rejective multiple test procedure", Scand. J.
       Statist. 6(2), 1979.

    Examples
    --------
    One coordinate with a few massive values among 2000 Gaussian tokens is found:

    >>> import numpy as np
    >>> from riccati_tf.empirical.gaussianity import marginal_test
    >>> x = np.random.default_rng(1).standard_normal((2000, 16))
    >>> x[:5, 7] = 40.0
    >>> result = marginal_test(x)
    >>> result.reject, result.heavy_tailed, bool(result.kurtosis["coordinate"][7] > 50)
    (True, (7,), True)
    """
    alpha = check_alpha(alpha)
    n_directions = as_count("n_directions", n_directions, maximum=MAX_DIRECTIONS,
                            limit="gaussianity.MAX_DIRECTIONS")
    seed = as_seed("seed", seed)
    x = as_cloud("x", x)
    n, d = x.shape
    if n < MIN_MARGINAL_N:
        raise InvalidInputError(f"x has n = {n} points: the marginal tests need at least "
                                f"{MIN_MARGINAL_N}")
    g1c, g2c, p1c, p2c = _moment_p_values(x)
    if np.all(np.isnan(p1c)):
        raise InvalidInputError("every coordinate of x is constant: nothing to test")
    sd = np.sqrt(np.var(x, axis=0))
    scaled = (x - x.mean(axis=0)) / np.where(np.isnan(p1c), np.inf, sd)
    g1d, g2d, p1d, p2d = _moment_p_values(scaled @ directions(d, n_directions, seed))
    p = dict(zip(MARGINAL_FAMILIES, (p1c, p2c, p1d, p2d), strict=True))
    flat = holm(np.concatenate(list(p.values())))
    cuts = np.cumsum([v.size for v in p.values()])[:-1]
    adjusted = dict(zip(MARGINAL_FAMILIES, np.split(flat, cuts), strict=True))
    heavy = np.flatnonzero((adjusted["coordinate_kurtosis"] <= alpha)
                           & (g2c > -6 / (n + 1)))
    heavy = heavy[np.argsort(-g2c[heavy], kind="stable")]
    return MarginalTest(n, alpha, {"coordinate": g1c, "direction": g1d},
                        {"coordinate": g2c, "direction": g2d}, p, adjusted,
                        tuple(int(j) for j in heavy), bool(np.nanmin(flat) <= alpha))
