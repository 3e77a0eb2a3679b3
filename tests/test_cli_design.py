"""`riccati-tf design`: the report of a layer with a prescribed attracting Gaussian (design.html,
design.json, --json, --plot), and bad specs refused in one line naming the field, exit 2."""

import copy
import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from riccati_tf.app import cli
from riccati_tf.app.cli import main

EXAMPLE = Path(cli.__file__).parents[1] / "example_specs" / "design.yaml"
TARGET = {"mean": [1.0, -0.5], "cov": [[2.0, 0.5], [0.5, 1.0]]}
SMALL = {"target": TARGET, "starts": 2}
PNG = b"\x89PNG\r\n\x1a\n"


def run(tmp_path, capsys, spec, *extra, out="out"):
    """main(["design", spec file, "--out", tmp_path/out, *extra]) → (code, stdout, stderr)."""
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    code = main(["design", str(path), "--out", str(tmp_path / out), *extra])
    stdout, stderr = capsys.readouterr()
    return code, stdout, stderr


def test_the_example_writes_html_json_and_figure(tmp_path, capsys):
    out, plot = tmp_path / "report", tmp_path / "design.png"
    code = main(["design", str(EXAMPLE), "--out", str(out), "--plot", str(plot)])
    text, err = capsys.readouterr()
    assert code == 0, err
    page = (out / "design.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "data:image/png;base64," in page
    assert "<math" in page and "Controllability at the target" in page
    # titled as what it is; in the matrices, rounding noise of a zero entry is written ≈ 0,
    # not as a number (residuals and errors keep their measured values)
    assert "<title>riccati_tf design: a layer with a prescribed attracting Gaussian</title>" in page
    cells = re.findall(r"<th>(?:G|K|A|b|[VB]_\d+)</th><td>(.*?)</td>", page)
    assert len(cells) >= 4 and "≈ 0" in "".join(cells)
    assert not any(re.search(r"10<sup>−(1[5-9]|[2-9]\d|\d{3})</sup>", c) for c in cells)
    assert plot.read_bytes()[:8] == PNG
    numbers = json.loads((out / "design.json").read_text(encoding="utf-8"))
    cert = numbers["certificate"]
    assert cert["regime"] == "converges" and cert["check"] is True
    assert cert["equilibrium_error"] <= 1e-8
    spec = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    np.testing.assert_allclose(numbers["target"]["cov"], spec["target"]["cov"], rtol=1e-15)
    runs = numbers["flows"]["starts"]
    assert len(runs) == spec["starts"]
    assert all(r["admissible"] and r["status"] == "completed" for r in runs)
    assert all(r["final_error"] <= 1e-8 for r in runs)
    assert np.all(np.diff(numbers["flows"]["t"]) > 0)
    ctrl = numbers["controllability"]
    assert ctrl["decided"] and [c["configuration"] for c in ctrl["configurations"]] == [
        "attention", "values"]
    assert all(c["rank"] == c["expected"] and c["full"] for c in ctrl["configurations"])
    assert len(numbers["layer"]["heads"]) == 2  # v lists one value per head
    # the repair: the example's layer blows up from its start; the repaired one is certified,
    # the change is the least ΔB of the closed form, and the numbers agree with each other
    rep = numbers["repair"]
    assert rep["before"]["regime"] == "blows_up" and rep["before"]["check"] is True
    assert rep["change"] == spec["repair"]["change"] == "B"
    assert rep["after"]["regime"] in ("converges", "collapses", "bounded")
    assert rep["after"]["check"] is True and rep["after"]["certified"] is True
    dB = np.array(rep["repaired"]["B"]) - np.array(rep["original"]["B"])
    assert rep["distance"] == pytest.approx(np.linalg.norm(dB), rel=1e-12)
    np.testing.assert_array_equal(rep["repaired"]["A"], rep["original"]["A"])
    np.testing.assert_array_equal(rep["repaired"]["V"], rep["original"]["V"])
    v = -1.0  # V = −I: G = 2 sym(B) after the change must be ⪰ 0, and before it was not
    B0, B1 = np.array(rep["original"]["B"]), np.array(rep["repaired"]["B"])
    assert np.linalg.eigvalsh(-v * (B0 + B0.T))[0] < 0 <= np.linalg.eigvalsh(-v * (B1 + B1.T))[0]
    g = np.linalg.eigvalsh(-v * (B0 + B0.T))  # the closed form: ‖ΔB‖_F = ‖C‖_F / (2|v|)
    assert rep["distance"] == pytest.approx(np.linalg.norm(np.minimum(g, 0)) / 2, rel=1e-5)
    assert rep["controllability"]["configurations"]
    assert "The nearest stable layer" in page and "What changed" in page
    # the summary: regime, rates, residuals, controllability, the repair, the files written
    for needle in ("converges", "rate", "residuals", "controllable (attention)", "design.html",
                   "blows_up →", "change B, distance"):
        assert needle in text, needle


def test_json_prints_the_document_written_and_a_rerun_replaces_its_own_files(tmp_path, capsys):
    code, out, err = run(tmp_path, capsys, SMALL, "--json")
    assert code == 0, err
    printed = json.loads(out)
    assert printed == json.loads((tmp_path / "out" / "design.json").read_text(encoding="utf-8"))
    assert printed["certificate"]["regime"] == "converges"
    code, _, err = run(tmp_path, capsys, {**SMALL, "seed": 1})
    assert code == 0, err  # its own files, replaced
    assert json.loads((tmp_path / "out" / "design.json").read_text())["flows"]["seed"] == 1


def test_a_file_it_did_not_write_is_never_overwritten(tmp_path, capsys):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "design.html").write_text("<p>my page</p>")
    code, out, err = run(tmp_path, capsys, SMALL, out="mine")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "design.html" in err and "not written by riccati-tf" in err
    assert (tmp_path / "mine" / "design.html").read_text() == "<p>my page</p>"
    assert not (tmp_path / "mine" / "design.json").exists()


