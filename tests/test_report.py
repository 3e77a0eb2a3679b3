"""The main job writes a self-contained page and a summary with the numbers it shows; opened in
headless Chromium every figure decodes and every equation lays out. (The browser checks run
where a headless Chromium is installed, e.g. by `make browser`, and are skipped otherwise.)"""

import html
import json
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

from riccati_tf.app.cli import main
from riccati_tf.app.examples import regime_examples
from riccati_tf.flows.integrate import flow

BROWSER = next((shutil.which(b) for b in ("chromium-headless-shell", "chromium", "chromium-browser")
                if shutil.which(b)), None)
#: the window width at which the page must not scroll sideways and its figures' text must read
PAGE_WIDTH = 1280
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]


#: the figure-drawing functions the report calls: (module, name)
DRAWN_BY = [("riccati_tf.app.report", "plot_covariance"),
            ("riccati_tf.app.experiments", "plot_prescribed"),
            ("riccati_tf.app.experiments", "plot_relu_drift"),
            ("riccati_tf.app.experiments", "plot_probe"),
            ("riccati_tf.sweep.plot", "phase_diagram")]


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    """(report folder, {function name: [the Figures it drew for the report]})."""
    import importlib

    out, figures = tmp_path_factory.mktemp("report"), {}

    def recording(name, draw):
        def wrapper(*args, **kwargs):
            fig = draw(*args, **kwargs)
            figures.setdefault(name, []).append(fig)
            return fig
        return wrapper

    with pytest.MonkeyPatch.context() as mp:
        for module, name in DRAWN_BY:
            module = importlib.import_module(module)
            mp.setattr(module, name, recording(name, getattr(module, name)))
        assert main(["report", "--quick", "--out", str(out)]) == 0
    return out, figures


@pytest.fixture(scope="module")
def quick_report(drawn):
    return drawn[0]


def test_every_panel_of_every_report_figure_has_a_y_label(drawn):
    figures = drawn[1]
    probe = "probe" in json.loads((drawn[0] / "summary.json").read_text())["validation"]
    assert {"plot_covariance", "plot_prescribed", "plot_relu_drift", "phase_diagram",
            *["plot_probe"] * probe} == set(figures)
    for name, figs in figures.items():
        for fig in figs:
            for ax in fig.axes:
                if ax.axison and ax.get_label() != "<colorbar>":
                    assert ax.get_ylabel().strip(), f"{name}: panel “{ax.get_title()}”"


def test_converging_regime_figure_marks_the_equilibrium(drawn):
    """The converging regime's figure draws λ(Σ*) as horizontal lines at the eigenvalues of the
    stabilizing solution, which the flow's final Σ approaches."""
    summary = json.loads((drawn[0] / "summary.json").read_text())
    final = sorted(summary["regimes"]["converges"]["final_cov_eigenvalues"])
    fig = next(f for f in drawn[1]["plot_covariance"] if f.axes[0].get_title() == "converges")
    levels = sorted(line.get_ydata()[0] for line in fig.axes[0].get_lines()
                    if line.get_linestyle() == ":")
    assert len(levels) == 2 and np.allclose(levels, final, rtol=1e-3)


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
    # no model given: the section says which encoder it ran and that its weights are random
    assert model["random_weights"] is True and model["model_path"] is None
    assert "random weights" in model["model_description"] and "BertModel" in section
    assert "<b>Random weights.</b>" in section and "random-weight encoder" in page
    assert "random weights: no trained model was given" in page  # the validation section's probe


@pytest.mark.slow
def test_report_model_analyses_the_given_folder(tmp_path, monkeypatch, capsys):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from riccati_tf.app import report
    from riccati_tf.empirical.encoders.tiny import tiny_encoder

    folder = tmp_path / "encoder"
    tiny_encoder("bert", hidden_size=16, n_heads=2, n_layers=2, initializer_range=0.1,
                 seed=2).save_pretrained(folder)
    section = report.model_section(report.Options(tmp_path / "out", True, str(folder)))
    assert section.numbers["model_path"] == str(folder)
    assert section.numbers["random_weights"] is False
    assert f"<b>Model analysed:</b> {folder} (BertModel, d = 16, 2 heads, 2 layers)" in section.body
    assert "Random weights" not in section.body and "random-weight" not in section.title
    assert len(section.numbers["atlas"]["regime"]) == 2
    # `riccati-tf report --model DIR` hands the folder to the report
    seen = {}

    def fake(out, *, quick, model):
        seen.update(out=out, quick=quick, model=model)
        return tmp_path / "index.html"

    monkeypatch.setattr(report, "write_report", fake)
    assert main(["report", "--model", str(folder), "--out", str(tmp_path / "r"), "--quick"]) == 0
    assert seen == {"out": str(tmp_path / "r"), "quick": True, "model": str(folder)}


