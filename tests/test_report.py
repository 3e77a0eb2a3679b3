"""The main job writes a self-contained page and a summary with the numbers it shows; opened in
headless Chromium every figure decodes and every equation lays out. (`make test` installs
chromium-headless-shell when it can.)"""

import json
import re
import shutil
import subprocess

import numpy as np
import pytest

from riccati_tf.cli import main
from riccati_tf.examples import regime_examples
from riccati_tf.flows import flow

BROWSER = next((shutil.which(b) for b in ("chromium-headless-shell", "chromium", "chromium-browser")
                if shutil.which(b)), None)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")
def quick_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    assert main(["report", "--quick", "--out", str(out)]) == 0
    return out


def test_quick_report(quick_report):
    tmp_path = quick_report
    page = (tmp_path / "index.html").read_text()
    summary = json.loads((tmp_path / "summary.json").read_text())
    regimes = summary["regimes"]
    assert {r["status"] for r in regimes.values()} == {"completed", "blowup"}
    for name in ("converges", "collapses", "blows_up"):
        png = (tmp_path / f"regime_{name}.png").read_bytes()
        assert png[:4] == b"\x89PNG"
        assert f"regime_{name}.png" in page and "data:image/png;base64," in page
        assert regimes[name]["exact_vs_rk_rel_diff"] < 1e-6
    # the numbers on the page are the library's numbers
    params, g0, horizon = regime_examples()["blows_up"]
    assert np.isclose(regimes["blows_up"]["blowup_time"], flow(params, g0, horizon).blowup_time,
                      rtol=1e-12)
    conv = regimes["converges"]["final_cov_eigenvalues"]
    coll = regimes["collapses"]["final_cov_eigenvalues"]
    assert min(conv) > 0.1 and max(coll) < 1e-2
    assert np.isclose(regimes["blows_up"]["blowup_time"], regimes["blows_up"]["blowup_time_rk"],
                      rtol=1e-7)
    # certificates agree with the flows and re-verify
    for name in ("converges", "collapses", "blows_up"):
        cert = regimes[name]["certificate"]
        assert cert["regime"] == name and cert["check"] is True
    assert np.isclose(regimes["blows_up"]["certificate"]["blowup_time"],
                      regimes["blows_up"]["blowup_time"], rtol=1e-10)
    # every proof claim holds; steering plans land; the sweep's phase diagram is on the page
    claims = [c for verdicts in summary["proofs"].values() for c in verdicts]
    assert len(claims) > 50 and all(c["passed"] for c in claims)
    assert all(case["verify"] <= 1e-8 for case in summary["steering"].values())
    assert {case["rank"] for case in summary["steering"].values()} == {1, 3}
    assert "sweep_phase_diagram.png" in page and (tmp_path / "sweep_phase_diagram.png").exists()
    assert summary["validation"]["prescribed"]["blowup_time"] > 0
    # the model section: the moment prediction against the model and the atlas, its numbers
    # in the summary and in model.json, its figures described (not named) on the page
    model = summary["model"]
    comparison = model["comparison"]
    assert comparison["n_tokens"] == sum(comparison["lengths"])
    assert max(comparison["lengths"]) <= comparison["position_limit"]
    assert len(comparison["consistent"]) == len(model["atlas"]["regime"]) + 1
    assert json.loads((tmp_path / "model.json").read_text())["comparison"] == comparison
    section = page.split('<section id="model">', 1)[1].split("</section>", 1)[0]
    alts = re.findall(r'<img alt="([^"]*)"', section)
    assert len(alts) == 2 and all(len(a) > 80 and ".png" not in a for a in alts)
    assert not re.findall(r'<img alt="[^"]*\.png"', page)  # no figure is named by its file
    probe = summary["validation"]["probe"]
    assert probe["n_tokens"] == sum(probe["lengths"]) and probe["dimension"] <= 8


