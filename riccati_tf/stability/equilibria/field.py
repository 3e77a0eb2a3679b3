"""The covariance field and its relative residual (SPEC §5):

    F(Σ) = A Σ + Σ Aᵀ + Σ_h (V_h Σ B_h Σ + Σ B_hᵀ Σ V_hᵀ),
    ρ(Σ) = ‖F(Σ)‖_F / (‖AΣ‖_F + Σ_h ‖V_h Σ B_h Σ‖_F),

free of under- and overflow at any magnitude, and the products at Σ that F, L and Newton's
preconditioner share (`Products`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...state.lowrank import value_factors
from ...state.params import Params
from ..riccati.numerics import exponent
from .constants import UNSCALED_EXPONENT

__all__: list[str] = []


def F(params: Params, cov: np.ndarray) -> np.ndarray:
    """F(Σ) = AΣ + ΣAᵀ + Σ_h (V_hΣB_hΣ + ΣB_hᵀΣV_hᵀ)."""
    AS = params.A @ cov
    out = AS + AS.T
    for V, B in params.heads:
        W = V @ cov @ B @ cov
        out += W + W.T
    return out


def relative_residual(params: Params, cov: np.ndarray) -> float:
    """‖F(Σ)‖_F / (‖AΣ‖_F + Σ_h ‖V_h Σ B_h Σ‖_F); 0 when the denominator vanishes (Σ = 0).

    The ratio does not change when every term is multiplied by one power of two, so each
    factor is scaled to unit size, each product carries its exponent, and the terms are brought
    to the largest one's exponent: no under- or overflow at any magnitude (a term below 2^−1000
    of the largest underflows harmlessly)."""
    def unit(M: np.ndarray) -> tuple[np.ndarray, int]:
        e = exponent(M)
        if abs(e) <= UNSCALED_EXPONENT:  # products of ≤ 4 such factors and their squares fit
            return M, 0
        return np.ldexp(M, -e), e

    S, es = unit(cov)
    A, ea = unit(params.A)
    terms = [(A @ S, ea + es)]
    scalar = params.value_scalars is not None
    for V, B in params.heads:
        (Vs, ev), (Bs, eb) = unit(V), unit(B)
        VS = Vs[0, 0] * S if scalar else Vs @ S  # V_h = v_h I: no product needed
        terms.append((VS @ Bs @ S, ev + eb + 2 * es))
    top = max(e for _, e in terms)
    with np.errstate(under="ignore"):
        scaled = [T if e == top else np.ldexp(T, e - top) for T, e in terms]
    out = sum(T + T.T for T in scaled)
    scale = sum(np.linalg.norm(T) for T in scaled)
    return float(np.linalg.norm(out) / scale) if scale > 0 else 0.0


@dataclass(frozen=True, eq=False)
class Products:
    """The products at Σ that F, L and the preconditioner share: C_h = B_hΣ (None for a head
    applied through its factors, `value_factors`), M = A + Σ_h V_hΣB_h,
    F(Σ) = MΣ + ΣMᵀ; residual ‖F(Σ)‖_F / (‖AΣ‖_F + ‖(M − A)Σ‖_F) ≥ relative_residual (the
    heads' terms summed before their norm is taken: a stopping test on the safe side)."""

    cov: np.ndarray
    C: tuple[np.ndarray | None, ...]
    M: np.ndarray
    field: np.ndarray
    residual: float


def products(params: Params, cov: np.ndarray) -> Products:
    """Products at Σ (2 + 3H products of d×d matrices, O(s_h d²) for a factored head); factors
    beyond 2^±UNSCALED_EXPONENT take F and relative_residual's power-of-two scaled evaluation
    instead."""
    vf = value_factors(params)
    heads = params.heads
    C: list[np.ndarray | None] = [None] * len(heads)
    M = params.A.copy()
    checked = [cov, params.A]
    for h in vf.dense:
        V, B = heads[h]
        BS = C[h] = B @ cov
        VS = V @ cov
        M += VS @ B
        checked += [VS, BS]
    if vf.factored:
        WS = vf.W @ cov
        M += vf.apply(vf.O, WS, [heads[h][1] for h in vf.factored])
        checked.append(WS)
    if max(abs(exponent(X)) for X in checked) > UNSCALED_EXPONENT:
        return Products(cov, tuple(C), M, F(params, cov), relative_residual(params, cov))
    terms = [params.A @ cov, (M - params.A) @ cov]
    field = sum(T + T.T for T in terms)
    scale = sum(np.linalg.norm(T) for T in terms)
    res = float(np.linalg.norm(field) / scale) if scale > 0 else 0.0
    return Products(cov, tuple(C), M, field, res)
