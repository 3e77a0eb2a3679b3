"""Tokens at the embedding output as sequences.

Attention acts within one sequence, so each sequence is its own empirical measure μ_s; the N
tokens drawn i.i.d. from one Gaussian are cut into ⌈N / limit⌉ consecutive sequences of lengths
differing by at most one, and the statistics of a layer pool the tokens of all sequences. Real
inputs keep their own lengths: passages of a text file (one a line), token-id sequences (.npy, .npz)
or captured hidden states of the embedding output (.npz), a sequence longer than the model's
position limit being cut into chunks within it (`Inputs`, `data_inputs`; the model-dependent
steps, tokenizing and embedding, are in `loading`; the files are read by `inputfiles`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import InvalidInputError
from ...state.validation import as_count

__all__ = ["GAUSSIAN_INPUTS", "INPUT_KINDS", "Inputs", "data_inputs", "sequence_lengths"]


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


#: where the tokens at the embedding output come from (`Inputs.kind`)
INPUT_KINDS = ("text", "tokens", "hidden", "gaussian")
#: how Gaussian input tokens are drawn (`loading.model_inputs`): "matched" to the embedding
#: output's moments, or "standard" N(0, I)
GAUSSIAN_INPUTS = ("matched", "standard")


def _frozen(*arrays: np.ndarray) -> None:
    for a in arrays:
        a.setflags(write=False)


@dataclass(frozen=True, eq=False)
class Inputs:
    """Tokens at the embedding output of an encoder, in sequences, with the moments of them
    that a Gaussian prediction starts from (SPEC §7).

    Attention acts within one sequence, so sequence s (rows lengths[0] + … + lengths[s−1] on
    of `tokens`) is its own empirical measure μ_s; (mean, cov) are the pooled moments
    m = (1/n) Σ_i x_i, C = (1/(n − 1)) Σ_i (x_i − m)(x_i − m)ᵀ of real tokens, or the
    parameters of the Gaussian the tokens were drawn from.

    Parameters
    ----------
    tokens : (n, d) ndarray
        The embedding outputs of all sequences, stacked.
    lengths : tuple of int
        The sequence lengths (summing to n), each within the model's position limit.
    mean : (d,) ndarray
        The mean a prediction starts from.
    cov : (d, d) ndarray
        The covariance a prediction starts from.
    kind : {"text", "tokens", "hidden", "gaussian"}
        Real text, token ids, captured hidden states, or Gaussian tokens (INPUT_KINDS).
    source : str
        What they are: the file read, or the law the Gaussian tokens were drawn from and where
        its moments come from.
    notes : tuple of str
        What was done to fit the model (sequences cut at the position limit, sequences left
        out), one sentence each.

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field (the arrays are read-only).

    See Also
    --------
    riccati_tf.empirical.encoders.loading.model_inputs : builds them for a model.
    data_inputs : from sequences of embedding outputs.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders.sequences import data_inputs
    >>> x = np.arange(12.0).reshape(6, 2)
    >>> inputs = data_inputs("hidden", "states.npz", [x[:2], x[2:]])
    >>> inputs.lengths, inputs.mean.tolist(), inputs.describe()
    ((2, 4), [5.0, 6.0], 'hidden states.npz: 6 tokens in 2 sequences of 2–4 tokens')
    """

    tokens: np.ndarray
    lengths: tuple[int, ...]
    mean: np.ndarray
    cov: np.ndarray
    kind: str
    source: str
    notes: tuple[str, ...] = ()

    def __post_init__(self):
        _frozen(self.tokens, self.mean, self.cov)

    @property
    def n_tokens(self) -> int:
        """All tokens n."""
        return int(self.tokens.shape[0])

    @property
    def real(self) -> bool:
        """Whether the tokens are the model's own (text, token ids or hidden states)."""
        return self.kind != "gaussian"

    def describe(self) -> str:
        """One line: what the tokens are, how many, in which sequences, and the notes."""
        n_seq = len(self.lengths)
        span = (f"{self.lengths[0]}" if min(self.lengths) == max(self.lengths) else
                f"{min(self.lengths)}–{max(self.lengths)}")
        return (f"{self.kind} {self.source}: {self.n_tokens} tokens in {n_seq} sequence"
                f"{'s' * (n_seq > 1)} of {span} tokens" + "".join(f"; {n}" for n in self.notes))

    def to_json(self) -> dict[str, Any]:
        """The JSON-ready description: kind, source, counts, lengths, trace of cov, notes."""
        return {"kind": self.kind, "source": self.source, "n_tokens": self.n_tokens,
                "sequences": len(self.lengths), "lengths": list(self.lengths),
                "trace": float(np.trace(self.cov)), "notes": list(self.notes),
                "description": self.describe()}


