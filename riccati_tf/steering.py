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
regularisation continued to zero), after the Lie-algebra rank test of `riccati_tf.lie`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
from scipy.linalg import expm, logm
from scipy.optimize import least_squares

from .errors import InvalidInputError, RankMismatchError, SolverError, UnreachableError
from .flows import Trajectory, flow
from .model import Gaussian, Params
from .particles import ParticleRun, simulate
from .validation import as_count, as_time, psd_rank

if TYPE_CHECKING:
    from .lie import Accessibility, ControlSystem

#: covariance rank: eigenvalues above RANK_RTOL · λ_max count
RANK_RTOL = 1e-10
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


# --------------------------------------------------------------------------- linear algebra

def covariance_factor(cov: np.ndarray, r: int) -> tuple[np.ndarray, np.ndarray]:
    """(U, L): an orthonormal basis U (d×r) of the top-r eigenspace and L = U diag(√λ), L Lᵀ ≈ Σ."""
    eig, vec = np.linalg.eigh(cov)
    d = cov.shape[0]
    U = vec[:, d - r:]
    return U, U * np.sqrt(np.clip(eig[d - r:], 0.0, None))


def _sym_function(S: np.ndarray, fn) -> np.ndarray:
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
        """The real principal logarithm K of Φ1 (e^K = Φ1; Re λ(Φ1) ≥ 0 makes it real)."""
        K = logm(self.Phi)
        if np.iscomplexobj(K):
            if np.linalg.norm(K.imag) > 1e-10 * max(np.linalg.norm(K.real), 1.0):
                raise SolverError("the principal logarithm of Φ1 is not real: Φ1 has an "
                                  "eigenvalue on the negative real axis")
            K = K.real
        return K


def transport(cov0: np.ndarray, cov1: np.ndarray, r: int) -> Transport:
    """Φ1 ∈ GL⁺(d) with Φ1 Σ0 Φ1ᵀ = Σ1 for covariances of equal rank r, as Φ1 = Ψ R = R P.

    R = e^Ω turns range Σ0 onto range Σ1 (`direct_rotation`); with T0 = U1ᵀ R L0 and T1 = U1ᵀ L1,
    S ≻ 0 solves S (T0T0ᵀ) S = T1T1ᵀ (S = A0^{-1/2}(A0^{1/2} A1 A0^{1/2})^{1/2} A0^{-1/2}), so
    S T0 = T1 O for an orthogonal O and Ψ = U1 S U1ᵀ + (I − U1U1ᵀ) gives Φ1 L0 = L1 O.
    """
    d = cov0.shape[0]
    U0, L0 = covariance_factor(cov0, r)
    U1, L1 = covariance_factor(cov1, r)
    Omega = direct_rotation(U0, U1)
    R = expm(Omega)
    if r:
        T0 = U1.T @ R @ L0
        T1 = U1.T @ L1
        A0, A1 = T0 @ T0.T, T1 @ T1.T
        h, hinv = _sym_function(A0, np.sqrt), _sym_function(A0, lambda x: 1 / np.sqrt(x))
        S = hinv @ _sym_function(h @ A1 @ h, np.sqrt) @ hinv
        log_psi = U1 @ _sym_function(S, np.log) @ U1.T
    else:
        log_psi = np.zeros((d, d))
    log_P = R.T @ log_psi @ R
    log_P = 0.5 * (log_P + log_P.T)
    Phi = R @ expm(log_P)
    scale = max(np.linalg.norm(cov1), np.finfo(float).tiny)
    residual = np.linalg.norm(Phi @ cov0 @ Phi.T - cov1) / scale
    return Transport(Phi, Omega, log_P, r, float(residual))


