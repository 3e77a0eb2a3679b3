"""The documentation site (`make docs`): it builds with warnings as errors, its getting-started
tour runs, its CLI and API references are generated from the code, and in headless Chromium the
API page of `flow`, the theory page and the executed notebook 02 render their math with the
bundled MathJax (no network) and load every image."""

import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_report import BROWSER, FLAGS, keep_screenshot

ROOT = Path(__file__).parents[1]
DOCS = ROOT / "docs"
HTML = DOCS / "_build" / "html"
#: written next to the site after a full build with no warning; the site is reused while it is
#: newer than every source of the site
CLEAN_STAMP = HTML / ".built-without-warnings"
SOURCES = (DOCS, ROOT / "notebooks", ROOT / "riccati_tf")
SKIP_PARTS = {"_build", "generated", "__pycache__", ".ipynb_checkpoints"}
#: seconds a full build may take (four notebooks executed, the API reference generated)
BUILD_TIMEOUT = 900
#: milliseconds of virtual time Chromium gives a page to load MathJax and typeset
MATH_BUDGET_MS = 15000

#: the pages opened in the browser
PAGES = {"flow": "api/generated/riccati_tf.flow.html",
         "nb02": "notebooks/02_riccati_stability.html",
         "spec": "SPEC.html"}

sys.path.insert(0, str(DOCS / "_ext"))
import spec_math  # noqa: E402  (docs/_ext is not a package)


def _newest_source() -> float:
    return max(p.stat().st_mtime for folder in SOURCES for p in folder.rglob("*")
               if p.is_file() and not SKIP_PARTS & set(p.relative_to(ROOT).parts))


@pytest.fixture(scope="module")
def site() -> Path:
    """docs/_build/html, built from scratch with -W unless a clean build is newer than the
    sources."""
    for module in ("sphinx", "myst_nb", "numpydoc", "pydata_sphinx_theme"):
        pytest.importorskip(module)
    if CLEAN_STAMP.exists() and CLEAN_STAMP.stat().st_mtime >= _newest_source():
        return HTML
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-E", "-W", "--keep-going",
                          "-q", str(DOCS), str(HTML)], capture_output=True, text=True,
                         timeout=BUILD_TIMEOUT, env=env, cwd=ROOT)
    warnings = [ln for ln in run.stderr.splitlines() if "WARNING" in ln or "ERROR" in ln]
    assert run.returncode == 0, "\n".join(warnings) or run.stderr[-3000:]
    CLEAN_STAMP.touch()
    return HTML


# --- sources: no build needed --------------------------------------------------------------

def test_getting_started_tour_runs():
    text = (DOCS / "getting_started.md").read_text()
    assert "make report" in text and "make test" in text
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    assert len([ln for ln in code.splitlines() if ln and not ln.startswith("import")]) == 5
    scope: dict = {}
    exec(compile(code, "getting_started.md", "exec"), scope)
    assert scope["tr"].status == "completed" and scope["cert"].regime == "converges"
    assert scope["cert"].check() and scope["plan"].success


SPEC = (DOCS / "SPEC.md").read_text()
#: the formulas of SPEC.md: code spans other than folder names, and lines of indented blocks
SPANS = [s for s in re.findall(r"`([^`]+)`", SPEC) if not spec_math.PATH.match(s)]
BLOCK_LINES = re.findall(r"(?m)^ {4,}(\S.*)$", SPEC)
#: displays: indented blocks (consecutive lines make one aligned display)
DISPLAYS = len(re.findall(r"\n\n {4,}\S", SPEC))


def test_every_spec_formula_becomes_latex():
    spans, blocks = SPANS, BLOCK_LINES
    assert len(spans) > 90 and len(blocks) >= 6 and DISPLAYS == 5
    rendered = spec_math.render(SPEC)
    assert "`" not in re.sub(r"`[\w.]+/`", "", rendered)   # only folder names stay code
    assert rendered.count("$$") == 2 * DISPLAYS              # one display per indented block
    for formula in spans + blocks:
        tex = spec_math.display(formula)
        assert tex.isascii() or r"\text{" in tex, formula


