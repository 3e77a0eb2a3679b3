"""Arrays from files the user names: .npy and .npz read without ever unpickling.

A .npy file is a header (magic, version, a Python-literal dict of dtype, order and shape) and
the raw data; a .npz file is a zip archive of .npy members. numpy stores an array of Python
objects (dtype object: ragged sequences, anything) as a pickle, and unpickling runs whatever
code the file names. These readers never unpickle: an object array (or a structured dtype
holding objects) is refused from its header, before its data is touched, with the reason. Every
other way a file can be of the wrong kind is named too, before any data is read:

    missing, a folder, a pipe or a device      what the path is
    empty                                      "is empty (0 bytes)"
    a .npz where a .npy is read, or the other  the container found
    a pickle, text, anything else              what its first bytes are
    a damaged header                           numpy's reason
    fewer data bytes than the header promises  "truncated": both counts

The header is read with numpy's own parser (`numpy.lib.format`, a literal evaluator, never
`eval`), and the data with `numpy.lib.format.read_array(..., allow_pickle=False)`, once the
byte count is known to be in the file.
"""

from __future__ import annotations

import math
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
from numpy.lib import format as npy_format

from ..errors import InvalidInputError
from .files import open_regular

__all__ = ["ArrayHeader", "file_kind", "read_arrays", "read_headers"]

#: the first bytes of a .npy file, of a zip archive (a .npz: a local file header, or the end
#: record of an empty archive) and of a Python pickle of protocol 2 or later
NPY_MAGIC = npy_format.MAGIC_PREFIX
ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")
PICKLE_MAGIC = b"\x80"
#: the containers a reader can expect
CONTAINERS = ("npy", "npz")


@dataclass(frozen=True)
class ArrayHeader:
    """What the header of one .npy array (a file, or a member of a .npz) says: its name, shape
    and dtype (the data not read).

    Parameters
    ----------
    name : str
        The member's name without ".npy" in a .npz; "" for a .npy file.
    shape : tuple of int
        The array's shape.
    dtype : numpy.dtype
        The array's dtype (never one holding Python objects: those are refused).

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field.

    See Also
    --------
    read_headers : the headers of a file.

    References
    ----------
    .. [1] NumPy Enhancement Proposal 1, "A simple file format for NumPy arrays".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.io.arrays import ArrayHeader
    >>> ArrayHeader("ids", (4, 512), np.dtype(np.int64)).nbytes
    16384
    """

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def nbytes(self) -> int:
        """The bytes of data the header promises: prod(shape) · itemsize."""
        return math.prod(self.shape) * self.dtype.itemsize


def file_kind(head: bytes) -> str:
    """What a file is, from its first bytes: a .npy file, a .npz archive, a pickle, text or
    another binary file (named in refusals).

    Parameters
    ----------
    head : bytes
        The file's first bytes (8 are enough).

    Returns
    -------
    str
        A phrase after "is": "a .npy file (one array; numpy.save)", "a .npz archive (…)",
        "a Python pickle (…)", "text, not a numpy file" or "not a numpy file (it starts with
        …)".

    Raises
    ------
    TypeError
        When head is not bytes.

    See Also
    --------
    read_arrays : names the kind of a file it refuses.

    References
    ----------
    .. [1] NumPy Enhancement Proposal 1 (the magic string ``\\x93NUMPY``); PKWARE, APPNOTE.TXT
       (zip signatures ``PK\\x03\\x04``, ``PK\\x05\\x06``); PEP 3154 (pickle protocols ≥ 2
       start with ``\\x80``).

    Examples
    --------
    >>> from riccati_tf.io.arrays import file_kind
    >>> file_kind(b"\\x80\\x04\\x95"), file_kind(b"1 2 3")
    ('a Python pickle (never unpickled: reading one can run code)', 'text, not a numpy file')
    """
    if not isinstance(head, bytes):
        raise TypeError(f"head must be bytes, got {type(head).__name__}")
    if head.startswith(NPY_MAGIC):
        return "a .npy file (one array; numpy.save)"
    if head.startswith(ZIP_MAGIC):
        return "a .npz archive (a zip of arrays; numpy.savez)"
    if head.startswith(PICKLE_MAGIC):
        return "a Python pickle (never unpickled: reading one can run code)"
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return f"not a numpy file (it starts with {head[:8]!r})"
    if "\x00" not in text:
        return "text, not a numpy file"
    return f"not a numpy file (it starts with {head[:8]!r})"


