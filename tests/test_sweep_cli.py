"""`riccati-tf sweep` / `sweep-plot` through riccati_tf.app.cli.main, in-process; the Dask
LocalCluster default is exercised in test_sweep_dask.py."""

import json

import numpy as np
import pytest

from riccati_tf.app import cli
from riccati_tf.sweep import read_results
from riccati_tf.sweep.cli import PROGRESS_STEP

pytest.importorskip("pyarrow")

SPEC = {
    "family": {"grid": {"v": {"linspace": [-1.0, 1.0, 6]}, "a": {"linspace": [-1.0, 1.0, 4]}}},
    "chunk_size": 8,
    "params": {"A": {"const": [[0.0, 0.3], [0.0, -0.6]], "a": [[1.0, 0.0], [0.0, 1.0]]},
               "B": [[1.0, 0.2], [0.2, 0.6]], "V": {"v": [[1, 0], [0, 1]]}},
    "initial": {"cov": [[1.0, 0.3], [0.3, 0.5]]},
}


@pytest.fixture
def main():
    return cli.main


def test_sweep_and_sweep_plot(tmp_path, capsys, main):
    spec = tmp_path / "phase.json"
    spec.write_text(json.dumps(SPEC))
    fig = tmp_path / "direct.png"
    code = main(["sweep", str(spec), "--scheduler", "inprocess", "--json", "--plot", str(fig)])
    out, err = capsys.readouterr()
    assert code == 0, err
    got = json.loads(out)
    assert got["n_configs"] == 24 and got["chunks_computed"] == 3
    assert got["results"] == str(tmp_path / "phase.sweep" / "results.parquet")
    assert "sweep: 3/3 chunks" in err and fig.read_bytes()[:4] == b"\x89PNG"
    table = read_results(tmp_path / "phase.sweep")
    assert np.array_equal(table["config_id"], np.arange(24))
    assert sum(got["counts"].values()) == 24

    png = tmp_path / "plots" / "phase.png"
    assert main(["sweep-plot", str(tmp_path / "phase.sweep"), "--plot", str(png)]) == 0
    assert png.read_bytes()[:4] == b"\x89PNG" and str(png) in capsys.readouterr().out
    # resume: nothing left to compute
    assert main(["sweep", str(spec), "--scheduler", "inprocess", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["chunks_resumed"] == 3


def test_sweep_summary_reads_as_text_and_logs_progress_sparsely(tmp_path, capsys, main):
    # the summary names each regime with its count (no JSON dict, no empty notes list), and
    # progress written to a log (stderr not a terminal) comes at every tenth of the chunks
    spec = tmp_path / "phase.json"
    spec.write_text(json.dumps({**SPEC, "chunk_size": 1}))
    assert main(["sweep", str(spec), "--scheduler", "inprocess"]) == 0
    out, err = capsys.readouterr()
    assert "{" not in out and "[]" not in out and "notes" not in out
    regimes = next(line for line in out.splitlines() if line.startswith("regimes"))
    counts = {name: int(n) for name, n in
              (item.rsplit(" ", 1) for item in regimes.split(None, 1)[1].split(", "))}
    got = read_results(tmp_path / "phase.sweep")["regime"].tolist()
    assert counts == {r: got.count(r) for r in set(got)}
    progress = [ln for ln in err.splitlines() if ln.startswith("sweep: ") and "chunks" in ln]
    # 25 calls (0 … 24 of 24 chunks): a line each on a terminal, in a log the first one, the
    # last one and those a tenth apart
    assert 5 <= len(progress) <= 1 / PROGRESS_STEP + 2 and progress[-1] == "sweep: 24/24 chunks"


@pytest.mark.parametrize("spec, message", [
    ({**SPEC, "chunk_size": -1}, "chunk_size: must be ≥ 1"),
    ({**SPEC, "family": {"grid": {"v": {"linspace": [0, 1, "3"]}}}}, "family.grid.v.linspace[2]"),
])
def test_bad_sweep_specs_exit_2(tmp_path, capsys, main, spec, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(spec))
    assert main(["sweep", str(path), "--scheduler", "inprocess"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_sweep_plot_errors_exit_2(tmp_path, capsys, main):
    assert main(["sweep-plot", str(tmp_path / "nothing"), "--plot", str(tmp_path / "x.png")]) == 2
    assert "expected a sweep results folder" in capsys.readouterr().err
