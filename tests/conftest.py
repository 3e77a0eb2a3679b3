"""Shared test set-up: one BLAS thread (OpenBLAS with 2 threads is erratic on small matrices)."""

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

_LIMIT = threadpool_limits(limits=1)


@pytest.fixture
def rng():
    return np.random.default_rng(20261129)
