"""The linear systems of a Rosenbrock step, W u = r with W = s I − J (s = 1/(γh)), J the
Jacobian of the moment equations at (m, Σ).

With M = A + P(Σ), P(X) = Σ_h V_h X B_h and V̄ = Σ_h V_h, the equations ṁ = (M + V̄) m + b,
Σ̇ = MΣ + ΣMᵀ have the block-triangular Jacobian

    J_ΣΣ[X] = MX + XMᵀ + P(X)Σ + ΣP(X)ᵀ,   J_mΣ[X] = P(X) m,   J_mm = M + V̄

(Σ̇ does not depend on m): the covariance block is solved first, then the mean's d×d system
with the right-hand side r_m + P(u_Σ) m. The covariance block is a Lyapunov operator
L_M(X) = MX + XMᵀ plus the attention term P(X)Σ + ΣP(X)ᵀ, of operator rank ≤ 2 Σ_h r_h s_h.

Solves. Up to DENSE_MAX_D the matrix of J_ΣΣ on Sym(d) is assembled in the coordinates vech
(n_s = d(d+1)/2 unknowns, J[(i,j),(k,l)] = M_ik δ_jl + δ_ik M_jl + T_iklj + T_jkli,
T_iklj = Σ_h (V_h)_ik (B_h Σ)_lj) and s I − J_s is LU-factored once per step, so all six
stages cost two triangular solves. Above it, GMRES
(scipy.sparse.linalg) on X ↦ sX − J_ΣΣ[X], each product O(d² Σ_h r_h) through the factors,
preconditioned by the Lyapunov part: (s/2·I − M)X + X(s/2·I − M)ᵀ = R by Bartels–Stewart, the
real Schur form of s/2·I − M computed once per step and each application one LAPACK trsyl and
four products, O(d³), never a d²×d² matrix.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
from scipy.sparse.linalg import LinearOperator, gmres

from ...state.params import Params

__all__: list[str] = []

#: the largest d at which the covariance block is assembled and LU-factored (d² = 2304
#: unknowns, about 0.9 s CPU a step at d = 48). GMRES is cheaper at d = 48 on a well-conditioned
#: Σ (0.15 s for a step's six solves) but the Lyapunov-part preconditioner degrades as Σ turns
#: anisotropic (the attention term carries the stiffness), so the LU is kept up to here
DENSE_MAX_D = 48
#: GMRES: Krylov vectors kept between restarts, and the most iterations of one solve
KRYLOV_RESTART = 60
KRYLOV_MAXITER = 600


class LinearFailure(Exception):
    """A Krylov solve did not reach its tolerance: the stepper retries with a smaller step."""


class Linearisation:
    """J at (m, Σ) of a time-invariant layer (module docstring): M, the attention map P and,
    with a mean, J_mm = M + V̄."""

    def __init__(self, p: Params, mean: np.ndarray | None, cov: np.ndarray) -> None:
        self.p, self.mean, self.cov = p, mean, cov
        self.M = p.M(cov)
        self.d = cov.shape[0]

    def attention(self, X: np.ndarray) -> np.ndarray:
        """P(X) = Σ_h V_h X B_h (the factored products of `Params.M`)."""
        return self.p.M(X) - self.p.A

    def covariance_product(self, X: np.ndarray) -> np.ndarray:
        """J_ΣΣ[X] = MX + XMᵀ + P(X)Σ + ΣP(X)ᵀ for symmetric X, as Y + Yᵀ with
        Y = MX + P(X)Σ (the operator on the symmetric matrices, where every state, stage and
        Krylov vector lies)."""
        Y = self.M @ X + self.attention(X) @ self.cov
        return Y + Y.T

    def symmetric_covariance(self) -> np.ndarray:
        """J_ΣΣ on the symmetric matrices in the coordinates vech X = (X_ij)_{i ≤ j}
        (row-major upper triangle, n_s = d(d+1)/2): J_s = L J D, D the duplication (vech ↦ vec)
        and L the selection (vec ↦ vech), exact because J_ΣΣ maps Sym(d) into itself:
        J_s[(ij), (kl)] = J[(ij), (kl)] + J[(ij), (lk)] for k < l, J[(ij), (kk)], with
        J[(ij), (kl)] = M_ik δ_jl + δ_ik M_jl + Σ_h ((V_h)_ik (B_hΣ)_lj + (V_h)_jk (B_hΣ)_li).

        Notes
        -----
        For each row (i, j) the head sum is one product of a d × 2H by a 2H × d matrix (the
        rows i and j of the V_h against the columns j and i of the B_hΣ), batched over the n_s
        rows: O(n_s d² H) work, never the d²×d² matrix.
        """
        d = self.d
        i, j = np.triu_indices(d)
        Vs = np.array([V for V, _ in self.p.heads])
        Cs = np.array([B @ self.cov for _, B in self.p.heads])
        left = np.concatenate([Vs[:, i, :], Vs[:, j, :]]).transpose(1, 2, 0)  # (n_s, d, 2H)
        right = np.concatenate([Cs[:, :, j], Cs[:, :, i]]).transpose(2, 0, 1)  # (n_s, 2H, d)
        J = left @ right  # J[(ij), k, l]
        rows = np.arange(i.size)
        J[rows, :, j] += self.M[i, :]
        J[rows, i, :] += self.M[j, :]
        Js = J[:, i, j]
        off = i != j
        Js[:, off] += J[:, j[off], i[off]]
        return Js


class StepSolver:
    """W⁻¹ for one step: s I − J at one linearisation, applied to (r_m, r_Σ) stacked as one
    vector (r_m first when the mean is integrated). solves counts the covariance solves,
    products the Krylov products."""

    def __init__(self, lin: Linearisation, s: float, tol: float) -> None:
        self.lin, self.s, self.tol, self.d = lin, s, tol, lin.d
        self.solves = self.products = 0
        d = self.d
        if d <= DENSE_MAX_D:
            self.upper = np.triu_indices(d)
            W = -lin.symmetric_covariance()
            W[np.diag_indices_from(W)] += s
            self.lu = sla.lu_factor(W, check_finite=False)
        else:
            self.lu = None
            self.schur = sla.schur(s / 2 * np.eye(d) - lin.M)
        if lin.mean is not None:
            Wm = s * np.eye(d) - (lin.M + lin.p.value_sum)
            self.lu_mean = sla.lu_factor(Wm, check_finite=False)

    def solve(self, r: np.ndarray) -> np.ndarray:
        """u with (s I − J) u = r."""
        d = self.d
        with_mean = self.lin.mean is not None
        R = r[d:].reshape(d, d) if with_mean else r.reshape(d, d)
        U = self._covariance(R)
        U = (U + U.T) / 2
        self.solves += 1
        if not with_mean:
            return U.ravel()
        rm = r[:d] + self.lin.attention(U) @ self.lin.mean
        um = sla.lu_solve(self.lu_mean, rm, check_finite=False)
        return np.concatenate([um, U.ravel()])

    def _covariance(self, R: np.ndarray) -> np.ndarray:
        d = self.d
        if self.lu is not None:
            U = np.empty((d, d))
            U[self.upper] = sla.lu_solve(self.lu, R[self.upper], check_finite=False)
            U.T[self.upper] = U[self.upper]
            return U
        T, Z = self.schur

        def precondition(x: np.ndarray) -> np.ndarray:
            Y, scale, _ = sla.lapack.dtrsyl(T, T, Z.T @ x.reshape(d, d) @ Z, trana="N",
                                            tranb="T", isgn=1)
            return (Z @ Y @ Z.T).ravel() / scale

        def product(x: np.ndarray) -> np.ndarray:
            self.products += 1
            X = x.reshape(d, d)
            return (self.s * X - self.lin.covariance_product(X)).ravel()

        n = d * d
        x, info = gmres(LinearOperator((n, n), matvec=product, dtype=float), R.ravel(),
                        M=LinearOperator((n, n), matvec=precondition, dtype=float),
                        rtol=self.tol, atol=0.0, restart=KRYLOV_RESTART, maxiter=KRYLOV_MAXITER)
        if info != 0 or not np.all(np.isfinite(x)):
            raise LinearFailure
        return x.reshape(d, d)