@pytest.mark.parametrize(("plain", "tex"), [
    ("Σ̇ = A Σ + Σ Aᵀ − Σ G Σ", r"\dot{\Sigma} = A \Sigma + \Sigma A^{\top} - \Sigma G \Sigma"),
    ("M = A + Σ_h V_h Σ B_h", r"M = A + \sum_{h} V_h \Sigma B_h"),
    ("Σ(t) → Σ* = P*⁻¹ ≻ 0", r"\Sigma (t) \to \Sigma ^{*} = P^{*-1} \succ 0"),
    ("Aᶜᵀ X + X Aᶜ − X G X + Q = 0", r"A^{c\top} X + X A^{c} - X G X + Q = 0"),
    ("[[−Aᵀ, G], [0, A]]", r"\begin{bmatrix} -A^{\top} & G \\ 0 & A \end{bmatrix}"),
    ("{Σ ⪰ 0 : rank Σ = r}", r"\{\Sigma \succeq 0 : \operatorname{rank} \Sigma = r\}"),
    ("λ_max(W∞ Σ0) > 1", r"\lambda _{\max}(W_{\infty} \Sigma _{0}) > 1"),
])
def test_spec_translation(plain, tex):
    assert spec_math.to_latex(plain) == tex


def test_unknown_symbol_stops_the_build():
    ExtensionError = pytest.importorskip("sphinx.errors").ExtensionError

    with pytest.raises(ExtensionError, match="ℵ"):
        spec_math.to_latex("ℵ_0 ≻ 0")


# --- the built site -------------------------------------------------------------------------

@pytest.mark.slow
def test_cli_reference_is_every_subcommands_help(site):
    import cli_help

    from riccati_tf.app.cli import build_parser

    page = html.unescape((site / "cli.html").read_text())
    subs = cli_help.subcommands(build_parser())
    assert len(subs) >= 10
    for name, parser in subs.items():
        assert f"riccati-tf {name}" in page
        first_option = next(ln for ln in cli_help.help_text(parser).splitlines() if "--" in ln)
        assert first_option.strip() in page, name


@pytest.mark.parametrize("page", [
    "api/generated/riccati_tf.flow.html", "api/generated/riccati_tf.Trajectory.html",
    "api/generated/riccati_tf.certify.html",
    "api/generated/riccati_tf.stability.riccati.bernoulli.html",
    "api/generated/riccati_tf.reachability.lie.accessibility_rank.html",
    "api/generated/riccati_tf.steer.html", "api/symbolic.html", "api/particles.html",
    "api/sweeps.html", "api/errors.html", "SPEC.html", "accessibility.html",
    "notebooks/01_moment_equations.html", "notebooks/04_particles_and_models.html",
])
@pytest.mark.slow
def test_page_exists_and_is_offline(site, page):
    text = (site / page).read_text()
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=\"https?://", text)   # all local
    if 'class="math' in text:     # MathJax, bundled, is loaded where there is math
        assert re.search(r'<script[^>]+src="[./]*_static/mathjax/tex-chtml\.js', text)
        assert (site / "_static/mathjax/tex-chtml.js").exists()


@pytest.mark.slow
def test_no_page_shows_a_raw_markdown_table(site):
    # a Markdown pipe table that the build did not parse shows as a paragraph of "| … |" text;
    # notebook 03 displays its accessibility table as Markdown: a real <table> there
    # (a header row, then a row of pipes and dashes, which SmartyPants may have turned into —)
    raw = re.compile(r"<p>\s*\|[^\n]*\n\|[\s|:\-—–]+\|")
    pages = list(site.rglob("*.html"))
    assert [p.name for p in pages if raw.search(p.read_text())] == []
    nb03 = (site / "notebooks" / "03_reachability.html").read_text()
    body = nb03[nb03.index("accessib"):] if "accessib" in nb03 else nb03
    assert "<table" in body


