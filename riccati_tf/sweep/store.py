"""Chunked results with a verified manifest: one writer, atomic writes, exact resume.

    OUT/manifest.json      {format, writer, fingerprint, spec, n_configs, chunk_size, n_chunks,
                            columns, plot, storage, results}
                           storage: "parquet" or "npz" (`riccati_tf.sweep.tables`);
                           results: null, or {rows, sha256} once complete
    OUT/chunks.jsonl       the chunk records, one JSON line appended per finished chunk:
                           {"chunk": c, "first": id, "last": id, "rows": n, "sha256": hex}
    OUT/chunks/chunk-<c>.parquet   (8-digit c; .npz for the npz storage) configurations
                           first..last = c·chunk_size, ...
    OUT/results.parquet    all rows sorted by config_id, written once every chunk is in
                           (results.npz for the npz storage)
    OUT/writer.lock        flock-ed by the one process writing the folder (its pid and host)

The storage is Parquet when pyarrow is installed (the extra `riccati-tf[dask]`), else numpy's
npz (no extra, no pickle); a folder keeps the storage it was created with.

The records are appended (O(1) per chunk however many chunks there are) rather than rewritten
into manifest.json; together the two files are the manifest.

Invariants. (1) One writer: a second process opening the folder is refused while the first
holds writer.lock (fcntl.flock, POSIX); the kernel drops the lock when its holder dies, even by
SIGKILL, so a dead writer never blocks a resume. (2) Every file is written under a temporary
name owned by the writer (pid and a random token), fsync-ed and renamed into place (os.replace
is atomic on POSIX), so a reader never sees a partial file.
(3) A chunk counts as done iff its record is in chunks.jsonl AND its file still has the recorded
SHA-256 and exactly the config ids first..last; the record is appended only after the file is in
place. On opening, the writer checks the manifest against the spec (shape, fingerprint, counts:
a manifest that contradicts the spec is refused) and every record against its file (a chunk whose
file is missing, altered or swapped is recomputed, with a note saying so); a record torn by a
crash mid-append is dropped. So a sweep killed at any instant, or a folder whose chunk files were
damaged, resumes to exactly the rows of an uninterrupted run: none lost, none duplicated.
(4) The folder is the sweep's own: a folder without manifest.json that already holds a file of one
of the names above is refused, naming the file, never overwritten.
pyarrow is imported only by the Parquet storage (`riccati_tf.sweep.tables`), when used.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from ..errors import InvalidInputError
from ..io.files import atomic_write_bytes, make_folder, read_or_none, sha256
from ..io.spec import SpecError, check_keys
from .family import Family, fingerprint, parse_family
from .tables import FORMAT_NAMES, STORAGES, ResultsTable, decode, default_storage, encode

__all__ = ["CHUNK_DIR", "JOURNAL", "LOCK", "MANIFEST", "RESULTS", "read_results"]

#: format 3 added the field "storage"; a format-2 manifest (Parquet only) is read as Parquet
FORMAT = 3
WRITER = "riccati-tf sweep"
MANIFEST = "manifest.json"
JOURNAL = "chunks.jsonl"
#: the results file of a Parquet store (`results_file` names the file of either storage)
RESULTS = "results.parquet"
CHUNK_DIR = "chunks"
LOCK = "writer.lock"
MANIFEST_FIELDS = ("format", "writer", "fingerprint", "spec", "n_configs", "chunk_size",
                   "n_chunks", "columns", "plot", "storage", "results")
RECORD_FIELDS = ("chunk", "first", "last", "rows", "sha256")
_SHA256 = re.compile(r"[0-9a-f]{64}")
#: temporary files: ".<name>.tmp-<pid>-<token>" next to the file they become
_TMP = re.compile(r"\..+\.tmp-\d+-[0-9a-f]+")
_UNTRUSTED = "the store cannot be trusted; use another --out folder"


def exit_process(code: int) -> NoReturn:
    """End the process with `code`: once pyarrow is loaded, after flushing the standard streams
    and without the interpreter's teardown, where pyarrow's thread pools may abort a finished
    process (SIGABRT, "terminate called without an active exception": apache/arrow#34314; about
    one exit in eight of a finished sweep here); else sys.exit. For the command-line entry
    points only."""
    if "pyarrow" not in sys.modules:
        sys.exit(code)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def results_file(storage: str) -> str:
    """The name of the results file of a store: results.parquet or results.npz."""
    return f"results{STORAGES[storage]}"


#: the names a sweep writes in its folder (a folder without a manifest holding one is refused)
OWNED = (MANIFEST, JOURNAL, *(results_file(s) for s in STORAGES), CHUNK_DIR, LOCK)


def read_table_file(path: str | Path, storage: str) -> ResultsTable:
    """A results or chunk file of the given storage; an unreadable file is an
    InvalidInputError."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InvalidInputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    table = decode(storage, data)
    if table is None:
        raise InvalidInputError(f"{path}: not a readable {FORMAT_NAMES[storage]} file")
    return table


