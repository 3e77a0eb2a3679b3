"""The command-line entry points on a saved BERT-family sentence encoder of the published shape
(d = 384, 12 heads, 6 layers, 512 positions, intermediate 1536), random float64 weights: the
probe with its defaults cuts the tokens into sequences within the position limit and tests on
random directions; the atlas writes its figure and numbers. Real inputs (text, token ids,
hidden states) on a saved trained-like encoder with its tokenizer, and model folders that are
wrong."""

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from riccati_tf.app.cli import main  # noqa: E402
from riccati_tf.empirical import probe as probing  # noqa: E402
from riccati_tf.empirical.encoders.loading import (  # noqa: E402
    capture,
    embedding_moments,
    load_model,
    model_inputs,
)
from riccati_tf.empirical.encoders.tiny import (  # noqa: E402
    save_encoder,
    tiny_encoder,
    trained_like_encoder,
)
from riccati_tf.io.paths import relative_paths  # noqa: E402

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
    # the file holds the printed numbers with paths relative to its folder
    assert stored == relative_paths(numbers, tmp_path, [encoder_dir])
    assert stored["n_tokens"] == probing.DEFAULT_TOKENS
    assert stored["layers"] == list(range(7))
    assert stored["lengths"] == [512] * 4 and stored["sequences"] == 4
    assert stored["position_limit"] == 512
    assert (tmp_path / stored["model_path"]).resolve() == Path(encoder_dir).resolve()
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


