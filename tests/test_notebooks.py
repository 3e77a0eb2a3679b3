"""Every notebook runs headless from top to bottom, shows its figures as images, writes nothing to
stderr, and is stored without outputs."""

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).parents[1] / "notebooks").glob("*.ipynb"))
#: a call of a plotting function (riccati_tf.plotting.plot_*, experiments.plot_*, phase_diagram)
PLOT_CALL = re.compile(r"\b(plot_\w+|phase_diagram)\(")


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 4


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_stored_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None


@pytest.fixture(scope="module")
def executed():
    """{path: the notebook after running it} (each notebook run once for all checks)."""
    cache = {}

    def run(path):
        if path not in cache:
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
