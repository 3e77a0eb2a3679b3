"""Files riccati-tf writes: atomically, with checksums, and never over a file it did not write.

A folder that riccati-tf writes into (`report --out`, `probe --out`, `atlas --out`, ...) holds a
marker, MARKER, its index: every file riccati-tf wrote there with its SHA-256 and the run that
wrote it, and, while a run's files are being renamed into place, that run's pending files:

    {"writer": "riccati-tf", "files": {name: [sha256, ...]}, "runs": {name: run},
     "pending": {"run": run, "note": ..., "files": {name: [temporary name, sha256]}}}

A file of the same name as one about to be written that is not listed, or whose content has
changed since (its SHA-256 is not listed), belongs to someone else: writing is refused
(InvalidInputError naming it) before anything is written.

One run's files are written as a journal, under an exclusive lock on the folder (flock on the
folder itself: two commands writing one folder at once take turns, and the index is read, changed
and written by one of them at a time, so no entry is lost):

1. every file to a temporary name of this writer (`.name.tmp-<pid>-<token>`), fsynced;
2. the index with the run's files pending (the commit point);
3. each temporary renamed over its name;
4. the index with the run's files listed as current, nothing pending.

A run killed before step 2 leaves temporaries and the previous files, all of one run; killed
during step 3, some files of the new run next to the previous run's others, and the index saying
so: `OutputFolder.stale` lists those still of the previous run. The next run into the folder
(any command) completes step 3 from the temporaries, then step 4, and deletes the temporaries of
writers that are no longer running, before it reads the index.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import secrets
import stat
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..errors import InvalidInputError

__all__ = ["MARKER", "OutputFolder", "open_regular", "read_regular"]

#: the marker (the index) of an output folder
MARKER = ".riccati-tf-files.json"
WRITER = "riccati-tf"
#: how long a writer waits for another one's lock on a folder before it refuses, in seconds
LOCK_WAIT = 120.0
#: the name of a temporary file: `.name.tmp-<pid>-<token>` (`atomic_write_bytes`)
TEMPORARY = re.compile(r"^\.(?P<name>.+)\.tmp-(?P<pid>\d+)-[0-9a-f]+$")
#: what the index says of a pending run
PENDING_NOTE = ("a run's files are being renamed into place (or the run was killed meanwhile): "
                "a file listed here whose SHA-256 is not the one given is still the previous "
                "run's; the next run into this folder completes the renames")


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


def temporary_write(path: str | Path, data: bytes) -> Path:
    """Write data to `.<name>.tmp-<pid>-<token>` beside path (this writer's own name) and fsync
    it; returns the temporary's path (InvalidInputError when it cannot be written)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise InvalidInputError(f"{path}: cannot write ({exc.strerror or exc})") from None
    return tmp


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write to `.<name>.tmp-<pid>-<token>` (this writer's own name), fsync, then rename over
    `path` (readers never see a partial file; another writer's temporaries are never touched)."""
    tmp = temporary_write(path, data)
    try:
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


def _running(pid: int) -> bool:
    """Whether a process of this id runs (this one included): a temporary of a writer that
    does not is left over from a crash."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OverflowError, ValueError):  # no process has such an id
        return False
    except OSError:  # EPERM: another user's process
        return True
    return True


@contextlib.contextmanager
def folder_lock(path: Path, option: str = "--out", wait: float | None = None) -> Iterator[None]:
    """Hold an exclusive lock on the folder `path` (flock on the folder itself: nothing is
    created in it) while the block runs; another holder is waited for up to `wait` seconds
    (default LOCK_WAIT), then refused with InvalidInputError naming `option`. The lock goes
    with the process: a killed holder releases it. Where flock does not exist (Windows)
    writers are not serialised."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise InvalidInputError(f"{option}: cannot open the folder {path} "
                                f"({exc.strerror or exc})") from None
    wait = LOCK_WAIT if wait is None else wait
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise InvalidInputError(
                        f"{option}: another riccati-tf command has been writing into {path} "
                        f"for {wait:g} s (it holds the folder's lock); run again when it has "
                        f"finished, or use another {option} folder") from None
                time.sleep(0.01)
        yield
    finally:
        os.close(fd)  # releases the lock


def _plain_name(name: object) -> bool:
    """A file name of the folder itself (no separator, not . or .., not the index)."""
    return (isinstance(name, str) and name not in ("", ".", "..", MARKER)
            and "/" not in name and "\\" not in name and "\x00" not in name)


def _valid_index(index: object) -> bool:
    """Whether `index` is an index riccati-tf writes (module docstring)."""
    if not isinstance(index, dict) or index.get("writer") != WRITER:
        return False
    files, runs = index.get("files"), index.get("runs", {})
    pending = index.get("pending")
    ok = (isinstance(files, dict) and all(isinstance(k, str) and isinstance(v, list)
                                          and all(isinstance(h, str) for h in v)
                                          for k, v in files.items())
          and isinstance(runs, dict) and all(isinstance(v, str) for v in runs.values()))
    if pending is not None:
        entries = pending.get("files") if isinstance(pending, dict) else None
        ok = ok and isinstance(entries, dict) and isinstance(pending.get("run"), str) and all(
            _plain_name(name) and isinstance(entry, list) and len(entry) == 2
            and isinstance(entry[0], str) and isinstance(entry[1], str)
            and (m := TEMPORARY.match(entry[0])) is not None and m["name"] == name
            for name, entry in entries.items())
    return ok


def read_index(path: Path, option: str = "--out") -> dict:
    """The index (MARKER) of the folder `path` (an empty one when there is none); one that
    riccati-tf did not write is refused (InvalidInputError naming `option`)."""
    data = read_or_none(path / MARKER)
    if data is None:
        return {"writer": WRITER, "files": {}, "runs": {}}
    try:
        index = json.loads(data.decode("utf-8"))
    except ValueError:
        index = None
    if not _valid_index(index):
        raise InvalidInputError(f"{path / MARKER}: not a marker that riccati-tf wrote; "
                                f"refusing to write into {path} (use another {option} folder)")
    index.setdefault("runs", {})
    return index


def _write_index(path: Path, index: dict) -> None:
    atomic_write_bytes(path / MARKER, json.dumps(index, indent=1).encode())


def _sha_or_none(path: Path) -> str | None:
    try:
        data = read_regular(path)
    except OSError:
        return None
    return sha256(data)


def recover(path: Path, index: dict) -> dict:
    """Complete the renames of a run that was killed after its commit point (its temporaries
    renamed over their names when their SHA-256 is the one pending), list its files as
    current, and delete the temporaries of writers no longer running; returns the index as
    written. Called with the folder's lock held."""
    pending = index.pop("pending", None)
    if pending is not None:
        for name, (tmp, new) in pending["files"].items():
            if _sha_or_none(path / name) != new and _sha_or_none(path / tmp) == new:
                try:
                    os.replace(path / tmp, path / name)
                except OSError as exc:
                    raise InvalidInputError(f"{path / name}: cannot complete an interrupted "
                                            f"write ({exc.strerror or exc})") from None
            if _sha_or_none(path / name) == new:
                index["files"][name] = [new]
                index["runs"][name] = pending["run"]
            else:  # its temporary is gone: the previous run's file stays, listed as before
                index["files"][name] = [h for h in index["files"].get(name, []) if h != new]
        _write_index(path, index)
    with os.scandir(path) as entries:
        for entry in entries:
            m = TEMPORARY.match(entry.name)
            if m and entry.is_file(follow_symlinks=False) and not _running(int(m["pid"])):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
    return index


@dataclass(frozen=True)
class OutputFolder:
    """A folder riccati-tf writes into, with what its index says riccati-tf wrote there.

    The index MARKER lists every file riccati-tf wrote in the folder with its SHA-256 and the
    run that wrote it. A file of a name about to be written that the index does not list, or
    whose SHA-256 it does not list (changed since), belongs to someone else: `check` and
    `write` refuse it before anything is written. A run's files are written as a journal
    under an exclusive lock on the folder (module docstring): two commands writing one folder
    take turns and neither loses the other's entries; a run killed while its files are renamed
    leaves an index that says which files are still the previous run's (`stale`), and the next
    run into the folder completes it and removes the temporaries left behind. Construct it
    with `OutputFolder.open`.

    Parameters
    ----------
    path : pathlib.Path
        The folder.
    owned : dict of str to list of str
        {file name: SHA-256 hex digests riccati-tf wrote under that name}, as the index says
        (updated in place by `write`).
    option : str, default "--out"
        The command-line option (or argument) the folder came from, named in messages.

    Raises
    ------
    InvalidInputError
        From `open`: `out` is not a path, exists and is not a folder, cannot be created, or
        holds a marker riccati-tf did not write. From `check` and `write`: a file of one of the
        names is not riccati-tf's (not listed, changed since, a link or a folder), or a file
        cannot be written. From `open` and `write`: another command held the folder's lock
        for LOCK_WAIT seconds.

    See Also
    --------
    riccati_tf.app.report.write_report : writes the HTML report through an OutputFolder.
    riccati_tf.io.serialize.to_jsonable : the JSON values the folders' numbers are made of.

    References
    ----------
    .. [1] The Open Group, "rename", The Open Group Base Specifications Issue 7 (POSIX.1-2017):
       the rename that makes each write atomic.
    .. [2] flock(2), Linux man-pages: the advisory lock, released when its holder exits.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from riccati_tf.io.files import OutputFolder
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     folder = OutputFolder.open(Path(tmp) / "out")
    ...     paths = folder.write({"numbers.json": b"{}"})
    ...     again = OutputFolder.open(folder.path)      # a later run reads the index
    ...     again.write({"numbers.json": b"[1]"})["numbers.json"].read_text(), again.stale()
    ('[1]', [])

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
        """Create `out` (or accept it), complete an interrupted write and remove leftover
        temporaries (`recover`), and read its index; a path that is not a folder, a folder that
        cannot be created and an index riccati-tf did not write are refused."""
        if not isinstance(out, str | Path) or str(out) == "":
            raise InvalidInputError(f"{option}: must be a folder path, got {out!r}")
        out = make_folder(out, option)
        with folder_lock(out, option):
            index = recover(out, read_index(out, option))
        return cls(out, index["files"], option)

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

    def stale(self) -> list[str]:
        """The files of a run whose renames were interrupted that are still the previous run's
        (their SHA-256 not the pending one), sorted; [] when no write is pending."""
        pending = read_index(self.path, self.option).get("pending")
        if pending is None:
            return []
        return sorted(name for name, (_tmp, new) in pending["files"].items()
                      if _sha_or_none(self.path / name) != new)

    def write(self, files: dict[str, bytes]) -> dict[str, Path]:
        """Write `files` {name: bytes} as one run (module docstring: the journal), under the
        folder's lock, after re-reading the index and checking the names against it; returns
        {name: path}."""
        with folder_lock(self.path, self.option):
            index = recover(self.path, read_index(self.path, self.option))
            self.owned.clear()
            self.owned.update(index["files"])
            self.check(files)
            run = f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{secrets.token_hex(4)}"
            new = {name: sha256(data) for name, data in files.items()}
            temps: dict[str, Path] = {}
            try:
                for name, data in files.items():
                    temps[name] = temporary_write(self.path / name, data)
            except InvalidInputError:
                for tmp in temps.values():
                    tmp.unlink(missing_ok=True)
                raise
            index["files"] = {**self.owned, **{n: [*(h for h in self.owned.get(n, [])
                                                    if h != new[n]), new[n]] for n in new}}
            index["pending"] = {"run": run, "note": PENDING_NOTE,
                                "files": {n: [temps[n].name, new[n]] for n in new}}
            _write_index(self.path, index)  # the commit point
            for name, tmp in temps.items():
                try:
                    os.replace(tmp, self.path / name)
                except OSError as exc:
                    raise InvalidInputError(f"{self.path / name}: cannot write "
                                            f"({exc.strerror or exc}); the next run into "
                                            f"{self.path} completes it") from None
            del index["pending"]
            index["files"] = {**self.owned, **{n: [h] for n, h in new.items()}}
            index["runs"] = {**index["runs"], **dict.fromkeys(new, run)}
            _write_index(self.path, index)
            self.owned.clear()
            self.owned.update(index["files"])
        return {name: self.path / name for name in files}