@pytest.mark.long  # 22 s of CPU: the d = 384 flows; the small model's tests below run the same path
def test_atlas_with_the_defaults_writes_figure_and_numbers(encoder_dir, tmp_path, capsys):
    out = tmp_path / "atlas"
    assert main(["atlas", "--model", encoder_dir, "--out", str(out)]) == 0
    text = capsys.readouterr().out
    stored = json.loads((out / "atlas.json").read_text())
    assert (out / "atlas.png").read_bytes()[:4] == b"\x89PNG"
    assert (out / stored["model_path"]).resolve() == Path(encoder_dir).resolve()
    assert stored["d"] == 384
    assert np.array(stored["v_inertia"]).shape == (6, 12, 3)
    assert len(stored["regime"]) == 6 and all(f"layer {i}:" in text for i in range(1, 7))
    # a file the user changed is never overwritten (its own files are replaced on a rerun:
    # test_atlas_rerun_replaces_its_own_files, on a smaller model)
    (out / "atlas.json").write_text("my notes")
    assert main(["atlas", "--model", encoder_dir, "--out", str(out)]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err
    assert (out / "atlas.json").read_text() == "my notes"


# ---------------------------------------------------------------------------------------------
# real inputs: text, token ids and hidden states, on a saved trained-like encoder with its
# tokenizer (positions limited to 32 so that long passages are cut)

PASSAGES = ["The theory of attention flow in deep networks is a theory of measures.",
            "Tokens move with depth; their covariance may blow up in finite time.",
            "A gaussian cloud stays gaussian under an affine field, and attention on a gaussian "
            "cloud is affine in the limit of many tokens, which is what the moment equations "
            "use at every layer of the model.",
            "Words."] * 6


@pytest.fixture(scope="module")
def trained_dir(tmp_path_factory):
    """A trained-like BERT encoder (d = 48, 4 heads, 2 layers, 32 positions) saved with its
    WordPiece tokenizer, and a text file of passages (one of them longer than 32 tokens)."""
    path = tmp_path_factory.mktemp("trained-like")
    model = trained_like_encoder(hidden_size=48, n_heads=4, n_layers=2, max_positions=32,
                                 n_sample=256, seed=3)
    save_encoder(model, path)
    text = path / "passages.txt"
    text.write_text("\n\n".join(PASSAGES) + "\n", encoding="utf-8")
    return str(path), str(text)


def _chunks(ids, limit):
    """Independent of sequences.within_limit: ⌈n/limit⌉ consecutive chunks of near-equal
    lengths."""
    k = -(-len(ids) // limit)
    return [np.asarray(c) for c in np.array_split(np.asarray(ids), k)]


def test_text_is_fed_as_the_model_sees_it(trained_dir):
    import torch

    folder, text = trained_dir
    model = load_model(folder)
    inputs = model_inputs(model, text=text)
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True)
    ids = [c for p in PASSAGES for c in _chunks(tokenizer(p)["input_ids"], 32)]
    assert inputs.kind == "text" and inputs.lengths == tuple(len(c) for c in ids)
    assert len(ids) > len(PASSAGES) and "position limit 32" in inputs.notes[0]
    start = 0
    for chunk in ids:
        seq = inputs.tokens[start:start + len(chunk)]
        start += len(chunk)
        with torch.inference_mode():
            out = model(input_ids=torch.as_tensor(chunk[None]), output_hidden_states=True)
        # the embedding output of the ids, and the model's own run on them reproduced by
        # feeding that output (attention within the sequence only)
        np.testing.assert_allclose(seq, out.hidden_states[0][0].numpy(), rtol=0, atol=1e-12)
        hidden, _, _ = capture(model, seq)
        np.testing.assert_allclose(hidden[-1], out.last_hidden_state[0].numpy(), rtol=0,
                                   atol=1e-10)
    x = inputs.tokens
    np.testing.assert_allclose(inputs.mean, x.mean(axis=0), atol=1e-12)
    np.testing.assert_allclose(inputs.cov, (x - x.mean(0)).T @ (x - x.mean(0)) / (len(x) - 1),
                               atol=1e-10)


def test_token_ids_and_hidden_states_give_the_same_inputs(trained_dir, tmp_path):
    folder, text = trained_dir
    model = load_model(folder)
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True)
    ragged = [np.asarray(tokenizer(p)["input_ids"]) for p in PASSAGES]
    # ragged sequences: one array and their lengths (an object array would need unpickling)
    np.savez(tmp_path / "ids.npz", ids=np.concatenate(ragged),
             lengths=np.array([len(r) for r in ragged]))
    from_text = model_inputs(model, text=text)
    from_ids = model_inputs(model, tokens=tmp_path / "ids.npz")
    seqs = np.split(from_text.tokens, np.cumsum(from_text.lengths)[:-1])
    np.savez(tmp_path / "h.npz", **{f"s{i:03d}": s for i, s in enumerate(seqs)})
    from_hidden = model_inputs(model, hidden=tmp_path / "h.npz")
    for other in (from_ids, from_hidden):
        assert other.lengths == from_text.lengths
        np.testing.assert_array_equal(other.tokens, from_text.tokens)
    assert (from_ids.kind, from_hidden.kind) == ("tokens", "hidden")


def test_gaussian_inputs_matched_to_the_embedding_tables(trained_dir):
    folder, _ = trained_dir
    model = load_model(folder)
    # exact population moments of LN(word + position + type) over uniform ids (padding left
    # out) and the positions 0..31 the sample's sequences take, in numpy from the tables
    emb = model.embeddings
    W = emb.word_embeddings.weight.detach().numpy()[1:]
    P = emb.position_embeddings.weight.detach().numpy()[:32]
    T = emb.token_type_embeddings.weight.detach().numpy()[0]
    g, b = emb.LayerNorm.weight.detach().numpy(), emb.LayerNorm.bias.detach().numpy()
    z = (W[:, None, :] + P[None, :, :] + T).reshape(-1, W.shape[1])
    z = (z - z.mean(1, keepdims=True)) / np.sqrt(z.var(1, keepdims=True) + emb.LayerNorm.eps)
    x = z * g + b
    m, C = x.mean(0), np.cov(x.T, bias=True)
    inputs = model_inputs(model, n_tokens=300, seed=1)
    mean, cov = embedding_moments(model, seed=1)
    np.testing.assert_array_equal(inputs.mean, mean)
    n = 8192  # EMBEDDING_SAMPLE: the sampling error of a covariance estimate
    tol = 4 * np.sqrt((np.trace(C) ** 2 + np.sum(C * C)) / n)
    assert np.linalg.norm(cov - C) < tol < 0.5 * np.linalg.norm(C)
    assert np.linalg.norm(mean - m) < 4 * np.sqrt(np.trace(C) / n)
    assert inputs.kind == "gaussian" and inputs.n_tokens == 300
    assert inputs.lengths == (30,) * 10  # within the 32 positions
    standard = model_inputs(model, n_tokens=300, gaussian="standard")
    assert standard.source == "N(0, I)" and np.array_equal(standard.cov, np.eye(48))
    # matched to the text: the text's moments and its sequence lengths
    folder, text = trained_dir
    matched = model_inputs(model, text=text, gaussian="matched")
    real = model_inputs(model, text=text)
    assert matched.lengths == real.lengths and np.array_equal(matched.cov, real.cov)


