"""A results folder under faults: SIGKILL at random instants, chunk files swapped, truncated or
deleted, manifests edited or garbled, two writers at once, foreign files in --out. Every run ends
with exactly the rows of an uninterrupted run (compared row for row), or stops with exit 2 and
one line saying why; nothing is lost or duplicated and no foreign file is touched."""

import json
import multiprocessing
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from riccati_tf.app import cli
from riccati_tf.errors import InvalidInputError
from riccati_tf.sweep import read_results, run_sweep
from riccati_tf.sweep.store import CHUNK_DIR, JOURNAL, LOCK, MANIFEST, RESULTS, chunk_file

pytest.importorskip("pyarrow")

#: d = 2 flow family: 96 configurations in 24 chunks of 4 (blow-ups and completed flows)
SPEC = {
    "analysis": "flow",
    "family": {"grid": {"v": {"linspace": [-1.0, 1.0, 8]}, "a": {"linspace": [-1.0, 1.0, 12]}}},
    "chunk_size": 4,
    "params": {"A": {"const": [[0.0, 0.3], [0.0, -0.6]], "a": [[1.0, 0.0], [0.0, 1.0]]},
               "B": [[1.0, 0.2], [0.2, 0.6]], "V": {"v": [[1, 0], [0, 1]]}, "b": [0.1, -0.2]},
    "initial": {"mean": [1.0, 0.0], "cov": [[1.0, 0.3], [0.3, 0.5]]},
    "t_final": 3.0,
}
N_CONFIGS, N_CHUNKS = 96, 24
ENV = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """The folder of an uninterrupted run of SPEC."""
    out = tmp_path_factory.mktemp("ref") / "sweep"
    run_sweep(SPEC, out)
    return out


@pytest.fixture(scope="module")
def reference(finished):
    """The uninterrupted run's table, as {column: array}."""
    return columns(read_results(finished / RESULTS))


@pytest.fixture
def done(tmp_path, finished):
    """A copy of the finished folder to damage."""
    return Path(shutil.copytree(finished, tmp_path / "sweep"))


def columns(table) -> dict:
    return {name: table[name]
            for name in table.column_names}


def assert_rows_of_reference(table, reference, *, complete=True):
    """Every row of `table` equals the reference row of its config id, ids strictly increasing
    (no duplicate); complete: every id present."""
    got = columns(table)
    ids = got["config_id"]
    assert list(got) == list(reference)
    assert np.all(np.diff(ids) > 0), "duplicated or unsorted config ids"
    if complete:
        np.testing.assert_array_equal(ids, np.arange(N_CONFIGS))
    for name, col in got.items():
        np.testing.assert_array_equal(col, reference[name][ids], err_msg=name)


def sweep_cli(spec_path, out, capsys, *extra):
    """(exit code, stderr lines) of `riccati-tf sweep SPEC --out OUT` run in this process."""
    code = cli.main(["sweep", str(spec_path), "--out", str(out), "--scheduler", "inprocess",
                     *extra])
    err = capsys.readouterr().err
    return code, [ln for ln in err.splitlines() if not PROGRESS.fullmatch(ln)]


PROGRESS = re.compile(r"sweep: \d+/\d+ chunks")


@pytest.fixture
def spec_path(tmp_path):
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(SPEC))
    return path


def journal(out) -> list[dict]:
    return [json.loads(line) for line in (out / JOURNAL).read_text().splitlines()]


def write_journal(out, records) -> None:
    (out / JOURNAL).write_text("".join(json.dumps(r) + "\n" for r in records))


def edit_manifest(out, **changes) -> None:
    manifest = json.loads((out / MANIFEST).read_text())
    manifest.update(changes)
    (out / MANIFEST).write_text(json.dumps(manifest))


# ----------------------------------------------------------------------------- SIGKILL


