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
               "B": [[1.0, 0.2], [0.2, 0.6]], "V": {"v": [[1, 0], [0, 1]]}, "b": [0.2, -0.1]},
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
            eig = np.linalg.eigvalsh(tr.cov[-1])  # the same flow call: bit for bit
            assert (cols["cov_eig_min"][i], cols["cov_eig_max"][i]) == (eig[0], eig[-1])
            assert cols["mean_norm"][i] == np.linalg.norm(tr.mean[-1])
            continue
        assert cols["blowup_time"][i] == tr.blowup_time
        # the state columns after a blow-up: the last time of flow's default grid before T*
        tr = flow(p, g, 4.0)
        eig = np.linalg.eigvalsh(tr.cov[-1])
        np.testing.assert_allclose((cols["cov_eig_min"][i], cols["cov_eig_max"][i]),
                                   (eig[0], eig[-1]), rtol=0, atol=1e-12 * eig[-1])
        np.testing.assert_allclose(cols["mean_norm"][i], np.linalg.norm(tr.mean[-1]),
                                   rtol=MEAN_RTOL, atol=0)


#: the exact flow's mean sub-steps are error-controlled (exact.MEAN_RTOL = 1e-13), so the same
#: state asked for on another output grid agrees to about 1e-13 relative (measured ≤ 6.7e-14)
MEAN_RTOL = 1e-11


def old_flow_columns(spec: dict) -> dict:
    """The flow columns from `flow` with its default grid of 101 output times, end state read."""
    fam = parse_family(spec)
    out = {k: [] for k in ("status", "blowup_time", "cov_eig_min", "cov_eig_max", "mean_norm")}
    for c in range(fam.n_chunks):
        chunk = fam.chunk(c)
        for i in range(len(chunk)):
            tr = flow(chunk.params(i), Gaussian(chunk.mean[i], chunk.cov[i]), fam.t_final)
            eig = np.linalg.eigvalsh(tr.cov[-1])
            for k, x in zip(out, (tr.status, np.nan if tr.blowup_time is None else
                                  tr.blowup_time, eig[0], eig[-1],
                                  np.linalg.norm(tr.mean[-1])), strict=True):
                out[k].append(x)
    return {k: np.array(v) for k, v in out.items()}


@pytest.mark.parametrize("V", [{"V": {"v": np.eye(3).tolist()}},
                               {"V": {"const": [[0.0, 0.0, 0.0], [0.0, 0.3, 0.0],
                                                             [0.0, 0.0, -0.2]],
                                                   "v": [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0],
                                                         [0.0, 0.0, 1.0]]}}])
def test_flow_columns_are_the_default_grid_flow_row_by_row(V):
    """Scalar V (closed form) and a diagonal V (Runge–Kutta), d = 3, blow-ups and completions."""
    spec = {"analysis": "flow", "t_final": 3.0, "chunk_size": 7,
            "family": {"random": {"n": 16, "seed": 3, "axes": {"v": {"uniform": [-1.0, 1.0]},
                                                               "a": {"uniform": [-1.0, 0.5]}}}},
            "params": {"A": {"const": [[0.0, 0.3, 0.0], [-0.3, -0.2, 0.1], [0.0, 0.0, -0.4]],
                             "a": [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]},
                       "B": [[1.0, 0.2, 0.0], [0.2, 0.6, 0.1], [0.0, 0.1, 0.8]], **V,
                       "b": [0.2, -0.1, 0.0]},
            "initial": {"mean": [0.5, 0.0, 0.1],
                        "cov": [[1.0, 0.3, 0.0], [0.3, 0.5, 0.0], [0.0, 0.0, 0.7]]}}
    fam = parse_family(spec)
    rows = [compute_chunk(spec, c)[1] for c in range(fam.n_chunks)]
    new = {k: np.concatenate([r[k] for r in rows]) for k in rows[0]}
    old = old_flow_columns(spec)
    assert set(old["status"]) == {"completed", "blowup"}
    assert list(new["status"]) == list(old["status"])
    np.testing.assert_allclose(new["blowup_time"], old["blowup_time"], rtol=1e-12, atol=0)
    # relative to ‖Σ‖₂ = cov_eig_max, times Σ's conditioning T*/(T* − t) at a state t before T*
    # (1 after a completion): the same state asked for on another output grid
    T = old["blowup_time"]
    t = np.where(np.isnan(T), 3.0, np.floor(T / 0.03 * (1 - 1e-15)) * 0.03)
    kappa = np.where(np.isnan(T), 1.0, T / (T - t))
    for k in ("cov_eig_min", "cov_eig_max"):
        assert np.all(np.abs(new[k] - old[k]) <= 1e-12 * kappa * old["cov_eig_max"]), k
    np.testing.assert_allclose(new["mean_norm"], old["mean_norm"], rtol=MEAN_RTOL, atol=0)


def test_particles_analysis_is_simulate_on_seeded_tokens(tmp_path):
    from riccati_tf.empirical.particles import simulate

    spec = {**BASE, "analysis": "particles", "t_final": 1.0,
            "particles": {"n_tokens": 200, "n_steps": 10, "seed": 5}}
    res = run_sweep(spec, tmp_path / "p")
    t = {k: res.table()[k]
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
