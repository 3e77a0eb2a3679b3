"""Chunked Parquet results with a JSON manifest: atomic writes, exact resume.

    OUT/manifest.json          {format, fingerprint, spec, n_configs, chunk_size, n_chunks,
                                columns, done: [[first, last], ...], complete, plot}
    OUT/chunks/chunk-<c>.parquet   (8-digit c) the rows of configurations c·chunk_size, ...
    OUT/results.parquet        all rows sorted by config_id, written once every chunk is in

`done` lists the finished chunks as inclusive index ranges, so the manifest stays a few lines
long however many chunks there are (rewriting it after each chunk costs O(ranges), not O(chunks)).

Invariant: a chunk counts as done iff the manifest lists it, and the manifest lists a chunk only
after its Parquet file has been written under a temporary name, flushed and renamed into place
(os.replace is atomic on POSIX), and the manifest itself is replaced the same way. A sweep killed
at any instant therefore leaves a manifest naming only complete files; on resume the missing
chunks are recomputed (deterministically, from the spec and the chunk index) and a chunk file
written but not yet listed is simply overwritten: no row is lost and none is duplicated.
pyarrow is imported only here, inside the functions that need it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from ..errors import InvalidInputError

FORMAT = 1
MANIFEST = "manifest.json"
RESULTS = "results.parquet"
CHUNK_DIR = "chunks"


def _pa():
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - depends on the installation
        raise InvalidInputError("sweeps store results with pyarrow: install the extra "
                                "`pip install riccati-tf[dask]`") from None
    return pa, pq


def _fsync_write(path: Path, data: bytes) -> None:
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write to `path.tmp-<pid>`, fsync, then rename over `path` (readers never see a partial
    file)."""
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    _fsync_write(tmp, data)
    os.replace(tmp, path)


def table_from_columns(columns: dict[str, np.ndarray]):
    """A pyarrow Table from {name: 1-D numpy array} (object arrays of str → string columns)."""
    pa, _ = _pa()
    arrays = {}
    for name, col in columns.items():
        col = np.asarray(col)
        arrays[name] = pa.array(col.tolist(), type=pa.string()) if col.dtype.kind in "OU" \
            else pa.array(col)
    return pa.table(arrays)


def _table_bytes(table) -> bytes:
    pa, pq = _pa()
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue().to_pybytes()


def chunk_file(index: int) -> str:
    return f"chunk-{index:08d}.parquet"


def to_ranges(indices) -> list[list[int]]:
    """Sorted inclusive ranges [[a, b], ...] covering exactly the given chunk indices."""
    out: list[list[int]] = []
    for c in sorted(set(indices)):
        if out and c == out[-1][1] + 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return out


def from_ranges(ranges) -> set[int]:
    return {c for a, b in ranges for c in range(int(a), int(b) + 1)}


