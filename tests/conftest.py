"""Shared test set-up: one BLAS thread (OpenBLAS with 2 threads is erratic on small matrices)."""

import numpy as np
import pytest
import scipy.linalg  # noqa: F401  (loads SciPy's own OpenBLAS so that the limit below reaches it)
from threadpoolctl import threadpool_limits

_LIMIT = threadpool_limits(limits=1)


@pytest.fixture
def rng():
    return np.random.default_rng(20261129)
