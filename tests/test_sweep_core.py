"""Sweeps on the core install: the npz store (numpy only, no pickle) next to Parquet, the
in-process default for small sweeps, and one vocabulary with Params (V, A optional)."""

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from riccati_tf.errors import InvalidInputError
from riccati_tf.sweep import parse_family, read_results, run_sweep
from riccati_tf.sweep import runner as runner_module
from riccati_tf.sweep.runner import AUTO_DASK_WORK, AUTO_WORK_WEIGHT, auto_scheduler, compute_chunk
from riccati_tf.sweep.store import CHUNK_DIR, chunk_file
from riccati_tf.sweep.tables import ResultsTable, default_storage

EXAMPLE = Path(__file__).resolve().parents[1] / "riccati_tf" / "app" / "example_specs" / \
    "sweep.yaml"
SPEC = {
    "family": {"grid": {"v": {"linspace": [-1.0, 1.0, 6]}, "a": [-0.5, 0.2, 0.5]}},
    "chunk_size": 4,
    "params": {"A": {"const": [[0.0, 0.3], [0.0, -0.6]], "a": [[1.0, 0.0], [0.0, 1.0]]},
               "B": [[1.0, 0.2], [0.2, 0.6]], "V": {"v": [[1.0, 0.0], [0.0, 1.0]]}},
    "initial": {"cov": [[1.0, 0.3], [0.3, 0.5]]},
}


def reference(spec: dict) -> ResultsTable:
    """The rows computed chunk by chunk, without any store."""
    family = parse_family(spec)
    return ResultsTable.concat([ResultsTable(compute_chunk(spec, c)[1])
                                for c in range(family.n_chunks)])


@pytest.fixture
def no_pyarrow(monkeypatch):
    """The core install: `import pyarrow` raises ImportError."""
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)


def test_without_pyarrow_the_sweep_stores_npz_and_reads_back_the_rows(tmp_path, no_pyarrow):
    assert default_storage() == "npz"
    res = run_sweep(SPEC, tmp_path / "out")
    assert res.results_path.name == "results.npz" and res.scheduler == "in-process"
    assert sorted(p.suffix for p in (tmp_path / "out" / CHUNK_DIR).iterdir()) == [".npz"] * 5
    ref = reference(SPEC)
    assert res.table() == ref and read_results(tmp_path / "out") == ref
    assert res.counts == dict(zip(*np.unique(ref["regime"].astype(str), return_counts=True),
                                  strict=True))
    assert res.table()["regime"].dtype == object  # strings read back as str, not bytes


def test_parquet_and_npz_stores_hold_the_same_rows(tmp_path):
    pytest.importorskip("pyarrow")
    a = run_sweep(SPEC, tmp_path / "p", storage="parquet")
    b = run_sweep(SPEC, tmp_path / "n", storage="npz")
    assert a.results_path.suffix == ".parquet" and b.results_path.suffix == ".npz"
    assert a.table() == b.table() == reference(SPEC)
    with pytest.raises(InvalidInputError, match="stores its results as parquet, not npz"):
        run_sweep(SPEC, tmp_path / "p", storage="npz")


def test_a_parquet_folder_without_pyarrow_names_the_extra(tmp_path, monkeypatch):
    pytest.importorskip("pyarrow")
    run_sweep(SPEC, tmp_path / "p", storage="parquet")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(InvalidInputError, match=r"pip install 'riccati-tf\[dask\]'"):
        read_results(tmp_path / "p")


@pytest.mark.parametrize("damage", ["garble", "delete"])
def test_npz_store_recomputes_a_damaged_chunk(tmp_path, no_pyarrow, damage):
    out = tmp_path / "out"
    run_sweep(SPEC, out)
    path = out / CHUNK_DIR / chunk_file(2, "npz")
    if damage == "garble":
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data))
    else:
        path.unlink()
    (out / "results.npz").unlink()
    again = run_sweep(SPEC, out)
    assert again.chunks_computed == 1 and any("chunk 2" in n for n in again.notes)
    assert again.table() == reference(SPEC)


UNPICKLED: list[int] = []


def _mark_unpickled():
    UNPICKLED.append(1)
    return 0


class _Unpickled:
    """Records in UNPICKLED that it was unpickled (it never should be)."""

    def __reduce__(self):
        return (_mark_unpickled, ())


