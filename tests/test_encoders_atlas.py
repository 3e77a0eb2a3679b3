"""Stability atlas: inertias and sign classes, the scalar-V regime and blow-up time against
`riccati_tf.certify`, and the atlas of small encoders."""

import json

import numpy as np
import pytest

from riccati_tf import Params, certify
from riccati_tf.empirical.encoders.atlas import Atlas, atlas, inertia, sign_class
from riccati_tf.empirical.encoders.blowup import flow_regime
from riccati_tf.empirical.encoders.factors import (
    Encoder,
    EncoderLayer,
    HeadFactors,
    LayerNormParams,
    MLPParams,
)
from riccati_tf.empirical.encoders.figures import plot_atlas


def test_inertia_and_sign_classes():
    assert inertia(np.diag([2.0, 0.0, -1.0, 1e-14])) == (1, 2, 1)
    psd, nsd, indef = (3, 1, 0), (0, 1, 3), (2, 0, 2)
    assert sign_class(psd, nsd) == sign_class(nsd, psd) == "opposite"
    assert sign_class(psd, psd) == sign_class(nsd, nsd) == "same"
    assert sign_class(indef, psd) == sign_class(psd, (0, 4, 0)) == "indefinite"


def _scalar_case(seed, kind, d=5):
    rng = np.random.default_rng(seed)
    R = rng.standard_normal((d, d))
    cov0 = R @ R.T / d + 0.2 * np.eye(d)
    S = rng.standard_normal((d, d))
    B = {"same": S @ S.T / d, "opposite": -S @ S.T / d, "indefinite": S}[kind]
    return cov0, [(0.7 * np.eye(d), B), (-0.2 * np.eye(d), rng.standard_normal((d, d)) / d)]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kind", ["same", "indefinite"])
def test_blowup_time_without_drift_matches_certify(seed, kind):
    cov0, heads = _scalar_case(seed, kind)
    p = Params(np.zeros((5, 5)), heads=heads)
    ours, ref = flow_regime(p.G, cov0), certify(p, cov0)
    assert ours.regime == ref.regime
    if ref.regime == "blows_up":
        assert ours.blowup_time == pytest.approx(ref.blowup_time, rel=1e-10)


def test_without_drift_collapse_and_convergence():
    cov0 = np.diag([1.0, 2.0, 0.5])
    assert flow_regime(np.eye(3), cov0).regime == "collapses"
    assert flow_regime(np.diag([1.0, 0.0, 2.0]), cov0).regime == "converges"
    assert flow_regime(np.diag([1.0, -1.0, 0.0]), cov0).blowup_time == pytest.approx(0.5)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("kind", ["same", "opposite", "indefinite"])
def test_blowup_time_with_drift_matches_certify(seed, kind):
    cov0, heads = _scalar_case(seed, kind)
    A = 0.5 * np.random.default_rng(seed + 10).standard_normal((5, 5))
    p = Params(A, heads=heads)
    ref = certify(p, cov0)
    ours = flow_regime(p.G, cov0, A, horizon=50.0)
    if ref.regime == "blows_up":
        assert ours.regime == "blows_up"
        assert ours.blowup_time == pytest.approx(ref.blowup_time, rel=1e-6)
    elif ref.regime in ("converges", "collapses"):
        assert ours.regime == "bounded"


def _scalar_encoder(v, sign, d=6):
    """One post-norm layer, one full-size head with V = vI and B = sign·I/√d."""
    eye = np.eye(d)
    head = HeadFactors(eye, np.zeros(d), sign * eye, np.zeros(d), v * eye, np.zeros(d), eye,
                       d ** -0.5)
    norm = LayerNormParams(np.ones(d), np.zeros(d), 1e-5)
    rng = np.random.default_rng(0)
    mlp = MLPParams(rng.standard_normal((2 * d, d)), np.zeros(2 * d),
                    0.1 * rng.standard_normal((d, 2 * d)), np.zeros(d), "relu")
    return Encoder((EncoderLayer((head,), np.zeros(d), norm, norm, mlp, "post"),), "bert",
                   None, False)


def test_atlas_of_a_scalar_head():
    """V = 0.5 I, B = ±I/√6 from Σ0 = I: opposite signs collapse, equal signs blow up at
    T* = 1/(2 v/√6)."""
    d, v = 6, 0.5
    good = atlas(_scalar_encoder(v, -1.0))
    assert good.sign[0, 0] == "opposite" and good.regime[0] == "collapses"
    assert tuple(good.g_inertia[0]) == (d, 0, 0)  # G = 2v I/√d ≻ 0
    assert good.scalar_distance[0, 0] == pytest.approx(0.0, abs=1e-15)
    assert good.scalar_v[0, 0] == pytest.approx(v)
    assert tuple(good.v_inertia[0, 0]) == (d, 0, 0) and tuple(good.b_inertia[0, 0]) == (0, 0, d)
    bad = atlas(_scalar_encoder(v, 1.0))
    assert bad.sign[0, 0] == "same" and bad.regime[0] == "blows_up"
    assert tuple(bad.g_inertia[0]) == (0, 0, d)
    assert bad.blowup_time[0] == pytest.approx(np.sqrt(d) / (2 * v), rel=1e-12)


def test_atlas_of_a_small_bert_serialises_and_plots():
    pytest.importorskip("torch")
    from riccati_tf.empirical.encoders.tiny import tiny_encoder

    model = tiny_encoder("bert", n_layers=3, n_heads=4, initializer_range=0.2)
    result = atlas(model)
    assert isinstance(result, Atlas)
    assert result.sign.shape == result.scalar_distance.shape == (3, 4)
    assert result.v_inertia.shape == (3, 4, 3)
    assert np.all(result.v_inertia.sum(axis=2) == 32)
    assert np.all(result.v_inertia[..., 1] >= 32 - 2 * 8)  # rank sym(V_h) ≤ 2 d_h
    assert np.all(result.scalar_distance > 0.5)  # low-rank heads are far from scalar
    text = json.dumps(result.to_json())
    assert json.loads(text)["regime"] == result.regime.tolist()
    assert len(result.summary().splitlines()) == 4
    fig = plot_atlas(result)
    assert len(fig.axes) >= 4


@pytest.mark.parametrize("horizon", [0.0, -1.0, float("nan"), float("inf"), "10"])
def test_bad_horizons_are_refused(horizon):
    from riccati_tf.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="horizon"):
        atlas(_scalar_encoder(0.5, 1.0), horizon=horizon)


def test_flow_regime_refuses_non_finite_data():
    from riccati_tf.errors import InvalidInputError

    G = np.eye(3)
    G[0, 1] = np.nan
    with pytest.raises(InvalidInputError):
        flow_regime(G, np.eye(3))
    with pytest.raises(InvalidInputError):
        flow_regime(np.eye(3), np.eye(3), np.full((3, 3), np.inf))