def _header(fh: IO[bytes], name: str) -> ArrayHeader:
    """The header of the .npy array at fh's position (ValueError when it is damaged)."""
    version = npy_format.read_magic(fh)
    if version == (1, 0):
        shape, _fortran, dtype = npy_format.read_array_header_1_0(fh)
    elif version == (2, 0):
        shape, _fortran, dtype = npy_format.read_array_header_2_0(fh)
    else:
        raise ValueError(f".npy format version {version[0]}.{version[1]} (structured data with "
                         f"non-Latin field names), not an array of numbers")
    return ArrayHeader(name, tuple(int(n) for n in shape), dtype)


def _refuse(what: str, expected: str, problem: str) -> InvalidInputError:
    return InvalidInputError(f"{what}: {problem}; expected {expected}")


def _npy(fh: IO[bytes], size: int, what: str, expected: str, name: str = ""
         ) -> tuple[ArrayHeader, int]:
    """(header, data offset) of the .npy array at fh's start, its data checked to be all there
    (`size` bytes in the array's file or member)."""
    member = f" member {name!r}" if name else ""
    try:
        head = _header(fh, name)
    except (ValueError, EOFError, SyntaxError) as exc:
        reason = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        raise _refuse(what, expected, f"the .npy header of{member or ' the file'} cannot be "
                                      f"read ({reason})") from None
    if head.dtype.hasobject:
        raise _refuse(what, expected, f"{member.lstrip() or 'the file'} holds Python objects "
                                      f"(dtype {head.dtype}), which numpy reads by unpickling "
                                      f"(running code the file names); never read")
    offset = fh.tell()
    if size - offset < head.nbytes:
        raise _refuse(what, expected, f"{member.lstrip() or 'the file'} is truncated: its "
                                      f"header promises {head.nbytes} bytes of data for shape "
                                      f"{head.shape} ({head.dtype}), it holds {size - offset}")
    return head, offset


def _open(path: str | Path, what: str, expected: str) -> tuple[IO[bytes], int, str]:
    """(open file, size, container) of the file at path, refused when it is not a .npy or
    .npz file."""
    if not isinstance(path, str | Path) or str(path) == "":
        raise InvalidInputError(f"{what}: must be a file path, got {path!r}")
    try:
        fh = open_regular(path)
    except FileNotFoundError:
        raise _refuse(what, expected, "no such file") from None
    except OSError as exc:
        raise _refuse(what, expected, f"cannot be read ({exc.strerror or exc})") from None
    size = fh.seek(0, 2)
    fh.seek(0)
    head = fh.read(len(NPY_MAGIC))
    fh.seek(0)
    container = ("npy" if head.startswith(NPY_MAGIC) else
                 "npz" if head.startswith(ZIP_MAGIC) else None)
    if container is None:
        fh.close()
        raise _refuse(what, expected, "is empty (0 bytes)" if size == 0 else
                      f"is {file_kind(head)}")
    return fh, size, container


def _scan(path: str | Path, what: str, expected: str, containers: tuple[str, ...],
          read: Callable[[IO[bytes], ArrayHeader], Any] | None
          ) -> list[tuple[ArrayHeader, Any]]:
    """[(header, read(stream, header) or None)] of every array of the file, in its order."""
    if not set(containers) <= set(CONTAINERS) or not containers:
        raise InvalidInputError(f"containers must be among {CONTAINERS}, got {containers!r}")
    fh, size, container = _open(path, what, expected)
    with fh:
        if container not in containers:
            other = file_kind(fh.read(len(NPY_MAGIC)))
            raise _refuse(what, expected, f"is {other}")
        if container == "npy":
            head, _ = _npy(fh, size, what, expected)
            fh.seek(0)
            return [(head, None if read is None else read(fh, head))]
        try:
            archive = zipfile.ZipFile(fh)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
            raise _refuse(what, expected, f"is a damaged .npz archive ({exc})") from None
        out = []
        with archive:
            for info in archive.infolist():
                name = info.filename.removesuffix(".npy")
                if info.is_dir() or not info.filename.endswith(".npy"):
                    raise _refuse(what, expected, f"holds {info.filename!r}, which is not a "
                                                  f".npy array")
                try:
                    with archive.open(info) as member:
                        head, _ = _npy(member, info.file_size, what, expected, name)
                    if read is None:
                        out.append((head, None))
                        continue
                    with archive.open(info) as member:
                        out.append((head, read(member, head)))
                except (zipfile.BadZipFile, NotImplementedError, RuntimeError, OSError,
                        EOFError) as exc:  # a bad CRC, an unknown compression, encryption
                    raise _refuse(what, expected, f"member {name!r} cannot be read "
                                                  f"({type(exc).__name__}: {exc})") from None
        if not out:
            raise _refuse(what, expected, "is a .npz archive holding no array")
        return out


