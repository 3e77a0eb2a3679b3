"""Stability atlas: inertias and sign classes, the per-head numbers against dense
computations, the regime and T* of the multi-head general-V flow against an independent DOP853
integration (small layers, and a saved d = 384, 12-head, 6-layer encoder with trained-like
weights), the horizon rule, the scalar-V closed form against `riccati_tf.certify`."""

import io
import itertools
import json

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from riccati_tf import Head, Params, certify
from riccati_tf.empirical.encoders.atlas import (
    Atlas,
    atlas,
    head_numbers,
    inertia,
    sign_class,
)
from riccati_tf.empirical.encoders.blowup import (
    CERTIFY_MAX_D,
    NO_BLOWUP,
    flow_regime,
    layer_regime,
)
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
    assert good.decisions[0][0].method == "certify"  # d = 6 ≤ CERTIFY_MAX_D
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
    assert len(result.summary().splitlines()) == 1 + 2 * 3
    # the τ = 1 step's growth from the dense heads, independently; the normalised flow keeps
    # the trace and starts at Σ0's participation ratio
    from riccati_tf.empirical.encoders import extract

    for i, layer in enumerate(extract(model).layers):
        S = result.cov0[i]
        M = sum(V @ S @ B for V, B in layer.params().heads)
        step = np.eye(32) + M
        assert result.step_growth[i] == pytest.approx(
            np.trace(step @ S @ step.T) / np.trace(S), rel=1e-10)
        n = result.normalised[i]
        assert n.ratio[0] == pytest.approx(np.trace(S) ** 2 / np.sum(S * S), rel=1e-12)
        np.testing.assert_allclose(np.trace(n.cov, axis1=1, axis2=2), np.trace(S), rtol=1e-6)
        assert json.loads(text)["normalised"][i]["trend"] == n.trend
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


# --- the multi-head, general-V flow against an independent integration ---------------------

def reference_blowup(heads, cov0, A=None, t_max=np.inf, growth=1e8, rtol=1e-10):
    """T* of Σ̇ = AΣ + ΣAᵀ + Σ_h (V_hΣB_hΣ + ΣB_hᵀΣV_hᵀ) by scipy's DOP853 in t with a terminal
    event at tr Σ = growth·tr Σ0, then T* = t + tr Σ/(d tr Σ/dt); inf when t_max comes first.
    The extrapolation converges slowly in the growth on general-V layers (d = 24: 1e-3 relative
    at 1e4, 2.5e-6 at 1e6, within 1e-11 of 1e10's at 1e8), hence 1e8. heads: dense
    (V_h, B_h), or raw factors (W_Q·s, W_K, W_V, W_O) applied as W_O(W_VΣW_Kᵀ)(sW_QΣ)."""
    d = cov0.shape[0]
    tr0 = float(np.trace(cov0))
    dense = [h for h in heads if len(h) == 2]
    raw = [h for h in heads if len(h) == 4]
    if raw:  # stacked: W_V Σ, s W_Q Σ and W_O (…) as three products of d rows
        Qs, Ks, Ws, Os = (np.concatenate(x, axis=a) for x, a in zip(zip(*raw, strict=True),
                                                                     (0, 0, 0, 1), strict=True))
        rows = np.cumsum([0] + [h[0].shape[0] for h in raw])
        blocks = [slice(int(i), int(j)) for i, j in itertools.pairwise(rows)]

    def field(S):
        out = np.zeros((d, d)) if A is None else A @ S
        for V, B in dense:
            out += V @ S @ B @ S
        if raw:
            WS, QS = Ws @ S, Qs @ S
            inner = np.vstack([(WS[r] @ Ks[r].T) @ QS[r] for r in blocks])
            out += Os @ inner
        return out + out.T

    def rhs(_t, y):
        return field(y.reshape(d, d)).ravel()

    def grown(_t, y):
        return np.trace(y.reshape(d, d)) - growth * tr0
    grown.terminal, grown.direction = True, 1
    sol = solve_ivp(rhs, (0.0, t_max), cov0.ravel(), method="DOP853", rtol=rtol,
                    atol=1e-12 * tr0 / d, events=grown)
    if sol.status != 1:
        return np.inf
    S = sol.y_events[0][0].reshape(d, d)
    return float(sol.t_events[0][0] + np.trace(S) / np.trace(field(S)))


def _random_heads(rng, d, n_heads, r, q_scale=1.0):
    heads = []
    for _ in range(n_heads):
        Q = q_scale * rng.standard_normal((r, d)) / d
        K = rng.standard_normal((r, d)) / np.sqrt(d)
        W = rng.standard_normal((r, d)) / np.sqrt(d)
        O = rng.standard_normal((d, r)) / np.sqrt(r)
        heads.append((Q, K, W, O))
    return heads


