"""Legal input at the edges of the float range and degenerate models: `design` of a target of
scale 1e±300 reports its errors (relative errors computed without overflow, the page's numbers
formatted whatever they are), `atlas` of a BERT with all-zero encoder weights exits 0, and no
JSON file holds NaN or Infinity (null, with the reason under "non_finite")."""

import json
import math

import numpy as np
import pytest

from riccati_tf.app._design_report import distance, relative_error
from riccati_tf.app.cli import main
from riccati_tf.app.report import significant


def strict(text: str):
    """json.loads refusing NaN and ±Infinity literals."""
    def refuse(constant):
        raise AssertionError(f"{constant} in a JSON document")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("k", [-1070, -1000, -500, 0, 500, 1000, 1020])
def test_relative_errors_do_not_depend_on_the_scale(k):
    # scaling by 2^k is exact: the errors must be the same bits, and at k = 0 the naive formula
    rng = np.random.default_rng(abs(k))
    ref = rng.standard_normal((3, 3))
    x = ref + 1e-3 * rng.standard_normal((5, 3, 3))
    want = np.linalg.norm(x - ref, axis=(-2, -1)) / np.linalg.norm(ref)
    scale = 2.0 ** k
    # x − ref is 1e-3 of x: a rounding of x (or of x/c) moves it by 1e-16/1e-3 relatively
    np.testing.assert_allclose(relative_error(x, ref), want, rtol=1e-12)
    if k > -1000:  # 2^-1070 · 1e-3 is below the smallest subnormal: the difference is lost
        np.testing.assert_array_equal(relative_error(x * scale, ref * scale),
                                      relative_error(x, ref))
    dm = x[:, 0] - ref[0]
    np.testing.assert_allclose(distance(x[:, 0], ref[0]), np.linalg.norm(dm, axis=-1),
                               rtol=1e-12)
    if abs(k) <= 1000:
        np.testing.assert_array_equal(distance(x[:, 0] * scale, ref[0] * scale),
                                      distance(x[:, 0], ref[0]) * scale)


def test_relative_error_to_zero_is_undefined_and_a_distance_beyond_the_range_infinite():
    zero = np.zeros((2, 2))
    assert relative_error(zero, zero) == 0.0 and math.isnan(relative_error(np.eye(2), zero))
    big = np.array([1.5e308, 0.0])
    assert distance(big, -big) == math.inf and distance(big, big) == 0.0


def test_the_page_formats_every_float():
    assert significant([math.nan, math.inf, -math.inf, 0.0, 1.0]) == [
        "undefined", "∞", "−∞", "0", "1.000"]
    assert significant([1e300, 1e-300]) == ["1.000 × 10<sup>300</sup>",
                                            "1.000 × 10<sup>−300</sup>"]


@pytest.mark.parametrize("scale", [1e300, 1e-300])
def test_design_of_a_target_at_the_edge_of_the_range(scale, tmp_path, capsys):
    spec = tmp_path / "design.json"
    spec.write_text(json.dumps({"target": {"mean": [scale, -scale],
                                           "cov": [[scale, 0.0], [0.0, 2 * scale]]},
                                "v": -1, "starts": 2}))
    out = tmp_path / "out"
    assert main(["design", str(spec), "--out", str(out)]) == 0, capsys.readouterr().err
    numbers = strict((out / "design.json").read_text())
    assert "non_finite" not in numbers
    # the errors are those of a converging layer: relative covariance error at rounding level
    # at the equilibrium, and the flows have settled to it
    cert = numbers["certificate"]
    assert cert["regime"] == "converges" and cert["equilibrium_cov_error"] < 1e-12
    assert cert["equilibrium_mean_error"] <= 1e-12 * scale
    for run in numbers["flows"]["starts"]:
        assert run["final_cov_error"] < 1e-8
    page = (out / "design.html").read_text()
    assert "undefined" not in page  # every number of the page is a number


def _zero_bert(path):
    """A tiny BERT whose encoder weights and biases are all zero, saved."""
    torch = pytest.importorskip("torch")
    from riccati_tf.empirical.encoders.tiny import tiny_encoder

    model = tiny_encoder("bert", hidden_size=8, n_heads=2, n_layers=2)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.startswith("encoder"):
                p.zero_()
    model.save_pretrained(path)
    return str(path)


@pytest.mark.slow  # two atlas runs: a minute on a loaded machine
def test_atlas_of_a_bert_with_zero_weights_writes_strict_json(tmp_path, capsys, monkeypatch):
    pytest.importorskip("transformers")
    from riccati_tf.empirical.encoders.atlas import Atlas

    folder = _zero_bert(tmp_path / "zero")
    assert main(["atlas", "--model", folder, "--out", str(tmp_path / "a"), "--json"]) == 0
    printed = strict(capsys.readouterr().out)
    stored = strict((tmp_path / "a" / "atlas.json").read_text())
    assert stored["d"] == printed["d"] == 8
    # whatever an atlas holds that is not finite is written null, and the file says so
    to_json = Atlas.to_json

    def with_nan(self):
        numbers = to_json(self)
        numbers["growth_rate"][0][0] = math.nan
        numbers["trace_rate"][1][1] = -math.inf
        return numbers

    monkeypatch.setattr(Atlas, "to_json", with_nan)
    assert main(["atlas", "--model", folder, "--out", str(tmp_path / "b")]) == 0
    stored = strict((tmp_path / "b" / "atlas.json").read_text())
    assert stored["growth_rate"][0][0] is None and stored["trace_rate"][1][1] is None
    values = stored["non_finite"]["values"]
    assert values["growth_rate[0][0]"] == "NaN" and values["trace_rate[1][1]"] == "-Infinity"
    # besides: the τ = 1 growth of a layer whose input cloud is a point (zero weights) is NaN
    others = set(values) - {"growth_rate[0][0]", "trace_rate[1][1]"}
    assert others <= {f"step_growth[{i}]" for i in range(len(stored["regime"]))}
    assert all(values[k] == "NaN" for k in others)