def phase_bias(A: np.ndarray, tau: float, m_start: np.ndarray, m_end: np.ndarray) -> np.ndarray:
    """b with m_end = e^{Aτ} m_start + (∫_0^τ e^{As} ds) b; the integral is the top-right block
    of expm([[A, I], [0, 0]] τ), so a singular A needs no inversion."""
    d = A.shape[0]
    block = np.zeros((2 * d, 2 * d))
    block[:d, :d], block[:d, d:] = A, np.eye(d)
    F = expm(block * tau)
    E, J = F[:d, :d], F[:d, d:]
    if np.linalg.cond(J) > 1e12:
        raise SolverError("∫_0^τ e^{As} ds is singular: A has an eigenvalue 2πik/τ, k ≠ 0")
    return np.linalg.solve(J, m_end - E @ m_start)


# --------------------------------------------------------------------------- plan pieces

@dataclass(frozen=True, eq=False)
class ConstantPiece:
    """Constant parameters on [t0, t1]."""

    t0: float
    t1: float
    layer: Params

    def params(self, t: float) -> Params:
        return self.layer


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

    def params(self, t: float) -> Params:
        d = self.K.shape[0]
        aug = np.zeros((d + 1, d + 1))
        aug[:d, :d], aug[:d, d] = self.K, self.b_path
        F = expm(aug * (t - self.t0))
        E = F[:d, :d]
        m = E @ self.m_start + F[:d, d]
        L = E @ self.L_start
        if L.shape[1]:
            Ginv = np.linalg.inv(L.T @ L)
            LG = L @ Ginv
            pinv, proj = LG @ LG.T, LG @ L.T
        else:
            pinv = proj = np.zeros((d, d))
        B = pinv @ self.R
        b = self.K @ m + self.b_path - (self.A + self.V) @ m - self.V @ (proj @ (self.R @ m))
        return Params(self.A, B=B, V=self.V, b=b)


# --------------------------------------------------------------------------- the plan

def terminal_error(mean, cov, start: Gaussian, target: Gaussian) -> float:
    """‖(m − m1, Σ − Σ1)‖ / max(‖(m1, Σ1)‖, ‖(m0, Σ0)‖) (Frobenius; absolute if both are 0)."""
    err = np.hypot(np.linalg.norm(mean - target.mean), np.linalg.norm(cov - target.cov))
    scale = max(np.hypot(np.linalg.norm(target.mean), np.linalg.norm(target.cov)),
                np.hypot(np.linalg.norm(start.mean), np.linalg.norm(start.cov)))
    return float(err / scale) if scale > 0 else float(err)


