"""The documentation site (`make docs`): it builds with warnings as errors, its getting-started
tour runs, its CLI and API references are generated from the code, the docstrings' plain-text
formulas are typeset on the API pages (docs/_ext/plain_docstrings.py), and in headless Chromium
the API pages of `flow` and `certify`, the theory page and the executed notebook 02 render their
math with the bundled MathJax (no network), cut no formula or literal block off and load every
image. The site is built once per session by the `site` fixture (tests/conftest.py,
tests/docsite.py)."""

import html
import inspect
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_report import BROWSER, FLAGS, keep_screenshot

ROOT = Path(__file__).parents[1]
DOCS = ROOT / "docs"
#: milliseconds of virtual time Chromium gives a page to load MathJax and typeset
MATH_BUDGET_MS = 15000

#: the pages opened in the browser
PAGES = {"flow": "api/generated/riccati_tf.flow.html",
         "certify": "api/generated/riccati_tf.certify.html",
         "nb02": "notebooks/02_riccati_stability.html",
         "spec": "SPEC.html"}

sys.path.insert(0, str(DOCS / "_ext"))
import plain_docstrings  # noqa: E402  (docs/_ext is not a package)
import spec_math  # noqa: E402

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
    # the docstrings' notation: a sum only where the term carries the index, accents, prose
    ("Cov(f(u_i), f(u_j)) = Σ_{k ≥ 1} â_ik â_jk ρ_ij^k",
     r"\operatorname{Cov}(f(u_i), f(u_j)) = \sum_{k \ge 1} \hat{a}_{ik} \hat{a}_{jk} "
     r"\rho _{ij}^k"),
    ("Φ Σ_k Φᵀ ⪯ Σ_{k+1}", r"\Phi \Sigma _k \Phi ^{\top} \preceq \Sigma _{k+1}"),
    ("k = c √p₊ / p₋", r"k = c \sqrt{p_{+}} / p_{-}"),  # a subscripted radicand whole
    ("atol_i = max(atol_i, rtol · max_j |y_j|)",
     r"\text{atol}_i = \operatorname{max}(\text{atol}_i,\text{ rtol }\cdot "
     r"\operatorname{max}_j |y_j|)"),
])
def test_spec_translation(plain, tex):
    assert spec_math.to_latex(plain) == tex


def test_unknown_symbol_stops_the_build():
    ExtensionError = pytest.importorskip("sphinx.errors").ExtensionError

    with pytest.raises(ExtensionError, match="ℵ"):
        spec_math.to_latex("ℵ_0 ≻ 0")


# --- the docstrings' formulas: no build needed ----------------------------------------------

def _block_of(obj, marker: str) -> list[str]:
    """The indented block of obj's docstring (as autodoc gives it) that holds `marker`."""
    lines = inspect.getdoc(obj).splitlines()
    at = next(i for i, ln in enumerate(lines) if marker in ln)
    indent = plain_docstrings.indent_of(lines[at])
    assert indent > 0, (obj, marker)          # an indented block, not running text

    def inside(i):
        return 0 <= i < len(lines) and lines[i].strip() and \
            plain_docstrings.indent_of(lines[i]) >= indent

    first, last = at, at
    while inside(first - 1):
        first -= 1
    while inside(last + 1):
        last += 1
    return lines[first:last + 1]


#: the closed form of SPEC §5 as flow's and certify's docstrings write it (two columns)
CLOSED_FORM = "\n".join([
    r"\begin{aligned}",
    r"\Sigma (t) &= e^{At} \Sigma _{0} (I + W(t) \Sigma _{0})^{-1} e^{A^{\top}t}, \\",
    r"W(t) &= \int _0^t e^{A^{\top}s} G e^{As} ds,",
    r"\end{aligned}"])


