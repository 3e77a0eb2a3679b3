"""Hostile files (area "files"): every input option of the model subcommands given a file of
the wrong kind (exit 2 naming the option and the kind expected, before a model is looked at);
files whose unpickling would run code (refused, the code never runs); token ids beyond int64
(the value read is named); layers through JSON (equal bit for bit); an output folder whose
index another writer forged."""

from __future__ import annotations

import io
import json
import os
import pickle
import tempfile
from pathlib import Path

import numpy as np

from riccati_tf import Head, Params
from riccati_tf.io.files import MARKER, OutputFolder
from riccati_tf.io.serialize import params_from_json, to_jsonable

from . import cases_of
from ._cli import run_cli
from .cases_cli import clean

AREA = "files"


class _Payload:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.mkdir, (self.marker,)


def _npy(array) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def _objects(marker: str) -> np.ndarray:
    out = np.empty(2, dtype=object)
    out[0], out[1] = _Payload(marker), 1
    return out


#: wrong kinds: name → bytes of the file given a marker path (None: a folder)
WRONG = {
    "text": lambda m: b"the quick brown fox\n",
    "empty": lambda m: b"",
    "truncated npy": lambda m: _npy(np.arange(40).reshape(4, 10))[:-17],
    "pickle": lambda m: pickle.dumps(_Payload(m)),
    "object npy": lambda m: _npy(_objects(m)),
    "bool npy": lambda m: _npy(np.ones((2, 3), dtype=bool)),
    "folder": None,
}
RIGHT = {"--tokens": "npy of ids", "--hidden": "npz", "--text": "text"}


def _wrong_kind(item: tuple[str, str, str]) -> None:
    command, option, kind = item
    with tempfile.TemporaryDirectory() as tmp:
        marker = str(Path(tmp) / "ran")
        path = Path(tmp) / "input.npy"
        make = WRONG[kind]
        if make is None:
            path.mkdir()
        else:
            path.write_bytes(make(marker))
        try:
            clean(*run_cli([command, "--model", str(Path(tmp) / "no-model"), option, str(path),
                            "--out", str(Path(tmp) / "o")]), (option, "expected"))
        finally:
            assert not os.path.exists(marker), "the payload ran"


cases_of(AREA, "error", {f"{c} {o} given {k}": (c, o, k)
                         for c in ("probe", "atlas", "compare") for o in RIGHT for k in WRONG
                         if k != RIGHT[o]}, _wrong_kind)


def _huge_id(dtype: type) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ids.npy"
        big = np.iinfo(dtype).max
        np.save(path, np.array([[1, big, 2]], dtype=dtype))
        code, out, err = run_cli(["atlas", "--model", str(Path(tmp) / "m"), "--tokens", str(path),
                                  "--out", str(Path(tmp) / "o")])
        clean(code, out, err, ("--tokens", f"token id {big} (sequence 1, position 2)"))


cases_of(AREA, "error", {"token id 2^64 - 1": np.uint64}, _huge_id)


def _round_trip(p: Params) -> None:
    q = params_from_json(json.loads(json.dumps(to_jsonable(p), allow_nan=False)))
    np.testing.assert_array_equal(p.A, q.A)
    np.testing.assert_array_equal(p.b, q.b)
    assert [f is None for f in p.factors] == [f is None for f in q.factors]
    for h in range(len(p.heads)):
        for x, y in zip(p.heads[h], q.heads[h], strict=True):
            np.testing.assert_array_equal(x, y)


_ONE = np.full((1, 3), 1e-310)
cases_of(AREA, "result", {
    "layer json: subnormal factored head": Params(A=-np.eye(3), heads=[Head(_ONE, _ONE, _ONE,
                                                                            _ONE.T)]),
    "layer json: huge dense heads": Params(A=1e300 * np.eye(2),
                                           heads=[(1e300 * np.eye(2), -np.eye(2))] * 3),
}, _round_trip)


def _forged_index(index: dict) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        OutputFolder.open(out).write({"a.json": b"{}"})
        (out / MARKER).write_text(json.dumps(index))
        (out / "b.json").write_bytes(b"theirs")
        try:
            OutputFolder.open(out).write({"a.json": b"[1]"})
        except Exception:
            assert (out / "b.json").read_bytes() == b"theirs"
            raise
        raise AssertionError("a forged index was accepted")


cases_of(AREA, "error", {
    "index pending outside the folder": {"writer": "riccati-tf", "files": {}, "pending": {
        "run": "r", "files": {"../b.json": ["..b.json.tmp-1-00", "0" * 64]}}},
    "index pending over another's file": {"writer": "riccati-tf", "files": {}, "pending": {
        "run": "r", "files": {"b.json": ["../b.json", "0" * 64]}}},
    "index runs not strings": {"writer": "riccati-tf", "files": {}, "runs": {"a.json": 1}},
}, _forged_index)