class ResultStore:
    """The results folder of one sweep (one spec fingerprint). Single writer: the process that
    runs the sweep; Dask workers only compute and return rows."""

    def __init__(self, root: Path, manifest: dict):
        self.root = root
        self.manifest = manifest

    # ----------------------------------------------------------------- opening

    @classmethod
    def open(cls, root, *, fingerprint: str, spec: dict, n_configs: int, chunk_size: int,
             plot: tuple | None = None) -> ResultStore:
        """Open (resume) or create the folder. Refuses a folder holding another spec's results.
        plot: the default phase-diagram axes (x, y), recorded in the manifest."""
        root = Path(root)
        root.mkdir(parents=True, exist_ok=True)
        (root / CHUNK_DIR).mkdir(exist_ok=True)
        path = root / MANIFEST
        if path.exists():
            manifest = read_manifest(root)
            if manifest.get("fingerprint") != fingerprint:
                raise InvalidInputError(
                    f"{root}: the folder holds results of a different sweep spec (fingerprint "
                    f"{str(manifest.get('fingerprint'))[:12]}…, this spec {fingerprint[:12]}…); "
                    f"use another --out folder")
        else:
            manifest = {"format": FORMAT, "fingerprint": fingerprint, "spec": spec,
                        "n_configs": n_configs, "chunk_size": chunk_size,
                        "n_chunks": -(-n_configs // chunk_size), "columns": None, "done": [],
                        "complete": False}
        manifest["plot"] = list(plot) if plot is not None else None
        atomic_write_bytes(path, json.dumps(manifest, indent=1).encode())
        store = cls(root, manifest)
        store._remove_stale_temporaries()
        return store

    def _remove_stale_temporaries(self) -> None:
        """Temporary files of a killed writer (never listed in the manifest) are deleted."""
        for tmp in [*self.root.glob("*.tmp-*"), *(self.root / CHUNK_DIR).glob("*.tmp-*")]:
            tmp.unlink(missing_ok=True)

    # ----------------------------------------------------------------- state

    @property
    def n_chunks(self) -> int:
        return int(self.manifest["n_chunks"])

    def done(self) -> set[int]:
        """Indices of the chunks listed in the manifest whose file is present."""
        return {c for c in from_ranges(self.manifest["done"])
                if (self.root / CHUNK_DIR / chunk_file(c)).exists()}

    def missing(self) -> list[int]:
        done = self.done()
        return [c for c in range(self.n_chunks) if c not in done]

    # ----------------------------------------------------------------- writing

    def write_chunk(self, index: int, columns: dict[str, np.ndarray]) -> Path:
        """Write chunk `index` atomically, then list it in the manifest (atomically)."""
        table = table_from_columns(columns)
        names = table.column_names
        if self.manifest["columns"] is None:
            self.manifest["columns"] = names
        elif self.manifest["columns"] != names:
            raise InvalidInputError(f"chunk {index} has columns {names}, the results have "
                                    f"{self.manifest['columns']}")
        path = self.root / CHUNK_DIR / chunk_file(index)
        atomic_write_bytes(path, _table_bytes(table))
        self.manifest["done"] = to_ranges(from_ranges(self.manifest["done"]) | {index})
        self._save()
        return path

    def _save(self) -> None:
        atomic_write_bytes(self.root / MANIFEST, json.dumps(self.manifest, indent=1).encode())

    def finalize(self) -> Path:
        """Once every chunk is in: write results.parquet (sorted by config_id), mark complete."""
        missing = self.missing()
        if missing:
            raise InvalidInputError(f"{self.root}: {len(missing)} chunk(s) missing (first "
                                    f"{missing[0]}); run the sweep again to resume")
        table = self._concat()
        atomic_write_bytes(self.root / RESULTS, _table_bytes(table))
        self.manifest["complete"] = True
        self._save()
        return self.root / RESULTS

    def _concat(self):
        pa, pq = _pa()
        tables = [pq.read_table(self.root / CHUNK_DIR / chunk_file(c))
                  for c in range(self.n_chunks)]
        return pa.concat_tables(tables)


def read_manifest(root) -> dict:
    path = Path(root) / MANIFEST
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidInputError(f"{path}: not a readable sweep manifest ({exc})") from None


def read_results(path):
    """The results table (pyarrow.Table) of a sweep: a results folder (its results.parquet when
    complete, else the chunks listed in the manifest, in chunk order) or a .parquet file."""
    pa, pq = _pa()
    path = Path(path)
    if path.is_dir():
        manifest = read_manifest(path)
        if manifest.get("complete") and (path / RESULTS).exists():
            return pq.read_table(path / RESULTS)
        tables = [pq.read_table(path / CHUNK_DIR / chunk_file(c))
                  for c in sorted(from_ranges(manifest["done"]))]
        if not tables:
            raise InvalidInputError(f"{path}: the sweep has no finished chunk yet")
        return pa.concat_tables(tables)
    if path.suffix != ".parquet" or not path.exists():
        raise InvalidInputError(f"{path}: expected a sweep results folder or a .parquet file")
    return pq.read_table(path)