@pytest.mark.parametrize("seed", range(3))
def test_layer_regime_matches_an_independent_integration(seed):
    """d = 24 > CERTIFY_MAX_D: rk decides; T* of the factored heads against DOP853 at rtol 1e-10
    on the raw factors (A = 0) and on the dense V_h = OW, B_h = KᵀQ (a random drift A)."""
    rng = np.random.default_rng(seed)
    d = 24
    assert d > CERTIFY_MAX_D
    heads = _random_heads(rng, d, 4, 3, q_scale=8.0)
    R = rng.standard_normal((d, d))
    cov0 = R @ R.T / d + 0.1 * np.eye(d)
    dense = [(O @ W, K.T @ Q) for Q, K, W, O in heads]
    for A in (None, 0.3 * rng.standard_normal((d, d)) / np.sqrt(d)):
        p = Params(np.zeros((d, d)) if A is None else A,
                   heads=[Head(Q, K, W, O) for Q, K, W, O in heads])
        # the reference's raw-factor path (A = 0) and its dense path (A ≠ 0)
        ref = reference_blowup(heads if A is None else dense, cov0, A, t_max=50.0)
        ours = layer_regime(p, cov0, 50.0)
        assert ours.method == "rk" and np.isfinite(ref)
        assert ours.regime == "blows_up"
        assert ours.blowup_time == pytest.approx(ref, rel=1e-6)
        # the stated error estimate covers the actual error (the reference's own error is
        # far below: rtol 1e-10)
        assert ours.error is not None and abs(ours.blowup_time - ref) <= ours.error
        assert ours.to_json()["error_estimate"] == ours.error
        # a horizon before T*: no regime inside it, T* not reported
        short = layer_regime(p, cov0, 0.5 * ref)
        assert short.regime == NO_BLOWUP and short.blowup_time is None
        assert short.trace_growth is not None and short.trace_growth > 1


def test_a_blowup_just_after_the_horizon_is_not_reported():
    """σ̇ = 2σ² from σ0 = 1 (T* = 1/2) with the horizon 1e-9 before T*: the run goes on past the
    horizon and finds the pole there (beyond), without reporting it."""
    p = Params(np.zeros((20, 20)), heads=[(np.eye(20), np.eye(20))])
    r = layer_regime(p, np.eye(20), 0.5 - 1e-9, rtol=1e-8)
    assert r.method == "rk" and r.regime == NO_BLOWUP and r.blowup_time is None
    assert r.beyond == pytest.approx(0.5, rel=1e-7)
    # at the default LAYER_RTOL (1e-7; DOP853's error in T* is 2.5 rtol here): the atlas's 1e-6
    r = layer_regime(p, np.eye(20), 0.5 - 1e-9)
    assert r.regime == NO_BLOWUP and r.beyond == pytest.approx(0.5, rel=1e-6)
    assert r.bracket is not None and r.bracket[0] < 0.5 - 1e-9
    # the error estimate of T* covers its actual error, at the default and at a coarse rtol
    for rtol in (1e-7, 1e-5):
        r = layer_regime(p, np.eye(20), 10.0, rtol=rtol)
        assert r.regime == "blows_up" and r.error is not None
        assert abs(r.blowup_time - 0.5) <= r.error, (rtol, r.blowup_time - 0.5, r.error)


def test_head_numbers_against_dense_matrices():
    rng = np.random.default_rng(3)
    d, r = 20, 3
    W_Q, W_K, W_V = (rng.standard_normal((r, d)) for _ in range(3))
    W_O = rng.standard_normal((d, r))
    z = np.zeros(r)
    head = HeadFactors(W_Q, z, W_K, z, W_V, z, W_O, 0.5)
    R = rng.standard_normal((d, d))
    cov0 = R @ R.T / d
    n = head_numbers(head, cov0)
    V, B = W_O @ W_V, 0.5 * W_K.T @ W_Q
    for key, M in (("v_mass", V), ("b_mass", B)):
        lam = np.linalg.eigvalsh(0.5 * (M + M.T))
        assert n[key] == pytest.approx(lam.sum() / np.abs(lam).sum(), rel=1e-10)
    assert n["v_inertia"] == inertia(0.5 * (V + V.T)) and n["v_inertia"][1] == d - 2 * r
    assert n["trace_rate"] == pytest.approx(2 * np.trace(V @ cov0 @ B @ cov0), rel=1e-10)
    lam = np.linalg.eigvals(V @ cov0 @ B)
    top = lam[np.argmax(np.abs(lam))]  # the nonzero spectrum is r of the d eigenvalues
    nonzero = np.sort_complex(lam[np.abs(lam) > 1e-9 * abs(top)])
    assert nonzero.size == r
    assert n["growth_rate"] == pytest.approx(nonzero.real.max(), rel=1e-8)
    v = np.trace(V) / d
    assert n["scalar_distance"] == pytest.approx(
        np.linalg.norm(V - v * np.eye(d)) / np.linalg.norm(V), rel=1e-10)


