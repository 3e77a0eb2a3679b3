"""The per-layer probe on tiny randomly initialised ModernBERT and DeiT encoders (no downloads)."""

import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from riccati_tf.app.experiments import probe_table, run_probe  # noqa: E402
from riccati_tf.empirical import gaussianity  # noqa: E402
from riccati_tf.empirical import probe as probing  # noqa: E402
from riccati_tf.empirical.encoders.loading import (  # noqa: E402
    capture,
    dummy_inputs,
    load_model,
    model_inputs,
)
from riccati_tf.empirical.encoders.tiny import tiny_encoder  # noqa: E402
from riccati_tf.empirical.gaussianity.null import _mc_p_value  # noqa: E402
from riccati_tf.errors import InvalidInputError  # noqa: E402
from riccati_tf.io.serialize import to_jsonable  # noqa: E402

N_TOKENS, N_NULL = 300, 100


@pytest.fixture(scope="module", params=["deit", "modernbert"])
def saved(request, tmp_path_factory):
    """A tiny random encoder with large weights (σ = 0.5: visibly non-linear layers), saved
    and reloaded through from_pretrained(path)."""
    path = tmp_path_factory.mktemp(request.param)
    probing.tiny_model(request.param, initializer_range=0.5, seed=1).save_pretrained(path)
    return request.param, str(path)


def test_captured_hidden_states_are_the_layer_outputs(saved):
    family, path = saved
    model = load_model(path)
    tokens = np.random.default_rng(0).standard_normal((N_TOKENS, model.config.hidden_size))
    hidden, attn_in, attn_out = capture(model, tokens)
    assert len(hidden) == model.config.num_hidden_layers + 1
    # independent: transformers' own output_hidden_states, with the embedding output replaced
    x = torch.tensor(tokens[None], dtype=torch.float32)
    handle = model.embeddings.register_forward_hook(lambda _m, _a, _o: x)
    try:
        with torch.inference_mode():
            out = model(**dummy_inputs(model, N_TOKENS), output_hidden_states=True)
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
    model = probing.tiny_model("deit", initializer_range=0.3, seed=2)
    tokens = np.random.default_rng(1).standard_normal((100, 32))
    hidden, _, _ = capture(model, tokens)
    h = torch.tensor(tokens[None], dtype=torch.float32)
    with torch.inference_mode():
        for layer, mine in zip(model.layers, hidden[1:], strict=True):
            h = layer(h)
            np.testing.assert_allclose(mine, h[0].double().numpy(), rtol=1e-6, atol=1e-6)


def standard(model, n_tokens=N_TOKENS):
    """N(0, I) input tokens (the probe's default matches the embedding output's moments)."""
    return model_inputs(model, n_tokens=n_tokens, gaussian="standard")


def test_probe_flags_the_nonlinear_layers(saved):
    _, path = saved
    model = load_model(path)
    res = probing.probe(model, n_null=N_NULL, inputs=standard(model))
    assert res.layers.tolist() == [0, 1, 2]
    assert not res.reject[0]  # the input tokens are exactly Gaussian
    assert res.reject[1:].all()  # σ = 0.5 weights: GELU / ReLU-like layers are far from affine
    assert res.stats["energy"][-1] > res.null_q95["energy"][-1]
    assert np.all(res.null_median["energy"] < res.null_q95["energy"])
    assert res.attention_residual.shape == (2,)


def test_probe_of_a_near_identity_encoder_stays_gaussian():
    # σ = 1e-4 weights: every layer is the identity up to 1e-4 and the cloud stays Gaussian
    model = probing.tiny_model("modernbert", initializer_range=1e-4)
    res = probing.probe(model, n_null=N_NULL, inputs=standard(model))
    assert not res.reject.any()
    np.testing.assert_allclose(res.stats["kurtosis"], res.stats["kurtosis"][0], rtol=1e-4)


def test_affine_residual():
    rng = np.random.default_rng(3)
    z = rng.standard_normal((500, 4))
    a = z @ rng.standard_normal((4, 4)) + 2.0
    assert probing.affine_residual(z, a) < 1e-12
    assert probing.affine_residual(z, np.tanh(3 * a)) > 0.1


