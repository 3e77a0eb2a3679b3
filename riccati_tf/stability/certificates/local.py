"""Local Lyapunov certificates at an equilibrium Σ* (SPEC §6).

With F(Σ* + H) = L(H) + q(H), ‖q(H)‖_F ≤ c‖H‖_F² (L in orthonormal symmetric coordinates,
|h| = ‖H‖_F) and LᵀP + PL = −Q, P ≻ 0, the function V(h) = hᵀPh obeys
V̇ ≤ −λ_min(Q)|h|² + 2‖P‖c|h|³ < 0 for |h| < λ_min(Q)/(2‖P‖c), so every sublevel set below
λ_min(P)(λ_min(Q)/(2‖P‖c))² lies in the basin of Σ*. A Newton–Kantorovich ball around the stored
Σ̂ holds the exact Σ*, and the bounds are taken about it. For Σ* = 0 with A Hurwitz, the linear
function ℓ(Σ) = tr(PΣ) with AᵀP + PA = −Q decreases on a sublevel set of the PSD cone
(`_ZeroSublevel`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ...errors import SolverError
from ...state.params import Params
from ..equilibria import KRONECKER_MAX_D, Equilibrium
from ..equilibria.coords import to_coords
from ..equilibria.evidence import make_equilibrium
from ..equilibria.field import F as F_of
from ..equilibria.linearization import linearization_matrix
from ..equilibria.scales import drift_spectrum, head_norms, quadratic_constant
from ..riccati import lyapunov_function
from .constants import BASIN_SAFETY, EPS, ROUNDING_ULPS

__all__: list[str] = []


@dataclass(frozen=True)
class _Local:
    L: np.ndarray
    P: np.ndarray
    Q: np.ndarray
    radius: float  # Kantorovich radius r*
    rho_max: float  # largest certified level: {hᵀPh ≤ rho_max} ⊂ basin (about the exact Σ*)


def _local(p: Params, cov: np.ndarray) -> _Local | None:
    """Lyapunov certificate at Σ* (d ≤ 30): P from LᵀP + PL = −I, Kantorovich radius, basin;
    None where L is not Hurwitz, or is so near the axis that SLICOT refuses the solve
    (λ_i + λ_j within its separation bound of 0: no P to certify with)."""
    if p.d > KRONECKER_MAX_D:
        return None
    L = linearization_matrix(p, cov)
    if np.max(np.linalg.eigvals(L).real) >= 0:
        return None
    P = lyapunov_matrix(L)
    if P is None:
        return None
    bounds = _local_bounds(p, cov, L, P)
    if bounds is None:
        return None
    radius, rho_max = bounds
    return _Local(L, P, np.eye(L.shape[0]), radius, rho_max)


def lyapunov_matrix(L: np.ndarray) -> np.ndarray | None:
    """P with LᵀP + PL = −I (`lyapunov_function`: SLICOT's Bartels–Stewart), symmetrised; None
    when L is not finite, the solve fails or would perturb L (some λ_i + λ_j within its
    separation bound of 0), or P is not finite."""
    if not np.all(np.isfinite(L)):
        return None
    try:
        P = lyapunov_function(L).P
    except SolverError:
        return None
    return P if np.all(np.isfinite(P)) else None


def _local_bounds(p: Params, cov: np.ndarray, L: np.ndarray, P: np.ndarray,
                  fnorm: float | None = None) -> tuple[float, float] | None:
    """(Kantorovich radius r*, largest basin level ρ) for P at the stored Σ̂, or None.

    Newton–Kantorovich with β = 1/σ_min(L), η = β‖F(Σ̂)‖_F and Lipschitz constant K = 2c of L:
    if h = βηK ≤ 1/2, an exact equilibrium Σ* lies within r* = (1 − √(1 − 2h))/(βK) of Σ̂. There
    L_{Σ*} differs from L by at most K r*, so −(L*ᵀP + PL*) ⪰ (λ_min(Q̂) − 2‖P‖K r*) I =: μ I, and
    V̇ < 0 for |h| < μ / (2‖P‖c): every level ρ < λ_min(P) (μ/(2‖P‖c))² is inside the basin.
    """
    c = quadratic_constant(p)
    K = 2 * c
    Qhat = -(L.T @ P + P @ L)
    lam_q = float(np.linalg.eigvalsh(0.5 * (Qhat + Qhat.T))[0])
    pe = np.linalg.eigvalsh(P)
    if pe[0] <= 0 or lam_q <= 0:
        return None
    normP = float(pe[-1])
    fnorm = float(np.linalg.norm(F_of(p, cov))) if fnorm is None else fnorm
    radius = 0.0
    if fnorm > 0:
        smin = float(np.linalg.svd(L, compute_uv=False)[-1])
        if smin <= 0:
            return None
        beta = 1.0 / smin
        eta = beta * fnorm
        h = beta * eta * K
        if h > 0.5:
            return None
        radius = (1 - np.sqrt(1 - 2 * h)) / (beta * K) if K > 0 else eta
    mu = lam_q - 2 * normP * K * radius
    if mu <= 0:
        return None
    rho = np.inf if c == 0 else float(pe[0] * (mu / (2 * normP * c)) ** 2)
    return float(radius), rho


def _level(P: np.ndarray, cov: np.ndarray, state: np.ndarray, radius: float) -> float:
    """Upper bound of V(state − Σ*) = hᵀPh for the exact Σ* within `radius` of the stored cov."""
    h = to_coords(state - cov)
    return float((np.sqrt(max(h @ P @ h, 0.0)) + np.sqrt(np.linalg.eigvalsh(P)[-1]) * radius) ** 2)


def _zero_equilibrium(p: Params) -> Equilibrium:
    """Σ* = 0, where L(H) = AH + HAᵀ has spectral abscissa 2 max Re λ(A)."""
    return make_equilibrium(p, np.zeros((p.d, p.d)), "zero",
                            abscissa=2 * float(np.max(drift_spectrum(p)[0].real)), rank=0)


@dataclass(frozen=True)
class _ZeroSublevel:
    """The sublevel set ℓ(Σ) = tr(PΣ) < radius of Σ* = 0 on the PSD cone, for Hurwitz A.

    With AᵀP + PA = −Q (P ≻ 0, μ = λ_min(Q) > 0) and Σ ⪰ 0, ℓ is a Lyapunov function of the
    whole field: ℓ̇ = −tr(QΣ) + 2 Σ_h tr(PV_hΣB_hΣ) ≤ −μ tr Σ + κ (tr Σ)², with
    κ = 2 Σ_h ‖PV_h‖₂‖B_h‖₂ (|tr(XΣYΣ)| ≤ ‖Σ^½XΣ^½‖_F‖Σ^½YΣ^½‖_F ≤ ‖X‖₂‖Y‖₂(tr Σ)²), and
    λ_min(P) tr Σ ≤ ℓ ≤ λ_max(P) tr Σ. Below radius = BASIN_SAFETY μ λ_min(P)/κ, tr Σ <
    BASIN_SAFETY μ/κ, so ℓ̇ ≤ −(1 − BASIN_SAFETY) μ tr Σ ≤ −rate ℓ with
    rate = (1 − BASIN_SAFETY) μ/λ_max(P): ℓ(t) ≤ ℓ(t0)e^{−rate(t − t0)}, and Σ → 0. μ and
    λ_min(P) are taken ROUNDING_ULPS d eps beyond the rounding of their products and eigenvalue
    solves (`_zero_sublevel`)."""

    eq: Equilibrium
    P: np.ndarray
    radius: float
    mu: float
    kappa: float
    rate: float
    asymptotic: float  # 2|max Re λ(A)|, the rate of the linearisation H ↦ AH + HAᵀ at Σ* = 0

    def gap(self, S: np.ndarray) -> float:
        """ℓ(S) = tr(PS)."""
        return float(np.vdot(self.P, S))


@lru_cache(maxsize=8)
def _zero_sublevel(p: Params) -> _ZeroSublevel | None:
    """`_ZeroSublevel` of Σ* = 0 with Q = I (P from AᵀP + PA = −I by `lyapunov_matrix`), or
    None when A is not Hurwitz, the solve would perturb A (an eigenvalue pair within SLICOT's
    separation bound of λ_i + λ_j = 0), or the rounding leaves μ or λ_min(P) not positive.
    Computed once per layer (certify's ball and the check of its certificate read the same
    set)."""
    if not np.max(drift_spectrum(p)[0].real) < 0:
        return None
    d = p.d
    P = lyapunov_matrix(p.A)
    if P is None:
        return None
    P.setflags(write=False)  # cached
    slack = ROUNDING_ULPS * d * EPS
    norm_P = float(np.linalg.norm(P, 2))
    AP = p.A.T @ P
    Q = -(AP + AP.T)
    mu = float(np.linalg.eigvalsh(Q)[0]) - slack * (2 * drift_spectrum(p)[1] * norm_P
                                                    + float(np.linalg.norm(Q, 2)))
    low = float(np.linalg.eigvalsh(P)[0]) - slack * norm_P
    if not (mu > 0 and low > 0):
        return None
    kappa = 2 * sum(v * b for v, b in head_norms(p, P))
    radius = BASIN_SAFETY * mu * low / kappa if kappa > 0 else np.inf
    rate = (1 - BASIN_SAFETY) * mu / norm_P
    eq = _zero_equilibrium(p)
    assert eq.spectral_abscissa is not None  # 2 max Re λ(A), < 0 here
    return _ZeroSublevel(eq, P, radius, mu, kappa, rate, -eq.spectral_abscissa)


def _approaches(cov: np.ndarray, mid: np.ndarray, final: np.ndarray, close_rtol: float,
                scale: float) -> bool:
    """An integration approaches the equilibrium Σ* = cov without a Lyapunov set: the end state
    is within close_rtol·scale of Σ*, the distance halved since the middle state, and so is the
    part Π Σ Π on ker Σ* (Π its orthogonal projector): a state that keeps its size off the range
    of a singular Σ* does not approach it, however small that size is next to `scale`."""
    gap_end = float(np.linalg.norm(final - cov))
    if not (gap_end <= close_rtol * scale and gap_end < 0.5 * np.linalg.norm(mid - cov)):
        return False
    e, U = np.linalg.eigh(cov)
    K = U[:, e <= cov.shape[0] * EPS * max(float(np.abs(e).max()), 0.0)]
    if K.shape[1] == 0:
        return True
    off_end = float(np.linalg.norm(K.T @ final @ K))
    return off_end == 0.0 or off_end < 0.5 * float(np.linalg.norm(K.T @ mid @ K))