@pytest.mark.parametrize(("name", "marker", "tex"), [
    ("flow", "Σ(t) = e^{At}", CLOSED_FORM),
    ("certify", "W(t) = ∫_0^t", CLOSED_FORM),
    ("flow", "Σ̇ = A Σ + Σ Aᵀ", "\n".join([
        r"\begin{aligned}",
        r"\dot{m} &= (A + V) m + V \Sigma B m + b, \\",
        r"\dot{\Sigma} &= A \Sigma + \Sigma A^{\top} + V \Sigma B \Sigma + \Sigma B^{\top} "
        r"\Sigma V^{\top}",
        r"\end{aligned}"])),
    ("stability.certificates.bounded", "(equality for G = 0",
     r"\Sigma (t) \preceq e^{At} \Sigma _{0} e^{A^{\top}t} \qquad "
     r"(\text{equality for }G = 0:\text{ the linear flow})."),
    ("reachability.steering", "in each phase", "\n".join([
        r"\begin{aligned}",
        r"\Phi _{1} \Sigma _{0} \Phi _{1}^{\top} &= \Sigma _{1}, \qquad "
        r"\Phi _{1} = Q P (Q \in \mathrm{SO}(d), P \succ 0), \\",
        r"A &= \operatorname{log} P / \tau _{1}\text{ on }[0, \tau _{1}], \qquad "
        r"A = \operatorname{log} Q / \tau _{2}\text{ on }[\tau _{1}, T], \\",
        r"m_{\text{end}} &= e^{A\tau } m_{\text{start}} + (\int _0^\tau e^{As} ds) b \qquad "
        r"\text{in each phase}.",
        r"\end{aligned}"])),
])
def test_docstring_formula_blocks_become_display_math(name, marker, tex):
    import importlib

    import riccati_tf

    obj = getattr(riccati_tf, name, None) or importlib.import_module(f"riccati_tf.{name}")
    block = _block_of(obj, marker)
    assert plain_docstrings.formula_latex(block) == tex
    rst = plain_docstrings.plain(inspect.getdoc(obj).splitlines())
    assert any(ln.strip() == ".. math::" for ln in rst)


@pytest.mark.parametrize(("module", "marker"), [
    ("stability.riccati", "CARE "),                 # a table: labels, then formulas
    ("stability.certificates", '"converges"'),      # a table of regimes
    ("empirical.gaussianity", "Mardia skewness"),   # prose laid out in columns
    ("sweep.family", "analysis: certify"),          # code (YAML)
    ("io.files", '"writer"'),                       # code (JSON)
])
def test_tables_and_code_stay_plain_text_literals(module, marker):
    import importlib

    obj = importlib.import_module(f"riccati_tf.{module}")
    block = _block_of(obj, marker)
    assert plain_docstrings.formula_latex(block) is None
    rst = plain_docstrings.plain(inspect.getdoc(obj).splitlines())
    at = next(i for i, ln in enumerate(rst) if marker in ln)
    assert ".. code-block:: text" in rst[at - 2]    # plain text, not highlighted as Python


def test_running_text_formulas_become_inline_math():
    import riccati_tf

    first = plain_docstrings.plain(inspect.getdoc(riccati_tf.certify).splitlines())[0]
    assert first == (r"Classify the covariance flow :math:`\dot{\Sigma} = A\Sigma + \Sigma "
                     r"A^{\top} + \sum_{h}(V_h\Sigma B_h\Sigma + \Sigma B_h^{\top}\Sigma "
                     r"V_h^{\top})` from Σ(0) = Σ0.")
    # a formula that continues on the next line is one span; prose ends it
    text = plain_docstrings.inline_math("stable: Σ(t) ⪯ e^{At}Σ0e^{Aᵀt}\n⪯ λ_max(SΣ0)S⁻¹ for S")
    assert text == (r"stable: :math:`\Sigma (t) \preceq e^{At}\Sigma _{0}e^{A^{\top}t} \preceq "
                    r"\lambda _{\max}(S\Sigma _{0})S^{-1}` for S")
    # what does not translate stays text, escaped as before
    assert plain_docstrings.inline_math("so e^{ℵt} = |x|") == r"so e^{ℵt} = \|x\|"


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