def _axes_fraction(ax, y: float) -> float:
    """Where the height y lies on ax's y-axis: 0 at the bottom, 1 at the top (any scale)."""
    return float(ax.transAxes.inverted().transform(ax.transData.transform((0.0, y)))[1])


def test_relu_drift_figure_shows_statistics_and_null_lines():
    """Both statistics panels keep the Gaussian null readable next to the ReLU run, which
    leaves it by an order of magnitude: the null's 99 % line and median lie inside the axes,
    clear of the bottom and of each other, and every statistic drawn is inside the axes."""
    from riccati_tf.app.experiments import plot_relu_drift, relu_drift

    result = relu_drift(n_tokens=400, n_null=40, n_steps=12)
    assert result.relu["energy"].max() > 10 * result.null_q99["energy"]  # the squashing case
    fig = plot_relu_drift(result)
    for ax, name in zip(fig.axes[:2], ("energy", "fourth"), strict=True):
        fig.canvas.draw()
        q99, median = (_axes_fraction(ax, result.null_q99[name]),
                       _axes_fraction(ax, result.null_median[name]))
        assert 0.02 < median < q99 < 0.98
        assert q99 - median > 0.05  # the null's spread is visible, not one pressed line
        for stat in (result.relu[name], result.affine[name]):
            assert all(0 <= _axes_fraction(ax, v) <= 1 for v in stat)
    assert all(ax.get_ylabel() for ax in fig.axes)


def test_one_axis_phase_diagram_labels_both_panels():
    from riccati_tf.sweep.plot import phase_diagram

    columns = {"v": np.linspace(-1, 1, 9), "regime": ["collapses"] * 4 + ["blows_up"] * 5,
               "blowup_time": [np.nan] * 4 + [3.0, 2.0, 1.5, 1.2, 1.0]}
    fig = phase_diagram(columns, "v")
    assert [ax.get_ylabel() for ax in fig.axes] == ["regime", "blow-up time T*"]
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["collapses", "blows_up"]


@pytest.mark.parametrize("values, rank, shown", [
    ([0.6668, 14800.0], 2, "1.480 × 10<sup>4</sup>, 6.668 × 10<sup>−1</sup>"),
    ([0.4796, 0.8969], 2, "0.8969, 0.4796"),
    ([1.0, 2.0], 2, "2.000, 1.000"),
    ([-3e-17, 1.7351234], 1, "1.735, 0 (rank 1)"),
    ([2e-19, -1e-18, 1e-3], 1, "0.001000, 0, 0 (rank 1)"),
    ([0.0, 0.0], 0, "0, 0 (rank 0)"),
])
def test_eigenvalues_are_written_in_one_notation_with_exact_zeros(values, rank, shown):
    from riccati_tf.app.report import eigenvalue_cell

    cell = eigenvalue_cell(values, rank)
    assert cell == shown
    assert "e+" not in cell and "e-" not in cell


def test_rank_deficient_final_covariance_shows_zeros_not_rounding_noise():
    from riccati_tf.app.report import eigenvalue_cell

    u = np.array([[1.0], [2.0], [-0.5]])
    lam = np.linalg.eigvalsh(u @ u.T)
    assert np.count_nonzero(lam) == 3  # rounding noise in the two zero eigenvalues
    assert eigenvalue_cell(lam, 1) == "5.250, 0, 0 (rank 1)"


def test_probe_numbers_are_an_html_table(quick_report):
    summary = json.loads((quick_report / "summary.json").read_text())
    probe = summary["validation"]["probe"]
    section = (quick_report / "index.html").read_text().split('<section id="validation">')[1]
    section = section.split("</section>")[0]
    assert "<pre>" not in section
    table = section.split('<table class="probe">')[1].split("</table>")[0]
    rows = re.findall(r"<tr>(.*?)</tr>", table)
    assert len(rows) == len(probe["layers"]) + 1
    for layer, row in zip(probe["layers"], rows[1:], strict=True):
        cells = re.findall(r"<td>(.*?)</td>", row)
        assert cells[0] == str(layer) and len(cells) == 9
        verdict = "rejected" if probe["reject"][layer] else "accepted"
        assert cells[7] == verdict
        assert np.isclose(float(cells[1]), probe["stats"]["energy"][layer], rtol=1e-3)


