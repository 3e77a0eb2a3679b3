"""Exceptions raised by riccati_tf.

Every error says what is wrong in terms of the mathematics or the input, never an error code.
"""


class InvalidInputError(ValueError):
    """Input that cannot describe a Gaussian, a layer or a time span (shape, symmetry,
    definiteness, NaN/Inf, negative time, ...)."""


class RankMismatchError(InvalidInputError):
    """Two covariances of different rank: rank Σ(t) is invariant under the flow (SPEC §3), so no
    control can connect them."""


class UnreachableError(InvalidInputError):
    """The target is not reachable with the requested controls; `start` and `target` carry the
    accessibility results (Lie-bracket ranks, SPEC §4) that prove (rank mismatch) or suggest
    (rank deficiency) it."""

    def __init__(self, message: str, start=None, target=None):
        super().__init__(message)
        self.start = start
        self.target = target


class SolverError(RuntimeError):
    """A numerical method could not return an answer it can vouch for (an eigenvalue on the
    imaginary axis, a failed factorisation, overflow, no convergence)."""
