"""The transport between two covariances of equal rank: Φ1 with Φ1 Σ0 Φ1ᵀ = Σ1 (SPEC §4).

Covariance factors and rank, the direct rotation R = e^Ω between two ranges, the Gaussian
optimal-transport map Ψ on the target's range, Φ1 = R P (polar), and the bias b of one phase
solving m_end = e^{Aτ} m_start + (∫_0^τ e^{As} ds) b; norms kept as (mantissa, exponent) so that
no magnitude overflows."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.linalg import expm, logm

from ...errors import InvalidInputError, SolverError
from ...state.validation import scale_exponent
from .constants import LOG_RTOL, RANK_RTOL

__all__: list[str] = []


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