def test_rank_deficient_target_closest_to_A0(tmp_path, capsys):
    spec = {"target": {"mean": [0.0, 1.0, 0.5],
                       "cov": [[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 0.5]]},
            "criterion": "closest", "A0": [[0, 1, 0], [-1, 0, 0], [0, 0, 0]], "starts": 1,
            "horizon": 30}
    code, out, err = run(tmp_path, capsys, spec, "--json")
    assert code == 0, err
    got = json.loads(out)
    assert got["target"]["rank"] == 2 and got["design"]["criterion"] == "closest"
    assert got["certificate"]["regime"] == "converges" and got["flows"]["horizon"] == 30
    assert got["flows"]["max_final_error"] <= 1e-8


#: bad specs: (change to SMALL, the field the one-line error names first, more of the message)
BAD = [
    ({"target": {"mean": [0, 0], "cov": [[1, 2], [2, 1]]}}, "target", "not positive semidefinite"),
    ({"target": {"mean": [0, 0], "cov": [[1, 0.5], [0, 1]]}}, "target", "cov is not symmetric"),
    ({"target": {"mean": [0, 0], "cov": [[1, 0, 0], [0, 1, 0]]}}, "target", "cov must be a square"),
    ({"target": {"mean": [0, 0, 0], "cov": TARGET["cov"]}}, "target", "mean must be a vector"),
    ({"target": {"mean": [0, 0], "cov": [[0, 0], [0, 0]]}}, "target", "cov is 0"),
    ({"v": 0.5}, "v", "must be < 0"),
    ({"v": [-1, 0]}, "v", "must be < 0"),
    ({"target": {"mean": [0, 0], "cov": [[1, 1], [1, 1]]}, "rank": 2}, "rank",
     "must be ≤ 1, the numerical rank of target.cov"),
    ({"rank": 0}, "rank", "must be ≥ 1"),
    ({"criterion": "closest"}, "A0", "missing field"),
    ({"A0": [[0, 1], [-1, 0]]}, "A0", "used by criterion closest only"),
    ({"criterion": "closest", "A0": [[0, 1, 0]]}, "A0", "must be"),
    ({"B": [[-1, 0], [0, -1]]}, "B", "G must be ≻ 0"),
    ({"B": [[1, 0], [0, 1]], "gain": "identity"}, "gain", "B is given"),
    ({"B": [[1, 0], [0, 1]], "scale": 2}, "scale", "B is given"),
    ({"B": [[1, 0], [0]]}, "B", "d×d matrix"),
    ({"heads": 2, "v": [-1, -1, -1]}, "heads", "v lists 3 values"),
    ({"heads": 3, "B": [[[1, 0], [0, 1]], [[1, 0], [0, 1]]]}, "heads", "B lists 2 matrices"),
    ({"heads": 2, "B": [[1, 0], [0, 1]]}, "heads", "B is a single matrix"),
    ({"v": [-1, -1], "B": [[[1, 0], [0, 1]]] * 3}, "heads", "v lists 2 values and B 3"),
    ({"criterion": "fastest"}, "criterion", "must be one of min_norm, closest"),
    ({"gain": "unit"}, "gain", "must be one of precision, identity"),
    ({"scale": 0}, "scale", "must be > 0"),
    ({"starts": 0}, "starts", "must be ≥ 1"),
    ({"starts": 10 ** 3}, "starts", "cli.DESIGN_MAX_STARTS"),
    ({"horizon": -1}, "horizon", "must be positive"),
    ({"seed": -1}, "seed", "must be ≥ 0"),
    ({"vv": -1}, "vv", "unknown field; did you mean 'v'?"),
    ({"target": {**TARGET, "sigma": 1}}, "target.sigma", "unknown field"),
    ({"repair": [1, 2]}, "repair", "must be a mapping"),
    ({"repair": {"initial": TARGET}}, "repair.params", "missing field"),
    ({"repair": {"params": {"A": [[0, 0], [0, 0]], "B": [[1, 0], [0, 1]], "V": [[1, 0], [0, 1]]}}},
     "repair.initial", "missing field"),
    ({"repair": {"params": {"A": [[0]], "B": [[1]], "V": [[1]]}, "initial": TARGET}},
     "repair.initial", "the start has d = 2, the layer d = 1"),
    ({"repair": {"params": {"A": [[0]], "B": [[1]], "V": [[1]]},
                 "initial": {"mean": [0], "cov": [[1]]}, "change": "C"}},
     "repair.change", "must be one of"),
    ({"repair": {"params": {"A": [[0]], "B": [[1]], "V": [[1]]},
                 "initial": {"mean": [0], "cov": [[1]]}, "chnge": "B"}},
     "repair.chnge", "unknown field"),
]


