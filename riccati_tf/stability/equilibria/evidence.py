"""An equilibrium Σ* packaged with its evidence (SPEC §5): the relative residual, the rank,
the verdict on L (the spectrum for d ≤ DENSE_SPECTRUM_MAX_D, `linearization_stability` beyond),
and the mean equilibrium m* = −K*⁻¹ b where K* = A + Σ_h V_h + Σ_h V_h Σ* B_h is Hurwitz.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ...state.params import Params
from ..riccati.numerics import exponent
from .constants import DENSE_SPECTRUM_MAX_D, RANK_RTOL
from .field import relative_residual
from .linearization import linearization_stability, spectral_abscissa
from .results import Equilibrium, Stability

__all__: list[str] = []


def mean_equilibrium(params: Params, cov: np.ndarray, *,
                     hurwitz: bool | None = None) -> np.ndarray | None:
    """m* = −K⁻¹ b with K = A + Σ_h V_h + Σ_h V_h Σ B_h, when K is Hurwitz and m* lies in the
    float range; else None (computed with K scaled by a power of two). hurwitz: whether K is
    Hurwitz when already known (`scalar_mean_hurwitz`), else decided from the eigenvalues of K."""
    if hurwitz is False:
        return None
    if hurwitz and not np.any(params.b):
        return np.zeros(params.d)
    K = params.M(cov) + sum((V for V, _ in params.heads), start=0.0)
    e = exponent(K)
    Ks = np.ldexp(K, -e)  # the sign test and the solve on K scaled by a power of two
    if hurwitz is None and np.max(np.linalg.eigvals(Ks).real) >= 0:
        return None
    with np.errstate(over="ignore", under="ignore"):
        m = np.ldexp(-np.linalg.solve(Ks, params.b), -e)
    return m if np.all(np.isfinite(m)) else None


def scalar_mean_hurwitz(params: Params, rank: int, closed_loop: np.ndarray) -> bool:
    """Whether K = A + v̄I + Σ C (v̄ = Σ_h v_h, C = Σ_h v_h B_h) is Hurwitz at the stabilizing
    Bernoulli solution Σ = U₁P⁻¹U₁ᵀ (P ≻ 0, rank k) of a scalar-V layer, without its spectrum.

    In the Schur basis of A, UᵀKU = [[K₁₁, ·], [0, T₂₂ + v̄I]] with K₁₁ = T₁₁ + P⁻¹U₁ᵀCU₁ + v̄I,
    and since U₁ᵀGU₁ = −(C₁₁ + C₁₁ᵀ) = T₁₁ᵀP + PT₁₁,  P(K₁₁ − v̄I) + (K₁₁ − v̄I)ᵀP = 0: K₁₁ − v̄I
    is skew-adjoint for the inner product of P ≻ 0, so every eigenvalue of K₁₁ has real part v̄.
    The rest are λ(T₂₂) + v̄ with Re λ(T₂₂) < 0. Hence max Re λ(K) = v̄ when k > 0, and
    max Re λ(A) + v̄ (A = the closed loop when Σ = 0) when k = 0."""
    assert params.value_scalars is not None  # a scalar-V layer
    vbar = sum(params.value_scalars)
    top = vbar if rank > 0 else float(np.max(closed_loop.real)) + vbar
    return bool(top < 0)


def psd_rank_rel(cov: np.ndarray) -> int:
    eig = np.linalg.eigvalsh(cov)
    return int(np.sum(eig > RANK_RTOL * max(eig[-1], 0.0)))


def is_psd(cov: np.ndarray) -> bool:
    eig = np.linalg.eigvalsh(cov)
    return bool(eig[0] >= -RANK_RTOL * max(eig[-1], np.finfo(float).tiny))


def decide_stability(params: Params, cov: np.ndarray) -> tuple[float | None, Stability | None]:
    """(spectral abscissa, None) from the spectrum of L for d ≤ DENSE_SPECTRUM_MAX_D or Σ = 0,
    else (None, `linearization_stability`), the latter remembered per layer and Σ (`equilibria`
    meets one equilibrium again from each start; certify asks from several)."""
    if params.d > DENSE_SPECTRUM_MAX_D and np.any(cov):
        return None, _stability_at(params, np.ascontiguousarray(cov, dtype=float).tobytes())
    return spectral_abscissa(params, cov), None


@lru_cache(maxsize=4)  # a d = 1024 key holds 8 MB
def _stability_at(params: Params, cov: bytes) -> Stability:
    """`linearization_stability` at the Σ whose float64 bytes are cov."""
    return linearization_stability(params, np.frombuffer(cov).reshape(params.d, params.d))


def _verdict(abscissa: float | None, stability: Stability | None) -> bool | None:
    """Whether L is Hurwitz: `stability`'s verdict when given, else the abscissa's sign (one of
    the two is set, as `decide_stability` returns them)."""
    if stability is not None:
        return stability.stable
    assert abscissa is not None
    return bool(abscissa < 0)


def make_equilibrium(params: Params, cov: np.ndarray, method: str, *,
                     abscissa: float | None = None, rcond: float | None = None,
                     rank: int | None = None, mean_hurwitz: bool | None = None,
                     stability: Stability | None = None) -> Equilibrium:
    """Package Σ* with its residual, rank, mean and stability (abscissa computed if neither it
    nor `stability` is given: the spectrum for d ≤ DENSE_SPECTRUM_MAX_D or Σ* = 0,
    `linearization_stability` beyond; mean_hurwitz: whether K* is Hurwitz when known, see
    mean_equilibrium)."""
    cov = 0.5 * (cov + cov.T)
    if abscissa is None and stability is None:
        abscissa, stability = decide_stability(params, cov)
    stable = _verdict(abscissa, stability)
    mean = mean_equilibrium(params, cov, hurwitz=mean_hurwitz)
    for arr in (cov, mean):
        if arr is not None:
            arr.setflags(write=False)
    return Equilibrium(cov, mean, relative_residual(params, cov),
                       psd_rank_rel(cov) if rank is None else rank, stable,
                       None if abscissa is None else float(abscissa), method, rcond, stability)
