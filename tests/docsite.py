"""The documentation site that the tests read (`make docs` builds the same): built once per test
session with warnings as errors, by the `site` fixture of tests/conftest.py.

The build executes each notebook once (myst-nb, docs/conf.py) and writes the executed notebooks
to docs/_build/jupyter_execute/; the notebook tests read them there rather than running the
notebooks again. The tests that read the site share one pytest-xdist group (XDIST_GROUP), so
that one worker builds it."""

import os
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

ROOT = Path(__file__).parents[1]
DOCS = ROOT / "docs"
HTML = DOCS / "_build" / "html"
#: the notebooks as the build executed them (myst-nb's output folder, next to the site)
EXECUTED = DOCS / "_build" / "jupyter_execute" / "notebooks"
#: written next to the site after a full build with no warning; the site is reused while it is
#: newer than every source of the site
CLEAN_STAMP = HTML / ".built-without-warnings"
SOURCES = (DOCS, ROOT / "notebooks", ROOT / "riccati_tf")
SKIP_PARTS = {"_build", "generated", "__pycache__", ".ipynb_checkpoints"}
#: the modules the build needs (the docs extra)
BUILDERS = ("sphinx", "myst_nb", "numpydoc", "pydata_sphinx_theme")
#: seconds after which a build is taken for hung: a backstop, far above the few minutes of CPU
#: time a build takes, so that a busy machine never reaches it
BUILD_BACKSTOP = 3600
#: the pytest-xdist group of the tests that read the site or the executed notebooks
XDIST_GROUP = "docs-site"


def can_build() -> bool:
    """Whether the docs extra is installed (else the tests of the built site are skipped)."""
    return all(find_spec(module) is not None for module in BUILDERS)


def _newest_source() -> float:
    return max(p.stat().st_mtime for folder in SOURCES for p in folder.rglob("*")
               if p.is_file() and not SKIP_PARTS & set(p.relative_to(ROOT).parts))


def build() -> Path:
    """docs/_build/html, built from scratch with -W unless a clean build is newer than the
    sources; AssertionError with the build's warnings when it fails."""
    if CLEAN_STAMP.exists() and CLEAN_STAMP.stat().st_mtime >= _newest_source():
        return HTML
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-E", "-W", "--keep-going",
                          "-q", str(DOCS), str(HTML)], capture_output=True, text=True,
                         timeout=BUILD_BACKSTOP, env=env, cwd=ROOT)
    # the notebooks' kernels warn on stderr about their TCP transport: not the build's warnings
    stderr = [ln for ln in run.stderr.splitlines() if not ln.startswith("[IPKernelApp]")]
    warnings = [ln for ln in stderr if "WARNING" in ln or "ERROR" in ln]
    assert run.returncode == 0, "\n".join(warnings) or "\n".join(stderr)[-3000:]
    CLEAN_STAMP.touch()
    return HTML
