"""Sampling floors of the comparison (SPEC §7): the errors that exact Gaussian clouds of the
comparison's size make against their own moments.

A measured mean m̂ and covariance Ĉ of n tokens are compared with a prediction (m, C) by

    ‖m̂ − m‖ / √tr C,      ‖Ĉ − C‖_F / ‖C‖_F

(`_errors`; `_relative_errors` normalises by the measured moments instead). The floor of each
is its law when the n tokens are an exact sample of N(m, C): every error is a Euclidean or
Frobenius norm, unchanged by rotating the cloud, so the clouds are simulated in the
eigenbasis of C, and each cloud's moments are drawn from their joint law rather than through
its n tokens (`_gaussian_moments`): x̄ ~ N(0, Λ/n) and, independent of it,
(n − 1)Ĉ ~ Wishart_d(n − 1, Λ), by Bartlett's decomposition — the same law at O(d³) per
cloud instead of O(n d²).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__: list[str] = []


def _errors(dev: np.ndarray, C_hat: np.ndarray, C: np.ndarray) -> tuple[float, float]:
    return (float(np.linalg.norm(dev) / np.sqrt(max(np.trace(C), np.finfo(float).tiny))),
            float(np.linalg.norm(C_hat - C) / max(np.linalg.norm(C), np.finfo(float).tiny)))


def _gaussian_moments(lam: np.ndarray, n: int, rng: np.random.Generator
                      ) -> tuple[np.ndarray, np.ndarray]:
    """The mean and unbiased covariance of n ≥ 2 independent draws of N(0, Λ), Λ = diag(lam),
    drawn from their joint law instead of through the draws: x̄ ~ N(0, Λ/n) and, independent of
    it, (n − 1)Ĉ ~ Wishart_d(n − 1, Λ) = Λ^{1/2} A Aᵀ Λ^{1/2} with A lower triangular,
    A_ii² ~ χ²_{n−i} (i = 1..d), A_ij ~ N(0, 1) below the diagonal (Bartlett), or A = Z of
    d × (n − 1) standard normals when n − 1 < d: O(d³) instead of O(n d²)."""
    d, nu = lam.size, n - 1
    root = np.sqrt(np.clip(lam, 0.0, None))
    mean = rng.standard_normal(d) * root / np.sqrt(n)
    if nu >= d:
        A = np.tril(rng.standard_normal((d, d)), -1)
        A[np.diag_indices(d)] = np.sqrt(rng.chisquare(nu - np.arange(d)))
    else:
        A = rng.standard_normal((d, nu))
    RA = root[:, None] * A
    return mean, (RA @ RA.T) / nu


def _floor(C: np.ndarray, n: int, n_sim: int, rng: np.random.Generator, q: float
           ) -> NDArray[np.float64]:
    """(2, 2): [mean, cov] × [median, q-quantile] of the errors of n_sim Gaussian clouds of
    size n with covariance C (simulated in its eigenbasis: the errors are rotation invariant;
    each cloud's moments drawn from their law, `_gaussian_moments`)."""
    lam = np.clip(np.linalg.eigvalsh(C), 0.0, None)
    D = np.diag(lam)
    sims = np.array([_errors(*_gaussian_moments(lam, n, rng), D) for _ in range(n_sim)])
    return np.quantile(sims, [0.5, q], axis=0).T


def _relative_errors(m_hat: np.ndarray, C_hat: np.ndarray, m: np.ndarray, C: np.ndarray
                     ) -> tuple[float, float]:
    """(‖Ĉ − C‖_F/‖Ĉ‖_F, ‖m̂ − m‖/√tr Ĉ): normalised by the measured moments; for a measured
    cloud collapsed to a point (Ĉ = 0) each is 0 where the prediction is exact, else NaN
    (undefined: no scale to measure it by)."""
    scale_cov, scale_mean = float(np.linalg.norm(C_hat)), float(np.sqrt(max(np.trace(C_hat), 0)))

    def ratio(error: float, scale: float) -> float:
        return error / scale if scale > 0 else (0.0 if error == 0 else float("nan"))

    return (ratio(float(np.linalg.norm(C_hat - C)), scale_cov),
            ratio(float(np.linalg.norm(m_hat - m)), scale_mean))


def _baseline_floor(m: np.ndarray, C: np.ndarray, n: int, n_sim: int,
                    rng: np.random.Generator) -> NDArray[np.float64]:
    """RMS over n_sim of (cov, mean) errors of one Gaussian sample of N(m, C) of size n against
    (m, C), and of one against another (normalised by the first sample's moments); simulated
    in the eigenbasis U of C, as N(Uᵀm, UᵀCU) (every error is a Euclidean or Frobenius norm,
    unchanged by the rotation), each sample's moments drawn from their law
    (`_gaussian_moments`)."""
    lam, U = np.linalg.eigh(0.5 * (C + C.T))
    m_u, C_u = U.T @ m, U.T @ C @ U
    sims = []
    for _ in range(n_sim):
        dev1, C1 = _gaussian_moments(lam, n, rng)
        dev2, C2 = _gaussian_moments(lam, n, rng)
        m1, m2 = m_u + dev1, m_u + dev2
        sims.append((*_relative_errors(m1, C1, m_u, C_u), *_relative_errors(m1, C1, m2, C2)))
    return np.sqrt(np.mean(np.square(sims), axis=0))


