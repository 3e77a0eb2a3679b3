"""Shared test set-up: one BLAS thread (OpenBLAS with 2 threads is erratic on small matrices),
and Hypothesis without wall-clock checks, drawing the same examples on every run.

Hypothesis's defaults time each example (a 200 ms `deadline`, the `too_slow` health check) and
draw new examples on every run from a database in the working folder: under load, or with
several pytest-xdist workers sharing that folder, the same code could pass or fail by the clock
or the draw. The profile below turns both off: the suite is deterministic."""

import numpy as np
import pytest
import scipy.linalg  # noqa: F401  (loads SciPy's own OpenBLAS so that the limit below reaches it)
from hypothesis import HealthCheck, settings
from threadpoolctl import threadpool_limits

_LIMIT = threadpool_limits(limits=1)

settings.register_profile("deterministic", deadline=None, derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("deterministic")


@pytest.fixture
def rng():
    return np.random.default_rng(20261129)
