"""The rows of a sweep as columns, and the two file formats that store them.

    ResultsTable          {column name: 1-D numpy array}, read-only, in the order written
    encode(storage, columns) -> bytes      decode(storage, data) -> columns | None

Storage formats (the manifest of a results folder records which one its files use):

- "parquet": Apache Parquet (zstd), written and read with pyarrow — the extra
  ``pip install 'riccati-tf[dask]'``. The default when pyarrow is installed.
- "npz": numpy's .npz (a zip of one .npy array per column, deflated), strings stored as
  fixed-width unicode arrays: written and read by numpy alone, never with pickle
  (``allow_pickle=False``). The default on the core install.

Either way a column holds int64 (config_id), float64 (axis values, times; NaN for None),
bool or str values; reading gives the same numpy arrays (strings as object arrays of str).
pyarrow is imported only inside the functions of the Parquet format.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InvalidInputError

__all__ = ["STORAGES", "ResultsTable"]

#: the storage formats and the suffix of their files
STORAGES = {"parquet": ".parquet", "npz": ".npz"}
#: the formats' names in messages
FORMAT_NAMES = {"parquet": "Parquet", "npz": "npz"}
DASK_EXTRA = "pip install 'riccati-tf[dask]'"


def require_pyarrow() -> tuple[Any, Any]:
    """(pyarrow, pyarrow.parquet), or InvalidInputError naming the extra to install."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise InvalidInputError(f"Parquet files are read and written with pyarrow: install "
                                f"the extra `{DASK_EXTRA}`") from None
    return pa, pq


def default_storage() -> str:
    """"parquet" when pyarrow can be imported, else "npz" (numpy only)."""
    try:
        require_pyarrow()
    except InvalidInputError:
        return "npz"
    return "parquet"


@dataclass(frozen=True, eq=False)
class ResultsTable(Mapping[str, np.ndarray]):
    """The rows of a sweep, sorted by config_id: one read-only 1-D numpy array per column.

    A mapping {column name: array} in the order of the results (config_id, one column per
    axis, then the analysis columns), so ``table["regime"]``, ``dict(table)`` and
    ``pandas.DataFrame(dict(table))`` work. Strings are object arrays of str; NaN stands for
    None in float columns.

    Parameters
    ----------
    columns : dict of str to (n,) ndarray
        The columns, all of one length.

    Raises
    ------
    InvalidInputError
        When the columns are not 1-D arrays of one length.

    See Also
    --------
    riccati_tf.sweep.store.read_results : reads one from a results folder or file.

    References
    ----------
    .. [1] NEP 1, "A simple file format for NumPy arrays" (the .npy arrays of an npz file).
    .. [2] Apache Parquet file format, https://parquet.apache.org/docs/file-format/.

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.sweep.tables import ResultsTable
    >>> t = ResultsTable({"config_id": np.arange(2), "regime": np.array(["a", "b"], object)})
    >>> t.column_names, t.num_rows, t["regime"].tolist()
    (['config_id', 'regime'], 2, ['a', 'b'])
    """

    columns: dict[str, np.ndarray]

    def __post_init__(self) -> None:
        frozen = {}
        for name, col in self.columns.items():
            arr = np.array(col, dtype=object if np.asarray(col).dtype.kind in "OU" else None)
            if arr.ndim != 1:
                raise InvalidInputError(f"column {name!r}: must be 1-D, got shape {arr.shape}")
            arr.flags.writeable = False
            frozen[str(name)] = arr
        if len({len(a) for a in frozen.values()}) > 1:
            raise InvalidInputError("the columns of a results table must have one length")
        object.__setattr__(self, "columns", frozen)

    def __getitem__(self, name: str) -> np.ndarray:
        try:
            return self.columns[name]
        except KeyError:
            raise KeyError(f"{name!r} is not a column of the results "
                           f"({', '.join(self.columns)})") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self.columns)

    def __len__(self) -> int:
        return len(self.columns)

    @property
    def column_names(self) -> list[str]:
        """The column names, in order."""
        return list(self.columns)

    @property
    def num_rows(self) -> int:
        """The number of rows (configurations)."""
        return len(next(iter(self.columns.values()))) if self.columns else 0

    def to_arrow(self) -> Any:
        """The table as a pyarrow Table (needs pyarrow)."""
        return _arrow_table(self.columns)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ResultsTable):
            return NotImplemented
        return self.column_names == other.column_names and all(
            np.array_equal(a, b, equal_nan=a.dtype.kind == "f" and b.dtype.kind == "f")
            for a, b in zip(self.columns.values(), other.columns.values(), strict=True))

    __hash__ = None  # type: ignore[assignment]  # a mutable-looking mapping of arrays

    def __repr__(self) -> str:
        return f"ResultsTable({self.num_rows} rows: {', '.join(self.columns)})"

    @classmethod
    def concat(cls, tables: list[ResultsTable]) -> ResultsTable:
        """The rows of `tables` one after another (same columns in the same order)."""
        names = tables[0].column_names
        if any(t.column_names != names for t in tables):
            raise InvalidInputError("results tables with different columns cannot be joined")
        return cls({n: np.concatenate([t.columns[n] for t in tables]) for n in names})


# ----------------------------------------------------------------------- Parquet (pyarrow)


def _arrow_table(columns: Mapping[str, np.ndarray]) -> Any:
    pa, _ = require_pyarrow()
    arrays = {}
    for name, col in columns.items():
        col = np.asarray(col)
        arrays[name] = pa.array(col.tolist(), type=pa.string()) if col.dtype.kind in "OU" \
            else pa.array(col)
    return pa.table(arrays)


def _parquet_bytes(columns: Mapping[str, np.ndarray]) -> bytes:
    pa, pq = require_pyarrow()
    sink = pa.BufferOutputStream()
    pq.write_table(_arrow_table(columns), sink, compression="zstd")
    return bytes(sink.getvalue().to_pybytes())


def _parquet_columns(data: bytes) -> ResultsTable | None:
    pa, pq = require_pyarrow()
    try:
        table = pq.read_table(io.BytesIO(data))
    except (pa.ArrowException, OSError, ValueError):
        return None
    return ResultsTable({name: table.column(name).to_numpy(zero_copy_only=False)
                         for name in table.column_names})


# ----------------------------------------------------------------------- npz (numpy only)


def _npz_bytes(columns: Mapping[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, col in columns.items():
            arr = np.asarray(col)
            if arr.dtype.kind == "O":  # strings: fixed-width unicode, no pickle
                arr = arr.astype(str) if arr.size else np.zeros(0, dtype="<U1")
            with zf.open(f"{name}.npy", "w") as fh:
                np.lib.format.write_array(fh, np.ascontiguousarray(arr), allow_pickle=False)
    return buffer.getvalue()


def _npz_columns(data: bytes) -> ResultsTable | None:
    try:  # the members read as io.arrays reads them: never unpickled
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            columns = {name.removesuffix(".npy"): np.lib.format.read_array(
                zf.open(name), allow_pickle=False) for name in zf.namelist()}
        return ResultsTable(columns)
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, InvalidInputError):
        return None


def encode(storage: str, columns: Mapping[str, np.ndarray]) -> bytes:
    """The bytes of a file of the given storage format holding `columns`."""
    return _parquet_bytes(columns) if storage == "parquet" else _npz_bytes(columns)


def decode(storage: str, data: bytes) -> ResultsTable | None:
    """The columns in `data`, or None when the bytes are not a readable file of the format."""
    return _parquet_columns(data) if storage == "parquet" else _npz_columns(data)
