"""The differentiable margins of `riccati_tf.design.margin` on every family of the package's own
tiny encoders (`tiny_encoder`): each layer's margin equals the numpy margin of the heads that
the numpy extraction (`extract`) reads, the attention modules are found where transformers keeps
them, and a family or layout the package does not read is refused naming the model class."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from riccati_tf.design.margin import encoder_horizon_margins, encoder_margins  # noqa: E402
from riccati_tf.empirical.encoders.extraction import (  # noqa: E402
    BERT_FAMILY,
    VIT_FAMILY,
    attention_layers,
    extract,
    layer_list,
)
from riccati_tf.empirical.encoders.tiny import TINY_FAMILIES, tiny_encoder  # noqa: E402
from riccati_tf.errors import InvalidInputError  # noqa: E402

from .test_design_margin import numpy_margin  # noqa: E402

READ = [f for f in TINY_FAMILIES if f in BERT_FAMILY + VIT_FAMILY]


@pytest.mark.parametrize("family", READ)
def test_encoder_margins_on_every_tiny_family_match_the_numpy_extraction(family):
    model = tiny_encoder(family, hidden_size=8, n_heads=2, n_layers=3, initializer_range=0.3,
                         seed=4)
    mu = encoder_margins(model)
    assert mu.shape == (3,) and mu.requires_grad and mu.dtype == torch.float64
    encoder = extract(model)
    for layer, value in zip(encoder.layers, mu.detach(), strict=True):
        assert float(value) == pytest.approx(numpy_margin(list(layer.params().heads)),
                                             rel=1e-10, abs=1e-14)
    # the gradient reaches the weights of every layer
    mu.sum().backward()
    for q, k, v, o, _ in attention_layers(model):
        assert all(m.weight.grad is not None and bool(m.weight.grad.abs().sum() > 0)
                   for m in (q, k, v, o))


@pytest.mark.parametrize("family", READ)
def test_encoder_horizon_margins_on_every_tiny_family(family):
    model = tiny_encoder(family, hidden_size=8, n_heads=2, n_layers=2, initializer_range=0.3,
                         seed=5)
    S = torch.eye(8, dtype=torch.float64)
    m = encoder_horizon_margins(model, S, horizon=0.5)
    assert m.shape == (2,) and m.requires_grad
    # m(τ) = 1 − 2 κ ‖S‖ τ is affine in the reference scale: doubling S doubles 1 − m
    m2 = encoder_horizon_margins(model, [2 * S, 2 * S], horizon=0.5).detach()
    assert np.allclose((1 - m2).numpy(), 2 * (1 - m.detach()).numpy(), rtol=1e-12)


@pytest.mark.parametrize("family", TINY_FAMILIES)
def test_attention_layers_are_found_where_the_family_keeps_them(family):
    model = tiny_encoder(family, hidden_size=8, n_heads=2, n_layers=3)
    assert len(layer_list(model)) == 3
    if family not in READ:  # ModernBERT: rotary positions, no single B_h
        for read in (attention_layers, encoder_margins):
            with pytest.raises(InvalidInputError, match="ModernBertModel"):
                read(model)
        return
    layers = attention_layers(model)
    assert len(layers) == 3
    names = {id(p): n for n, p in model.named_parameters()}
    for i, (q, k, v, o, scale) in enumerate(layers):
        assert scale == pytest.approx(0.5)  # 1/√d_h with d_h = 4
        owners = [names[id(m.weight)] for m in (q, k, v, o)]
        assert all(f".{i}." in n for n in owners) and len(set(owners)) == 4


def test_unknown_layouts_are_refused_naming_the_model_class():
    model = tiny_encoder("vit", hidden_size=8, n_heads=2, n_layers=2)
    model.layers[1].attention.k_proj = torch.nn.Identity()
    with pytest.raises(InvalidInputError, match=r"ViTModel, layer 2: ViTLayer .*attention\.k_proj"):
        encoder_margins(model)
    bert = tiny_encoder("bert", hidden_size=8, n_heads=2, n_layers=1)
    del bert.encoder.layer[0].attention.self.scaling
    with pytest.raises(InvalidInputError, match=r"BertModel.*attention\.self\.scaling"):
        encoder_horizon_margins(bert, torch.eye(8, dtype=torch.float64))
    moved = tiny_encoder("deit", hidden_size=8, n_heads=2, n_layers=1)
    moved.blocks = moved.layers
    del moved.layers
    with pytest.raises(InvalidInputError, match="DeiTModel has no list of encoder layers"):
        encoder_margins(moved)
    with pytest.raises(InvalidInputError, match="Linear"):
        attention_layers(torch.nn.Linear(2, 2))
