"""Gaussian closures (moment matching) of the LayerNorm and the feed-forward block.

LayerNorm, y = γ ⊙ P x/√(s² + ε) + β with P = I − 11ᵀ/d and s² = |P x|²/d. For x ~ N(m, Σ) the
norm concentrates at large d: s² is replaced by its mean E s² = (|P m|² + tr PΣP)/d, which makes
the map affine,

    y ≈ J x + β,   J = diag(γ) P / r,   r = √(E s² + ε).

Its error is governed by the relative fluctuation of the norm,
κ = √Var(s²)/(E s² + ε) with Var(|P x|²) = 2 tr (PΣP)² + 4 mᵀPΣPm (κ² ≈ 2/d for isotropic Σ):
the neglected terms of the mean and covariance are O(κ²) relative (tests measure them).

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

#: draws of y for the covariance of a gated feed-forward block
GATED_SAMPLES = 20_000


@dataclass(frozen=True, eq=False)
class AffineClosure:
    """y ≈ J x + c for x ~ N(m, Σ); kappa: the closure's error indicator."""

    J: np.ndarray
    c: np.ndarray
    kappa: float


@dataclass(frozen=True, eq=False)
class MLPMoments:
    """Moments of o = mlp(y) for Gaussian y: mean (d,), cov (d, d), jacobian E[J] (d, d) (so that
    Cov(r, o) = Cov(r, y) E[J]ᵀ), bound: the closure's error on cov relative to ‖cov‖_F."""

    mean: np.ndarray
    cov: np.ndarray
    jacobian: np.ndarray
    bound: float


def layer_norm_closure(norm: LayerNormParams, mean: np.ndarray, cov: np.ndarray
                       ) -> AffineClosure:
    """The concentrated-norm affine closure of a LayerNorm at x ~ N(mean, cov) (module
    docstring)."""
    d = mean.shape[0]
    Pm = mean - mean.mean()
    PS = cov - cov.mean(axis=0, keepdims=True)
    PSP = PS - PS.mean(axis=1, keepdims=True)
    second = (Pm @ Pm + np.trace(PSP)) / d
    variance = (2 * np.sum(PSP * PSP) + 4 * Pm @ PSP @ Pm) / d**2
    r = np.sqrt(second + norm.eps)
    P = np.eye(d) - 1.0 / d
    return AffineClosure(norm.gamma[:, None] * P / r, norm.beta.copy(),
                         float(np.sqrt(variance) / r**2))


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
    """The Gaussian closure of the feed-forward block at y ~ N(mean, cov) (module docstring)."""
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
    g_mean = mlp.W_gate @ mean + mlp.b_gate
    cross = np.einsum("ij,jk,ik->i", mlp.W_in, cov, mlp.W_gate)  # Cov(u_i, g_i)
    o_mean = mlp.W_out @ (mom.mean * g_mean + cross * mom.slope) + mlp.b_out
    gain = mom.slope * g_mean + cross * mom.curvature
    jac = mlp.W_out @ (gain[:, None] * mlp.W_in + mom.mean[:, None] * mlp.W_gate)
    out_cov, se = _sampled_cov(mlp, mean, cov, gated_samples, seed)
    return MLPMoments(o_mean, out_cov, jac, se)


def _sampled_cov(mlp: MLPParams, mean, cov, n: int, seed: int) -> tuple[np.ndarray, float]:
    """Monte-Carlo covariance of the gated block and its relative standard error
    √(Σ_ij (C_ii C_jj + C_ij²)/n)/‖C‖_F."""
    w, U = np.linalg.eigh(cov)
    root = U * np.sqrt(np.clip(w, 0.0, None))
    y = mean + np.random.default_rng(seed).standard_normal((n, mean.shape[0])) @ root.T
    C = np.cov(mlp_forward(mlp, y), rowvar=False)
    v = np.diag(C)
    se = np.sqrt((np.sum(np.outer(v, v)) + np.sum(C * C)) / n)
    return C, float(se / max(np.linalg.norm(C), np.finfo(float).tiny))

