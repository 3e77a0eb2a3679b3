"""The results of the Gaussianity tests: the distances of one sample (`GaussianityStats`), the
Monte-Carlo null (`NullDistribution`), the calibrated test (`NormalityTest`) and the marginal
tests (`MarginalTest`)."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

__all__ = ["GaussianityStats", "MarginalTest", "NormalityTest", "NullDistribution"]


@dataclass(frozen=True)
class GaussianityStats:
    """Distances of one sample to its moment-matched Gaussian (see the module docstring).

    All are functions of the whitened cloud y_i = Λ^{-1/2} Qᵀ (x_i − x̄), hence affine
    invariant: b1 = (1/n²) Σ_ij G_ij³, b2 = (1/n) Σ_i G_ii², the energy statistic E, the sliced
    W2 distance to the Gaussian quantiles and the relative errors of the third and fourth
    moment tensors, with G_ij = ⟨y_i, y_j⟩.

    Parameters
    ----------
    n : int
        The sample size.
    rank : int
        The dimension r of the whitened cloud (the numerical rank of the covariance).
    skewness : float
        Mardia's skewness b1 (Gaussian: 0).
    kurtosis : float
        Mardia's kurtosis b2 (Gaussian: about r(r + 2)).
    energy : float
        The Székely–Rizzo energy statistic E.
    sliced_w2 : float
        The sliced Wasserstein-2 distance, in whitened units.
    third : float
        ‖E_n[y⊗y⊗y]‖_F / √(r(r+2)(r+4)) (Gaussian: 0).
    fourth : float
        ‖E_n[y⊗⁴] − T‖_F / ‖T‖_F with T the Gaussian fourth moment (Gaussian: 0).

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field (the result is frozen).

    See Also
    --------
    statistics : computes it for a sample.
    normality_test : calibrates it against a Monte-Carlo null.

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
    >>> from riccati_tf.empirical.gaussianity import statistics
    >>> s = statistics(np.random.default_rng(0).standard_normal((100, 2)))
    >>> s.n, s.rank, sorted(s.as_dict())[:4]
    (100, 2, ['energy', 'fourth', 'kurtosis', 'n'])
    """

    n: int
    rank: int
    skewness: float
    kurtosis: float
    energy: float
    sliced_w2: float
    third: float
    fourth: float

    def as_dict(self) -> dict[str, float]:
        """The fields by name (n and rank included)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True, eq=False)
class NullDistribution:
    """Monte-Carlo null: the statistics of n_null standard Gaussian samples of size (n, r).

    The statistics are affine invariant, so under H0 their law depends only on (n, r) (and on
    the sliced-W2 directions, drawn from `seed`).

    Parameters
    ----------
    n : int
        The sample size.
    rank : int
        The dimension r of the samples.
    seed : int
        The seed of the samples and of the sliced-W2 directions.
    values : dict of str to (n_null,) ndarray
        For each statistic of GaussianityStats (n and rank excluded), its n_null null values.

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field (the result is frozen).

    See Also
    --------
    null_distribution : simulates (and caches) it.
    acceptance_band : the interval of one statistic that a test accepts.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> from riccati_tf.empirical.gaussianity import null_distribution
    >>> null = null_distribution(50, 1, n_null=20)
    >>> null.values["kurtosis"].shape, null.quantile("kurtosis", 0.0) > 0
    ((20,), True)
    """

    n: int
    rank: int
    seed: int
    values: dict[str, np.ndarray]

    def quantile(self, name: str, q: float) -> float:
        """The q-quantile of the null values of the statistic `name`."""
        return float(np.quantile(self.values[name], q))


@dataclass(frozen=True, eq=False)
class NormalityTest:
    """A calibrated test of H0: the sample is Gaussian, the result of `normality_test`.

    Parameters
    ----------
    stats : GaussianityStats
        The observed statistics.
    p_values : dict of str to float
        Monte-Carlo p-values p = (1 + #{null ≥ observed}) / (1 + n_null) of TESTS (two-sided
        for the kurtosis).
    asymptotic : dict of str to float
        Mardia's asymptotic p-values {"skewness", "kurtosis"} (reference only: not calibrated
        at high rank).
    alpha : float
        The level of the test.
    reject : bool
        min p · len(TESTS) < alpha (Bonferroni).
    null : NullDistribution
        The Monte-Carlo null used.

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field (the result is frozen).

    See Also
    --------
    normality_test : produces it.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".
    .. [2] K. V. Mardia, "Measures of multivariate skewness and kurtosis with applications",
       Biometrika 57(3), 1970.

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.empirical.gaussianity import normality_test
    >>> result = normality_test(np.random.default_rng(0).standard_normal((100, 2)), n_null=100)
    >>> sorted(result.p_values), result.alpha, result.null.n
    (['energy', 'kurtosis', 'skewness', 'sliced_w2'], 0.05, 100)
    """

    stats: GaussianityStats
    p_values: dict[str, float]
    asymptotic: dict[str, float]
    alpha: float
    reject: bool
    null: NullDistribution


@dataclass(frozen=True, eq=False)
class MarginalTest:
    """Skewness and kurtosis of every coordinate and of random directions, Holm-corrected.

    Parameters
    ----------
    n : int
        The sample size.
    alpha : float
        The family-wise level.
    skewness : dict of str to ndarray
        g1 = m3/m2^{3/2} of the coordinates ("coordinate", (d,)) and of the directions
        ("direction", (L,)); NaN for a constant coordinate.
    kurtosis : dict of str to ndarray
        The excess kurtosis g2 = m4/m2² − 3, keyed like skewness (Gaussian: −6/(n + 1)).
    p_values : dict of str to ndarray
        The two-sided p-values of MARGINAL_FAMILIES (NaN: untestable, a constant coordinate).
    adjusted : dict of str to ndarray
        Their Holm-adjusted values over all 2(d + L) hypotheses together.
    heavy_tailed : tuple of int
        The coordinates whose kurtosis is rejected (adjusted p ≤ alpha) on the heavy side
        (g2 above its null mean), by decreasing kurtosis.
    reject : bool
        Whether any adjusted p-value is ≤ alpha.

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field (the result is frozen).

    See Also
    --------
    marginal_test : produces it.

    References
    ----------
    .. [1] R. B. D'Agostino, "Transformation to normality of the null distribution of g1",
       Biometrika 57(3), 1970.
    .. [2] F. J. Anscombe and W. J. Glynn, "Distribution of the kurtosis statistic b2 for
       normal samples", Biometrika 70(1), 1983.

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.empirical.gaussianity import marginal_test
    >>> result = marginal_test(np.random.default_rng(0).standard_normal((500, 3)))
    >>> result.reject, result.heavy_tailed, result.kurtosis["direction"].shape
    (False, (), (256,))
    """

    n: int
    alpha: float
    skewness: dict[str, np.ndarray]
    kurtosis: dict[str, np.ndarray]
    p_values: dict[str, np.ndarray]
    adjusted: dict[str, np.ndarray]
    heavy_tailed: tuple[int, ...]
    reject: bool

    @property
    def smallest_p(self) -> float:
        """The smallest raw p-value (NaN when nothing is testable)."""
        values = np.concatenate([v.ravel() for v in self.p_values.values()])
        return float(np.nanmin(values)) if np.any(~np.isnan(values)) else float("nan")
