"""Sweep specs → families: ids, deterministic chunks, affine fields, errors naming the field."""

import copy

import numpy as np
import pytest

from riccati_tf import Params
from riccati_tf.io.spec import SpecError
from riccati_tf.sweep.family import parse_family

BASE = {
    "analysis": "certify",
    "family": {"grid": {"v": {"linspace": [-1.0, 1.0, 5]}, "a": [-0.5, 0.25, 0.5]}},
    "chunk_size": 4,
    "params": {"A": {"const": [[0.0, 0.3], [0.0, -0.6]], "a": [[1.0, 0.0], [0.0, 1.0]]},
               "B": [[1.0, 0.2], [0.2, 0.6]], "V": {"v": [[1, 0], [0, 1]]}, "b": [0.1, 0.0]},
    "initial": {"mean": [1.0, 0.0], "cov": {"const": [[1.0, 0.3], [0.3, 0.5]]}},
}


def spec_with(**changes):
    spec = copy.deepcopy(BASE)
    spec.update(changes)
    return spec


def test_grid_ids_are_c_order_over_the_declared_axes():
    fam = parse_family(BASE)
    assert fam.n_configs == 15 and fam.n_chunks == 4 and fam.axis_names == ("v", "a")
    ids = np.concatenate([fam.chunk_ids(c) for c in range(fam.n_chunks)])
    assert np.array_equal(ids, np.arange(15))
    vals = {k: np.concatenate([fam.axis_values(c)[k] for c in range(fam.n_chunks)])
            for k in ("v", "a")}
    v_grid, a_grid = np.meshgrid(np.linspace(-1, 1, 5), [-0.5, 0.25, 0.5], indexing="ij")
    assert np.array_equal(vals["v"], v_grid.ravel()) and np.array_equal(vals["a"], a_grid.ravel())


def test_affine_fields_build_the_layers_of_each_configuration():
    fam = parse_family(BASE)
    chunk = fam.chunk(2)
    for i in range(len(chunk)):
        v, a = chunk.values["v"][i], chunk.values["a"][i]
        p = chunk.params(i)
        np.testing.assert_array_equal(p.A, np.array([[a, 0.3], [0.0, a - 0.6]]))
        assert isinstance(p, Params) and p.value_scalars == (v,)
        np.testing.assert_array_equal(chunk.cov[i], [[1.0, 0.3], [0.3, 0.5]])
        np.testing.assert_array_equal(chunk.b[i], [0.1, 0.0])


def test_random_chunks_are_recomputed_alone_and_identically():
    spec = spec_with(family={"random": {"n": 50, "seed": 3, "axes": {
        "v": {"uniform": [-1.0, 1.0]}, "a": {"loguniform": [0.01, 1.0]}}}}, chunk_size=7)
    fam1, fam2 = parse_family(spec), parse_family(copy.deepcopy(spec))
    for c in (6, 0, 3):  # any order, fresh objects
        x, y = fam1.axis_values(c), fam2.axis_values(c)
        assert np.array_equal(x["v"], y["v"]) and np.array_equal(x["a"], y["a"])
    allv = np.concatenate([fam1.axis_values(c)["v"] for c in range(fam1.n_chunks)])
    alla = np.concatenate([fam1.axis_values(c)["a"] for c in range(fam1.n_chunks)])
    assert allv.size == 50 and np.unique(allv).size == 50
    assert np.all((allv >= -1) & (allv < 1)) and np.all((alla >= 0.01) & (alla <= 1.0))
    other = parse_family(spec_with(family={"random": {"n": 50, "seed": 4, "axes": {
        "v": {"uniform": [-1.0, 1.0]}, "a": {"loguniform": [0.01, 1.0]}}}}, chunk_size=7))
    assert not np.array_equal(other.axis_values(0)["v"], fam1.axis_values(0)["v"])
    assert fam1.fingerprint != other.fingerprint


def test_multihead_and_matrix_v():
    spec = spec_with(params={"A": [[-1.0, 0.0], [0.0, -2.0]], "heads": [
        {"V": {"v": [[1, 0], [0, 1]]}, "B": [[1.0, 0.0], [0.0, 1.0]]},
        {"V": {"const": [[0.0, 1.0], [0.0, 0.0]]}, "B": [[0.0, 1.0], [1.0, 0.0]]}]})
    fam = parse_family(spec)
    p = fam.chunk(0).params(1)
    assert len(p.heads) == 2 and p.value_scalars is None
    np.testing.assert_array_equal(p.heads[0][0], fam.chunk(0).values["v"][1] * np.eye(2))


