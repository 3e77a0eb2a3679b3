"""Points of the strata {(m, Σ) : rank Σ = r}, of dimension d + r d − r(r−1)/2 (SPEC §3), as
exact rationals: random ones for the generic rank, and a given Gaussian read onto its stratum.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ...errors import InvalidInputError
from ...state.params import Gaussian
from ...state.validation import (
    as_count,
    as_covariance,
    as_seed,
    as_vector,
    psd_rank,
    scale_exponent,
)
from .exact import exact_rank, rational_array

__all__: list[str] = []  # stratum_dimension is documented in riccati_tf.reachability.lie


def stratum_dimension(d: int, r: int) -> int:
    """Dimension d + r d − r(r−1)/2 of the state manifold {(m, Σ) : rank Σ = r} (SPEC §3).

    The rank of Σ(t) = Φ(t) Σ0 Φ(t)ᵀ is invariant, so the moments move on the stratum of rank
    r, of dimension d (the mean) + r d − r(r−1)/2 (the covariance); full accessibility rank
    means rank = this dimension.

    Parameters
    ----------
    d : int
        The dimension, d ≥ 1.
    r : int
        The covariance rank, 0 ≤ r ≤ d.

    Returns
    -------
    int
        d + r d − r(r−1)/2.

    Raises
    ------
    InvalidInputError
        If d is not a positive integer or r is not an integer in [0, d].

    See Also
    --------
    accessibility_rank : compares the Lie-algebra rank with this dimension.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §3 "Rank invariance".
    .. [2] riccati_tf theory, SPEC §4 "Reachability (time-varying controls)".
    .. [3] V. Jurdjevic, "Geometric Control Theory", Cambridge University Press, 1997.

    Examples
    --------
    >>> from riccati_tf.reachability.lie import stratum_dimension
    >>> stratum_dimension(3, 3), stratum_dimension(3, 1), stratum_dimension(3, 0)
    (9, 6, 3)
    """
    d = as_count("d", d)
    r = _rank(r, d)
    return d + r * d - r * (r - 1) // 2


def _random_rational(rng: np.random.Generator, shape: tuple[int, ...]) -> NDArray[np.object_]:
    """Entries ±k/l with k ∈ {1, …, 6}, l ∈ {1, 2, 3} (never 0: zeros make points special)."""
    num = rng.integers(1, 7, size=shape) * rng.choice([-1, 1], size=shape)
    den = rng.integers(1, 4, size=shape)
    return np.vectorize(lambda a, b: Fraction(int(a), int(b)), otypes=[object])(num, den)


def stratum_point(d: int, r: int,
                  seed: int = 0) -> tuple[NDArray[np.object_], NDArray[np.object_]]:
    """A random rational point (m, Σ = L Lᵀ) with rank Σ = r exactly (L rational d×r), drawn
    from seed."""
    d = as_count("d", d)
    r = _rank(r, d)
    rng = np.random.default_rng([as_seed("seed", seed), d, r])
    mean = _random_rational(rng, (d,))
    while True:
        L = _random_rational(rng, (d, r))
        if exact_rank(L.T.tolist()) == r:
            return mean, L @ L.T if r else np.array([[Fraction(0)] * d] * d, dtype=object)


def _rank(r: int, d: int) -> int:
    r = as_count("rank", r, minimum=0)
    if r > d:
        raise InvalidInputError(f"rank must be ≤ d = {d}, got {r}")
    return r


def rational_point(point: Gaussian | Sequence[ArrayLike], d: int, rank: int | None = None
                   ) -> tuple[NDArray[np.object_], NDArray[np.object_], int]:
    """(m, Σ, r) as exact rationals from a Gaussian or a (mean, cov) pair.

    mean and cov are validated by `state.validation` (a vector of length d, a symmetric PSD
    d×d matrix); arrays of ints and Fractions are kept exactly (Σ symmetrised exactly), other
    entries read by `rational`. If that changes the rank (a float covariance of rank r is rarely
    of exact rank r), Σ is rebuilt as L Lᵀ from a rationalised eigen-factor L (d×r), so the point
    lies exactly on the stratum of the numerical rank r (eigenvalues above d·1e-12·max|Σ_ij|), or
    of `rank` when given (the largest `rank` eigenvalues are kept). Eigenvalues are computed on
    Σ scaled by a power of 4, so the rank and the factor are the same at every magnitude.
    """
    mean: ArrayLike
    cov: ArrayLike
    if isinstance(point, Gaussian):
        mean, cov = point.mean, point.cov
    else:
        if isinstance(point, str | bytes | Mapping | np.ndarray) or not isinstance(
                point, Sequence) or len(point) != 2:
            raise InvalidInputError("point must be a Gaussian or a pair (mean, cov)")
        mean, cov = point
    d = as_count("d", d)
    cov_f = as_covariance("cov", cov, d)
    mean_exact = rational_array("mean", mean, as_vector("mean", mean, d))
    cov_exact = rational_array("cov", cov, cov_f)
    cov_exact = (cov_exact + cov_exact.T) / 2
    r = psd_rank(cov_f, d * 1e-12 * float(np.max(np.abs(cov_f))))
    if rank is not None:
        r = _rank(rank, d)
    if exact_rank(cov_exact.tolist()) != r:
        e = scale_exponent(cov_f, even=True)
        eig, vec = np.linalg.eigh(np.ldexp(cov_f, -e))
        L = np.ldexp(vec[:, d - r:] * np.sqrt(np.clip(eig[d - r:], 0, None)), e // 2)
        L = rational_array("cov factor", L)
        cov_exact = L @ L.T if r else cov_exact * 0
    return mean_exact, cov_exact, r
