"""The atlas's measured τ = 1 step (`measured_moments` → `Atlas.measured_step_growth`) against
the attention sublayer that transformers itself computes on the same hidden states."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from riccati_tf.empirical.encoders import extract  # noqa: E402
from riccati_tf.empirical.encoders.atlas import atlas  # noqa: E402
from riccati_tf.empirical.encoders.measured import measured_moments  # noqa: E402
from riccati_tf.empirical.encoders.sequences import data_inputs  # noqa: E402
from riccati_tf.empirical.encoders.tiny import trained_like_encoder  # noqa: E402


def _transformers_step(model, sequences):
    """Per layer: the attention input y (BertSelfAttention's hidden_states) and W_O ctx + b_O
    (BertSelfOutput.dense's output, before the residual and the LayerNorm) that transformers
    computes when its encoder runs on each sequence."""
    layers = model.encoder.layer
    seen = [[[], []] for _ in layers]
    handles = []
    for i, layer in enumerate(layers):
        def keep_input(_m, args, kwargs, _out, i=i):
            x = args[0] if args else kwargs["hidden_states"]
            seen[i][0].append(x[0].numpy().copy())

        def keep_output(_m, _args, out, i=i):
            seen[i][1].append(out[0].numpy().copy())

        handles.append(layer.attention.self.register_forward_hook(keep_input, with_kwargs=True))
        handles.append(layer.attention.output.dense.register_forward_hook(keep_output))
    try:
        with torch.inference_mode():
            for x in sequences:
                model.encoder(torch.as_tensor(x[None]))
    finally:
        for h in handles:
            h.remove()
    return [(np.vstack(y), np.vstack(a)) for y, a in seen]


def test_measured_step_growth_is_the_models_own_attention_step():
    """tr Cov(y + a(y))/tr Cov(y) pooled over ragged sequences, y the tokens each layer's
    attention acts on and a its output in transformers, equals the atlas's measured growth to
    1e-10; the predicted growth (the N → ∞ formula on Σ0) stands beside it and differs."""
    model = trained_like_encoder(hidden_size=48, n_heads=4, n_layers=2, max_positions=64,
                                 n_sample=256, seed=3)
    rng = np.random.default_rng(7)
    sequences = [rng.standard_normal((n, 48)) * 2.0 for n in (40, 9, 64, 23)]
    encoder = extract(model)
    prediction = measured_moments(model, encoder, data_inputs("hidden", "x", sequences))
    result = atlas(encoder, prediction=prediction, moments_source="measured")
    reference = _transformers_step(model, sequences)
    assert result.measured_step_growth is not None
    for i, (y, a) in enumerate(reference):
        np.testing.assert_allclose(result.cov0[i], np.cov(y, rowvar=False), rtol=0,
                                   atol=1e-10 * np.max(np.abs(result.cov0[i])))
        growth = np.trace(np.cov(y + a, rowvar=False)) / np.trace(np.cov(y, rowvar=False))
        assert result.measured_step_growth[i] == pytest.approx(growth, rel=1e-10)
        assert abs(result.step_growth[i] - growth) > 1e-6 * growth  # finite n ≠ formula
    numbers = json.loads(json.dumps(result.to_json()))
    assert numbers["measured_step_growth"] == result.measured_step_growth.tolist()
    assert "measured on the tokens: ×" in result.summary().splitlines()[2]


def test_a_prediction_has_no_measured_step():
    model = trained_like_encoder(hidden_size=16, n_heads=2, n_layers=1, max_positions=16,
                                 n_sample=64, seed=1)
    result = atlas(model)
    assert result.measured_step_growth is None
    assert result.to_json()["measured_step_growth"] is None
    assert "measured on the tokens" not in result.summary()
