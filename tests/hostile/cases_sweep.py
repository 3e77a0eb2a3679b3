"""Hostile sweeps: family specs with misspelled keys at every level, wrong types and sizes that
would exhaust memory; results folders with swapped, truncated or deleted chunks, edited or
garbled manifests, a second writer, a dead writer's lock; --out onto files the user owns.

A refusal must name the field, the limit or the file (checked before the error is passed on); a
result must equal, row for row, the uninterrupted run of the same spec in a fresh folder; a
refused --out must leave the user's files byte for byte as they were."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import numpy as np

from riccati_tf.errors import InvalidInputError
from riccati_tf.sweep import parse_family, read_results, run_sweep
from riccati_tf.sweep.store import (
    CHUNK_DIR,
    JOURNAL,
    LOCK,
    MANIFEST,
    RESULTS,
    ResultStore,
    chunk_file,
)

from . import CleanError, case, cases_of
from ._cli import judge, run_cli

AREA = "sweep"

BASE = {
    "family": {"grid": {"v": {"linspace": [-1.0, 1.0, 6]}, "a": {"linspace": [-1.1, 1.3, 5]}}},
    "chunk_size": 7,
    "params": {"A": {"const": [[0.0, 0.3], [0.0, -0.6]], "a": [[1.0, 0.0], [0.0, 1.0]]},
               "B": [[1.0, 0.2], [0.2, 0.6]], "V": {"v": [[1, 0], [0, 1]]}},
    "initial": {"mean": [0.2, -0.1], "cov": [[1.0, 0.3], [0.3, 0.5]]},
}
N_CONFIGS = 30
UNIFORM = {"v": {"uniform": [-1.0, 1.0]}, "a": {"uniform": [-1.0, 1.0]}}
HEADS = {"A": [[-0.5, 0.2], [0.0, -0.3]],
         "heads": [{"V": {"v": [[1, 0], [0, 1]]}, "B": [[1.0, 0.0], [0.0, 1.0]]},
                   {"V": [[0.5, 0.0], [0.0, 0.5]], "B": [[0.2, 0.1], [0.1, 0.3]]}]}


def spec_with(**changes) -> dict:
    return json.loads(json.dumps({**BASE, **changes}))


def names(exc: Exception, needle: str) -> None:
    """The refusal must say `needle` (the field path, the limit, the file)."""
    assert needle in str(exc), f"the refusal {str(exc)!r} does not name {needle!r}"


def refused_by_parse(item) -> None:
    spec, needle = item
    try:
        parse_family(spec)
    except InvalidInputError as exc:
        names(exc, needle)
        raise


# --------------------------------------------------------------- unknown keys at every level

cases_of(AREA, "error", {
    "top-level key misspelled": (spec_with(famliy={}), "famliy: unknown field; did you mean "
                                                       "'family'?"),
    "chunk_size misspelled": (spec_with(chunksize=10), "did you mean 'chunk_size'"),
    "family kind misspelled": (spec_with(family={"grdi": {"v": [1.0]}}),
                               "family.grdi: unknown field; did you mean 'grid'?"),
    "grid rule misspelled": (spec_with(family={"grid": {"v": {"linspce": [0, 1, 3]}}}),
                             "family.grid.v.linspce: unknown field; did you mean 'linspace'?"),
    "random field misspelled": (spec_with(family={"random": {
        "n": 10, "sed": 3, "axes": {"v": {"uniform": [0, 1]}}}}),
        "family.random.sed: unknown field; did you mean 'seed'?"),
    "random rule misspelled": (spec_with(family={"random": {
        "n": 10, "axes": {"v": {"unifrom": [0, 1]}}}}),
        "family.random.axes.v.unifrom: unknown field; did you mean 'uniform'?"),
    "params key misspelled": (spec_with(params={**BASE["params"], "bb": [0, 0]}),
                              "params.bb: unknown field"),
    "affine term not an axis": (spec_with(params={**BASE["params"], "A": {
        "const": [[0.0, 0.0], [0.0, 0.0]], "aa": [[1.0, 0.0], [0.0, 1.0]]}}),
        "params.A.aa: not an axis of the family"),
    "head key unknown": (spec_with(params={**HEADS, "heads": [
        HEADS["heads"][0], {**HEADS["heads"][1], "W": [[1.0, 0.0], [0.0, 1.0]]}]}),
        "params.heads[1].W: unknown field"),
    "initial key misspelled": (spec_with(initial={"cov": [[1.0, 0.0], [0.0, 1.0]],
                                                  "maen": [0, 0]}),
                               "initial.maen: unknown field; did you mean 'mean'?"),
    "covariance term not an axis": (spec_with(initial={"cov": {
        "const": [[1.0, 0.0], [0.0, 1.0]], "vv": [[0.1, 0.0], [0.0, 0.1]]}}),
        "initial.cov.vv: not an axis"),
    "particles key misspelled": (spec_with(analysis="particles", t_final=1.0, particles={
        "n_tokens": 50, "n_step": 5}), "particles.n_step: unknown field; did you mean "
                                       "'n_steps'?"),
    "plot key unknown": (spec_with(plot={"x": "v", "z": "a"}), "plot.z: unknown field"),
}, refused_by_parse)

# --------------------------------------------------------------- wrong types

cases_of(AREA, "error", {
    "chunk_size a string": (spec_with(chunk_size="8"), "chunk_size: must be an integer"),
    "chunk_size a bool": (spec_with(chunk_size=True), "chunk_size: must be an integer"),
    "random n a float": (spec_with(family={"random": {"n": 1.5e3, "axes": {
        "v": {"uniform": [0, 1]}}}}), "family.random.n: must be an integer"),
    "random seed negative": (spec_with(family={"random": {"n": 10, "seed": -4, "axes": {
        "v": {"uniform": [0, 1]}}}}), "family.random.seed: must be ≥ 0"),
    "t_final a string": (spec_with(analysis="flow", t_final="3"), "t_final: must be a number"),
    "analysis a list": (spec_with(analysis=["certify"]), "analysis: must be one of"),
    "matrix as a string": (spec_with(params={**BASE["params"], "B": "[[1, 0], [0, 1]]"}),
                           "params.B"),
    "linspace count a string": (spec_with(family={"grid": {"v": {"linspace": [0, 1, "5"]}}}),
                                "family.grid.v.linspace[2]"),
    "axis name not an identifier": (spec_with(family={"grid": {"1x": [0.0, 1.0]}}),
                                    "axis names must be identifiers"),
    "family a list": (spec_with(family=[{"grid": {"v": [1.0]}}]), "family: must be"),
    "heads a mapping": (spec_with(params={"A": HEADS["A"], "heads": HEADS["heads"][0]}),
                        "params.heads: must be a non-empty list"),
    "covariance with NaN": (spec_with(initial={"cov": [[float("nan"), 0.0], [0.0, 1.0]]}),
                            "initial.cov: contains NaN or Inf"),
}, refused_by_parse)

# --------------------------------------------------------------- sizes (refused before allocation)

cases_of(AREA, "error", {
    "linspace of 10^12 points": (spec_with(family={"grid": {"v": {"linspace": [0, 1, 10**12]}}}),
                                 "exceeds the limit 1000000 points per axis"),
    "geomspace of 10^9 points": (spec_with(family={"grid": {"v": {
        "geomspace": [1e-3, 1.0, 10**9]}}}), "exceeds the limit 1000000 points per axis"),
    "grid product 10^15": (spec_with(family={"grid": {
        f"x{k}": {"linspace": [0.0, 1.0, 1000]} for k in range(5)}}),
        "over the limit 1000000000000"),
    "random n 10^13": (spec_with(family={"random": {"n": 10**13, "axes": {
        "v": {"uniform": [0, 1]}}}}), "family.random.n: must be between 1 and 1000000000000"),
    "10^9 chunks": (spec_with(family={"random": {"n": 10**12, "axes": UNIFORM}}),
                    "over the limit 1000000; raise chunk_size"),
    "chunk of 10^8 layers": (spec_with(chunk_size=10**9, family={"random": {
        "n": 10**8, "axes": UNIFORM}}), "lower chunk_size"),
    "10^9 particle tokens": (spec_with(analysis="particles", t_final=1.0, particles={
        "n_tokens": 10**9, "n_steps": 5}), "particles.n_tokens: 1000000000 exceeds the limit"),
}, refused_by_parse, timeout=10.0)


@case(AREA, "error", timeout=10.0)
def values_list_of_two_million():
    refused_by_parse((spec_with(family={"grid": {"v": [0.5] * 2_000_001}}),
                      "2000001 values exceed the limit 1000000"))


# --------------------------------------------------------------- results folders under faults

_REFERENCE: dict = {}


def reference() -> dict:
    """The uninterrupted run of BASE, {column: array} (computed once)."""
    if not _REFERENCE:
        with tempfile.TemporaryDirectory() as tmp:
            table = run_sweep(BASE, Path(tmp) / "ref").table()
            _REFERENCE.update({n: table[n]
                               for n in table.column_names})
    return _REFERENCE


def assert_reference_rows(table) -> None:
    got = {n: table[n] for n in table.column_names}
    ref = reference()
    assert list(got) == list(ref), f"columns {list(got)} differ from {list(ref)}"
    assert np.array_equal(got["config_id"], np.arange(N_CONFIGS)), \
        "config ids lost or duplicated"
    for name, col in got.items():
        assert np.array_equal(col, ref[name]) or (
            col.dtype.kind == "f" and np.array_equal(col, ref[name], equal_nan=True)), \
            f"column {name} differs from the uninterrupted run"


def sweep_cli(out: Path, spec: dict = BASE) -> None:
    """`riccati-tf sweep` of spec into out (in-process): a clean refusal raises CleanError."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "spec.json"
        path.write_text(json.dumps(spec))
        judge(*run_cli(["sweep", str(path), "--out", str(out), "--scheduler", "inprocess"]))


