"""Continuation from the scalar case: the stabilizing Bernoulli solution of
V_h(s) = (1 − s) v̄_h I + s V_h (v̄_h = tr V_h / d) at s = 0, tracked by Newton's method in s
to the layer's own V at s = 1.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import LinAlgError

from ...errors import SolverError
from ...state.params import Params
from .budget import _PerLayer, _Work
from .constants import (
    CONTINUATION_MAXITER,
    CONTINUATION_MIN_STEP,
    CONTINUATION_SOLVES,
    CONTINUATION_SOLVES_KRYLOV,
    CONTINUATION_STEP,
    KRONECKER_MAX_D,
    KRYLOV_BUDGET,
)
from .krylov import KrylovBudgetSpent, _KrylovBudget
from .newton import _newton
from .scalar import _scalar_stable

__all__: list[str] = []


def _scalar_part(params: Params, s: float) -> Params:
    """V_h(s) = (1 − s) v̄_h I + s V_h with v̄_h = tr V_h / d (s = 0: the scalar-V layer)."""
    if s == 1.0:
        return params
    eye = np.eye(params.d)
    heads = [((1 - s) * np.trace(V) / params.d * eye + s * V, B) for V, B in params.heads]
    return Params(params.A, b=params.b, heads=heads)


def _continuation_stage(params: Params, axis_rtol: float, *, work: _Work) -> np.ndarray | None:
    """Track the stabilizing scalar-V equilibrium to the general V by Newton's method in s
    (steps ≤ CONTINUATION_STEP; beyond d = 30 a first step straight to s = 1). Remembered per
    layer (read-only result): certify asks `equilibria` of one layer from several starts."""
    try:
        start = _scalar_stable(_scalar_part(params, 0.0), axis_rtol, work)
    except SolverError:
        return None
    if not start or start[0].rank == 0:
        return None
    # beyond d = 30 each Newton solve is costly: first try the whole way in one solve
    cov, s = start[0].cov, 0.0
    h = 1.0 if params.d > KRONECKER_MAX_D else CONTINUATION_STEP
    for _ in range(CONTINUATION_SOLVES if params.d <= KRONECKER_MAX_D else
                   CONTINUATION_SOLVES_KRYLOV):
        if s >= 1.0:
            break
        t = min(1.0, s + h)
        try:  # the iterate may have left the PSD cone on the way: it is no one's input
            got = _newton(_scalar_part(params, t), cov, CONTINUATION_MAXITER,
                          _KrylovBudget(KRYLOV_BUDGET, work))
        except (KrylovBudgetSpent, LinAlgError):  # too long a step for the budget: a shorter one
            got = None
        if got is None:
            h /= 2
            if h < CONTINUATION_MIN_STEP:
                return None
            continue
        cov, s = got[0], t
        h = min(2 * h, CONTINUATION_STEP)
    if s < 1.0:  # the budget of solves is spent before s = 1
        return None
    cov.setflags(write=False)
    return cov


_continuation = _PerLayer(_continuation_stage)
