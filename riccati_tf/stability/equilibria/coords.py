"""Orthonormal coordinates of Sym(d): h = (H_ii, √2 H_ij for i < j), so |h| = ‖H‖_F and a
linear map on symmetric matrices becomes an n_s × n_s matrix (n_s = d(d+1)/2).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

__all__: list[str] = []


@lru_cache(maxsize=32)
def sym_basis(d: int) -> np.ndarray:
    """N (d² × n_s): column k is vec(E_k) (row-major) of the orthonormal basis of Sym(d),
    E_ii = e_i e_iᵀ, E_ij = (e_i e_jᵀ + e_j e_iᵀ)/√2 for i < j, in the order of np.triu_indices."""
    iu, ju = np.triu_indices(d)
    N = np.zeros((d * d, iu.size))
    k = np.arange(iu.size)
    w = np.where(iu == ju, 1.0, np.sqrt(0.5))
    N[iu * d + ju, k] = w
    N[ju * d + iu, k] = w
    N.setflags(write=False)
    return N


@lru_cache(maxsize=32)
def _triu_flat(d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(flat indices i·d + j and j·d + i of i ≤ j in np.triu_indices order, the weights 1 on the
    diagonal and √2 off it)."""
    iu, ju = np.triu_indices(d)
    w = np.where(iu == ju, 1.0, np.sqrt(2.0))
    return iu * d + ju, ju * d + iu, w


def to_coords(H: np.ndarray) -> np.ndarray:
    """Orthonormal coordinates h of a symmetric H (|h| = ‖H‖_F); works on stacks (..., d, d)."""
    d = H.shape[-1]
    flat, _, w = _triu_flat(d)
    return np.reshape(H, (*H.shape[:-2], d * d))[..., flat] * w


def sym_coords(Z: np.ndarray) -> np.ndarray:
    """to_coords(Z + Zᵀ) of a square Z, without forming Z + Zᵀ."""
    d = Z.shape[-1]
    flat, flat_t, w = _triu_flat(d)
    z = np.ravel(Z)
    return (z[flat] + z[flat_t]) * w


def from_coords(h: np.ndarray, d: int) -> np.ndarray:
    """The symmetric matrix with orthonormal coordinates h."""
    flat, flat_t, w = _triu_flat(d)
    H = np.empty(d * d)
    x = h / w
    H[flat_t] = x
    H[flat] = x
    return H.reshape(d, d)