@pytest.mark.slow
def test_flow_page_documents_flow(site):
    import riccati_tf

    page = (site / PAGES["flow"]).read_text()
    assert r"\dot{\Sigma} &amp;= A \Sigma" in page    # the SPEC §2 equations it solves, as math
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    first_line = riccati_tf.flow.__doc__.strip().splitlines()[0]
    assert " ".join(first_line.split()) in " ".join(text.split())


#: appended to a copy of a page: once MathJax has typeset (or at once without MathJax), the
#: counts and the rendered text outside code blocks go into data-* attributes of <html>
PROBE = """<script>window.addEventListener('load', function () {
  function done() {
    var d = document.documentElement.dataset, imgs = Array.from(document.images);
    d.mathjax = String(!!(window.MathJax && MathJax.startup && MathJax.startup.document));
    d.containers = document.querySelectorAll('mjx-container').length;
    d.merrors = document.querySelectorAll('mjx-merror').length;
    d.images = imgs.length;
    d.loaded = imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;
    var body = document.body.cloneNode(true);
    body.querySelectorAll('pre, mjx-assistive-mml').forEach(function (e) { e.remove(); });
    document.body.appendChild(body); body.style.display = 'block';
    d.text = JSON.stringify(body.innerText); body.remove(); d.done = '1';
  }
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    MathJax.startup.promise.then(done, done);
  } else { done(); }
});</script></body>"""


def _probe(page: Path, folder: Path, profile: list[str]) -> dict:
    copy = folder / ("probe-" + page.name)
    base = f'<head><base href="{page.parent.as_uri()}/">'
    copy.write_text(page.read_text().replace("<head>", base, 1).replace("</body>", PROBE, 1))
    dom = subprocess.run([BROWSER, *FLAGS, *profile, f"--virtual-time-budget={MATH_BUDGET_MS}",
                          "--dump-dom", copy.as_uri()], capture_output=True, text=True,
                         timeout=180).stdout
    head = dom.split(">", 2)[1]
    attrs = {k: html.unescape(v) for k, v in re.findall(r'data-([a-z]+)="([^"]*)"', head)}
    assert attrs.get("done") == "1", dom[:2000]
    attrs["text"] = json.loads(attrs["text"])
    return attrs


@pytest.mark.slow
@pytest.mark.skipif(BROWSER is None, reason="no headless Chromium on this machine")
@pytest.mark.parametrize("name", list(PAGES))
def test_page_renders_math_and_images_in_chromium(site, name, tmp_path):
    import matplotlib.image as mpimg
    import numpy as np

    page = site / PAGES[name]
    profile = ["--user-data-dir=" + str(tmp_path / "profile")]
    seen = _probe(page, tmp_path, profile)
    assert seen["mathjax"] == "true"
    assert seen["merrors"] == "0"
    assert seen["loaded"] == seen["images"]
    text = seen["text"]
    # no TeX left unrendered (the docstrings of the API pages write their formulas in plain
    # text, e^{At} among them: ^{ and _{ are checked on the pages whose formulas are all TeX)
    plain_text_math = name == "flow"
    for raw in ("\\frac", "\\(", "\\)", "\\[", "$", "\\Sigma", "\\top", "\\dot", "^{", "_{"):
        assert raw not in text or (plain_text_math and raw in ("^{", "_{")), (name, raw)
    containers = int(seen["containers"])
    if name == "flow":
        assert containers == 1          # the SPEC §2 equations flow solves
    if name == "nb02":
        assert int(seen["images"]) >= 2 and containers >= 10
        assert "Riccati stability" in text
    if name == "spec":
        # every formula span, display and running-text formula, each typeset once
        assert containers == len(SPANS) + DISPLAYS + len(spec_math.RUNNING_TEXT)
    shot = tmp_path / f"docs_{name}.png"
    subprocess.run([BROWSER, *FLAGS, *profile, "--window-size=1280,1600",
                    f"--virtual-time-budget={MATH_BUDGET_MS}", "--hide-scrollbars",
                    f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=180)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert np.std(mpimg.imread(shot)) > 0.05
    keep_screenshot(shot, f"docs_{name}.png")