def within_limit(sequences: list[np.ndarray], limit: int | None, what: str = "sequence"
                 ) -> tuple[list[np.ndarray], tuple[str, ...]]:
    """The sequences with every one longer than `limit` cut into ⌈n_s / limit⌉ consecutive
    chunks of lengths differing by at most one (`sequence_lengths`), each its own sequence, and
    a note saying how many were cut (no note when none was)."""
    if limit is None:
        return list(sequences), ()
    out: list[np.ndarray] = []
    cut = 0
    for seq in sequences:
        if seq.shape[0] > limit:
            cut += 1
            out.extend(split(seq, sequence_lengths(seq.shape[0], limit)))
        else:
            out.append(seq)
    if not cut:
        return out, ()
    return out, (f"{cut} {what}{'s' * (cut > 1)} longer than the position limit {limit} cut "
                 f"into chunks of ≤ {limit} tokens, each its own sequence",)


def at_most(sequences: list[np.ndarray], max_tokens: int | None, what: str = "sequence"
            ) -> tuple[list[np.ndarray], tuple[str, ...]]:
    """The first sequences whose lengths add up to at most max_tokens (at least the first,
    itself cut to max_tokens), and a note when some were left out."""
    if max_tokens is None or sum(s.shape[0] for s in sequences) <= max_tokens:
        return list(sequences), ()
    kept: list[np.ndarray] = []
    total = 0
    for seq in sequences:
        if total + seq.shape[0] > max_tokens:
            break
        kept.append(seq)
        total += seq.shape[0]
    if not kept:
        kept, total = [sequences[0][:max_tokens]], max_tokens
    return kept, (f"the first {len(kept)} of {len(sequences)} {what}s used ({total} tokens; at "
                  f"most {max_tokens})",)


def data_inputs(kind: str, source: str, sequences: list[np.ndarray],
                notes: tuple[str, ...] = ()) -> Inputs:
    """`Inputs` of real tokens: the sequences stacked, their lengths and pooled moments.

    m = (1/n) Σ_i x_i and C = (1/(n − 1)) Σ_i (x_i − m)(x_i − m)ᵀ over all n tokens of all
    sequences: the Gaussian a prediction for these tokens starts from.

    Parameters
    ----------
    kind : {"text", "tokens", "hidden"}
        What the sequences are (INPUT_KINDS).
    source : str
        The file they come from (reported).
    sequences : list of (n_s, d) ndarray
        The embedding outputs of each sequence, each finite, n_s ≥ 1.
    notes : tuple of str, optional
        Notes carried into the result.

    Returns
    -------
    Inputs
        The stacked tokens, lengths, moments, kind, source and notes.

    Raises
    ------
    InvalidInputError
        If there is no sequence, the dimensions differ, fewer than 2 tokens are given, or a
        token holds NaN or Inf (the sequence and position named).

    See Also
    --------
    Inputs : the fields.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders.sequences import data_inputs
    >>> data_inputs("hidden", "x.npz", [np.array([[0.0, np.nan], [1.0, 2.0]])])
    Traceback (most recent call last):
        ...
    riccati_tf.errors.InvalidInputError: hidden x.npz: sequence 1 holds NaN or Inf (first at ...
    """
    if kind not in INPUT_KINDS[:-1]:
        raise InvalidInputError(f"kind must be one of {INPUT_KINDS[:-1]}, got {kind!r}")
    if not sequences:
        raise InvalidInputError(f"{kind} {source}: no sequence")
    dims = {s.shape[1] for s in sequences}
    if len(dims) > 1:
        raise InvalidInputError(f"{kind} {source}: the sequences have different dimensions "
                                f"{sorted(dims)}")
    for i, s in enumerate(sequences):
        bad = np.argwhere(~np.isfinite(s))
        if bad.size:
            raise InvalidInputError(f"{kind} {source}: sequence {i + 1} holds NaN or Inf (first "
                                    f"at token {bad[0][0] + 1}, coordinate {bad[0][1] + 1})")
    tokens = np.vstack(sequences).astype(float)
    if tokens.shape[0] < 2:
        raise InvalidInputError(f"{kind} {source}: {tokens.shape[0]} token; the moments need "
                                f"at least 2")
    cov = np.atleast_2d(np.cov(tokens.T))
    return Inputs(tokens, tuple(int(s.shape[0]) for s in sequences), tokens.mean(axis=0),
                  0.5 * (cov + cov.T), kind, source, tuple(notes))