def chunk_file(index: int, storage: str = "parquet") -> str:
    """The name of chunk `index`'s file (chunk-<8 digits>.parquet, or .npz)."""
    return f"chunk-{index:08d}{STORAGES[storage]}"


# ------------------------------------------------------------------------- the manifest


def _is_int(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_sha256(x: object) -> bool:
    return isinstance(x, str) and _SHA256.fullmatch(x) is not None


@dataclass(frozen=True)
class Layout:
    """What the spec says the folder must hold: n_configs, chunk_size, n_chunks."""

    n_configs: int
    chunk_size: int

    @property
    def n_chunks(self) -> int:
        return -(-self.n_configs // self.chunk_size)

    def ids(self, c: int) -> tuple[int, int]:
        """(first, last) config ids of chunk c, inclusive."""
        return c * self.chunk_size, min(self.n_configs, (c + 1) * self.chunk_size) - 1


@dataclass(frozen=True)
class Record:
    """A finished chunk as chunks.jsonl records it: ids first..last, rows, SHA-256 of the file."""

    chunk: int
    first: int
    last: int
    rows: int
    sha256: str

    def line(self) -> bytes:
        return (json.dumps({k: getattr(self, k) for k in RECORD_FIELDS}) + "\n").encode()


def _untrusted(where: str | Path, what: str) -> InvalidInputError:
    return InvalidInputError(f"{where}: {what}; {_UNTRUSTED}")


def read_manifest(root: str | Path) -> dict:
    """manifest.json of a results folder, checked: the fields of this format with their types,
    a spec that parses and has the recorded fingerprint, and counts that agree with that spec.
    Anything else is an InvalidInputError naming what is wrong (the store cannot be trusted)."""
    path = Path(root) / MANIFEST
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidInputError(f"{path}: not a readable sweep manifest "
                                f"({str(exc).splitlines()[0] if str(exc) else exc})") from None
    if not isinstance(data, dict):
        raise _untrusted(path, f"not a sweep manifest (a JSON {type(data).__name__}, not a "
                               f"mapping)")
    if data.get("format") == 2 and "storage" not in data:  # written before npz existed
        data = {**data, "format": FORMAT, "storage": "parquet"}
    try:
        check_keys(data, MANIFEST_FIELDS, "")
    except SpecError as exc:
        raise _untrusted(path, f"not a sweep manifest of this version ({exc})") from None
    missing = [k for k in MANIFEST_FIELDS if k not in data]
    if missing:
        raise _untrusted(path, f"not a sweep manifest of this version (no field "
                               f"{', '.join(missing)})")
    if data["format"] != FORMAT or data["writer"] != WRITER:
        raise _untrusted(path, f"written by {data['writer']!r} in format {data['format']!r}, "
                               f"not by {WRITER!r} in format {FORMAT}")
    for key in ("n_configs", "chunk_size", "n_chunks"):
        if not _is_int(data[key]) or data[key] < 1:
            raise _untrusted(path, f"{key} is {data[key]!r}, not a positive integer")
    if not isinstance(data["spec"], dict) or data["fingerprint"] != fingerprint(data["spec"]):
        raise _untrusted(path, "its spec does not have the recorded fingerprint")
    try:
        family = parse_family(data["spec"])
    except InvalidInputError as exc:
        raise _untrusted(path, f"its spec is not a valid sweep spec ({exc})") from None
    for key in ("n_configs", "chunk_size", "n_chunks"):
        if data[key] != getattr(family, key):
            raise _untrusted(path, f"{key} is {data[key]}, its spec gives {getattr(family, key)}")
    if data["columns"] != family.columns:
        raise _untrusted(path, f"columns are {data['columns']!r}, its spec gives "
                               f"{family.columns}")
    if data["storage"] not in STORAGES:
        raise _untrusted(path, f"storage is {data['storage']!r}, not one of "
                               f"{', '.join(STORAGES)}")
    plot = data["plot"]
    if plot is not None and (not isinstance(plot, list) or len(plot) != 2):
        raise _untrusted(path, "plot must be null or [x, y]")
    res = data["results"]
    if res is not None and not (isinstance(res, dict) and set(res) == {"rows", "sha256"}
                                and res["rows"] == data["n_configs"] and _is_sha256(res["sha256"])):
        raise _untrusted(path, "results must be null or {rows: n_configs, sha256: hex}")
    return data


def _record(line: bytes, n: int, layout: Layout, where: str | Path) -> Record:
    """One line of chunks.jsonl as a Record, checked against the layout the spec gives."""
    here = f"{where} line {n}"
    try:
        data = json.loads(line.decode("utf-8"))
    except ValueError:
        raise _untrusted(here, "not a chunk record (unreadable JSON)") from None
    if not isinstance(data, dict) or set(data) != set(RECORD_FIELDS):
        raise _untrusted(here, f"not a chunk record (expected the fields "
                               f"{', '.join(RECORD_FIELDS)})")
    if not all(_is_int(data[k]) for k in RECORD_FIELDS[:4]) or not _is_sha256(data["sha256"]):
        raise _untrusted(here, "a chunk record holds integers and a SHA-256 hex digest")
    rec = Record(**data)
    if not 0 <= rec.chunk < layout.n_chunks:
        raise _untrusted(here, f"chunk {rec.chunk} is outside 0..{layout.n_chunks - 1}")
    first, last = layout.ids(rec.chunk)
    if (rec.first, rec.last, rec.rows) != (first, last, last - first + 1):
        raise _untrusted(here, f"chunk {rec.chunk} is recorded with ids {rec.first}..{rec.last} "
                               f"and {rec.rows} rows, the spec gives {first}..{last} "
                               f"({last - first + 1} rows)")
    return rec


def read_records(root: str | Path, layout: Layout) -> tuple[dict[int, Record], bool]:
    """{chunk: its last record} from chunks.jsonl, and whether a torn last line (a crash in the
    middle of an append) was dropped."""
    path = Path(root) / JOURNAL
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}, False
    except OSError as exc:
        raise InvalidInputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    lines = data.split(b"\n")
    torn = lines.pop() != b""  # the text after the last newline: an unfinished append
    records = {}
    for n, line in enumerate(lines, 1):
        rec = _record(line, n, layout, path)
        records[rec.chunk] = rec
    return records, torn


def _chunk_problem(data: bytes | None, rec: Record, manifest: dict) -> str | None:
    """Why a chunk file's bytes do not hold what its record says (None: they do)."""
    if data is None:
        return "its file is missing"
    if sha256(data) != rec.sha256:
        return "its file differs from the SHA-256 in the manifest"
    table = decode(manifest["storage"], data)
    if table is None:
        return f"its file is not readable {FORMAT_NAMES[manifest['storage']]}"
    if table.column_names != manifest["columns"]:
        return "its columns differ from the manifest's"
    if not np.array_equal(table["config_id"], np.arange(rec.first, rec.last + 1)):
        return f"its config ids are not exactly {rec.first}..{rec.last}"
    return None


# ------------------------------------------------------------------------- the writer's lock


def _refuse_foreign(root: Path) -> None:
    """In a folder without a manifest, a file of one of the store's names was not written by a
    sweep: refuse naming it. (A sweep writes its manifest before any of them, so one that
    appears meanwhile means a sweep is creating the folder: then the manifest exists too.)"""
    for name in (JOURNAL, *(results_file(s) for s in STORAGES), CHUNK_DIR):
        if ((root / name).exists() or (root / name).is_symlink()) and \
                not (root / MANIFEST).exists():
            raise InvalidInputError(
                f"{root / name}: exists and was not written by a sweep (the folder has no "
                f"{MANIFEST}); refusing to overwrite it (use another --out folder)")


def _lock_holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0).decode("utf-8"))
        return f"pid {info['pid']} on {info['host']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process"