@pytest.mark.parametrize("change, name, needle", BAD, ids=[f"{i}-{b[1]}" for i, b in
                                                          enumerate(BAD)])
def test_bad_specs_are_one_line_naming_the_field_exit_2(tmp_path, capsys, change, name, needle):
    spec = {**copy.deepcopy(SMALL), **change}
    code, out, err = run(tmp_path, capsys, spec)
    lines = err.strip().splitlines()
    assert code == cli.EXIT_INVALID and out == "", err
    assert len(lines) == 1 and "Traceback" not in err and "unexpected" not in err, err
    assert lines[0].startswith(f"riccati-tf design: error: {name}"), err
    assert needle in lines[0], err
    assert not (tmp_path / "out").exists()  # refused before the output folder is made


def test_example_prints_a_spec_that_runs(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["design", "--example"])
    assert exc.value.code == 0
    printed = capsys.readouterr().out
    assert printed == EXAMPLE.read_text(encoding="utf-8")
    path = tmp_path / "design.yaml"
    path.write_text(printed)
    code = main(["design", str(path), "--json", "--out", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["certificate"]["regime"] == "converges"


def test_help_offers_out_plot_json_and_lists_the_fields():
    sub = cli.build_parser()._subparsers._group_actions[0].choices["design"]
    text = sub.format_help()
    for needle in ("--out DIR", "--plot FILE", "--json", "--example", "target.cov", "criterion",
                   "A0", "horizon", "starts", "repair.params", "repair.change"):
        assert needle in text, needle


def test_a_repair_that_certify_does_not_accept_is_reported_as_not_certified(tmp_path, capsys):
    # A = diag(0.3, −0.2) is not Hurwitz, so no scalar V can be certified: the V route ends at
    # V = 0, whose flow grows without blowing up; the report must not call that certified
    spec = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    spec["repair"]["change"] = "V"
    code, out, err = run(tmp_path, capsys, {**SMALL, "repair": spec["repair"]}, "--json")
    assert code == 0, err
    rep = json.loads(out)["repair"]
    assert rep["after"]["regime"] not in ("converges", "collapses", "bounded")
    assert rep["after"]["certified"] is False
    code, text, err = run(tmp_path, capsys, {**SMALL, "repair": spec["repair"]})
    assert code == 0 and "NOT certified" in text, err
    page = (tmp_path / "out" / "design.html").read_text(encoding="utf-8")
    assert "<b>no</b>" in page