def faulted_store(item) -> None:
    """Finish a sweep, apply the fault, run the sweep again: the reference rows or a refusal
    that names `needle` (None: must not be refused)."""
    fault, needle = item
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "sweep"
        run_sweep(BASE, out)
        fault(out)
        try:
            sweep_cli(out)
        except CleanError as exc:
            assert needle is not None, f"refused a repairable folder: {exc}"
            names(exc, needle)
            raise
        assert_reference_rows(read_results(out))
        assert_reference_rows(read_results(out / RESULTS))


def _chunk(out, c) -> Path:
    return out / CHUNK_DIR / chunk_file(c)


def _records(out) -> list[dict]:
    return [json.loads(line) for line in (out / JOURNAL).read_text().splitlines()]


def _rewrite_records(out, edit) -> None:
    records = _records(out)
    edit(records)
    (out / JOURNAL).write_text("".join(json.dumps(r) + "\n" for r in records))


def _manifest(out, **changes) -> None:
    data = json.loads((out / MANIFEST).read_text())
    data.update(changes)
    (out / MANIFEST).write_text(json.dumps(data))


def _torn(out) -> None:
    records = _records(out)
    (out / JOURNAL).write_text("".join(json.dumps(r) + "\n" for r in records[:-1])
                               + json.dumps(records[-1])[:20])
    _manifest(out, results=None)


