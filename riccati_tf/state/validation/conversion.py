"""Conversion of what a user passes to float64 numbers and arrays, by the package's conversion
policy (`riccati_tf.state.validation`): real scalars, arrays of a given shape, square matrices,
vectors of length d and token clouds, each finite, or InvalidInputError naming the argument and
the entry at fault."""

from __future__ import annotations

import math
import numbers
from decimal import Decimal

import numpy as np
import numpy.typing as npt

from ...errors import InvalidInputError

__all__ = ["as_array", "as_cloud", "as_matrix", "as_real", "as_vector"]

_FLOAT_MAX = float(np.finfo(np.float64).max)
_SMALLEST_SUBNORMAL = 5e-324
#: scalar types that are float64 values already (converted exactly)
_EXACT_TYPES = (float, np.float64, np.float32, np.float16)


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
