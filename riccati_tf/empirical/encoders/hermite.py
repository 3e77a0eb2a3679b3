"""Moments of elementwise activations of jointly Gaussian pre-activations (Mehler's expansion).

For u ~ N(μ, S) in R^I write u_i = μ_i + σ_i z_i (σ_i² = S_ii), ρ_ij = S_ij/(σ_iσ_j), and expand
each g_i(z) = f(μ_i + σ_i z) in normalised probabilists' Hermite polynomials h_k = He_k/√k!:

    g_i = Σ_k â_ik h_k,   â_ik = E[g_i(Z) h_k(Z)] = σ_i^k E[f^{(k)}(u_i)]/√k!   (Stein),

so that (Mehler) E[f(u_i)] = â_i0 and, for i ≠ j,

    Cov(f(u_i), f(u_j)) = Σ_{k ≥ 1} â_ik â_jk ρ_ij^k.

The series is cut after K terms (DEFAULT_TERMS). The diagonal is the exact variance
E[f(u_i)²] − E[f(u_i)]², and the cut-off error of every off-diagonal entry is bounded by
Cauchy–Schwarz with the computable tails t_i = Var f(u_i) − Σ_{k ≤ K} â_ik² ≥ 0 (plus its
rounding, 4(K + 2) eps E f(u_i)², so that a tail below rounding is not taken as zero):

    |error_ij| ≤ |ρ_ij|^{K+1} √(t_i t_j).

Coefficients: ReLU exactly (c = μ/σ: â_0 = σφ(c) + μΦ(c), â_1 = σΦ(c), a_k = σφ(c)He_{k−2}(−c)
for k ≥ 2, E[relu(u)²] = (μ² + σ²)Φ(c) + μσφ(c)); GELU f(x) = xΦ(x) exactly, from
e_j = E[Φ^{(j)}(u)] = s^{−j}Φ^{(j)}(μ/s), s = √(1 + σ²), and
E[f^{(k)}(u)] = μe_k + σ²e_{k+1} + k e_{k−1}; its second moment by Stein's lemma,

    E[u²Φ²] = μ(μE[Φ²] + 2σ²E[Φφ]) + σ²(E[Φ²] + 2E[uΦφ]),
    E[uΦφ] = (μE[Φφ] + σ²E[φ²])/s²,   E[φ²] = exp(−μ²/(1 + 2σ²))/(2π√(1 + 2σ²)),
    E[Φφ] = φ(μ/s)/s · Φ(μ/(s√(1 + 2σ²))),   E[Φ²] = Φ(μ/s) − 2T(μ/s, 1/√(1 + 2σ²))

(T Owen's function: E[Φ(u)²] = P(Z₁ ≤ u, Z₂ ≤ u) is a bivariate normal probability with
correlation σ²/s²). The tanh approximation of GELU: GELU's closed forms plus quadrature
(QUADRATURE_NODES Gauss–Hermite or Gauss–Legendre nodes) of the small difference (tests compare
with adaptive quadrature). E[f'(u)] and E[f''(u)] (Stein's lemma: Cov(x, f(u)) =
Cov(x, u) E[f'(u)]) come with them.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import factorial

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from numpy.polynomial.legendre import leggauss
from scipy.special import ndtr, owens_t

from ...errors import InvalidInputError
from ...state.validation import as_count

__all__ = ["DEFAULT_TERMS", "MAX_TERMS", "ActivationMoments", "activation_covariance",
           "activation_moments"]

#: Hermite terms kept in Mehler's series, and the most accepted (√k! overflows near k ≈ 170)
DEFAULT_TERMS = 30
MAX_TERMS = 150
#: quadrature nodes for the moments without closed form (tanh GELU)
QUADRATURE_NODES = 160
#: |x| beyond which the difference of the two GELUs and its derivatives vanish (< 1e-25)
DELTA_SUPPORT = 12.0
_TANH_K = np.sqrt(2 / np.pi)
_TANH_C = 0.044715


def _phi(x):
    return np.exp(-0.5 * x * x) / np.sqrt(2 * np.pi)


def _relu(x):
    return np.maximum(x, 0.0)


def _gelu(x):
    return x * ndtr(x)


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(_TANH_K * (x + _TANH_C * x**3)))


def _gelu_tanh_derivatives(x):
    """(f', f'') of the tanh approximation f = ½x(1 + tanh p), p = k(x + c x³)."""
    t = np.tanh(_TANH_K * (x + _TANH_C * x**3))
    p1, p2 = _TANH_K * (1 + 3 * _TANH_C * x**2), 6 * _TANH_K * _TANH_C * x
    sech2 = 1 - t * t
    return 0.5 * (1 + t) + 0.5 * x * sech2 * p1, sech2 * (p1 + 0.5 * x * (p2 - 2 * t * p1**2))


#: the elementwise functions, for evaluating a layer on tokens
FUNCTIONS = {"relu": _relu, "gelu": _gelu, "gelu_tanh": _gelu_tanh}


@dataclass(frozen=True, eq=False)
class ActivationMoments:
    """One-dimensional moments of f(u_i), u_i ~ N(μ_i, σ_i²), for I units.

    With g_i(z) = f(μ_i + σ_i z) = Σ_k â_ik h_k(z) in normalised Hermite polynomials
    h_k = He_k/√k!, â_ik = σ_i^k E[f^(k)(u_i)]/√k! (module docstring).

    Parameters
    ----------
    mean : (I,) ndarray
        E f(u_i).
    variance : (I,) ndarray
        Var f(u_i).
    slope : (I,) ndarray
        E f'(u_i) (Stein's lemma: Cov(x, f(u)) = Cov(x, u) E[f'(u)]).
    curvature : (I,) ndarray
        E f''(u_i).
    coeffs : (I, K) ndarray
        The coefficients â_ik for k = 1..K.
    tails : (I,) ndarray
        t_i = Var f(u_i) − Σ_{k ≤ K} â_ik² ≥ 0, the variance beyond the cut-off, plus the
        rounding of that difference, 4(K + 2) eps E f(u_i)² (an upper bound).

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field.

    See Also
    --------
    activation_moments : produces it.
    activation_covariance : Mehler's series for the cross-covariances.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders.hermite import activation_moments
    >>> m = activation_moments("gelu", np.zeros(1), np.ones(1), terms=10)
    >>> m.coeffs.shape, bool(m.tails[0] >= 0)
    ((1, 10), True)
    """

    mean: np.ndarray
    variance: np.ndarray
    slope: np.ndarray
    curvature: np.ndarray
    coeffs: np.ndarray
    tails: np.ndarray


def _hermite_table(x: np.ndarray, K: int) -> np.ndarray:
    """h_k(x) = He_k(x)/√k! for k = 0..K, stacked on a new last axis."""
    out = np.empty((*x.shape, K + 1))
    out[..., 0] = 1.0
    if K >= 1:
        out[..., 1] = x
    for k in range(1, K):
        out[..., k + 1] = (x * out[..., k] - np.sqrt(k) * out[..., k - 1]) / np.sqrt(k + 1)
    return out


def _norms(K: int) -> np.ndarray:
    return np.sqrt([float(factorial(k)) for k in range(K + 1)])


def _relu_moments(mu, sigma, K):
    safe = np.where(sigma > 0, sigma, 1.0)
    c = np.where(sigma > 0, mu / safe, np.where(mu > 0, np.inf, -np.inf))
    Phi, phi = ndtr(c), np.where(np.isfinite(c), _phi(np.where(np.isfinite(c), c, 0.0)), 0.0)
    mean = np.where(sigma > 0, sigma * phi + mu * Phi, _relu(mu))
    second = np.where(sigma > 0, (mu**2 + sigma**2) * Phi + mu * sigma * phi, _relu(mu) ** 2)
    a = np.zeros((mu.size, K + 1))
    a[:, 0] = mean
    a[:, 1] = sigma * Phi
    if K >= 2:
        # a_k = σφ(c)He_{k−2}(−c): He_{k−2} = √(k−2)! h_{k−2}
        he = _hermite_table(np.where(np.isfinite(c), -c, 0.0), K - 2) * _norms(K - 2)
        a[:, 2:] = (sigma * phi)[:, None] * he
    curvature = np.where(sigma > 0, phi / safe, 0.0)
    return mean, second, Phi, curvature, a / _norms(K)


def _gelu_moments(mu, sigma, K):
    s = np.sqrt(1 + sigma**2)
    x = mu / s
    # e_j = s^{−j} Φ^{(j)}(x), Φ^{(j)} = (−1)^{j−1} He_{j−1} φ for j ≥ 1
    he = _hermite_table(x, K) * _norms(K)
    signs = (-1.0) ** np.arange(K + 1)
    e = np.empty((mu.size, K + 2))
    e[:, 0] = ndtr(x)
    e[:, 1:] = (signs * he) * _phi(x)[:, None] / s[:, None] ** np.arange(1, K + 2)
    k = np.arange(K + 1)
    deriv = mu[:, None] * e[:, :K + 1] + (sigma**2)[:, None] * e[:, 1:K + 2]
    deriv[:, 1:] += k[1:] * e[:, :K]
    a = deriv * sigma[:, None] ** k
    second = _gelu_second_moment(mu, sigma)
    slope = deriv[:, 1] if K >= 1 else None
    curvature = deriv[:, 2] if K >= 2 else None
    return a[:, 0], second, slope, curvature, a / _norms(K)


def _gelu_second_moment(mu, sigma):
    """E[(uΦ(u))²] for u ~ N(μ, σ²) in closed form (module docstring)."""
    s2, q2 = 1 + sigma**2, 1 + 2 * sigma**2
    s = np.sqrt(s2)
    e_phi2 = np.exp(-mu**2 / q2) / (2 * np.pi * np.sqrt(q2))
    e_Phi_phi = _phi(mu / s) / s * ndtr(mu / (s * np.sqrt(q2)))
    e_Phi2 = ndtr(mu / s) - 2 * owens_t(mu / s, 1 / np.sqrt(q2))
    e_u_Phi_phi = (mu * e_Phi_phi + sigma**2 * e_phi2) / s2
    return mu * (mu * e_Phi2 + 2 * sigma**2 * e_Phi_phi) + sigma**2 * (e_Phi2 + 2 * e_u_Phi_phi)


def _nodes(mu, sigma):
    """Quadrature nodes x (I, n) and weights w (I, n) of E[g(u)], u ~ N(μ_i, σ_i²), for g
    negligible outside |x| ≤ DELTA_SUPPORT: Gauss–Hermite in z = (x − μ)/σ when σ ≤ 1,
    Gauss–Legendre on [−DELTA_SUPPORT, DELTA_SUPPORT] weighted by the density when σ > 1 (the
    density is then smoother than g)."""
    z, wz = hermegauss(QUADRATURE_NODES)
    t, wt = leggauss(QUADRATURE_NODES)
    t, wt = DELTA_SUPPORT * t, DELTA_SUPPORT * wt
    wide = (sigma > 1)[:, None]
    safe = np.where(sigma > 1, sigma, 1.0)[:, None]
    x = np.where(wide, t, mu[:, None] + sigma[:, None] * z)
    w = np.where(wide, wt * _phi((t - mu[:, None]) / safe) / safe, wz / np.sqrt(2 * np.pi))
    return x, w


def _gelu_tanh_moments(mu, sigma, K):
    """GELU's exact moments plus quadrature (`_nodes`) of the small, rapidly decaying
    difference δ = f_tanh − f_gelu (|δ| < 2e-4) and of its derivatives."""
    mean, second, slope, curvature, a = _gelu_moments(mu, sigma, K)
    x, w = _nodes(mu, sigma)
    gelu, delta = _gelu(x), _gelu_tanh(x) - _gelu(x)
    d1, d2 = _gelu_tanh_derivatives(x)
    g1, g2 = ndtr(x) + x * _phi(x), _phi(x) * (2 - x * x)
    z = (x - mu[:, None]) / np.where(sigma > 0, sigma, 1.0)[:, None]
    a = a + np.einsum("in,ink->ik", delta * w, _hermite_table(z, K))
    return (mean + np.sum(delta * w, axis=1), second + np.sum(delta * (2 * gelu + delta) * w, 1),
            slope + np.sum((d1 - g1) * w, 1), curvature + np.sum((d2 - g2) * w, 1), a)


_MOMENTS = {"relu": _relu_moments, "gelu": _gelu_moments, "gelu_tanh": _gelu_tanh_moments}


def activation_moments(activation: str, mu: np.ndarray, sigma: np.ndarray,
                       terms: int = DEFAULT_TERMS) -> ActivationMoments:
    """The one-dimensional moments of f(u_i), u_i ~ N(μ_i, σ_i²) (module docstring).

    ReLU and GELU f(x) = xΦ(x) in closed form (Stein's lemma, Owen's T for GELU's second
    moment); the tanh approximation of GELU as GELU plus quadrature of the small difference.

    Parameters
    ----------
    activation : {"relu", "gelu", "gelu_tanh"}
        The elementwise function f.
    mu : (I,) array_like
        The means μ_i.
    sigma : (I,) array_like
        The standard deviations σ_i ≥ 0.
    terms : int, optional
        The Hermite terms K kept, 2 ≤ terms ≤ MAX_TERMS (default DEFAULT_TERMS).

    Returns
    -------
    ActivationMoments
        Mean, variance, E f', E f'', the Hermite coefficients and their tails.

    Raises
    ------
    InvalidInputError
        For an unknown activation or terms out of range.

    See Also
    --------
    activation_covariance : the covariance of f(u) from these moments.
    riccati_tf.empirical.encoders.closures.mlp_closure : the feed-forward closure using them.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".
    .. [2] F. G. Mehler, "Ueber die Entwicklung einer Function von beliebig vielen Variabeln
       nach Laplaceschen Functionen höherer Ordnung", J. Reine Angew. Math. 66, 1866.

    Examples
    --------
    ReLU of a standard normal: E = φ(0), Var = 1/2 − 1/(2π), E f' = Φ(0).

    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders.hermite import activation_moments
    >>> m = activation_moments("relu", np.zeros(1), np.ones(1))
    >>> print(round(float(m.mean[0]), 6), round(float(m.variance[0]), 6), float(m.slope[0]))
    0.398942 0.340845 0.5
    """
    if activation not in _MOMENTS:
        raise InvalidInputError(f"activation must be one of {sorted(_MOMENTS)}, "
                                f"got {activation!r}")
    terms = as_count("terms", terms, minimum=2, maximum=MAX_TERMS)
    mu, sigma = np.asarray(mu, dtype=float), np.asarray(sigma, dtype=float)
    mean, second, slope, curvature, a = _MOMENTS[activation](mu, sigma, terms)
    variance = np.maximum(second - mean**2, 0.0)
    coeffs = a[:, 1:]
    # the difference rounds at ~(K + 2) eps E f(u)²: a tail below that is not known to be
    # smaller, so the bound keeps the rounding (a clipped 0 would claim an exact series)
    rounding = 4 * (coeffs.shape[1] + 2) * np.finfo(float).eps * (variance + mean**2)
    tails = np.maximum(variance - np.sum(coeffs**2, axis=1), 0.0) + rounding
    return ActivationMoments(mean, variance, slope, curvature, coeffs, tails)


def activation_covariance(moments: ActivationMoments, correlation: np.ndarray
                          ) -> tuple[np.ndarray, np.ndarray]:
    """Mehler's series for Cov(f(u_i), f(u_j)) with its cut-off bound.

    Off the diagonal C_ij = Σ_{k ≤ K} â_ik â_jk ρ_ij^k, on it C_ii = Var f(u_i); by
    Cauchy–Schwarz the cut-off error of C_ij is at most E_ij = |ρ_ij|^{K+1} √(t_i t_j).

    Parameters
    ----------
    moments : ActivationMoments
        The one-dimensional moments of the I units.
    correlation : (I, I) ndarray
        The correlations ρ_ij of the pre-activations (not validated).

    Returns
    -------
    C : (I, I) ndarray
        The covariance of f(u).
    E : (I, I) ndarray
        The entrywise bound on the cut-off error (0 on the diagonal).

    Raises
    ------
    ValueError
        From numpy when correlation is not (I, I).

    See Also
    --------
    activation_moments : the moments.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".
    .. [2] F. G. Mehler, "Ueber die Entwicklung einer Function von beliebig vielen Variabeln
       nach Laplaceschen Functionen höherer Ordnung", J. Reine Angew. Math. 66, 1866.

    Examples
    --------
    ReLU at correlation ½: the arc-cosine kernel (√(1 − ρ²) + ρ(π − arccos ρ))/(2π) − 1/(2π).

    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders.hermite import (activation_covariance,
    ...     activation_moments)
    >>> m = activation_moments("relu", np.zeros(2), np.ones(2))
    >>> C, E = activation_covariance(m, np.array([[1.0, 0.5], [0.5, 1.0]]))
    >>> exact = (np.sqrt(0.75) + 0.5 * (np.pi - np.arccos(0.5)) - 1) / (2 * np.pi)
    >>> print(round(float(C[0, 1]), 6), bool(abs(C[0, 1] - exact) <= E[0, 1] < 1e-12))
    0.145344 True
    """
    a = moments.coeffs
    power = np.ones_like(correlation)
    C = np.zeros_like(correlation)
    for k in range(a.shape[1]):
        power = power * correlation
        C += np.outer(a[:, k], a[:, k]) * power
    bound = np.abs(power * correlation) * np.sqrt(np.outer(moments.tails, moments.tails))
    np.fill_diagonal(C, moments.variance)
    np.fill_diagonal(bound, 0.0)
    return C, bound
