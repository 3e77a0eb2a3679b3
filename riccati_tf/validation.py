"""One validation path for every entry point: shapes, finiteness, symmetry, definiteness, times.

Each helper returns a clean float64 array (or number) or raises :class:`InvalidInputError` with a
sentence naming the argument and what is wrong with it.
"""

from __future__ import annotations

import numbers

import numpy as np

from .errors import InvalidInputError

#: relative tolerance for symmetry: ‖C − Cᵀ‖_F ≤ SYM_RTOL · max(‖C‖_F, tiny)
SYM_RTOL = 1e-8
#: relative tolerance for semidefiniteness: λ_min(C) ≥ −PSD_RTOL · max(λ_max(C), tiny)
PSD_RTOL = 1e-8


def _as_float_array(name: str, value) -> np.ndarray:
    if isinstance(value, str | bytes):
        raise InvalidInputError(f"{name} must be numeric, got a string")
    try:
        arr = np.array(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} must be a numeric array: {exc}") from None
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0]
        where = f" at index {tuple(int(i) for i in bad)}" if arr.ndim else ""
        raise InvalidInputError(f"{name} contains NaN or Inf{where}")
    return arr


def as_array(name: str, value, *, ndim: int | None = None) -> np.ndarray:
    """A finite float array (of ndim dimensions when given), e.g. a rectangular weight matrix."""
    arr = _as_float_array(name, value)
    if ndim is not None and arr.ndim != ndim:
        raise InvalidInputError(f"{name} must be a {ndim}-dimensional array, got shape {arr.shape}")
    return arr


def as_matrix(name: str, value, d: int | None = None) -> np.ndarray:
    """A finite square float matrix; a Python/NumPy scalar is read as a 1×1 matrix."""
    arr = _as_float_array(name, value)
    if arr.ndim == 0:
        arr = arr.reshape(1, 1)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise InvalidInputError(f"{name} must be a square matrix, got shape {arr.shape}")
    if d is not None and arr.shape[0] != d:
        raise InvalidInputError(f"{name} must be {d}×{d} to match the dimension d = {d}, "
                                f"got {arr.shape[0]}×{arr.shape[1]}")
    return arr


def as_vector(name: str, value, d: int) -> np.ndarray:
    """A finite float vector of length d; a scalar is accepted when d = 1."""
    arr = _as_float_array(name, value)
    if arr.ndim == 0 and d == 1:
        arr = arr.reshape(1)
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.reshape(-1)
    if arr.shape != (d,):
        raise InvalidInputError(f"{name} must be a vector of length d = {d}, got shape {arr.shape}")
    return arr


def as_covariance(name: str, value, d: int | None = None) -> np.ndarray:
    """A symmetric positive semidefinite matrix (singular allowed), symmetrised on return.

    Symmetry: ‖C − Cᵀ‖_F ≤ SYM_RTOL ‖C‖_F.  Semidefiniteness: λ_min ≥ −PSD_RTOL · λ_max.
    """
    cov = as_matrix(name, value, d)
    scale = max(np.linalg.norm(cov), np.finfo(float).tiny)
    asym = np.linalg.norm(cov - cov.T)
    if asym > SYM_RTOL * scale:
        raise InvalidInputError(f"{name} is not symmetric: ‖C − Cᵀ‖/‖C‖ = {asym / scale:.3g} "
                                f"exceeds the tolerance {SYM_RTOL:g}")
    cov = 0.5 * (cov + cov.T)
    eig = np.linalg.eigvalsh(cov)
    if eig[0] < -PSD_RTOL * max(eig[-1], np.finfo(float).tiny):
        raise InvalidInputError(f"{name} is not positive semidefinite: smallest eigenvalue "
                                f"{eig[0]:.6g} (largest {eig[-1]:.6g}); a covariance needs λ ≥ 0")
    return cov


def as_time(name: str, value, *, allow_zero: bool = False) -> float:
    """A finite positive (or non-negative) real number."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidInputError(f"{name} must be a real number, got {type(value).__name__}")
    t = float(value)
    if not np.isfinite(t):
        raise InvalidInputError(f"{name} must be finite, got {t}")
    if t < 0 or (t == 0 and not allow_zero):
        raise InvalidInputError(f"{name} must be {'non-negative' if allow_zero else 'positive'}, "
                                f"got {t}")
    return t


def as_count(name: str, value, *, minimum: int = 1) -> int:
    """An integer ≥ minimum (bools and floats such as 2.5 are refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidInputError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise InvalidInputError(f"{name} must be ≥ {minimum}, got {value}")
    return int(value)


def as_time_grid(name: str, value, t_final: float) -> np.ndarray:
    """Strictly increasing finite times in [0, t_final]."""
    t = _as_float_array(name, value)
    if t.ndim != 1 or t.size == 0:
        raise InvalidInputError(f"{name} must be a non-empty 1-D array of times")
    if np.any(np.diff(t) <= 0):
        raise InvalidInputError(f"{name} must be strictly increasing")
    if t[0] < 0 or t[-1] > t_final * (1 + 1e-12):
        raise InvalidInputError(f"{name} must lie in [0, t_final] = [0, {t_final}], "
                                f"got [{t[0]}, {t[-1]}]")
    return np.minimum(t, t_final)


def psd_rank(cov: np.ndarray, tol: float | None = None) -> int:
    """Numerical rank of a PSD matrix: eigenvalues above tol (default d·eps·λ_max)."""
    eig = np.linalg.eigvalsh(cov)
    if tol is None:
        tol = cov.shape[0] * np.finfo(float).eps * max(eig[-1], 0.0)
    return int(np.sum(eig > tol))


def psd_factor(cov: np.ndarray, tol: float | None = None) -> np.ndarray:
    """A d×r factor L with L Lᵀ = cov, r = psd_rank(cov, tol) (eigen-decomposition)."""
    eig, vec = np.linalg.eigh(cov)
    if tol is None:
        tol = cov.shape[0] * np.finfo(float).eps * max(eig[-1], 0.0)
    keep = eig > tol
    return vec[:, keep] * np.sqrt(eig[keep])
