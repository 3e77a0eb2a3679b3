"""One Rodas4 step and its step-size rule (`tableau`): y_{n+1} and the error estimate u_6."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import tableau

__all__: list[str] = []

#: the step-size rule h_new = h · min(GROW, max(SHRINK, SAFETY · err^(−1/ERROR_ORDER)))
SAFETY, SHRINK, GROW = 0.9, 0.2, 6.0


def rodas_step(f: Callable[[np.ndarray], np.ndarray], solve: Callable[[np.ndarray], np.ndarray],
               y: np.ndarray, h: float) -> tuple[np.ndarray, np.ndarray]:
    """(y_{n+1}, u_6) of one Rodas4 step of size h from y; solve(r) = (I/(γh) − J)⁻¹ r."""
    u: list[np.ndarray] = []
    for i in range(tableau.STAGES):
        arg = y + sum((tableau.A[i, j] * u[j] for j in range(i)), np.zeros_like(y))
        r = f(arg) + sum((tableau.C[i, j] / h * u[j] for j in range(i)), np.zeros_like(y))
        u.append(solve(r))
    return arg + u[-1], u[-1]


def error_norm(err: np.ndarray, y: np.ndarray, y_new: np.ndarray, rtol: float,
               atol: np.ndarray) -> float:
    """The RMS of err / (atol + rtol·max(|y|, |y_new|)) (scipy's norm)."""
    scale = atol + rtol * np.maximum(np.abs(y), np.abs(y_new))
    return float(np.sqrt(np.mean((err / scale) ** 2)))


def next_step(h: float, err: float) -> float:
    """The next step after a step of size h with error norm err."""
    if err == 0.0:
        return h * GROW
    return h * min(GROW, max(SHRINK, SAFETY * err ** (-1.0 / tableau.ERROR_ORDER)))
