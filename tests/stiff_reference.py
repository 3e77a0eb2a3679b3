"""An independent stiff reference for the moment flow: scipy's Radau on the vectorised system
y = (m, vec Σ) with its exact dense Jacobian, written out from the dense head pairs alone.

With P(X) = Σ_h V_h X B_h and M = A + P(Σ), the system ṁ = (M + Σ_h V_h) m + b,
Σ̇ = MΣ + ΣMᵀ has the derivative

    ∂ṁ/∂m = M + Σ_h V_h,          ∂ṁ/∂Σ [X] = P(X) m,
    ∂Σ̇/∂Σ [X] = MX + XMᵀ + P(X)Σ + ΣP(X)ᵀ,

assembled with row-major vec(A X B) = (A ⊗ Bᵀ) vec X and the commutation matrix for Xᵀ
(d² + d unknowns: for d ≤ 48 only).
"""

from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp

from riccati_tf import Gaussian, Params


def _commutation(d: int) -> np.ndarray:
    """T with T vec(X) = vec(Xᵀ) (row-major vec)."""
    T = np.zeros((d * d, d * d))
    idx = np.arange(d * d).reshape(d, d)
    T[idx.ravel(), idx.T.ravel()] = 1.0
    return T


def radau_moments(p: Params, g: Gaussian, times, *, rtol: float = 1e-10,
                  atol: float = 1e-12) -> tuple[np.ndarray, np.ndarray, int]:
    """(mean (k, d), cov (k, d, d), right-hand sides) at the sorted times from scipy's Radau, exact
    Jacobian (module docstring)."""
    d = g.d
    pairs = [(np.asarray(V), np.asarray(B)) for V, B in p.heads]
    Vsum = sum(V for V, _ in pairs)
    A, b, eye, T = np.asarray(p.A), np.asarray(p.b), np.eye(d), _commutation(d)

    def unpack(y):
        m, S = y[:d], y[d:].reshape(d, d)
        return m, (S + S.T) / 2

    def rhs(t, y):
        m, S = unpack(y)
        M = A + sum(V @ S @ B for V, B in pairs)
        return np.concatenate([(M + Vsum) @ m + b, (M @ S + S @ M.T).ravel()])

    def jac(t, y):
        m, S = unpack(y)
        M = A + sum(V @ S @ B for V, B in pairs)
        J = np.zeros((d + d * d, d + d * d))
        J[:d, :d] = M + Vsum
        J[:d, d:] = sum(np.kron(V, (B @ m)[None, :]) for V, B in pairs)
        JP = sum(np.kron(V, B.T) for V, B in pairs)                 # vec P(X)
        L = np.kron(M, eye) + np.kron(eye, M)                        # MX + XMᵀ
        right = np.kron(eye, S)                                      # X ↦ XΣ
        left = np.kron(S, eye)                                       # X ↦ ΣX
        J[d:, d:] = L + right @ JP + left @ T @ JP
        return J

    y0 = np.concatenate([g.mean, g.cov.ravel()])
    times = np.asarray(times, dtype=float)
    sol = solve_ivp(rhs, (0.0, times[-1]), y0, method="Radau", jac=jac, t_eval=times,
                    rtol=rtol, atol=atol)
    assert sol.success, sol.message
    k = times.size
    return sol.y[:d].T, sol.y[d:].T.reshape(k, d, d), int(sol.nfev)
