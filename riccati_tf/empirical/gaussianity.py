"""How far a token cloud is from its moment-matched Gaussian (SPEC §7).

A sample x_1..x_n ∈ R^d is centred and whitened with its maximum-likelihood covariance
S = (1/n) Σ (x_i − x̄)(x_i − x̄)ᵀ, restricted to the numerical range of S (rank r):
y_i = Λ^{-1/2} Qᵀ (x_i − x̄). Every statistic below is a function of the whitened cloud, hence
affine invariant, and is computed from the Gram matrix G_ij = ⟨y_i, y_j⟩ in row blocks (memory
O(block · n)):

    Mardia skewness   b1 = (1/n²) Σ_ij G_ij³            (= ‖E_n[y⊗y⊗y]‖_F²)
    Mardia kurtosis   b2 = (1/n) Σ_i G_ii²
    energy statistic  E  = n [ (2/n) Σ_i E|y_i − Z| − E|Z − Z'| − (1/n²) Σ_ij |y_i − y_j| ],
                      Z, Z' ~ N(0, I_r) (Székely–Rizzo test of multivariate normality)
    sliced W2         SW2² = mean over L unit θ of (1/n) Σ_i (⟨θ, y⟩_(i) − Φ⁻¹((i − ½)/n))²,
                      the 1-D W2 distances between the sorted projections and the n-point
                      quantile sample of the fitted Gaussian (every ⟨θ, Z⟩ is N(0, 1))
    third moment      ‖E_n[y⊗y⊗y]‖_F / sqrt(r(r+2)(r+4))   (Gaussian: 0; scale E|Z|⁶)
    fourth moment     ‖E_n[y⊗y⊗y⊗y] − T‖_F / ‖T‖_F,   T_ijkl = δ_ijδ_kl + δ_ikδ_jl + δ_ilδ_jk,
                      ‖T‖_F² = 3r² + 6r,  ⟨E_n[y⊗⁴], T⟩ = 3 b2,  ‖E_n[y⊗⁴]‖_F² = (1/n²) Σ G_ij⁴

Calibration: the statistics are affine invariant, so their null distribution depends only on
(n, r) (and, for SW2, on the directions θ, which are drawn from `seed` and shared by the
observed sample and the null). `null_distribution` simulates it from standard Gaussian samples
of the same size (a Monte-Carlo null; cached explicitly), and `normality_test` turns it into
p-values
p = (1 + #{null ≥ observed}) / (1 + n_null) (two-sided for the kurtosis). The decision rejects
Gaussianity when the smallest of the four test p-values (skewness, kurtosis, energy, sliced W2)
is below α/4 (Bonferroni). Mardia's asymptotic p-values (χ² with the small-sample factor, and the
normal law of b2 around r(r+2)(n−1)/(n+1)) are reported alongside for reference only: at high r
they are not calibrated.

Size and power measured with the fixed seeds of tests/test_gaussianity.py (n = 400, d = 4,
n_null = 200, α = 0.05, 100 samples each): Gaussian samples rejected in 1/100 (size 0.01; the
Bonferroni rule is conservative); a uniform cube in 100/100; the mixture
½N(−2e₁, I) + ½N(2e₁, I) in 100/100 (with separation 1.5 instead of 2: 39/100). The energy
statistic carries the mixture; the kurtosis alone rejects it in under a third of the samples.

Marginal tests (`marginal_test`): the multivariate statistics average over directions and miss
a single heavy-tailed coordinate (a "massive activation": a few tokens with huge values in one
coordinate) when r is large. Every coordinate j and MARGINAL_DIRECTIONS random directions θ
(uniform on the sphere of the coordinate-standardised space, drawn from the seed) get the
sample skewness g1 = m3/m2^{3/2} and excess kurtosis g2 = m4/m2² − 3 of the projection, each
with its p-value from its exact null moments at the same n (D'Agostino's transformation of g1,
with Var b1 = 6(n − 2)/((n + 1)(n + 3)), and the Anscombe–Glynn transformation of b2 = g2 + 3,
with E b2 = 3(n − 1)/(n + 1), Var b2 = 24n(n − 2)(n − 3)/((n + 1)²(n + 3)(n + 5)) and its
skewness; both two-sided): under H0 any fixed projection of a Gaussian sample is a Gaussian
sample of size n, so these nulls hold coordinate by coordinate and direction by direction. The
2(d + L) hypotheses are corrected by Holm's step-down procedure (family-wise error ≤ α under any
dependence; `holm`), and coordinates whose kurtosis is rejected on the heavy side are reported
as heavy-tailed. Size measured by tests/test_gaussianity.py: exact Gaussian samples at
d = 192, n = 2000 (L = 256) are rejected in ≤ α + 3 Monte-Carlo standard errors over 200 seeds;
t(5) coordinates, one t(5) coordinate, and one coordinate with a few massive values are rejected.

Reference: K. V. Mardia, Biometrika 57 (1970) 519–530; G. J. Székely and M. L. Rizzo,
J. Multivariate Anal. 93 (2005) 58–80; R. B. D'Agostino, Biometrika 57 (1970) 679–681;
F. J. Anscombe and W. J. Glynn, Biometrika 70 (1983) 227–234; S. Holm, Scand. J. Statist. 6
(1979) 65–70.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, fields

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats
from scipy.special import gammaln, poch

from ..errors import InvalidInputError
from ..state.validation import as_cloud, as_count, as_seed, psd_factor
from .defaults import MAX_NULL

__all__ = ["GRAM_BLOCK", "MARGINAL_DIRECTIONS", "MARGINAL_FAMILIES", "MAX_DIRECTIONS",
           "MAX_GRAM_BLOCK", "MAX_NULL", "MAX_NULL_SAMPLE", "MIN_MARGINAL_N", "N_DIRECTIONS",
           "RANK_RTOL", "TESTS", "GaussianityStats", "MarginalTest", "NormalityTest",
           "NullDistribution", "acceptance_band", "holm", "marginal_test", "normality_test",
           "null_distribution", "statistics", "tail_p_value"]

#: directions of the sliced Wasserstein distance
N_DIRECTIONS = 64
#: eigenvalues of the ML covariance below RANK_RTOL · λ_max are treated as zero (whitening)
RANK_RTOL = 1e-10
#: rows of the Gram matrix processed at once
GRAM_BLOCK = 1024
#: statistics entering the decision (each calibrated against the Monte-Carlo null)
TESTS = ("skewness", "kurtosis", "energy", "sliced_w2")
#: Poisson-mixture terms kept on each side of λ/2 when evaluating E|a − Z| (tail mass < 1e-30)
_POISSON_SD = 12.0
#: input bounds, checked before anything is allocated (MAX_NULL, the Monte-Carlo null samples
#: n_null, comes from `defaults`): sliced-W2 directions, rows of a Gram block, and n · rank of
#: one simulated null sample
MAX_DIRECTIONS = 10_000
MAX_GRAM_BLOCK = 16_384
MAX_NULL_SAMPLE = 10 ** 8
#: random directions of `marginal_test`, beside every coordinate
MARGINAL_DIRECTIONS = 256
#: the families of `marginal_test`'s p-values
MARGINAL_FAMILIES = ("coordinate_skewness", "coordinate_kurtosis", "direction_skewness",
                     "direction_kurtosis")
#: the smallest sample of `marginal_test` (the kurtosis transformation needs n ≥ 20)
MIN_MARGINAL_N = 20


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


def whiten(x: ArrayLike) -> NDArray[np.float64]:
    """y_i = Λ^{-1/2} Qᵀ (x_i − x̄) with S = Q Λ Qᵀ the ML covariance on its numerical range.

    Returns an (n, r) array whose ML covariance is I_r. Raises if n ≤ r + 1 (Mardia's
    statistics need more points than dimensions) or if the cloud is a single point.
    """
    x = as_cloud("x", x)
    z = x - x.mean(axis=0)
    S = z.T @ z / x.shape[0]
    lam_max = np.linalg.eigvalsh(S)[-1]
    if lam_max <= 0:
        raise InvalidInputError("x is a single repeated point: its covariance is zero")
    root = psd_factor(S, tol=RANK_RTOL * lam_max)  # S ≈ root rootᵀ, columns Q √Λ
    r = root.shape[1]
    if x.shape[0] <= r + 1:
        raise InvalidInputError(f"x has n = {x.shape[0]} points in rank {r}: Gaussianity "
                                f"statistics need n > rank + 1")
    return z @ (root / np.sum(root**2, axis=0))


def expected_distance_to_normal(sq_norm: np.ndarray, r: int) -> NDArray[np.float64]:
    """E|a − Z| for Z ~ N(0, I_r) and |a|² = sq_norm, as the Poisson mixture of χ means:

        |a − Z|² ~ χ²_r(λ), λ = |a|²;  E|a − Z| = Σ_k Pois(k; λ/2) √2 Γ((r+2k+1)/2) / Γ((r+2k)/2).

    Terms beyond ±12 Poisson standard deviations of λ/2 are dropped (mass < 1e-30).
    """
    lam2 = np.asarray(sq_norm, dtype=float) / 2
    out = np.empty(lam2.shape)
    order = np.argsort(lam2)
    start = 0
    while start < order.size:
        # rows sorted by λ share one window width (set by the chunk's largest λ); memory
        # ≤ ~4e6 terms per chunk
        stop = min(order.size, start + 4096)
        width = int(_POISSON_SD * np.sqrt(lam2[order[stop - 1]]) + 40)
        stop = min(stop, start + max(1, 4_000_000 // (2 * width + 1)))
        idx = order[start:stop]
        lo = np.maximum(np.floor(lam2[idx]) - width, 0).astype(int)
        k_all = np.arange(lo.min(), lo.max() + 2 * width + 1)  # tables over the chunk's k range
        log_fact = gammaln(k_all + 1)
        chi_mean = np.sqrt(2) * poch((r + 2 * k_all) / 2, 0.5)  # E χ_{r+2k} = √2 Γ(·+½)/Γ(·)
        pos = (lo - k_all[0])[:, None] + np.arange(2 * width + 1)[None, :]
        lam = lam2[idx][:, None]
        k = k_all[pos]
        logw = k * np.log(np.where(lam > 0, lam, 1.0)) - log_fact[pos]  # log Pois + λ/2
        logw[(lam[:, 0] == 0)[:, None] & (k > 0)] = -np.inf
        # normalising the weights removes the rounding of the large cancelling log terms
        weights = np.exp(logw - logw.max(axis=1, keepdims=True))
        out[idx] = (weights * chi_mean[pos]).sum(axis=1) / weights.sum(axis=1)
        start = stop
    return out


def _gram_sums(y: np.ndarray, block: int) -> tuple[float, float, float, float]:
    """(Σ G_ij³, Σ G_ij⁴, Σ |y_i − y_j|, Σ G_ii²) over all pairs, in row blocks."""
    sq = np.einsum("ij,ij->i", y, y)
    s3 = s4 = dist = 0.0
    for i0 in range(0, y.shape[0], block):
        G = y[i0:i0 + block] @ y.T
        G2 = G * G
        s3 += float(np.sum(G2 * G))
        s4 += float(np.sum(G2 * G2))
        D = sq[i0:i0 + block, None] + sq[None, :] - 2 * G
        rows = np.arange(D.shape[0])
        D[rows, i0 + rows] = 0.0  # |y_i − y_i| exactly (rounding would leave √eps there)
        np.maximum(D, 0, out=D)
        dist += float(np.sum(np.sqrt(D, out=D)))
    return s3, s4, dist, float(np.sum(sq * sq))


def directions(rank: int, n_directions: int, seed: int) -> NDArray[np.float64]:
    """(rank, n_directions) unit columns θ, uniform on the sphere, drawn from seed."""
    theta = np.random.default_rng([as_seed("seed", seed), rank, n_directions]).standard_normal(
        (rank, n_directions))
    return theta / np.linalg.norm(theta, axis=0)


def statistics(x: ArrayLike, *, seed: int = 0, n_directions: int = N_DIRECTIONS,
               block: int = GRAM_BLOCK) -> GaussianityStats:
    """The distances of the module docstring for one (n, d) sample x.

    The sample is centred and whitened with its maximum-likelihood covariance on its numerical
    range (rank r), and Mardia's b1 = (1/n²) Σ_ij G_ij³ and b2 = (1/n) Σ_i G_ii², the energy
    statistic, the sliced W2 distance and the relative third and fourth moment errors are
    computed from the Gram matrix G_ij = ⟨y_i, y_j⟩ in row blocks (memory O(block · n)).

    Parameters
    ----------
    x : (n, d) array_like
        The sample, one point per row.
    seed : int, optional
        Draws the sliced-W2 directions (`directions(rank, n_directions, seed)`; default 0).
    n_directions : int, optional
        Directions of the sliced W2 distance, at most MAX_DIRECTIONS (default N_DIRECTIONS).
    block : int, optional
        Rows of the Gram matrix per block, at most MAX_GRAM_BLOCK (default GRAM_BLOCK).

    Returns
    -------
    GaussianityStats
        The distances of x to its moment-matched Gaussian.

    Raises
    ------
    InvalidInputError
        If x is not a finite (n, d) array with n ≥ 2, its points all coincide (zero
        covariance), n ≤ rank + 1, or seed, n_directions or block is not a valid integer
        within its bound.

    See Also
    --------
    normality_test : the calibrated test built on these statistics.
    GaussianityStats : the fields.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".
    .. [2] K. V. Mardia, "Measures of multivariate skewness and kurtosis with applications",
       Biometrika 57(3), 1970.
    .. [3] G. J. Székely and M. L. Rizzo, "A new test for multivariate normality",
       J. Multivariate Anal. 93(1), 2005.

    Examples
    --------
    The statistics are affine invariant:

    >>> import numpy as np
    >>> from riccati_tf.empirical.gaussianity import statistics
    >>> x = np.random.default_rng(0).standard_normal((200, 2))
    >>> s = statistics(x)
    >>> t = statistics(x @ np.array([[2.0, 1.0], [0.0, 3.0]]) + 5.0)
    >>> bool(np.isclose(s.kurtosis, t.kurtosis) and np.isclose(s.energy, t.energy))
    True
    >>> round(s.kurtosis, 2)  # Gaussian: about r(r + 2) = 8
    8.48
    """
    n_directions = as_count("n_directions", n_directions, maximum=MAX_DIRECTIONS,
                                    limit="gaussianity.MAX_DIRECTIONS")
    seed = as_seed("seed", seed)
    block = as_count("block", block, maximum=MAX_GRAM_BLOCK,
                             limit="gaussianity.MAX_GRAM_BLOCK")
    y = whiten(x)
    return _whitened_statistics(y, directions(y.shape[1], n_directions, seed), block)


def _whitened_statistics(y: np.ndarray, theta: np.ndarray, block: int) -> GaussianityStats:
    n, r = y.shape
    s3, s4, dist, b2_sum = _gram_sums(y, block)
    b1, b2 = s3 / n**2, b2_sum / n
    ez = expected_distance_to_normal(np.einsum("ij,ij->i", y, y), r)
    ezz = 2 * np.exp(gammaln((r + 1) / 2) - gammaln(r / 2))  # E|Z − Z'|, Z − Z' ~ N(0, 2I)
    energy = n * (2 * ez.mean() - ezz - dist / n**2)
    proj = np.sort(y @ theta, axis=0)
    quantiles = stats.norm.ppf((np.arange(n) + 0.5) / n)
    sw2 = float(np.sqrt(np.mean((proj - quantiles[:, None]) ** 2)))
    t_norm2 = 3 * r * r + 6 * r
    fourth = np.sqrt(max(s4 / n**2 - 6 * b2 + t_norm2, 0.0) / t_norm2)
    third = np.sqrt(b1 / (r * (r + 2) * (r + 4)))
    return GaussianityStats(n, r, float(b1), float(b2), float(energy), sw2, float(third),
                            float(fourth))


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