@dataclass(frozen=True, eq=False)
class ControlPlan:
    """Controls t ↦ Params on [0, T] steering N(m0, Σ0) to N(m1, Σ1).

    route: "polar" (affine pieces A = log P/τ1, A = log Q/τ2), "attention" (tracking attention,
    V constant, B(t) = Σ(t)⁺R), or "shooting" (piecewise-constant controls found numerically).
    pieces: the pieces in time order (each has t0, t1 and params(t)); residual: the terminal
    relative error found by `verify()` when the plan was made, against `tolerance`; success:
    residual ≤ tolerance; transport: Φ1 (constructive routes); accessibility: the rank test at
    the start (shooting); fixed: the parameters held constant in depth; message: what was done.
    """

    start: Gaussian
    target: Gaussian
    T: float
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
    def breakpoints(self) -> np.ndarray:
        """0 = t_0 < t_1 < … < t_n = T, the ends of the pieces."""
        return np.array([p.t0 for p in self.pieces] + [self.pieces[-1].t1])

    def params_at(self, t: float) -> Params:
        """The layer parameters at depth t ∈ [0, T] (right-continuous at breakpoints)."""
        t = as_time("t", t, allow_zero=True)
        if t > self.T * (1 + 1e-12):
            raise InvalidInputError(f"t must lie in [0, T] = [0, {self.T}], got {t}")
        k = int(np.searchsorted(self.breakpoints[1:-1], t, side="right"))
        return self.pieces[k].params(t)

    def integrate(self, *, rtol: float = 1e-11, atol: float = 1e-13,
                  points_per_piece: int = 21) -> Trajectory:
        """`flow(…, method="rk")` piece by piece (never stepping across a breakpoint)."""
        ts, means, covs = [], [], []
        state = self.start
        for piece in self.pieces:
            def fn(s, piece=piece):
                return piece.params(piece.t0 + s)

            tau = piece.t1 - piece.t0
            traj = flow(fn, state, tau, method="rk", rtol=rtol, atol=atol,
                        t_eval=np.linspace(0.0, tau, points_per_piece))
            if traj.status != "completed":
                raise SolverError(f"the plan's covariance blew up at t = "
                                  f"{piece.t0 + traj.blowup_time:.6g}")
            ts.append(piece.t0 + traj.t), means.append(traj.mean), covs.append(traj.cov)
            state = traj.gaussian(-1)
        return Trajectory(np.concatenate(ts), np.concatenate(means), np.concatenate(covs),
                          "completed", None, "rk", None, rtol, atol)

    def verify(self, *, rtol: float = 1e-11, atol: float = 1e-13) -> float:
        """Terminal relative error ‖(m(T) − m1, Σ(T) − Σ1)‖ / ‖(m1, Σ1)‖ of `integrate()`."""
        traj = self.integrate(rtol=rtol, atol=atol, points_per_piece=2)
        return terminal_error(traj.mean[-1], traj.cov[-1], self.start, self.target)

    def particles(self, x0: np.ndarray, *, steps_per_piece: int, method: str = "rk4",
                  keep_particles: bool = False, backend: str = "numpy",
                  device: str | None = None) -> ParticleRun:
        """The plan applied to a token cloud x0 (N, d) with `riccati_tf.particles.simulate`
        (true softmax attention), piece by piece so that fixed steps never straddle a breakpoint.
        Returns the concatenated run; `particles` holds the final cloud only when keep_particles
        (shape (1, N, d)). backend/device as in `simulate`."""
        steps = as_count("steps_per_piece", steps_per_piece)
        ts, means, covs = [], [], []
        x = np.asarray(x0, dtype=float)
        for k, piece in enumerate(self.pieces):
            def fn(s, piece=piece):
                return piece.params(piece.t0 + s)

            run = simulate(fn, x, piece.t1 - piece.t0, n_steps=steps, method=method,
                           keep_particles=True, backend=backend, device=device)
            x = run.particles[-1]
            sl = slice(None) if k == 0 else slice(1, None)
            ts.append(piece.t0 + run.t[sl]), means.append(run.mean[sl]), covs.append(run.cov[sl])
        return ParticleRun(np.concatenate(ts), np.concatenate(means), np.concatenate(covs),
                           x.shape[0], method, x[None] if keep_particles else None,
                           backend=run.backend)


def _finish(plan: ControlPlan) -> ControlPlan:
    residual = plan.verify()
    return replace(plan, residual=residual, success=residual <= plan.tolerance)


# --------------------------------------------------------------------------- constructive routes

def _polar_phases(tr: Transport, T: float, m0, m1):
    """[(A_j, b_j, t0, t1, m_start)] for A = log P/τ1 then A = log Q/τ2, τ1 = τ2 = T/2."""
    tau = T / 2
    m_mid = 0.5 * (m0 + m1)
    out = []
    for j, (gen, ma, mb) in enumerate([(tr.log_P, m0, m_mid), (tr.log_Q, m_mid, m1)]):
        A = gen / tau
        out.append((A, phase_bias(A, tau, ma, mb), j * tau, (j + 1) * tau, ma))
    return out


def _polar_plan(start, target, T, r, tol, name) -> ControlPlan:
    tr = transport(start.cov, target.cov, r)
    pieces = tuple(ConstantPiece(t0, t1, Params(A, b=b))
                   for A, b, t0, t1, _ in _polar_phases(tr, T, start.mean, target.mean))
    d = start.d
    return _finish(ControlPlan(start, target, T, name, "polar", pieces, np.nan, tol, False,
                               "affine controls: A = log P/τ1 then log Q/τ2 with Φ1 = QP, "
                               "b solving each phase's mean (SPEC §4)",
                               {"B": np.zeros((d, d)), "V": np.zeros((d, d))}, tr))