def acquire_lock(root: Path) -> int:
    """Hold root/writer.lock (flock, exclusive, released by the kernel when this process dies):
    the file descriptor. A folder written by another live process is refused. In a folder
    without a manifest, an existing lock file must be one that a sweep wrote (else refused and
    left as it is); the holder's pid and host are written into it."""
    import fcntl

    path = root / LOCK
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise InvalidInputError(f"{path}: cannot open the lock file ({exc.strerror})") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _lock_holder(fd)
        os.close(fd)
        raise InvalidInputError(f"{root}: another sweep ({holder}) is writing this folder; "
                                f"wait for it to finish or use another --out folder") from None
    try:
        if not (root / MANIFEST).exists():  # checked under the lock: no sweep is creating it
            _refuse_foreign(root)
            if os.pread(fd, 4096, 0) and _lock_holder(fd) == "another process":
                raise InvalidInputError(f"{path}: exists and was not written by a sweep; "
                                        f"refusing to overwrite it (use another --out folder)")
    except BaseException:
        os.close(fd)
        raise
    info = json.dumps({"writer": WRITER, "pid": os.getpid(), "host": socket.gethostname()})
    os.ftruncate(fd, 0)
    os.pwrite(fd, info.encode(), 0)
    return fd


# ------------------------------------------------------------------------- the store


