"""Gaussian moments through real layers: the attention sublayer on a Gaussian cloud is the affine
map of SPEC §2 with every kind of bias, whole-layer predictions against the model, and the
position-limit split."""

import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from riccati_tf.empirical.encoders import extract, predict_moments  # noqa: E402
from riccati_tf.empirical.encoders.attention import gaussian_attention  # noqa: E402
from riccati_tf.empirical.encoders.closures import GATED_CONFIDENCE  # noqa: E402
from riccati_tf.empirical.encoders.comparison import capture_sequences, compare  # noqa: E402
from riccati_tf.empirical.encoders.factors import HeadFactors  # noqa: E402
from riccati_tf.empirical.encoders.sequences import sequence_lengths, split  # noqa: E402
from riccati_tf.empirical.encoders.tiny import tiny_encoder  # noqa: E402
from riccati_tf.errors import InvalidInputError  # noqa: E402

N_TOKENS = 20_000
D = 8
BIAS_FIELDS = {"query": ("q_proj", "b_Q"), "key": ("k_proj", "b_K"),
               "value": ("v_proj", "b_V"), "output": ("o_proj", None)}


def _attention_model(bias: str | None, magnitude: float = 1.0):
    """A one-layer ViT (d = 8, 2 heads) whose attention has only the named bias non-zero."""
    model = tiny_encoder("vit", hidden_size=D, n_heads=2, n_layers=1, initializer_range=0.2,
                         seed=1)
    gen = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for name, _ in BIAS_FIELDS.values():
            lin = getattr(model.layers[0].attention, name)
            lin.bias.zero_()
            if bias is not None and name == BIAS_FIELDS[bias][0]:
                lin.bias.copy_(magnitude * torch.randn(lin.bias.shape, generator=gen,
                                                       dtype=torch.float64))
    return model


def _gaussian_tokens(seed=0):
    rng = np.random.default_rng(seed)
    R = rng.standard_normal((D, D)) / np.sqrt(D)
    mean, cov = 0.5 * rng.standard_normal(D), R @ R.T + 0.5 * np.eye(D)
    return rng.multivariate_normal(mean, cov, size=N_TOKENS)


def _module_attention(model, y):
    with torch.no_grad():
        return model.layers[0].attention(torch.tensor(y[None]))[0][0].numpy()


def _affine_residual(layer, y, a):
    """‖a − (M y + c)‖_F / ‖a − ā‖_F with (M, c) of the Gaussian fit of the sequence itself
    (the empirical measure attention acts on)."""
    M, c = gaussian_attention(layer, y.mean(0), np.cov(y, rowvar=False, bias=True))
    return np.linalg.norm(a - (y @ M.T + c)) / np.linalg.norm(a - a.mean(0))


def test_attention_on_a_gaussian_cloud_is_the_predicted_affine_map():
    """SPEC §2 on the real module: one sequence of N = 20 000 Gaussian tokens, residual of the
    predicted affine map within 4/√N of the output's spread, and the push-forward of N(m, Σ)
    (mean (I + M)m + c, covariance MΣMᵀ) against the sample's moments."""
    model = _attention_model(None)
    layer = extract(model).layers[0]
    y = _gaussian_tokens()
    a = _module_attention(model, y)
    assert _affine_residual(layer, y, a) <= 4 / np.sqrt(N_TOKENS)
    m, S = y.mean(0), np.cov(y, rowvar=False, bias=True)
    M, c = gaussian_attention(layer, m, S)
    C = M @ S @ M.T
    assert np.linalg.norm(a.mean(0) - (M @ m + c)) <= 4 / np.sqrt(N_TOKENS) * np.sqrt(np.trace(C))
    assert np.linalg.norm(np.cov(a, rowvar=False, bias=True) - C) \
        <= 4 / np.sqrt(N_TOKENS) * np.linalg.norm(C) * np.sqrt(D)


def _without(layer, field):
    heads = tuple(dataclasses.replace(h, **{field: np.zeros_like(getattr(h, field))})
                  for h in layer.heads)
    return dataclasses.replace(layer, heads=heads)


@pytest.mark.parametrize("bias", ["query", "key", "value", "output"])
def test_each_bias_alone(bias):
    """With only one kind of bias non-zero, the predicted map (query bias: tilt Σβ_h; key bias:
    nothing; value and output biases: the shift W_O b_V + b_O) holds within 4/√N; leaving a
    query, value or output bias out of the prediction breaks it by far."""
    model = _attention_model(bias)
    layer = extract(model).layers[0]
    y = _gaussian_tokens(1)
    a = _module_attention(model, y)
    tol = 4 / np.sqrt(N_TOKENS)
    assert _affine_residual(layer, y, a) <= tol
    if bias == "key":
        plain = _module_attention(_attention_model(None), y)
        assert np.max(np.abs(a - plain)) <= 1e-12 * np.max(np.abs(plain))
        return
    if bias == "output":
        blind = dataclasses.replace(layer, out_bias=np.zeros(D))
    else:
        blind = _without(layer, BIAS_FIELDS[bias][1])
    assert _affine_residual(blind, y, a) > 5 * tol


