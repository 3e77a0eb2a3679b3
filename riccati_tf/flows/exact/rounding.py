"""What rounding leaves undetermined (see `riccati_tf.flows.exact`, "Rounding-level G" and
"Ill-conditioned states"): the band of G's eigenvalues that rounding could move, the
first-order rounding bound along the steps and its amplification ahead of a blow-up."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...errors import SolverError
from .covariance import EPS, _positive_definite

__all__: list[str] = []  # NEAR_BLOWUP_RTOL is documented in riccati_tf.flows.exact

#: rounding-level eigenvalues of G: δ = G_ROUNDING·d·eps·‖G‖_F, and the relative spread of the
#: bracketing blow-up times accepted as determined
G_ROUNDING = 8.0
BLOWUP_RTOL = 1e-8
#: the accuracy promise: a state whose estimated relative error exceeds ACCURACY_RTOL is not
#: returned (SolverError)
ACCURACY_RTOL = 1e-6
#: an end state shortly before a blow-up, after n covariance steps: relative error
#: ≈ NEAR_BLOWUP_ROUNDING·eps·n^{3/4}·T*/(T* − t), refused above NEAR_BLOWUP_RTOL (the same limit
#: as rk's, riccati_tf.flows.integrate)
NEAR_BLOWUP_ROUNDING = 8.0
NEAR_BLOWUP_RTOL = ACCURACY_RTOL
#: conditioning (see `_conditioning`): where the first-order rounding bound accumulated along
#: the steps exceeds CONDITION_CHECK, the states are recomputed with G ∓ δP and their spread is
#: the error estimate (refused above ACCURACY_RTOL)
CONDITION_CHECK = 1e-8


def _near_blowup(A: np.ndarray, G: np.ndarray, S: np.ndarray, t_final: float,
                 n_steps: int) -> tuple[float, float | None]:
    """Refuse an end state within reach of a blow-up after t_final, else return its rounding
    estimate and the estimated T* ((0, None) when no blow-up is near). When the quadratic
    term drives ≥ 99 % of d tr Σ/dt, T* ≈ t_final + tr Σ/(d tr Σ/dt), Σ ~ 1/(T* − t), and the
    rounding of each of the n covariance steps moves T* by about eps·T*: Σ(t_final) is then
    known to about NEAR_BLOWUP_ROUNDING·eps·n^{3/4}·T*/(T* − t_final) relative (measured against
    mpmath in the scalar case: between 0.1 and 1 times eps·n^{3/4}·T*/gap for n = 1 … 1000),
    and refused when that exceeds NEAR_BLOWUP_RTOL. (S: the last state returned, at t_final
    here.)"""
    n = float(np.trace(S))
    quad = -float(np.trace(S @ G @ S))
    rate = 2 * float(np.trace(A @ S)) + quad
    if not (n > 0 and rate > 0 and quad >= 0.99 * rate):
        return 0.0, None
    remaining = n / rate
    error = NEAR_BLOWUP_ROUNDING * EPS * max(n_steps, 1) ** 0.75 * (t_final + remaining) / \
        remaining
    if error > NEAR_BLOWUP_RTOL:
        raise SolverError(
            f"t_final = {t_final:.12g} lies within {remaining:.3g} of a blow-up at "
            f"T* ≈ {t_final + remaining:.12g}: Σ(t) ~ 1/(T* − t) there, and rounding makes the "
            f"end state uncertain by about {error:.2g} relative (> {NEAR_BLOWUP_RTOL:g})")
    return error, t_final + remaining


@dataclass
class _Rounding:
    """The first-order rounding bound along a flow (package docstring, "Ill-conditioned
    states"): the errors ε_k made by the steps ending at t_k, as Σ ε_k and Σ ε_k t_k. Ahead of a
    blow-up at T*, Σ ~ 1/(T* − t) carries an error made at t_k to t amplified by
    (T* − t_k)/(T* − t)."""

    total: float = 0.0
    moment: float = 0.0

    def add(self, error: float, t: float) -> None:
        self.total += error
        self.moment += error * t

    def at(self, T: float, t: float) -> float:
        """The bound at t < T* = T: Σ ε_k (T − t_k)/(T − t)."""
        return _amplified(self.total, self.moment, T, t)


def _amplified(total: float, moment: float, T: float, t: float) -> float:
    """Σ ε_k (T − t_k)/(T − t) from Σ ε_k and Σ ε_k t_k (inf at t ≥ T)."""
    gap = T - t
    return max(T * total - moment, 0.0) / gap if gap > 0 else np.inf


def _before_blowup(T: float, out_t: list[float], out_e: list[tuple[float, float, int]]
                   ) -> tuple[float, int]:
    """(error estimate, number of outputs kept) for the states of a flow that blows up at T*.

    A state at t < T* carries the rounding errors ε_k of the steps before it, each amplified
    by (T* − t_k)/(T* − t) since Σ ~ 1/(T* − t) (`_Rounding`), and T* itself is located to
    about eps·T* per step: its estimate is Σ ε_k (T* − t_k)/(T* − t) +
    NEAR_BLOWUP_ROUNDING·eps·n^{3/4}·T*/(T* − t) after n covariance steps (as in
    `_near_blowup`). The estimates grow towards T*; the states from the first one above
    ACCURACY_RTOL on lie within rounding reach of T* and are not kept."""
    worst = 0.0
    for k, (t, (total, moment, n)) in enumerate(zip(out_t, out_e, strict=True)):
        gap = T - t
        error = _amplified(total, moment, T, t) + (
            NEAR_BLOWUP_ROUNDING * EPS * max(n, 1) ** 0.75 * T / gap if gap > 0 else np.inf)
        if not error <= ACCURACY_RTOL:
            return worst, k
        worst = max(worst, error)
    return worst, len(out_t)


def _coupled(A: np.ndarray, G: np.ndarray) -> np.ndarray | None:
    """The coordinates coupled to others through A or G (a boolean mask), None when there is
    none: an uncoupled coordinate evolves on its own, its W_ii = G_ii∫e^{2A_ii s}ds computed to
    relative accuracy."""
    d = G.shape[0]
    if d > 1 and np.count_nonzero(A) == d * d:  # a dense A couples every coordinate
        return np.ones(d, dtype=bool)
    off = A != 0
    off |= G != 0
    off.flat[:: d + 1] = False
    coupled = off.any(axis=0)
    coupled |= off.any(axis=1)
    return coupled if coupled.any() else None


def _g_rounding(G: np.ndarray) -> float:
    """δ = G_ROUNDING·d·eps·‖G‖_F, the rounding level of G's eigenvalues."""
    flat = G.ravel()
    return G_ROUNDING * G.shape[0] * EPS * math.sqrt(float(flat @ flat))


def _rounding_band(A: np.ndarray, G: np.ndarray
                   ) -> tuple[tuple[np.ndarray, float] | None, bool | None]:
    """(P, δ) when G has eigenvalues that rounding could move across zero or far enough to shift
    T* by BLOWUP_RTOL, else None; also whether G ≻ 0 was established (for `_Propagator`).

    P (a 0/1 diagonal) marks the coordinates coupled to others through A or G: the Van Loan
    exponential keeps an uncoupled coordinate's W_ii = G_ii∫e^{2A_ii s}ds to relative accuracy,
    so only the coupled block of G carries the uncertainty δ = G_ROUNDING·d·eps·‖G‖_F. The band
    is [−δ/BLOWUP_RTOL, δ]."""
    d = G.shape[0]
    coupled = _coupled(A, G)
    if coupled is None:
        return None, None
    everywhere = bool(coupled.all())
    delta = _g_rounding(G)
    if delta == 0.0:
        return None, None
    Gc = G.copy() if everywhere else G[np.ix_(coupled, coupled)]
    Gc.flat[:: Gc.shape[0] + 1] -= 2 * delta
    if _positive_definite(Gc):
        return None, (True if everywhere else None)
    Gc.flat[:: Gc.shape[0] + 1] += 2 * delta
    Gn = -Gc
    Gn.flat[:: Gc.shape[0] + 1] -= 2 * delta / BLOWUP_RTOL
    if _positive_definite(Gn):
        return None, False
    eig = np.linalg.eigvalsh(G if everywhere else G[np.ix_(coupled, coupled)])
    if not np.any((eig >= -2 * delta / BLOWUP_RTOL) & (eig <= 2 * delta)):
        return None, None
    return (np.eye(d) if everywhere else np.diag(coupled.astype(float)), delta), None
