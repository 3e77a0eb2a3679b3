"""Files riccati-tf writes: atomically, with checksums, and never over a file it did not write.

A folder that riccati-tf writes into (`report --out`, `probe --out`, `atlas --out`, ...) holds a
marker, MARKER, listing every file riccati-tf wrote there with its SHA-256:

    {"writer": "riccati-tf", "files": {name: [sha256, ...]}}

A file of the same name as one about to be written that is not listed, or whose content has
changed since (its SHA-256 is not listed), belongs to someone else: writing is refused
(InvalidInputError naming it) before anything is written. Every file is written under a name of
this writer's own (`.name.tmp-<pid>-<token>`) and renamed into place, so readers never see a
partial file; the marker lists a file's old and new checksums while it is replaced, so a crash
in between leaves every file recognised as riccati-tf's.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import secrets
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..errors import InvalidInputError

__all__ = ["MARKER", "OutputFolder", "open_regular", "read_regular"]

#: the marker of an output folder
MARKER = ".riccati-tf-files.json"
WRITER = "riccati-tf"


def sha256(data: bytes) -> str:
    """Hex SHA-256 of data."""
    return hashlib.sha256(data).hexdigest()


#: what a path that is not a regular file is, by its st_mode (`read_regular`)
FILE_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
              (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
              (stat.S_ISSOCK, "a socket"))


def read_regular(path: str | Path, limit: int | None = None) -> bytes:
    """The bytes of the regular file at path, at most limit + 1 of them when a limit is given.

    The file is opened without blocking (O_NONBLOCK: opening a named pipe with no writer would
    wait for one for ever) and read only when fstat calls it a regular file: a folder, a named
    pipe, a character or block device (/dev/zero, a terminal) or a socket is refused before a
    byte is read, with an OSError whose strerror names the kind ("a named pipe (FIFO), not a
    regular file"). Symbolic links are followed to what they name.

    Parameters
    ----------
    path : str or pathlib.Path
        The file.
    limit : int, optional
        Read at most limit + 1 bytes (a caller refusing files larger than limit sees that they
        are); None reads the whole file.

    Returns
    -------
    bytes
        The file's content (its first limit + 1 bytes).

    Raises
    ------
    OSError
        When the path cannot be opened (missing, no permission, a NUL in its name) or is not
        a regular file.

    See Also
    --------
    riccati_tf.io.spec.load_spec : reads spec files through it.

    References
    ----------
    .. [1] POSIX.1-2017, open(): O_NONBLOCK on a FIFO; fstat(): st_mode and S_ISREG.

    Examples
    --------
    >>> import os, tempfile
    >>> from pathlib import Path
    >>> from riccati_tf.io.files import read_regular
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = (Path(tmp) / "a.json").write_bytes(b"[1, 2]")
    ...     os.mkfifo(Path(tmp) / "pipe")
    ...     print(read_regular(Path(tmp) / "a.json"), read_regular(Path(tmp) / "a.json", 2))
    ...     try:
    ...         read_regular(Path(tmp) / "pipe")
    ...     except OSError as exc:
    ...         print(exc.strerror)
    b'[1, 2]' b'[1,'
    a named pipe (FIFO), not a regular file
    """
    with open_regular(path) as fh:
        return fh.read() if limit is None else fh.read(limit + 1)


def open_regular(path: str | Path) -> BinaryIO:
    """The regular file at path opened for binary reading, checked before a byte is read.

    Opened without blocking (O_NONBLOCK) and checked with fstat, as `read_regular` reads: a
    folder, a named pipe, a device or a socket is refused naming its kind.

    Parameters
    ----------
    path : str or pathlib.Path
        The file (symbolic links followed).

    Returns
    -------
    typing.BinaryIO
        The open file, at offset 0; the caller closes it (a context manager).

    Raises
    ------
    OSError
        When the path cannot be opened (missing, no permission, a NUL in its name) or is not
        a regular file (strerror names the kind).

    See Also
    --------
    read_regular : its bytes.
    riccati_tf.io.arrays.read_arrays : reads .npy and .npz files through it.

    References
    ----------
    .. [1] POSIX.1-2017, open(): O_NONBLOCK on a FIFO; fstat(): st_mode and S_ISREG.

    Examples
    --------
    >>> import tempfile
    >>> from riccati_tf.io.files import open_regular
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     try:
    ...         open_regular(tmp)
    ...     except OSError as exc:
    ...         print(exc.strerror)
    a folder, not a regular file
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except ValueError:  # "embedded null byte": no file has such a name
        raise OSError(errno.EINVAL, "the path holds a NUL character", str(path)) from None
    except OSError as exc:  # a socket cannot be opened at all (ENXIO): name its kind
        try:
            mode = os.stat(path).st_mode
        except OSError:
            raise exc from None
        _refuse_kind(path, mode)
        raise
    try:
        _refuse_kind(path, os.fstat(fd).st_mode)
    except OSError:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def _refuse_kind(path: str | Path, mode: int) -> None:
    """OSError naming the kind of what `path` is (FILE_KINDS) unless it is a regular file."""
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in FILE_KINDS if test(mode)), "not a file")
        raise OSError(errno.EINVAL, f"{kind}, not a regular file", str(path))


