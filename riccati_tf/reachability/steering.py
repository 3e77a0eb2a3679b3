"""Exact finite-time steering between Gaussians of equal covariance rank (SPEC §4).

    Φ1 Σ0 Φ1ᵀ = Σ1,   Φ1 = Q P  (Q ∈ SO(d), P ≻ 0),
    A = log P / τ1 on [0, τ1],   A = log Q / τ2 on [τ1, T],
    m_end = e^{Aτ} m_start + (∫_0^τ e^{As} ds) b   in each phase.

Φ1 is chosen as Ψ R: R = e^Ω the direct rotation taking range Σ0 onto range Σ1 (plane rotations by
the principal angles θ_i ∈ [0, π/2], so log Q = Ω is explicit and real, never near an eigenvalue
−1), and Ψ ≻ 0 acting on range Σ1 as the Gaussian optimal-transport map between the rotated and
the target factor (identity on the complement). Then Φ1 = R P with P = RᵀΨR is the polar
decomposition, log P = Rᵀ (log Ψ) R is a symmetric logarithm, and Φ1 itself (similar to RΨ, whose
eigenvalues satisfy Re λ ≥ 0 because R + Rᵀ ⪰ 0 and Ψ ≻ 0) has a real principal logarithm K.

Attention route (controls "attention": B(t) and b(t) free, V constant in depth, A held): with
Σ(t) = e^{Kt/T}Σ0e^{Kᵀt/T}, V = s (K/T − A) and B(t) = Σ(t)⁺/s (s the softmax temperature),
V Σ B Σ = (K/T − A) Σ, so Σ̇ = AΣ + ΣAᵀ + VΣBΣ + ΣBᵀΣVᵀ = (K/T)Σ + Σ(K/T)ᵀ follows the planned
path on every stratum, and b(t) = (K/T) m + b̄ − (A + V) m − V Σ B m makes ṁ = (K/T) m + b̄.
With a value matrix V imposed by the caller (Σ ≻ 0, V invertible), B(t) = Σ(t)⁻¹V⁻¹(K_j − A)
tracks the two polar phases instead. Every other configuration (or case) goes to multiple
shooting with piecewise-constant controls (`scipy.optimize.least_squares`, minimum-energy
regularisation continued to zero), after the Lie-algebra rank test of `riccati_tf.reachability.lie`.

Scales. The moment equations are equivariant under (m, Σ, B, b) ↦ (m·2^−f, Σ·2^−e, B·2^e, b·2^−f)
(A and V unchanged). Verification and shooting run in such a `Frame` (powers of two, exact), so
that states of every representable magnitude are integrated with tolerances relative to their
size, and norms are taken on arrays scaled by powers of two (no overflow near 1e308, no loss in
the subnormal range). The constructive routes' controls scale like 1/T (A = log P/τ, b ~ Δm/T,
V = s(log Φ1/T − A)): a depth T too short for them to be representable is an InvalidInputError
that names the shortest depth; a plan whose controls leave float64 otherwise (B(t) = Σ(t)⁺/s for
Σ ~ 1e-315) is refused with SolverError.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.linalg import expm, logm
from scipy.optimize import least_squares

from ..display import html_table, latex_matrix, number, repr_number
from ..empirical.particles import ParticleRun, simulate
from ..errors import InvalidInputError, RankMismatchError, SolverError, UnreachableError
from ..flows.integrate import Trajectory, flow
from ..state.params import Gaussian, Params
from ..state.validation import as_array, as_count, as_matrix, as_time, as_vector, scale_exponent

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from .lie import Accessibility, ControlSystem

__all__ = [
    "DEFAULT_TEMPERATURE",
    "DEFAULT_TOL",
    "MAX_DIMENSION",
    "MAX_HORIZON",
    "MAX_PIECES",
    "ControlPlan",
    "steer",
]

#: covariance rank: eigenvalues above RANK_RTOL · λ_max count
RANK_RTOL = 1e-10
#: the logarithm K of Φ1 (attention route) is accepted when ‖e^K − Φ1‖ ≤ LOG_RTOL ‖Φ1‖ (on Φ1
#: scaled to |det| ≈ 1)
LOG_RTOL = 1e-10
#: attention route: V = s(K − A), B = Σ⁺/s. The mean-field is the same for every s > 0, but a
#: finite cloud estimates the tilted mean by importance sampling with log-weight variance
#: xᵀΣ⁺x/s²; at s = 1 (SPEC §4 literally) the N = 5 000–20 000 particle moments miss the
#: mean-field by 1–3 of their Monte-Carlo standard deviations, at s = 2 by ≤ 0.65 (measured,
#: tests/test_steering.py), while larger s amplifies how initial sampling errors of the mean grow.
DEFAULT_TEMPERATURE = 2.0
#: default bound on the terminal relative error a plan must meet (`ControlPlan.verify`)
DEFAULT_TOL = 1e-8
#: shooting: weights λ of the minimum-energy continuation (evaluations allowed for each); the
#: final solve has λ = 0 (SHOOTING_NFEV evaluations)
ENERGY_WEIGHTS = (1e-2, 1e-4, 1e-6)
ENERGY_NFEV = 30
SHOOTING_NFEV = 100
#: shooting: RK4 sub-steps per piece: at least SHOOTING_SUBSTEPS, h_sub·ρ ≤ SHOOTING_THETA, at most
#: SHOOTING_MAX_SUBSTEPS; refinements (×4 sub-steps) allowed after the discrete problem is solved
SHOOTING_SUBSTEPS = 16
SHOOTING_THETA = 0.1
SHOOTING_MAX_SUBSTEPS = 1024
SHOOTING_REFINEMENTS = 2
#: work budget of one shooting solve: batched RK4 steps in all (every piece and every column of
#: the finite-difference Jacobian advance together); a 2×2 "values" problem takes 1–5·10⁴, an
#: unreachable "affine-nobias" target 7·10⁴ (9 s)
SHOOTING_MAX_STEPS = 100_000
#: the most shooting pieces (work budget of the least-squares problem, N·(p + n) unknowns)
MAX_PIECES = 64
#: the largest depth T: beyond, T, T·‖b‖ and ∫_0^τ e^{As} ds (≈ τ for small A) leave the range
#: where the plan's quantities are formed safely in float64 (T² ≤ 1e200)
MAX_HORIZON = 1e100
#: the largest dimension steered (every right-hand side costs O(d³); the state has d + d² entries)
MAX_DIMENSION = 100
#: shooting works in one frame with the covariance unit between the endpoints' norms; it refuses
#: endpoints more than 2^(2·FRAME_SPAN) apart (products Σ·Σ stay far inside float64)
FRAME_SPAN = 400
#: default tolerances of `ControlPlan.integrate`: rtol, and atol relative to the state's scale
VERIFY_RTOL = 1e-11
VERIFY_ATOL = 1e-13
#: verification sub-intervals: ‖Σ‖ changes by at most e^GROWTH_STEP = 2^20 on each, so that
#: (1) a growth driven by attention stays below the growth `flows` takes for the onset of a
#: blow-up, (2) every state of a sub-interval is representable in the frame fitted to its start
#: and atol (relative to that start) is lowered by 2^20, and (3) the rounding that the
#: full-matrix integrator leaves in Σ's antisymmetric part, which does not decay with Σ, is
#: symmetrised away at every sub-interval before it reaches eps·2^20 of ‖Σ‖. Work budget of
#: one verification: at most MAX_SUBINTERVALS sub-intervals and VERIFY_MAX_STEPS DOP853 steps
#: in all, a step of a tracking piece counting 5 (SolverError beyond: N(0, I) →
#: N(0, 1e-315 I) takes 75 sub-intervals and about 3 000 steps, 1e-300·I → 1e300·C about 6 000;
#: the budget is about 10 s of work)
GROWTH_STEP = 20 * math.log(2)
MAX_SUBINTERVALS = 200
VERIFY_MAX_STEPS = 12_000
_TINY = float(np.finfo(float).tiny)
_EPS = float(np.finfo(float).eps)
#: right-hand-side evaluations of one DOP853 step (12 stages; the error estimate reuses them)
_DOP853_EVALUATIONS = 12


# --------------------------------------------------------------------------- linear algebra

def _norm(x: ArrayLike) -> tuple[float, int]:
    """(n, k) with ‖x‖_F = n·2^k, computed on x scaled by a power of two (no overflow, no
    underflow); (inf, 0) when x holds a non-finite entry."""
    x = np.asarray(x, dtype=float)
    top = float(np.max(np.abs(x))) if x.size else 0.0
    if not math.isfinite(top):
        return math.inf, 0
    if top == 0.0:
        return 0.0, 0
    k = math.frexp(top)[1]
    return float(np.linalg.norm(np.ldexp(x, -k))), k


def _ratio(num: tuple[float, int], den: tuple[float, int]) -> float:
    """n1·2^k1 / (n2·2^k2) as a float (inf on overflow; num itself, unscaled, when den = 0)."""
    if den[0] == 0.0:
        return _value(num)
    try:
        return math.ldexp(num[0] / den[0], num[1] - den[1])
    except OverflowError:
        return math.inf


def _value(x: tuple[float, int]) -> float:
    try:
        return math.ldexp(*x)
    except OverflowError:
        return math.inf


def _sqrt(x: tuple[float, int]) -> tuple[float, int]:
    n, k = x
    return (math.sqrt(n), k // 2) if k % 2 == 0 else (math.sqrt(2 * n), (k - 1) // 2)


def _log2(x: tuple[float, int]) -> float:
    return math.log2(x[0]) + x[1] if x[0] > 0 else -math.inf


def _cond(M: np.ndarray) -> float:
    """The 2-norm condition number of M scaled by a power of two (inf when it cannot be had)."""
    try:
        return float(np.linalg.cond(np.ldexp(M, -scale_exponent(M))))
    except np.linalg.LinAlgError:
        return math.inf


def covariance_rank(cov: np.ndarray) -> int:
    """Eigenvalues above RANK_RTOL·λ_max, on Σ scaled by a power of two (same at every scale)."""
    e = scale_exponent(cov)
    eig = np.linalg.eigvalsh(np.ldexp(cov, -e))
    return int(np.sum(eig > RANK_RTOL * max(float(eig[-1]), 0.0)))


def covariance_factor(cov: np.ndarray, r: int) -> tuple[np.ndarray, np.ndarray]:
    """(U, L): an orthonormal basis U (d×r) of the top-r eigenspace and L = U diag(√λ), L Lᵀ ≈ Σ
    (eigenvalues of Σ scaled by a power of 4; L, of the size √‖Σ‖, is always representable)."""
    e = scale_exponent(cov, even=True)
    eig, vec = np.linalg.eigh(np.ldexp(cov, -e))
    d = cov.shape[0]
    U = vec[:, d - r:]
    return U, np.ldexp(U * np.sqrt(np.clip(eig[d - r:], 0.0, None)), e // 2)


def _sym_function(S: np.ndarray,
                  fn: Callable[[NDArray[np.float64]], NDArray[np.float64]]) -> np.ndarray:
    eig, vec = np.linalg.eigh(0.5 * (S + S.T))
    return (vec * fn(eig)) @ vec.T


def direct_rotation(U0: np.ndarray, U1: np.ndarray) -> np.ndarray:
    """Ω skew with e^Ω range U0 = range U1: Ω = Σ_i θ_i (w_i u_iᵀ − u_i w_iᵀ).

    U0ᵀU1 = Y diag(cos θ) Zᵀ (principal angles θ_i ∈ [0, π/2]); u_i = U0 Y_i, v_i = U1 Z_i and
    w_i = (v_i − cos θ_i u_i)/sin θ_i, so that e^Ω u_i = cos θ_i u_i + sin θ_i w_i = v_i.
    """
    d, r = U0.shape
    Omega = np.zeros((d, d))
    if r == 0:
        return Omega
    Y, _, Zt = np.linalg.svd(U0.T @ U1)
    u, v = U0 @ Y, U1 @ Zt.T
    v_perp = v - U0 @ (U0.T @ v)
    for i in range(r):
        s = np.linalg.norm(v_perp[:, i])
        if s <= 1e-15:
            continue
        theta = np.arctan2(s, u[:, i] @ v[:, i])
        w = v_perp[:, i] / s
        Omega += theta * (np.outer(w, u[:, i]) - np.outer(u[:, i], w))
    return Omega


@dataclass(frozen=True, eq=False)
class Transport:
    """Φ1 = Q P with Φ1 Σ0 Φ1ᵀ = Σ1: log_Q = Ω (skew, rotation angles ≤ π/2), log_P symmetric;
    Phi = e^{log_Q} e^{log_P}; residual = ‖Φ1Σ0Φ1ᵀ − Σ1‖_F / max(‖Σ1‖_F, tiny)."""

    Phi: np.ndarray
    log_Q: np.ndarray
    log_P: np.ndarray
    rank: int
    residual: float

    def log(self) -> np.ndarray:
        """The real principal logarithm K of Φ1 (e^K = Φ1; Re λ(Φ1) ≥ 0 makes it real).

        Computed as log Φ̃ + c·I with Φ̃ = e^{log_Q} e^{log_P − cI}, c = tr(log_P)/d rounded to a
        multiple of ln 2 (|det Φ̃| ≈ 1, so any scale of Φ1 is handled); SolverError unless
        ‖e^{log Φ̃} − Φ̃‖ ≤ LOG_RTOL ‖Φ̃‖."""
        d = self.Phi.shape[0]
        c = round(float(np.trace(self.log_P)) / d / math.log(2)) * math.log(2)
        Phi = expm(self.log_Q) @ expm(self.log_P - c * np.eye(d))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # accuracy is checked below
            K = logm(Phi)
        if np.iscomplexobj(K):
            if np.linalg.norm(K.imag) > 1e-10 * max(float(np.linalg.norm(K.real)), 1.0):
                raise SolverError("the principal logarithm of Φ1 is not real: Φ1 has an "
                                  "eigenvalue on the negative real axis")
            K = K.real
        if not (np.all(np.isfinite(K))
                and np.linalg.norm(expm(K) - Phi) <= LOG_RTOL * np.linalg.norm(Phi)):
            raise SolverError("the logarithm of the transport Φ1 cannot be computed accurately "
                              "(Φ1 is too ill-conditioned)")
        return K + c * np.eye(d)


def transport(cov0: np.ndarray, cov1: np.ndarray, r: int) -> Transport:
    """Φ1 ∈ GL⁺(d) with Φ1 Σ0 Φ1ᵀ = Σ1 for covariances of equal rank r, as Φ1 = Ψ R = R P.

    R = e^Ω turns range Σ0 onto range Σ1 (`direct_rotation`); with T0 = U1ᵀ R L0 and T1 = U1ᵀ L1,
    S ≻ 0 solves S (T0T0ᵀ) S = T1T1ᵀ (S = A0^{-1/2}(A0^{1/2} A1 A0^{1/2})^{1/2} A0^{-1/2}), so
    S T0 = T1 O for an orthogonal O and Ψ = U1 S U1ᵀ + c (I − U1U1ᵀ) gives Φ1 L0 = L1 O
    (c = det(S)^{1/r}, so that Σ's scale changes alike in every direction).
    T0 and T1 are scaled by powers of two 2^k0, 2^k1 first (S = 2^(k1−k0) S̃, log S = log S̃ +
    (k1 − k0) ln 2), so Σ0 and Σ1 may differ by any representable factor. SolverError when Φ1
    itself leaves float64 (Σ1/Σ0 beyond ~1e600).
    """
    d = cov0.shape[0]
    U0, L0 = covariance_factor(cov0, r)
    U1, L1 = covariance_factor(cov1, r)
    Omega = direct_rotation(U0, U1)
    R = expm(Omega)
    if r:
        T0 = U1.T @ R @ L0
        T1 = U1.T @ L1
        k0, k1 = scale_exponent(T0), scale_exponent(T1)
        T0, T1 = np.ldexp(T0, -k0), np.ldexp(T1, -k1)
        A0, A1 = T0 @ T0.T, T1 @ T1.T
        h, hinv = _sym_function(A0, np.sqrt), _sym_function(A0, lambda x: 1 / np.sqrt(x))
        S = hinv @ _sym_function(h @ A1 @ h, np.sqrt) @ hinv
        log_S = _sym_function(S, np.log) + (k1 - k0) * math.log(2) * np.eye(r)
        # on the complement of range Σ1, Ψ scales by the geometric mean of S's eigenvalues:
        # rounding left there by Σ0 then shrinks or grows with Σ (with Ψ = I it would stay at
        # eps·‖Σ0‖ and swamp a target of size 1e-300)
        log_c = np.trace(log_S) / r
        log_psi = U1 @ (log_S - log_c * np.eye(r)) @ U1.T + log_c * np.eye(d)
    else:
        log_psi = np.zeros((d, d))
        L1 = np.zeros((d, 0))
    log_P = R.T @ log_psi @ R
    log_P = 0.5 * (log_P + log_P.T)
    with np.errstate(over="ignore", invalid="ignore"):
        Phi = R @ expm(log_P)
        image = Phi @ L0  # Φ1 L0 = L1 O, of the size √‖Σ1‖
    if not (np.all(np.isfinite(Phi)) and np.all(np.isfinite(image))):
        raise SolverError("the transport Φ1 with Φ1 Σ0 Φ1ᵀ = Σ1 leaves the float64 range: the "
                          "covariances differ by too large a factor")
    k = scale_exponent(L1)
    Y, C1 = np.ldexp(image, -k), np.ldexp(cov1, -2 * k)
    residual = _ratio(_norm(Y @ Y.T - C1), _norm(C1)) if r else 0.0
    return Transport(Phi, Omega, log_P, r, float(residual))


def _too_short(what: str, size: float, span: float, t_final: float,
               phases: int = 1) -> InvalidInputError:
    """The refusal of a depth too short for a control `what` = G/span (entries of G up to
    `size`) to be representable in float64, for t_final split into `phases` phases of length
    span. It names the shortest t_final, phases·size/(largest float) (at least one subnormal
    spacing per phase)."""
    floor = phases * max(size / np.finfo(float).max, np.finfo(float).smallest_subnormal)
    return InvalidInputError(
        f"t_final = {t_final:.3g} is too short for this transport: {what} over a phase of "
        f"length {span:.3g} (entries of the numerator up to {size:.3g}) leaves the float64 "
        f"range; the controls scale like 1/t_final, which must be at least about {floor:.3g}")


def phase_bias(A: np.ndarray, tau: float, m_start: np.ndarray, m_end: np.ndarray,
               t_final: float | None = None, phases: int = 1) -> np.ndarray:
    """b with m_end = e^{Aτ} m_start + (∫_0^τ e^{As} ds) b; the integral is the top-right block
    of expm([[A, I], [0, 0]] τ), so a singular A needs no inversion. SolverError when the
    integral is singular; InvalidInputError when A or b leaves float64 (b ∝ 1/τ: the phase, one
    of `phases` of t_final, is too short for the distance between the means)."""
    d = A.shape[0]
    if not np.all(np.isfinite(A)):
        raise InvalidInputError(f"t_final is too short for this transport: the generator A of a "
                                f"phase of length {tau:.3g} leaves the float64 range")
    block = np.zeros((2 * d, 2 * d))
    with np.errstate(over="ignore", invalid="ignore"):
        block[:d, :d], block[:d, d:] = A * tau, np.eye(d)  # ∫_0^τ e^{As} ds = τ ∫_0^1 e^{Aτu} du
        F = expm(block)
        E, J = F[:d, :d], F[:d, d:]
        if not np.all(np.isfinite(F)):
            raise SolverError("e^{Aτ} leaves the float64 range in a phase of the plan")
        if not _cond(J) <= 1e12:
            raise SolverError("∫_0^τ e^{As} ds is singular: A has an eigenvalue 2πik/τ, k ≠ 0")
        k = scale_exponent(J)
        shift = np.ldexp(np.linalg.solve(np.ldexp(J, -k), m_end - E @ m_start), -k)
        b = shift / tau if tau > 0 else np.where(shift == 0, 0.0, np.inf)
    if not np.all(np.isfinite(b)):
        raise _too_short("the bias b (the distance of the means)", float(np.abs(shift).max()),
                         tau, phases * tau if t_final is None else t_final, phases)
    return b


# --------------------------------------------------------------------------- plan pieces

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


# --------------------------------------------------------------------------- the plan

def _mean_scale(start: Gaussian, target: Gaussian) -> tuple[float, int]:
    """s_m = max(‖m0‖, ‖m1‖, ‖Σ0‖^½, ‖Σ1‖^½) as (n, k): the unit of mean errors."""
    sizes = [_norm(start.mean), _norm(target.mean), _sqrt(_norm(start.cov)),
             _sqrt(_norm(target.cov))]
    return max(sizes, key=_log2)


def _error(mean: np.ndarray, cov: np.ndarray, target_mean: np.ndarray, target_cov: np.ndarray,
           mean_scale: tuple[float, int]) -> float:
    return max(_ratio(_norm(mean - target_mean), mean_scale),
               _ratio(_norm(cov - target_cov), _norm(target_cov)))


def terminal_error(mean: ArrayLike, cov: ArrayLike, start: Gaussian, target: Gaussian) -> float:
    """max(‖m − m1‖ / s_m, ‖Σ − Σ1‖_F / ‖Σ1‖_F) with s_m = max(‖m0‖, ‖m1‖, ‖Σ0‖^½, ‖Σ1‖^½):
    the covariance relative to the target's, the mean in the unit of the problem's largest
    mean or spread (each absolute where its scale is 0). Norms of arrays scaled by powers of
    two: the same at every magnitude."""
    d = target.d
    mean, cov = as_vector("mean", mean, d), as_matrix("cov", cov, d)
    with np.errstate(over="ignore", invalid="ignore"):
        return _error(mean, cov, target.mean, target.cov, _mean_scale(start, target))


#: a piece of a plan: constant parameters or tracking attention
Piece: TypeAlias = "ConstantPiece | TrackingPiece"


@dataclass(frozen=True, eq=False)
class ControlPlan:
    """Controls t ↦ Params on [0, t_final] steering N(m0, Σ0) to N(m1, Σ1).

    Under the controls the moments follow

        ṁ = (A + V) m + V Σ B m + b,   Σ̇ = AΣ + ΣAᵀ + VΣBΣ + ΣBᵀΣVᵀ,

    from (m0, Σ0) at depth 0 to (m1, Σ1) at depth t_final (within `tolerance`, checked by
    `verify`). `params_at(t)` gives the layer at depth t, `integrate()` the moment trajectory
    (piece by piece, never across a breakpoint), `plot()` the eigenvalues of Σ(t) along it,
    `particles(x0, ...)` the plan applied to a token cloud; `T` is a read-only alias of
    t_final. Made by `steer`.

    Parameters
    ----------
    start : Gaussian
        N(m0, Σ0).
    target : Gaussian
        N(m1, Σ1).
    t_final : float
        The depth T of the plan.
    controls : str
        The configuration of `lie.CONFIGURATIONS` whose controls the plan uses.
    route : {"polar", "attention", "shooting"}
        "polar": affine pieces A = log P/τ1 then A = log Q/τ2; "attention": tracking attention,
        V constant, B(t) = Σ(t)⁺R; "shooting": piecewise-constant controls found numerically.
    pieces : tuple
        The pieces in time order (each has t0, t1 and params(t)).
    residual : float
        The terminal relative error found by `verify()` when the plan was made.
    tolerance : float
        The bound the residual was checked against.
    success : bool
        residual ≤ tolerance.
    message : str
        What was done (and "FAILED: ..." when the verification failed).
    fixed : mapping of str to ndarray
        The parameters held constant in depth.
    transport : Transport, optional
        Φ1 with Φ1 Σ0 Φ1ᵀ = Σ1 (constructive routes).
    accessibility : Accessibility, optional
        The Lie-bracket rank test at the start (shooting route).

    Raises
    ------
    None
        Built by `steer`; its methods raise InvalidInputError for a depth outside [0, t_final]
        or bad arguments, and SolverError when the integration fails or spends its budget.

    See Also
    --------
    steer : makes the plan.
    flow : integrates the moment equations for given parameters.
    accessibility_rank : the Lie-algebra rank test of the shooting route.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §3 "Rank invariance".
    .. [2] riccati_tf theory, SPEC §4 "Reachability (time-varying controls)".
    .. [3] V. Jurdjevic, "Geometric Control Theory", Cambridge University Press, 1997.

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf import Gaussian, steer
    >>> start = Gaussian(np.zeros(1), np.eye(1))
    >>> target = Gaussian(np.array([1.0]), np.array([[4.0]]))
    >>> plan = steer(start, target, 1.0)
    >>> plan.route, plan.success, plan.breakpoints
    ('polar', True, array([0. , 0.5, 1. ]))
    >>> traj = plan.integrate()
    >>> np.allclose(traj.mean[-1], target.mean), np.allclose(traj.cov[-1], target.cov)
    (True, True)
    >>> np.round(plan.params_at(0.25).A, 4)
    array([[1.3863]])
    """

    start: Gaussian
    target: Gaussian
    t_final: float
    controls: str
    route: str
    pieces: tuple
    residual: float
    tolerance: float
    success: bool
    message: str
    fixed: Mapping[str, np.ndarray]
    transport: Transport | None = None
    accessibility: Accessibility | None = None

    @property
    def T(self) -> float:
        """Alias of t_final."""
        return self.t_final

    def __repr__(self) -> str:
        """The plan without its arrays."""
        return (f"ControlPlan(route={self.route!r}, controls={self.controls!r}, d={self.start.d}, "
                f"t_final={repr_number(self.t_final)}, pieces={len(self.pieces)}, "
                f"residual={repr_number(self.residual)}, success={self.success})")

    def _repr_html_(self) -> str:
        rows = [("route", self.route), ("controls", self.controls), ("d", self.start.d),
                ("t_final", number(self.t_final)), ("residual", number(self.residual)),
                ("tolerance", number(self.tolerance)), ("success", self.success),
                ("fixed", ", ".join(sorted(self.fixed)) or "none")]
        rows += [(f"piece {k}", f"{_piece_kind(p)} on [{number(p.t0)}, {number(p.t1)}]")
                 for k, p in enumerate(self.pieces)]
        return html_table("ControlPlan", [*rows, ("message", self.message)])

    def _repr_latex_(self) -> str:
        """The pieces as a case distinction in t (a constant piece by its drift A when d ≤
        LATEX_MAX_D)."""
        cases = [rf"{_piece_latex(p)} & {number(p.t0)} \le t < {number(p.t1)}"
                 for p in self.pieces]
        return r"$\theta(t) = \begin{cases}" + r" \\ ".join(cases) + r"\end{cases}$"

    @property
    def breakpoints(self) -> NDArray[np.float64]:
        """0 = t_0 < t_1 < … < t_n = t_final, the ends of the pieces."""
        return np.array([p.t0 for p in self.pieces] + [self.pieces[-1].t1])

    def params_at(self, t: float) -> Params:
        """The layer parameters at depth t ∈ [0, T] (right-continuous at breakpoints)."""
        t = as_time("t", t, allow_zero=True)
        if t > self.t_final * (1 + 1e-12):
            raise InvalidInputError(f"t must lie in [0, t_final] = [0, {self.t_final}], got {t}")
        k = int(np.searchsorted(self.breakpoints[1:-1], t, side="right"))
        return self.pieces[k].params(t)

    def integrate(self, *, rtol: float = VERIFY_RTOL, atol: float = VERIFY_ATOL,
                  points_per_piece: int = 21, max_steps: int = VERIFY_MAX_STEPS) -> Trajectory:
        """`flow(…, method="rk")` piece by piece (never stepping across a breakpoint), each piece
        cut into sub-intervals on which ‖Σ‖ changes by at most e^GROWTH_STEP (bound: the
        piece's `rate`), each integrated in a `Frame` fitted to
        its starting state: atol is relative to the covariance there (and to the mean scale s_m
        of `terminal_error`), so tiny and huge states are resolved alike. points_per_piece:
        output times per piece.
        The trajectory holds the output times and the sub-intervals' ends. SolverError when
        the integration fails, leaves the PSD cone or spends its budget (MAX_SUBINTERVALS
        sub-intervals; max_steps DOP853 steps in all, a step of a tracking piece counting as
        its `cost` = 5)."""
        return self._run(rtol, atol, points_per_piece, max_steps)[2]

    def plot(self, ax: Any = None) -> Axes:
        """The eigenvalues of Σ(t) along the steered trajectory, the target's marked at T.

        `riccati_tf.io.plots.plot_covariance` of `integrate()`: the r = rank Σ0 largest
        eigenvalues of Σ(t) on a log scale (rank invariance, SPEC §3: rank Σ1 = r), the r
        largest of Σ1 as crosses (×) at t = T, one in the colour of each curve, and the
        breakpoints between the pieces as dotted vertical lines. Like pandas' ``.plot()``: into
        `ax`, else into a new pyplot figure (``plan.plot(); plt.show()`` works in a script).

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            An Axes to draw into (nothing global changes); None (default): a new pyplot figure
            (`riccati_tf.io.figures.pyplot_axes`).

        Returns
        -------
        matplotlib.axes.Axes
            The Axes drawn into.

        Raises
        ------
        SolverError
            When `integrate` fails, leaves the PSD cone or spends its budget.

        See Also
        --------
        integrate : the trajectory drawn.
        riccati_tf.io.plots.plot_covariance : the drawing.

        References
        ----------
        .. [1] riccati_tf theory, SPEC §4 "Reachability (time-varying controls)".

        Examples
        --------
        Steering N(0, 1) to N(1, 4) on [0, 1]: one curve, ending at the cross at 4.

        >>> import numpy as np
        >>> from riccati_tf import Gaussian, steer
        >>> start = Gaussian(np.zeros(1), np.eye(1))
        >>> plan = steer(start, Gaussian(np.ones(1), 4 * np.eye(1)), 1.0)
        >>> ax = plan.plot()
        >>> [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")]
        ['λ1(Σ), final 4', 'target λ(Σ1) = 4']
        """
        from ..io.figures import pyplot_axes
        from ..io.plots import plot_covariance

        ax = pyplot_axes(ax)
        for t in self.breakpoints[1:-1]:
            ax.axvline(t, color="0.6", ls=":", lw=1)
        plot_covariance(self.integrate(), ax=ax, target=self.target.cov,
                        title=f"steering: {self.route} route, controls {self.controls}")
        return ax

    def verify(self, *, rtol: float = VERIFY_RTOL, atol: float = VERIFY_ATOL,
               max_steps: int = VERIFY_MAX_STEPS) -> float:
        """`terminal_error` of `integrate()`: max(‖m(T) − m1‖ / s_m, ‖Σ(T) − Σ1‖ / ‖Σ1‖),
        evaluated in the last frame (no rounding of tiny covariances into subnormals)."""
        frame, end, _ = self._run(rtol, atol, 2, max_steps)
        target = frame.gaussian(self.target)
        s_m = _mean_scale(self.start, self.target)
        with np.errstate(over="ignore", invalid="ignore"):
            return _error(end.mean, end.cov, target.mean, target.cov, (s_m[0], s_m[1] - frame.f))

    def _run(self, rtol: float, atol: float, points_per_piece: int,
             max_steps: int) -> tuple[Frame, Gaussian, Trajectory]:
        """(the last frame, the final state in it, the trajectory in the original units)."""
        max_steps = as_count("max_steps", max_steps)
        rtol = as_time("rtol", rtol, maximum=0.5)
        atol = as_time("atol", atol, maximum=0.5)
        n_points = as_count("points_per_piece", points_per_piece, minimum=2, maximum=10_001)
        tol = max(atol * math.exp(-GROWTH_STEP), _TINY)  # relative to the smallest ‖Σ‖ there
        f = _mean_exponent(self.start, self.target)
        frame, state = Frame(0, 0), self.start
        ts: list[np.ndarray] = []
        means: list[np.ndarray] = []
        covs: list[np.ndarray] = []
        n_subs = [max(math.ceil(min(p.rate * (p.t1 - p.t0) / GROWTH_STEP, 1e18)), 1)
                  for p in self.pieces]
        if sum(n_subs) > MAX_SUBINTERVALS:
            raise SolverError(f"verifying the plan needs {sum(n_subs)} sub-intervals (the "
                              f"covariance changes by about e^{sum(n_subs) * GROWTH_STEP:.3g}), "
                              f"more than MAX_SUBINTERVALS = {MAX_SUBINTERVALS}")
        spent = [0]  # right-hand-side evaluations so far, each weighted by its piece's cost
        for piece, n_sub in zip(self.pieces, n_subs, strict=True):
            cuts = np.linspace(piece.t0, piece.t1, n_sub + 1)
            outputs = np.linspace(piece.t0, piece.t1, n_points)
            for a, b in itertools.pairwise(cuts):
                new = Frame(frame.e + _exponent(_norm(state.cov), 0), f)
                state = Gaussian(np.ldexp(state.mean, frame.f - f),
                                 np.ldexp(state.cov, frame.e - new.e))
                frame = new
                grid = np.concatenate([[a], outputs[(outputs > a) & (outputs < b)], [b]])
                left = max_steps - spent[0] // _DOP853_EVALUATIONS
                if left <= 0:
                    raise SolverError(f"verifying the plan spent its budget of max_steps = "
                                      f"{max_steps} DOP853 steps by t = {a:.6g}")
                traj = self._flow(piece, frame, state, a, grid - a, rtol, tol, left, spent)
                keep = slice(1, None) if ts else slice(None)
                with np.errstate(over="ignore", under="ignore"):
                    ts.append(a + traj.t[keep])
                    means.append(np.ldexp(traj.mean[keep], frame.f))
                    covs.append(np.ldexp(traj.cov[keep], frame.e))
                state = self._end(traj, b)
        t, mean, cov = np.concatenate(ts), np.concatenate(means), np.concatenate(covs)
        if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(cov))):
            raise SolverError("the plan's trajectory leaves the float64 range")
        return frame, state, Trajectory(t, mean, cov, "completed", None, "rk", None, rtol, atol)

    @staticmethod
    def _flow(piece: Piece, frame: Frame, state: Gaussian, t0: float, grid: np.ndarray,
              rtol: float, atol: float, max_steps: int, spent: list[int]) -> Trajectory:
        """One sub-interval [t0, t0 + grid[-1]] of a piece, integrated in `frame` with the depth
        measured in units 2^g ≈ the sub-interval's length (so that any T is integrated alike);
        the returned times are in the original units. spent[0] counts the evaluations."""
        frame = replace(frame, g=math.frexp(grid[-1])[1])
        if isinstance(piece, ConstantPiece):
            p = piece.layer
            assert p.B is not None and p.V is not None and p.b is not None  # Params fills them
            layer = frame.params(p.A, p.B, p.V, p.b)

            def fn(s: float) -> Params:
                spent[0] += piece.cost
                return layer
        else:
            def fn(s: float) -> Params:
                spent[0] += piece.cost
                return frame.params(*piece.arrays(t0 + math.ldexp(s, frame.g)))
        grid = np.ldexp(grid, -frame.g)
        try:
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # flow checks
                traj = flow(fn, state, grid[-1], method="rk", rtol=rtol, atol=atol, t_eval=grid,
                            max_steps=max_steps)
        except InvalidInputError as exc:  # raised by the plan's own parameters
            raise SolverError(f"the plan cannot be integrated from t = {t0:.6g}: {exc}") from exc
        if traj.status != "completed":
            assert traj.blowup_time is not None  # set with the status "blowup"
            raise SolverError(f"the plan's covariance blew up at t = "
                              f"{t0 + math.ldexp(traj.blowup_time, frame.g):.6g}")
        return replace(traj, t=np.ldexp(traj.t, frame.g))

    @staticmethod
    def _end(traj: Trajectory, t: float) -> Gaussian:
        try:
            return traj.gaussian(-1)
        except InvalidInputError as exc:
            raise SolverError(f"the integrated state at t = {t:.6g} is not a Gaussian ({exc}): "
                              f"the plan cannot be verified") from exc

    def particles(self, x0: ArrayLike, *, steps_per_piece: int, method: str = "rk4",
                  keep_particles: bool = False, backend: str = "numpy",
                  device: str | None = None) -> ParticleRun:
        """The plan applied to a token cloud x0 (N, d) with `empirical.particles.simulate`
        (true softmax attention), piece by piece so that fixed steps never straddle a breakpoint.
        Returns the concatenated run; `particles` holds the final cloud only when keep_particles
        (shape (1, N, d)). backend/device as in `simulate`."""
        steps = as_count("steps_per_piece", steps_per_piece)
        ts: list[np.ndarray] = []
        means: list[np.ndarray] = []
        covs: list[np.ndarray] = []
        x = as_array("x0", x0, ndim=2)
        if x.shape[1] != self.start.d:
            raise InvalidInputError(f"x0 must be an (N, d) cloud with d = {self.start.d}, got "
                                    f"shape {x.shape}")
        for k, piece in enumerate(self.pieces):
            def fn(s: float, piece: Piece = piece) -> Params:
                return piece.params(piece.t0 + s)

            run = simulate(fn, x, piece.t1 - piece.t0, n_steps=steps, method=method,
                           keep_particles=True, backend=backend, device=device)
            assert run.particles is not None  # kept: keep_particles=True
            x = run.particles[-1]
            sl = slice(None) if k == 0 else slice(1, None)
            ts.append(piece.t0 + run.t[sl])
            means.append(run.mean[sl])
            covs.append(run.cov[sl])
        return ParticleRun(np.concatenate(ts), np.concatenate(means), np.concatenate(covs),
                           x.shape[0], method, x[None] if keep_particles else None,
                           backend=run.backend)


def _piece_kind(piece: Piece) -> str:
    return "constant" if isinstance(piece, ConstantPiece) else "tracking attention"


def _piece_latex(piece: Piece) -> str:
    """A constant piece as its drift A and bias b (attention noted when present), a tracking
    piece as B(t) = Σ(t)⁺R."""
    if not isinstance(piece, ConstantPiece):
        return r"\text{tracking: } B(t) = \Sigma(t)^{+} R"
    M = latex_matrix(piece.layer.A)
    attention = r",\ \text{attention}" if any(np.any(V) and np.any(B)
                                                for V, B in piece.layer.heads or ()) else ""
    b = piece.layer.b
    assert b is not None  # Params fills b at construction
    bias = "" if M is None or not np.any(b) else rf",\ b = {latex_matrix(b[:, None])}"
    return (r"\text{constant}" if M is None else rf"A = {M}") + bias + attention


def _finish(plan: ControlPlan) -> ControlPlan:
    residual = plan.verify()
    return replace(plan, residual=residual, success=residual <= plan.tolerance)


def _report(plan: ControlPlan) -> ControlPlan:
    """The plan, its message saying FAILED with the residual when verification failed (e.g. a
    tracking route whose open-loop B(t) amplifies integration errors, as Σ(t)⁻¹ does for an
    ill-conditioned Σ with an imposed V)."""
    if plan.success:
        return plan
    return replace(plan, message=plan.message + f"; FAILED: terminal relative error "
                                                f"{plan.residual:.3g} > tolerance "
                                                f"{plan.tolerance:g}")


# --------------------------------------------------------------------------- constructive routes

def _polar_phases(tr: Transport, T: float, m0: np.ndarray, m1: np.ndarray
                  ) -> list[tuple[np.ndarray, np.ndarray, float, float, np.ndarray]]:
    """[(A_j, b_j, t0, t1, m_start)] for A = log P/τ1 then A = log Q/τ2, τ1 = τ2 = T/2."""
    tau = T / 2
    m_mid = 0.5 * m0 + 0.5 * m1
    out = []
    for j, (gen, ma, mb) in enumerate([(tr.log_P, m0, m_mid), (tr.log_Q, m_mid, m1)]):
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            A = gen / tau if tau > 0 else np.where(gen == 0, 0.0, np.inf)
        if not np.all(np.isfinite(A)):
            raise _too_short(f"the generator A = log {'PQ'[j]}/τ", float(np.abs(gen).max()),
                             tau, T, 2)
        out.append((A, phase_bias(A, tau, ma, mb, T, 2), j * tau, (j + 1) * tau, ma))
    return out


def _check_mean_conditioning(phases: Sequence[tuple[np.ndarray, np.ndarray]], start: Gaussian,
                             target: Gaussian, tol: float) -> None:
    """SolverError when a phase's flow e^G (G = generator·τ) amplifies the rounding of its
    starting mean m, eps·‖e^G‖‖m‖, beyond tol·s_m (s_m of `terminal_error`): the bias must then
    cancel e^G m to more digits than float64 holds, and no plan can be placed (or verified)
    within tol."""
    s_m = _log2(_mean_scale(start, target))
    for G, m in phases:
        with np.errstate(over="ignore", invalid="ignore"):
            amplification = _log2(_norm(expm(G)))
        if _log2(_norm(m)) + amplification + math.log2(_EPS) > math.log2(tol) + s_m:
            raise SolverError(f"the mean cannot be steered within tol = {tol:g} in float64: a "
                              f"phase multiplies it by about 2^{amplification:.0f} (the "
                              f"covariance changes by that factor squared) while ‖m‖ is "
                              f"2^{_log2(_norm(m)) - s_m:.0f} times the unit s_m of the error")


def _polar_plan(start: Gaussian, target: Gaussian, T: float, r: int, tol: float,
                name: str) -> ControlPlan:
    tr = transport(start.cov, target.cov, r)
    _check_mean_conditioning([(tr.log_P, start.mean), (tr.log_Q, 0.5 * start.mean +
                                                       0.5 * target.mean)], start, target, tol)
    pieces = tuple(ConstantPiece(t0, t1, _layer(A, b=b))
                   for A, b, t0, t1, _ in _polar_phases(tr, T, start.mean, target.mean))
    d = start.d
    return _report(_finish(ControlPlan(start, target, T, name, "polar", pieces, np.nan, tol,
                                       False,
                                       "affine controls: A = log P/τ1 then log Q/τ2 with "
                                       "Φ1 = QP, b solving each phase's mean (SPEC §4)",
                                       {"B": np.zeros((d, d)), "V": np.zeros((d, d))}, tr)))


def _attention_plan(start: Gaussian, target: Gaussian, T: float, r: int, tol: float, name: str,
                    A: np.ndarray, V: np.ndarray | None,
                    temperature: float) -> ControlPlan | None:
    """The tracking-attention route, or None when it does not apply (imposed V with Σ singular
    or V singular)."""
    d = start.d
    tr = transport(start.cov, target.cov, r)
    _, L0 = covariance_factor(start.cov, r)
    if V is None:
        K = tr.log()
        _check_mean_conditioning([(K, start.mean)], start, target, tol)
        size = float(np.abs(K).max()) if K.size else 0.0
        with np.errstate(over="ignore", invalid="ignore"):
            K = K / T
            V = temperature * (K - A)
        if not np.all(np.isfinite(K)):
            raise _too_short("the generator log(Φ1)/t_final", size, T, T)
        if not np.all(np.isfinite(V)):
            raise InvalidInputError(
                f"the attention value matrix V = s (log(Φ1)/t_final − A) leaves the float64 "
                f"range: temperature s = {temperature:.3g} times ‖log(Φ1)/t_final − A‖ is too "
                f"large (a smaller temperature or a longer t_final)")
        b_path = phase_bias(K, T, start.mean, target.mean)
        pieces: tuple[TrackingPiece, ...] = (
            TrackingPiece(0.0, T, K, A, V, np.eye(d) / temperature, L0, start.mean, b_path),)
        text = (f"attention: V = s (log(Φ1)/T − A) held in depth (s = {temperature:g}), "
                f"B(t) = Σ(t)⁺/s, b(t) compensating the mean")
    else:
        if r < d or not _cond(V) <= 1e12:
            return None
        _check_mean_conditioning([(tr.log_P, start.mean), (tr.log_Q, 0.5 * start.mean +
                                                           0.5 * target.mean)],
                                 start, target, tol)
        Vinv = np.linalg.inv(V)
        phases, L = [], L0
        for K, b_path, t0, t1, m_start in _polar_phases(tr, T, start.mean, target.mean):
            phases.append(TrackingPiece(t0, t1, K, A, V, Vinv @ (K - A), L, m_start, b_path))
            L = expm(K * (t1 - t0)) @ L
        pieces = tuple(phases)
        text = "attention with the imposed V: B(t) = Σ(t)⁻¹V⁻¹(K_j − A) along the polar phases"
    for piece in pieces:  # B(t) = Σ(t)⁺R must be representable (SolverError if not)
        piece.params(piece.t0), piece.params(piece.t1)
    return _report(_finish(ControlPlan(start, target, T, name, "attention", pieces, np.nan,
                                       tol, False, text, {"A": A, "V": V}, tr)))


# --------------------------------------------------------------------------- shooting

def _vech(cov: np.ndarray) -> np.ndarray:
    return cov[np.tril_indices(cov.shape[0])]


def _batched_rhs(A: np.ndarray, B: np.ndarray, V: np.ndarray, b: np.ndarray, m: np.ndarray,
                 S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ṁ, Σ̇) = ((A + V) m + VΣBm + b, AΣ + ΣAᵀ + VΣBΣ + ΣBᵀΣVᵀ) for stacks of one-head
    parameters and states: matrices (k, d, d), vectors (k, d)."""
    AS, VS = A @ S, V @ S
    W = VS @ (B @ S)
    dS = AS + np.swapaxes(AS, 1, 2) + W + np.swapaxes(W, 1, 2)
    dm = np.einsum("kij,kj->ki", A + V, m) + np.einsum("kij,kj->ki", VS @ B, m) + b
    return dm, dS


def _rk4(blocks: Sequence[np.ndarray], m: np.ndarray, S: np.ndarray, h: float,
         n: int) -> tuple[np.ndarray, np.ndarray]:
    """n classical RK4 steps of length h of `_batched_rhs` with constant parameters."""
    A, B, V, b = blocks
    for _ in range(n):
        k1 = _batched_rhs(A, B, V, b, m, S)
        k2 = _batched_rhs(A, B, V, b, m + h / 2 * k1[0], S + h / 2 * k1[1])
        k3 = _batched_rhs(A, B, V, b, m + h / 2 * k2[0], S + h / 2 * k2[1])
        k4 = _batched_rhs(A, B, V, b, m + h * k3[0], S + h * k3[1])
        m = m + h / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
        S = S + h / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
    return m, S


class _Shooting:
    """Multiple shooting for z(T) = z1 with N pieces of constant controls u_k:

        minimise Σ_k ‖φ(z_k, u_k) − z_{k+1}‖² / s_z² + λ T h Σ_k ‖u_k‖²   (z_0, z_N fixed),

    φ = n_sub RK4 steps of the moment equations over h = T/N, all pieces propagated as one batch;
    the Jacobian is block-sparse (∂φ/∂(u_k, z_k) by central differences, −I for z_{k+1}). λ is
    continued down (ENERGY_WEIGHTS) and the last solve, with λ = 0, drives the defects to zero from
    the minimum-energy neighbourhood.
    """

    def __init__(self, system: ControlSystem, start: Gaussian, target: Gaussian, T: float,
                 n_pieces: int):
        self.system, self.d, self.N, self.T = system, start.d, n_pieces, T
        self.frame = frame = Frame.of(start, target)
        start, target = frame.gaussian(start), frame.gaussian(target)
        self.held = {k: self._to_frame(k, v) for k, v in system.fixed.items()}
        self.h = T / n_pieces
        self.sizes = [(p, self.d if p == "b" else self.d * self.d)
                      for p in system.configuration.controls]
        self.p = sum(s for _, s in self.sizes)
        self.n = self.d + self.d * (self.d + 1) // 2
        self.z0 = np.concatenate([start.mean, _vech(start.cov)])
        self.z1 = np.concatenate([target.mean, _vech(target.cov)])
        self.scale = max(float(np.linalg.norm(self.z0)), float(np.linalg.norm(self.z1)), _TINY)
        self.n_sub = SHOOTING_SUBSTEPS
        self.work = 0
        self.tril = np.tril_indices(self.d)

    def controls(self, u: np.ndarray) -> dict[str, np.ndarray]:
        """Control values {name: array} from stacked vectors u (…, p)."""
        vals, i = {}, 0
        for name, size in self.sizes:
            block = u[..., i:i + size]
            vals[name] = block if name == "b" else block.reshape(*u.shape[:-1], self.d, self.d)
            i += size
        return vals

    def _to_frame(self, name: str, value: np.ndarray, inverse: bool = False) -> np.ndarray:
        """A parameter in the frame's units (B·2^e, b·2^−f; A and V unchanged), or back."""
        k = {"B": self.frame.e, "b": -self.frame.f}.get(name, 0)
        with np.errstate(over="ignore"):
            return np.ldexp(value, -k if inverse else k)

    def layer(self, u: np.ndarray) -> Params:
        """The Params (original units) of the controls u found in the frame."""
        vals = {k: self._to_frame(k, v, inverse=True) for k, v in self.controls(u).items()}
        if not all(np.all(np.isfinite(v)) for v in vals.values()):
            raise SolverError("the shooting controls leave the float64 range in the original "
                              "units")
        return self.system.params(vals)

    def propagate(self, Z: np.ndarray, U: np.ndarray) -> np.ndarray:
        """φ(z, u) for stacks Z (k, n), U (k, p)."""
        k, d = Z.shape[0], self.d
        vals = {**self.held, **self.controls(U)}
        blocks = [np.broadcast_to(vals[p], (k, d) if p == "b" else (k, d, d))
                  for p in ("A", "B", "V", "b")]
        S = np.zeros((k, d, d))
        S[:, self.tril[0], self.tril[1]] = Z[:, d:]
        S = S + np.swapaxes(np.tril(S, -1), 1, 2)
        self.work += self.n_sub
        if self.work > SHOOTING_MAX_STEPS:
            raise SolverError(f"multiple shooting spent its budget of SHOOTING_MAX_STEPS = "
                              f"{SHOOTING_MAX_STEPS} batched RK4 steps without converging "
                              f"({self.n_sub} sub-steps per piece were needed)")
        m, S = _rk4(blocks, Z[:, :d], S, self.h / self.n_sub, self.n_sub)
        return np.concatenate([m, S[:, self.tril[0], self.tril[1]]], axis=1)

    def unpack(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        us = x[:self.N * self.p].reshape(self.N, self.p)
        zs = x[self.N * self.p:].reshape(self.N - 1, self.n)
        return us, np.vstack([self.z0, zs, self.z1])

    def defects(self, x: np.ndarray) -> np.ndarray:
        us, nodes = self.unpack(x)
        with np.errstate(over="ignore", invalid="ignore"):
            out = (self.propagate(nodes[:-1], us) - nodes[1:]) / self.scale
        return np.where(np.isfinite(out), out, 1e150).ravel()

    def residual(self, x: np.ndarray, weight: float) -> np.ndarray:
        r = self.defects(x)
        if weight:
            r = np.concatenate([r, np.sqrt(weight * self.h * self.T) * x[:self.N * self.p]])
        return r

    def jacobian(self, x: np.ndarray, weight: float) -> np.ndarray:
        us, nodes = self.unpack(x)
        N, p, n = self.N, self.p, self.n
        y = np.hstack([us, nodes[:-1]])  # (N, p + n): the inputs of each piece
        steps = 1e-5 * np.maximum(1.0, np.abs(y))
        eye = np.eye(p + n)
        plus = (y[:, None, :] + eye * steps[:, None, :]).reshape(-1, p + n)
        minus = (y[:, None, :] - eye * steps[:, None, :]).reshape(-1, p + n)
        with np.errstate(over="ignore", invalid="ignore"):
            fp = self.propagate(plus[:, p:], plus[:, :p]).reshape(N, p + n, n)
            fm = self.propagate(minus[:, p:], minus[:, :p]).reshape(N, p + n, n)
        D = np.swapaxes((fp - fm) / (2 * steps[:, :, None]), 1, 2) / self.scale  # (N, n, p + n)
        D = np.where(np.isfinite(D), D, 0.0)
        rows = N * n + (N * p if weight else 0)
        J = np.zeros((rows, N * p + (N - 1) * n))
        off = N * p
        for k in range(N):
            r = slice(k * n, (k + 1) * n)
            J[r, k * p:(k + 1) * p] = D[k, :, :p]
            if k > 0:
                J[r, off + (k - 1) * n:off + k * n] = D[k, :, p:]
            if k < N - 1:
                J[r, off + k * n:off + (k + 1) * n] = -np.eye(n) / self.scale
        if weight:
            J[N * n:, :N * p] = np.sqrt(weight * self.h * self.T) * np.eye(N * p)
        return J

    def solve(self, x: np.ndarray, weight: float, max_nfev: int) -> Any:
        """Levenberg–Marquardt while λ > 0 (overdetermined); trust-region reflective for the
        underdetermined exact problem λ = 0 (minimum-norm steps from the current point)."""
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            return least_squares(self.residual, x, jac=self.jacobian, args=(weight,),
                                 method="lm" if weight else "trf", x_scale="jac", xtol=1e-15,
                                 ftol=1e-15, gtol=1e-15, max_nfev=max_nfev)

    def substeps(self, x: np.ndarray) -> int:
        """RK4 sub-steps with h_sub·ρ ≤ SHOOTING_THETA, ρ = max over pieces of the rate bound
        2‖A + VΣB‖ + 2‖V‖‖B‖‖Σ‖ + ‖V‖ (spectral norms, Σ the larger node covariance); at most
        SHOOTING_MAX_SUBSTEPS (beyond that the verification decides)."""
        us, nodes = self.unpack(x)
        d = self.d
        vals = {**self.held, **self.controls(us)}
        A, B, V = (np.broadcast_to(vals[p], (self.N, d, d)) for p in ("A", "B", "V"))
        S = np.zeros((self.N + 1, d, d))
        S[:, self.tril[0], self.tril[1]] = nodes[:, d:]
        S = S + np.swapaxes(np.tril(S, -1), 1, 2)
        norms = np.linalg.norm(S, 2, axis=(1, 2))
        sig = np.maximum(norms[:-1], norms[1:])
        nV, nB = np.linalg.norm(V, 2, axis=(1, 2)), np.linalg.norm(B, 2, axis=(1, 2))
        with np.errstate(over="ignore", invalid="ignore"):
            M = np.linalg.norm(A, 2, axis=(1, 2)) + nV * nB * sig
            steps = self.h * float(np.max(2 * M + 2 * nV * nB * sig + nV)) / SHOOTING_THETA
        if not steps <= SHOOTING_MAX_SUBSTEPS:  # also NaN: the verification decides
            return SHOOTING_MAX_SUBSTEPS
        return int(max(math.ceil(steps), SHOOTING_SUBSTEPS))

    def initial(self) -> np.ndarray:
        frac = np.arange(1, self.N)[:, None] / self.N
        nodes = (1 - frac) * self.z0 + frac * self.z1
        return np.concatenate([np.zeros(self.N * self.p), nodes.ravel()])


def _shooting_plan(system: ControlSystem, start: Gaussian, target: Gaussian, T: float, tol: float,
                   n_pieces: int, acc: Accessibility) -> ControlPlan:
    shoot = _Shooting(system, start, target, T, n_pieces)
    x = shoot.initial()
    for w in (*ENERGY_WEIGHTS, 0.0):
        shoot.n_sub = shoot.substeps(x)
        x = shoot.solve(x, w, ENERGY_NFEV if w else SHOOTING_NFEV).x
    plan = None
    for _ in range(SHOOTING_REFINEMENTS + 1):
        defect = float(np.max(np.abs(shoot.defects(x))))
        us, _ = shoot.unpack(x)
        pieces = tuple(ConstantPiece(k * shoot.h, (k + 1) * shoot.h, shoot.layer(us[k]))
                       for k in range(shoot.N))
        plan = ControlPlan(
            start, target, T, system.configuration.name, "shooting", pieces, np.inf, tol, False,
            f"multiple shooting: {n_pieces} constant pieces, {shoot.n_sub} RK4 sub-steps each, "
            f"largest discrete defect {defect:.3g} (relative)", system.fixed, None, acc)
        try:
            plan = _finish(plan)
        except SolverError as exc:  # the controls make the true flow blow up
            plan = replace(plan, message=plan.message + f" ({exc})")
        if plan.success:
            break
        # refine when the discrete problem is solved (then only the time step is to blame) or
        # when the controls found need finer steps than were used; otherwise stop
        needed = max(shoot.substeps(x), 4 * shoot.n_sub if defect <= tol else 0)
        if needed <= shoot.n_sub or shoot.n_sub >= SHOOTING_MAX_SUBSTEPS:
            break
        shoot.n_sub = min(needed, SHOOTING_MAX_SUBSTEPS)
        x = shoot.solve(x, 0.0, SHOOTING_NFEV).x
    assert plan is not None  # the loop runs at least once
    return _report(plan)


def _check_accessibility(system: ControlSystem, start: Gaussian, target: Gaussian, r: int,
                         strict: bool) -> Accessibility:
    from .lie import accessibility_rank  # SymPy's polynomial rings load only when needed

    acc0 = accessibility_rank(system, start.d, start, rank=r)
    acc1 = accessibility_rank(system, start.d, target, rank=r)
    name = system.configuration.name
    if acc0.rank != acc1.rank:
        raise UnreachableError(
            f"the target is unreachable with controls {name!r}: the Lie-algebra rank is "
            f"{acc0.rank} at the start but {acc1.rank} at the target, and it is constant along "
            f"orbits, which contain every reachable set. Start: {acc0.explain()}", acc0, acc1)
    if strict and not acc0.full:
        raise UnreachableError(
            f"the rank condition fails for controls {name!r}: {acc0.explain()} "
            f"(pass check_accessibility=False to try the numerical solver anyway)", acc0, acc1)
    return acc0


# --------------------------------------------------------------------------- entry point

def _horizon_argument(t_final: float | None, T: float | None) -> float:
    """t_final, or the deprecated keyword T (with a DeprecationWarning)."""
    if T is None:
        if t_final is None:
            raise InvalidInputError("t_final (the horizon of the plan) is required")
        return t_final
    if t_final is not None:
        raise InvalidInputError("give the horizon once: t_final, or the deprecated alias T, "
                                "not both")
    warnings.warn("steer(..., T=...) is deprecated; pass t_final (as in flow)",
                  DeprecationWarning, stacklevel=3)
    return T


def steer(start: Gaussian, target: Gaussian, t_final: float | None = None, *,
          controls: str = "affine", fixed: Mapping[str, ArrayLike] | None = None,
          temperature: float = DEFAULT_TEMPERATURE, n_pieces: int = 6,
          tol: float = DEFAULT_TOL, check_accessibility: bool = True,
          T: float | None = None) -> ControlPlan:
    """Controls on [0, T] (T = t_final) with N(m(T), Σ(T)) = N(m1, Σ1) from N(m0, Σ0), for

        ṁ = (A + V) m + V Σ B m + b,   Σ̇ = AΣ + ΣAᵀ + VΣBΣ + ΣBᵀΣVᵀ   (SPEC §2, §4).

    Routes by configuration. "affine" and "full": the polar route, Φ1 Σ0 Φ1ᵀ = Σ1 with
    Φ1 = Q P (Q ∈ SO(d), P ≻ 0), A = log P / τ1 on [0, τ1] then A = log Q / τ2 on [τ1, T], and
    in each phase the b solving m_end = e^{Aτ} m_start + (∫_0^τ e^{As} ds) b. "attention": the
    tracking route, V = s (K/T − A) constant in depth (s = `temperature`, K = log Φ1) unless
    `fixed` gives V, and B(t) = Σ(t)⁺/s, so that V Σ B Σ = (K/T − A) Σ and the covariance
    follows Σ(t) = e^{Kt/T} Σ0 e^{Kᵀt/T}. Others (and "attention" with an imposed V it cannot
    track): multiple shooting with `n_pieces` constant pieces, after the Lie-bracket rank test
    at start and target. Ranks count eigenvalues above RANK_RTOL·λ_max. The plan is verified
    by integrating it (`ControlPlan.verify`): it carries `residual` and
    `success` = residual ≤ tol.

    Parameters
    ----------
    start : Gaussian
        N(m0, Σ0) on R^d, d ≤ `MAX_DIMENSION`.
    target : Gaussian
        N(m1, Σ1) on R^d, rank Σ1 = rank Σ0.
    t_final : float
        The depth T > 0, T ≤ `MAX_HORIZON` (named as in `flow`).
    controls : str, optional
        A configuration of `lie.CONFIGURATIONS` (default "affine").
    fixed : mapping of str to array_like, optional
        Held parameters: (d, d) matrices for "A", "B", "V", a (d,) vector for "b" (the drift A
        for "attention"; the tied V or B; see `lie.control_system`).
    temperature : float, optional
        The softmax temperature s > 0 of the attention route (default `DEFAULT_TEMPERATURE`).
    n_pieces : int, optional
        The number of constant pieces of the shooting route, ≤ `MAX_PIECES` (default 6).
    tol : float, optional
        The bound on the terminal relative error (default `DEFAULT_TOL`).
    check_accessibility : bool, optional
        Refuse a shooting problem whose rank condition fails (default True); the ranks at start
        and target must agree in any case.
    T : float, optional
        Deprecated alias of t_final (DeprecationWarning; giving both is refused).

    Returns
    -------
    ControlPlan
        The plan, its pieces, and the verified terminal error.

    Raises
    ------
    InvalidInputError
        If start or target is not a Gaussian, they live in different dimensions, d exceeds
        `MAX_DIMENSION`, t_final is missing (or given twice), not positive, not finite or above
        `MAX_HORIZON`, tol or temperature is not positive and finite, n_pieces is out of range,
        check_accessibility is not a bool, controls is not a registered configuration,
        `fixed` names a control or an unknown parameter or has a bad shape or non-finite
        entries, or t_final is too short for the constructive route's controls (∝ 1/t_final)
        to be representable in float64 (the message names the shortest t_final).
    RankMismatchError
        If rank Σ0 ≠ rank Σ1: the rank is invariant under every control (SPEC §3).
    UnreachableError
        Shooting route: if the Lie-algebra ranks at start and target differ, or (with
        check_accessibility=True) the rank condition fails at the start.
    SolverError
        If the plan's controls leave float64, a logarithm or transport cannot be computed
        accurately, or the verification or shooting spends its budget.

    See Also
    --------
    ControlPlan : the result: pieces, params_at, integrate, verify, particles.
    accessibility_rank : the Lie-bracket rank test.
    flow : integrates the moment equations for given parameters.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §3 "Rank invariance".
    .. [2] riccati_tf theory, SPEC §4 "Reachability (time-varying controls)".
    .. [3] V. Jurdjevic, "Geometric Control Theory", Cambridge University Press, 1997.

    Examples
    --------
    The polar route between two Gaussians on R², verified by integration:

    >>> import numpy as np
    >>> from riccati_tf import Gaussian, steer
    >>> start = Gaussian(np.zeros(2), np.eye(2))
    >>> target = Gaussian(np.array([1.0, -1.0]), np.array([[2.0, 0.5], [0.5, 1.0]]))
    >>> plan = steer(start, target, t_final=1.0)
    >>> plan.route, plan.success, plan.residual < 1e-8
    ('polar', True, True)

    Gaussians of different covariance rank cannot be connected:

    >>> from riccati_tf.errors import RankMismatchError
    >>> try:
    ...     steer(start, Gaussian(np.zeros(2), np.diag([1.0, 0.0])), t_final=1.0)
    ... except RankMismatchError:
    ...     print("rank Σ is invariant")
    rank Σ is invariant
    """
    t_final = _horizon_argument(t_final, T)
    for name, g in (("start", start), ("target", target)):
        if not isinstance(g, Gaussian):
            raise InvalidInputError(f"{name} must be a riccati_tf.Gaussian, "
                                    f"got {type(g).__name__}")
    if start.d != target.d:
        raise InvalidInputError(f"start lives in R^{start.d} but target in R^{target.d}")
    d = start.d
    if d > MAX_DIMENSION:
        raise InvalidInputError(f"steering is offered up to d = {MAX_DIMENSION}, got d = {d}")
    T = as_time("t_final", t_final, maximum=MAX_HORIZON)
    tol = as_time("tol", tol)
    temperature = as_time("temperature", temperature)
    n_pieces = as_count("n_pieces", n_pieces, maximum=MAX_PIECES)
    if not isinstance(check_accessibility, bool | np.bool_):
        raise InvalidInputError(f"check_accessibility must be True or False, got "
                                f"{check_accessibility!r:.40}")
    from .lie import configuration, control_system  # SymPy loads on first use
    from .lie.system import _fixed_values

    conf = configuration(controls)
    held = {k: np.array(v, dtype=float) for k, v in _fixed_values(conf, d, fixed).items()
            if v is not None}
    r0, r1 = covariance_rank(start.cov), covariance_rank(target.cov)
    if r0 != r1:
        raise RankMismatchError(
            f"rank Σ0 = {r0} but rank Σ1 = {r1}: Σ(t) = Φ(t) Σ0 Φ(t)ᵀ with Φ(t) invertible, so "
            f"the rank of the covariance is invariant under every control (SPEC §3) and no plan "
            f"connects Gaussians of different rank")
    attention_free = not np.any(held.get("V", 0)) and not np.any(held.get("B", 0))
    if conf.name in ("affine", "full") and attention_free and not np.any(held.get("A", 0)):
        return _polar_plan(start, target, T, r0, tol, conf.name)
    if conf.name == "attention":
        plan = _attention_plan(start, target, T, r0, tol, conf.name, held["A"],
                               held["V"] if "V" in (fixed or {}) else None, temperature)
        if plan is not None:
            return plan
    system = control_system(conf, d, fixed=fixed)
    acc = _check_accessibility(system, start, target, r0, check_accessibility)
    return _shooting_plan(system, start, target, T, tol, n_pieces, acc)
