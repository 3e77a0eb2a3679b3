"""Scalar arguments and grids: times, counts, seeds and random generators (the package's one rule
for randomness, `as_seed`), and time grids."""

from __future__ import annotations

import numbers
import operator
from typing import SupportsIndex, cast

import numpy as np
import numpy.typing as npt

from ...errors import InvalidInputError
from .conversion import _as_float_array, _short, as_real

__all__ = ["MAX_SEED", "MAX_TIME_POINTS", "as_count", "as_generator", "as_seed", "as_time",
           "as_time_grid"]

#: seeds are integers in [0, MAX_SEED]: numpy's generators refuse negative seeds and torch's
#: manual_seed takes at most 64 bits
MAX_SEED = 2 ** 63 - 1
#: the most output times a time grid may hold
MAX_TIME_POINTS = 1_000_000


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