def test_query_bias_is_a_tilt_of_the_mean():
    """β_h = s W_Kᵀ b_Q and the head sees the mean m + Σβ_h."""
    rng = np.random.default_rng(0)
    h = HeadFactors(*(rng.standard_normal(s) for s in [(2, 3), 2, (2, 3), 2, (2, 3), 2, (3, 2)]),
                    scale=0.5)
    assert np.allclose(h.query_tilt, 0.5 * h.W_K.T @ h.b_Q)


def test_sequence_lengths():
    assert sequence_lengths(4096, 512) == (512,) * 8
    assert sequence_lengths(1000, 512) == (500, 500)
    assert sequence_lengths(1001, 500) == (334, 334, 333)
    assert sequence_lengths(7, None) == (7,)
    parts = split(np.arange(10)[:, None], (4, 3, 3))
    assert [p.shape[0] for p in parts] == [4, 3, 3] and parts[1][0, 0] == 4
    with pytest.raises(InvalidInputError):
        sequence_lengths(0, 512)


def test_position_limit_split_is_needed_and_used():
    model = tiny_encoder("bert", max_positions=64, n_layers=1)
    with pytest.raises(InvalidInputError, match="could not run on a sequence of 300"):
        capture_sequences(model, np.zeros((300, 32)), (300,))  # past the position limit
    result = compare(model, n_tokens=300, n_sim=20, n_sim_full=2)
    assert result.lengths == (60,) * 5
    assert result.to_json()["sequences"] == 5
    assert "5 sequences of length 60–60" in result.summary()
    for bad in [{"n_tokens": 0}, {"alpha": 0.0}, {"alpha": 1.5}, {"directions": 33},
                {"n_sim": 1}]:
        with pytest.raises(InvalidInputError):
            compare(model, **{"n_tokens": 100, **bad})


def test_predicted_layers_match_the_model_and_the_naive_guess_does_not():
    """DeiT (no position limit), N = 2000 tokens: every layer's measured moments within the
    sampling floor of the prediction, while 'nothing changes' (every layer keeps N(0, I)) is
    rejected after the first layer. (With much larger weights the attention tilt |Σ^½B_h x|
    grows past 1, the finite-sequence softmax leaves the Gaussian limit and the comparison
    reports it.)"""
    model = tiny_encoder("deit", initializer_range=0.1, seed=2)
    result = compare(model, n_tokens=2000, seed=1)
    assert result.consistent.all()
    pred = result.prediction
    naive = dataclasses.replace(pred, means=np.zeros_like(pred.means),
                                covs=np.broadcast_to(np.eye(32), pred.covs.shape))
    rejected = compare(model, n_tokens=2000, seed=1, prediction=naive)
    assert not rejected.consistent[1:].any()


def test_predict_moments_validates_its_input():
    encoder = extract(tiny_encoder("bert", n_layers=1))
    with pytest.raises(InvalidInputError, match="cov0"):
        predict_moments(encoder, cov0=np.ones((3, 3)))
    with pytest.raises(InvalidInputError, match="Encoder"):
        predict_moments("bert")
    for bad in [{"terms": 1}, {"terms": 10_000}, {"gated_samples": 0}, {"seed": -1},
                {"terms": 2.5}]:
        with pytest.raises(InvalidInputError):
            predict_moments(encoder, **bad)
    pred = predict_moments(encoder, mean0=np.ones(32))
    assert pred.covs.shape == (2, 32, 32) and np.all(np.isfinite(pred.covs))


def test_modernbert_comparison_needs_the_position_free_flag():
    """ModernBERT: gated (GeGLU) feed-forward, no norm before the first attention, rotary
    embeddings in the real model; the prediction is of the position-free part and says so."""
    model = tiny_encoder("modernbert", initializer_range=0.1)
    with pytest.raises(InvalidInputError, match="rotary"):
        compare(model, n_tokens=600)
    result = compare(model, n_tokens=600, position_free=True, n_sim=20, n_sim_full=2)
    assert result.position_free and result.to_json()["position_free"]
    assert all(np.all(np.isfinite(v)) for v in result.errors.values())
    # the GeGLU bound is the Markov bound rmse/√(1 − GATED_CONFIDENCE) on the Monte-Carlo
    # covariance; the rms error estimate behind it stays below 0.1
    rmse = result.prediction.mlp_bound * np.sqrt(1 - GATED_CONFIDENCE)
    assert rmse.max() < 0.1
    assert np.isnan(result.prediction.norm_kappa[0, 0])  # layer 0 has no attention norm
