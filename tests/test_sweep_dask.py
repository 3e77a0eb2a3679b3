"""The same sweep on a Dask LocalCluster (2 worker processes) and in-process: row for row."""

import numpy as np
import pytest

from riccati_tf.sweep import run_sweep

distributed = pytest.importorskip("distributed")
pytest.importorskip("pyarrow")

SPEC = {
    "family": {"random": {"n": 600, "seed": 11, "axes": {
        "v": {"uniform": [-1.0, 1.0]}, "a": {"uniform": [-1.2, 1.2]},
        "s": {"loguniform": [0.05, 5.0]}, "r": {"uniform": [0.0, 1.0]}}}},
    "chunk_size": 50,
    "params": {"A": {"const": [[0.0, 0.3], [0.0, -0.6]], "a": [[1.0, 0.0], [0.0, 1.0]]},
               "B": [[1.0, 0.2], [0.2, 0.6]], "V": {"v": [[1, 0], [0, 1]]}},
    # Σ0 = [[s, 0], [0, r]]: r → 0 gives nearly singular covariances
    "initial": {"cov": {"s": [[1.0, 0.0], [0.0, 0.0]], "r": [[0.0, 0.0], [0.0, 1.0]]}},
}


def test_local_cluster_matches_in_process(tmp_path):
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        on_dask = run_sweep(SPEC, tmp_path / "dask", scheduler=cluster.scheduler_address)
        workers = len(cluster.scheduler_info["workers"])
    assert workers == 2 and cluster.scheduler_address in on_dask.scheduler
    local = run_sweep(SPEC, tmp_path / "local")
    assert local.scheduler == "in-process"
    a, b = on_dask.table(), local.table()
    assert a.column_names == b.column_names and a.num_rows == b.num_rows == 600
    for name in a.column_names:
        np.testing.assert_array_equal(a[name],
                                      b[name],
                                      err_msg=name)
    assert np.array_equal(a["config_id"], np.arange(600))
    assert on_dask.chunks_computed == 12


def test_scheduler_local_starts_and_closes_its_own_cluster(tmp_path):
    spec = {**SPEC, "family": {"random": {**SPEC["family"]["random"], "n": 120}}}
    res = run_sweep(spec, tmp_path / "local", scheduler="local", n_workers=2)
    assert res.scheduler == "LocalCluster (2 worker processes)" and res.chunks_computed == 3
    ref = run_sweep(spec, tmp_path / "ref")
    for name in ref.table().column_names:
        np.testing.assert_array_equal(res.table()[name],
                                      ref.table()[name])


def test_unreachable_scheduler_is_an_input_error(tmp_path, monkeypatch):
    from riccati_tf.errors import InvalidInputError
    from riccati_tf.sweep import runner

    monkeypatch.setattr(runner, "CONNECT_TIMEOUT", "1s")
    with pytest.raises(InvalidInputError, match="cannot reach the Dask scheduler"):
        run_sweep(SPEC, tmp_path / "x", scheduler="tcp://127.0.0.1:9")