@pytest.mark.parametrize("change, message", [
    ({"family": {"grid": {}}}, "family.grid: must be a non-empty mapping"),
    ({"family": {"grid": {"v": {"linspace": [0, 1]}}}}, "family.grid.v.linspace"),
    ({"family": {"grid": {"v": {"geomspace": [0, 1, 3]}}}}, "family.grid.v.geomspace"),
    ({"family": {"grid": {"v": ["x"]}}}, "family.grid.v.values[0]: must be a number"),
    ({"family": {"random": {"n": 10, "axes": {"v": {"uniform": [1, 0]}}}}},
     "family.random.axes.v.uniform: needs low < high"),
    ({"family": {"random": {"n": 0, "axes": {"v": {"uniform": [0, 1]}}}}}, "family.random.n"),
    ({"family": {"random": {"n": 5, "axes": {"v": {"normal": [0, 1]}}}}},
     "family.random.axes.v"),
    ({"family": {"sobol": {}}}, "family.sobol: unknown field; allowed: grid, random"),
    ({"family": {}}, "family: must be"),
    ({"chunk_size": 0}, "chunk_size: must be ≥ 1"),
    ({"chunk_size": 2.5}, "chunk_size: must be an integer"),
    ({"analysis": "integrate"}, "analysis: must be one of"),
    ({"analysis": "flow"}, "t_final: missing field"),
    ({"params": {"A": {"const": [[1.0, 0.0], [0.0, 1.0]], "w": [[1.0, 0.0], [0.0, 1.0]]}}},
     "params.A.w: not an axis"),
    ({"params": {"A": [[1.0, 0.0]]}}, "params.A: must be a square matrix"),
    ({"params": {"A": [[1.0, 0.0], [0.0, 1.0]], "B": [[1.0, "x"], [0.0, 1.0]]}},
     "params.B[0][1]"),
    ({"params": {"A": [[1.0, 0.0], [0.0, 1.0]], "v": {"v": [1.0, 2.0]}}}, "params.v"),
    ({"params": {"A": [[1.0, 0.0], [0.0, 1.0]], "B": [[1.0, 0.0, 0.0]] * 3}}, "params"),
    ({"params": {"A": [[1.0, 0.0], [0.0, 1.0]], "V": [[1, 0], [0, 1]], "v": 1.0}},
     "params: give V (a matrix) or v"),
    ({"params": {"A": {"const": [[1.0, 0.0], [0.0, 1.0]], "v": [1.0]}}},
     "params.A: the constant and the axis terms must have one shape"),
    ({"initial": {"cov": {"const": [[1.0, 0.0], [0.0, 1.0]], "v": [[0.0, 1.0], [0.0, 0.0]]}}},
     "initial.cov.v: every term of an affine covariance must be symmetric"),
    ({"initial": {"cov": {"const": [[1.0, 0.0], [0.0, 1.0]], "v": [[2.0, 0.0], [0.0, 0.0]]}}},
     "initial (at the parameter-box corner v = -1): cov is not positive semidefinite"),
    ({"plot": {"x": "w"}}, "plot.x: 'w' is not an axis"),
    ({"extra": 1}, "extra: unknown field"),
    ({"famliy": 1}, "famliy: unknown field; did you mean 'family'?"),
])
def test_bad_specs_name_the_field(change, message):
    with pytest.raises(SpecError) as err:
        parse_family(spec_with(**change))
    assert message in str(err.value)


def test_corner_check_accepts_every_psd_configuration():
    # Σ0(s, c) = [[s, c], [c, 1]] is PSD on the whole box iff it is at the corners (s ≥ c²)
    spec = spec_with(family={"grid": {"s": {"linspace": [0.25, 2.0, 4]},
                                      "c": {"linspace": [-0.5, 0.5, 3]}}},
                     params={"A": [[-1.0, 0.0], [0.0, -1.0]]},
                     initial={"cov": {"const": [[0.0, 0.0], [0.0, 1.0]],
                                      "s": [[1.0, 0.0], [0.0, 0.0]],
                                      "c": [[0.0, 1.0], [1.0, 0.0]]}})
    fam = parse_family(spec)
    covs = np.concatenate([fam.chunk(c).cov for c in range(fam.n_chunks)])
    assert np.linalg.eigvalsh(covs)[:, 0].min() >= 0
    spec["family"]["grid"]["s"] = {"linspace": [0.2, 2.0, 4]}  # the corner (0.2, ±0.5) fails
    with pytest.raises(SpecError, match="corner"):
        parse_family(spec)
