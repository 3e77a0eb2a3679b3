"""Input checks, power-of-two scaling and the numerical boundary of the Riccati layer: relative
tolerances and flags, symmetric and gain matrices, ‖M‖_F without under- or overflow, and the
conversion of any numerical failure into a SolverError."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import ParamSpec, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ...errors import InvalidInputError, SolverError
from ...state.validation import (
    PSD_RTOL,
    SAFE_EXPONENT,
    SYM_RTOL,
    as_matrix,
    as_real,
)

__all__: list[str] = []


_P = ParamSpec("_P")
_R = TypeVar("_R")



def as_rtol(name: str, value: object) -> float:
    """A relative tolerance: a real number in (0, 1) (0 would switch a safety test off, 1 or more
    would refuse everything)."""
    x = as_real(name, value)
    if not 0.0 < x < 1.0:
        raise InvalidInputError(f"{name} must be a relative tolerance in (0, 1), got {x:g}")
    return x



def as_flag(name: str, value: object) -> bool:
    """True or False, nothing else (a string such as "no" is not read as a truth value)."""
    if not isinstance(value, bool | np.bool_):
        raise InvalidInputError(f"{name} must be True or False, got {type(value).__name__} "
                                f"{value!r:.40}")
    return bool(value)



def exponent(M: NDArray[np.float64]) -> int:
    """e with max|M| · 2^−e in [1/2, 1) (0 for M = 0): M · 2^−e is free of under- and overflow."""
    s = float(np.max(np.abs(M))) if M.size else 0.0
    return 0 if s == 0.0 else int(np.frexp(s)[1])



def fro_norm(M: NDArray[np.float64]) -> float:
    """‖M‖_F without intermediate under- or overflow (computed on M scaled by a power of two);
    inf when the norm itself exceeds the float range."""
    e = exponent(M)
    if abs(e) <= SAFE_EXPONENT:  # squares of the entries neither overflow nor underflow
        return float(np.linalg.norm(M))
    with np.errstate(over="ignore"):
        return float(np.ldexp(np.linalg.norm(np.ldexp(M, -e)), e))



@contextlib.contextmanager
def numerical_failures(what: str) -> Iterator[None]:
    """Let the package's own errors through and turn any other exception raised inside (LAPACK's
    LinAlgError, overflow, a failed iteration deep in scipy) into a SolverError naming `what`:
    a numerical method that cannot vouch for an answer says so in one error type."""
    try:
        yield
    except (InvalidInputError, SolverError):
        raise
    except Exception as exc:  # the boundary of the package's numerics
        raise SolverError(f"{what} failed numerically ({type(exc).__name__}: {exc}); the "
                          f"data may be too large, too small or too ill-conditioned for "
                          f"floating point") from exc



def numerical_boundary(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Decorator form of `numerical_failures` for a public solver."""
    @functools.wraps(fn)
    def wrapped(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with numerical_failures(fn.__name__):
            return fn(*args, **kwargs)
    return wrapped



def as_symmetric(name: str, value: ArrayLike, d: int) -> NDArray[np.float64]:
    """A real symmetric d×d matrix: ‖C − Cᵀ‖_F ≤ SYM_RTOL ‖C‖_F (checked on C scaled by a power
    of two), symmetrised on return; InvalidInputError naming `name` otherwise (a non-symmetric
    matrix is refused rather than replaced by its symmetric part)."""
    C = as_matrix(name, value, d)
    e = exponent(C)
    S = np.ldexp(C, -e)
    norm, asym = np.linalg.norm(S), np.linalg.norm(S - S.T)
    if asym > SYM_RTOL * norm:
        raise InvalidInputError(f"{name} must be symmetric: ‖{name} − {name}ᵀ‖_F / ‖{name}‖_F = "
                                f"{asym / norm:.3g} exceeds {SYM_RTOL:g}")
    return np.where(C == C.T, C, 0.5 * C + 0.5 * C.T)



def as_gain(name: str, value: ArrayLike, d: int) -> NDArray[np.float64]:
    """G = B R⁻¹ Bᵀ of a CARE: symmetric (as_symmetric) and positive semidefinite,
    λ_min ≥ −PSD_RTOL · λ_max (on G scaled by a power of two); InvalidInputError otherwise."""
    G = as_symmetric(name, value, d)
    e = exponent(G)
    eig = np.linalg.eigvalsh(np.ldexp(G, -e))
    if eig.size and eig[0] < -PSD_RTOL * max(eig[-1], 0.0):
        raise InvalidInputError(f"{name} must be positive semidefinite (G = B R⁻¹ Bᵀ with R ≻ 0): "
                                f"smallest eigenvalue {np.ldexp(eig[0], e):.6g}, largest "
                                f"{np.ldexp(eig[-1], e):.6g}")
    return G
