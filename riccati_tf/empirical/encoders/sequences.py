"""N tokens as several sequences when the model has a position limit.

Attention acts within one sequence, so each sequence is its own empirical measure μ_s; the N
tokens drawn i.i.d. from one Gaussian are cut into ⌈N / limit⌉ consecutive sequences of lengths
differing by at most one, and the statistics of a layer pool the tokens of all sequences.
"""

from __future__ import annotations

import numpy as np

from ...state.validation import as_count


def sequence_lengths(n_tokens: int, limit: int | None) -> tuple[int, ...]:
    """Lengths of the ⌈n_tokens / limit⌉ sequences (as equal as possible, each ≤ limit; one
    sequence when limit is None)."""
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
