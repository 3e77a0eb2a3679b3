"""Shared test set-up: one BLAS thread (OpenBLAS with 2 threads is erratic on small matrices),
Hypothesis without wall-clock checks, drawing the same examples on every run, the documentation
site built once per session (`site`), and the groups of tests that share an expensive fixture
(XDIST_GROUPS) kept on one pytest-xdist worker each.

Hypothesis's defaults time each example (a 200 ms `deadline`, the `too_slow` health check) and
draw new examples on every run from a database in the working folder: under load, or with
several pytest-xdist workers sharing that folder, the same code could pass or fail by the clock
or the draw. The profile below turns both off: the suite is deterministic."""

from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg  # noqa: F401  (loads SciPy's own OpenBLAS so that the limit below reaches it)
from hypothesis import HealthCheck, settings
from threadpoolctl import threadpool_limits

from tests import docsite

_LIMIT = threadpool_limits(limits=1)

settings.register_profile("deterministic", deadline=None, derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("deterministic")


@pytest.fixture
def rng():
    return np.random.default_rng(20261129)


@pytest.fixture(scope="session")
def site() -> Path:
    """docs/_build/html, built once with warnings as errors (tests/docsite.py); skipped without
    the docs extra."""
    if not docsite.can_build():
        pytest.skip("the documentation build needs the docs extra (pip install -e '.[docs]')")
    return docsite.build()


#: test modules whose tests share an expensive fixture, by group. Under pytest-xdist with
#: --dist loadgroup (`make test`) the tests of a group run on one worker, so that the fixture is
#: computed once, and the groups are handed out first, so that the longest units of work start
#: at once rather than last; every other test is a unit of its own. (pytest-xdist's own
#: xdist_group marker renames the tests' node ids, which pytest ≥ 9 ignores: the groups are
#: named here, by module, and `pytest_xdist_make_scheduler` applies them.)
XDIST_GROUPS = {
    docsite.XDIST_GROUP: ("tests/test_docs.py", "tests/test_notebooks.py"),
    # the quick report of the module-scoped `drawn` fixture, built once; it re-proves the
    # claims of proofs/, which proofs/_verify.py runs once per process: with test_proofs.py on
    # the same worker, each claim is proved once
    "quick-report": ("tests/test_report.py", "tests/test_proofs.py"),
    # the module-scoped `grown` certificate (a stiff flow through Rodas4, 12 s), computed once
    "stiff-growth": ("tests/test_stiff_growth.py",),
}
GROUP_OF = {module: group for group, modules in XDIST_GROUPS.items() for module in modules}


def _module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def pytest_collection_modifyitems(config, items):
    """The grouped modules first, in the order of XDIST_GROUPS; otherwise the collection's."""
    rank = {module: i for i, module in enumerate(GROUP_OF)}
    items.sort(key=lambda item: rank.get(_module(item.nodeid), len(rank)))


if find_spec("xdist") is not None:
    def pytest_xdist_make_scheduler(config, log):
        """--dist loadgroup: one unit of work per group of XDIST_GROUPS, one per other test."""
        if config.getvalue("dist") != "loadgroup":
            return None
        from xdist.scheduler import LoadScopeScheduling

        class ByGroup(LoadScopeScheduling):
            def _split_scope(self, nodeid: str) -> str:
                return GROUP_OF.get(_module(nodeid), nodeid)

        return ByGroup(config, log)
