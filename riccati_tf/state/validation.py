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
from decimal import Decimal

import numpy as np

from ..errors import InvalidInputError

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

def _where(index) -> str:
    return f" at index {tuple(int(i) for i in index)}" if len(index) else ""


def _short(x) -> str:
    text = repr(x)
    return text if len(text) <= 40 else text[:37] + "..."


def _check_no_bytes(name: str, value, depth: int = 0) -> None:
    """NumPy unpacks bytes-like objects nested in lists into small integers: refuse them first."""
    if depth > 64:
        raise InvalidInputError(f"{name} is nested too deeply to be an array")
    for item in value:
        if isinstance(item, bytes | bytearray | memoryview):
            raise InvalidInputError(f"{name} must be numeric, got bytes {_short(item)} inside "
                                    f"it (strings and bytes are never parsed as numbers)")
        if isinstance(item, list | tuple):
            _check_no_bytes(name, item, depth + 1)


def _real_entry(name: str, x, index) -> float:
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


def _from_objects(name: str, arr: np.ndarray) -> np.ndarray:
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


def _from_longdouble(name: str, arr: np.ndarray) -> np.ndarray:
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


def _as_float_array(name: str, value, *, finite: bool = True) -> np.ndarray:
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


def as_real(name: str, value) -> float:
    """One finite real number (Python or NumPy scalar, 0-d array, Fraction, Decimal)."""
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


def as_array(name: str, value, *, ndim: int | None = None) -> np.ndarray:
    """A finite float array (of ndim dimensions when given), e.g. a rectangular weight matrix."""
    arr = _as_float_array(name, value)
    if ndim is not None and arr.ndim != ndim:
        raise InvalidInputError(f"{name} must be a {ndim}-dimensional array, got shape {arr.shape}")
    return arr


def as_matrix(name: str, value, d: int | None = None) -> np.ndarray:
    """A finite square float matrix of size ≥ 1; a Python/NumPy scalar is read as a 1×1 matrix."""
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


def as_vector(name: str, value, d: int) -> np.ndarray:
    """A finite float vector of length d: shape (d,), (1, d) or (d, 1); a scalar when d = 1."""
    arr = _as_float_array(name, value)
    if arr.ndim == 0 and d == 1:
        arr = arr.reshape(1)
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.reshape(-1)
    if arr.shape != (d,):
        raise InvalidInputError(f"{name} must be a vector of length d = {d}, got shape {arr.shape}")
    return arr


# --------------------------------------------------------------------------- scale-safe spectra

def scale_exponent(M: np.ndarray, *, even: bool = False) -> int:
    """e such that M · 2^−e has its largest entry in a safe range (0 when M is already there or
    M = 0); even=True rounds e up to an even number (so that √(2^e) is a power of two)."""
    s = float(np.max(np.abs(M))) if M.size else 0.0
    if s == 0.0 or 2.0 ** -SAFE_EXPONENT <= s <= 2.0 ** SAFE_EXPONENT:
        return 0
    e = math.frexp(s)[1]
    return e + (e % 2) if even else e


def _scaled(M: np.ndarray, e: int) -> np.ndarray:
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


def _symmetrize(C: np.ndarray) -> np.ndarray:
    """(C + Cᵀ)/2 without overflow; entries already equal to their mirror are kept exactly."""
    with np.errstate(over="ignore"):
        half = 0.5 * C
        avg = half + half.T
        small = np.abs(C) < 1.0
        avg[small] = (0.5 * (C + C.T))[small]
    return np.where(C == C.T, C, avg)