def test_run_probe_writes_per_layer_curves(saved, tmp_path):
    _, path = saved
    numbers = run_probe(path, tmp_path, n_tokens=N_TOKENS, n_null=N_NULL)
    stored = json.loads((tmp_path / "probe.json").read_text())
    assert (tmp_path / "probe.png").stat().st_size > 10_000
    assert stored["layers"] == [0, 1, 2] == numbers["layers"]
    assert all(len(v) == 3 for v in stored["stats"].values())
    assert (tmp_path / stored["model_path"]).resolve() == Path(path).resolve()  # relative
    table = probe_table(numbers).splitlines()
    # a header, the inputs, the column names, one line per layer, and a note on ∞ edges when
    # the null samples are too few to bound an interval
    # ... and after the layers the lines on what the table leaves out: the heavy-tailed
    # coordinates, an empty ρ's reason, each note on the inputs
    unbounded = "∞" in "".join(table[3:6])
    extra = [ln for ln in table[6:] if ln.startswith(("note: ", "heavy-tailed coordinates",
                                                      "attn ρ: none"))]
    notes = [ln for ln in extra if ln.startswith("note: ")]
    assert len(notes) == len(stored["inputs"]["notes"])
    assert len(table) == 3 + 3 + len(extra) + unbounded
    assert table[3].split()[-1] == "accepted"  # the input
    assert not unbounded or table[-1].startswith("∞: too few null samples")
    assert table[1].startswith("inputs: gaussian N(")
    # DeiT reads pixels: no embedding table to match, N(0, I) with a note
    if stored["model"] == "DeiTModel":
        assert stored["inputs"]["source"] == "N(0, I)" and stored["inputs"]["notes"]


def test_bad_inputs_are_refused(tmp_path):
    with pytest.raises(InvalidInputError, match="not a directory"):
        load_model(str(tmp_path / "missing"))
    with pytest.raises(InvalidInputError, match="n_tokens"):
        probing.probe(probing.tiny_model("deit"), n_tokens=probing.PROJECTED_DIMENSION + 1)
    with pytest.raises(InvalidInputError, match="family"):
        probing.tiny_model("gpt2")


@pytest.mark.parametrize("two_sided", [False, True])
def test_acceptance_band_is_the_decision(two_sided):
    # p · len(TESTS) < α ⇔ outside [low, high], checked on every observation between and at the
    # null values (ties included: the null is rounded to a coarse grid)
    rng = np.random.default_rng(5)
    for n_null, alpha in ((200, 0.05), (50, 0.05), (1000, 0.2), (20, 0.05)):
        null = np.round(rng.standard_normal(n_null), 1)
        low, high = gaussianity.acceptance_band(null, alpha, two_sided)
        grid = np.unique(np.concatenate([null, null + 0.05, null - 0.05]))
        for x in grid:
            p = _mc_p_value(null, x, two_sided)
            assert (p * len(gaussianity.TESTS) < alpha) == (x < low or x > high), (n_null, x)
    assert gaussianity.acceptance_band(np.zeros(20), 0.05, False) == (-np.inf, np.inf)


def _drawn(ax):
    """(layers, low, high) of the accepted bars and (layers, values) of the markers."""
    segments = np.array(ax.collections[0].get_segments())
    marks = [line.get_xydata() for line in ax.get_lines()[1:3]]
    return segments[:, 0, 0], segments[:, 0, 1], segments[:, 1, 1], np.vstack(marks)


def test_figure_band_agrees_with_the_verdict(saved):
    _, path = saved
    # 200 null samples: the two-sided kurtosis test can reject (its interval is bounded)
    model = load_model(path)
    res = probing.probe(model, n_null=200, predict=False, inputs=standard(model))
    assert np.all(np.isfinite(res.band_low["kurtosis"]) & np.isfinite(res.band_high["kurtosis"]))
    fig = probing.plot_probe(res)
    outside_any = np.zeros(res.layers.size, bool)
    for ax, name in zip(fig.axes, probing.REPORTED, strict=False):
        layers, low, high, marks = _drawn(ax)
        np.testing.assert_array_equal(layers, res.layers)
        order = np.argsort(marks[:, 0])
        np.testing.assert_array_equal(marks[order, 0], res.layers)
        value = marks[order, 1]
        np.testing.assert_array_equal(value, res.stats[name])
        outside = (value < low) | (value > high)
        if name in gaussianity.TESTS:
            np.testing.assert_array_equal(outside,
                                          res.p_values[name] * len(gaussianity.TESTS) < res.alpha)
            outside_any |= outside
    np.testing.assert_array_equal(outside_any, res.reject)
    assert res.reject[1:].any() and not res.reject[0]  # both cases are drawn


def test_sequences_within_the_position_limit():
    # 300 tokens, 64 positions: 5 sequences of 60; each its own measure and affine fit
    model = tiny_encoder("bert", hidden_size=16, n_heads=2, max_positions=64,
                         initializer_range=0.02)
    res = probing.probe(model, n_tokens=300, n_null=N_NULL)
    assert res.lengths == (60,) * 5 and res.position_limit == 64
    assert res.projected and res.dimension == probing.PROJECTED_DIMENSION
    numbers = res.as_dict()
    assert numbers["sequences"] == 5 and numbers["lengths"] == [60] * 5
    assert numbers["prediction"]["lengths"] == [60] * 5
    # near-identity weights: attention affine per sequence and the moment prediction within
    # its sampling floor (the post-norm LayerNorm puts each token on a sphere of radius √d, far
    # from Gaussian at d = 16: only the input is accepted)
    assert not res.reject[0]
    assert np.all(res.attention_residual < 0.1 * res.residual_scale)
    assert res.prediction.consistent.all() and res.prediction_note == ""
    np.testing.assert_allclose(res.residual_scale, np.sqrt((60 - 17) / 59))