@pytest.mark.skipif(BROWSER is None, reason="no headless Chromium on this machine")
def test_report_renders_in_headless_chromium(quick_report, tmp_path):
    import matplotlib.image as mpimg

    page = quick_report / "index.html"
    profile = ["--user-data-dir=" + str(tmp_path / "profile")]
    dom = subprocess.run([BROWSER, *FLAGS, *profile, "--virtual-time-budget=3000", "--dump-dom",
                          page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    counts = {k: int(v) for k, v in re.findall(r'data-([a-z-]+)="(\d+)"', dom.split(">", 2)[1])}
    assert counts["figures-total"] >= 3
    assert counts["figures-loaded"] == counts["figures-total"]
    # every section's figures, the model section's two among them
    assert counts["figures-total-model"] == 2
    for key in ("regimes", "steering", "validation", "model", "sweep"):
        assert counts[f"figures-loaded-{key}"] == counts[f"figures-total-{key}"] > 0
    assert counts["equations-total"] >= 1
    assert counts["equations-rendered"] == counts["equations-total"]
    shot = tmp_path / "shot.png"
    subprocess.run([BROWSER, *FLAGS, *profile, "--window-size=1200,1600",
                    f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=120)
    pixels = mpimg.imread(shot)
    assert pixels.shape[0] >= 1000 and np.std(pixels) > 0.05


# --- --out: the report writes only files it owns ---------------------------------------------

def _tiny_sections(monkeypatch, calls):
    """Replace the sections by one fast section with a figure and a side file."""
    from riccati_tf import report

    def tiny(opts):
        """tiny section"""
        calls.append(opts.out)
        return report.Section("tiny", "Tiny", "<p>tiny</p>", {"tiny.png": b"\x89PNG tiny"},
                              {"n": len(calls)}, {"tiny.json": b"{}"})

    monkeypatch.setattr(report, "SECTIONS", [tiny])


def _files(folder):
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def test_report_reruns_into_its_own_folder(tmp_path, monkeypatch, capsys):
    calls = []
    _tiny_sections(monkeypatch, calls)
    out = tmp_path / "rep"
    assert main(["report", "--out", str(out)]) == 0
    assert {"index.html", "summary.json", "tiny.png", "tiny.json",
            ".riccati-tf-files.json"} == set(_files(out))
    (out / "notes.txt").write_text("mine")
    assert main(["report", "--out", str(out)]) == 0  # its own files: replaced
    assert json.loads((out / "summary.json").read_text())["tiny"] == {"n": 2}
    assert (out / "notes.txt").read_text() == "mine" and not list(out.glob(".*.tmp-*"))


@pytest.mark.parametrize("name, when", [("index.html", "before"), ("summary.json", "before"),
                                        ("tiny.png", "after"), ("tiny.json", "after")])
def test_report_refuses_to_overwrite_a_users_file(tmp_path, monkeypatch, capsys, name, when):
    calls = []
    _tiny_sections(monkeypatch, calls)
    out = tmp_path / "users"
    out.mkdir()
    (out / name).write_bytes(b"the user's own")
    assert main(["report", "--out", str(out)]) == 2
    *progress, err = capsys.readouterr().err.strip().splitlines()
    assert str(out / name) in err and "refusing to overwrite" in err
    assert len(progress) == (0 if when == "before" else 2)  # "[1/1] tiny section", "done in"
    assert _files(out) == {name: b"the user's own"}  # nothing written, nothing changed
    assert len(calls) == (0 if when == "before" else 1)  # the page and summary: checked first


def test_report_refuses_a_file_changed_since_it_wrote_it(tmp_path, monkeypatch, capsys):
    _tiny_sections(monkeypatch, [])
    out = tmp_path / "rep"
    assert main(["report", "--out", str(out)]) == 0
    (out / "index.html").write_text("<p>my notes on the report</p>")
    assert main(["report", "--out", str(out)]) == 2
    assert "index.html" in capsys.readouterr().err
    assert (out / "index.html").read_text() == "<p>my notes on the report</p>"


def test_report_interrupted_while_writing_resumes(tmp_path, monkeypatch, capsys):
    from riccati_tf import files as store

    _tiny_sections(monkeypatch, [])
    out = tmp_path / "rep"
    assert main(["report", "--out", str(out)]) == 0
    write, n = store.atomic_write_bytes, []

    def crash_on_third(path, data):
        n.append(path)
        if len(n) == 3:  # the marker and one file written, then the process dies
            raise KeyboardInterrupt
        write(path, data)

    monkeypatch.setattr(store, "atomic_write_bytes", crash_on_third)
    with pytest.raises(KeyboardInterrupt):
        main(["report", "--out", str(out)])
    monkeypatch.setattr(store, "atomic_write_bytes", write)
    assert main(["report", "--out", str(out)]) == 0


def test_report_out_below_a_file_or_on_a_forged_marker(tmp_path, monkeypatch, capsys):
    _tiny_sections(monkeypatch, [])
    (tmp_path / "plain").write_text("x")
    (tmp_path / "forged").mkdir()
    (tmp_path / "forged" / ".riccati-tf-files.json").write_text('{"files": "all"}')
    for out in ("plain/rep", "plain", "forged"):
        assert main(["report", "--out", str(tmp_path / out)]) == 2
        assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert (tmp_path / "plain").read_text() == "x"
    assert _files(tmp_path / "forged") == {".riccati-tf-files.json": b'{"files": "all"}'}