def test_probe_atlas_and_compare_read_text(trained_dir, tmp_path, capsys):
    folder, text = trained_dir
    lengths = list(model_inputs(load_model(folder), text=text).lengths)
    assert main(["probe", "--model", folder, "--text", text, "--out", str(tmp_path / "p"),
                 "--n-null", "50", "--json"]) == 0
    probe = json.loads(capsys.readouterr().out)
    assert probe["inputs"]["kind"] == "text" and probe["lengths"] == lengths
    assert probe["n_tokens"] == sum(lengths)
    # the prediction starts from the text's own moments: layer 0 agrees exactly
    errors = probe["prediction"]["errors"]
    assert errors["mean"][0] < 1e-12 and errors["cov"][0] < 1e-12
    assert main(["atlas", "--model", folder, "--text", text, "--out",
                 str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("moments from: text") and f"{sum(lengths)} tokens" in out
    stored = np.load(tmp_path / "a" / "atlas_inputs.npz")
    real = model_inputs(load_model(folder), text=text)
    key = next(k for k in stored.files if "mean" in k)
    np.testing.assert_allclose(stored[key][0], real.mean, atol=1e-12)
    assert main(["compare", "--model", folder, "--tokens", str(_ids_file(folder, tmp_path)),
                 "--out", str(tmp_path / "c"), "--json"]) == 0
    compared = json.loads(capsys.readouterr().out)
    assert compared["inputs"]["kind"] == "tokens" and compared["n_tokens"] == 7


def _ids_file(folder, tmp_path):
    ids = np.array([[2, 10, 11, 12, 13, 14, 3]])
    np.save(tmp_path / "one.npy", ids)
    return tmp_path / "one.npy"


@pytest.mark.parametrize("case", ["no tokenizer", "empty text", "id outside", "nan hidden",
                                  "wrong d", "data without file", "two files", "missing file"])
def test_bad_inputs_get_one_line(case, trained_dir, tmp_path, capsys):
    folder, text = trained_dir
    args = ["probe", "--model", folder, "--out", str(tmp_path / "o")]
    if case == "no tokenizer":
        bare = tmp_path / "bare"
        tiny_encoder("bert", hidden_size=8, n_heads=2, n_layers=1).save_pretrained(bare)
        args, expect = ["probe", "--model", str(bare), "--text", text], "holds no tokenizer"
    elif case == "empty text":
        (tmp_path / "e.txt").write_text("\n  \n")
        args, expect = [*args, "--text", str(tmp_path / "e.txt")], "holds no passage"
    elif case == "id outside":
        np.save(tmp_path / "ids.npy", np.array([[2, 5, 100000, 3]]))
        args += ["--tokens", str(tmp_path / "ids.npy")]
        expect = "token id 100000 (sequence 1, position 3) is outside its vocabulary"
    elif case == "nan hidden":
        h = np.ones((6, 48))
        h[4, 7] = np.nan
        np.savez(tmp_path / "h.npz", a=h)
        args, expect = [*args, "--hidden", str(tmp_path / "h.npz")], "NaN or Inf (first at"
    elif case == "wrong d":
        np.savez(tmp_path / "h.npz", a=np.ones((6, 7)))
        args, expect = [*args, "--hidden", str(tmp_path / "h.npz")], "dimension 7, but"
    elif case == "data without file":
        args, expect = [*args, "--input", "data"], "--input data needs a file"
    elif case == "two files":
        args, expect = [*args, "--text", text, "--tokens", text], "not allowed with argument"
    else:
        args, expect = [*args, "--hidden", str(tmp_path / "none.npz")], "no such file"
    capsys.readouterr()
    try:
        code = main(args)
    except SystemExit as exc:  # argparse's own refusals
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expect in err[0], err


# ---------------------------------------------------------------------------------------------
# model folders that are wrong: one line naming the model and the cause


def _broken(kind, path):
    import torch

    config = {"vocab_size": 64, "hidden_size": 16, "num_hidden_layers": 2,
              "num_attention_heads": 2, "intermediate_size": 32, "max_position_embeddings": 64}
    if kind == "no layers":
        config["num_hidden_layers"] = 0
    if kind == "negative eps":
        config["layer_norm_eps"] = -1.0
    torch.manual_seed(0)
    model = transformers.BertModel(transformers.BertConfig(**config)).eval()  # float32
    with torch.no_grad():
        if kind == "nan weight":
            model.encoder.layer[1].attention.self.value.weight[2, 3] = float("nan")
        elif kind == "nan layernorm":
            model.encoder.layer[0].output.LayerNorm.weight[:] = float("nan")
        elif kind == "huge logits":
            for layer in model.encoder.layer:
                layer.attention.self.query.weight.mul_(1e30)
                layer.attention.self.key.weight.mul_(1e30)
    model.save_pretrained(path)
    return str(path)


BROKEN = {"no layers": "has no encoder layer (config.num_hidden_layers = 0)",
          "negative eps": "embeddings.LayerNorm.eps = -1 (config.layer_norm_eps)",
          "nan weight": "parameter encoder.layer.1.attention.self.value.weight holds 1 NaN",
          "nan layernorm": "parameter encoder.layer.0.output.LayerNorm.weight holds 16 NaN",
          "huge logits": "layer 1 head 1 has attention logits up to"}


@pytest.mark.parametrize("kind", list(BROKEN))
@pytest.mark.parametrize("command", ["probe", "atlas", "compare"])
def test_wrong_model_folders_get_one_line(kind, command, tmp_path, capsys):
    folder = _broken(kind, tmp_path / "model")
    capsys.readouterr()
    assert main([command, "--model", folder, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"model BertModel ({folder})" in err[0], err
    assert BROKEN[kind] in err[0], err


@pytest.mark.parametrize("command,option,expect", [
    ("probe", ["--n-tokens", "1"], "n_tokens"), ("compare", ["--n-tokens", "1"], "n-tokens"),
    ("atlas", ["--horizon", "-1"], "horizon")])
def test_checks_that_need_no_model_run_before_it_is_loaded(command, option, expect, tmp_path,
                                                           capsys):
    missing = str(tmp_path / "no-such-model")  # loading it would fail first
    assert main([command, "--model", missing, "--out", str(tmp_path / "o"), *option]) == 2
    err = capsys.readouterr().err
    assert expect in err and "no-such-model" not in err
    (tmp_path / "file").write_text("x")
    assert main([command, "--model", missing, "--out", str(tmp_path / "file")]) == 2
    err = capsys.readouterr().err
    assert "no-such-model" not in err


def test_atlas_rerun_replaces_its_own_files(trained_dir, tmp_path, capsys):
    folder, out = trained_dir[0], tmp_path / "atlas"
    assert main(["atlas", "--model", folder, "--out", str(out)]) == 0
    capsys.readouterr()
    stored = json.loads((out / "atlas.json").read_text())
    assert main(["atlas", "--model", folder, "--out", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["regime"] == stored["regime"]
    assert json.loads((out / "atlas.json").read_text())["regime"] == stored["regime"]
    # a file the user changed is never overwritten
    (out / "atlas.json").write_text("my notes")
    assert main(["atlas", "--model", folder, "--out", str(out)]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err
    assert (out / "atlas.json").read_text() == "my notes"


def test_atlas_with_text_starts_each_layer_from_its_measured_input(trained_dir, tmp_path,
                                                                    capsys):
    """`atlas --text`: Σ0 of layer ℓ is the covariance of the tokens entering layer ℓ,
    computed here from transformers' own hidden states on the tokenised text (BERT is
    post-norm: layer ℓ's attention acts on hidden_states[ℓ − 1]); the source is labelled in
    the text, the JSON and the figure; --chained keeps the closures' prediction, which
    differs from the measured moments after the first layer."""
    import torch

    folder, text = trained_dir
    model = load_model(folder)
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True)
    ids = [c for p in PASSAGES for c in _chunks(tokenizer(p)["input_ids"], 32)]
    states = [[], []]
    for chunk in ids:
        with torch.inference_mode():
            out = model(input_ids=torch.as_tensor(chunk[None]), output_hidden_states=True)
        for ell in range(2):
            states[ell].append(out.hidden_states[ell][0].numpy())
    measured = [np.cov(np.vstack(s), rowvar=False) for s in states]
    assert main(["atlas", "--model", folder, "--text", text, "--out", str(tmp_path / "m"),
                 "--json"]) == 0
    numbers = json.loads(capsys.readouterr().out)
    assert numbers["moments_source"] == "measured"
    cov0 = np.load(tmp_path / "m" / "atlas_inputs.npz")["cov0"]
    for ell in range(2):
        scale = np.max(np.abs(measured[ell]))
        np.testing.assert_allclose(cov0[ell], measured[ell], rtol=0, atol=1e-10 * scale)
    assert main(["atlas", "--model", folder, "--text", text, "--out", str(tmp_path / "c"),
                 "--chained"]) == 0
    assert "predicted by the Gaussian closures chained" in capsys.readouterr().out
    chained = np.load(tmp_path / "c" / "atlas_inputs.npz")["cov0"]
    np.testing.assert_allclose(chained[0], measured[0], rtol=0,
                               atol=1e-10 * np.max(np.abs(measured[0])))
    assert np.linalg.norm(chained[1] - measured[1]) > 1e-3 * np.linalg.norm(measured[1])


def test_json_files_name_no_absolute_path(trained_dir, tmp_path, capsys):
    """atlas.json and probe.json name their own files by name and the model folder and the
    text relative to the output folder: no absolute path of this machine is stored, and the
    relative ones resolve from the folder."""
    folder, text = trained_dir
    for command, name, extra in (("atlas", "atlas.json", []),
                                 ("probe", "probe.json", ["--n-null", "20"])):
        out = tmp_path / command
        assert main([command, "--model", folder, "--text", text, "--out", str(out),
                     *extra]) == 0
        capsys.readouterr()
        stored = (out / name).read_text(encoding="utf-8")
        assert str(tmp_path) not in stored and folder not in stored
        numbers = json.loads(stored)
        assert (out / numbers["model_path"]).resolve() == Path(folder).resolve()
        assert not Path(numbers["figure"]).is_absolute()
        assert (out / numbers["figure"]).is_file()


def test_probe_table_explains_what_it_leaves_out(trained_dir, tmp_path, capsys):
    """d = 48 with sequences of at most 32 tokens: ρ cannot be measured and the table says
    why; the inputs' notes (passages cut at the position limit, sequences left out at
    --n-tokens) are printed one a line."""
    folder, text = trained_dir
    assert main(["probe", "--model", folder, "--text", text, "--out", str(tmp_path / "p"),
                 "--n-null", "20"]) == 0
    out = capsys.readouterr().out
    assert "attn ρ: none — the shortest sequence has" in out and "d + 1 = 49" in out
    assert "note: " in out and "position limit 32" in out
