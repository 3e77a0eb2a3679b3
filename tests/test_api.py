"""The public API: the README's Python code runs as written, every module name the README lists
imports, and the entry points share one calling convention (Gaussian argument, t_final)."""

import importlib.util
import inspect
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import riccati_tf as rt

README = Path(__file__).resolve().parents[1] / "README.md"


def _readme() -> str:
    return README.read_text(encoding="utf-8")


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def _module_table(text: str) -> list[list[str]]:
    """Rows (cells) of the README table whose header starts with "| module |"."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| module |"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


def test_readme_python_blocks_run(capsys):
    blocks = _python_blocks(_readme())
    assert blocks, "the README has no ```python block"
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # the README uses no deprecated call
        for k, code in enumerate(blocks):
            exec(compile(code, f"README.md python block {k}", "exec"), {"__name__": "readme"})
    out = capsys.readouterr().out
    # the printed reprs are the compact ones the README comments quote
    assert "Certificate(regime='converges', exact=True" in out
    assert "ControlPlan(route='polar', controls='affine', d=2, t_final=1, pieces=2" in out
    assert "array(" not in out


def test_readme_python_blocks_type_check_strictly(tmp_path):
    # a user's script type-checks against the package as installed (py.typed): lists, tuples
    # and ints where arrays are expected, Optional results narrowed (mypy --strict; the
    # package's own modules are checked by `make typecheck`, not reported here). mypy finds the
    # package as the environment installed it: no MYPYPATH (an editable install through an
    # import hook would be invisible to it, hence pyproject's package-dir, which makes the
    # editable install one static .pth line)
    script = tmp_path / "readme_example.py"
    script.write_text("\n".join(_python_blocks(_readme())), encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent",
         "--no-incremental", "--cache-dir", str(tmp_path / "cache"), str(script)],
        cwd=tmp_path, capture_output=True, text=True, check=False,
        env={k: v for k, v in os.environ.items() if k != "MYPYPATH"})
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Success" in run.stdout


def test_readme_module_table_names_import():
    rows = _module_table(_readme())
    assert len(rows) >= 5
    modules, provided = [], []
    for cells in rows:
        modules += re.findall(r"`(riccati_tf(?:\.\w+)+)`", cells[0])
        provided += re.findall(r"`rt\.(\w+)`", cells[1])
    assert "riccati_tf.stability.certificates" in modules
    assert "riccati_tf.reachability.steering" in modules
    for name in modules:  # a module, as the table says: `import name` works
        assert importlib.util.find_spec(name) is not None, f"{name} is not a module"
    for name in ("riccati_tf.equilibria", "riccati_tf.certify", "riccati_tf.steer"):
        assert name not in modules  # functions, not modules
        assert importlib.util.find_spec(name) is None
    assert {"certify", "equilibria", "steer"} <= set(provided)
    for name in provided:
        assert name in rt.__all__ and callable(getattr(rt, name))


def test_entry_points_share_the_calling_convention():
    for fn in (rt.flow, rt.layers, rt.certify):
        assert list(inspect.signature(fn).parameters)[1] == "gaussian", fn.__name__
    assert list(inspect.signature(rt.steer).parameters)[2] == "t_final"
    assert list(inspect.signature(rt.flow).parameters)[2] == "t_final"


def test_every_exported_name_resolves():
    for name in rt.__all__:
        assert getattr(rt, name) is not None
    assert sorted(rt.__all__) == rt.__all__


def test_gaussian_start_everywhere():
    p = rt.Params(A=-np.eye(2), B=np.eye(2), V=-np.eye(2))
    g = rt.Gaussian([1.0, -1.0], [[1.0, 0.2], [0.2, 0.5]])
    c = rt.certify(p, g)
    np.testing.assert_array_equal(c.cov0, g.cov)
    np.testing.assert_array_equal(c.mean0, g.mean)
    tr = rt.flow(p, g, 1.0)
    assert np.all(np.isfinite(tr.cov[-1]))
    with pytest.warns(DeprecationWarning, match="t_final"):
        plan = rt.steer(g, g, T=1.0)
    assert plan.t_final == plan.T == 1.0