def test_every_figure_reads_at_nine_points_on_the_page(quick_report):
    """Without a browser: each figure's smallest text (its PNG record, `figure_png`) at the
    page's width, the figure shown at min(1, 1100 px / its width) of its pixels (the body's
    max-width), is at least 9 pt (0.75 pt per CSS px); the browser test measures the same on
    the laid-out page."""
    import base64
    import io

    from PIL import Image

    from riccati_tf.io.figures import min_text_px

    page = (quick_report / "index.html").read_text()
    assert "max-width:1100px" in page
    images = re.findall(r'<img alt="[^"]*" data-min-text-px="([0-9.e+-]+)" '
                        r'src="data:image/png;base64,([^"]+)"', page)
    assert len(images) == page.count("<img ") >= 10
    for recorded, data in images:
        png = base64.b64decode(data)
        assert float(recorded) == pytest.approx(min_text_px(png), rel=1e-3)
        width = Image.open(io.BytesIO(png)).size[0]
        assert float(recorded) * min(1.0, 1100 / width) * 0.75 >= 9.0


def test_figure_png_records_its_smallest_drawn_text():
    """The record is the smallest font of what is drawn (tick labels in view, legend, title),
    in pixels at the PNG's dpi: a 6-pt legend is found; a tick outside the view is not."""
    from riccati_tf.io.figures import figure_png, min_text_px, new_figure, smallest_text_pt

    fig, ax = new_figure()
    ax.plot([0, 1], [0, 1], label="line")
    ax.set_title("title", fontsize=14)
    ax.tick_params(labelsize=11)
    assert smallest_text_pt(fig) == 11
    ax.legend(fontsize=6)
    assert min_text_px(figure_png(fig, dpi=144)) == pytest.approx(12.0)
    fig, ax = new_figure()
    ax.plot([0, 1], [0, 1])
    ax.tick_params(labelsize=12)
    ax.set_xticks([0, 0.5, 1, 3], ["0", "0.5", "1", "far"])
    ax.set_xlim(0, 1)
    ax.get_xticklabels()[3].set_fontsize(4)  # outside the view: not drawn
    assert smallest_text_pt(fig) == 12
    ax.set_xlim(0, 4)  # now in view
    assert smallest_text_pt(fig) == 4


def _inner_text_page(page, folder):
    """A copy of the page that, once laid out, writes its rendered text
    (document.body.innerText) into data-inner-text of <html>, read back by --dump-dom."""
    copy = folder / "inner.html"
    script = ("<script>window.addEventListener('load', function () {"
              "document.documentElement.dataset.innerText = document.body.innerText; });"
              "</script></body>")
    copy.write_text(page.read_text().replace("</body>", script))
    return copy


def keep_screenshot(shot, name: str) -> None:
    """Copy a screenshot to the folder $RICCATI_TF_SCREENSHOTS when it is set (for a reader)."""
    folder = os.environ.get("RICCATI_TF_SCREENSHOTS")
    if folder:
        os.makedirs(folder, exist_ok=True)
        shutil.copyfile(shot, os.path.join(folder, name))