def _attention_plan(start, target, T, r, tol, name, A, V, temperature) -> ControlPlan | None:
    """The tracking-attention route, or None when it does not apply (imposed V with Σ singular
    or V singular)."""
    d = start.d
    tr = transport(start.cov, target.cov, r)
    _, L0 = covariance_factor(start.cov, r)
    if V is None:
        K = tr.log() / T
        V = temperature * (K - A)
        b_path = phase_bias(K, T, start.mean, target.mean)
        pieces = (TrackingPiece(0.0, T, K, A, V, np.eye(d) / temperature, L0, start.mean,
                                b_path),)
        text = (f"attention: V = s (log(Φ1)/T − A) held in depth (s = {temperature:g}), "
                f"B(t) = Σ(t)⁺/s, b(t) compensating the mean")
    else:
        if r < d or np.linalg.cond(V) > 1e12:
            return None
        Vinv = np.linalg.inv(V)
        pieces, L = [], L0
        for K, b_path, t0, t1, m_start in _polar_phases(tr, T, start.mean, target.mean):
            pieces.append(TrackingPiece(t0, t1, K, A, V, Vinv @ (K - A), L, m_start, b_path))
            L = expm(K * (t1 - t0)) @ L
        pieces = tuple(pieces)
        text = "attention with the imposed V: B(t) = Σ(t)⁻¹V⁻¹(K_j − A) along the polar phases"
    return _finish(ControlPlan(start, target, T, name, "attention", pieces, np.nan, tol, False,
                               text, {"A": A, "V": V}, tr))


# --------------------------------------------------------------------------- shooting

def _vech(cov: np.ndarray) -> np.ndarray:
    return cov[np.tril_indices(cov.shape[0])]


def _batched_rhs(A, B, V, b, m, S):
    """(ṁ, Σ̇) = ((A + V) m + VΣBm + b, AΣ + ΣAᵀ + VΣBΣ + ΣBᵀΣVᵀ) for stacks of one-head
    parameters and states: matrices (k, d, d), vectors (k, d)."""
    AS, VS = A @ S, V @ S
    W = VS @ (B @ S)
    dS = AS + np.swapaxes(AS, 1, 2) + W + np.swapaxes(W, 1, 2)
    dm = np.einsum("kij,kj->ki", A + V, m) + np.einsum("kij,kj->ki", VS @ B, m) + b
    return dm, dS


