"""GPT-2-family decoders (causal attention): `probe` measures their hidden states with the
tokens placed where the model's own word + position embeddings go (checked against
transformers' own forward pass), and everything that needs the mean-field flow of unmasked
attention (extraction, atlas, compare, the probe's moment prediction) says plainly that it
does not apply."""

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from riccati_tf.app.cli import main  # noqa: E402
from riccati_tf.empirical.encoders import extract  # noqa: E402
from riccati_tf.empirical.encoders.loading import capture, embed_ids, load_model  # noqa: E402
from riccati_tf.errors import InvalidInputError  # noqa: E402


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory):
    """A 2-layer GPT-2 (d = 16, 4 heads, 64 positions, 100 ids), float64, saved locally."""
    config = transformers.GPT2Config(n_embd=16, n_layer=2, n_head=4, n_positions=64,
                                     vocab_size=100, bos_token_id=0, eos_token_id=0)
    torch.manual_seed(0)
    model = transformers.GPT2Model(config).to(torch.float64).eval()
    path = tmp_path_factory.mktemp("gpt2")
    model.save_pretrained(path)
    return str(path)


def test_capture_places_tokens_where_the_model_embeds_them(gpt2_dir):
    model = load_model(gpt2_dir)
    ids = np.random.default_rng(0).integers(0, 100, size=20)
    (x,) = embed_ids(model, [ids])
    hidden, attn_in, _ = capture(model, x)
    with torch.inference_mode():
        out = model(input_ids=torch.as_tensor(ids[None]), output_hidden_states=True)
    np.testing.assert_allclose(hidden[0], out.hidden_states[0][0].numpy(), atol=1e-12)
    # block outputs (transformers applies ln_f to the last one)
    np.testing.assert_allclose(hidden[1], out.hidden_states[1][0].numpy(), atol=1e-10)
    assert attn_in[0] is not None and attn_in[0].shape == (20, 16)


def test_probe_measures_a_decoder_and_the_flow_refuses_it(gpt2_dir, tmp_path, capsys):
    assert main(["probe", "--model", gpt2_dir, "--out", str(tmp_path / "p"), "--n-tokens",
                 "256", "--n-null", "20", "--json"]) == 0
    numbers = json.loads(capsys.readouterr().out)
    assert numbers["layers"] == [0, 1, 2] and numbers["prediction"] is None
    assert "causal" in numbers["prediction_note"]
    for command in ("atlas", "compare"):
        assert main([command, "--model", gpt2_dir, "--out", str(tmp_path / command)]) == 2
        err = capsys.readouterr().err
        assert "causal" in err and "unmasked attention" in err
    with pytest.raises(InvalidInputError, match="causal"):
        extract(load_model(gpt2_dir))
