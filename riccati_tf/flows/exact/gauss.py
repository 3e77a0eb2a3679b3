"""The s-stage Gauss–Legendre collocation method: its nodes, weights and matrix, and the
eigendecomposition of the matrix that decouples the stage systems (Hairer–Wanner IV.8)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

__all__: list[str] = []


@lru_cache(maxsize=8)
def gauss_tableau(s: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nodes c, weights w and matrix a of the s-stage Gauss–Legendre collocation method.

    a_ij = ∫_0^{c_i} ℓ_j(τ) dτ with the Lagrange basis ℓ_j in product form, integrated by the
    s-point Gauss rule on [0, c_i] (exact for degree s − 1): the order conditions
    Σ_j a_ij c_j^{k−1} = c_i^k / k hold to rounding (inverting the Vandermonde matrix of the
    nodes instead leaves residuals ~3e-13 at s = 8, which cost the mean ~1e-11)."""
    x, w = np.polynomial.legendre.leggauss(s)
    c = (x + 1) / 2
    xq, wq = c, w / 2  # the same rule on [0, 1]
    a = np.empty((s, s))
    for j in range(s):
        others = np.delete(c, j)
        denom = np.prod(c[j] - others)
        for i in range(s):
            tau = c[i] * xq
            a[i, j] = c[i] * (wq @ np.prod(tau[:, None] - others[None, :], axis=1)) / denom
    return c, w / 2, a


@lru_cache(maxsize=8)
def gauss_eigen(s: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(λ_k, 2T_{·k}, (T⁻¹)_{k·}) for k < s/2, from a = T diag(λ) T⁻¹ for the Gauss matrix
    (s even): its spectrum is conjugate-paired (λ_{s−1−k} = conj(λ_k), with conjugate
    eigenvectors), so for real R, T diag(x) T⁻¹R = 2 Re Σ_{k<s/2} T_{·k} x_k (T⁻¹R)_k."""
    lam, T = np.linalg.eig(gauss_tableau(s)[2])
    order = np.argsort(-lam.imag)
    lam, T = lam[order], T[:, order]
    half = s // 2
    if s % 2 or not (np.allclose(lam[::-1], lam.conj(), rtol=1e-12, atol=0)
                     and np.allclose(T[:, ::-1], T.conj(), rtol=1e-12, atol=1e-14)):
        raise ValueError(f"the {s}-stage Gauss matrix has no conjugate-paired spectrum")
    Tinv = np.linalg.inv(T)  # its rows pair up to rounding × cond(T): averaged
    return lam[:half], 2 * T[:, :half], 0.5 * (Tinv[:half] + Tinv[::-1][:half].conj())
