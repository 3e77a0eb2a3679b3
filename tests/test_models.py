"""The per-layer probe on tiny randomly initialised ModernBERT and DeiT encoders (no downloads)."""

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from riccati_tf import models  # noqa: E402
from riccati_tf.errors import InvalidInputError  # noqa: E402
from riccati_tf.experiments import probe_table, run_probe  # noqa: E402

N_TOKENS, N_NULL = 300, 100


@pytest.fixture(scope="module", params=["deit", "modernbert"])
def saved(request, tmp_path_factory):
    """A tiny random encoder with large weights (σ = 0.5: visibly non-linear layers), saved
    and reloaded through from_pretrained(path)."""
    path = tmp_path_factory.mktemp(request.param)
    models.tiny_model(request.param, initializer_range=0.5, seed=1).save_pretrained(path)
    return request.param, str(path)


def test_captured_hidden_states_are_the_layer_outputs(saved):
    family, path = saved
    model = models.load_model(path)
    tokens = np.random.default_rng(0).standard_normal((N_TOKENS, model.config.hidden_size))
    hidden, attn_in, attn_out = models.capture(model, tokens)
    assert len(hidden) == model.config.num_hidden_layers + 1
    # independent: transformers' own output_hidden_states, with the embedding output replaced
    x = torch.tensor(tokens[None], dtype=torch.float32)
    handle = model.embeddings.register_forward_hook(lambda _m, _a, _o: x)
    try:
        with torch.inference_mode():
            out = model(**models._dummy_inputs(model, N_TOKENS), output_hidden_states=True)
    finally:
        handle.remove()
    # ModernBERT ties its last hidden state to the final norm's output; DeiT does not
    assert len(out.hidden_states) == len(hidden)
    for mine, theirs in zip(hidden[:-1], out.hidden_states[:-1], strict=True):
        np.testing.assert_allclose(mine, theirs[0].double().numpy(), rtol=1e-6, atol=1e-6)
    final_norm = model.layernorm if family == "deit" else model.final_norm
    with torch.inference_mode():
        normed = final_norm(torch.tensor(hidden[-1], dtype=torch.float32))
    np.testing.assert_allclose(normed.double().numpy(), out.last_hidden_state[0].double().numpy(),
                               rtol=1e-5, atol=1e-5)
    assert all(z.shape == a.shape == tokens.shape for z, a in zip(attn_in, attn_out, strict=True))


def test_deit_layers_applied_by_hand_agree(tmp_path):
    model = models.tiny_model("deit", initializer_range=0.3, seed=2)
    tokens = np.random.default_rng(1).standard_normal((100, 32))
    hidden, _, _ = models.capture(model, tokens)
    h = torch.tensor(tokens[None], dtype=torch.float32)
    with torch.inference_mode():
        for layer, mine in zip(model.layers, hidden[1:], strict=True):
            h = layer(h)
            np.testing.assert_allclose(mine, h[0].double().numpy(), rtol=1e-6, atol=1e-6)


def test_probe_flags_the_nonlinear_layers(saved):
    _, path = saved
    res = models.probe(models.load_model(path), n_tokens=N_TOKENS, n_null=N_NULL)
    assert res.layers.tolist() == [0, 1, 2]
    assert not res.reject[0]  # the input tokens are exactly Gaussian
    assert res.reject[1:].all()  # σ = 0.5 weights: GELU / ReLU-like layers are far from affine
    assert res.stats["energy"][-1] > res.null_q95["energy"][-1]
    assert np.all(res.null_median["energy"] < res.null_q95["energy"])
    assert res.attention_residual.shape == (2,)


def test_probe_of_a_near_identity_encoder_stays_gaussian():
    # σ = 1e-4 weights: every layer is the identity up to 1e-4 and the cloud stays Gaussian
    res = models.probe(models.tiny_model("modernbert", initializer_range=1e-4), n_tokens=N_TOKENS,
                       n_null=N_NULL)
    assert not res.reject.any()
    np.testing.assert_allclose(res.stats["kurtosis"], res.stats["kurtosis"][0], rtol=1e-4)


def test_affine_residual():
    rng = np.random.default_rng(3)
    z = rng.standard_normal((500, 4))
    a = z @ rng.standard_normal((4, 4)) + 2.0
    assert models.affine_residual(z, a) < 1e-12
    assert models.affine_residual(z, np.tanh(3 * a)) > 0.1


def test_run_probe_writes_per_layer_curves(saved, tmp_path):
    _, path = saved
    numbers = run_probe(path, tmp_path, n_tokens=N_TOKENS, n_null=N_NULL)
    stored = json.loads((tmp_path / "probe.json").read_text())
    assert (tmp_path / "probe.png").stat().st_size > 10_000
    assert stored["layers"] == [0, 1, 2] == numbers["layers"]
    assert all(len(v) == 3 for v in stored["stats"].values())
    assert stored["model_path"] == path
    table = probe_table(numbers).splitlines()
    assert len(table) == 2 + 3 and table[2].split()[-1] == "accepted"  # layer 0: the input


def test_bad_inputs_are_refused(tmp_path):
    with pytest.raises(InvalidInputError, match="not a directory"):
        models.load_model(str(tmp_path / "missing"))
    with pytest.raises(InvalidInputError, match="n_tokens"):
        models.probe(models.tiny_model("deit"), n_tokens=10)
    with pytest.raises(InvalidInputError, match="family"):
        models.tiny_model("bert")