def test_atlas_inputs_reproduce_every_blowup_time(tmp_path):
    """A small BERT with large weights: the saved npz and the model's heads give back every
    reported T* (A = 0 and A = E[J_MLP]) by an independent integration; none beyond the
    horizon."""
    pytest.importorskip("torch")
    from riccati_tf.empirical.encoders import extract
    from riccati_tf.empirical.encoders.outputs import write_atlas
    from riccati_tf.empirical.encoders.tiny import tiny_encoder

    model = tiny_encoder("bert", hidden_size=24, n_heads=3, n_layers=2,
                         initializer_range=0.35, seed=1)
    model.save_pretrained(tmp_path / "model")
    horizon = 3.0
    result, numbers = write_atlas(str(tmp_path / "model"), tmp_path / "out", horizon=horizon)
    stored = np.load(tmp_path / "out" / "atlas_inputs.npz")
    assert float(stored["horizon"]) == horizon and numbers["inputs"].endswith(".npz")
    encoder = extract(model)
    seen = 0
    for i, layer in enumerate(encoder.layers):
        dense = [(h.V, h.B) for h in layer.heads]
        for A, regime, T in ((None, result.regime[i], result.blowup_time[i]),
                             (stored["mlp_jacobian"][i], result.regime_mlp[i],
                              result.blowup_time_mlp[i])):
            ref = reference_blowup(dense, stored["cov0"][i], A, t_max=horizon)
            if np.isfinite(ref):
                seen += 1
                assert regime == "blows_up" and T == pytest.approx(ref, rel=1e-6)
            else:
                assert regime != "blows_up" and np.isnan(T)
    assert seen >= 1
    saved = json.loads((tmp_path / "out" / "atlas.json").read_text())
    assert all(t is None or t <= horizon for t in saved["blowup_time"] + saved["blowup_time_mlp"])


# --- a saved d = 384, 12-head, 6-layer encoder with trained-like weights ---------------------

@pytest.fixture(scope="module")
def trained_like_atlas(tmp_path_factory):
    pytest.importorskip("torch")
    from riccati_tf.empirical.encoders import tiny
    from riccati_tf.empirical.encoders.outputs import write_atlas

    folder = tmp_path_factory.mktemp("trained_like")
    model = tiny.trained_like_encoder(384, 12, 6, seed=0)
    tiny.save_encoder(model, folder / "model")
    result, numbers = write_atlas(str(folder / "model"), folder / "out")
    return model, folder / "out", result, numbers


def _raw_heads(model, i, n_heads=12):
    """Layer i's heads as (s W_Q,h, W_K,h, W_V,h, W_O,h) read from the torch weights."""
    att = model.encoder.layer[i].attention
    Wq, Wk, Wv = (x.weight.detach().numpy() for x in (att.self.query, att.self.key,
                                                       att.self.value))
    Wo = att.output.dense.weight.detach().numpy()
    d_h = Wq.shape[0] // n_heads
    return [(Wq[r] / np.sqrt(d_h), Wk[r], Wv[r], Wo[:, r])
            for r in (slice(h * d_h, (h + 1) * d_h) for h in range(n_heads))]


@pytest.mark.long
def test_trained_like_blowup_times_match_an_independent_integration(trained_like_atlas):
    """Every layer's reported T* (A = 0 and A = E[J_MLP]) against DOP853 at rtol 1e-10 on the
    field from the torch weights and the saved input moments, to 1e-6; nothing reported
    beyond the horizon; the per-head numbers are graded, not the blank inertia balance."""
    model, out, result, _ = trained_like_atlas
    stored = np.load(io.BytesIO((out / "atlas_inputs.npz").read_bytes()))
    horizon = float(stored["horizon"])
    for i in range(6):
        heads = _raw_heads(model, i)
        for A, regime, T in ((None, result.regime[i], result.blowup_time[i]),
                             (stored["mlp_jacobian"][i], result.regime_mlp[i],
                              result.blowup_time_mlp[i])):
            ref = reference_blowup(heads, stored["cov0"][i], A, t_max=horizon)
            if np.isfinite(ref):
                assert regime == "blows_up" and T == pytest.approx(ref, rel=1e-6)
            else:
                assert regime == NO_BLOWUP and np.isnan(T)
    saved = json.loads((out / "atlas.json").read_text())
    assert all(t is None or t <= horizon for t in saved["blowup_time"] + saved["blowup_time_mlp"])
    assert {e["attention"]["method"] for e in saved["evidence"]} == {"rk"}
    assert np.all(result.v_inertia[..., 1] == 384 - 64)  # (32, 320, 32): the blank balance
    assert np.ptp(result.v_mass) > 0.2 and np.ptp(result.b_mass) > 0.2
