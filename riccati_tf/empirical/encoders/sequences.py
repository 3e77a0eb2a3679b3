"""Tokens at the embedding output as sequences, and the files real tokens are read from.

Attention acts within one sequence, so each sequence is its own empirical measure μ_s; the N
tokens drawn i.i.d. from one Gaussian are cut into ⌈N / limit⌉ consecutive sequences of lengths
differing by at most one, and the statistics of a layer pool the tokens of all sequences. Real
inputs keep their own lengths: passages of a text file (one a line), token-id sequences (.npy)
or captured hidden states of the embedding output (.npz), a sequence longer than the model's
position limit being cut into chunks within it (`Inputs`, `data_inputs`; the model-dependent
steps, tokenizing and embedding, are in `loading`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import InvalidInputError
from ...state.validation import as_count

__all__ = ["GAUSSIAN_INPUTS", "INPUT_KINDS", "Inputs", "check_input_files", "data_inputs",
           "read_hidden", "read_passages", "read_token_ids", "sequence_lengths"]


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


def _path(name: str, path: str | Path, suffix: str) -> Path:
    """The file at path, refused when it is not a readable file."""
    if not isinstance(path, str | Path):
        raise InvalidInputError(f"{name} must be a path, got {type(path).__name__}")
    p = Path(path)
    try:
        ok = p.is_file()
    except OSError:
        ok = False
    if not ok:
        raise InvalidInputError(f"{name} {str(path)!r} is not a file ({suffix})")
    return p


def read_passages(path: str | Path) -> list[str]:
    """The passages of a UTF-8 text file, one a line (blank lines skipped).

    Parameters
    ----------
    path : str or pathlib.Path
        The text file.

    Returns
    -------
    list of str
        The non-blank lines, stripped.

    Raises
    ------
    InvalidInputError
        If the file does not exist, is not UTF-8 text, or holds no passage.

    See Also
    --------
    riccati_tf.empirical.encoders.loading.model_inputs : tokenizes them.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from riccati_tf.empirical.encoders.sequences import read_passages
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     f = pathlib.Path(tmp) / "text.txt"
    ...     _ = f.write_text("One passage.\\n\\n  Another one.  \\n")
    ...     read_passages(f)
    ['One passage.', 'Another one.']
    """
    p = _path("text", path, "one passage a line")
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"text {str(path)!r} cannot be read as UTF-8 text "
                                f"({type(exc).__name__})") from None
    passages = [line.strip() for line in lines if line.strip()]
    if not passages:
        raise InvalidInputError(f"text {str(path)!r} holds no passage (every line is blank)")
    return passages


def read_token_ids(path: str | Path) -> list[np.ndarray]:
    """The token-id sequences of a .npy file: a 2-D integer array (one row a sequence), a 1-D
    one (one sequence) or a 1-D object array of 1-D integer arrays (ragged sequences).

    Parameters
    ----------
    path : str or pathlib.Path
        The .npy file.

    Returns
    -------
    list of (n_s,) ndarray of int64
        The sequences, each non-empty.

    Raises
    ------
    InvalidInputError
        If the file cannot be read as .npy, is empty, holds an empty sequence, or holds
        anything but non-negative integers.

    See Also
    --------
    riccati_tf.empirical.encoders.loading.model_inputs : embeds them.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders.sequences import read_token_ids
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     f = pathlib.Path(tmp) / "ids.npy"
    ...     ragged = np.empty(2, dtype=object)
    ...     ragged[0], ragged[1] = np.array([2, 7, 3]), np.array([2, 3])
    ...     np.save(f, ragged, allow_pickle=True)
    ...     [s.tolist() for s in read_token_ids(f)]
    [[2, 7, 3], [2, 3]]
    """
    p = _path("tokens", path, ".npy of token ids")
    try:
        arr = np.load(p, allow_pickle=True)
    except (OSError, ValueError, EOFError) as exc:
        raise InvalidInputError(f"tokens {str(path)!r} cannot be read as a .npy array "
                                f"({type(exc).__name__})") from None
    if not isinstance(arr, np.ndarray):
        raise InvalidInputError(f"tokens {str(path)!r} holds a {type(arr).__name__}, not a .npy "
                                f"array of token ids")
    rows = (list(arr) if arr.dtype == object or arr.ndim == 2 else [arr] if arr.ndim == 1
            else None)
    if rows is None:
        raise InvalidInputError(f"tokens {str(path)!r}: a {arr.ndim}-D array; token ids are one "
                                f"row a sequence (2-D) or an object array of sequences")
    if not rows:
        raise InvalidInputError(f"tokens {str(path)!r} holds no sequence")
    out = []
    for i, row in enumerate(rows):
        r = np.asarray(row)
        if r.ndim != 1 or r.size == 0:
            raise InvalidInputError(f"tokens {str(path)!r}: sequence {i + 1} is not a non-empty "
                                    f"1-D array of ids (shape {r.shape})")
        if r.dtype.kind not in "iu" or np.any(r < 0):
            raise InvalidInputError(f"tokens {str(path)!r}: sequence {i + 1} holds "
                                    f"{'negative ids' if r.dtype.kind in 'iu' else r.dtype} "
                                    f"(token ids are non-negative integers)")
        out.append(r.astype(np.int64))
    return out


def read_hidden(path: str | Path) -> list[np.ndarray]:
    """The hidden-state sequences of a .npz file: every array is one sequence (n_s, d) or a
    batch (S, n, d) of sequences, in the file's order; an array named "lengths" (integers)
    cuts a single (n, d) array into consecutive sequences instead.

    Parameters
    ----------
    path : str or pathlib.Path
        The .npz file (e.g. numpy.savez of captured embedding outputs).

    Returns
    -------
    list of (n_s, d) ndarray of float
        The sequences (not yet checked for finiteness or dimension: `data_inputs`,
        `loading.model_inputs`).

    Raises
    ------
    InvalidInputError
        If the file cannot be read as .npz, holds no array, an array that is not 2-D or 3-D
        real numbers, or lengths that do not add up to the rows.

    See Also
    --------
    riccati_tf.empirical.encoders.loading.model_inputs : checks them against the model.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders.sequences import read_hidden
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     f = pathlib.Path(tmp) / "h.npz"
    ...     np.savez(f, states=np.zeros((5, 4)), lengths=np.array([2, 3]))
    ...     [s.shape for s in read_hidden(f)]
    [(2, 4), (3, 4)]
    """
    p = _path("hidden", path, ".npz of hidden states")
    try:
        with np.load(p, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
    except (OSError, ValueError, EOFError) as exc:
        raise InvalidInputError(f"hidden {str(path)!r} cannot be read as a .npz file "
                                f"({type(exc).__name__}: {str(exc).splitlines()[0][:80]})"
                                ) from None
    lengths = arrays.pop("lengths", None)
    if not arrays:
        raise InvalidInputError(f"hidden {str(path)!r} holds no array of hidden states")
    out: list[np.ndarray] = []
    for name, a in arrays.items():
        if a.dtype.kind not in "fiu" or a.ndim not in (2, 3) or a.size == 0:
            raise InvalidInputError(f"hidden {str(path)!r}: array {name!r} of shape {a.shape} "
                                    f"and dtype {a.dtype} is not a non-empty (n, d) or (S, n, d) "
                                    f"array of real numbers")
        out.extend([a.astype(float)] if a.ndim == 2 else list(a.astype(float)))
    if lengths is not None:
        lengths = np.asarray(lengths)
        if (len(out) != 1 or lengths.ndim != 1 or lengths.dtype.kind not in "iu"
                or np.any(lengths < 1) or lengths.sum() != out[0].shape[0]):
            raise InvalidInputError(f"hidden {str(path)!r}: 'lengths' must be positive integers "
                                    f"adding up to the rows of the single (n, d) array")
        out = split(out[0], tuple(int(v) for v in lengths))
    return out


def check_input_files(*, text: str | Path | None = None, tokens: str | Path | None = None,
                      hidden: str | Path | None = None, gaussian: str | None = None) -> None:
    """The checks of `loading.model_inputs` that need no model, run before a model is loaded.

    At most one of text, tokens and hidden, each an existing file, and gaussian None or in
    GAUSSIAN_INPUTS.

    Parameters
    ----------
    text, tokens, hidden : str or pathlib.Path, optional
        The input files (`loading.model_inputs`).
    gaussian : {"matched", "standard"}, optional
        The Gaussian inputs asked for.

    Raises
    ------
    InvalidInputError
        Naming the option: more than one file, a path that is not a file, an unknown gaussian.

    See Also
    --------
    riccati_tf.empirical.encoders.loading.model_inputs : reads the files for a model.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> from riccati_tf.empirical.encoders.sequences import check_input_files
    >>> check_input_files(gaussian="standard")
    >>> check_input_files(text="no/such/file.txt")
    Traceback (most recent call last):
        ...
    riccati_tf.errors.InvalidInputError: text 'no/such/file.txt' is not a file (one passage a line)
    """
    given = [k for k, v in (("text", text), ("tokens", tokens), ("hidden", hidden))
             if v is not None]
    if len(given) > 1:
        raise InvalidInputError(f"give at most one of text, tokens and hidden, got "
                                f"{' and '.join(given)}")
    if gaussian is not None and gaussian not in GAUSSIAN_INPUTS:
        raise InvalidInputError(f"gaussian must be one of {GAUSSIAN_INPUTS}, got {gaussian!r}")
    for name, value, what in (("text", text, "one passage a line"),
                              ("tokens", tokens, ".npy of token ids"),
                              ("hidden", hidden, ".npz of hidden states")):
        if value is not None:
            _path(name, value, what)
