"""The package as a user installs it: the built wheel, outside the checkout, without the extras."""

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: the optional extras' top-level modules (riccati-tf[report], [models], [dask])
EXTRAS = ("torch", "transformers", "dask", "distributed", "pyarrow")

LAUNCHER = """\
import sys


class Absent:  # a core install: importing an extra raises ModuleNotFoundError
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {extras!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, Absent())
sys.path.insert(0, {site!r})
import riccati_tf
assert riccati_tf.__file__.startswith({site!r}), riccati_tf.__file__
from riccati_tf.app.cli import entry
sys.argv = ["riccati-tf", "report", "--quick", "--out", {out!r}]
entry()
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel pip builds from the checkout (no dependencies fetched)."""
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(out), str(REPO)], check=True, cwd=out)
    (found,) = out.glob("riccati_tf-*.whl")
    return found


def test_the_wheel_ships_the_license_the_spec_and_type_information(wheel):
    """LICENSE (the declared MIT), py.typed, and SPEC.md, which the docstrings cite as "SPEC §n",
    with the text of the checkout's; no tests, benchmarks or docs."""
    archive = zipfile.ZipFile(wheel)
    names = archive.namelist()
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "riccati_tf/py.typed" in names
    assert archive.read("riccati_tf/SPEC.md") == (REPO / "docs" / "SPEC.md").read_bytes()
    assert not any(n.startswith(("tests/", "benchmarks/", "docs/")) for n in names)


@pytest.mark.slow
def test_the_installed_wheel_reports_without_the_extras(wheel, tmp_path):
    """pip install of the wheel (core only: the extras' modules made unimportable), run from a
    folder outside the checkout: `riccati-tf report --quick` exits 0, and its page and its
    progress say which sections it skipped (the model, the sweep, the proofs of the source
    tree) and what to install for them."""
    site, out = tmp_path / "site", tmp_path / "report"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target",
                    str(site), str(wheel)], check=True, cwd=tmp_path)
    script = tmp_path / "run.py"
    script.write_text(LAUNCHER.format(extras=EXTRAS, site=str(site), out=str(out)))
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    page = (out / "index.html").read_text()
    # the sweep section runs on the core install (its results in npz); the model needs torch
    for part in ("proofs/ is not next to this installation", "Model section skipped"):
        assert part in page
    assert "Sweep section skipped" not in page and "riccati-tf[models]" in page
    log = done.stdout + done.stderr
    assert log.count("skipped: ") == 2, log  # the progress says so too, not "done in 0.0 s"
