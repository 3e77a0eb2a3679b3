"""`certify` on the stabilising-sign family of real shape with an anti-stable A (SPEC §11): the
flow turns stiff, DOP853 hands over to Rodas4, and Σ grows; the "grows" evidence is compared
with an independent stiff reference (scipy's Radau, exact Jacobian), replayed by check(), and
its forgeries fail."""

from __future__ import annotations

from dataclasses import replace
from itertools import pairwise

import numpy as np
import pytest

from riccati_tf import certify
from riccati_tf.empirical.families import family_cases
from riccati_tf.stability.certificates import constants
from riccati_tf.stability.certificates.integration import _Integrator, _replay_run
from riccati_tf.stability.equilibria.settling import implicit_flow

#: the reference's segments: Radau's absolute tolerance follows the size of Σ, which grows 1e7-fold
SEGMENTS = 14


def _radau(case, times, rtol=1e-8):
    """Σ at the sorted times by scipy's Radau with the exact Jacobian on vech Σ
    (`equilibria.settling.implicit_flow`: another method, Jacobian and coordinates than
    certify's DOP853 and Rodas4), in SEGMENTS pieces per time, atol = rtol · max |Σ_ij| of each
    piece's start."""
    S, t, out = case.initial.cov, 0.0, []
    for target in times:
        edges = np.linspace(t, target, SEGMENTS + 1)
        for a, b in pairwise(edges):
            run = implicit_flow(case.params, S, b - a, rtol=rtol, atol=rtol * np.abs(S).max())
            assert run.status == "end", run.status
            S = run.cov
        out.append(S)
        t = target
    return out


def _case(d: int = 24, index: int = 0):
    return family_cases((d,), index + 1, family="opposite")[index]


@pytest.fixture(scope="module")
def grown():
    case = _case()
    return case, certify(case.params, case.initial)


def test_the_stiff_family_is_certified_to_grow(grown):
    _, c = grown
    assert c.regime == "grows", c.reason
    assert "Rodas4" in c.reason and c.tolerance["implicit_rtol"] == constants.IMPLICIT_RTOL
    assert c.rate > 0 and c.blowup_time is None and not c.exact
    assert np.trace(c.final_cov) >= constants.GROWTH_FACTOR * np.trace(c.cov0)
    assert c.check()


@pytest.mark.slow  # Radau on vech Σ (300 unknowns) to the certificate's horizon
def test_the_growth_agrees_with_an_independent_stiff_reference(grown):
    """Radau (exact Jacobian, rtol 1e-8) at horizon/2 and the horizon: Σ within 1e-5 relative
    of the certificate's state (measured: 1.3e-7), and the same rate to 1e-5."""
    case, c = grown
    mid, ref = _radau(case, [c.horizon / 2, c.horizon])
    assert np.linalg.norm(ref - c.final_cov) <= 1e-5 * np.linalg.norm(ref)
    rate = np.log(np.trace(ref) / np.trace(mid)) / (c.horizon / 2)
    assert abs(rate - c.rate) <= 1e-5 * rate


def test_the_switch_is_recorded_and_the_replay_is_bit_identical():
    """The run that `check()` replays gives the same floats twice, and records where DOP853's
    steps collapsed; a run in other segments (one call to the end) switches nearby."""
    case = _case()
    kw = dict(sigma=1.0, rtol=constants.INTEGRATION_RTOL, atol=constants.INTEGRATION_ATOL,
              blowup_rtol=constants.BLOWUP_RTOL, implicit_rtol=constants.IMPLICIT_RTOL)
    one = _replay_run(case.params, case.initial.cov, 18.0, "rk", **kw)
    two = _replay_run(case.params, case.initial.cov, 18.0, "rk", **kw)
    assert one.failure is None and one.switch_time is not None and 0 < one.switch_time < 18.0
    assert np.array_equal(one.final, two.final) and np.array_equal(one.mid, two.mid)
    run = _Integrator(case.params, case.initial.cov, "rk", rtol=constants.INTEGRATION_RTOL)
    assert abs(run.advance(18.0).switch_time - one.switch_time) <= 1e-3 * one.switch_time
    assert 0 < run.implicit_steps <= constants.MAX_IMPLICIT_STEPS


@pytest.mark.parametrize("forge", ["rate", "final_cov", "horizon", "implicit_rtol"])
def test_a_forged_growth_fails_the_check(grown, forge):
    _, c = grown
    if forge == "rate":
        bad = replace(c, rate=c.rate * 1.01)
    elif forge == "final_cov":
        bad = replace(c, final_cov=c.final_cov * 1.001)
    elif forge == "horizon":
        bad = replace(c, horizon=c.horizon * 0.9)
    else:
        bad = replace(c, tolerance={**c.tolerance, "implicit_rtol": 1e-3})
    assert not bad.check()


@pytest.mark.long  # certify on the family's variants at d = 24 and 48: make test-long
@pytest.mark.parametrize("d,index", [(24, i) for i in range(6)] + [(48, 0), (48, 1)])
def test_the_family_is_decided_or_undetermined_never_contradicted(d, index):
    """Every verdict is "grows" (checked, and the reference's tr Σ at the horizon past the
    growth factor) or "undetermined" with its budget named; never "converges"."""
    case = _case(d, index)
    c = certify(case.params, case.initial)
    assert c.regime in ("grows", "undetermined"), c.reason
    assert c.check()
    if c.regime == "undetermined":
        assert "budget" in c.reason or "Rodas4" in c.reason, c.reason
        return
    if d <= 24:
        ref = _radau(case, [c.horizon])[0]
        assert np.linalg.norm(ref - c.final_cov) <= 1e-5 * np.linalg.norm(ref)