def _rk4(blocks, m, S, h: float, n: int):
    """n classical RK4 steps of length h of `_batched_rhs` with constant parameters."""
    for _ in range(n):
        k1 = _batched_rhs(*blocks, m, S)
        k2 = _batched_rhs(*blocks, m + h / 2 * k1[0], S + h / 2 * k1[1])
        k3 = _batched_rhs(*blocks, m + h / 2 * k2[0], S + h / 2 * k2[1])
        k4 = _batched_rhs(*blocks, m + h * k3[0], S + h * k3[1])
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
        self.h = T / n_pieces
        self.sizes = [(p, self.d if p == "b" else self.d * self.d)
                      for p in system.configuration.controls]
        self.p = sum(s for _, s in self.sizes)
        self.n = self.d + self.d * (self.d + 1) // 2
        self.z0 = np.concatenate([start.mean, _vech(start.cov)])
        self.z1 = np.concatenate([target.mean, _vech(target.cov)])
        self.scale = max(np.linalg.norm(self.z0), np.linalg.norm(self.z1), 1e-300)
        self.n_sub = SHOOTING_SUBSTEPS
        self.tril = np.tril_indices(self.d)

    def controls(self, u: np.ndarray) -> dict[str, np.ndarray]:
        """Control values {name: array} from stacked vectors u (…, p)."""
        vals, i = {}, 0
        for name, size in self.sizes:
            block = u[..., i:i + size]
            vals[name] = block if name == "b" else block.reshape(*u.shape[:-1], self.d, self.d)
            i += size
        return vals

    def layer(self, u: np.ndarray) -> Params:
        return self.system.params(self.controls(u))

    def propagate(self, Z: np.ndarray, U: np.ndarray) -> np.ndarray:
        """φ(z, u) for stacks Z (k, n), U (k, p)."""
        k, d = Z.shape[0], self.d
        vals = {**self.system.fixed, **self.controls(U)}
        blocks = [np.broadcast_to(vals[p], (k, d) if p == "b" else (k, d, d))
                  for p in ("A", "B", "V", "b")]
        S = np.zeros((k, d, d))
        S[:, self.tril[0], self.tril[1]] = Z[:, d:]
        S = S + np.swapaxes(np.tril(S, -1), 1, 2)
        m, S = _rk4(blocks, Z[:, :d], S, self.h / self.n_sub, self.n_sub)
        return np.concatenate([m, S[:, self.tril[0], self.tril[1]]], axis=1)

    def unpack(self, x):
        us = x[:self.N * self.p].reshape(self.N, self.p)
        zs = x[self.N * self.p:].reshape(self.N - 1, self.n)
        return us, np.vstack([self.z0, zs, self.z1])

    def defects(self, x) -> np.ndarray:
        us, nodes = self.unpack(x)
        with np.errstate(over="ignore", invalid="ignore"):
            out = (self.propagate(nodes[:-1], us) - nodes[1:]) / self.scale
        return np.where(np.isfinite(out), out, 1e150).ravel()

    def residual(self, x, weight: float) -> np.ndarray:
        r = self.defects(x)
        if weight:
            r = np.concatenate([r, np.sqrt(weight * self.h * self.T) * x[:self.N * self.p]])
        return r

    def jacobian(self, x, weight: float) -> np.ndarray:
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

    def solve(self, x, weight: float, max_nfev: int):
        """Levenberg–Marquardt while λ > 0 (overdetermined); trust-region reflective for the
        underdetermined exact problem λ = 0 (minimum-norm steps from the current point)."""
        return least_squares(self.residual, x, jac=self.jacobian, args=(weight,),
                             method="lm" if weight else "trf", x_scale="jac", xtol=1e-15,
                             ftol=1e-15, gtol=1e-15, max_nfev=max_nfev)

    def substeps(self, x) -> int:
        """RK4 sub-steps with h_sub·ρ ≤ SHOOTING_THETA, ρ = max over pieces of the rate bound
        2‖A + VΣB‖ + 2‖V‖‖B‖‖Σ‖ + ‖V‖ (spectral norms, Σ the larger node covariance); at most
        SHOOTING_MAX_SUBSTEPS (beyond that the verification decides)."""
        us, nodes = self.unpack(x)
        d = self.d
        vals = {**self.system.fixed, **self.controls(us)}
        A, B, V = (np.broadcast_to(vals[p], (self.N, d, d)) for p in ("A", "B", "V"))
        S = np.zeros((self.N + 1, d, d))
        S[:, self.tril[0], self.tril[1]] = nodes[:, d:]
        S = S + np.swapaxes(np.tril(S, -1), 1, 2)
        norms = np.linalg.norm(S, 2, axis=(1, 2))
        sig = np.maximum(norms[:-1], norms[1:])
        nV, nB = np.linalg.norm(V, 2, axis=(1, 2)), np.linalg.norm(B, 2, axis=(1, 2))
        M = np.linalg.norm(A, 2, axis=(1, 2)) + nV * nB * sig
        rho = float(np.max(2 * M + 2 * nV * nB * sig + nV))
        return int(np.clip(np.ceil(self.h * rho / SHOOTING_THETA), SHOOTING_SUBSTEPS,
                           SHOOTING_MAX_SUBSTEPS))

    def initial(self) -> np.ndarray:
        frac = np.arange(1, self.N)[:, None] / self.N
        nodes = (1 - frac) * self.z0 + frac * self.z1
        return np.concatenate([np.zeros(self.N * self.p), nodes.ravel()])


