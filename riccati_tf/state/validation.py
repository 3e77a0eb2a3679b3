"""One validation path for every entry point: shapes, finiteness, symmetry, definiteness, times.

Each helper returns a clean float64 array (or number) or raises :class:`InvalidInputError` with a
sentence naming the argument and what is wrong with it.

What counts as a number (the conversion policy, the same for arrays, scalars and times):

* The package computes in float64. Real numbers of every kind are accepted — Python ``int`` and
  ``float``, NumPy integer and floating scalars and arrays (float16/32/64 and ``longdouble``),
  ``fractions.Fraction``, ``decimal.Decimal`` and other ``numbers.Real`` — and converted to the
  nearest float64 (correct rounding, what ``float()`` does). Values already in float64, and
  every float16/float32 and every integer of magnitude ≤ 2⁵³, keep their value exactly;
  Fractions such as 1/3, Decimals, ``longdouble`` values and larger integers are rounded with a
  relative change ≤ 2⁻⁵³ ≈ 1.1e-16, far below every tolerance of the package. Subnormal numbers
  (down to 4.9e-324) are kept exactly.
* Refused: a value whose rounding would lose its meaning entirely — beyond the float64 range
  (|x| > 1.797e308, e.g. the int 10**400 or the longdouble 1e400; it would become ±inf) or
  nonzero but below the smallest subnormal (e.g. Fraction(1, 10**400); it would become 0) —
  NaN and ±Inf; complex numbers and complex arrays, **even with a zero imaginary part** (a
  complex dtype means a computation that was expected to be complex; pass ``x.real`` when the
  real part is what you mean); booleans (True/False are not read as 1/0); strings and bytes
  anywhere, even when they spell a number (strings are never parsed); None, dicts, sets, dates
  and other objects; ragged nested lists; masked arrays with masked entries.
* Nothing here bounds the magnitude of a finite value. Every finite float64 is a legal entry of
  A, B, V, b, m or Σ; when the mathematics of a legal input overflows float64 later (A = 1e150·I
  makes VΣBΣ ≈ 1e450), the computation that overflows raises SolverError (or reports the
  blow-up it is), never a non-finite answer. The checks made here (symmetry, semidefiniteness,
  rank, scalar value matrices) work on the matrix scaled by a power of two, so their verdicts
  are the same at every representable magnitude, from subnormal entries to 1e308.

Shapes: the dimension d is at least 1 (a 0×0 matrix is refused); a matrix is 2-D and square
(a scalar is read as a 1×1 matrix); a vector of length d may be given as (d,), (1, d) or (d, 1)
(and as a scalar when d = 1). Times are finite real scalars; a time grid is a non-empty, strictly
increasing 1-D array of at most MAX_TIME_POINTS finite times in [0, t_final].
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Iterable
from decimal import Decimal
from typing import SupportsIndex, cast

import numpy as np
import numpy.typing as npt

from ..errors import InvalidInputError

__all__ = ["MAX_SEED", "MAX_TIME_POINTS", "PSD_RTOL", "SAFE_EXPONENT", "SYM_RTOL",
           "ReadOnlyArrays", "as_array",
           "as_cloud", "as_count", "as_covariance", "as_generator", "as_matrix", "as_real",
           "as_seed", "as_time", "as_time_grid", "as_vector", "psd_factor", "psd_part", "psd_rank",
           "scale_exponent"]

#: relative tolerance for symmetry: ‖C − Cᵀ‖_F ≤ SYM_RTOL · ‖C‖_F (on C scaled by a power of 2)
SYM_RTOL = 1e-8
#: relative tolerance for semidefiniteness: λ_min(C) ≥ −PSD_RTOL · max(λ_max(C), 0)
PSD_RTOL = 1e-8
#: seeds are integers in [0, MAX_SEED]: numpy's generators refuse negative seeds and torch's
#: manual_seed takes at most 64 bits
MAX_SEED = 2 ** 63 - 1
#: the most output times a time grid may hold
MAX_TIME_POINTS = 1_000_000
#: matrices whose largest entry lies in [2^−SAFE_EXPONENT, 2^SAFE_EXPONENT] are used as they are
#: by the spectral helpers (squares of their entries neither overflow nor underflow); others are
#: first scaled by a power of two (exact), so that the verdicts hold at every magnitude
SAFE_EXPONENT = 300

_FLOAT_MAX = float(np.finfo(np.float64).max)
_SMALLEST_SUBNORMAL = 5e-324
#: scalar types that are float64 values already (converted exactly)
_EXACT_TYPES = (float, np.float64, np.float32, np.float16)


# --------------------------------------------------------------------------- conversion

def _where(index: tuple[int, ...] | np.ndarray) -> str:
    return f" at index {tuple(int(i) for i in index)}" if len(index) else ""


def _short(x: object) -> str:
    text = repr(x)
    return text if len(text) <= 40 else text[:37] + "..."


def _check_no_bytes(name: str, value: list | tuple, depth: int = 0) -> None:
    """NumPy unpacks bytes-like objects nested in lists into small integers: refuse them first."""
    if depth > 64:
        raise InvalidInputError(f"{name} is nested too deeply to be an array")
    for item in value:
        if isinstance(item, bytes | bytearray | memoryview):
            raise InvalidInputError(f"{name} must be numeric, got bytes {_short(item)} inside "
                                    f"it (strings and bytes are never parsed as numbers)")
        if isinstance(item, list | tuple):
            _check_no_bytes(name, item, depth + 1)


def _real_entry(name: str, x: object, index: tuple[int, ...]) -> float:
    """One entry of an object array as a float64 (the policy of the module docstring)."""
    where = _where(index)
    if isinstance(x, _EXACT_TYPES):
        return float(x)
    if isinstance(x, bool | np.bool_):
        raise InvalidInputError(f"{name} must be numeric, got the boolean {x}{where} "
                                f"(True/False are not read as numbers)")
    if isinstance(x, str | bytes | bytearray | np.str_ | np.bytes_):
        raise InvalidInputError(f"{name} must be numeric, got the string {_short(x)}{where} "
                                f"(strings are never parsed as numbers)")
    if isinstance(x, complex | np.complexfloating):
        raise InvalidInputError(f"{name} must be real, got the complex number {_short(x)}{where} "
                                f"(complex values are refused even with a zero imaginary part)")
    if x is None:
        raise InvalidInputError(f"{name} must be numeric, got None{where}")
    if isinstance(x, list | tuple | np.ndarray):
        raise InvalidInputError(f"{name} must be a rectangular array of numbers: the entry"
                                f"{where} is a {type(x).__name__} (nested lists of unequal "
                                f"lengths?)")
    if not isinstance(x, numbers.Real | Decimal):
        raise InvalidInputError(f"{name} must be numeric, got a {type(x).__name__}{where}")
    try:
        with np.errstate(all="ignore"):
            f = float(x)
    except OverflowError:
        raise InvalidInputError(f"{name}{where} = {_short(x)} is beyond the float64 range "
                                f"(|x| ≤ {_FLOAT_MAX:.4g})") from None
    except (TypeError, ValueError, ArithmeticError) as exc:
        raise InvalidInputError(f"{name}{where} = {_short(x)} is not a real number: "
                                f"{exc}") from None
    if not math.isfinite(f):
        try:
            nonfinite = bool(x != x) or abs(x) == math.inf
        except (TypeError, ValueError, ArithmeticError):
            nonfinite = True
        if not nonfinite:
            raise InvalidInputError(f"{name}{where} = {_short(x)} is beyond the float64 range "
                                    f"(|x| ≤ {_FLOAT_MAX:.4g})")
        return f  # NaN or ±Inf: reported with its index by the finiteness check
    if f == 0.0 and x != 0:
        raise InvalidInputError(f"{name}{where} = {_short(x)} is nonzero but smaller than the "
                                f"smallest float64 ({_SMALLEST_SUBNORMAL:.2g}): it would become 0")
    return f


def _from_objects(name: str, arr: np.ndarray) -> npt.NDArray[np.float64]:
    out = np.empty(arr.shape, dtype=np.float64)
    if {type(x) for x in arr.flat} <= {float, int}:  # the common case: plain Python numbers
        try:
            out[...] = arr  # int → float is correctly rounded, as float() is
            return out
        except OverflowError:  # an int beyond the float64 range: located below
            pass
    for index in np.ndindex(arr.shape):
        out[index] = _real_entry(name, arr[index], index)
    return out


def _from_longdouble(name: str, arr: np.ndarray) -> npt.NDArray[np.float64]:
    with np.errstate(all="ignore"):
        out = arr.astype(np.float64)
    over = np.isfinite(arr) & ~np.isfinite(out)
    if np.any(over):
        index = tuple(np.argwhere(over)[0])
        raise InvalidInputError(f"{name}{_where(index)} = {arr[index]!r} is beyond the float64 "
                                f"range (|x| ≤ {_FLOAT_MAX:.4g})")
    under = (out == 0) & (arr != 0)
    if np.any(under):
        index = tuple(np.argwhere(under)[0])
        raise InvalidInputError(f"{name}{_where(index)} = {arr[index]!r} is nonzero but smaller "
                                f"than the smallest float64 ({_SMALLEST_SUBNORMAL:.2g}): it would "
                                f"become 0")
    return out


def _as_float_array(name: str, value: object, *,
                    finite: bool = True) -> npt.NDArray[np.float64]:
    """A new float64 array holding `value` (any shape), finite unless finite=False, by the
    policy of this module."""
    if value is None:
        raise InvalidInputError(f"{name} must be a numeric array, got None")
    if isinstance(value, str | bytes | bytearray | np.str_ | np.bytes_) or (
            isinstance(value, memoryview) and isinstance(value.obj, bytes | bytearray)):
        raise InvalidInputError(f"{name} must be numeric, got a string {_short(value)} "
                                f"(strings are never parsed as numbers)")
    if isinstance(value, dict | set | frozenset):
        raise InvalidInputError(f"{name} must be a numeric array, got a {type(value).__name__}")
    if isinstance(value, np.ma.MaskedArray) and np.any(np.ma.getmaskarray(value)):
        raise InvalidInputError(f"{name} has masked entries; fill them (x.filled(...)) first")
    if isinstance(value, list | tuple):
        _check_no_bytes(name, value)
        try:
            arr = np.array(value, dtype=object)
        except (ValueError, TypeError) as exc:
            raise InvalidInputError(f"{name} must be a rectangular array of numbers "
                                    f"(nested lists of equal lengths): {exc}") from None
    elif isinstance(value, np.ndarray | np.generic):
        arr = np.asarray(value)
    elif isinstance(value, numbers.Number | Decimal):
        arr = np.array(value, dtype=object)
    else:
        try:  # array-likes (objects with __array__ or the buffer protocol)
            with np.errstate(all="ignore"):
                arr = np.asarray(value)
        except Exception as exc:  # the object's own conversion failed: not an array of numbers
            raise InvalidInputError(f"{name} must be a numeric array; converting the "
                                    f"{type(value).__name__} failed: {exc}") from None
    kind = arr.dtype.kind
    if kind == "b":
        raise InvalidInputError(f"{name} must be numeric, got a boolean array (True/False are not "
                                f"read as numbers)")
    if kind == "c":
        raise InvalidInputError(f"{name} must be real, got a complex array (complex values are "
                                f"refused even with a zero imaginary part; pass x.real if that "
                                f"is what you mean)")
    if kind in "US":
        raise InvalidInputError(f"{name} must be numeric, got an array of strings (strings are "
                                f"never parsed as numbers)")
    if kind == "O":
        out = _from_objects(name, arr)
    elif kind in "iu":
        out = arr.astype(np.float64)
    elif kind == "f":
        out = _from_longdouble(name, arr) if arr.dtype.itemsize > 8 else arr.astype(np.float64)
    else:
        raise InvalidInputError(f"{name} must be numeric, got an array of dtype {arr.dtype}")
    if finite and not np.all(np.isfinite(out)):
        bad = np.argwhere(~np.isfinite(out))[0]
        raise InvalidInputError(f"{name} contains NaN or Inf{_where(bad)}")
    return out


def as_real(name: str, value: object) -> float:
    """One finite real number, converted to the nearest float64.

    Any real scalar is accepted by the conversion policy of this module: a Python or NumPy
    integer or float, a 0-d array, a ``fractions.Fraction``, a ``decimal.Decimal``; −0.0 is
    returned as 0.0.

    Parameters
    ----------
    name : str
        The argument's name, for the error message.
    value : object
        The number.

    Returns
    -------
    float
        The finite float64 nearest to `value`.

    Raises
    ------
    InvalidInputError
        When `value` is not a real number (None, a boolean, a complex number, a string, an
        array with ndim ≥ 1), is NaN or ±Inf, or lies beyond the float64 range.

    See Also
    --------
    as_time : a positive (or non-negative) real number.
    as_count : an integer in a range.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures".

    Examples
    --------
    >>> from fractions import Fraction
    >>> from riccati_tf.state.validation import as_real
    >>> as_real("x", Fraction(1, 3)), as_real("x", -0.0)
    (0.3333333333333333, 0.0)
    """
    if value is None or isinstance(value, bool | np.bool_ | str | bytes | bytearray | np.str_ |
                                   np.bytes_ | complex | np.complexfloating):
        what = ("None" if value is None else f"the boolean {value}"
                if isinstance(value, bool | np.bool_) else f"the complex number {value}"
                if isinstance(value, complex | np.complexfloating)
                else f"a string {_short(value)} (strings are never parsed as numbers)")
        raise InvalidInputError(f"{name} must be a real number, got {what}")
    arr = _as_float_array(name, value, finite=False)
    if arr.ndim != 0:
        raise InvalidInputError(f"{name} must be a single real number, got an array of shape "
                                f"{arr.shape}")
    t = float(arr)
    if not math.isfinite(t):
        raise InvalidInputError(f"{name} must be finite, got {t}")
    return t + 0.0  # + 0.0 turns −0.0 into 0.0


def as_array(name: str, value: npt.ArrayLike, *,
             ndim: int | None = None) -> npt.NDArray[np.float64]:
    """A finite float64 array of any shape, e.g. a rectangular weight matrix.

    Parameters
    ----------
    name : str
        The argument's name, for the error message.
    value : array_like of real numbers
        The array (nested lists, NumPy arrays, objects with ``__array__``).
    ndim : int, optional
        The number of dimensions the array must have; any when None (default).

    Returns
    -------
    ndarray of float64
        A new array holding the entries of `value`, of its shape.

    Raises
    ------
    InvalidInputError
        When an entry is not a real number (strings, bytes, booleans, complex numbers, None,
        ragged nested lists, masked entries), is NaN or Inf, or lies beyond the float64
        range; or when the array does not have `ndim` dimensions.

    See Also
    --------
    as_matrix : a square matrix.
    as_vector : a vector of a given length.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures".

    Examples
    --------
    >>> from riccati_tf.state.validation import as_array
    >>> as_array("W", [[1, 2, 3]], ndim=2)
    array([[1., 2., 3.]])
    """
    arr = _as_float_array(name, value)
    if ndim is not None and arr.ndim != ndim:
        raise InvalidInputError(f"{name} must be a {ndim}-dimensional array, got shape {arr.shape}")
    return arr


def as_matrix(name: str, value: npt.ArrayLike, d: int | None = None) -> npt.NDArray[np.float64]:
    """A finite square float64 matrix of size d ≥ 1, such as A, B or V.

    A Python or NumPy scalar is read as a 1×1 matrix.

    Parameters
    ----------
    name : str
        The argument's name, for the error message.
    value : (d, d) array_like of real numbers
        The matrix, or a scalar for d = 1.
    d : int, optional
        The size the matrix must have; any size ≥ 1 when None (default).

    Returns
    -------
    (d, d) ndarray of float64
        A new array holding the entries of `value`.

    Raises
    ------
    InvalidInputError
        When an entry is refused by the conversion policy (non-numbers, NaN or Inf, values
        beyond the float64 range), the matrix is not 2-D and square, it is 0×0, or its size
        is not `d`.

    See Also
    --------
    as_covariance : a symmetric positive semidefinite matrix.
    as_array : an array of any shape.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures".

    Examples
    --------
    >>> from riccati_tf.state.validation import as_matrix
    >>> as_matrix("A", 2.0)
    array([[2.]])
    >>> as_matrix("A", [[1, 2], [3, 4]], 2)
    array([[1., 2.],
           [3., 4.]])
    """
    arr = _as_float_array(name, value)
    if arr.ndim == 0:
        arr = arr.reshape(1, 1)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise InvalidInputError(f"{name} must be a square matrix, got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise InvalidInputError(f"{name} is 0×0: the dimension d must be ≥ 1")
    if d is not None and arr.shape[0] != d:
        raise InvalidInputError(f"{name} must be {d}×{d} to match the dimension d = {d}, "
                                f"got {arr.shape[0]}×{arr.shape[1]}")
    return arr


def as_vector(name: str, value: npt.ArrayLike, d: int) -> npt.NDArray[np.float64]:
    """A finite float64 vector of length d, such as a mean m or a bias b.

    Parameters
    ----------
    name : str
        The argument's name, for the error message.
    value : (d,), (1, d) or (d, 1) array_like of real numbers
        The vector; a scalar when d = 1.
    d : int
        Its length.

    Returns
    -------
    (d,) ndarray of float64
        A new array holding the entries of `value`.

    Raises
    ------
    InvalidInputError
        When an entry is refused by the conversion policy (non-numbers, NaN or Inf, values
        beyond the float64 range) or the shape is none of (d,), (1, d), (d, 1).

    See Also
    --------
    as_matrix : a square matrix.
    as_array : an array of any shape.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    >>> from riccati_tf.state.validation import as_vector
    >>> as_vector("b", [[1.0], [2.0]], 2)
    array([1., 2.])
    """
    arr = _as_float_array(name, value)
    if arr.ndim == 0 and d == 1:
        arr = arr.reshape(1)
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.reshape(-1)
    if arr.shape != (d,):
        raise InvalidInputError(f"{name} must be a vector of length d = {d}, got shape {arr.shape}")
    return arr


# --------------------------------------------------------------------------- scale-safe spectra

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


def as_time(name: str, value: object, *, allow_zero: bool = False,
            maximum: float | None = None) -> float:
    """A finite positive (or non-negative) real number, such as a horizon or a step.

    Parameters
    ----------
    name : str
        The argument's name, for the error message.
    value : object
        The number (any real scalar, as for `as_real`).
    allow_zero : bool, optional
        Accept 0 (default False: the number must be positive).
    maximum : float, optional
        The largest value accepted; no bound when None (default).

    Returns
    -------
    float
        The number as a float64.

    Raises
    ------
    InvalidInputError
        When `value` is not a finite real number (see `as_real`), is negative, is 0 without
        `allow_zero`, or exceeds `maximum`.

    See Also
    --------
    as_time_grid : an increasing array of times.
    as_real : any finite real number.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures" (depth
       is continuous time t).

    Examples
    --------
    >>> from riccati_tf.state.validation import as_time
    >>> as_time("t_final", 2), as_time("tol", 0, allow_zero=True)
    (2.0, 0.0)
    """
    t = as_real(name, value)
    if t < 0 or (t == 0 and not allow_zero):
        raise InvalidInputError(f"{name} must be {'non-negative' if allow_zero else 'positive'}, "
                                f"got {t}")
    if maximum is not None and t > maximum:
        raise InvalidInputError(f"{name} must be ≤ {maximum:g}, got {t:g}")
    return t


def as_count(name: str, value: object, *, minimum: int = 1, maximum: int | None = None,
             limit: str | None = None) -> int:
    """An integer in [minimum, maximum], such as a number of layers or of samples.

    Parameters
    ----------
    name : str
        The argument's name, for the error message.
    value : object
        The integer: a Python or NumPy integer, or any object with ``__index__``; booleans and
        floats (2.5 or 2.0) are refused.
    minimum : int, optional
        The least value accepted (default 1).
    maximum : int, optional
        The largest value accepted; no bound when None (default).
    limit : str, optional
        The name of the constant behind `maximum`, for the message.

    Returns
    -------
    int
        The integer as a Python int.

    Raises
    ------
    InvalidInputError
        When `value` is not an integer (booleans and floats included) or lies outside
        [minimum, maximum].

    See Also
    --------
    as_seed : a random seed.
    as_time : a positive real number.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.state.validation import as_count
    >>> as_count("n_layers", np.int64(3))
    3
    >>> try:
    ...     as_count("n_layers", 2.0)
    ... except ValueError as exc:
    ...     print(exc)
    n_layers must be an integer, got 2.0
    """
    if isinstance(value, bool | np.bool_):
        raise InvalidInputError(f"{name} must be an integer, got {value!r}")
    try:
        n = operator.index(cast(SupportsIndex, value))  # TypeError when it is not
    except TypeError:
        raise InvalidInputError(f"{name} must be an integer, got {_short(value)}") from None
    if n < minimum:
        raise InvalidInputError(f"{name} must be ≥ {minimum}, got {n}")
    if maximum is not None and n > maximum:
        size = str(n) if n < 10 ** 30 else f"≈1e{int(n.bit_length() * 0.30103)}"
        raise InvalidInputError(f"{name} must be ≤ {maximum}" + (f" ({limit})" if limit else "")
                                + f", got {size}")
    return int(n)


def as_seed(name: str, value: object) -> int:
    """A random seed: an integer in [0, MAX_SEED].

    The package's rule for randomness: every entry point that draws random numbers is
    reproducible, drawing from a `seed` (this check; default 0) or, for `rng` arguments, from a
    seed or a numpy.random.Generator the caller owns (`as_generator`). None (fresh entropy from
    the operating system), booleans, floats and legacy RandomState objects are refused.
    MAX_SEED = 2⁶³ − 1: NumPy's generators refuse negative seeds and torch's ``manual_seed``
    takes at most 64 bits.

    Parameters
    ----------
    name : str
        The argument's name, for the error message.
    value : object
        The seed (an integer; booleans and floats are refused).

    Returns
    -------
    int
        The seed as a Python int.

    Raises
    ------
    InvalidInputError
        When `value` is not an integer or lies outside [0, MAX_SEED].

    See Also
    --------
    as_generator : a NumPy random Generator from a seed.
    as_count : an integer in any range.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers" (seeded
       experiments).

    Examples
    --------
    >>> from riccati_tf.state.validation import as_seed
    >>> as_seed("seed", 7)
    7
    """
    return as_count(name, value, minimum=0, maximum=MAX_SEED, limit="validation.MAX_SEED")


def as_cloud(name: str, x: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """A finite (N, d) array of N ≥ 2 tokens x_1, ..., x_N in R^d.

    Parameters
    ----------
    name : str
        The argument's name, for the error message.
    x : (N, d) array_like of real numbers
        The tokens, one per row.

    Returns
    -------
    (N, d) ndarray of float64
        A new array holding the tokens.

    Raises
    ------
    InvalidInputError
        When an entry is refused by the conversion policy (non-numbers, NaN or Inf, values
        beyond the float64 range) or the array is not 2-D with N ≥ 2 rows and d ≥ 1 columns.

    See Also
    --------
    as_array : an array of any shape.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures" (the
       empirical measure of N tokens).

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.state.validation import as_cloud
    >>> as_cloud("x", np.zeros((3, 2))).shape
    (3, 2)
    """
    arr = as_array(name, x)  # finite floats; strings and ragged lists refused
    if arr.ndim != 2 or arr.shape[0] < 2 or arr.shape[1] < 1:
        raise InvalidInputError(f"{name} must be an (N, d) array of N ≥ 2 tokens, got shape "
                                f"{arr.shape}")
    return arr


def as_time_grid(name: str, value: npt.ArrayLike, t_final: float) -> npt.NDArray[np.float64]:
    """Strictly increasing finite times in [0, t_final], such as the output times of a flow.

    At most MAX_TIME_POINTS times; a last time above t_final by a relative 1e-12 (rounding) is
    set to t_final.

    Parameters
    ----------
    name : str
        The argument's name, for the error message.
    value : (k,) array_like of float
        The times.
    t_final : float
        The end of the interval, ≥ 0.

    Returns
    -------
    (k,) ndarray of float64
        The times, the last one clipped to t_final.

    Raises
    ------
    InvalidInputError
        When an entry is refused by the conversion policy (non-numbers, NaN or Inf), the array
        is not 1-D and non-empty, holds more than MAX_TIME_POINTS times, leaves [0, t_final],
        or is not strictly increasing.

    See Also
    --------
    as_time : one time.
    riccati_tf.flow : takes its output times `t_eval` through this check.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    >>> from riccati_tf.state.validation import as_time_grid
    >>> as_time_grid("t_eval", [0, 0.5, 1.0 + 1e-13], 1.0)
    array([0. , 0.5, 1. ])
    >>> try:
    ...     as_time_grid("t_eval", [0.5, 0.2], 1.0)
    ... except ValueError as exc:
    ...     print(exc)
    t_eval must be strictly increasing: t_eval[0] = 0.5 is followed by 0.2
    """
    t = _as_float_array(name, value)
    if t.ndim != 1 or t.size == 0:
        raise InvalidInputError(f"{name} must be a non-empty 1-D array of times, got shape "
                                f"{t.shape}")
    if t.size > MAX_TIME_POINTS:
        raise InvalidInputError(f"{name} has {t.size} times; at most {MAX_TIME_POINTS} are "
                                f"offered")
    if t[0] < 0 or t[-1] - t_final > 1e-12 * t_final:
        raise InvalidInputError(f"{name} must lie in [0, t_final] = [0, {t_final}], "
                                f"got [{t[0]}, {t[-1]}]")
    t = np.minimum(t, t_final) + 0.0
    if np.any(np.diff(t) <= 0):
        i = int(np.argmax(np.diff(t) <= 0))
        raise InvalidInputError(f"{name} must be strictly increasing: {name}[{i}] = {t[i]} is "
                                f"followed by {t[i + 1]}")
    return t


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


def as_generator(name: str, value: object) -> np.random.Generator:
    """A NumPy random Generator from an integer seed (`as_seed`) or a Generator.

    The package's rule for randomness (`as_seed`): results are reproducible, so None (fresh
    entropy) is refused; pass a Generator to draw different numbers on every call.

    Parameters
    ----------
    name : str
        The argument's name, for the error message.
    value : int or numpy.random.Generator
        An integer seed in [0, MAX_SEED], or a Generator (returned as it is).

    Returns
    -------
    numpy.random.Generator
        The generator.

    Raises
    ------
    InvalidInputError
        When `value` is of another type (None, a boolean, a float, a legacy RandomState) or
        is an integer outside [0, MAX_SEED].

    See Also
    --------
    as_seed : a seed in [0, MAX_SEED].
    riccati_tf.Gaussian.sample : draws samples with such a generator.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers" (seeded
       experiments).

    Examples
    --------
    >>> from riccati_tf.state.validation import as_generator
    >>> rng = as_generator("rng", 0)
    >>> round(float(rng.standard_normal()), 6)
    0.12573
    """
    if isinstance(value, np.random.Generator):
        return value
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        fresh = (": draws are reproducible, pass np.random.default_rng() for fresh entropy"
                 if value is None else "")
        raise InvalidInputError(f"{name} must be an integer seed or a numpy.random.Generator, "
                                f"got {type(value).__name__}{fresh}")
    return np.random.default_rng(as_seed(name, value))


class ReadOnlyArrays:
    """Mixin for the immutable objects (a layer, a Gaussian, a head, an equilibrium) whose arrays
    are read-only.

    numpy unpickles and deep-copies arrays writeable, so `__setstate__` (which pickle and
    copy.deepcopy call) sets the arrays held in the instance's attributes, directly or in tuples
    and lists, read-only again: a layer sent to a worker process (a Dask sweep) stays immutable,
    and the values cached from its arrays stay valid.

    Raises
    ------
    ValueError
        From numpy, on a later attempt to write into one of the arrays.

    See Also
    --------
    riccati_tf.Params : a layer (its arrays, heads and cached values).
    riccati_tf.Gaussian : a state N(m, Σ).

    References
    ----------
    .. [1] Python documentation, "pickle — Pickling class instances" (``__setstate__``).

    Examples
    --------
    >>> import pickle
    >>> import numpy as np
    >>> from riccati_tf import Params
    >>> p = pickle.loads(pickle.dumps(Params(A=-np.eye(2))))
    >>> p.A.flags.writeable
    False
    """

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        _read_only(state.values())


def _read_only(values: Iterable[object]) -> None:
    for v in values:
        if isinstance(v, np.ndarray):
            v.setflags(write=False)
        elif isinstance(v, tuple | list):
            _read_only(v)

