"""Time-varying layers: a schedule t ↦ Params (or another layer object) checked at every time it
is called, so that what a user's callable returns is a finite layer on R^d or an
InvalidInputError naming the callable and the time — never an AttributeError deep in a solver,
nor a blow-up reported for a layer that held NaN."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol, TypeVar, cast

import numpy as np

from ..errors import InvalidInputError, SolverError

__all__ = ["all_finite", "check_layer", "checked_schedule"]


class _Layer(Protocol):
    @property
    def d(self) -> int: ...

    def arrays(self) -> Iterable[np.ndarray]: ...


L = TypeVar("L", bound=_Layer)


def all_finite(*arrays: np.ndarray) -> bool:
    """Whether no array holds NaN or ±inf.

    One sum per array (a finite sum has finite entries); the entrywise test only where a sum
    is not finite (finite entries whose sum overflows), so a finite array costs no temporary.

    Parameters
    ----------
    arrays : ndarray
        The arrays.

    Returns
    -------
    bool
        True when every entry of every array is finite.

    Raises
    ------
    AttributeError
        For an argument that is not an array (it has no `sum`).

    See Also
    --------
    check_layer : refuses a layer whose arrays are not all finite.

    References
    ----------
    .. [1] IEEE 754-2019, §6 (infinity and NaN propagate through sums).

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.state.schedule import all_finite
    >>> all_finite(np.full(2, 1e308), np.ones(3)), all_finite(np.array([1.0, np.nan]))
    (True, False)
    """
    with np.errstate(over="ignore", invalid="ignore"):
        return all(np.isfinite(a.sum()) or bool(np.all(np.isfinite(a))) for a in arrays)


def check_layer(what: str, value: object, cls: type[L], d: int, when: str = "") -> L:
    """value itself when it is a cls acting on R^d whose arrays are all finite, else
    InvalidInputError naming `what` (and `when`, e.g. " at t = 0.5").

    A layer's arrays are read-only and checked on construction; this catches a value of another
    type and arrays written after construction (through `setflags`), which a solver would
    otherwise report as a blow-up of the flow.

    Parameters
    ----------
    what : str
        How the value is named in the message ("params", "params(t)").
    value : object
        The value.
    cls : type
        The layer type (`riccati_tf.Params`, `riccati_tf.empirical.particles.FeedForward`): a
        `d` and an `arrays()` method.
    d : int
        The dimension the layer must act on.
    when : str, optional
        Appended to the message (default "").

    Returns
    -------
    cls
        value.

    Raises
    ------
    InvalidInputError
        For another type, another dimension, or NaN/Inf in an array.

    See Also
    --------
    checked_schedule : the check at every time of a schedule.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf import Params
    >>> from riccati_tf.state.schedule import check_layer
    >>> p = Params(-np.eye(2))
    >>> check_layer("params", p, Params, 2) is p
    True
    >>> check_layer("params(t)", None, Params, 2, " at t = 0.5")
    Traceback (most recent call last):
        ...
    riccati_tf.errors.InvalidInputError: params(t) must be a Params on R^2, got NoneType at t = 0.5
    """
    if not isinstance(value, cls):
        raise InvalidInputError(f"{what} must be a {cls.__name__} on R^{d}, got "
                                f"{type(value).__name__}{when}")
    if value.d != d:
        raise InvalidInputError(f"{what} must be a {cls.__name__} on R^{d} (the tokens' "
                                f"dimension), got one on R^{value.d}{when}")
    if not all_finite(*value.arrays()):
        raise InvalidInputError(f"{what} holds NaN or Inf entries{when} (its arrays were "
                                f"written after construction)")
    return value


def _passes_through(exc: Exception) -> bool:
    """Exceptions of riccati_tf's own modules other than its public errors are control flow of
    the package's callers (e.g. a certificate's evaluation budget) and propagate unchanged."""
    return (type(exc).__module__.startswith("riccati_tf.")
            and not isinstance(exc, InvalidInputError | SolverError))


_UNSET = object()


def checked_schedule(name: str, fn: Callable[[float], Any], cls: type[L], d: int
                     ) -> Callable[[float], L]:
    """fn wrapped so that every value fn(t) is a finite cls on R^d (`check_layer`).

    An exception fn raises (other than the package's own control flow) becomes an
    InvalidInputError naming `name(t)` and t, as does a value of another type, another
    dimension, or holding NaN/Inf. A value returned again (the same object) is not checked
    again.

    Parameters
    ----------
    name : str
        The argument's name ("params", "feedforward").
    fn : callable float -> cls
        The schedule.
    cls : type
        The layer type.
    d : int
        The dimension of the tokens.

    Returns
    -------
    callable float -> cls
        The checked schedule.

    Raises
    ------
    InvalidInputError
        From the returned callable, as above.

    See Also
    --------
    check_layer : the check of one value.
    riccati_tf.flow : integrates a schedule of Params.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf import Params
    >>> from riccati_tf.state.schedule import checked_schedule
    >>> at = checked_schedule("params", lambda t: Params(-np.eye(2)) if t < 1 else "off",
    ...                       Params, 2)
    >>> at(0.5).d
    2
    >>> at(2.0)
    Traceback (most recent call last):
        ...
    riccati_tf.errors.InvalidInputError: params(t) must be a Params on R^2, got str at t = 2
    """
    last: list[object] = [_UNSET]

    def at(t: float) -> L:
        when = f" at t = {t:.6g}"
        try:
            value = fn(t)
        except Exception as exc:
            if _passes_through(exc):
                raise
            raise InvalidInputError(f"{name}(t) raised {type(exc).__name__}{when}: {exc}"
                                    ) from exc
        if value is last[0]:
            return cast(L, value)  # checked when first returned
        checked = check_layer(f"{name}(t)", value, cls, d, when)
        last[0] = value
        return checked

    return at
