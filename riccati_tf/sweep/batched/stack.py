"""Stacked numerics on n matrices at once: the matrix exponential (Padé-13), the Van Loan block
for W(s) = ∫_0^s e^{Aᵀu} G e^{Au} du, and Lyapunov solves by eigendecomposition."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from numpy.linalg import LinAlgError
from scipy.linalg import solve_continuous_lyapunov

from .constants import _TINY, LYAP_COND_MAX, LYAP_SEP_RTOL

__all__: list[str] = []  # van_loan_stack: riccati_tf.sweep.batched


# Padé-13 coefficients and θ₁₃ (Higham, "The scaling and squaring method for the matrix
# exponential revisited", SIAM J. Matrix Anal. Appl. 26 (2005), Table 2.3)
_PADE13 = np.array([64764752532480000.0, 32382376266240000.0, 7771770303897600.0,
                    1187353796428800.0, 129060195264000.0, 10559470521600.0, 670442572800.0,
                    33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0])
_THETA13 = 5.371920351148152
@dataclass(frozen=True, eq=False)
class _Discs:
    """A's eigendecomposition per case, AX ≈ XΛ (LAPACK), with κ₂(X) and the Bauer–Fike radius
    r ≥ κ₂(X)‖A − XΛX⁻¹‖₂ (`_eigen_discs`): computed once, shared by the half-plane counts, the
    Lyapunov solves and the blow-up roots. NaN rows for non-finite cases."""

    lam: np.ndarray
    vec: np.ndarray
    cond: np.ndarray
    radius: np.ndarray

    def __getitem__(self, idx: Any) -> _Discs:
        return _Discs(self.lam[idx], self.vec[idx], self.cond[idx], self.radius[idx])


def expm_stack(X: np.ndarray) -> np.ndarray:
    """e^X for a stack (n, m, m): Padé-13 scaling and squaring, s_i = ⌈log₂(‖X_i‖₁/θ₁₃)⌉₊."""
    n, m = X.shape[0], X.shape[-1]
    norm1 = np.abs(X).sum(axis=1).max(axis=1)
    s = np.maximum(0, np.ceil(np.log2(np.maximum(norm1, _TINY) / _THETA13))).astype(int)
    Xs = X / (2.0 ** s)[:, None, None]
    b = _PADE13
    eye = np.eye(m)
    X2 = Xs @ Xs
    X4 = X2 @ X2
    X6 = X4 @ X2
    U = Xs @ (X6 @ (b[13] * X6 + b[11] * X4 + b[9] * X2)
              + b[7] * X6 + b[5] * X4 + b[3] * X2 + b[1] * eye)
    V = X6 @ (b[12] * X6 + b[10] * X4 + b[8] * X2) + b[6] * X6 + b[4] * X4 + b[2] * X2 \
        + b[0] * eye
    R = np.linalg.solve(V - U, V + U)
    for j in range(int(s.max(initial=0))):
        sel = s > j
        R[sel] = R[sel] @ R[sel]
    return R.reshape(n, m, m)


def van_loan_stack(A: npt.NDArray[np.float64], G: npt.NDArray[np.float64], s: npt.ArrayLike
                   ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """(E, W) = (e^{A s}, ∫_0^s e^{Aᵀu} G e^{Au} du) per case: expm([[−Aᵀ, G], [0, A]] s).

    W(s) is the Gramian of the scalar-V closed form Σ(t) = e^{At}Σ0(I + W(t)Σ0)⁻¹e^{Aᵀt}
    (module docstring). With F = expm([[−Aᵀ, G], [0, A]] s), the lower-right block of F is
    E = e^{As} and W = Eᵀ F₁₂ (Van Loan's block exponential), symmetrised. The exponential is
    stacked Padé-13 scaling and squaring (Higham's θ₁₃), one scaling per case.

    Parameters
    ----------
    A : (n, d, d) ndarray of float
        The drift matrices, one per case.
    G : (n, d, d) ndarray of float, symmetric
        G = −Σ_h v_h(B_h + B_hᵀ) per case.
    s : (n,) array_like of float
        The integration length per case (a scalar is broadcast).

    Returns
    -------
    E : (n, d, d) ndarray of float
        e^{A s} per case.
    W : (n, d, d) ndarray of float, symmetric
        ∫_0^s e^{Aᵀu} G e^{Au} du per case.

    Raises
    ------
    numpy.linalg.LinAlgError
        When the Padé denominator V − U of some case is singular to working precision
        (non-finite input).

    See Also
    --------
    blowup_times : marches W(t) by the semigroup rule W(t + h) = W(t) + E_tᵀW(h)E_t.
    classify_scalar : the batched classifier that uses it for T*.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".
    .. [2] C. F. Van Loan, "Computing integrals involving the matrix exponential", IEEE TAC
       23(3), 1978.
    .. [3] N. J. Higham, "The scaling and squaring method for the matrix exponential
       revisited", SIAM J. Matrix Anal. Appl. 26(4), 2005.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.linalg import expm, solve_continuous_lyapunov
    >>> from riccati_tf.sweep.batched import van_loan_stack
    >>> A = np.array([[[-1.0, 0.5], [0.0, -2.0]]])
    >>> G = np.array([[[2.0, 0.4], [0.4, 1.2]]])
    >>> E, W = van_loan_stack(A, G, np.array([30.0]))
    >>> bool(np.allclose(E[0], expm(30 * A[0])))
    True

    For Hurwitz A, W(s) → W∞ with AᵀW∞ + W∞A = −G:

    >>> bool(np.allclose(W[0], solve_continuous_lyapunov(A[0].T, -G[0])))
    True
    """
    n, d = A.shape[0], A.shape[-1]
    block = np.zeros((n, 2 * d, 2 * d))
    block[:, :d, :d] = -np.swapaxes(A, 1, 2)
    block[:, :d, d:] = G
    block[:, d:, d:] = A
    F = expm_stack(block * np.asarray(s, dtype=float).reshape(-1, 1, 1))
    E = F[:, d:, d:]
    W = np.swapaxes(E, 1, 2) @ F[:, :d, d:]
    return E, 0.5 * (W + np.swapaxes(W, 1, 2))


def lyapunov_stack(T: np.ndarray, C: np.ndarray, eigen: _Discs | None = None) -> np.ndarray:
    """P with TᵀP + PT = C per case, T (n, k, k) and C (n, k, k) or (n, r, k, k) (r right-hand
    sides per case); P symmetrised (C symmetric).

    With T = UΛU⁻¹ (stacked LAPACK eigendecomposition), P = U⁻ᵀYU⁻¹ where
    Y_ij = (UᵀCU)_ij / (λ_i + λ_j), followed by one step of iterative refinement on the residual
    (the same formula applied to TᵀP + PT − C): O(k³) work and O(k²) memory per case. A case
    whose eigenbasis is ill-conditioned (κ₂(U) > LYAP_COND_MAX) is solved by
    `scipy.linalg.solve_continuous_lyapunov` (Bartels–Stewart) alone. NaN where some
    |λ_i + λ_j| ≤ LYAP_SEP_RTOL·max|λ| (the operator is singular to working precision), T is not
    finite, or scipy fails. eigen: T's eigendecomposition when already computed (`_Discs`)."""
    n, k = T.shape[0], T.shape[-1]
    P = np.full(C.shape, np.nan)
    if k == 0 or n == 0:
        return np.zeros(C.shape)
    finite = np.isfinite(T).all(axis=(1, 2))
    if eigen is None:
        lam, U = np.full((n, k), np.nan, dtype=complex), np.full((n, k, k), np.nan, dtype=complex)
        lam[finite], U[finite] = np.linalg.eig(T[finite])
        sv = np.linalg.svd(np.where(finite[:, None, None], U, 0), compute_uv=False)
        with np.errstate(divide="ignore", invalid="ignore"):  # singular U: κ = inf or NaN
            cond = sv[:, 0] / sv[:, -1]
    else:
        lam, U, cond = eigen.lam, eigen.vec, eigen.cond
    denom = lam[:, :, None] + lam[:, None, :]
    scale = np.abs(lam).max(axis=1, initial=0.0)
    regular = finite & (np.abs(denom).min(axis=(1, 2)) > LYAP_SEP_RTOL * scale)
    good = regular & (cond <= LYAP_COND_MAX)
    idx = np.flatnonzero(good)
    if idx.size:
        Ui = np.linalg.inv(U[idx])
        U_, Ui_, D_ = (_per_rhs(X, C) for X in (U[idx], Ui, denom[idx]))
        Ut, Uit = np.swapaxes(U_, -1, -2), np.swapaxes(Ui_, -1, -2)
        Tg = _per_rhs(T[idx], C)

        def solve(R: np.ndarray) -> np.ndarray:
            return (Uit @ ((Ut @ R @ U_) / D_) @ Ui_).real

        X = solve(C[idx])
        X = X - solve(np.swapaxes(Tg, -1, -2) @ X + X @ Tg - C[idx])
        P[idx] = X
    for i in np.flatnonzero(regular & ~good):
        for j in np.ndindex(C.shape[1:-2]):
            try:
                P[(i, *j)] = solve_continuous_lyapunov(T[i].T, C[(i, *j)])
            except (LinAlgError, ValueError):
                pass
    return 0.5 * (P + np.swapaxes(P, -1, -2))


def _per_rhs(X: np.ndarray, C: np.ndarray) -> np.ndarray:
    """X (n, ...) with an axis inserted per right-hand-side axis of C (n, r, k, k)."""
    return X.reshape(X.shape[:1] + (1,) * (C.ndim - 3) + X.shape[1:])


def _lam_min(S: np.ndarray) -> np.ndarray:
    return np.linalg.eigvalsh(S)[:, 0]

