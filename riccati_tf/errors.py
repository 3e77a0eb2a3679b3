"""Exceptions raised by riccati_tf.

Every error says what is wrong in terms of the mathematics or the input, never an error code.
"""


class InvalidInputError(ValueError):
    """Input that cannot describe a Gaussian, a layer or a time span (shape, symmetry,
    definiteness, NaN/Inf, negative time, ...)."""


class RankMismatchError(InvalidInputError):
    """Two covariances of different rank: rank Σ(t) is invariant under the flow (SPEC §3), so no
    control can connect them."""


class SolverError(RuntimeError):
    """A numerical method could not return an answer it can vouch for (an eigenvalue on the
    imaginary axis, a failed factorisation, overflow, no convergence)."""
