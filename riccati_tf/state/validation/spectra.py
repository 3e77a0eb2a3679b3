"""Scale-safe spectra: covariances (symmetric and positive semidefinite to relative tolerances),
their numerical rank, a factor and the PSD part, each computed on the matrix scaled by a power of
two (exact) so that the verdicts are the same at every representable magnitude."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from ...errors import InvalidInputError
from .conversion import as_matrix

__all__ = ["PSD_RTOL", "SAFE_EXPONENT", "SYM_RTOL", "as_covariance", "psd_factor", "psd_part",
           "psd_rank", "scale_exponent"]

#: relative tolerance for symmetry: ‖C − Cᵀ‖_F ≤ SYM_RTOL · ‖C‖_F (on C scaled by a power of 2)
SYM_RTOL = 1e-8
#: relative tolerance for semidefiniteness: λ_min(C) ≥ −PSD_RTOL · max(λ_max(C), 0)
PSD_RTOL = 1e-8
#: matrices whose largest entry lies in [2^−SAFE_EXPONENT, 2^SAFE_EXPONENT] are used as they are
#: by the spectral helpers (squares of their entries neither overflow nor underflow); others are
#: first scaled by a power of two (exact), so that the verdicts hold at every magnitude
SAFE_EXPONENT = 300


def scale_exponent(M: npt.NDArray[np.float64], *, even: bool = False) -> int:
    """The exponent e such that M · 2^−e has its largest entry in a safe range.

    The safe range is [2^−SAFE_EXPONENT, 2^SAFE_EXPONENT]: squares of the entries of M · 2^−e
    neither overflow nor underflow, so spectral computations on it are accurate, and scaling by
    a power of two is exact.

    Parameters
    ----------
    M : ndarray of float
        The array (any shape), finite.
    even : bool, optional
        Round e up to an even number, so that √(2^e) is a power of two (default False).

    Returns
    -------
    int
        e; 0 when the largest entry of M is already in the safe range, M = 0 or M is empty
        (and for a non-finite entry, which the callers refuse first).

    Raises
    ------
    TypeError
        When M is not an array of numbers (its absolute values cannot be taken).

    See Also
    --------
    psd_rank : the rank of a PSD matrix, computed on M scaled this way.
    as_covariance : checks symmetry and definiteness on the scaled matrix.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §3 "Rank invariance".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.state.validation import scale_exponent
    >>> scale_exponent(np.eye(2)), scale_exponent(np.array([[1e300]]))
    (0, 997)
    >>> scale_exponent(np.array([1e-310]), even=True)
    -1028
    """
    s = float(np.max(np.abs(M))) if M.size else 0.0
    if s == 0.0 or 2.0 ** -SAFE_EXPONENT <= s <= 2.0 ** SAFE_EXPONENT:
        return 0
    e = math.frexp(s)[1]
    return e + (e % 2) if even else e


def _scaled(M: npt.NDArray[np.float64], e: int) -> npt.NDArray[np.float64]:
    return np.ldexp(M, -e) if e else M


def _format_scaled(x: float, e: int) -> str:
    """x · 2^e as text, without overflowing."""
    try:
        value = math.ldexp(float(x), e)
    except OverflowError:
        value = math.inf
    if math.isfinite(value) and (value != 0 or x == 0):
        return f"{value:.6g}"
    return f"{x:.6g}·2^{e}"


def _symmetrize(C: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """(C + Cᵀ)/2 without overflow; entries already equal to their mirror are kept exactly."""
    with np.errstate(over="ignore"):
        half = 0.5 * C
        avg = half + half.T
        small = np.abs(C) < 1.0
        avg[small] = (0.5 * (C + C.T))[small]
    return np.where(C == C.T, C, avg)


def as_covariance(name: str, value: npt.ArrayLike,
                  d: int | None = None) -> npt.NDArray[np.float64]:
    """A symmetric positive semidefinite matrix Σ ⪰ 0 (singular allowed), symmetrised.

    Symmetry: ‖C − Cᵀ‖_F ≤ SYM_RTOL ‖C‖_F.  Semidefiniteness: λ_min ≥ −PSD_RTOL · max(λ_max, 0).
    Both are checked on C scaled by a power of two (the verdict is that of C at any magnitude).
    The matrix returned is (C + Cᵀ)/2, computed without overflow; entries already equal to their
    mirror are kept exactly.

    Parameters
    ----------
    name : str
        The argument's name, for the error message.
    value : (d, d) array_like of real numbers, symmetric positive semidefinite
        The covariance, or a scalar ≥ 0 for d = 1.
    d : int, optional
        The size the matrix must have; any size ≥ 1 when None (default).

    Returns
    -------
    (d, d) ndarray of float64
        The symmetrised covariance.

    Raises
    ------
    InvalidInputError
        When `value` is not a finite square matrix of size d (see `as_matrix`), is not
        symmetric to SYM_RTOL, or has an eigenvalue below −PSD_RTOL · λ_max (not positive
        semidefinite).

    See Also
    --------
    as_matrix : a square matrix without the checks of a covariance.
    psd_rank : the rank of the covariance.
    psd_factor : a factor L with L Lᵀ = Σ.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    >>> from riccati_tf.state.validation import as_covariance
    >>> as_covariance("cov", [[2.0, 1.0], [1.0, 1.0]])
    array([[2., 1.],
           [1., 1.]])
    >>> try:
    ...     as_covariance("cov", [[1.0, 2.0], [2.0, 1.0]])
    ... except ValueError as exc:
    ...     print(exc)
    cov is not positive semidefinite: smallest eigenvalue -1 (largest 3); ...
    """
    cov = as_matrix(name, value, d)
    s = float(np.max(np.abs(cov)))
    if s == 0.0:
        return cov
    e = math.frexp(s)[1]
    C = np.ldexp(cov, -e)  # largest entry in [1/2, 1): no overflow, no harmful underflow
    norm = np.linalg.norm(C)
    asym = np.linalg.norm(C - C.T)
    if asym > SYM_RTOL * norm:
        raise InvalidInputError(f"{name} is not symmetric: ‖C − Cᵀ‖/‖C‖ = {asym / norm:.3g} "
                                f"exceeds the tolerance {SYM_RTOL:g}")
    eig = np.linalg.eigvalsh(0.5 * (C + C.T))
    if eig[0] < -PSD_RTOL * max(eig[-1], 0.0):
        raise InvalidInputError(f"{name} is not positive semidefinite: smallest eigenvalue "
                                f"{_format_scaled(eig[0], e)} (largest "
                                f"{_format_scaled(eig[-1], e)}); a covariance needs λ ≥ 0")
    return _symmetrize(cov)


def _scaled_tol(cov: npt.NDArray[np.float64], eig: npt.NDArray[np.floating],
                tol: float | None, e: int) -> float:
    """The rank tolerance in the units of cov · 2^−e (default d·eps·λ_max)."""
    if tol is None:
        return cov.shape[0] * np.finfo(float).eps * max(float(eig[-1]), 0.0)
    try:
        return math.ldexp(float(tol), -e)
    except OverflowError:
        return math.inf


def psd_rank(cov: npt.NDArray[np.float64], tol: float | None = None) -> int:
    """Numerical rank of a positive semidefinite matrix: its eigenvalues above tol.

    The eigenvalues are computed on cov scaled by a power of two (`scale_exponent`), so the rank
    is the same at every magnitude. rank Σ(t) is an invariant of the flow (SPEC §3).

    Parameters
    ----------
    cov : (d, d) ndarray of float, symmetric positive semidefinite
        The matrix, already validated (`as_covariance`).
    tol : float, optional
        The threshold; default d·eps·λ_max(cov).

    Returns
    -------
    int
        The number of eigenvalues above `tol`.

    Raises
    ------
    numpy.linalg.LinAlgError
        When LAPACK's eigenvalue computation does not converge. The input is not checked:
        non-finite entries give a meaningless rank, so validate first (`as_covariance`).

    See Also
    --------
    psd_factor : a factor L with L Lᵀ = cov of this rank.
    riccati_tf.Gaussian.rank : the rank of a Gaussian's covariance.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §3 "Rank invariance".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.state.validation import psd_rank
    >>> psd_rank(np.diag([1.0, 1e-20, 0.0])), psd_rank(np.diag([1.0, 1e-20]), tol=0.0)
    (1, 2)
    """
    e = scale_exponent(cov)
    eig = np.linalg.eigvalsh(_scaled(cov, e))
    return int(np.sum(eig > _scaled_tol(cov, eig, tol, e)))


def psd_factor(cov: npt.NDArray[np.float64], tol: float | None = None) -> npt.NDArray[np.float64]:
    """A d×r factor L with L Lᵀ = cov, r = psd_rank(cov, tol).

    From the eigen-decomposition cov = Q diag(λ) Qᵀ: L = Q_r diag(√λ_r) over the eigenvalues
    above tol, computed on cov scaled by a power of four (exact at every magnitude).

    Parameters
    ----------
    cov : (d, d) ndarray of float, symmetric positive semidefinite
        The matrix, already validated (`as_covariance`).
    tol : float, optional
        The rank threshold; default d·eps·λ_max(cov).

    Returns
    -------
    (d, r) ndarray of float64
        The factor L.

    Raises
    ------
    numpy.linalg.LinAlgError
        When LAPACK's eigen-decomposition does not converge. The input is not checked:
        non-finite entries give a meaningless factor, so validate first (`as_covariance`).

    See Also
    --------
    psd_rank : the rank r.
    as_covariance : validates a covariance first.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §3 "Rank invariance" (Σ = L Lᵀ on its stratum).

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.state.validation import psd_factor
    >>> cov = np.array([[4.0, 2.0], [2.0, 1.0]])
    >>> L = psd_factor(cov)
    >>> L.shape, np.allclose(L @ L.T, cov)
    ((2, 1), True)
    """
    e = scale_exponent(cov, even=True)
    eig, vec = np.linalg.eigh(_scaled(cov, e))
    keep = eig > _scaled_tol(cov, eig, tol, e)
    return _scaled(vec[:, keep] * np.sqrt(eig[keep]), -(e // 2))  # × 2^(e/2)


def psd_part(S: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """The nearest positive semidefinite matrix (Frobenius norm) to the symmetric part of S.

    With ½(S + Sᵀ) = U diag(e) Uᵀ it is U diag(max(e, 0)) Uᵀ: a computed covariance whose
    rounding left small negative eigenvalues (the end of an integration) as the state a further
    integration starts from. rank Σ is an invariant of the flow (SPEC §3); clipping at 0 keeps
    the positive directions.

    Parameters
    ----------
    S : (d, d) ndarray of float
        A finite matrix, symmetric up to rounding.

    Returns
    -------
    (d, d) ndarray of float
        ½(S + Sᵀ) itself when it has no negative eigenvalue, else its clipped form.

    Raises
    ------
    numpy.linalg.LinAlgError
        When LAPACK's eigenvalue computation does not converge (non-finite entries: validate
        first, `as_covariance`).

    See Also
    --------
    psd_rank : the numerical rank of the result.
    as_covariance : validates a covariance given by a user.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §3 "Rank invariance".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.state.validation import psd_part
    >>> psd_part(np.array([[1.0, 0.0], [0.0, -1e-17]]))
    array([[1., 0.],
           [0., 0.]])
    """
    S = 0.5 * (S + S.T)
    e, U = np.linalg.eigh(S)
    return S if e[0] >= 0 else (U * np.clip(e, 0.0, None)) @ U.T