@pytest.mark.skipif(BROWSER is None, reason="no headless Chromium on this machine")
def test_report_renders_in_headless_chromium(quick_report, tmp_path):
    import matplotlib.image as mpimg

    page = quick_report / "index.html"
    profile = ["--user-data-dir=" + str(tmp_path / "profile")]
    dom = subprocess.run([BROWSER, *FLAGS, *profile, "--virtual-time-budget=3000", "--dump-dom",
                          f"--window-size={PAGE_WIDTH},900", page.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    counts = {k: int(v) for k, v in re.findall(r'data-([a-z-]+)="(\d+)"', dom.split(">", 2)[1])}
    assert counts["figures-total"] >= 3
    assert counts["figures-loaded"] == counts["figures-total"]
    # at 1280 px: nothing wider than the window, and every figure's smallest text, as the page
    # scales the image, at least 9 pt
    assert counts["window-width"] > PAGE_WIDTH - 40
    assert counts["scroll-width"] <= counts["window-width"]
    assert counts["figures-sized"] == counts["figures-total"]
    assert counts["min-figure-text-centipt"] >= 900
    # a summary table first: one row per section, each a link to it
    body = dom[dom.index("<body"):]
    assert re.match(r'<body[^>]*><h1>[^<]*</h1><section id="summary"><h2>Summary</h2><table>',
                    body)
    summary = body[:body.index("</section>")]
    sections = re.findall(r'<section id="([a-z]+)"', body)[1:]
    assert re.findall(r'<a href="#([a-z]+)">', summary) == sections and len(sections) == 6
    # every section's figures, the model section's two among them
    assert counts["figures-total-model"] == 2
    for key in ("regimes", "steering", "validation", "model", "sweep"):
        assert counts[f"figures-loaded-{key}"] == counts[f"figures-total-{key}"] > 0
    assert counts["equations-total"] >= 1
    assert counts["equations-rendered"] == counts["equations-total"]
    # every figure is described, none by a file name or by the generic fallback
    alts = re.findall(r'<img alt="([^"]*)"', dom)
    assert len(alts) == counts["figures-total"]
    assert all(len(a) > 60 and ".png" not in a and "Figure of the section" not in a
               for a in alts)
    # the rendered text: no raw TeX (the certificates' formulas are MathML)
    inner = _inner_text_page(page, tmp_path)
    dom = subprocess.run([BROWSER, *FLAGS, *profile, "--virtual-time-budget=3000", "--dump-dom",
                          inner.as_uri()], capture_output=True, text=True, timeout=120).stdout
    text = html.unescape(re.search(r'data-inner-text="([^"]*)"', dom).group(1))
    assert "collapses" in text and "rules out blow-up" in text
    assert "^{" not in text and "\\" not in text and "_{" not in text
    shot = tmp_path / "report.png"
    subprocess.run([BROWSER, *FLAGS, *profile, f"--window-size={PAGE_WIDTH},5000",
                    f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=120)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = mpimg.imread(shot)
    assert pixels.shape[0] >= 1000 and np.std(pixels) > 0.05
    keep_screenshot(shot, "report.png")


# --- --out: the report writes only files it owns ---------------------------------------------

def _tiny_sections(monkeypatch, calls):
    """Replace the sections by one fast section with a figure and a side file."""
    from riccati_tf.app import report

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
    from riccati_tf.io import files as store

    _tiny_sections(monkeypatch, [])
    out = tmp_path / "rep"
    assert main(["report", "--out", str(out)]) == 0
    write, n = store.temporary_write, []

    def crash_on_third(path, data):
        n.append(path)
        if len(n) == 3:  # two files of the run written aside, then the process dies
            raise KeyboardInterrupt
        return write(path, data)

    monkeypatch.setattr(store, "temporary_write", crash_on_third)
    with pytest.raises(KeyboardInterrupt):
        main(["report", "--out", str(out)])
    monkeypatch.setattr(store, "temporary_write", write)
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


@pytest.mark.parametrize("missing, section_name", [("transformers", "model_section")])
def test_a_section_without_its_optional_dependency_is_skipped_with_a_note(
        tmp_path, monkeypatch, missing, section_name):
    # a core install (no extras) still writes the report: the section says what to install
    import sys

    from riccati_tf.app import report

    monkeypatch.setitem(sys.modules, missing, None)  # `import missing` raises ImportError
    section = getattr(report, section_name)(report.Options(tmp_path / "out", True, None))
    assert "skipped" in section.body and "pip install" in section.body and not section.figures


def test_the_sweep_section_runs_on_the_core_install(tmp_path, monkeypatch):
    """Without pyarrow (and dask) the sweep runs in process on the npz store: the phase
    diagram is drawn, not skipped."""
    import sys

    from riccati_tf.app import report

    for name in ("pyarrow", "pyarrow.parquet", "dask", "distributed"):
        monkeypatch.setitem(sys.modules, name, None)  # `import name` raises ImportError
    section = report.sweep_section(report.Options(tmp_path / "out", True, None))
    assert section.skipped is None and "sweep_phase_diagram.png" in section.figures
    assert sum(section.numbers["regime_counts"].values()) == section.numbers["n_configs"]
