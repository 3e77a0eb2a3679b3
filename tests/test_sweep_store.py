"""Chunked results: a sweep killed midway resumes to exactly the rows of an uninterrupted run."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from riccati_tf.errors import InvalidInputError
from riccati_tf.sweep import plot_sweep, read_results, run_sweep
from riccati_tf.sweep.store import CHUNK_DIR, JOURNAL, MANIFEST, RESULTS

pytest.importorskip("pyarrow")

FLOW_SPEC = {
    "analysis": "flow",
    "family": {"grid": {"v": {"linspace": [-1.0, 1.0, 12]}, "a": {"linspace": [-1.0, 1.0, 20]}}},
    "chunk_size": 8,
    "params": {"A": {"const": [[0.0, 0.3], [0.0, -0.6]], "a": [[1.0, 0.0], [0.0, 1.0]]},
               "B": [[1.0, 0.2], [0.2, 0.6]], "V": {"v": [[1, 0], [0, 1]]}, "b": [0.1, -0.2]},
    "initial": {"mean": [1.0, 0.0], "cov": [[1.0, 0.3], [0.3, 0.5]]},
    "t_final": 3.0,
}

CERTIFY_SPEC = {
    "family": {"grid": {"v": {"linspace": [-1.0, 1.0, 16]}, "a": {"linspace": [-1.2, 1.2, 16]}}},
    "chunk_size": 50,
    "params": {"A": {"const": [[0.0, 0.3], [0.0, -0.6]], "a": [[1.0, 0.0], [0.0, 1.0]]},
               "B": [[1.0, 0.2], [0.2, 0.6]], "V": {"v": [[1, 0], [0, 1]]}},
    "initial": {"cov": [[1.0, 0.3], [0.3, 0.5]]},
    "plot": {"x": "a", "y": "v"},
}


def columns(table) -> dict:
    return {name: table[name]
            for name in table.column_names}


def assert_same_rows(got, ref):
    a, b = columns(got), columns(ref)
    assert list(a) == list(b)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def manifest_chunks(out) -> int:
    """The number of chunk records in the folder's manifest (complete lines of chunks.jsonl)."""
    try:
        return (out / JOURNAL).read_bytes().count(b"\n")
    except OSError:
        return 0


def test_killed_sweep_resumes_with_exactly_the_expected_rows(tmp_path):
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(FLOW_SPEC))
    out = tmp_path / "killed"
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "riccati_tf.sweep", str(spec_path), str(out)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    while manifest_chunks(out) < 1 and proc.poll() is None:  # the first chunk in, or the end
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read().decode()
    n_chunks = 30
    done = manifest_chunks(out)
    assert 1 <= done < n_chunks  # killed midway: some chunks listed, not all
    assert not (out / RESULTS).exists()

    resumed = run_sweep(FLOW_SPEC, out)
    assert resumed.chunks_resumed == done and resumed.chunks_computed == n_chunks - done
    assert not list(out.rglob("*.tmp-*"))
    ref = run_sweep(FLOW_SPEC, tmp_path / "uninterrupted")
    got = resumed.table()
    ids = got["config_id"]
    assert np.array_equal(ids, np.arange(240))  # every configuration once, in order
    assert_same_rows(got, ref.table())
    status = got["status"].tolist()
    assert {"completed", "blowup"} <= set(status)


def test_resume_after_a_crash_between_chunk_file_and_manifest(tmp_path):
    out = tmp_path / "sweep"
    full = run_sweep(CERTIFY_SPEC, out)
    reference = full.table()
    manifest = json.loads((out / MANIFEST).read_text())
    n_chunks = manifest["n_chunks"]
    # the crash: chunk 2 written but never recorded (and its file garbled), chunk 4 never
    # written, a temporary file left behind, the combined file not yet written
    records = [r for r in (out / JOURNAL).read_text().splitlines()
               if json.loads(r)["chunk"] not in (2, 4)]
    (out / JOURNAL).write_text("".join(r + "\n" for r in records))
    manifest["results"] = None
    (out / MANIFEST).write_text(json.dumps(manifest))
    (out / CHUNK_DIR / "chunk-00000002.parquet").write_bytes(b"garbage")
    (out / CHUNK_DIR / "chunk-00000004.parquet").unlink()
    (out / CHUNK_DIR / ".chunk-00000005.parquet.tmp-999-0a1b").write_bytes(b"partial")
    (out / RESULTS).unlink()
    partial = read_results(out)  # readable before the resume: the listed chunks only
    assert partial.num_rows == reference.num_rows - 2 * 50
    again = run_sweep(CERTIFY_SPEC, out)
    assert again.chunks_computed == 2 and again.chunks_resumed == n_chunks - 2
    assert again.notes == ()  # unrecorded chunks are the normal resume, not a repair
    assert not list(out.rglob("*.tmp-*"))
    assert_same_rows(again.table(), reference)
    done = run_sweep(CERTIFY_SPEC, out)  # nothing left to do
    assert done.chunks_computed == 0 and done.chunks_resumed == n_chunks


def test_a_folder_of_another_spec_is_refused(tmp_path):
    run_sweep(CERTIFY_SPEC, tmp_path / "s")
    other = {**CERTIFY_SPEC, "chunk_size": 64}
    with pytest.raises(InvalidInputError, match="different sweep spec"):
        run_sweep(other, tmp_path / "s")


def test_progress_and_counts(tmp_path):
    seen = []
    res = run_sweep(CERTIFY_SPEC, tmp_path / "p", progress=lambda d, t: seen.append((d, t)))
    assert seen[0] == (0, 6) and seen[-1] == (6, 6) and len(seen) == 7
    regimes = res.table()["regime"].tolist()
    assert res.counts == {r: regimes.count(r) for r in set(regimes)}
    assert sum(res.counts.values()) == 256


def test_phase_diagram_png(tmp_path):
    res = run_sweep(CERTIFY_SPEC, tmp_path / "p")
    for src in (res.out_dir, res.results_path):
        png = plot_sweep(src, tmp_path / "phase.png")
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(InvalidInputError, match="not a column"):
        plot_sweep(res.out_dir, tmp_path / "x.png", x="w")
    random_spec = {**CERTIFY_SPEC, "family": {"random": {"n": 300, "seed": 1, "axes": {
        "v": {"uniform": [-1.0, 1.0]}, "a": {"uniform": [-1.2, 1.2]}}}}}
    res = run_sweep(random_spec, tmp_path / "r")  # scatter, not a grid
    assert plot_sweep(res.out_dir, tmp_path / "r.png").stat().st_size > 10_000
    one_axis = {**CERTIFY_SPEC, "family": {"grid": {"v": {"linspace": [-1.0, 1.0, 30]}}},
                "params": {"A": [[0.2, 0.3], [0.0, -0.4]], "B": [[1.0, 0.2], [0.2, 0.6]],
                           "V": {"v": [[1, 0], [0, 1]]}}, "plot": {"x": "v"}}
    res = run_sweep(one_axis, tmp_path / "o")
    assert plot_sweep(res.out_dir, tmp_path / "o.png").stat().st_size > 10_000


def test_report_section_shows_the_phase_diagram():
    from riccati_tf.sweep import report_section

    sec = report_section(quick=True)
    png = sec.figures["sweep_phase_diagram.png"]
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    num = sec.numbers
    assert num["certify_agree"] == num["certify_subsample"] > 0
    assert num["batched_share"] == 1.0
    assert set(num["regime_counts"]) == {"converges", "collapses", "blows_up"}
    assert sum(num["regime_counts"].values()) == num["n_configs"]
    assert "phase" in sec.title.lower() and "certify" in sec.body