def _other_writers_temporaries(out) -> None:
    (out / CHUNK_DIR / f".{chunk_file(2)}.tmp-4242-00ff").write_bytes(b"half a chunk")
    _chunk(out, 2).unlink()


cases_of(AREA, "either", {
    "chunk 1 copied over chunk 0": (lambda o: shutil.copy(_chunk(o, 1), _chunk(o, 0)), None),
    "last chunk copied over chunk 3": (lambda o: shutil.copy(_chunk(o, 4), _chunk(o, 3)), None),
    "chunk truncated": (lambda o: _chunk(o, 2).write_bytes(_chunk(o, 2).read_bytes()[:100]),
                        None),
    "chunk emptied": (lambda o: _chunk(o, 4).write_bytes(b""), None),
    "chunk deleted": (lambda o: _chunk(o, 1).unlink(), None),
    "chunk folder deleted": (lambda o: shutil.rmtree(o / CHUNK_DIR), None),
    "results.parquet replaced": (lambda o: (o / RESULTS).write_bytes(b"PAR1 garbage"), None),
    "results.parquet deleted": (lambda o: (o / RESULTS).unlink(), None),
    "record checksum edited": (lambda o: _rewrite_records(
        o, lambda r: r[2].update(sha256="f" * 64)), None),
    "torn last record": (_torn, None),
    "another writer's temporaries": (_other_writers_temporaries, None),
    "stale lock of a dead writer": (lambda o: (o / LOCK).write_text(json.dumps(
        {"writer": "riccati-tf sweep", "pid": 999999, "host": "gone"})), None),
}, faulted_store)