class ResultStore:
    """The results folder of one sweep (one spec fingerprint), opened by its single writer (the
    process that runs the sweep; Dask workers only compute and return rows). `notes` says what
    the opening found and repaired (chunks recomputed, a torn record dropped)."""

    def __init__(self, root: Path, manifest: dict, records: dict[int, Record], lock_fd: int,
                 notes: list[str]):
        self.root = root
        self.manifest = manifest
        self.records = records
        self.notes = notes
        self._lock_fd: int | None = lock_fd

    # ----------------------------------------------------------------- opening

    @classmethod
    def open(cls, root: str | Path, family: Family, storage: str | None = None
             ) -> ResultStore:
        """Open (resume) or create the results folder of `family`, holding its writer lock
        until close(). A new folder stores its files in `storage` ("parquet" or "npz"; None:
        `default_storage()`), a resumed one in the storage it was created with (a different
        explicit `storage` is refused). Refuses a folder another process is writing, a folder
        holding another spec's results or a manifest that cannot be trusted, and a folder
        holding files of the store's names that no sweep wrote. The family's plot axes are
        recorded in the manifest."""
        if storage is not None and storage not in STORAGES:
            raise InvalidInputError(f"storage must be one of {', '.join(STORAGES)}, got "
                                    f"{storage!r}")
        root = make_folder(root, "results folder")
        if not (root / MANIFEST).exists():
            _refuse_foreign(root)  # before creating the lock file in a folder of the user's
        lock_fd = acquire_lock(root)
        try:
            return cls._open_locked(root, lock_fd, family, storage)
        except BaseException:
            os.close(lock_fd)
            raise

    @classmethod
    def _open_locked(cls, root: Path, lock_fd: int, family: Family, storage: str | None
                     ) -> ResultStore:
        notes: list[str] = []
        fp, layout = family.fingerprint, Layout(family.n_configs, family.chunk_size)
        if not (root / MANIFEST).exists():
            manifest: dict[str, Any] = {"format": FORMAT, "writer": WRITER, "fingerprint": fp,
                                        "spec": family.spec, "n_configs": layout.n_configs,
                                        "chunk_size": layout.chunk_size,
                                        "n_chunks": layout.n_chunks, "columns": family.columns,
                                        "plot": None, "storage": storage or default_storage(),
                                        "results": None}
            records: dict[int, Record] = {}
            torn = False
            atomic_write_bytes(root / MANIFEST, json.dumps(manifest, indent=1).encode())
        else:
            manifest = read_manifest(root)
            if manifest["fingerprint"] != fp:
                raise InvalidInputError(
                    f"{root}: the folder holds results of a different sweep spec (fingerprint "
                    f"{manifest['fingerprint'][:12]}…, this spec {fp[:12]}…); use another "
                    f"--out folder")
            if storage is not None and manifest["storage"] != storage:
                raise InvalidInputError(
                    f"{root}: the folder stores its results as {manifest['storage']}, not "
                    f"{storage}; use another --out folder")
            records, torn = read_records(root, layout)
            if torn:
                notes.append(f"{JOURNAL}: dropped a chunk record torn by an interrupted write")
        store = cls(root, manifest, records, lock_fd, notes)
        store._remove_own_temporaries()
        if torn:
            atomic_write_bytes(root / JOURNAL, b"".join(r.line() for r in records.values()))
        manifest["plot"] = list(family.plot_axes)
        store._check_chunks()
        store._check_results()
        store._save()
        return store

    def _remove_own_temporaries(self) -> None:
        """Temporary files of a killed writer of this folder (never a finished file) are deleted;
        only the names this module gives its temporaries."""
        for folder in (self.root, self.root / CHUNK_DIR):
            if folder.is_dir():
                for tmp in folder.iterdir():
                    if _TMP.fullmatch(tmp.name) and tmp.is_file():
                        tmp.unlink(missing_ok=True)

    def _check_chunks(self) -> None:
        """Keep the records whose file verifies; note and forget the others (recomputed)."""
        folder = self.root / CHUNK_DIR
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            raise InvalidInputError(f"{folder}: not the sweep's chunk folder; {_UNTRUSTED}")
        folder.mkdir(exist_ok=True)
        for c, rec in sorted(self.records.items()):
            data = read_or_none(self.root / CHUNK_DIR / chunk_file(c, self.storage))
            problem = _chunk_problem(data, rec, self.manifest)
            if problem is not None:
                self.notes.append(f"chunk {c}: {problem}; recomputed")
                del self.records[c]

    def _check_results(self) -> None:
        res = self.manifest["results"]
        if res is None:
            return
        data = read_or_none(self.results_path)
        problem = ("is missing" if data is None else
                   "differs from the SHA-256 in the manifest" if sha256(data) != res["sha256"]
                   else None)
        if problem or self.missing():
            if problem:
                self.notes.append(f"{self.results_path.name}: {problem}; rewritten from the "
                                  f"chunks")
            self.manifest["results"] = None

    def close(self) -> None:
        """Release the writer lock (the lock file stays; the kernel also releases it on exit)."""
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------- state

    @property
    def layout(self) -> Layout:
        return Layout(self.manifest["n_configs"], self.manifest["chunk_size"])

    @property
    def n_chunks(self) -> int:
        return int(self.manifest["n_chunks"])

    @property
    def storage(self) -> str:
        """The format of the folder's files: "parquet" or "npz"."""
        return str(self.manifest["storage"])

    @property
    def results_path(self) -> Path:
        """The results file (results.parquet or results.npz)."""
        return self.root / results_file(self.storage)

    def missing(self) -> list[int]:
        """Indices of the chunks without a verified record, in order (to be computed)."""
        return [c for c in range(self.n_chunks) if c not in self.records]

    # ----------------------------------------------------------------- writing

    def write_chunk(self, index: int, columns: dict[str, np.ndarray]) -> Path:
        """Write chunk `index` atomically, then append its record (ids, rows, SHA-256)."""
        first, last = self.layout.ids(index)
        ids = np.asarray(columns["config_id"])
        if not np.array_equal(ids, np.arange(first, last + 1)):
            raise InvalidInputError(f"chunk {index} came back with config ids other than "
                                    f"{first}..{last}")
        names = list(columns)
        if self.manifest["columns"] != names:
            raise InvalidInputError(f"chunk {index} has columns {names}, the results have "
                                    f"{self.manifest['columns']}")
        data = encode(self.storage, columns)
        path = self.root / CHUNK_DIR / chunk_file(index, self.storage)
        atomic_write_bytes(path, data)
        rec = Record(index, first, last, last - first + 1, sha256(data))
        self._append(rec.line())
        self.records[index] = rec
        return path

    def _append(self, line: bytes) -> None:
        path = self.root / JOURNAL
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise InvalidInputError(f"{path}: cannot write ({exc.strerror or exc})") from None

    def _save(self) -> None:
        atomic_write_bytes(self.root / MANIFEST, json.dumps(self.manifest, indent=1).encode())

    def finalize(self) -> Path:
        """Once every chunk is in: write the results file (sorted by config_id, checked to hold
        every id once) and record its SHA-256 in the manifest."""
        missing = self.missing()
        if missing:
            raise InvalidInputError(f"{self.root}: {len(missing)} chunk(s) missing (first "
                                    f"{missing[0]}); run the sweep again to resume")
        if self.manifest["results"] is not None:
            return self.results_path
        table = ResultsTable.concat([
            read_table_file(self.root / CHUNK_DIR / chunk_file(c, self.storage), self.storage)
            for c in range(self.n_chunks)])
        if not np.array_equal(table["config_id"], np.arange(self.manifest["n_configs"])):
            raise InvalidInputError(f"{self.root}: the chunks changed while the sweep ran; run "
                                    f"it again to recompute them")
        data = encode(self.storage, table)
        atomic_write_bytes(self.results_path, data)
        self.manifest["results"] = {"rows": table.num_rows, "sha256": sha256(data)}
        self._save()
        return self.results_path


