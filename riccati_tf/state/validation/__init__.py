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

The modules follow the checks: `conversion` (the conversion policy: numbers, arrays, matrices,
vectors, token clouds), `spectra` (covariances and their scale-safe rank, factor and PSD part),
`scalars` (times, counts, seeds, random generators, time grids) and `readonly` (arrays that stay
read-only through pickle and copy).
"""

from .conversion import as_array, as_cloud, as_matrix, as_real, as_vector
from .readonly import ReadOnlyArrays
from .scalars import (
    MAX_SEED,
    MAX_TIME_POINTS,
    as_count,
    as_generator,
    as_seed,
    as_time,
    as_time_grid,
)
from .spectra import (
    PSD_RTOL,
    SAFE_EXPONENT,
    SYM_RTOL,
    as_covariance,
    psd_factor,
    psd_part,
    psd_rank,
    scale_exponent,
)

__all__ = ["MAX_SEED", "MAX_TIME_POINTS", "PSD_RTOL", "SAFE_EXPONENT", "SYM_RTOL",
           "ReadOnlyArrays", "as_array",
           "as_cloud", "as_count", "as_covariance", "as_generator", "as_matrix", "as_real",
           "as_seed", "as_time", "as_time_grid", "as_vector", "psd_factor", "psd_part", "psd_rank",
           "scale_exponent"]
