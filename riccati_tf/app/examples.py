"""Built-in layer parameters for the regimes of SPEC §5 (scalar value matrices, d = 2).

With V = vI and G = −v(B + Bᵀ):
- "converges": G ≻ 0 and A anti-stable — Σ(t) → Σ* = P*⁻¹, AᵀP* + P*A = G;
- "collapses": G ≻ 0 and A Hurwitz — Σ(t) → 0 (clustering);
- "blows_up": G ≺ 0 (v and B of the same definiteness) — finite-time blow-up.
"""

from __future__ import annotations

import numpy as np

from ..state.params import Gaussian, Params

_ROT = np.array([[0.0, -1.0], [1.0, 0.0]])


def regime_examples() -> dict[str, tuple[Params, Gaussian, float]]:
    """{name: (params, initial Gaussian, horizon)} for the three scalar-V regimes."""
    g0 = Gaussian(np.array([1.0, -0.5]), np.array([[1.0, 0.3], [0.3, 0.5]]))
    sym = np.array([[1.0, 0.2], [0.2, 0.6]])
    return {
        "converges": (Params(A=0.5 * np.eye(2) + 0.3 * _ROT, B=sym, V=-1.0 * np.eye(2),
                             b=np.array([0.2, 0.0])), g0, 8.0),
        "collapses": (Params(A=-0.4 * np.eye(2) + 0.5 * _ROT, B=sym, V=-1.0 * np.eye(2),
                             b=np.array([0.1, 0.1])), g0, 8.0),
        "blows_up": (Params(A=0.2 * np.eye(2) + 0.3 * _ROT, B=sym, V=0.3 * np.eye(2)), g0, 8.0),
    }
