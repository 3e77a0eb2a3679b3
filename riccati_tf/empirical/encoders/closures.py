"""Gaussian closures (moment matching) of the LayerNorm and the feed-forward block.

LayerNorm, y = γ ⊙ z/√q + β with z = P x, P = I − 11ᵀ/d, q = |z|²/d + ε. For x ~ N(m, Σ),
z ~ N(μ, C) with μ = P m, C = PΣP, and the norm concentrates at large d: q = q̄ + δ with
q̄ = E q = (|μ|² + tr C)/d + ε and relative fluctuation κ = √Var δ / q̄,
Var δ = (2 tr C² + 4 μᵀCμ)/d² (κ² ≈ 2/d for isotropic Σ). Expanding q^{−1/2} and q^{−1} to
second order in δ, with the Gaussian moments E[zδ] = 2Cμ/d and
E[zzᵀδ] = 2(C² + μ(Cμ)ᵀ + (Cμ)μᵀ)/d (and E[·δ²] ≈ E[·] Var δ), t = κ², K = C + μμᵀ:

    E z/√q ≈ q̄^{−1/2} (μ (1 + 3t/8) − Cμ/(d q̄)),
    E zzᵀ/q ≈ q̄^{−1} (K (1 + t) − 2(C² + μ(Cμ)ᵀ + (Cμ)μᵀ)/(d q̄)),
    E ∇_x y ≈ diag(γ) (q̄^{−1/2}(1 + 3t/8) I − K/(d q̄^{3/2})) P,

which gives E y = γ ⊙ E z/√q + β, Cov y = diag(γ)(E zzᵀ/q − E(z/√q) E(z/√q)ᵀ)diag(γ), and by
Stein's lemma Cov(x, y) = Σ E[∇y]ᵀ. (For isotropic zero-mean z and ε = 0 the covariance is
exact: z/|z| is uniform on the sphere.) The neglected terms are O(κ³) relative, where the
first-order closure (q replaced by q̄, an affine map) errs by O(κ²); tests measure the error
against Monte Carlo.

Feed-forward block, o = W_out f(u) + b_out, u = W_in y + b_in, for y ~ N(m, Σ): u is Gaussian,
E f(u) and Cov f(u) follow from `hermite` (exact one-dimensional moments, Mehler's series for the
cross-covariances with its computable cut-off bound), and by Stein's lemma the cross-covariance
with anything jointly Gaussian with y is linear: Cov(r, o) = Cov(r, y) E[J]ᵀ with the mean
Jacobian E[J] = W_out diag(E f'(u)) W_in. The gated block o = W_out (f(u) ⊙ g) + b_out,
g = W_gate y + b_gate, has the exact mean E[f(u_i)]E[g_i] + Cov(u_i, g_i)E[f'(u_i)] and mean
Jacobian W_out (diag(E f'(u) ⊙ E g + Cov(u, g) ⊙ E f''(u)) W_in + diag(E f(u)) W_gate) (Stein
again); its covariance is moment-matched by Monte Carlo with `gated_samples` draws of y (sampling
error O(n^{-1/2}); the bound reported is the estimated standard error).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .factors import LayerNormParams, MLPParams
from .forward import mlp_forward
from .hermite import DEFAULT_TERMS, activation_covariance, activation_moments

__all__ = ["GATED_SAMPLES", "MLPMoments", "NormMoments", "layer_norm_closure", "mlp_closure"]

#: draws of y for the covariance of a gated feed-forward block
GATED_SAMPLES = 20_000


@dataclass(frozen=True, eq=False)
class NormMoments:
    """Moments of y = LN(x) for Gaussian x, the result of `layer_norm_closure`.

    Parameters
    ----------
    mean : (d,) ndarray
        E y.
    cov : (d, d) ndarray
        Cov y.
    jacobian : (d, d) ndarray
        E[∇y], so that Cov(r, y) = Cov(r, x) E[∇y]ᵀ (Stein's lemma).
    kappa : float
        κ, the relative fluctuation of the norm (NaN: no norm).

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field.

    See Also
    --------
    layer_norm_closure : produces it.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders import LayerNormParams
    >>> from riccati_tf.empirical.encoders.closures import layer_norm_closure
    >>> moments = layer_norm_closure(LayerNormParams(np.ones(3), np.zeros(3), 0.0),
    ...                              np.zeros(3), np.eye(3))
    >>> moments.mean.tolist(), moments.cov.shape
    ([0.0, 0.0, 0.0], (3, 3))
    """

    mean: np.ndarray
    cov: np.ndarray
    jacobian: np.ndarray
    kappa: float


@dataclass(frozen=True, eq=False)
class MLPMoments:
    """Moments of o = mlp(y) for Gaussian y, the result of `mlp_closure`.

    Parameters
    ----------
    mean : (d,) ndarray
        E o.
    cov : (d, d) ndarray
        Cov o.
    jacobian : (d, d) ndarray
        The mean Jacobian E[J], so that Cov(r, o) = Cov(r, y) E[J]ᵀ (Stein's lemma).
    bound : float
        The closure's error on cov relative to ‖cov‖_F (Mehler's cut-off bound, or the
        standard error of the Monte-Carlo covariance of a gated block).

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field.

    See Also
    --------
    mlp_closure : produces it.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders import MLPParams
    >>> from riccati_tf.empirical.encoders.closures import mlp_closure
    >>> I, z = np.eye(2), np.zeros(2)
    >>> moments = mlp_closure(MLPParams(I, z, I, z, "relu"), z, I)
    >>> moments.jacobian.tolist(), moments.bound
    ([[0.5, 0.0], [0.0, 0.5]], 0.0)
    """

    mean: np.ndarray
    cov: np.ndarray
    jacobian: np.ndarray
    bound: float


def layer_norm_closure(norm: LayerNormParams, mean: np.ndarray, cov: np.ndarray
                       ) -> NormMoments:
    """The second-order Gaussian closure of a LayerNorm at x ~ N(mean, cov) (module docstring).

    With z = P x, q̄ = (|μ|² + tr C)/d + ε and κ the relative fluctuation of the norm,
    q^{−1/2} and q^{−1} are expanded to second order in the fluctuation, giving E y, Cov y
    and E[∇y]; the neglected terms are O(κ³) relative (κ² ≈ 2/d for isotropic Σ).

    Parameters
    ----------
    norm : LayerNormParams
        The LayerNorm (γ, β, ε).
    mean : (d,) ndarray
        The mean of x.
    cov : (d, d) ndarray
        The covariance of x (not validated).

    Returns
    -------
    NormMoments
        E y, Cov y, E[∇y] and κ.

    Raises
    ------
    ValueError
        From numpy when the shapes of mean, cov and norm disagree.

    See Also
    --------
    mlp_closure : the closure of the feed-forward block.
    predict_moments : composes the closures layer by layer.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    For isotropic zero-mean input and ε = 0 the covariance is exact, d/(d − 1) P with
    P = I − 11ᵀ/d (z/|z| is uniform on the sphere):

    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders import LayerNormParams
    >>> from riccati_tf.empirical.encoders.closures import layer_norm_closure
    >>> moments = layer_norm_closure(LayerNormParams(np.ones(4), np.zeros(4), 0.0),
    ...                              np.zeros(4), np.eye(4))
    >>> bool(np.allclose(moments.cov, 4 / 3 * (np.eye(4) - 1 / 4)))
    True
    >>> print(round(moments.kappa, 6), round(float(np.sqrt(2 / 3)), 6))
    0.816497 0.816497
    """
    d = mean.shape[0]
    mu = mean - mean.mean()
    PS = cov - cov.mean(axis=0, keepdims=True)
    C = PS - PS.mean(axis=1, keepdims=True)
    Cmu = C @ mu
    q = (mu @ mu + np.trace(C)) / d + norm.eps
    t = (2 * np.sum(C * C) + 4 * mu @ Cmu) / (d * q) ** 2
    K = C + np.outer(mu, mu)
    Ez = (mu * (1 + 3 * t / 8) - Cmu / (d * q)) / np.sqrt(q)
    Ezz = (K * (1 + t) - 2 * (C @ C + np.outer(mu, Cmu) + np.outer(Cmu, mu)) / (d * q)) / q
    g = norm.gamma
    cov_y = g[:, None] * (Ezz - np.outer(Ez, Ez)) * g[None, :]
    inner = np.eye(d) * ((1 + 3 * t / 8) / np.sqrt(q)) - K / (d * q**1.5)
    jac = g[:, None] * (inner - inner.mean(axis=1, keepdims=True))  # (·) P
    return NormMoments(g * Ez + norm.beta, 0.5 * (cov_y + cov_y.T), jac, float(np.sqrt(t)))


def _correlation(S: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    inv = np.where(sigma > 0, 1 / np.where(sigma > 0, sigma, 1.0), 0.0)
    R = np.clip(S * np.outer(inv, inv), -1.0, 1.0)
    np.fill_diagonal(R, np.where(sigma > 0, 1.0, 0.0))
    return R


def _relative(C_bound: np.ndarray, cov: np.ndarray) -> float:
    scale = np.linalg.norm(cov)
    return float(np.linalg.norm(C_bound) / scale) if scale > 0 else 0.0


def mlp_closure(mlp: MLPParams, mean: np.ndarray, cov: np.ndarray, *,
                terms: int = DEFAULT_TERMS, gated_samples: int = GATED_SAMPLES,
                seed: int = 0) -> MLPMoments:
    """The Gaussian closure of the feed-forward block at y ~ N(mean, cov) (module docstring).

    u = W_in y + b_in is Gaussian: E f(u) and Cov f(u) follow from `hermite` (exact
    one-dimensional moments and Mehler's series with its cut-off bound), and the mean Jacobian
    is E[J] = W_out diag(E f'(u)) W_in. A gated block has its exact mean and mean Jacobian
    (Stein's lemma) and a Monte-Carlo covariance from `gated_samples` draws.

    Parameters
    ----------
    mlp : MLPParams
        The block.
    mean : (d,) ndarray
        The mean of y.
    cov : (d, d) ndarray
        The covariance of y (not validated).
    terms : int, optional
        Hermite terms of Mehler's series, 2 ≤ terms ≤ MAX_TERMS (default DEFAULT_TERMS).
    gated_samples : int, optional
        Draws for the covariance of a gated block (default GATED_SAMPLES).
    seed : int, optional
        The seed of those draws (default 0).

    Returns
    -------
    MLPMoments
        E o, Cov o, E[J] and the relative error bound on Cov o.

    Raises
    ------
    InvalidInputError
        For an activation outside ACTIVATIONS or terms out of range.

    See Also
    --------
    layer_norm_closure : the closure of the LayerNorm.
    riccati_tf.empirical.encoders.hermite.activation_moments : the one-dimensional moments.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    ReLU of a standard normal per unit: E o = φ(0), Var o = 1/2 − 1/(2π), E[J] = I/2.

    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders import MLPParams
    >>> from riccati_tf.empirical.encoders.closures import mlp_closure
    >>> I, z = np.eye(2), np.zeros(2)
    >>> moments = mlp_closure(MLPParams(I, z, I, z, "relu"), z, I)
    >>> np.round(moments.mean, 6), np.round(moments.cov, 6)
    (array([0.398942, 0.398942]), array([[0.340845, 0.      ],
           [0.      , 0.340845]]))
    """
    mu = mlp.W_in @ mean + mlp.b_in
    Su = mlp.W_in @ cov @ mlp.W_in.T
    sigma = np.sqrt(np.maximum(np.diag(Su), 0.0))
    mom = activation_moments(mlp.activation, mu, sigma, terms)
    if not mlp.gated:
        C, err = activation_covariance(mom, _correlation(Su, sigma))
        out_cov = mlp.W_out @ C @ mlp.W_out.T
        absW = np.abs(mlp.W_out)
        return MLPMoments(mlp.W_out @ mom.mean + mlp.b_out, out_cov,
                          mlp.W_out @ (mom.slope[:, None] * mlp.W_in),
                          _relative(absW @ err @ absW.T, out_cov))
    assert mlp.W_gate is not None  # not gated returned above
    g_mean = mlp.W_gate @ mean + mlp.b_gate
    cross = np.einsum("ij,jk,ik->i", mlp.W_in, cov, mlp.W_gate)  # Cov(u_i, g_i)
    o_mean = mlp.W_out @ (mom.mean * g_mean + cross * mom.slope) + mlp.b_out
    gain = mom.slope * g_mean + cross * mom.curvature
    jac = mlp.W_out @ (gain[:, None] * mlp.W_in + mom.mean[:, None] * mlp.W_gate)
    out_cov, se = _sampled_cov(mlp, mean, cov, gated_samples, seed)
    return MLPMoments(o_mean, out_cov, jac, se)


def _sampled_cov(mlp: MLPParams, mean: np.ndarray, cov: np.ndarray, n: int, seed: int
                 ) -> tuple[np.ndarray, float]:
    """Monte-Carlo covariance of the gated block and its relative standard error
    √(Σ_ij (C_ii C_jj + C_ij²)/n)/‖C‖_F."""
    w, U = np.linalg.eigh(cov)
    root = U * np.sqrt(np.clip(w, 0.0, None))
    y = mean + np.random.default_rng(seed).standard_normal((n, mean.shape[0])) @ root.T
    C = np.cov(mlp_forward(mlp, y), rowvar=False)
    v = np.diag(C)
    se = np.sqrt((np.sum(np.outer(v, v)) + np.sum(C * C)) / n)
    return C, float(se / max(np.linalg.norm(C), np.finfo(float).tiny))