def start(spec_path, out):
    return subprocess.Popen([sys.executable, "-m", "riccati_tf.sweep", str(spec_path), str(out)],
                            env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_sigkill_at_random_instants_then_resume(tmp_path, spec_path, reference):
    """12 SIGKILLs of a real sweep process on one folder, half at a random instant after the
    process starts (often while importing), half at a random instant after a random chunk is in
    (while it writes the next); after each the folder reads back as a subset of the reference
    rows, and the last resume gives exactly the reference table."""
    out = tmp_path / "killed"
    rng = random.Random(20261130)
    killed_midway = 0
    for k in range(12):
        proc = start(spec_path, out)
        if k % 2:  # after chunk `target` is in, at a random instant within the next chunk
            target = rng.randint(1, N_CHUNKS - 1)
            for line in proc.stdout:  # "chunk d/24" once the store is open, then per chunk
                if int(line.split()[1].split(b"/")[0]) >= target:
                    break
            time.sleep(rng.uniform(0.0, 0.01))
        else:
            time.sleep(rng.uniform(0.0, 1.2))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        assert proc.returncode in (-signal.SIGKILL, 0), proc.stderr.read().decode()
        if (out / MANIFEST).exists():
            n = len({r["chunk"] for r in journal(out)}) if (out / JOURNAL).exists() else 0
            killed_midway += 0 < n < N_CHUNKS
            if n:
                assert_rows_of_reference(read_results(out), reference, complete=n == N_CHUNKS)
        if proc.returncode == 0:  # finished before the kill: start again on a fresh folder
            shutil.rmtree(out)
    assert killed_midway >= 3  # the kills did land while chunks were being written
    proc = start(spec_path, out)
    _stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr.decode()
    assert not list(out.rglob("*.tmp-*"))
    assert_rows_of_reference(read_results(out), reference)
    assert_rows_of_reference(read_results(out / RESULTS), reference)


# ----------------------------------------------------------------------------- chunk faults


def swap(out):
    shutil.copy(out / CHUNK_DIR / chunk_file(1), out / CHUNK_DIR / chunk_file(0))


def truncate(out):
    path = out / CHUNK_DIR / chunk_file(5)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def delete(out):
    (out / CHUNK_DIR / chunk_file(7)).unlink()


def garble_bytes(out):
    path = out / CHUNK_DIR / chunk_file(3)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def foreign_parquet(out):  # a valid Parquet file of the right shape, other values
    import pyarrow.parquet as pq

    table = pq.read_table(out / CHUNK_DIR / chunk_file(2))
    pq.write_table(table.set_column(1, "v", [np.zeros(table.num_rows)]),
                   out / CHUNK_DIR / chunk_file(2))


def edited_checksum(out):
    records = journal(out)
    records[4]["sha256"] = "0" * 64
    write_journal(out, records)


def swapped_records(out):  # record of chunk 1 pointing at chunk 0's checksum
    records = journal(out)
    records[1]["sha256"] = records[0]["sha256"]
    write_journal(out, records)


def results_replaced(out):
    (out / RESULTS).write_bytes(b"PAR1 not really")


@pytest.mark.parametrize("fault, chunk", [
    (swap, 0), (truncate, 5), (delete, 7), (garble_bytes, 3), (foreign_parquet, 2),
    (edited_checksum, 4), (swapped_records, 1), (results_replaced, None)])
def test_a_damaged_chunk_is_recomputed_and_said(done, spec_path, capsys, reference, fault,
                                                chunk):
    fault(done)
    code, lines = sweep_cli(spec_path, done, capsys, "--json")
    assert code == 0
    word = f"chunk {chunk}:" if chunk is not None else f"{RESULTS}:"
    assert len(lines) == 1 and word in lines[0], lines  # one note on stderr, then the result
    assert_rows_of_reference(read_results(done), reference)
    again = run_sweep(SPEC, done)  # repaired for good: nothing left to say
    assert again.notes == () and again.chunks_computed == 0


def test_a_torn_record_is_dropped(done, reference):
    records = journal(done)
    write_journal(done, records[:-3])
    with open(done / JOURNAL, "a") as fh:  # an append cut short by a crash
        fh.write(json.dumps(records[-3])[:17])
    res = run_sweep(SPEC, done)
    assert res.chunks_computed == 3 and any("torn" in n for n in res.notes)
    assert_rows_of_reference(res.table(), reference)


# ----------------------------------------------------------------------------- manifest faults


def set_field(**kw):
    return lambda out: edit_manifest(out, **kw)


def records_edit(fn):
    def edit(out):
        records = journal(out)
        fn(records)
        write_journal(out, records)
    return edit


MANIFEST_FAULTS = {
    "n_chunks fewer": (set_field(n_chunks=N_CHUNKS - 5), "n_chunks is 19"),
    "n_chunks more": (set_field(n_chunks=N_CHUNKS + 1), "n_chunks is 25"),
    "n_configs": (set_field(n_configs=80), "n_configs is 80"),
    "chunk_size": (set_field(chunk_size=8), "chunk_size is 8"),
    "n_chunks a string": (set_field(n_chunks="24"), "not a positive integer"),
    "fingerprint": (set_field(fingerprint="0" * 64), "does not have the recorded fingerprint"),
    "spec edited": (lambda out: edit_manifest(out, spec={**SPEC, "t_final": 4.0}),
                    "does not have the recorded fingerprint"),
    "format 1": (set_field(format=1), "format 1"),
    "extra field": (set_field(done=[[0, 23]]), "done: unknown field"),
    "missing field": (lambda out: (out / MANIFEST).write_text(json.dumps(
        {k: v for k, v in json.loads((out / MANIFEST).read_text()).items() if k != "columns"})),
        "no field columns"),
    "a list": (lambda out: (out / MANIFEST).write_text("[1, 2, 3]"), "a JSON list"),
    "a string": (lambda out: (out / MANIFEST).write_text('"manifest"'), "a JSON str"),
    "null": (lambda out: (out / MANIFEST).write_text("null"), "a JSON NoneType"),
    "garbage bytes": (lambda out: (out / MANIFEST).write_bytes(bytes(range(256)) * 4),
                      "not a readable sweep manifest"),
    "empty": (lambda out: (out / MANIFEST).write_bytes(b""), "not a readable sweep manifest"),
    "results record": (set_field(results={"rows": 5, "sha256": "x"}), "results must be"),
    "columns edited": (set_field(columns=["config_id", "a", "v", "status"]), "columns are"),
    "record range": (records_edit(lambda r: r[3].update(first=0, last=3)),
                     "recorded with ids 0..3"),
    "record rows": (records_edit(lambda r: r[3].update(rows=5)), "5 rows"),
    "record chunk out of range": (records_edit(lambda r: r[3].update(chunk=99)),
                                  "chunk 99 is outside 0..23"),
    "record fields": (records_edit(lambda r: r[3].pop("sha256")), "not a chunk record"),
    "record type": (records_edit(lambda r: r[3].update(rows=4.0)), "integers"),
    "record garbage line": (lambda out: (out / JOURNAL).write_bytes(
        (out / JOURNAL).read_bytes().replace(b"\n", b"\n\x00\xff garbage\n", 1)),
        "unreadable JSON"),
}


@pytest.mark.parametrize("label", sorted(MANIFEST_FAULTS))
def test_an_untrustworthy_manifest_is_refused(done, spec_path, capsys, label):
    fault, message = MANIFEST_FAULTS[label]
    fault(done)
    before = {p: p.read_bytes() for p in done.rglob("*") if p.is_file() and p.name != LOCK}
    code, lines = sweep_cli(spec_path, done, capsys)
    assert code == 2 and len(lines) == 1 and message in lines[0], lines
    after = {p: p.read_bytes() for p in done.rglob("*") if p.is_file() and p.name != LOCK}
    assert after == before  # refused before touching anything
    with pytest.raises(InvalidInputError):
        read_results(done)


# ----------------------------------------------------------------------------- two writers


def test_a_second_writer_is_refused_and_a_dead_ones_lock_is_not_stale(tmp_path, spec_path,
                                                                      capsys, reference):
    out = tmp_path / "busy"
    first = start(spec_path, out)
    first.stdout.readline()  # the store is open and locked
    first.send_signal(signal.SIGSTOP)  # holds the lock while this test looks
    code, lines = sweep_cli(spec_path, out, capsys)
    assert code == 2 and len(lines) == 1, lines
    assert f"pid {first.pid}" in lines[0] and "another sweep" in lines[0]
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    res = run_sweep(SPEC, out)  # the kernel dropped the dead writer's lock
    assert_rows_of_reference(res.table(), reference)


def _writer(out, messages) -> None:
    """A second process running the sweep: exit 0 (done), 2 (refused, message sent) or 1."""
    try:
        run_sweep(SPEC, out)
    except InvalidInputError as exc:
        messages.put(str(exc))
        os._exit(2)
    except BaseException as exc:  # anything else is the bug this test looks for
        messages.put(f"{type(exc).__name__}: {exc}")
        os._exit(1)
    os._exit(0)


def test_simultaneous_writers(tmp_path, reference):
    """Two processes (forked from this one, released together) run the sweep on one folder, 8
    times: each ends done or refused naming the other writer, never anything else, and the
    folder ends with the reference rows and no temporary file."""
    ctx = multiprocessing.get_context("fork")
    for trial in range(8):
        out = tmp_path / f"race{trial}"
        messages = ctx.SimpleQueue()
        procs = [ctx.Process(target=_writer, args=(out, messages)) for _ in range(2)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(timeout=120)
        codes = sorted(p.exitcode for p in procs)
        said = [messages.get() for c in codes if c != 0]
        assert codes in ([0, 0], [0, 2]), (codes, said)
        assert all("another sweep" in m for m in said), said
        if not (out / RESULTS).exists():  # the refused one may have come first, then quit
            run_sweep(SPEC, out)
        assert_rows_of_reference(read_results(out), reference)
        assert not list(out.rglob("*.tmp-*"))


# ----------------------------------------------------------------------------- foreign files


@pytest.mark.parametrize("name", [RESULTS, JOURNAL, CHUNK_DIR, LOCK])
def test_out_holding_foreign_files_is_refused(tmp_path, spec_path, capsys, name):
    out = tmp_path / "mine"
    out.mkdir()
    path = out / name
    if name == CHUNK_DIR:
        path.mkdir()
        (path / chunk_file(0)).write_bytes(b"my own data")
    else:
        path.write_bytes(b"my own data")
    (out / "notes.txt").write_text("unrelated")
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    code, lines = sweep_cli(spec_path, out, capsys)
    assert code == 2 and len(lines) == 1 and str(path) in lines[0], lines
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert not (out / MANIFEST).exists()


def test_out_with_unrelated_files_and_below_a_file(tmp_path, spec_path, capsys, reference):
    out = tmp_path / "shared"
    out.mkdir()
    (out / "notes.txt").write_text("unrelated")
    code, _ = sweep_cli(spec_path, out, capsys)
    assert code == 0 and (out / "notes.txt").read_text() == "unrelated"
    assert_rows_of_reference(read_results(out), reference)
    (tmp_path / "plain").write_text("a file")
    for bad in (tmp_path / "plain", tmp_path / "plain" / "below"):
        code, lines = sweep_cli(spec_path, bad, capsys)
        assert code == 2 and len(lines) == 1 and "plain" in lines[0], lines
    assert (tmp_path / "plain").read_text() == "a file"
