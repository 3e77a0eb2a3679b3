"""JSON of results that hold layers: `to_jsonable` converts every Params (its heads as given,
dense pairs or factors), so json.dumps of a Params, a Certificate, a Design, a Trajectory works
(strict JSON: no NaN), and `params_from_json` reads a layer back equal entry for entry, bit for
bit (floats print to the shortest string that reads back to the same double)."""

import json

import numpy as np
import pytest

from riccati_tf import Gaussian, Head, Params, certify, flow
from riccati_tf.design.target import attracting_layer
from riccati_tf.errors import InvalidInputError
from riccati_tf.io.serialize import (
    json_document,
    params_from_json,
    params_json,
    to_jsonable,
)


def dumped(obj) -> str:
    return json.dumps(to_jsonable(obj), allow_nan=False)


def same_layer(p: Params, q: Params) -> None:
    """p and q are the same layer: A, b and every head in the same form, bit for bit."""
    np.testing.assert_array_equal(p.A, q.A)
    np.testing.assert_array_equal(p.b, q.b)
    assert len(p.heads) == len(q.heads)
    for h, (f, g) in enumerate(zip(p.factors, q.factors, strict=True)):
        assert (f is None) == (g is None), h
        if f is None:
            for x, y in zip(p.heads[h], q.heads[h], strict=True):
                np.testing.assert_array_equal(x, y)
        else:
            for name in "QKVO":
                np.testing.assert_array_equal(getattr(f, name), getattr(g, name))


def random_layer(rng, d: int, n_heads: int, factored: float, scale: float) -> Params:
    """A layer with n_heads heads, each factored with probability `factored`, entries of
    magnitude ~scale (signs, subnormals and huge values included through the scale)."""
    heads = []
    for _ in range(n_heads):
        if rng.random() < factored:
            r, s = rng.integers(1, d + 1, size=2)
            heads.append(Head(scale * rng.standard_normal((r, d)),
                              rng.standard_normal((r, d)), rng.standard_normal((s, d)),
                              rng.standard_normal((d, s))))
        else:
            heads.append((scale * rng.standard_normal((d, d)), rng.standard_normal((d, d))))
    A = scale * rng.standard_normal((d, d))
    b = scale * rng.standard_normal(d)
    if n_heads == 1 and not isinstance(heads[0], Head):
        return Params(A=A, b=b, V=heads[0][0], B=heads[0][1])
    return Params(A=A, b=b, heads=heads)


@pytest.mark.parametrize("seed", range(40))
def test_a_random_layer_round_trips_through_json(seed):
    rng = np.random.default_rng(seed)
    scale = float(10.0 ** rng.choice([-310, -150, 0, 150, 300]))
    p = random_layer(rng, int(rng.integers(1, 5)), int(rng.integers(1, 5)),
                     factored=[0.0, 0.5, 1.0][seed % 3], scale=scale)
    text = dumped(p)
    same_layer(p, params_from_json(json.loads(text)))
    # the heads alone: their dense pairs
    heads = json.loads(dumped(p.heads))
    assert len(heads) == len(p.heads) and all(set(h) == {"V", "B"} for h in heads)


def test_a_single_dense_head_is_a_spec_layer():
    p = Params(A=-np.eye(2), V=np.eye(2), B=[[1.0, 0.5], [0.0, 2.0]])
    assert set(json.loads(dumped(p))) == {"A", "b", "V", "B"}
    assert set(params_json(p)) == {"A", "b", "V", "B"}


def test_certificates_of_every_kind_of_layer_dump(tmp_path):
    one = np.ones((1, 2))
    layers = {
        "two dense heads": Params(A=-np.eye(2), heads=[(np.eye(2), np.eye(2)),
                                                       (-np.eye(2), 0.5 * np.eye(2))]),
        "a factored head": Params(A=-np.eye(2), heads=[Head(one, one, -one, one.T)]),
        "blows up": Params(A=np.zeros((2, 2)), V=np.eye(2), B=np.eye(2)),
        "collapses": Params(A=-np.eye(2), V=-np.eye(2), B=np.eye(2)),
    }
    for name, p in layers.items():
        cert = certify(p, np.eye(2), np.zeros(2))
        data = json.loads(dumped(cert))
        assert data["regime"] == cert.regime, name
        same_layer(p, params_from_json(data["params"]))


def test_a_design_and_its_certificate_dump():
    target = Gaussian([1.0, 0.0], [[2.0, 0.3], [0.3, 1.0]])
    design = attracting_layer(target, v=[-1.0, -0.5], heads=2)
    data = json.loads(dumped(design))
    same_layer(design.params, params_from_json(data["params"]))
    assert data["target"]["mean"] == [1.0, 0.0]
    cert = design.certificate(Gaussian([0.0, 0.0], np.eye(2)))
    same_layer(design.params, params_from_json(json.loads(dumped(cert))["params"]))


def test_a_trajectory_of_a_multi_head_layer_dumps():
    p = Params(A=-np.eye(2), heads=[(np.eye(2), np.eye(2)), (-np.eye(2), 0.5 * np.eye(2))])
    tr = flow(p, Gaussian(np.zeros(2), np.eye(2)), 1.0, t_eval=[0.0, 0.5, 1.0])
    data = json.loads(dumped(tr))
    np.testing.assert_array_equal(np.array(data["cov"]), tr.cov)


@pytest.mark.parametrize("data", [None, [], {"A": [[1.0]]}, {"A": [[1.0]], "b": [0.0]},
                                  {"A": [[1.0]], "b": [0.0], "heads": [{"V": [[1.0]]}]},
                                  {"A": [[1.0]], "b": [0.0], "V": [[1.0]], "B": [[1.0]],
                                   "heads": []},
                                  {"A": [[1.0]], "b": [None], "V": [[1.0]], "B": [[1.0]]}])
def test_what_is_not_a_layers_json_is_refused(data):
    with pytest.raises(InvalidInputError):
        params_from_json(data)


def test_a_json_document_says_what_its_nulls_were():
    p = Params(A=-np.eye(2), V=np.eye(2), B=np.eye(2))
    tr = flow(p, Gaussian(np.zeros(2), np.eye(2)), 1.0, t_eval=[0.0, 1.0])
    numbers = {"trajectory": tr, "rates": np.array([[1.0, np.nan], [np.inf, -np.inf]]),
               "z": complex(np.nan, 1.0), "fine": [1.0, None]}

    def refuse(constant):
        raise AssertionError(constant)

    doc = json.loads(json_document(numbers).decode(), parse_constant=refuse)
    assert doc["non_finite"]["values"] == {"rates[0][1]": "NaN", "rates[1][0]": "Infinity",
                                           "rates[1][1]": "-Infinity", "z.real": "NaN"}
    assert doc["rates"] == [[1.0, None], [None, None]] and doc["fine"] == [1.0, None]
    assert doc["trajectory"] == json.loads(dumped(tr))
    # nothing non-finite: nothing added
    assert "non_finite" not in json.loads(json_document({"a": [1.0]}))
