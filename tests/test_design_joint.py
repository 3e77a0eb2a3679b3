"""riccati_tf.design.joint: the Lie-algebra rank around a designed layer."""

import numpy as np
import pytest

from riccati_tf.design.joint import joint_controllability
from riccati_tf.design.target import attracting_layer
from riccati_tf.errors import InvalidInputError
from riccati_tf.reachability.lie import accessibility_rank, stratum_dimension
from riccati_tf.state.moments import drift_arrays
from riccati_tf.state.params import Gaussian, Params


@pytest.mark.parametrize("d", [2, 3, 4])
def test_designed_layers_keep_the_rank_at_their_target(d):
    """Layers from attracting_layer (one head, full-rank target): with the values or the
    query–key moving in depth and the rest held, the rank at the target is the stratum
    dimension d + d² − d(d−1)/2, the same number an explicit accessibility_rank call gives."""
    rng = np.random.default_rng(d)
    L = rng.standard_normal((d, d))
    des = attracting_layer((rng.standard_normal(d), L @ L.T + np.eye(d)))
    jc = joint_controllability(des.params, des.target)
    assert jc.decided and jc.full == (True, True)
    for name, res in zip(jc.configurations, jc.results, strict=True):
        assert res.rank == res.expected == stratum_dimension(d, d)
        held = {"A": des.params.A, "V": des.params.heads[0][0]}
        if name == "values":
            held = {"A": des.params.A, "B": des.params.heads[0][1]}
        again = accessibility_rank(name, d, (des.target.mean, des.target.cov), fixed=held)
        assert again.rank == res.rank


def test_scalar_heads_reach_at_least_their_single_head_form():
    """Two heads V_h = v_h I have the moment equations of the single head V = v̄I,
    B = Σ_h v_h B_h / v̄ (checked on the drift at random states); with the values moving per
    head their fields contain the single head's (Σ_h (v_h/v̄) of head h's field), so the rank
    is at least the single-head form's."""
    rng = np.random.default_rng(3)
    d = 3
    des = attracting_layer((rng.standard_normal(d), np.diag([1.0, 2.0, 0.5])), heads=2,
                           v=[-1.0, -0.5])
    p = des.params
    vbar = sum(p.value_scalars)
    single = Params(p.A, b=p.b, V=vbar * np.eye(d),
                    B=sum(v * B for v, (_, B) in zip(p.value_scalars, p.heads, strict=True))
                    / vbar)
    for _ in range(3):
        m, L = rng.standard_normal(d), rng.standard_normal((d, d))
        for x, y in zip(drift_arrays(p, m, L @ L.T), drift_arrays(single, m, L @ L.T),
                        strict=True):
            np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12)
    a = joint_controllability(p, des.target)
    b = joint_controllability(single, des.target)
    assert a.decided and all(x.rank >= y.rank for x, y in zip(a.results, b.results, strict=True))


def test_a_layer_that_gives_up_controllability_says_so():
    """Held at V = 0 the query–key moves nothing (attention loses the rank); held at B = 0 the
    value matrix moves the mean only (values loses it); the reason names them."""
    d = 2
    g = Gaussian(np.array([1.0, -1.0]), np.array([[2.0, 0.3], [0.3, 1.0]]))
    no_values = joint_controllability(Params(0.5 * np.eye(d), B=np.eye(d)), g, ["attention"])
    assert no_values.full == (False,) and "attention (rank" in no_values.reason
    assert "not shown" in no_values.reason and "loses" not in no_values.reason
    assert no_values.results[0].rank < stratum_dimension(d, d)
    no_keys = joint_controllability(Params(0.5 * np.eye(d), V=-np.eye(d)), g, ["values"])
    assert no_keys.full == (False,) and "values (rank" in no_keys.reason


def test_rank_deficient_target_is_judged_on_its_stratum():
    des = attracting_layer(([0.0, 1.0, 0.0], np.diag([2.0, 1.0, 0.0])))
    jc = joint_controllability(des.params, des.target)
    assert jc.decided
    assert all(r.expected == stratum_dimension(3, 2) for r in jc.results)


def test_undecided_beyond_the_exact_range_only():
    big = attracting_layer((np.zeros(6), np.eye(6)))
    jc = joint_controllability(big.params, big.target)
    assert not jc.decided and jc.full == (False, False) and "d = 6" in jc.reason
    cancelling = Params(np.eye(2), heads=[(np.eye(2), np.eye(2)), (-np.eye(2), np.eye(2))])
    assert joint_controllability(cancelling, Gaussian(np.zeros(2), np.eye(2))).decided


@pytest.mark.parametrize("bad", [
    dict(params="layer"),
    dict(point=Gaussian(np.zeros(3), np.eye(3))),
    dict(configurations=["nonsense"]),
])
def test_bad_input(bad):
    args = dict(params=Params(np.eye(2)), point=Gaussian(np.zeros(2), np.eye(2)))
    args.update(bad)
    with pytest.raises(InvalidInputError):
        joint_controllability(**args)