def test_pooled_residual_fits_each_sequence():
    rng = np.random.default_rng(4)
    zs = [rng.standard_normal((80, 3)) for _ in range(3)]
    outs = [z @ rng.standard_normal((3, 3)) + rng.standard_normal(3) for z in zs]
    assert probing.pooled_affine_residual(zs, outs) < 1e-12  # one affine map per sequence
    assert probing.affine_residual(np.vstack(zs), np.vstack(outs)) > 0.1  # but no common one
    noisy = [a + rng.standard_normal(a.shape) for a in outs]
    resid = sum(float(np.sum((a - b) ** 2)) for a, b in zip(noisy, outs, strict=True))
    total = sum(float(np.sum((a - a.mean(axis=0)) ** 2)) for a in noisy)
    # the least-squares residual is at most that of the true maps
    assert probing.pooled_affine_residual(zs, noisy) <= np.sqrt(resid / total)
    assert np.isnan(probing.pooled_affine_residual([zs[0][:4]], [outs[0][:4]]))


def test_unsupported_activation_has_no_prediction_but_a_reason():
    model = tiny_encoder("bert", hidden_size=16, n_heads=2, activation="silu")
    res = probing.probe(model, n_tokens=200, n_null=20)
    assert res.prediction is None and "silu" in res.prediction_note
    assert res.as_dict()["prediction"] is None


def test_tiny_model_builds_bert_and_roberta():
    for family in ("bert", "roberta"):
        model = probing.tiny_model(family, hidden_size=16, n_heads=2, n_layers=3)
        assert model.config.model_type == family and model.config.num_hidden_layers == 3


def test_probe_table_quotes_the_result(saved):
    _, path = saved
    model = load_model(path)
    res = probing.probe(model, n_null=200, inputs=standard(model))
    numbers = to_jsonable(res.as_dict())  # as probe.json holds it: unbounded edges are None
    header, fed, _, *rows = probing.probe_table(numbers).splitlines()
    assert fed == f"inputs: gaussian N(0, I): {N_TOKENS} tokens in 1 sequence of {N_TOKENS} tokens"
    assert "on 8 random directions of R^32" in header and "1 sequence" in header
    assert len(rows) == 3
    for i, row in enumerate(rows):
        cells = row.replace("[", " ").replace("]", " ").replace(",", " ").split()
        assert int(cells[0]) == i
        np.testing.assert_allclose(float(cells[1]), res.stats["energy"][i], rtol=1e-3)
        np.testing.assert_allclose(float(cells[2]), res.band_high["energy"][i], rtol=1e-3)
        np.testing.assert_allclose([float(c) for c in cells[4:6]],
                                   [res.band_low["kurtosis"][i], res.band_high["kurtosis"][i]],
                                   rtol=1e-3)
        assert cells[8] == ("rejected" if res.reject[i] else "accepted")
        assert cells[7] == ("ok" if res.prediction.consistent[i] else "deviates")


def test_probe_table_writes_unbounded_edges_as_infinity_and_no_none():
    """With too few null samples the accepted intervals are unbounded: the table writes ∞ and
    −∞ (and says why), never None or none, and a model without a position limit says so."""
    model = probing.tiny_model("deit", hidden_size=16, n_layers=2, n_heads=2)
    res = probing.probe(model, n_tokens=200, n_null=20)
    numbers = to_jsonable(res.as_dict())
    text = probing.probe_table(numbers)
    assert "none" not in text.lower() or "no position limit" in text
    assert "None" not in text and " none" not in text.replace("no position limit", "")
    shown = [*numbers["band_high"]["energy"], *numbers["band_low"]["kurtosis"],
             *numbers["band_high"]["kurtosis"]]  # energy's test is one-sided: no lower edge
    unbounded = [v is None for v in shown]
    assert any(unbounded) == ("∞: too few null samples" in text)
    if numbers["position_limit"] is None:
        assert "no position limit" in text
    rows = text.splitlines()[3:3 + len(numbers["layers"])]
    for i, row in enumerate(rows):
        high = numbers["band_high"]["energy"][i]
        assert row.split()[2] == ("∞" if high is None else f"{high:.4g}")
