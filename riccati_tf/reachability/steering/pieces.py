"""The pieces of a steering plan on [t0, t1]: constant parameters, or attention tracking a planned
covariance path (B(t) = Σ(t)⁺/s, SPEC §4), and the power-of-two `Frame` the plan is verified in."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypeAlias

import numpy as np
from scipy.linalg import expm

from ...errors import SolverError
from ...state.params import Gaussian, Params
from ...state.validation import scale_exponent
from .constants import FRAME_SPAN
from .geometry import _log2, _norm, _sqrt, _value

__all__: list[str] = []


@dataclass(frozen=True, eq=False)
class ConstantPiece:
    """Constant parameters on [t0, t1]."""

    t0: float
    t1: float
    layer: Params

    def params(self, t: float) -> Params:
        return self.layer

    #: relative cost of one step of its verification (`ControlPlan.integrate`)
    cost = 1

    @property
    def rate(self) -> float:
        """A bound of the growth rate of ‖Σ‖ from the affine part (2‖A‖)."""
        return _growth_rate(self.layer.A)


@dataclass(frozen=True, eq=False)
class TrackingPiece:
    """Attention parameters on [t0, t1] that make the moments follow ṁ = K m + b̄,
    Σ̇ = KΣ + ΣKᵀ from (m_start, L_start L_startᵀ):

        B(t) = Σ(t)⁺ R,   b(t) = K m + b̄ − (A + V) m − V Σ B m,   A, V constant,

    where V Σ(t) Σ(t)⁺ R Σ(t) = (K − A) Σ(t) (R = I/s with V = s (K − A), or R = V⁻¹(K − A) with
    Σ ≻ 0). Σ(t) = L Lᵀ with L = e^{K(t−t0)} L_start, Σ⁺ = L (LᵀL)⁻² Lᵀ.
    """

    t0: float
    t1: float
    K: np.ndarray
    A: np.ndarray
    V: np.ndarray
    R: np.ndarray
    L_start: np.ndarray
    m_start: np.ndarray
    b_path: np.ndarray

    #: relative cost of one step of its verification: a matrix exponential per evaluation
    cost = 5

    @property
    def rate(self) -> float:
        """A bound of the growth rate of ‖Σ(t)‖ = ‖e^{Kt} Σ e^{Kᵀt}‖ (2‖K‖)."""
        return _growth_rate(self.K)

    def params(self, t: float) -> Params:
        A, B, V, b = self.arrays(t)
        return _layer(A, B=B, V=V, b=b)

    def arrays(self, t: float) -> tuple[np.ndarray, ...]:
        """(A, B(t), V, b(t)) as arrays (unvalidated; `params` checks them)."""
        d = self.K.shape[0]
        s = t - self.t0
        aug = np.zeros((2 * d, 2 * d))
        aug[:d, :d], aug[:d, d:] = self.K * s, np.eye(d)  # top right: ∫_0^1 e^{Ksu} du
        F = expm(aug)
        E = F[:d, :d]
        with np.errstate(over="ignore", invalid="ignore"):
            m = E @ self.m_start + s * (F[:d, d:] @ self.b_path)
        L = E @ self.L_start
        k = scale_exponent(L)
        L = np.ldexp(L, -k)  # Σ⁺ = 2^(−2k) L̃ (L̃ᵀL̃)⁻² L̃ᵀ with L̃ = L·2^(−k) of size 1
        with np.errstate(over="ignore", invalid="ignore"):
            if L.shape[1]:
                try:
                    LG = L @ np.linalg.inv(L.T @ L)
                except np.linalg.LinAlgError:  # Σ(t) lost its rank in rounding
                    LG = np.full(L.shape, np.nan)
                pinv, proj = np.ldexp(LG @ LG.T, -2 * k), LG @ L.T
            else:
                pinv = proj = np.zeros((d, d))
            B = pinv @ self.R
            b = self.K @ m + self.b_path - (self.A + self.V) @ m - self.V @ (proj @ (self.R @ m))
        return self.A, B, self.V, b


def _layer(A: np.ndarray, *, B: np.ndarray | None = None, V: np.ndarray | None = None,
           b: np.ndarray | None = None) -> Params:
    """Params of a plan; SolverError when a control left float64 (e.g. B = Σ⁺/s for a
    covariance near the smallest floats)."""
    if not all(np.all(np.isfinite(x)) for x in (A, B, V, b) if x is not None):
        raise SolverError("the plan's controls leave the float64 range (B(t) = Σ(t)⁺R for a "
                          "covariance of extreme size, or a bias b ~ Δm/T for a tiny depth T)")
    return Params(A, B=B, V=V, b=b)


@dataclass(frozen=True)
class Frame:
    """Units: Σ = Σ̃·2^e, m = m̃·2^f, depth t = t̃·2^g (exact); the moment equations keep their
    form with Ã = A·2^g, Ṽ = V·2^g, B̃ = B·2^e and b̃ = b·2^(g−f)."""

    e: int
    f: int
    g: int = 0

    @classmethod
    def of(cls, start: Gaussian, target: Gaussian) -> Frame:
        """One frame for a whole steering problem (shooting): covariance unit between the two
        endpoint norms, mean unit s_m of `terminal_error`. SolverError when the endpoint
        covariances differ by more than 2^(2·FRAME_SPAN): no single frame holds both."""
        logs = [x for x in (_log2(_norm(g.cov)) for g in (start, target)) if x > -math.inf]
        e = 0
        if logs:
            lo, hi = min(logs), max(logs)
            if hi - lo > 2 * FRAME_SPAN:
                raise SolverError(f"the covariances differ by 2^{hi - lo:.0f}, more than "
                                  f"2^{2 * FRAME_SPAN}: the shooting route works in one frame "
                                  f"and cannot hold both")
            e = math.floor((lo + hi) / 2)
        return cls(e, _mean_exponent(start, target))

    def gaussian(self, g: Gaussian) -> Gaussian:
        return Gaussian(np.ldexp(g.mean, -self.f), np.ldexp(g.cov, -self.e))

    def params(self, A: np.ndarray, B: np.ndarray, V: np.ndarray, b: np.ndarray) -> Params:
        """The layer (A, B, V, b) in the frame's units (SolverError if it leaves float64)."""
        with np.errstate(over="ignore", under="ignore"):
            return _layer(np.ldexp(A, self.g), B=np.ldexp(B, self.e), V=np.ldexp(V, self.g),
                          b=np.ldexp(b, self.g - self.f))


def _exponent(x: tuple[float, int], default: int) -> int:
    """⌊log2 x⌋ for x = (n, k) > 0, `default` for 0."""
    return math.floor(_log2(x)) if x[0] > 0 else default


def _mean_exponent(start: Gaussian, target: Gaussian) -> int:
    return _exponent(_mean_scale(start, target), 0)


def _growth_rate(M: np.ndarray) -> float:
    """2‖M‖_F ≥ the logarithmic growth rate of ‖Σ‖ under Σ̇ = MΣ + ΣMᵀ (inf on overflow)."""
    return 2 * _value(_norm(M))

def _mean_scale(start: Gaussian, target: Gaussian) -> tuple[float, int]:
    """s_m = max(‖m0‖, ‖m1‖, ‖Σ0‖^½, ‖Σ1‖^½) as (n, k): the unit of mean errors."""
    sizes = [_norm(start.mean), _norm(target.mean), _sqrt(_norm(start.cov)),
             _sqrt(_norm(target.cov))]
    return max(sizes, key=_log2)

#: a piece of a plan: constant parameters or tracking attention
Piece: TypeAlias = "ConstantPiece | TrackingPiece"
