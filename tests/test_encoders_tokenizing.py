"""Text read through a model folder's tokenizer: a folder missing any one of its tokenizer files
either reads the text exactly as the whole folder does, or is refused naming the vocabulary
files it lacks; a vocabulary truncated or lacking the text's words is refused by its size
against the model's embedding rows or by its unknown-token share, at the stated thresholds."""

import json
import shutil

import numpy as np
import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from riccati_tf.app.cli import main  # noqa: E402
from riccati_tf.empirical.encoders.loading import load_model, model_inputs  # noqa: E402
from riccati_tf.empirical.encoders.tiny import (  # noqa: E402
    save_encoder,
    trained_like_encoder,
    wordpiece_vocab,
)
from riccati_tf.empirical.encoders.tokenizing import (  # noqa: E402
    MAX_UNKNOWN_SHARE,
    MIN_VOCABULARY_SHARE,
    tokenize_passages,
)
from riccati_tf.errors import InvalidInputError  # noqa: E402

TEXT = ["the model of a flow is a theory of attention",
        "tokens move with depth; their covariance may blow up in finite time."]
#: every file a saved BERT tokenizer has held: transformers 5 writes the first two, earlier
#: versions also the last two
FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json")


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    """A trained-like encoder saved with its tokenizer in every file layout, and a text."""
    path = tmp_path_factory.mktemp("whole")
    save_encoder(trained_like_encoder(hidden_size=16, n_heads=2, n_layers=1, n_sample=64,
                                      max_positions=32), path)
    (path / "vocab.txt").write_text("\n".join(wordpiece_vocab()) + "\n", encoding="utf-8")
    (path / "special_tokens_map.json").write_text(json.dumps(
        {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]",
         "mask_token": "[MASK]"}))
    text = path.parent / "whole-text.txt"
    text.write_text("\n".join(TEXT) + "\n", encoding="utf-8")
    return path, text


def _without(whole, tmp_path, *names, edit=None):
    folder = tmp_path / "model"
    shutil.copytree(whole, folder)
    for name in names:
        (folder / name).unlink()
    if edit:
        edit(folder)
    return folder


def _ids(folder, text):
    """The ids transformers itself gives (the reference the package must reproduce)."""
    tok = transformers.AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    return [tok(p)["input_ids"] for p in text.read_text().splitlines()]


@pytest.mark.parametrize("missing", [("tokenizer_config.json",), ("special_tokens_map.json",),
                                     ("vocab.txt",), ("tokenizer.json",),
                                     ("tokenizer_config.json", "special_tokens_map.json"),
                                     ("vocab.txt", "tokenizer_config.json")])
def test_a_folder_with_a_whole_vocabulary_reads_the_text_as_before(whole, tmp_path, missing):
    path, text = whole
    folder = _without(path, tmp_path, *missing)
    inputs = model_inputs(load_model(folder), text=text)
    assert inputs.notes == ()  # no unknown token, no cut
    assert list(inputs.lengths) == [len(i) for i in _ids(path, text)]
    reference = model_inputs(load_model(path), text=text)
    np.testing.assert_array_equal(inputs.tokens, reference.tokens)


@pytest.mark.parametrize("missing", [("tokenizer.json", "vocab.txt"),
                                     ("tokenizer.json", "vocab.txt", "special_tokens_map.json"),
                                     ("tokenizer.json", "vocab.txt", "tokenizer_config.json")])
def test_a_folder_without_its_vocabulary_is_refused_naming_the_files(whole, tmp_path, missing):
    path, text = whole
    folder = _without(path, tmp_path, *missing)
    with pytest.raises(InvalidInputError) as info:
        model_inputs(load_model(folder), text=text)
    message = str(info.value)
    assert "cannot read the text" in message and "no vocabulary" in message
    assert "tokenizer.json" in message and "vocab.txt" in message
    for kept in set(FILES) - set(missing):
        assert kept in message.split("no vocabulary")[0]  # what the folder holds is named


