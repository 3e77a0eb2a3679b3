"""The benchmark modules stay runnable: each imports against the current package layout and has
its entry point, and the shared timing helper pins every BLAS pool the benchmarks load."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_info

ROOT = Path(__file__).resolve().parents[1]
MODULES = sorted(p.stem for p in (ROOT / "benchmarks").glob("*.py") if not p.stem.startswith("_"))


def test_every_benchmark_is_listed():
    assert {"factored", "flows", "sweep", "certify", "bernoulli"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_benchmark_imports_and_has_main(name):
    module = importlib.import_module(f"benchmarks.{name}")
    assert callable(getattr(module, "main", None))
    assert module.__doc__ and f"python -m benchmarks.{name}" in module.__doc__


def test_pin_one_thread_limits_every_loaded_blas():
    from benchmarks._timing import BLAS_LIBRARIES, pin_one_thread

    limiter, line = pin_one_thread()
    try:
        pools = [p for p in threadpool_info() if p["user_api"] == "blas"]
        paths = " ".join(p["filepath"] for p in pools)
        assert "scipy" in paths  # scipy.linalg's own OpenBLAS was loaded before pinning
        assert all(p["num_threads"] == 1 for p in pools), pools
        assert line.count("=1") == len([p for p in threadpool_info()])
        assert "scipy.linalg" in BLAS_LIBRARIES
    finally:
        limiter.restore_original_limits()


def test_multihead_family_is_of_real_shape():
    from benchmarks.multihead import KINDS, layer

    for kind in KINDS:
        p = layer(24, kind)
        assert len(p.heads) == 12 and all(h is not None and h.Q.shape == (2, 24)
                                          for h in p.factors)
        top = max(np.linalg.eigvals(p.A).real, default=0.0)
        assert {"zero": top == 0, "hurwitz": top < 0, "antistable": top > 0}[kind]


@pytest.mark.long
def test_multihead_quick_run_agrees_with_dop853(capsys):
    from benchmarks.multihead import main

    main(["--quick"])
    out = capsys.readouterr().out
    assert "# equilibria: median" in out and "# certify: median" in out
    assert out.count("agrees (") == 9 and "DISAGREES" not in out


@pytest.mark.parametrize("form", ["augmented", "factored"])
def test_augmented_jacobians_are_the_derivatives_of_their_right_hand_sides(form):
    """benchmarks.augmented: the exact Jacobian of each state, (Σ, Y_h) and (L, Y_h), against
    central differences of its right-hand side at a perturbed start (d = 6)."""
    from benchmarks.augmented import FORMS
    from riccati_tf.empirical.families import family_cases

    case = family_cases((6,), 1, family="opposite")[0]
    system = FORMS[form](case.params, np.asarray(case.initial.cov, dtype=float))
    rng = np.random.default_rng(1)
    y = system.y0 + 0.01 * rng.standard_normal(system.y0.size)
    step = 1e-6 * rng.standard_normal(y.size)
    central = (system.rhs(0.0, y + step) - system.rhs(0.0, y - step)) / 2
    assert np.linalg.norm(central - system.jac(0.0, y) @ step) <= 1e-8 * np.linalg.norm(central)