def _shooting_plan(system, start, target, T, tol, n_pieces, acc) -> ControlPlan:
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
    if not plan.success:
        plan = replace(plan, message=plan.message + f"; FAILED: terminal relative error "
                       f"{plan.residual:.3g} > tolerance {tol:g}")
    return plan


def _check_accessibility(system, start, target, r, strict):
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

def steer(start: Gaussian, target: Gaussian, T: float, *, controls: str = "affine",
          fixed: Mapping | None = None, temperature: float = DEFAULT_TEMPERATURE,
          n_pieces: int = 6,
          tol: float = DEFAULT_TOL, check_accessibility: bool = True) -> ControlPlan:
    """Controls on [0, T] with N(m(T), Σ(T)) = N(m1, Σ1) from N(m0, Σ0), for

        ṁ = (A + V) m + V Σ B m + b,   Σ̇ = AΣ + ΣAᵀ + VΣBΣ + ΣBᵀΣVᵀ   (SPEC §2, §4).

    controls: a configuration of `riccati_tf.lie.CONFIGURATIONS`. "affine" and "full": the polar
    route (two constant affine pieces). "attention": the tracking route (V constant in depth,
    chosen as temperature·(log(Φ1)/T − A) unless `fixed` gives it; B(t) = Σ(t)⁺/temperature;
    see DEFAULT_TEMPERATURE for the choice of the softmax temperature).
    Others (and "attention" with an imposed V it cannot track): multiple shooting with n_pieces
    constant pieces, after the Lie-bracket rank test at start and target (UnreachableError when
    the ranks differ, or — unless check_accessibility=False — when the condition fails).
    fixed: held parameters (A drift for "attention"; the tied V or B; see `lie.control_system`).
    Ranks count eigenvalues above RANK_RTOL·λ_max; unequal ranks raise RankMismatchError.
    The plan carries `residual` = `verify()` and `success` = residual ≤ tol.
    """
    for name, g in (("start", start), ("target", target)):
        if not isinstance(g, Gaussian):
            raise InvalidInputError(f"{name} must be a riccati_tf.Gaussian, "
                                    f"got {type(g).__name__}")
    if start.d != target.d:
        raise InvalidInputError(f"start lives in R^{start.d} but target in R^{target.d}")
    T = as_time("T", T)
    tol = as_time("tol", tol)
    temperature = as_time("temperature", temperature)
    n_pieces = as_count("n_pieces", n_pieces)
    from .lie import configuration, control_system  # loaded on first use (SymPy rings)

    conf = configuration(controls)
    d = start.d
    r0, r1 = (psd_rank(g.cov, RANK_RTOL * max(np.linalg.eigvalsh(g.cov)[-1], 0.0))
              for g in (start, target))
    if r0 != r1:
        raise RankMismatchError(
            f"rank Σ0 = {r0} but rank Σ1 = {r1}: Σ(t) = Φ(t) Σ0 Φ(t)ᵀ with Φ(t) invertible, so "
            f"the rank of the covariance is invariant under every control (SPEC §3) and no plan "
            f"connects Gaussians of different rank")
    system = control_system(conf, d, fixed=fixed)
    held = system.fixed
    attention_free = not np.any(held.get("V", 0)) and not np.any(held.get("B", 0))
    if conf.name in ("affine", "full") and attention_free and not np.any(held.get("A", 0)):
        return _polar_plan(start, target, T, r0, tol, conf.name)
    if conf.name == "attention":
        given_V = fixed is not None and "V" in fixed
        plan = _attention_plan(start, target, T, r0, tol, conf.name, held["A"],
                               held["V"] if given_V else None, temperature)
        if plan is not None:
            return plan
    acc = _check_accessibility(system, start, target, r0, check_accessibility)
    return _shooting_plan(system, start, target, T, tol, n_pieces, acc)
