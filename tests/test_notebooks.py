"""Every notebook runs headless from top to bottom, shows its figures as images, writes nothing to
stderr, and is stored without outputs; rendered to HTML, it shows its figures and equations in a
headless browser.

Each notebook is executed once per test session: by the documentation build (myst-nb, the
`site` fixture), whose executed copies these tests read, or, without the docs extra, here by
nbclient."""

import copy
import html
import re
import subprocess
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests import docsite
from tests.test_report import BROWSER, FLAGS, keep_screenshot

NOTEBOOKS = sorted((Path(__file__).parents[1] / "notebooks").glob("*.ipynb"))
#: a call that draws: a result's .plot(), a plot_* function (experiments.plot_*, plot_atlas),
#: phase_diagram, or a pyplot figure
PLOT_CALL = re.compile(r"(\bplot_\w+|\.plot|phase_diagram|plt\.subplots)\(")
#: the application's internals, which a notebook does not need: results draw themselves
INTERNAL = ("riccati_tf.app.plotting", "riccati_tf.io.htmlmath", "riccati_tf.io.figures")


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 4


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_uses_the_public_plot_not_the_application_internals(path):
    nb = nbformat.read(path, as_version=4)
    sources = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert not [name for name in INTERNAL if name in sources]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_stored_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None


@pytest.fixture(scope="module")
def executed(request):
    """{path: the notebook after running it}: the documentation build's executed copy where the
    docs extra is installed, else run here by nbclient (each notebook run once for all checks)."""
    executed_by_build = docsite.EXECUTED if docsite.can_build() else None
    if executed_by_build is not None:
        request.getfixturevalue("site")
    cache = {}

    def run(path):
        if path not in cache:
            if executed_by_build is not None:
                nb = nbformat.read(executed_by_build / path.name, as_version=4)
                assert [c.source for c in nb.cells] == \
                    [c.source for c in nbformat.read(path, as_version=4).cells], \
                    f"the build's copy of {path.name} is not the notebook's source"
            else:
                nb = nbformat.read(path, as_version=4)
                NotebookClient(nb, timeout=600, kernel_name="python3",
                               resources={"metadata": {"path": str(path.parent)}}).execute()
            cache[path] = nb
        return cache[path]

    return run


def _code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def _shows(output, mime: str) -> bool:
    return output.output_type in ("display_data", "execute_result") and mime in output.data


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_executes(path, executed):
    nb = executed(path)
    errors = [o for c in _code_cells(nb) for o in c.outputs if o.output_type == "error"]
    assert not errors
    assert any(o.output_type == "display_data" for c in _code_cells(nb) for o in c.outputs), \
        "a notebook shows at least one figure or equation"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_figures_show_as_images(path, executed):
    for cell in _code_cells(executed(path)):
        if PLOT_CALL.search(cell.source):
            assert any(_shows(o, "image/png") for o in cell.outputs), \
                f"a cell that plots shows no image:\n{cell.source}"
        for output in cell.outputs:
            if _shows(output, "text/plain") and output.data["text/plain"].startswith("<Figure"):
                assert "image/png" in output.data, f"a Figure shown as text:\n{cell.source}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_nothing_is_written_to_stderr(path, executed):
    stderr = [o.text for c in _code_cells(executed(path)) for o in c.outputs
              if o.output_type == "stream" and o.name == "stderr"]
    assert not stderr


#: display math ($$…$$) and inline math ($…$) in a markdown cell
DISPLAY_MATH, INLINE_MATH = re.compile(r"\$\$(.+?)\$\$", re.DOTALL), re.compile(r"\$([^$]+?)\$")
#: written into <html> once the page has loaded: how many images decoded, how many equations laid
#: out with a non-empty box, and the rendered text (read back by --dump-dom)
READBACK = """<script>window.addEventListener('load', function () {
  var root = document.documentElement.dataset, imgs = Array.from(document.images);
  var maths = Array.from(document.querySelectorAll('math'));
  root.figuresTotal = imgs.length;
  root.figuresLoaded = imgs.filter(function (i) {
    return i.complete && i.naturalWidth > 0; }).length;
  root.equationsTotal = maths.length;
  root.equationsRendered = maths.filter(function (m) {
    var r = m.getBoundingClientRect(); return r.width > 0 && r.height > 0; }).length;
  root.innerText = document.body.innerText;
});</script></body>"""


def math_as_mathml(nb):
    """A copy of nb whose markdown math is MathML (`io.htmlmath.latex_to_mathml`), which a
    browser renders natively, in place of the $…$ that nbconvert leaves to MathJax."""
    from riccati_tf.io.htmlmath import latex_to_mathml

    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            text = DISPLAY_MATH.sub(lambda m: latex_to_mathml(m.group(1)), cell.source)
            cell.source = INLINE_MATH.sub(lambda m: latex_to_mathml(m.group(1), display=False),
                                          text)
    return nb


@pytest.mark.skipif(BROWSER is None, reason="no headless Chromium on this machine")
def test_rendered_notebook_shows_figures_and_equations(executed, tmp_path):
    """Notebook 02, executed, exported to HTML by nbconvert's HTMLExporter and opened in headless
    Chromium: every figure decodes, every equation lays out, no TeX is left in the rendered text,
    and a screenshot is a non-blank PNG (kept in $RICCATI_TF_SCREENSHOTS when set).

    nbconvert's page typesets math with MathJax from a CDN, which cannot be reached offline;
    the markdown math is therefore converted to MathML (`math_as_mathml`) before the export,
    so the equations checked are the notebook's own, rendered without a script or network."""
    import matplotlib.image as mpimg
    import numpy as np
    from nbconvert import HTMLExporter

    path = next(p for p in NOTEBOOKS if p.stem.startswith("02_"))
    nb = math_as_mathml(executed(path))
    n_figures = sum(_shows(o, "image/png") for c in _code_cells(nb) for o in c.outputs)
    n_math = sum(len(DISPLAY_MATH.findall(c.source)) + len(INLINE_MATH.findall(c.source))
                 for c in executed(path).cells if c.cell_type == "markdown")
    assert n_figures >= 1 and n_math >= 10  # the three regimes: three panels of one figure
    body, _ = HTMLExporter().from_notebook_node(nb)
    page = tmp_path / "notebook02.html"
    page.write_text(body.replace("</body>", READBACK), encoding="utf-8")
    profile = ["--user-data-dir=" + str(tmp_path / "profile")]
    dom = subprocess.run([BROWSER, *FLAGS, *profile, "--virtual-time-budget=5000", "--dump-dom",
                          page.as_uri()], capture_output=True, text=True, timeout=180).stdout
    head = dom.split(">", 2)[1]
    counts = {k: int(v) for k, v in re.findall(r'data-([a-z-]+)="(\d+)"', head)}
    assert counts["figures-loaded"] == counts["figures-total"] >= n_figures
    assert counts["equations-rendered"] == counts["equations-total"] >= n_math
    text = html.unescape(re.search(r'data-inner-text="([^"]*)"', head).group(1))
    assert "Three regimes, three certificates" in text
    assert not re.search(r"\$|\\[a-zA-Z]+|\^\{", text), "TeX left in the rendered text"
    shot = tmp_path / "notebook02.png"
    subprocess.run([BROWSER, *FLAGS, *profile, "--window-size=1200,2400",
                    "--virtual-time-budget=5000", f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, timeout=180)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = mpimg.imread(shot)
    assert pixels.shape[0] >= 2000 and np.std(pixels) > 0.05
    keep_screenshot(shot, "notebook02.png")