def as_covariance(name: str, value, d: int | None = None) -> np.ndarray:
    """A symmetric positive semidefinite matrix (singular allowed), symmetrised on return.

    Symmetry: ‖C − Cᵀ‖_F ≤ SYM_RTOL ‖C‖_F.  Semidefiniteness: λ_min ≥ −PSD_RTOL · max(λ_max, 0).
    Both are checked on C scaled by a power of two (the verdict is that of C at any magnitude).
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


def as_time(name: str, value, *, allow_zero: bool = False, maximum: float | None = None) -> float:
    """A finite positive (or non-negative) real number, at most `maximum` when given."""
    t = as_real(name, value)
    if t < 0 or (t == 0 and not allow_zero):
        raise InvalidInputError(f"{name} must be {'non-negative' if allow_zero else 'positive'}, "
                                f"got {t}")
    if maximum is not None and t > maximum:
        raise InvalidInputError(f"{name} must be ≤ {maximum:g}, got {t:g}")
    return t


def as_count(name: str, value, *, minimum: int = 1, maximum: int | None = None,
             limit: str | None = None) -> int:
    """An integer in [minimum, maximum] (bools and floats such as 2.5 or 2.0 are refused);
    `limit` names the constant behind maximum in the message."""
    if isinstance(value, bool | np.bool_):
        raise InvalidInputError(f"{name} must be an integer, got {value!r}")
    try:
        n = operator.index(value)
    except TypeError:
        raise InvalidInputError(f"{name} must be an integer, got {_short(value)}") from None
    if n < minimum:
        raise InvalidInputError(f"{name} must be ≥ {minimum}, got {n}")
    if maximum is not None and n > maximum:
        size = str(n) if n < 10 ** 30 else f"≈1e{int(n.bit_length() * 0.30103)}"
        raise InvalidInputError(f"{name} must be ≤ {maximum}" + (f" ({limit})" if limit else "")
                                + f", got {size}")
    return int(n)


def as_seed(name: str, value) -> int:
    """A random seed: an integer in [0, MAX_SEED] (bools and floats refused)."""
    return as_count(name, value, minimum=0, maximum=MAX_SEED, limit="validation.MAX_SEED")


def as_cloud(name: str, x) -> np.ndarray:
    """A finite (N, d) array of N ≥ 2 tokens."""
    arr = as_array(name, x)  # finite floats; strings and ragged lists refused
    if arr.ndim != 2 or arr.shape[0] < 2 or arr.shape[1] < 1:
        raise InvalidInputError(f"{name} must be an (N, d) array of N ≥ 2 tokens, got shape "
                                f"{arr.shape}")
    return arr


def as_time_grid(name: str, value, t_final: float) -> np.ndarray:
    """Strictly increasing finite times in [0, t_final] (at most MAX_TIME_POINTS of them); a last
    time above t_final by a relative 1e-12 (rounding) is set to t_final."""
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


def _scaled_tol(cov: np.ndarray, eig: np.ndarray, tol, e: int) -> float:
    """The rank tolerance in the units of cov · 2^−e (default d·eps·λ_max)."""
    if tol is None:
        return cov.shape[0] * np.finfo(float).eps * max(float(eig[-1]), 0.0)
    try:
        return math.ldexp(float(tol), -e)
    except OverflowError:
        return math.inf


def psd_rank(cov: np.ndarray, tol: float | None = None) -> int:
    """Numerical rank of a PSD matrix: eigenvalues above tol (default d·eps·λ_max)."""
    e = scale_exponent(cov)
    eig = np.linalg.eigvalsh(_scaled(cov, e))
    return int(np.sum(eig > _scaled_tol(cov, eig, tol, e)))


def psd_factor(cov: np.ndarray, tol: float | None = None) -> np.ndarray:
    """A d×r factor L with L Lᵀ = cov, r = psd_rank(cov, tol) (eigen-decomposition)."""
    e = scale_exponent(cov, even=True)
    eig, vec = np.linalg.eigh(_scaled(cov, e))
    keep = eig > _scaled_tol(cov, eig, tol, e)
    return _scaled(vec[:, keep] * np.sqrt(eig[keep]), -(e // 2))  # × 2^(e/2)


def as_generator(name: str, value) -> np.random.Generator:
    """A NumPy random Generator from None (fresh entropy), an int seed ≥ 0 or a Generator."""
    if value is None:
        return np.random.default_rng()
    if isinstance(value, np.random.Generator):
        return value
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        raise InvalidInputError(f"{name} must be None, an integer seed or a "
                                f"numpy.random.Generator, got {type(value).__name__}")
    return np.random.default_rng(as_count(name, value, minimum=0))
