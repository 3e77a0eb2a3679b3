"""SLSQP on semidefinite constraints, for the numerical routes of `riccati_tf.design.repair`.

`lmi_projection` finds the least ‖x − x0‖ with affine matrices X_j(x) ⪰ 0 through their lowest
eigenvalues; `slack_run` writes each constraint X ⪰ 0 as X = MMᵀ with a free slack M (smooth
equalities); `is_feasible` is the acceptance test of an answer.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.linalg import eigh
from scipy.optimize import minimize

__all__ = ["FEASIBILITY_RTOL"]

#: the numerical route's answer counts as feasible when each semidefinite constraint X ⪰ 0
#: holds to λ_min(X) ≥ −FEASIBILITY_RTOL max(1, ‖X‖₂) (certify then judges the layer)
FEASIBILITY_RTOL = 1e-9


def lmi_projection(x0: np.ndarray, lmis: list[tuple[np.ndarray, list[np.ndarray]]]
                    ) -> np.ndarray | None:
    """The least ‖x − x0‖ with X_j(x) = C_j + Σ_k x_k D_jk ⪰ 0 for every j, by SLSQP with the
    constraints λ_min(X_j(x)) ≥ 0 (gradient uᵀD_jku, u the lowest eigenvector), run from x0
    and again from its answer; None when the answer violates a constraint by more than
    FEASIBILITY_RTOL relative or SLSQP leaves the finite numbers."""
    def X(x: np.ndarray, j: int) -> np.ndarray:
        C, D = lmis[j]
        return C + sum((xk * Dk for xk, Dk in zip(x, D, strict=True)), np.zeros_like(C))

    def lowest(x: np.ndarray, j: int) -> tuple[float, np.ndarray]:
        lam, vec = eigh(X(x, j))
        u = vec[:, 0]
        return float(lam[0]), np.array([u @ Dk @ u for Dk in lmis[j][1]])

    cons = [{"type": "ineq", "fun": lambda x, j=j: lowest(x, j)[0],
             "jac": lambda x, j=j: lowest(x, j)[1]} for j in range(len(lmis))]
    x = x0
    try:
        for _ in range(2):
            x = np.asarray(minimize(lambda y: float(np.sum((y - x0) ** 2)), x,
                                    jac=lambda y: 2 * (y - x0), constraints=cons,
                                    method="SLSQP", options={"maxiter": 500, "ftol": 1e-15}).x)
    except (ValueError, np.linalg.LinAlgError):  # eigh of a non-finite iterate
        return None
    return x if all(is_feasible(X(x, j)) for j in range(len(lmis))) else None


def is_feasible(X: np.ndarray) -> bool:
    """λ_min(X) ≥ −FEASIBILITY_RTOL max(1, ‖X‖₂)."""
    lam = np.linalg.eigvalsh(X)
    return bool(lam[0] >= -FEASIBILITY_RTOL * max(1.0, float(np.abs(lam).max())))


def slack_run(x: np.ndarray, slacks: Callable[[np.ndarray], list[np.ndarray]],
               w: np.ndarray) -> np.ndarray:
    """SLSQP from x on min Σ w x² subject to slacks(x)_j = M_jM_jᵀ (M_j free, started at the
    square root of the clipped slack): the semidefinite constraints as smooth equalities."""
    n = x.size

    def gaps(z: np.ndarray) -> np.ndarray:
        out, at = [], n
        for X in slacks(z[:n]):
            k = X.shape[0]
            M = z[at:at + k * k].reshape(k, k)
            out.append((X - M @ M.T)[np.triu_indices(k)])
            at += k * k
        return np.concatenate(out)

    z0 = np.concatenate([x] + [(U * np.sqrt(np.clip(e, 0.0, None))).ravel() for e, U in
                               (eigh(X) for X in slacks(x))])
    res = minimize(lambda z: float(np.sum(w * z[:n] ** 2)), z0,
                   jac=lambda z: np.concatenate([2 * w * z[:n], np.zeros(z.size - n)]),
                   constraints=[{"type": "eq", "fun": gaps}], method="SLSQP",
                   options={"maxiter": 500, "ftol": 1e-14})
    return np.asarray(res.x[:n])