def read_results(path: str | Path) -> ResultsTable:
    """The results table of a sweep, from its folder or its results file (.parquet or .npz).

    A results folder gives its results file when the sweep is complete, else the rows of the
    recorded chunks in chunk order (a partial view of a sweep still running or interrupted);
    every file is checked against the SHA-256 its manifest records, so a table read is the one
    the sweep wrote. The columns are config_id, one per axis, then the analysis columns (for
    certify: the SPEC §5 regime, theorem, exact, global, rate, blowup_time, threshold and
    path; NaN stands for None).

    Parameters
    ----------
    path : str or pathlib.Path
        A sweep's results folder, or a results file (.parquet, .npz).

    Returns
    -------
    riccati_tf.sweep.tables.ResultsTable
        The rows, sorted by config_id: a mapping {column: numpy array} (``.to_arrow()`` gives
        a pyarrow Table).

    Raises
    ------
    InvalidInputError
        A Parquet store or file without pyarrow installed (the extra
        ``pip install 'riccati-tf[dask]'``); a path that is neither a folder nor a results
        file; a manifest
        that cannot be trusted; a results or chunk file that is missing, unreadable or not the
        file the sweep wrote (SHA-256, columns, config ids); a folder without a finished chunk.

    See Also
    --------
    riccati_tf.sweep.runner.run_sweep : writes the folder.
    riccati_tf.sweep.plot.plot_sweep : draws the phase diagram of the table.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".

    Examples
    --------
    >>> import tempfile
    >>> from riccati_tf.sweep import read_results, run_sweep
    >>> spec = {"family": {"grid": {"v": [-1.0, 1.0]}},
    ...         "params": {"A": [[-0.5, 0.0], [0.0, -1.0]], "B": [[1, 0], [0, 1]],
    ...                    "V": {"v": [[1, 0], [0, 1]]}},
    ...         "initial": {"cov": [[1, 0], [0, 1]]}}
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     result = run_sweep(spec, f"{tmp}/sweep")
    ...     table = read_results(result.out_dir)
    ...     rows = read_results(result.results_path).num_rows   # the file itself
    >>> table["v"].tolist(), table["regime"].tolist(), rows
    ([-1.0, 1.0], ['collapses', 'blows_up'], 2)
    """
    path = Path(path)
    if path.is_dir():
        manifest = read_manifest(path)
        storage = manifest["storage"]
        records, _torn = read_records(path, Layout(manifest["n_configs"],
                                                   manifest["chunk_size"]))
        res = manifest["results"]
        if res is not None:
            results = path / results_file(storage)
            data = read_or_none(results)
            if data is None or sha256(data) != res["sha256"]:
                raise InvalidInputError(f"{results}: missing or not the file the sweep "
                                        f"wrote (SHA-256); run the sweep again to rewrite it")
            return read_table_file(results, storage)
        tables = []
        for c, rec in sorted(records.items()):
            data = read_or_none(path / CHUNK_DIR / chunk_file(c, storage))
            problem = _chunk_problem(data, rec, manifest)
            if problem is not None:
                raise InvalidInputError(f"{path}: chunk {c}: {problem}; run the sweep again to "
                                        f"recompute it")
            assert data is not None  # a missing file is a problem, raised above
            tables.append(read_table_file(path / CHUNK_DIR / chunk_file(c, storage), storage))
        if not tables:
            raise InvalidInputError(f"{path}: the sweep has no finished chunk yet")
        return ResultsTable.concat(tables)
    storage = next((s for s, suffix in STORAGES.items() if path.suffix == suffix), None)
    if storage is None or not path.is_file():
        raise InvalidInputError(f"{path}: expected a sweep results folder or a results file "
                                f"({' or '.join(STORAGES.values())})")
    return read_table_file(path, storage)
