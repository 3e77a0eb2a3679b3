"""The files real tokens are read from: passages of text, token ids, hidden states.

Three kinds of file, one for each of `loading.model_inputs`'s text, tokens and hidden (the
command line's --text, --tokens and --hidden):

    text     UTF-8 text, one passage a line (blank lines skipped)
    tokens   a .npy of integer ids: (n,) one sequence, (S, n) one row a sequence; or a .npz
             of such arrays, in its order (numpy.savez), where an array named "lengths" cuts
             a single (n,) array into consecutive sequences (ragged sequences)
    hidden   a .npz of embedding outputs: (n, d) one sequence, (S, n, d) a batch; "lengths"
             cuts a single (n, d) array

No file is ever unpickled (`riccati_tf.io.arrays`): an object array, the way numpy stores
ragged sequences, is refused from its header. A file of the wrong kind is refused naming the
option and the kind expected; `check_input_files` runs every check that needs no model (the
file's kind, container, dtype and shape from the headers, no data read) before one is loaded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import InvalidInputError
from ...io.arrays import (
    NPY_MAGIC,
    PICKLE_MAGIC,
    ZIP_MAGIC,
    ArrayHeader,
    file_kind,
    read_arrays,
    read_headers,
)
from ...io.files import read_regular
from .sequences import GAUSSIAN_INPUTS, split

__all__ = ["EXPECTED", "check_input_files", "read_hidden", "read_passages", "read_token_ids"]

#: what each input file must be, as refusals name it
EXPECTED = {
    "text": "UTF-8 text, one passage a line",
    "tokens": "a .npy of integer token ids ((n,) one sequence, (S, n) one row a sequence) or a "
              ".npz of such arrays (numpy.savez; ragged sequences as one (n,) array and "
              "'lengths')",
    "hidden": "a .npz of hidden states (numpy.savez of real (n, d) or (S, n, d) arrays; "
              "'lengths' cuts one (n, d) array)"}
#: the largest token id an int64 holds (a uint64 id above it is no vocabulary's)
MAX_ID = int(np.iinfo(np.int64).max)


@dataclass(frozen=True)
class _Layout:
    """How the arrays of a file of sequences are laid out: a sequence has `rank` axes, a batch
    one more; dtypes of `kinds`; the containers accepted."""

    rank: int
    kinds: str
    containers: tuple[str, ...]
    items: str


LAYOUTS = {"tokens": _Layout(1, "iu", ("npy", "npz"), "integer token ids"),
           "hidden": _Layout(2, "fiu", ("npz",), "real numbers")}


def label(name: str, path: object) -> str:
    """How refusals name an input file: its keyword, path and command-line option."""
    return f"{name} {str(path)!r} (--{name})"


def _refuse(name: str, path: object, problem: str) -> InvalidInputError:
    return InvalidInputError(f"{label(name, path)}: {problem}; expected {EXPECTED[name]}")


def _check_path(name: str, path: object) -> None:
    if not isinstance(path, str | Path) or str(path) == "":
        raise InvalidInputError(f"{name} must be a file path, got {path!r}")


def _check_layout(name: str, path: str | Path, heads: Sequence[ArrayHeader]) -> None:
    """Refuse arrays of the wrong dtype or shape, and a 'lengths' that cannot cut them (from
    the headers alone)."""
    lay = LAYOUTS[name]
    arrays = [h for h in heads if h.name != "lengths"]
    lengths = next((h for h in heads if h.name == "lengths"), None)
    if not arrays:
        raise _refuse(name, path, "holds no array but 'lengths'")
    for h in arrays:
        called = f"array {h.name!r}" if h.name else "the array"
        if h.dtype.kind not in lay.kinds or len(h.shape) not in (lay.rank, lay.rank + 1):
            raise _refuse(name, path, f"{called} has shape {h.shape} and dtype {h.dtype}, not "
                                      f"{lay.rank}-D or {lay.rank + 1}-D {lay.items}")
        if 0 in h.shape:
            raise _refuse(name, path, f"{called} of shape {h.shape} is empty")
    if lengths is not None and (len(arrays) != 1 or len(arrays[0].shape) != lay.rank
                                or lengths.dtype.kind not in "iu" or len(lengths.shape) != 1):
        raise _refuse(name, path, f"'lengths' ({lengths.shape}, {lengths.dtype}) cuts a single "
                                  f"{lay.rank}-D array into sequences: it must be 1-D integers "
                                  f"beside exactly one such array")


def _sequences(name: str, path: str | Path) -> list[np.ndarray]:
    """The sequences of a tokens or hidden file, in its order, 'lengths' applied."""
    lay = LAYOUTS[name]
    arrays = read_arrays(path, label(name, path), EXPECTED[name], lay.containers)
    _check_layout(name, path, [ArrayHeader(k, a.shape, a.dtype) for k, a in arrays.items()])
    lengths = arrays.pop("lengths", None)
    out: list[np.ndarray] = []
    for a in arrays.values():
        out.extend([a] if a.ndim == lay.rank else list(a))
    if lengths is not None:
        total = out[0].shape[0]
        if np.any(lengths < 1) or int(lengths.sum(dtype=object)) != total:
            raise _refuse(name, path, f"'lengths' must be positive integers adding up to the "
                                      f"{total} rows of the array it cuts")
        out = split(out[0], tuple(int(v) for v in lengths))
    return out


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
        Naming the option (--text) and the kind expected: the path is missing or not a
        regular file, the file is empty, not UTF-8, binary (holds NUL bytes), or holds no
        passage.

    See Also
    --------
    riccati_tf.empirical.encoders.loading.model_inputs : tokenizes them.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from riccati_tf.empirical.encoders.inputfiles import read_passages
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     f = pathlib.Path(tmp) / "text.txt"
    ...     _ = f.write_text("One passage.\\n\\n  Another one.  \\n")
    ...     read_passages(f)
    ['One passage.', 'Another one.']
    """
    _check_path("text", path)
    try:
        data = read_regular(path)
    except FileNotFoundError:
        raise _refuse("text", path, "no such file") from None
    except OSError as exc:
        raise _refuse("text", path, f"cannot be read ({exc.strerror or exc})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        binary = data.startswith((NPY_MAGIC, *ZIP_MAGIC, PICKLE_MAGIC))
        raise _refuse("text", path, f"is {file_kind(data[:8])}" if binary else
                      f"is not UTF-8 (byte {exc.start + 1} is "
                      f"{data[exc.start:exc.start + 1]!r})") from None
    if "\x00" in text:
        raise _refuse("text", path, "holds NUL bytes: a binary file, not text")
    passages = [line.strip() for line in text.splitlines() if line.strip()]
    if not passages:
        raise _refuse("text", path, "is empty (0 bytes)" if not data else
                      "holds no passage (every line is blank)")
    return passages


def read_token_ids(path: str | Path) -> list[np.ndarray]:
    """The token-id sequences of a .npy or .npz file (module docstring: the layouts).

    Parameters
    ----------
    path : str or pathlib.Path
        The .npy file ((n,) one sequence, (S, n) one row a sequence) or .npz file (such arrays
        in its order; "lengths" cutting a single (n,) array into ragged sequences).

    Returns
    -------
    list of (n_s,) ndarray of int64
        The sequences, each non-empty.

    Raises
    ------
    InvalidInputError
        Naming the option (--tokens) and the kind expected: a file of the wrong kind (missing,
        a folder, empty, text, a pickle, truncated, an object array: never unpickled), ids
        that are not integers, an empty sequence, lengths that do not add up, or an id
        outside [0, 2⁶³ − 1] (the value read, its sequence and position named).

    See Also
    --------
    riccati_tf.empirical.encoders.loading.model_inputs : embeds them.
    riccati_tf.io.arrays.read_arrays : reads the file without unpickling.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders.inputfiles import read_token_ids
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     f = pathlib.Path(tmp) / "ids.npz"
    ...     np.savez(f, ids=np.array([2, 7, 3, 2, 3]), lengths=np.array([3, 2]))
    ...     [s.tolist() for s in read_token_ids(f)]
    [[2, 7, 3], [2, 3]]
    """
    _check_path("tokens", path)
    out = []
    for i, seq in enumerate(_sequences("tokens", path)):
        bad = np.flatnonzero((seq < 0) | (seq > MAX_ID))
        if bad.size:
            value = int(seq[bad[0]])
            raise _refuse("tokens", path, f"token id {value} (sequence {i + 1}, position "
                                          f"{bad[0] + 1}) is "
                                          + ("negative" if value < 0 else
                                             "above 2⁶³ − 1, no vocabulary's"))
        out.append(seq.astype(np.int64))
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
        The sequences (not yet checked for finiteness or dimension: `sequences.data_inputs`,
        `loading.model_inputs`).

    Raises
    ------
    InvalidInputError
        Naming the option (--hidden) and the kind expected: a file of the wrong kind (a .npy,
        missing, a folder, empty, text, truncated, an object array: never unpickled), an
        array that is not 2-D or 3-D real numbers, or lengths that do not add up.

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
    >>> from riccati_tf.empirical.encoders.inputfiles import read_hidden
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     f = pathlib.Path(tmp) / "h.npz"
    ...     np.savez(f, states=np.zeros((5, 4)), lengths=np.array([2, 3]))
    ...     [s.shape for s in read_hidden(f)]
    [(2, 4), (3, 4)]
    """
    _check_path("hidden", path)
    return [s.astype(float) for s in _sequences("hidden", path)]


def check_input_files(*, text: str | Path | None = None, tokens: str | Path | None = None,
                      hidden: str | Path | None = None, gaussian: str | None = None) -> None:
    """The checks of `loading.model_inputs` that need no model, run before a model is loaded.

    At most one of text, tokens and hidden; gaussian None or in GAUSSIAN_INPUTS; the file of
    the right kind: text readable as passages (`read_passages`), token ids read in full
    (`read_token_ids`: small files), hidden states of the right container, dtype and shape
    from their headers (`riccati_tf.io.arrays.read_headers`: no data read). Nothing is
    unpickled.

    Parameters
    ----------
    text, tokens, hidden : str or pathlib.Path, optional
        The input files (`loading.model_inputs`).
    gaussian : {"matched", "standard"}, optional
        The Gaussian inputs asked for.

    Raises
    ------
    InvalidInputError
        Naming the option: more than one file, a file of the wrong kind, an unknown gaussian.

    See Also
    --------
    riccati_tf.empirical.encoders.loading.model_inputs : reads the files for a model.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> from riccati_tf.empirical.encoders.inputfiles import check_input_files
    >>> check_input_files(gaussian="standard")
    >>> check_input_files(text="no/such/file.txt")
    Traceback (most recent call last):
        ...
    riccati_tf.errors.InvalidInputError: text 'no/such/file.txt' (--text): no such file; ...
    """
    given = [k for k, v in (("text", text), ("tokens", tokens), ("hidden", hidden))
             if v is not None]
    if len(given) > 1:
        raise InvalidInputError(f"give at most one of text, tokens and hidden, got "
                                f"{' and '.join(given)}")
    if gaussian is not None and gaussian not in GAUSSIAN_INPUTS:
        raise InvalidInputError(f"gaussian must be one of {GAUSSIAN_INPUTS}, got {gaussian!r}")
    if text is not None:
        read_passages(text)
    if tokens is not None:
        read_token_ids(tokens)
    if hidden is not None:
        _check_path("hidden", hidden)
        _check_layout("hidden", hidden, read_headers(hidden, label("hidden", hidden),
                                                     EXPECTED["hidden"], ("npz",)))
