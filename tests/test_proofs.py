"""Every claim of every module in proofs/ must hold (the proofs are part of the test suite),
and the proof helper must reject a wrong identity."""

from __future__ import annotations

import importlib
import pkgutil
from functools import partial

import pytest
import sympy as sp

import proofs
from proofs import _verify

MODULES = sorted(m.name for m in pkgutil.iter_modules(proofs.__path__)
                 if not m.name.startswith("_"))


def _claim_id(claim) -> str:
    if isinstance(claim, partial):
        args = ",".join(str(a) for a in claim.args)
        return f"{claim.func.__name__}({args})"
    return claim.__name__


CASES = [pytest.param(name, i, id=f"{name}:{_claim_id(claim)}")
         for name in MODULES
         for i, claim in enumerate(importlib.import_module(f"proofs.{name}").CLAIMS)]


def test_every_required_result_has_a_module():
    required = {"gaussian_invariance_dot", "gaussian_invariance_l2", "moment_equations",
                "multi_head", "discrete_layers", "rank_invariance", "lyapunov_inverse",
                "closed_form", "scalar_blowup", "bernoulli_care"}
    assert required <= set(MODULES)
    readme = (proofs.__path__[0] + "/README.md")
    with open(readme, encoding="utf-8") as fh:
        text = fh.read()
    assert all(f"proofs.{name}" in text for name in MODULES), "README lists every module"


@pytest.mark.parametrize(("module", "index"), CASES)
def test_claim_holds(module, index):
    claim = importlib.import_module(f"proofs.{module}").CLAIMS[index]
    verdicts = _verify.evaluate([claim])
    assert verdicts
    failed = [v for v in verdicts if not v.passed]
    assert not failed, _verify.table(failed)


def test_a_claim_runs_once_per_process():
    """evaluate proves a claim the first time it is asked for it; the same claim asked again
    (by the report after the tests, or by the tests after the report) gives the same verdicts
    without running again."""
    x = sp.Symbol("x")
    runs = []

    def claim():
        runs.append(1)
        return _verify.symbolic_zero("x − x = 0", x - x)

    first = _verify.evaluate([claim])
    assert _verify.evaluate([claim, claim]) == first * 2 and len(runs) == 1
    assert first[0].passed


def test_wrong_identities_fail():
    x, y = sp.symbols("x y", real=True)
    assert not _verify.symbolic_zero("wrong", (x + y) ** 2 - x ** 2 - y ** 2).passed
    assert not _verify.symbolic_zero("wrong rational", 1 / (x + 1) - 1 / x).passed
    assert not _verify.rational_zero("wrong", sp.Matrix([x - y])).passed
    A, B = sp.MatrixSymbol("A", 3, 3), sp.MatrixSymbol("B", 3, 3)
    assert not _verify.matrix_zero("AB = BA is false", A * B - B * A).passed
    S = sp.MatrixSymbol("S", 3, 3)
    assert not _verify.matrix_zero("Sᵀ = S needs the declaration", S.T - S).passed
    assert _verify.matrix_zero("Sᵀ = S when declared", S.T - S, symmetric=[S]).passed


def test_a_failing_claim_fails_the_table_and_exit_status(capsys):
    x = sp.Symbol("x")

    def wrong():
        return _verify.symbolic_zero("sin² + cos² = 2", sp.sin(x) ** 2 + sp.cos(x) ** 2 - 2)

    def broken():
        raise RuntimeError("cannot evaluate")

    assert _verify.main([wrong], "title") == 1
    out = capsys.readouterr().out
    assert "FAILED" in out and "0/1 claims proved" in out
    assert _verify.main([broken], "title") == 1
    assert _verify.main([lambda: _verify.symbolic_zero("ok", x - x)], "title") == 0
