"""Multiple shooting with piecewise-constant controls for every other control configuration:
the terminal condition (m(T), Σ(T)) = (m1, Σ1) solved by least squares with minimum-energy
regularisation continued to zero, after the Lie-algebra rank test (SPEC §4)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.optimize import least_squares

from ...errors import SolverError, UnreachableError
from ...state.params import Gaussian, Params
from .constants import (
    _TINY,
    ENERGY_NFEV,
    ENERGY_WEIGHTS,
    SHOOTING_MAX_STEPS,
    SHOOTING_MAX_SUBSTEPS,
    SHOOTING_NFEV,
    SHOOTING_REFINEMENTS,
    SHOOTING_SUBSTEPS,
    SHOOTING_THETA,
)
from .pieces import ConstantPiece, Frame
from .plan import ControlPlan, _finish, _report

if TYPE_CHECKING:
    from ..lie import Accessibility, ControlSystem

__all__: list[str] = []


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
    from ..lie import accessibility_rank  # SymPy's polynomial rings load only when needed

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

