"""The distances of one sample to its moment-matched Gaussian: the whitening
y_i = Λ^{-1/2} Qᵀ (x_i − x̄), the Gram sums of Mardia's b1, b2 and the energy statistic, the
sliced-W2 directions and `statistics`."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats
from scipy.special import gammaln, poch

from ...errors import InvalidInputError
from ...state.validation import as_cloud, as_count, as_seed, psd_factor
from .constants import GRAM_BLOCK, MAX_DIRECTIONS, MAX_GRAM_BLOCK, N_DIRECTIONS, RANK_RTOL
from .results import GaussianityStats

__all__ = ["statistics"]

#: the most rows per block of `_gram_sums` (blocks of `block` rows, cut to this size: the
#: diagonal parts, formed whole, are then a small share of the half of G formed)
SYMMETRIC_BLOCK = 256

#: Poisson-mixture terms kept on each side of λ/2 when evaluating E|a − Z| (tail mass < 1e-30)
_POISSON_SD = 12.0


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


def _power_sums(y: np.ndarray) -> tuple[float, float]:
    """(Σ_ij G_ij³, Σ_ij G_ij⁴) over all pairs from the tensor moments of the rows: with
    z_i = y_i ⊗ y_i, G_ij³ = ⟨y_i^{⊗3}, y_j^{⊗3}⟩ and G_ij⁴ = ⟨z_i, z_j⟩², so the sums are
    ‖ZᵀY‖_F² and ‖ZᵀZ‖_F² (Z the rows z_i): O(n r⁴) instead of O(n² r)."""
    n, r = y.shape
    Z = (y[:, :, None] * y[:, None, :]).reshape(n, r * r)
    return float(np.sum(np.square(Z.T @ y))), float(np.sum(np.square(Z.T @ Z)))


def _gram_sums(y: np.ndarray, block: int) -> tuple[float, float, float, float]:
    """(Σ G_ij³, Σ G_ij⁴, Σ |y_i − y_j|, Σ G_ii²) over all pairs, in row blocks.

    G is symmetric: a block of rows is taken against the columns from its first row on, its
    square diagonal part counted once and the rest twice (the pairs j < i of later blocks), so
    that about half of G is formed; blocks of at most SYMMETRIC_BLOCK rows keep the diagonal
    parts small. Where r⁴ ≤ n, Σ G³ and Σ G⁴ come from the tensor moments (`_power_sums`)
    and the blocks give the distances alone."""
    n, r = y.shape
    moments = r ** 4 <= n
    sq = np.einsum("ij,ij->i", y, y)
    step = min(block, SYMMETRIC_BLOCK)
    s3 = s4 = dist = 0.0
    for i0 in range(0, n, step):
        b = min(step, n - i0)
        G = y[i0:i0 + b] @ y[i0:].T
        parts = ((np.s_[:, :b], 1.0), (np.s_[:, b:], 2.0))
        if not moments:
            G2 = G * G
            for part, weight in parts:
                s3 += weight * float(np.sum(G2[part] * G[part]))
                s4 += weight * float(np.sum(G2[part] * G2[part]))
        D = G  # |y_i − y_j|² = |y_i|² + |y_j|² − 2G_ij, in place
        D *= -2.0
        D += sq[i0:i0 + b, None]
        D += sq[None, i0:]
        rows = np.arange(b)
        D[rows, rows] = 0.0  # |y_i − y_i| exactly (rounding would leave √eps there)
        np.maximum(D, 0, out=D)
        np.sqrt(D, out=D)
        for part, weight in parts:
            dist += weight * float(np.sum(D[part]))
    if moments:
        s3, s4 = _power_sums(y)
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
