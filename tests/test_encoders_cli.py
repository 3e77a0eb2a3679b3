"""The command-line entry points on a saved BERT-family sentence encoder of the published shape
(d = 384, 12 heads, 6 layers, 512 positions, intermediate 1536), random float64 weights: the
probe with its defaults cuts the tokens into sequences within the position limit and tests on
random directions; the atlas writes its figure and numbers."""

import json

import numpy as np
import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from riccati_tf.app.cli import main  # noqa: E402
from riccati_tf.empirical import probe as probing  # noqa: E402
from riccati_tf.empirical.encoders.loading import load_model  # noqa: E402

SHAPE = {"hidden_size": 384, "num_attention_heads": 12, "num_hidden_layers": 6,
         "max_position_embeddings": 512, "intermediate_size": 1536}


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory):
    """A BertModel of the sentence-encoder shape, float64, saved with save_pretrained."""
    import torch

    path = tmp_path_factory.mktemp("sentence-encoder")
    torch.manual_seed(0)
    model = transformers.BertModel(transformers.BertConfig(**SHAPE)).double().eval()
    model.save_pretrained(path)
    return str(path)


def test_probe_with_the_defaults_runs_within_the_position_limit(encoder_dir, tmp_path, capsys):
    # `riccati-tf probe --model DIR` with its defaults: all tokens in one sequence would exceed
    # the 512 positions
    assert main(["probe", "--model", encoder_dir, "--out", str(tmp_path), "--json"]) == 0
    numbers = json.loads(capsys.readouterr().out)
    stored = json.loads((tmp_path / "probe.json").read_text())
    assert (tmp_path / "probe.png").read_bytes()[:4] == b"\x89PNG"
    assert stored == numbers and stored["n_tokens"] == probing.DEFAULT_TOKENS
    assert stored["layers"] == list(range(7))
    assert stored["lengths"] == [512] * 4 and stored["sequences"] == 4
    assert stored["position_limit"] == 512 and stored["model_path"] == encoder_dir
    # n = 2048 is not ≫ d = 384: the statistics are taken on k ≪ n random directions
    assert stored["projected"] and stored["dimension"] == probing.PROJECTED_DIMENSION
    assert stored["rank"] == [probing.PROJECTED_DIMENSION] * 7
    # σ = 0.02 weights: near-identity layers, Gaussian throughout, attention affine per
    # sequence up to the finite-sequence softmax (ρ ≈ 0.035, an order of magnitude below its
    # value for an unrelated output), moments as predicted
    assert not any(stored["reject"])
    rho, scale = np.array(stored["attention_residual"]), stored["residual_scale"]
    np.testing.assert_allclose(scale, np.sqrt((512 - 385) / 511))
    assert np.all(rho < 0.1 * scale)
    # the moment prediction: errors at the level of the sampling floor (each layer's verdict is
    # a test at level α, 7 layers: a floor quantile can be crossed by chance, 1.5× cannot)
    prediction = stored["prediction"]
    for name in ("mean_k", "cov_k"):
        floor = np.array(prediction["floors"][name])[:, 1]
        assert np.all(np.array(prediction["errors"][name]) < 1.5 * floor)
    assert stored["prediction"]["lengths"] == stored["lengths"]


def test_probe_keeps_its_verdict_when_n_is_close_to_d(encoder_dir):
    # n = 500 ≈ d: whitened in R^384 every layer would look alike; on 8 directions the
    # near-identity layers are accepted and the accepted interval has width
    res = probing.probe(load_model(encoder_dir), n_tokens=500, predict=False)
    assert res.lengths == (500,) and res.dimension == probing.PROJECTED_DIMENSION
    assert not res.reject.any()
    for name in probing.TESTS:
        assert np.all(res.band_high[name] > res.null_median[name])


def test_atlas_with_the_defaults_writes_figure_and_numbers(encoder_dir, tmp_path, capsys):
    out = tmp_path / "atlas"
    assert main(["atlas", "--model", encoder_dir, "--out", str(out)]) == 0
    text = capsys.readouterr().out
    stored = json.loads((out / "atlas.json").read_text())
    assert (out / "atlas.png").read_bytes()[:4] == b"\x89PNG"
    assert stored["model_path"] == encoder_dir and stored["d"] == 384
    assert np.array(stored["v_inertia"]).shape == (6, 12, 3)
    assert len(stored["regime"]) == 6 and all(f"layer {i}:" in text for i in range(1, 7))
    # its own files are replaced on a rerun; a file the user changed is never overwritten
    assert main(["atlas", "--model", encoder_dir, "--out", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["regime"] == stored["regime"]
    (out / "atlas.json").write_text("my notes")
    assert main(["atlas", "--model", encoder_dir, "--out", str(out)]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err
    assert (out / "atlas.json").read_text() == "my notes"