#: an executed notebook's output cell on the site (myst-nb), up to the next cell or section
OUTPUT = re.compile(r'<div class="cell_output[^"]*">(.*?)(?=<div class="cell |</section>|'
                    r'<div class="cell_input)', re.S)


def table_cells(output: str) -> list[str]:
    """The cells of the tables in one output: <td>/<th> cells, and the fields of text lines
    laid out as a table (three or more fields apart by runs of two or more spaces)."""
    cells = [html.unescape(re.sub(r"<[^>]+>", "", c))
             for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", output, re.S)]
    for pre in re.findall(r"<pre>(.*?)</pre>", output, re.S):
        for line in html.unescape(re.sub(r"<[^>]+>", "", pre)).splitlines():
            fields = re.split(r"\s{2,}", line.strip())
            if len(fields) >= 3:
                cells += fields
    return cells


@pytest.mark.slow
def test_no_notebook_table_shows_a_missing_value_as_none(site):
    """A number the code could not give is written as —, ∞ or in words in the notebooks'
    tables (text tables and HTML tables of the executed outputs), never as Python's None or
    nan (notebook 04's probe table once read "accepts ≤ none", "[none, none]")."""
    seen = 0
    for page in sorted((site / "notebooks").glob("*.html")):
        for output in OUTPUT.findall(page.read_text()):
            cells = table_cells(output)
            seen += len(cells)
            bad = [c for c in cells if re.search(r"\b(None|none|nan|NaN)\b", c)]
            assert bad == [], (page.name, bad)
    assert seen > 50  # the probe table of notebook 04 and the tables of 02 and 03 are read


@pytest.mark.slow
def test_flow_page_documents_flow(site):
    import riccati_tf

    page = (site / PAGES["flow"]).read_text()
    assert r"\dot{\Sigma} &amp;= A \Sigma" in page    # the SPEC §2 equations it solves, as math
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    first_line = riccati_tf.flow.__doc__.strip().splitlines()[0]
    assert " ".join(first_line.split()) in " ".join(text.split())


def _api_pages(site: Path) -> list[Path]:
    """The API pages of the package."""
    return sorted((site / "api").rglob("*.html"))


#: a math node of Sphinx's MathJax output (inline span or display div), typeset by MathJax
MATH_NODE = re.compile(r'<(span|div) class="math notranslate nohighlight">.*?</\1>', re.S)
#: a literal block: its <div class="… highlight-LANG …"> wrapper and its <pre> content
LITERAL = re.compile(r'<div class="([^"]*\bhighlight-(\w+)\b[^"]*)"><div class="highlight">'
                     r'<pre>(.*?)</pre>', re.S)


def _text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def _is_doctest(pre: str) -> bool:
    return _text(pre).lstrip().startswith(">>>")


@pytest.mark.slow
def test_api_pages_typeset_the_docstrings_formulas(site):
    # the plain-text math of the docstrings (e^{At}, ∫_0^t …) appears nowhere outside math
    # nodes: neither as text nor in a literal block (doctests, code the docstring marked, aside)
    pages = _api_pages(site)
    assert len(pages) > 100
    left = {}
    for page in pages:
        source = page.read_text()
        source = LITERAL.sub(lambda m: "" if _is_doctest(m[3]) else m[0], source)
        text = _text(MATH_NODE.sub("", source))
        found = [raw for raw in ("e^{", "∫_") if raw in text]
        if found:
            left[page.name] = found
    assert left == {}
    flow = (site / PAGES["flow"]).read_text()
    displays = re.findall(r'<div class="math notranslate nohighlight">(.*?)</div>', flow, re.S)
    assert any(r"\int _0^t e^{A^{\top}s} G e^{As} ds" in html.unescape(d) for d in displays)


@pytest.mark.slow
def test_api_literal_blocks_are_plain_text_unless_code(site):
    # a literal block is highlighted (as Python) only when the docstring marked it as code
    # (a >>> doctest); the tables and column layouts of the docstrings are plain text
    kinds: dict[str, int] = {}
    highlighted = []
    for page in _api_pages(site):
        for _, lang, pre in LITERAL.findall(page.read_text()):
            kinds[lang] = kinds.get(lang, 0) + 1
            if lang not in ("text", "none") and not _is_doctest(pre):
                highlighted.append((page.name, lang, _text(pre)[:60]))
    assert highlighted == []
    assert kinds.get("text", 0) >= 5 and sum(kinds.values()) > kinds["text"]
    certificates = (site / "api/generated/riccati_tf.stability.certificates.html").read_text()
    table = [pre for _, lang, pre in LITERAL.findall(certificates) if '"converges"' in _text(pre)]
    assert len(table) == 1 and "highlight-text" in certificates


@pytest.mark.slow
def test_first_lines_show_the_dotted_derivatives(site):
    # certify's first line writes Σ̇ in running text: it is inline math there (a combining dot
    # over Σ is lost in the theme font); flow's first formulas, ṁ and Σ̇, are a display
    certify = (site / PAGES["certify"]).read_text()
    first = re.search(r"<dd><p>(.*?)</p>", certify, re.S)[1]
    assert first.startswith("Classify the covariance flow ")
    assert re.search(r'<span class="math notranslate nohighlight">\\\(\\dot\{\\Sigma\} = ', first)
    flow = (site / PAGES["flow"]).read_text()
    body = flow[flow.index("<dd>"):]
    display = re.search(r'<div class="math notranslate nohighlight">(.*?)</div>', body, re.S)[1]
    assert r"\dot{m} &amp;= (A + V) m" in display and r"\dot{\Sigma} &amp;= A \Sigma" in display


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
    // cut off: a <pre> or a display formula wider than its box, an inline formula wider than
    // its paragraph (the screen-reader copy of each formula, clipped, is left out)
    document.querySelectorAll('mjx-assistive-mml').forEach(function (e) { e.remove(); });
    var cut = [], boxes = document.querySelectorAll('pre, mjx-container');
    boxes.forEach(function (e) {
      var box = e.tagName == 'PRE' || e.getAttribute('display') == 'true' ? e
          : e.parentElement.closest('p, div, dd, li, td, th');
      if (e.scrollWidth > box.clientWidth + 1) {
        cut.push(e.tagName + ' ' + e.scrollWidth + '>' + box.clientWidth);
      }
    });
    d.pres = document.querySelectorAll('pre').length;
    d.cut = JSON.stringify(cut);
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
    attrs["cut"] = json.loads(attrs["cut"])
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
    # no TeX left unrendered, and no plain-text math (e^{At}, ∫_0^t) of the docstrings left
    # untypeset: the API pages' formulas are all typeset
    for raw in ("\\frac", "\\(", "\\)", "\\[", "$", "\\Sigma", "\\top", "\\dot", "^{", "_{",
                "∫_"):
        assert raw not in text, (name, raw)
    containers = int(seen["containers"])
    if name in ("flow", "certify"):
        # every math node typeset once: the SPEC equations it solves, the docstring's
        # displays and inline formulas; none cut off, no literal block (doctests) either
        nodes = len(re.findall(r'class="math notranslate nohighlight"', page.read_text()))
        assert containers == nodes >= 3
        assert int(seen["pres"]) >= 1 and seen["cut"] == [], (name, seen["cut"])
    if name == "nb02":
        assert int(seen["images"]) >= 1 and containers >= 10  # the regimes: one figure
        assert "Riccati stability" in text
    if name == "spec":
        # every formula span, display and running-text formula, each typeset once
        prose = re.sub(r"`[^`]+`", "", SPEC)  # running-text formulas: outside the spans
        running = sum(prose.count(formula) for formula in spec_math.RUNNING_TEXT)
        assert containers == len(SPANS) + DISPLAYS + running
    shot = tmp_path / f"docs_{name}.png"
    subprocess.run([BROWSER, *FLAGS, *profile, "--window-size=1280,1600",
                    f"--virtual-time-budget={MATH_BUDGET_MS}", "--hide-scrollbars",
                    f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=180)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert np.std(mpimg.imread(shot)) > 0.05
    keep_screenshot(shot, f"docs_{name}.png")