cases_of(AREA, "error", {
    "n_chunks edited down": (lambda o: _manifest(o, n_chunks=3), "n_chunks is 3"),
    "n_chunks edited up": (lambda o: _manifest(o, n_chunks=9), "n_chunks is 9"),
    "n_configs edited": (lambda o: _manifest(o, n_configs=28), "n_configs is 28"),
    "manifest a list": (lambda o: (o / MANIFEST).write_text("[]"), "a JSON list"),
    "manifest columns edited": (lambda o: _manifest(o, columns=["config_id"]), "columns are"),
    "manifest plot garbage": (lambda o: _manifest(o, plot={"x": 1}), "plot must be"),
    "manifest of another version": (lambda o: _manifest(o, format=1), "format 1"),
    "manifest garbage bytes": (lambda o: (o / MANIFEST).write_bytes(b"\xff\xfe\x00garbage"),
                               "not a readable sweep manifest"),
    "folder of another spec": (lambda o: (shutil.rmtree(o), run_sweep(
        spec_with(chunk_size=4), o)), "different sweep spec"),
    "fingerprint edited": (lambda o: _manifest(o, fingerprint="ab" * 32),
                           "does not have the recorded fingerprint"),
    "record range edited": (lambda o: _rewrite_records(
        o, lambda r: r[1].update(first=0, last=6)), "recorded with ids 0..6"),
    "record of a chunk beyond the end": (lambda o: _rewrite_records(
        o, lambda r: r.append({**r[0], "chunk": 5})), "chunk 5 is outside 0..4"),
    "record duplicated with other ids": (lambda o: _rewrite_records(
        o, lambda r: r.append({**r[0], "chunk": 1})), "chunk 1 is recorded with ids 0..6"),
}, faulted_store)


@case(AREA, "error")
def second_writer_while_the_first_holds_the_folder():
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "sweep"
        fam = parse_family(BASE)
        with ResultStore.open(out, fam):
            try:
                sweep_cli(out)
            except CleanError as exc:
                names(exc, "another sweep")
                raise


# --------------------------------------------------------------- --out onto the user's files


def foreign_out(item) -> None:
    """--out is a folder (or below a file) holding the user's files: refused naming the file,
    every user file left as it was."""
    command, files, sub, needle = item
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "mine"
        root.mkdir()
        for name, data in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes(data)
        before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
        out = root / sub
        try:
            if command == "sweep":
                sweep_cli(out)
            else:
                judge(*run_cli(["report", "--quick", "--out", str(out)]))
        except CleanError as exc:
            names(exc, needle)
            raise
        finally:
            after = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
            assert after == before, "a file of the user's was changed"