def test_an_npz_file_with_pickled_objects_is_refused_unopened(tmp_path):
    path = tmp_path / "results.npz"
    np.savez(path, config_id=np.arange(1), x=np.array([_Unpickled()], dtype=object))
    with pytest.raises(InvalidInputError, match="not a readable npz file"):
        read_results(path)
    assert UNPICKLED == []


def test_auto_scheduler_is_in_process_below_the_threshold(monkeypatch):
    monkeypatch.setattr(runner_module.os, "cpu_count", lambda: 8)
    for analysis, weight in AUTO_WORK_WEIGHT.items():
        below = -(-AUTO_DASK_WORK // weight) - 1
        assert auto_scheduler(analysis, below) == "inprocess"
        assert auto_scheduler(analysis, below + 1) == (
            "local" if runner_module.importlib.util.find_spec("distributed") else "inprocess")
    monkeypatch.setattr(runner_module.importlib.util, "find_spec", lambda name: None)
    assert auto_scheduler("flow", 10 ** 9) == "inprocess"  # no Dask: in process, no error
    monkeypatch.setattr(runner_module.os, "cpu_count", lambda: 1)
    assert auto_scheduler("certify", 10 ** 9) == "inprocess"


#: runs the command line with pyarrow, dask and distributed unimportable (the core install)
CORE = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pyarrow", "dask", "distributed"):
            raise ImportError(f"no module named {name!r} (blocked)")
sys.meta_path.insert(0, Block())
from riccati_tf.app.cli import main
code = main(sys.argv[1:])
print("loaded:", sorted(m for m in ("pyarrow", "dask", "distributed") if m in sys.modules))
sys.exit(code)
"""


def test_core_install_command_line_sweeps_in_process(tmp_path):
    run = [sys.executable, "-c", CORE, "sweep", str(EXAMPLE), "--out", str(tmp_path / "s"),
           "--json"]
    got = subprocess.run(run, capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, got.stderr
    result = json.loads(got.stdout.splitlines()[0])
    assert result["scheduler"] == "in-process" and result["results"].endswith("results.npz")
    assert sum(result["counts"].values()) == parse_family(
        __import__("yaml").safe_load(EXAMPLE.read_text())).n_configs
    assert got.stdout.splitlines()[-1] == "loaded: []"
    # asking for Dask names the extra, quoted for every shell, and never "--scheduler needs"
    got = subprocess.run([*run[:-2], str(tmp_path / "d"), "--scheduler", "local"],
                         capture_output=True, text=True, timeout=300)
    assert got.returncode == 2 and "pip install 'riccati-tf[dask]'" in got.stderr
    assert "--scheduler needs" not in got.stderr


def test_sweep_params_use_the_names_of_params():
    """V (a matrix, affine in the axes) is what Params calls it; A may be left out (zero, as in
    Params); the older scalar v still works, with a DeprecationWarning, and gives the same
    layers."""
    no_a = {**SPEC, "params": {"B": SPEC["params"]["B"], "V": SPEC["params"]["V"]}}
    chunk = parse_family(no_a).chunk(0)
    assert np.array_equal(chunk.A, np.zeros_like(chunk.A))
    old = {**SPEC, "params": {**{k: v for k, v in SPEC["params"].items() if k != "V"},
                              "v": {"v": 1.0}}}
    with pytest.warns(DeprecationWarning, match="params.v: the scalar field v is deprecated"):
        legacy = parse_family(old).chunk(1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        new = parse_family(SPEC).chunk(1)
    for a, b in zip(legacy.V, new.V, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(legacy.A, new.A)
    with pytest.raises(InvalidInputError, match="nothing gives the dimension d"):
        parse_family({**SPEC, "params": {}})


def test_sweep_plot_takes_plot_like_every_figure_and_out_as_its_older_name(tmp_path, capsys):
    from riccati_tf.app.cli import main

    run_sweep(SPEC, tmp_path / "s")
    assert main(["sweep-plot", str(tmp_path / "s"), "--plot", str(tmp_path / "a.png")]) == 0
    assert capsys.readouterr().err == ""
    assert main(["sweep-plot", str(tmp_path / "s"), "--out", str(tmp_path / "b.png")]) == 0
    assert "older name of --plot" in capsys.readouterr().err
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()
    assert main(["sweep-plot", str(tmp_path / "s")]) == 2
    assert "--plot FILE" in capsys.readouterr().err