def test_every_tokenizer_file_missing_is_refused(whole, tmp_path):
    path, text = whole
    with pytest.raises(InvalidInputError, match="holds no tokenizer"):
        model_inputs(load_model(_without(path, tmp_path, *FILES)), text=text)


def test_the_atlas_refuses_a_folder_without_its_vocabulary(whole, tmp_path, capsys):
    path, text = whole
    folder = _without(path, tmp_path, "tokenizer.json", "vocab.txt")
    capsys.readouterr()
    assert main(["atlas", "--model", str(folder), "--text", str(text), "--out",
                 str(tmp_path / "a")]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and "cannot read the text" in err[0] and "vocab.txt" in err[0]
    assert "moments from" not in captured.out


def _truncate_vocab_txt(n):
    def edit(folder):
        (folder / "vocab.txt").write_text("\n".join(wordpiece_vocab()[:n]) + "\n")
    return edit


def _truncate_tokenizer_json(n):
    def edit(folder):
        spec = json.loads((folder / "tokenizer.json").read_text())
        spec["model"]["vocab"] = {t: i for t, i in spec["model"]["vocab"].items() if i < n}
        (folder / "tokenizer.json").write_text(json.dumps(spec))
    return edit


@pytest.mark.parametrize("file", ["vocab.txt", "tokenizer.json"])
def test_a_truncated_vocabulary_is_refused_by_its_size(whole, tmp_path, file):
    path, text = whole
    rows = len(wordpiece_vocab())  # the model's embedding rows
    n = int(MIN_VOCABULARY_SHARE * rows) - 1
    other = "tokenizer.json" if file == "vocab.txt" else "vocab.txt"
    edit = _truncate_vocab_txt(n) if file == "vocab.txt" else _truncate_tokenizer_json(n)
    folder = _without(path, tmp_path, other, edit=edit)
    with pytest.raises(InvalidInputError,
                       match=f"holds {n} tokens for the model's {rows} embedding rows") as info:
        model_inputs(load_model(folder), text=text)
    assert f"read from {file}" in str(info.value)


def _tokenizer(vocab):
    return transformers.BertTokenizerFast(vocab={t: i for i, t in enumerate(vocab)},
                                          do_lower_case=True)


def test_the_unknown_share_threshold():
    # a vocabulary of whole words only: a word outside it is exactly one [UNK]
    words = ["the", "model", "flow", "of", "a"]
    tok = _tokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words])
    n = 40
    for u in range(0, 9):
        known = [words[i % len(words)] for i in range(n - u)]
        passage = " ".join(known + ["zebra"] * u)
        if u > MAX_UNKNOWN_SHARE * n:
            with pytest.raises(InvalidInputError, match=f"{u} of its {n} tokens"):
                tokenize_passages(tok, [passage], None)
            continue
        ids, notes = tokenize_passages(tok, [passage, "a flow"], None)
        assert [len(row) for row in ids] == [n + 2, 4]  # [CLS] … [SEP]
        assert ids[0][0] == 2 and ids[0][-1] == 3
        assert notes == ((f"{u} of the text's {n + 2} tokens are the unknown token '[UNK]'",)
                         if u else ())


def test_a_vocabulary_without_the_texts_words_is_refused_by_its_unknown_share(whole, tmp_path):
    path, _ = whole
    vocab = wordpiece_vocab()
    words_only = [t for t in vocab if len(t) > 1 and not t.startswith("##")]  # no characters
    assert len(words_only) >= MIN_VOCABULARY_SHARE * len(vocab)
    folder = _without(path, tmp_path, "tokenizer.json", edit=lambda f: (f / "vocab.txt")
                      .write_text("\n".join(words_only) + "\n"))
    odd = tmp_path / "odd.txt"
    odd.write_text("zebras quokkas xylophones gazebo the\n")
    with pytest.raises(InvalidInputError, match="4 of its 5 tokens"):
        model_inputs(load_model(folder), text=odd)
