"""Exceptions raised by riccati_tf.

Every error says what is wrong in terms of the mathematics or the input, never an error code.
Bad input is an :class:`InvalidInputError` (a ``ValueError``); a numerical method that cannot
vouch for its answer raises :class:`SolverError` (a ``RuntimeError``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .reachability.lie import Accessibility

__all__ = ["InvalidInputError", "RankMismatchError", "SolverError", "UnreachableError"]


class InvalidInputError(ValueError):
    """Input that cannot describe a Gaussian, a layer or a time span.

    Raised by every entry point for input it refuses: a wrong shape, NaN or Inf entries, an
    asymmetric or indefinite covariance, a negative time, a value of the wrong type (strings,
    booleans, complex numbers; see `riccati_tf.state.validation`). The message names the
    argument and what is wrong with it.

    Parameters
    ----------
    *args : object
        The message (one string), as for ``ValueError``.

    Raises
    ------
    InvalidInputError
        Raised by the entry points, never by its own construction.

    See Also
    --------
    SolverError : a numerical failure on valid input.
    RankMismatchError : covariances of different rank, which no control connects.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures" (what
       the parameters and states are).

    Examples
    --------
    >>> from riccati_tf import Gaussian
    >>> from riccati_tf.errors import InvalidInputError
    >>> try:
    ...     Gaussian([0.0], [[-1.0]])
    ... except InvalidInputError as exc:
    ...     print(exc)
    cov is not positive semidefinite: ...
    """


class RankMismatchError(InvalidInputError):
    """Two covariances of different rank, which no control can connect.

    rank Σ(t) is invariant under the flow: Σ(t) = Φ(t) Σ0 Φ(t)ᵀ with Φ(t) invertible (SPEC §3),
    so no plan steers N(m0, Σ0) to N(m1, Σ1) when rank Σ0 ≠ rank Σ1.

    Parameters
    ----------
    *args : object
        The message (one string), as for ``ValueError``.

    Raises
    ------
    RankMismatchError
        Raised by `riccati_tf.steer`, never by its own construction.

    See Also
    --------
    UnreachableError : a target of the same rank that the controls cannot reach.
    riccati_tf.steer : the steering problem that raises it.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §3 "Rank invariance".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf import Gaussian, steer
    >>> from riccati_tf.errors import RankMismatchError
    >>> start = Gaussian([0.0, 0.0], np.eye(2))
    >>> target = Gaussian([0.0, 0.0], np.diag([1.0, 0.0]))
    >>> try:
    ...     steer(start, target, 1.0)
    ... except RankMismatchError as exc:
    ...     print(exc)
    rank Σ0 = 2 but rank Σ1 = 1: ...
    """


class UnreachableError(InvalidInputError):
    """A target that the requested controls cannot reach.

    `start` and `target` carry the accessibility results (Lie-bracket ranks, SPEC §4) that
    prove it (the ranks differ: the rank is constant along orbits) or suggest it (the rank is
    below the dimension of the state manifold).

    Parameters
    ----------
    message : str
        What is unreachable and why.
    start : Accessibility or None, optional
        The Lie-algebra rank at the start (`riccati_tf.reachability.lie.accessibility_rank`).
    target : Accessibility or None, optional
        The Lie-algebra rank at the target.

    Raises
    ------
    UnreachableError
        Raised by `riccati_tf.steer`, never by its own construction.

    See Also
    --------
    RankMismatchError : covariances of different rank.
    riccati_tf.steer : the steering problem that raises it.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §4 "Reachability (time-varying controls)".
    .. [2] Jurdjevic, V., "Geometric Control Theory", Cambridge University Press, 1997.

    Examples
    --------
    Without a bias, affine controls cannot move a mean that starts at 0:

    >>> from riccati_tf import Gaussian, steer
    >>> from riccati_tf.errors import UnreachableError
    >>> try:
    ...     steer(Gaussian([0.0], [[1.0]]), Gaussian([1.0], [[2.0]]), 1.0,
    ...           controls="affine-nobias")
    ... except UnreachableError as exc:
    ...     print(exc.start.rank, exc.start.full)
    1 False
    """

    def __init__(self, message: str, start: Accessibility | None = None,
                 target: Accessibility | None = None) -> None:
        super().__init__(message)
        self.start = start
        self.target = target


class SolverError(RuntimeError):
    """A numerical method could not return an answer it can vouch for.

    Raised for an eigenvalue on the imaginary axis, a failed factorisation, overflow, a spent
    work budget (`max_steps`) or no convergence; the message says which. Input that is itself
    wrong is an `InvalidInputError` instead.

    Parameters
    ----------
    *args : object
        The message (one string), as for ``RuntimeError``.

    Raises
    ------
    SolverError
        Raised by the solvers, never by its own construction.

    See Also
    --------
    InvalidInputError : input refused before any work.
    riccati_tf.flow : refuses a state it cannot vouch for with this error.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".

    Examples
    --------
    An explicit Runge–Kutta method on a stiff layer needs more steps than it is given:

    >>> import numpy as np
    >>> from riccati_tf import Gaussian, Params, flow
    >>> from riccati_tf.errors import SolverError
    >>> try:
    ...     flow(Params(-100.0 * np.eye(1)), Gaussian([0.0], [[1.0]]), 1.0, method="rk",
    ...          max_steps=1)
    ... except SolverError as exc:
    ...     print(exc)
    the Runge–Kutta method needs at least about 25 steps ...
    """