cases_of(AREA, "error", {
    "sweep --out onto a user's results.parquet": (
        "sweep", {RESULTS: b"user table", "notes.txt": b"x"}, "", RESULTS),
    "sweep --out onto a user's chunks folder": (
        "sweep", {f"{CHUNK_DIR}/{chunk_file(0)}": b"user chunk"}, "", CHUNK_DIR),
    "sweep --out onto a user's chunks.jsonl": ("sweep", {JOURNAL: b"{}\n"}, "", JOURNAL),
    "sweep --out onto a user's writer.lock": ("sweep", {LOCK: b"do not touch"}, "", LOCK),
    "sweep --out below a regular file": ("sweep", {"plain.txt": b"text"}, "plain.txt/out",
                                         "plain.txt"),
    "sweep --out is a regular file": ("sweep", {"plain.txt": b"text"}, "plain.txt",
                                      "not a folder"),
    "report --out onto a user's index.html": ("report", {"index.html": b"<p>mine</p>"}, "",
                                              "index.html"),
    "report --out onto a user's summary.json": ("report", {"summary.json": b"{}"}, "",
                                                "summary.json"),
    "report --out with a forged marker": ("report", {".riccati-tf-files.json": b"[1]"}, "",
                                          ".riccati-tf-files.json"),
    "report --out below a regular file": ("report", {"plain.txt": b"text"}, "plain.txt/r",
                                          "plain.txt"),
}, foreign_out)


@case(AREA, "either")
def sweep_into_a_folder_with_unrelated_files():
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "shared"
        out.mkdir()
        (out / "notes.txt").write_text("keep me")
        sweep_cli(out)
        assert (out / "notes.txt").read_text() == "keep me", "a user's file was changed"
        assert_reference_rows(read_results(out))
        sweep_cli(out)  # its own folder again: resumed, nothing to do
        assert_reference_rows(read_results(out))


@case(AREA, "error")
def sweep_plot_of_a_garbage_parquet_file():
    with tempfile.TemporaryDirectory() as tmp:
        bad = Path(tmp) / "results.parquet"
        bad.write_bytes(b"PAR1" + bytes(200))
        try:
            judge(*run_cli(["sweep-plot", str(bad), "--plot", str(Path(tmp) / "p.png")]))
        except CleanError as exc:
            names(exc, "not a readable Parquet file")
            raise


def sweep_plot_out(item) -> None:
    """sweep-plot --plot onto a user's non-PNG file or below a regular file: refused naming it,
    the user's file unchanged."""
    target, needle = item
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "sweep"
        run_sweep(BASE, out)
        user = Path(tmp) / "data.csv"
        user.write_text("a,b\n1,2\n")
        try:
            judge(*run_cli(["sweep-plot", str(out), "--plot", target.format(tmp=tmp)]))
        except CleanError as exc:
            names(exc, needle)
            raise
        finally:
            assert user.read_text() == "a,b\n1,2\n", "the user's file was changed"


cases_of(AREA, "error", {
    "sweep-plot --plot onto a user's csv": ("{tmp}/data.csv", "not a PNG image"),
    "sweep-plot --plot below a regular file": ("{tmp}/data.csv/phase.png", "data.csv"),
    "sweep-plot --plot onto a folder": ("{tmp}/sweep", "is a folder"),
}, sweep_plot_out)


def workers_below_one(item) -> None:
    """`sweep --workers N` with N < 1 (or not an integer) is refused, exit 2 naming --workers,
    whether the store has work left or is complete (a complete one ran nothing and exited 0,
    so the bad count was never looked at); the finished store is left as it was."""
    workers, finished = item
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "sweep"
        if finished:
            run_sweep(BASE, out)
        before = sorted((p.name, p.stat().st_mtime_ns) for p in out.rglob("*")) \
            if finished else None
        path = Path(tmp) / "spec.json"
        path.write_text(json.dumps(BASE))
        try:
            judge(*run_cli(["sweep", str(path), "--out", str(out), "--workers", workers]))
        except CleanError as exc:
            names(exc, "--workers")
            raise
        finally:
            if finished:
                assert sorted((p.name, p.stat().st_mtime_ns) for p in out.rglob("*")) == \
                    before, "the finished store was changed"


cases_of(AREA, "error", {
    f"sweep --workers {n} on a {'finished' if done else 'new'} store": (n, done)
    for n in ("-3", "0", "-1", "-0", "1.5", "two") for done in (True, False)
}, workers_below_one, timeout=60)
