"""Sphinx configuration of the riccati_tf documentation (`make docs` → docs/_build/html).

Math renders offline: MathJax 3 is bundled by sphinx-mathjax-offline and copied into _static.
The notebooks of notebooks/ (linked as docs/notebooks) are executed at every build by myst-nb,
which writes the executed copies to docs/_build/jupyter_execute/; the notebook tests read them
there (tests/test_notebooks.py), so that `make test` executes each notebook once.
"""

import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(HERE.parent))

import spec_math  # noqa: E402  (docs/_ext, on the path above)

project = "riccati_tf"
author = "riccati_tf authors"
copyright = "2026, riccati_tf authors"
release = version = "0.1.0"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",
    "numpydoc",
    "myst_nb",
    "cli_help",
    "spec_math",
    "plain_docstrings",
]

exclude_patterns = ["_build", "notebooks/.ipynb_checkpoints", "**/.ipynb_checkpoints"]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
root_doc = "index"

# --- API reference ---------------------------------------------------------------------------
autosummary_generate = True
#: a module page lists the names of its __all__ (its public API)
autosummary_ignore_module_all = False
templates_path = ["_templates"]
#: the SPEC formulas each object solves, shown as a display at the top of its API page
SOLVES = {
    "riccati_tf.flow": ("ṁ = (A + V) m + V Σ B m + b", "Σ̇ = A Σ + Σ Aᵀ + V Σ B Σ + Σ Bᵀ Σ Vᵀ"),
    "riccati_tf.moment_rhs": ("ṁ = (A + V) m + V Σ B m + b",
                              "Σ̇ = A Σ + Σ Aᵀ + V Σ B Σ + Σ Bᵀ Σ Vᵀ"),
    "riccati_tf.layers": ("m⁺ = (I + τM) m + τ c", "Σ⁺ = (I + τM) Σ (I + τM)ᵀ"),
    "riccati_tf.equilibria": ("F(Σ) = A Σ + Σ Aᵀ + V Σ B Σ + Σ Bᵀ Σ Vᵀ = 0",),
    "riccati_tf.certify": ("Σ(t) = e^{At} Σ0 (I + W(t) Σ0)⁻¹ e^{Aᵀt}",
                           "W(t) = ∫_0^t e^{Aᵀs} G e^{As} ds"),
    "riccati_tf.stability.riccati.bernoulli": ("A Σ + Σ Aᵀ − Σ G Σ = 0",),
    "riccati_tf.stability.riccati.care_g": ("Aᶜᵀ X + X Aᶜ − X G X + Q = 0",),
    "riccati_tf.steer": ("m_end = e^{Aτ} m_start + (∫_0^τ e^{As} ds) b",),
    "riccati_tf.reachability.lie.accessibility_rank": ("ż = f0(z) + Σ u_i g_i(z)",
                                          "[f, g](z) = Dg(z) f(z) − Df(z) g(z)"),
}
autosummary_context = {"equations": spec_math.equations(SOLVES, (HERE / "SPEC.md").read_text())}
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False


def _skip_foreign_member(app, what, name, obj, skip, options):
    """Members a class inherits or gets from another library (matplotlib generates a `set` for
    every Figure subclass) are documented there, not here."""
    module = getattr(obj, "__module__", None) or ""
    if what == "class" and callable(obj) and module and not module.startswith("riccati_tf"):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", _skip_foreign_member)


# --- notebooks and Markdown ------------------------------------------------------------------
nb_execution_mode = "force"
#: seconds one notebook cell may run before the build fails
nb_execution_timeout = 600
nb_execution_raise_on_error = True
nb_execution_show_tb = True
#: Markdown that a notebook cell displays (IPython.display.Markdown) is parsed as MyST, whose
#: syntax has pipe tables (myst-nb's default, CommonMark, has none: a table became a paragraph)
nb_render_markdown_format = "myst"
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3

# --- HTML -----------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = "riccati_tf"
#: collapse_navigation: the side bar lists the pages of the current section only (the theme's
#: default lists every page, hidden under toggles: the ~470 API pages each carried all ~490
#: entries, and rendering those side bars took about 7 s of CPU per build)
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "collapse_navigation": True,
}
#: docstrings.css: the plain-text literal blocks of the API pages wrap (no horizontal scroll)
html_static_path = ["_static"]
html_css_files = ["docstrings.css"]
