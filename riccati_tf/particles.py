"""Token clouds under softmax self-attention (SPEC §1, §7): the finite-N particle system.

    ẋ_i = A x_i + b + Σ_h V_h Σ_j softmax_j(⟨B_h x_i, x_j⟩) x_j
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .errors import InvalidInputError, SolverError
from .model import Params
from .validation import as_count, as_time

#: queries and keys are processed in blocks of this many tokens (memory O(block² + N d))
BLOCK = 2048


def attention_field(x: np.ndarray, y: np.ndarray, B: np.ndarray, V: np.ndarray, *,
                    key_bias: np.ndarray | None = None, block: int = BLOCK) -> np.ndarray:
    """V Σ_j softmax_j(⟨B x_i, y_j⟩ + β_j) y_j for every query x_i, as an (n, d) array.

    x: (n, d) queries; y: (N, d) keys/values; β = key_bias (N,) or None. The softmax runs over key
    blocks with a streaming log-sum-exp (running maximum, rescaled sums), so memory stays
    O(block² + (n + N) d) for any N. Gaussian-kernel attention exp(−|Qx − Ky|²/2) is the case
    B = KᵀQ, β_j = −|K y_j|²/2 (the query term cancels in the softmax).
    """
    q = x @ B.T  # logits_ij = ⟨B x_i, y_j⟩ = q_i · y_j
    out = np.empty((x.shape[0], y.shape[1]))
    for i0 in range(0, x.shape[0], block):
        qi = q[i0:i0 + block]
        run_max = np.full(qi.shape[0], -np.inf)
        run_sum = np.zeros(qi.shape[0])
        run_vec = np.zeros((qi.shape[0], y.shape[1]))
        for j0 in range(0, y.shape[0], block):
            yj = y[j0:j0 + block]
            logits = qi @ yj.T
            if key_bias is not None:
                logits += key_bias[j0:j0 + block]
            new_max = np.maximum(run_max, logits.max(axis=1))
            rescale = np.exp(run_max - new_max)
            weights = np.exp(logits - new_max[:, None])
            run_sum = run_sum * rescale + weights.sum(axis=1)
            run_vec = run_vec * rescale[:, None] + weights @ yj
            run_max = new_max
        out[i0:i0 + block] = run_vec / run_sum[:, None]
    return out @ V.T


@dataclass(frozen=True, eq=False)
class ParticleRun:
    """Empirical moments of a simulated token cloud: t (k,), mean (k, d), cov (k, d, d) with the
    unbiased (N − 1) normalisation; particles (k, N, d) when requested, else None."""

    t: np.ndarray
    mean: np.ndarray
    cov: np.ndarray
    n_tokens: int
    method: str
    particles: np.ndarray | None = None


def velocity(params: Params, x: np.ndarray, *, block: int = BLOCK) -> np.ndarray:
    """X[μ_N](x_i) = A x_i + b + Σ_h V_h Σ_j softmax_j(⟨B_h x_i, x_j⟩) x_j for a cloud x (N, d)."""
    out = x @ params.A.T + params.b
    for V, B in params.heads:
        if np.any(V):
            out += attention_field(x, x, B, V, block=block)
    return out


def empirical_moments(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sample mean and unbiased sample covariance of an (N, d) cloud."""
    mean = x.mean(axis=0)
    xc = x - mean
    return mean, xc.T @ xc / (x.shape[0] - 1)


def simulate(params: Params | Callable[[float], Params], x0: np.ndarray, t_final: float, *,
             n_steps: int, method: str = "rk4", keep_particles: bool = False,
             block: int = BLOCK) -> ParticleRun:
    """Integrate the N-token system ẋ_i = X[μ_N](x_i) on [0, t_final] with n_steps fixed steps.

    method "rk4" (classical Runge–Kutta) or "euler" (the residual network x⁺ = x + τX(x) with
    τ = t_final / n_steps). params: Params or a callable t ↦ Params (time-varying controls).
    """
    x = as_cloud("x0", x0)
    t_final = as_time("t_final", t_final)
    n_steps = as_count("n_steps", n_steps)
    if method not in ("rk4", "euler"):
        raise InvalidInputError(f"method must be 'rk4' or 'euler', got {method!r}")
    params_fn = (lambda _t: params) if isinstance(params, Params) else params
    p0 = params_fn(0.0)
    if not isinstance(p0, Params) or p0.d != x.shape[1]:
        raise InvalidInputError(f"params must be Params on R^{x.shape[1]} (the tokens' dimension)")
    tau = t_final / n_steps
    ts = tau * np.arange(n_steps + 1)
    means, covs, clouds = [], [], []

    def record(x):
        m, S = empirical_moments(x)
        means.append(m), covs.append(S)
        if keep_particles:
            clouds.append(x.copy())

    record(x)
    for k in range(n_steps):
        t = ts[k]
        k1 = velocity(params_fn(t), x, block=block)
        if method == "euler":
            x = x + tau * k1
        else:
            k2 = velocity(params_fn(t + tau / 2), x + tau / 2 * k1, block=block)
            k3 = velocity(params_fn(t + tau / 2), x + tau / 2 * k2, block=block)
            k4 = velocity(params_fn(t + tau), x + tau * k3, block=block)
            x = x + tau / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        if not np.all(np.isfinite(x)):
            raise SolverError(f"the particle cloud overflowed at t = {ts[k + 1]:.6g}")
        record(x)
    return ParticleRun(ts, np.array(means), np.array(covs), x.shape[0], method,
                       np.array(clouds) if keep_particles else None)


def as_cloud(name: str, x) -> np.ndarray:
    """A finite (N, d) array of N ≥ 2 tokens."""
    arr = np.array(x, dtype=float)
    if arr.ndim != 2 or arr.shape[0] < 2:
        raise InvalidInputError(f"{name} must be an (N, d) array of N ≥ 2 tokens, got shape "
                                f"{arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise InvalidInputError(f"{name} contains NaN or Inf")
    return arr
