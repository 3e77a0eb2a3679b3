"""The atlas subcommand's files, a report section, and a model saved with save_pretrained."""

import json

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from riccati_tf.empirical.encoders import extract
from riccati_tf.empirical.encoders.outputs import report_parts, write_atlas
from riccati_tf.empirical.encoders.tiny import tiny_encoder
from riccati_tf.errors import InvalidInputError

PNG = b"\x89PNG\r\n\x1a\n"


def test_write_atlas_of_a_saved_model(tmp_path):
    """A folder written by save_pretrained (as a sentence-transformers model holds its BertModel)
    is loaded back with the same factors, and its atlas is written as JSON and PNG."""
    model = tiny_encoder("bert", n_layers=2, initializer_range=0.1, seed=4)
    model.save_pretrained(tmp_path / "model")
    result, numbers = write_atlas(str(tmp_path / "model"), tmp_path / "out", horizon=5.0)
    stored = json.loads((tmp_path / "out" / "atlas.json").read_text())
    assert stored["sign"] == result.sign.tolist() and stored["horizon"] == 5.0
    assert (tmp_path / "out" / "atlas.png").read_bytes().startswith(PNG)
    assert numbers["figure"].endswith("atlas.png")
    from riccati_tf.empirical.encoders.loading import load_model

    again = extract(load_model(str(tmp_path / "model")))
    for a, b in zip(extract(model).layers, again.layers, strict=True):
        assert np.array_equal(a.heads[1].B, b.heads[1].B)
        assert np.array_equal(a.mlp.W_out, b.mlp.W_out)


def test_write_atlas_refuses_bad_folders(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(InvalidInputError, match="not a folder"):
        write_atlas(None, tmp_path / "file")
    with pytest.raises(InvalidInputError, match=r"config\.json"):
        write_atlas(str(tmp_path), tmp_path / "out")


def test_report_parts_quick():
    parts = report_parts(None, quick=True)
    assert set(parts.figures) == {"model_atlas.png", "model_comparison.png"}
    assert all(png.startswith(PNG) for png in parts.figures.values())
    numbers = json.loads(parts.files["model.json"])
    assert numbers["comparison"]["sequences"] == 2  # 1024 tokens, 512 positions
    assert len(numbers["atlas"]["regime"]) == 4
    assert "2 sequences of length 512" in parts.body
