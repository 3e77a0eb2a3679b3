"""The flow and particles analyses of a sweep against direct calls of flow / simulate."""

import numpy as np
import pytest

from riccati_tf import Gaussian, Params, flow
from riccati_tf.sweep import compute_chunk, parse_family, run_sweep

pytest.importorskip("pyarrow")

BASE = {
    "family": {"grid": {"v": [-0.8, 0.4, 0.9], "a": [-0.5, 0.3]}},
    "chunk_size": 4,
    "params": {"A": {"const": [[0.0, 0.3], [-0.3, -0.2]], "a": [[1.0, 0.0], [0.0, 1.0]]},
               "B": [[1.0, 0.2], [0.2, 0.6]], "v": {"v": 1.0}, "b": [0.2, -0.1]},
    "initial": {"mean": [0.5, 0.0], "cov": [[1.0, 0.3], [0.3, 0.5]]},
}


def direct(v, a):
    p = Params(A=[[a, 0.3], [-0.3, a - 0.2]], B=[[1.0, 0.2], [0.2, 0.6]], V=v * np.eye(2),
               b=[0.2, -0.1])
    return p, Gaussian([0.5, 0.0], [[1.0, 0.3], [0.3, 0.5]])


def test_flow_analysis_is_flow_per_configuration():
    spec = {**BASE, "analysis": "flow", "t_final": 4.0}
    fam = parse_family(spec)
    rows = [compute_chunk(spec, c)[1] for c in range(fam.n_chunks)]
    cols = {k: np.concatenate([r[k] for r in rows]) for k in rows[0]}
    assert set(cols["status"]) == {"completed", "blowup"}
    for i in range(fam.n_configs):
        p, g = direct(cols["v"][i], cols["a"][i])
        tr = flow(p, g, 4.0, t_eval=[0.0, 4.0])
        assert cols["status"][i] == tr.status
        if tr.blowup_time is None:
            assert np.isnan(cols["blowup_time"][i])
        else:
            assert cols["blowup_time"][i] == tr.blowup_time
        eig = np.linalg.eigvalsh(tr.cov[-1])
        assert (cols["cov_eig_min"][i], cols["cov_eig_max"][i]) == (eig[0], eig[-1])
        assert cols["mean_norm"][i] == np.linalg.norm(tr.mean[-1])


def test_particles_analysis_is_simulate_on_seeded_tokens(tmp_path):
    from riccati_tf.particles import simulate

    spec = {**BASE, "analysis": "particles", "t_final": 1.0,
            "particles": {"n_tokens": 200, "n_steps": 10, "seed": 5}}
    res = run_sweep(spec, tmp_path / "p")
    t = {k: res.table().column(k).to_numpy(zero_copy_only=False)
         for k in res.table().column_names}
    for i in range(6):
        p, g = direct(t["v"][i], t["a"][i])
        probe = flow(p, g, 1.0, t_eval=[0.0, 1.0])
        t_end = 1.0 if probe.blowup_time is None else 0.5 * probe.blowup_time
        x0 = g.sample(200, np.random.default_rng([5, i]))  # tokens of configuration i
        run = simulate(p, x0, t_end, n_steps=10)
        ref = flow(p, g, t_end, t_eval=[0.0, t_end]).cov[-1]
        assert t["status"][i] == probe.status and t["t_end"][i] == t_end
        eig = np.linalg.eigvalsh(run.cov[-1])
        assert (t["particle_cov_eig_min"][i], t["particle_cov_eig_max"][i]) == (eig[0], eig[-1])
        assert t["rel_diff"][i] == np.linalg.norm(run.cov[-1] - ref) / np.linalg.norm(ref)
    assert set(t["status"]) == {"completed", "blowup"}
    again = compute_chunk(spec, 1)[1]  # a chunk recomputed alone draws the same tokens
    np.testing.assert_array_equal(again["particle_cov_eig_max"], t["particle_cov_eig_max"][4:])
