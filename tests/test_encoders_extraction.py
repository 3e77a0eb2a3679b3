"""Extraction of factored layer parameters from transformers encoders: every layer recomputed
from the extracted factors equals the module's own forward on a random sequence."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from riccati_tf.empirical.encoders import extract, position_limit  # noqa: E402
from riccati_tf.empirical.encoders.extraction import layer_list  # noqa: E402
from riccati_tf.empirical.encoders.forward import attention_sublayer, layer_forward  # noqa: E402
from riccati_tf.empirical.encoders.tiny import tiny_encoder  # noqa: E402
from riccati_tf.errors import InvalidInputError  # noqa: E402

ROUND_TRIP_TOL = 1e-10


def _perturbed(family, seed=0, **kw):
    """A tiny float64 encoder whose every parameter (biases and LayerNorms included) is moved
    off its initial value, so that no bias is zero."""
    model = tiny_encoder(family, initializer_range=0.2, seed=seed, **kw)
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.2 * torch.randn(p.shape, generator=gen, dtype=p.dtype))
    return model


def _identity_rotary(monkeypatch):
    import transformers.models.modernbert.modeling_modernbert as mb

    monkeypatch.setattr(mb, "apply_rotary_pos_emb", lambda q, k, cos, sin, unsqueeze_dim=1: (q, k))


def _module_layer(model, layer, x):
    kw = {}
    if model.config.model_type == "modernbert":
        d_h = model.config.hidden_size // model.config.num_attention_heads
        n = x.shape[0]
        kw["position_embeddings"] = (torch.ones(1, n, d_h, dtype=torch.float64),
                                     torch.zeros(1, n, d_h, dtype=torch.float64))
    with torch.no_grad():
        out = layer(torch.tensor(x[None]), **kw)
    return (out[0] if isinstance(out, tuple) else out)[0].numpy()


def _module_attention_sublayer(model, layer, x):
    xt = torch.tensor(x[None])
    with torch.no_grad():
        if model.config.model_type in ("bert", "roberta"):
            return layer.attention(xt)[0][0].numpy()
        return (xt + layer.attention(layer.layernorm_before(xt))[0])[0].numpy()


@pytest.mark.parametrize("family", ["bert", "roberta", "vit", "deit", "modernbert"])
def test_layer_round_trip(family, monkeypatch):
    if family == "modernbert":
        _identity_rotary(monkeypatch)
    model = _perturbed(family, activation="relu" if family == "vit" else "gelu")
    encoder = extract(model, position_free=True)
    x = np.random.default_rng(1).standard_normal((11, model.config.hidden_size))
    for layer, module in zip(encoder.layers, layer_list(model), strict=True):
        ref = _module_layer(model, module, x)
        assert np.max(np.abs(layer_forward(layer, x) - ref)) <= ROUND_TRIP_TOL * np.max(np.abs(ref))


@pytest.mark.parametrize("family", ["bert", "vit"])
def test_attention_sublayer_round_trip(family):
    model = _perturbed(family, seed=3)
    encoder = extract(model)
    x = np.random.default_rng(2).standard_normal((9, model.config.hidden_size))
    for layer, module in zip(encoder.layers, layer_list(model), strict=True):
        ref = _module_attention_sublayer(model, module, x)
        assert np.max(np.abs(attention_sublayer(layer, x) - ref)) <= ROUND_TRIP_TOL * 10


def test_gelu_tanh_round_trip():
    model = _perturbed("bert", seed=5, activation="gelu_new")
    encoder = extract(model)
    assert encoder.layers[0].mlp.activation == "gelu_tanh"
    x = np.random.default_rng(4).standard_normal((5, model.config.hidden_size))
    ref = _module_layer(model, layer_list(model)[0], x)
    assert np.max(np.abs(layer_forward(encoder.layers[0], x) - ref)) <= ROUND_TRIP_TOL


def test_params_follow_the_package_convention():
    """⟨B_h x, y⟩ = s⟨W_Q x, W_K y⟩, V_h = W_O W_V; Params holds them, b = Σ W_O b_V + b_O."""
    encoder = extract(_perturbed("vit", seed=7))
    layer = encoder.layers[1]
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, layer.d))
    for h, (V, B) in zip(layer.heads, layer.params().heads, strict=True):
        assert np.isclose((B @ x) @ y, h.scale * (h.W_Q @ x) @ (h.W_K @ y), rtol=1e-12)
        assert np.allclose(V, h.W_O @ h.W_V, rtol=0, atol=1e-14)
    assert np.allclose(layer.params().b, layer.out_bias + sum(h.W_O @ h.b_V for h in layer.heads))


def test_modernbert_is_refused_unless_position_free():
    model = tiny_encoder("modernbert")
    with pytest.raises(InvalidInputError, match="rotary"):
        extract(model)
    assert extract(model, position_free=True).position_free


def test_rotary_changes_the_module_output(monkeypatch):
    """Without position_free the refusal is warranted: the real module is not position free."""
    model = _perturbed("modernbert", seed=2)
    encoder = extract(model, position_free=True)
    x = np.random.default_rng(0).standard_normal((6, model.config.hidden_size))
    layer = layer_list(model)[0]
    rotary = model.rotary_emb(torch.tensor(x[None]), torch.arange(6)[None],
                              layer_type=model.config.layer_types[0])
    with torch.no_grad():
        real = layer(torch.tensor(x[None]), position_embeddings=rotary)[0].numpy()
    assert np.max(np.abs(real - layer_forward(encoder.layers[0], x))) > 1e-3


def test_decoder_and_unsupported_models_are_refused():
    import transformers

    decoder = transformers.BertModel(transformers.BertConfig(
        hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
        is_decoder=True))
    with pytest.raises(InvalidInputError, match="decoder"):
        extract(decoder)
    with pytest.raises(InvalidInputError, match="activation"):
        extract(tiny_encoder("bert", activation="silu"))
    with pytest.raises(InvalidInputError, match="family"):
        extract(object())


def test_position_limits():
    assert position_limit(tiny_encoder("bert", max_positions=128)) == 128
    assert position_limit(tiny_encoder("roberta", max_positions=130)) == 128  # padding_idx 1
    assert position_limit(tiny_encoder("deit")) is None


def test_non_finite_weights_are_refused():
    model = tiny_encoder("vit", n_layers=1)
    with torch.no_grad():
        model.layers[0].mlp.fc2.weight[0, 0] = float("nan")
    with pytest.raises(InvalidInputError, match="NaN"):
        extract(model)
