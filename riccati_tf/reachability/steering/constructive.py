"""The constructive routes (SPEC §4): the polar route, A = log P/τ1 then A = log Q/τ2 with
piecewise-constant b, and the attention route, V = s(K/T − A) with B(t) = Σ(t)⁺/s tracking
Σ(t) = e^{Kt/T}Σ0e^{Kᵀt/T}."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.linalg import expm

from ...errors import InvalidInputError, SolverError
from ...state.params import Gaussian
from .constants import _EPS
from .geometry import (
    Transport,
    _cond,
    _log2,
    _norm,
    _too_short,
    covariance_factor,
    phase_bias,
    transport,
)
from .pieces import ConstantPiece, TrackingPiece, _layer, _mean_scale
from .plan import ControlPlan, _finish, _report

__all__: list[str] = []


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

