"""N tokens as several sequences when the model has a position limit.

Attention acts within one sequence, so each sequence is its own empirical measure μ_s; the N
tokens drawn i.i.d. from one Gaussian are cut into ⌈N / limit⌉ consecutive sequences of lengths
differing by at most one, and the statistics of a layer pool the tokens of all sequences.
"""

from __future__ import annotations

import numpy as np

from ...state.validation import as_count

__all__ = ["sequence_lengths"]


def sequence_lengths(n_tokens: int, limit: int | None) -> tuple[int, ...]:
    """Lengths of the ⌈n_tokens / limit⌉ sequences the tokens are cut into.

    Attention acts within one sequence, so each sequence is its own empirical measure μ_s; the
    lengths are as equal as possible (differing by at most one), each ≤ limit.

    Parameters
    ----------
    n_tokens : int
        All tokens, ≥ 1.
    limit : int or None
        The most tokens one sequence may hold (`position_limit`); None for no limit.

    Returns
    -------
    tuple of int
        The lengths, summing to n_tokens; (n_tokens,) when limit is None.

    Raises
    ------
    InvalidInputError
        If n_tokens or limit is not a positive integer.

    See Also
    --------
    position_limit : the limit of a model.
    compare : feeds the sequences to the model.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> from riccati_tf.empirical.encoders import sequence_lengths
    >>> sequence_lengths(1025, 512), sequence_lengths(1000, 512), sequence_lengths(7, None)
    ((342, 342, 341), (500, 500), (7,))
    """
    n_tokens = as_count("n_tokens", n_tokens)
    if limit is None:
        return (n_tokens,)
    limit = as_count("limit", limit)
    n_seq = -(-n_tokens // limit)
    base, extra = divmod(n_tokens, n_seq)
    return tuple(base + 1 if i < extra else base for i in range(n_seq))


def split(tokens: np.ndarray, lengths: tuple[int, ...]) -> list[np.ndarray]:
    """The rows of tokens cut into consecutive blocks of the given lengths."""
    return np.split(tokens, np.cumsum(lengths)[:-1])