def read_headers(path: str | Path, what: str, expected: str,
                 containers: tuple[str, ...] = CONTAINERS) -> list[ArrayHeader]:
    """The headers of the arrays in a .npy or .npz file, every one checked, no data read.

    Parameters
    ----------
    path : str or pathlib.Path
        The file.
    what : str
        How messages name the file (e.g. "tokens 'ids.npy' (--tokens)").
    expected : str
        What the file should be, ending every refusal ("expected …").
    containers : tuple of {"npy", "npz"}, default both
        The containers accepted.

    Returns
    -------
    list of ArrayHeader
        One per array: the .npy file's (name ""), or each .npz member's in the archive's order.

    Raises
    ------
    InvalidInputError
        Starting with `what`, ending with `expected`: the path is missing or not a regular
        file, the file is empty, of another container or no numpy file at all (a pickle, text),
        a header is damaged or of a dtype holding Python objects, an array's data is shorter
        than its header promises, a .npz holds no array or a member that is not a .npy array.

    See Also
    --------
    read_arrays : the arrays themselves.

    References
    ----------
    .. [1] NumPy Enhancement Proposal 1, "A simple file format for NumPy arrays" (the .npy
       header; numpy.lib.format).

    Examples
    --------
    >>> import pathlib, pickle, tempfile
    >>> import numpy as np
    >>> from riccati_tf.io.arrays import read_headers
    >>> tmp = tempfile.TemporaryDirectory()
    >>> f = pathlib.Path(tmp.name) / "x.npy"
    >>> np.save(f, np.zeros((3, 2), dtype=np.int32))
    >>> read_headers(f, "x", "a .npy file")
    [ArrayHeader(name='', shape=(3, 2), dtype=dtype('int32'))]
    >>> np.save(f, np.array([{}, [1]], dtype=object))  # a pickle inside
    >>> read_headers(f, "x", "a .npy file")
    Traceback (most recent call last):
        ...
    riccati_tf.errors.InvalidInputError: x: the file holds Python objects (dtype object), ...
    >>> tmp.cleanup()
    """
    return [head for head, _ in _scan(path, what, expected, containers, None)]


def _data(stream: IO[bytes], _head: ArrayHeader) -> np.ndarray:
    return npy_format.read_array(stream, allow_pickle=False)


def read_arrays(path: str | Path, what: str, expected: str,
                containers: tuple[str, ...] = CONTAINERS) -> dict[str, np.ndarray]:
    """The arrays of a .npy or .npz file, never unpickled: {name: array} in the file's order.

    Every header is checked as `read_headers` checks it before its data is read with
    ``numpy.lib.format.read_array(..., allow_pickle=False)``.

    Parameters
    ----------
    path : str or pathlib.Path
        The file.
    what : str
        How messages name the file.
    expected : str
        What the file should be, ending every refusal.
    containers : tuple of {"npy", "npz"}, default both
        The containers accepted.

    Returns
    -------
    dict of str to ndarray
        {"": the array} for a .npy file; {member name without ".npy": array} for a .npz.

    Raises
    ------
    InvalidInputError
        As `read_headers`.

    See Also
    --------
    read_headers : the checks, without reading data.

    References
    ----------
    .. [1] NumPy Enhancement Proposal 1, "A simple file format for NumPy arrays".

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> from riccati_tf.io.arrays import read_arrays
    >>> tmp = tempfile.TemporaryDirectory()
    >>> f = pathlib.Path(tmp.name) / "x.npz"
    >>> np.savez(f, a=np.arange(3), b=np.ones((2, 2)))
    >>> {k: v.shape for k, v in read_arrays(f, "x", "a .npz file", ("npz",)).items()}
    {'a': (3,), 'b': (2, 2)}
    >>> read_arrays(f, "x", "a .npy file", ("npy",))
    Traceback (most recent call last):
        ...
    riccati_tf.errors.InvalidInputError: x: is a .npz archive (a zip of arrays; numpy.savez); ...
    >>> tmp.cleanup()
    """
    try:
        return {head.name: data for head, data in _scan(path, what, expected, containers, _data)}
    except ValueError as exc:  # read_array after a checked header: a damaged stream
        if isinstance(exc, InvalidInputError):
            raise
        raise _refuse(what, expected, f"the data cannot be read ({exc})") from None