def read_or_none(path: str | Path) -> bytes | None:
    """The bytes of the regular file at path, or None when there is none (an unreadable one,
    or one that is not a regular file, is an InvalidInputError; `read_regular`)."""
    try:
        return read_regular(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InvalidInputError(f"{path}: cannot read ({exc.strerror or exc})") from None


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write to `.<name>.tmp-<pid>-<token>` (this writer's own name), fsync, then rename over
    `path` (readers never see a partial file; another writer's temporaries are never touched)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise InvalidInputError(f"{path}: cannot write ({exc.strerror or exc})") from None


def check_creatable(path: str | Path, what: str) -> None:
    """Refuse (InvalidInputError starting with `what`) unless `path` can be created where it
    is: its nearest existing ancestor is a folder this process may write into (missing folders
    in between are created on writing). Checked before anything is computed, so that a long run
    does not end on a path that cannot take its output."""
    try:
        folder = Path(path).absolute().parent
        while not folder.exists() and not folder.is_symlink():
            folder = folder.parent
        if not folder.is_dir():
            raise InvalidInputError(f"{what}: {folder} is not a folder, so nothing can be "
                                    f"created below it")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise InvalidInputError(f"{what}: the folder {folder} cannot be written "
                                    f"(permission denied)")
    except OSError as exc:
        raise InvalidInputError(f"{what}: {exc.strerror or exc}") from None


def make_folder(path: str | Path, what: str) -> Path:
    """Create the folder `path` (or accept an existing one); a path that is a file, or a folder
    that cannot be created, is refused with InvalidInputError starting with `what`."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise InvalidInputError(f"{what}: {path} exists and is not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidInputError(f"{what}: cannot create the folder {path} "
                                f"({exc.strerror or exc})") from None
    return path


@dataclass(frozen=True)
class OutputFolder:
    """A folder riccati-tf writes into, with what its marker says riccati-tf wrote there.

    The marker MARKER lists every file riccati-tf wrote in the folder with its SHA-256. A file
    of a name about to be written that the marker does not list, or whose SHA-256 it does not
    list (changed since), belongs to someone else: `check` and `write` refuse it before
    anything is written. Files are written atomically (a temporary name of this writer, fsync,
    rename), the marker listing old and new checksums while a file is replaced, so a crash in
    between leaves every file recognised. Construct it with `OutputFolder.open`.

    Parameters
    ----------
    path : pathlib.Path
        The folder.
    owned : dict of str to list of str
        {file name: SHA-256 hex digests riccati-tf wrote under that name}, as the marker says
        (updated in place by `write`).
    option : str, default "--out"
        The command-line option (or argument) the folder came from, named in messages.

    Raises
    ------
    InvalidInputError
        From `open`: `out` is not a path, exists and is not a folder, cannot be created, or
        holds a marker riccati-tf did not write. From `check` and `write`: a file of one of the
        names is not riccati-tf's (not listed, changed since, a link or a folder), or a file
        cannot be written.

    See Also
    --------
    riccati_tf.app.report.write_report : writes the HTML report through an OutputFolder.
    riccati_tf.io.serialize.to_jsonable : the JSON values the folders' numbers are made of.

    References
    ----------
    .. [1] The Open Group, "rename", The Open Group Base Specifications Issue 7 (POSIX.1-2017):
       the rename that makes each write atomic.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from riccati_tf.io.files import OutputFolder
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     folder = OutputFolder.open(Path(tmp) / "out")
    ...     paths = folder.write({"numbers.json": b"{}"})
    ...     again = OutputFolder.open(folder.path)      # a later run reads the marker
    ...     again.write({"numbers.json": b"[1]"})["numbers.json"].read_text()
    '[1]'

    A file riccati-tf did not write is never overwritten:

    >>> from riccati_tf.errors import InvalidInputError
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = (Path(tmp) / "notes.txt").write_text("mine")
    ...     try:
    ...         OutputFolder.open(tmp).write({"notes.txt": b"theirs"})
    ...     except InvalidInputError:
    ...         print((Path(tmp) / "notes.txt").read_text())
    mine
    """

    path: Path
    owned: dict[str, list[str]]
    option: str = "--out"

    @classmethod
    def open(cls, out: str | Path, option: str = "--out") -> OutputFolder:
        """Create `out` (or accept it) and read its marker; a path that is not a folder, a
        folder that cannot be created and a marker riccati-tf did not write are refused."""
        if not isinstance(out, str | Path) or str(out) == "":
            raise InvalidInputError(f"{option}: must be a folder path, got {out!r}")
        out = make_folder(out, option)
        data = read_or_none(out / MARKER)
        if data is None:
            return cls(out, {}, option)
        try:
            marker = json.loads(data.decode("utf-8"))
            files = marker["files"]
            ok = marker["writer"] == WRITER and all(
                isinstance(k, str) and isinstance(v, list) for k, v in files.items())
        except (ValueError, KeyError, TypeError, AttributeError):
            ok = False
        if not ok:
            raise InvalidInputError(f"{out / MARKER}: not a marker that riccati-tf wrote; "
                                    f"refusing to write into {out} (use another {option} "
                                    f"folder)")
        return cls(out, files, option)

    def check(self, names: Iterable[str]) -> None:
        """Refuse when the folder holds a file of one of `names` that riccati-tf did not write
        (or that was changed since it did)."""
        for name in names:
            path = self.path / name
            if path.is_symlink() or (path.exists() and not path.is_file()):
                raise InvalidInputError(f"{path}: exists and is not a file riccati-tf wrote; "
                                        f"refusing to replace it (use another {self.option} "
                                        f"folder)")
            data = read_or_none(path)
            if data is not None and sha256(data) not in self.owned.get(name, ()):
                raise InvalidInputError(f"{path}: exists and was not written by riccati-tf (or "
                                        f"was changed since); refusing to overwrite it (use "
                                        f"another {self.option} folder)")

    def write(self, files: dict[str, bytes]) -> dict[str, Path]:
        """Check, then write `files` {name: bytes} atomically, listed in the marker first with
        both their old and new SHA-256, then with the new one only; returns {name: path}."""
        self.check(files)
        new = {name: sha256(data) for name, data in files.items()}

        def mark(listing: dict[str, list[str]]) -> None:
            atomic_write_bytes(self.path / MARKER, json.dumps(
                {"writer": WRITER, "files": listing}, indent=1).encode())

        mark({**self.owned, **{n: [*self.owned.get(n, []), h] for n, h in new.items()}})
        for name, data in files.items():
            atomic_write_bytes(self.path / name, data)
        final = {**self.owned, **{n: [h] for n, h in new.items()}}
        mark(final)
        self.owned.clear()
        self.owned.update(final)
        return {name: self.path / name for name in files}
