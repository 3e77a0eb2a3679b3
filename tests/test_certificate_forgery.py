"""Forged certificates: every claim a certificate states is re-decided by `check()`.

For each kind of certificate (exact theorems and numerical evidence; scalar V converging,
collapsing, blowing up and growing; general V converging on a local Lyapunov set, collapsing into
the zero sublevel set, blowing up; bounded with an exact or a numerical witness S) the genuine
certificate passes its check, and each field changed in turn with `dataclasses.replace` to a value
that states something false fails it."""

from dataclasses import replace

import numpy as np
import pytest

from riccati_tf import Params, certify, flow
from riccati_tf.stability.certificates.local import _zero_equilibrium
from riccati_tf.state.params import Gaussian
from tests.test_certificates import _stable_48, random_case


def _negated_A(c):
    return replace(c, params=Params(-c.params.A, heads=c.params.heads))


def _tol(c, **changes):
    return replace(c, tolerance={**c.tolerance, **changes})


def _without(c, name):
    return replace(c, tolerance={k: v for k, v in c.tolerance.items() if k != name})


#: forgeries of every certificate: the form and the tolerances
COMMON = {
    "exact flipped": lambda c: replace(c, exact=not c.exact),
    "global flipped": lambda c: replace(c, global_=not c.global_),
    "tolerance {}": lambda c: replace(c, tolerance={}),
}
#: forgeries of a numerical certificate's tolerances
TOLERANCES = {
    "integration_rtol 1e-3": lambda c: _tol(c, integration_rtol=1e-3),
    "close_rtol -1": lambda c: _tol(c, close_rtol=-1.0),
    "growth_factor NaN": lambda c: _tol(c, growth_factor=float("nan")),
    "unknown key": lambda c: _tol(c, made_up_rtol=1e-3),
    "integration_atol missing": lambda c: _without(c, "integration_atol"),
}
PREMISE_TOLERANCES = {
    "sign_rtol -1": lambda c: _tol(c, sign_rtol=-1.0),
    "axis_rtol 0.5": lambda c: _tol(c, axis_rtol=0.5),
    "range_rtol missing": lambda c: _without(c, "range_rtol"),
}
CONVERGES = {
    "regime grows": lambda c: replace(c, regime="grows"),
    "regime blows_up": lambda c: replace(c, regime="blows_up"),
    "rate x10": lambda c: replace(c, rate=10 * c.rate),
    "rate -1": lambda c: replace(c, rate=-1.0),
    "equilibrium x2": lambda c: replace(c, equilibrium=replace(c.equilibrium,
                                                               cov=2 * c.equilibrium.cov)),
}
LOCAL = {
    "lyapunov negated": lambda c: replace(c, lyapunov=-c.lyapunov),
    "lyapunov_rhs x2": lambda c: replace(c, lyapunov_rhs=2 * c.lyapunov_rhs),
    "operator perturbed": lambda c: replace(c, operator=c.operator + 1e-3),
    "kantorovich_radius x100": lambda c: replace(
        c, kantorovich_radius=100 * c.kantorovich_radius + 1e-3),
}
BLOWUP = {
    "T* halved": lambda c: replace(c, blowup_time=c.blowup_time / 2),
    "T* x1.01": lambda c: replace(c, blowup_time=1.01 * c.blowup_time),
    "Σ0 x100": lambda c: replace(c, cov0=100 * c.cov0),
    "A negated": _negated_A,
    "regime grows": lambda c: replace(c, regime="grows", blowup_time=None,
                                      blowup_direction=None),
    "regime collapses": lambda c: replace(c, regime="collapses"),
    # scalar V: the direction rolled; general V, which states none: a direction set
    "rolled blowup_direction": lambda c: replace(c, blowup_direction=np.eye(c.params.d)[0] if
                                                 c.blowup_direction is None else
                                                 np.roll(c.blowup_direction, 1)),
    "rate 1": lambda c: replace(c, rate=1.0),
    "horizon set": lambda c: replace(c, horizon=c.blowup_time),
}
EVIDENCE = {
    "horizon x100": lambda c: replace(c, horizon=100 * c.horizon),
    "horizon halved": lambda c: replace(c, horizon=c.horizon / 2),
    "final_cov x2": lambda c: replace(c, final_cov=2 * c.final_cov),
    "Σ0 x100": lambda c: replace(c, cov0=100 * c.cov0),
}


def _sym(d, i, j, x):
    E = np.zeros((d, d))
    E[i, j] = E[j, i] = x
    return E


def _with_heads(c, heads):
    return replace(c, params=Params(c.params.A, heads=heads))


#: forgeries of a "bounded" certificate: every field (reason is prose, mean0 is not a claim)
BOUNDED = {
    "regime converges": lambda c: replace(c, regime="converges"),
    "regime collapses": lambda c: replace(c, regime="collapses"),
    "regime undetermined": lambda c: replace(c, regime="undetermined"),
    "equilibrium set": lambda c: replace(c, equilibrium=_zero_equilibrium(c.params)),
    "lyapunov negated": lambda c: replace(c, lyapunov=-c.lyapunov),
    "lyapunov perturbed": lambda c: replace(c, lyapunov=c.lyapunov + _sym(c.params.d, 0, 1, 0.1)),
    "lyapunov None": lambda c: replace(c, lyapunov=None),
    "lyapunov_rhs + I": lambda c: replace(c, lyapunov_rhs=c.lyapunov_rhs + np.eye(c.params.d)),
    "lyapunov_rhs None": lambda c: replace(c, lyapunov_rhs=None),
    "rate 1": lambda c: replace(c, rate=1.0),
    "blowup_time 1": lambda c: replace(c, blowup_time=1.0),
    "theorem psd_marginal": lambda c: replace(c, theorem="psd_marginal"),
    "theorem numerical": lambda c: replace(c, theorem="numerical"),
    "operator set": lambda c: replace(c, operator=np.eye(c.params.d)),
    "blowup_direction set": lambda c: replace(c, blowup_direction=np.eye(c.params.d)[0]),
    "threshold set": lambda c: replace(c, threshold=0.5),
    "horizon set": lambda c: replace(c, horizon=1.0),
    "final_cov set": lambda c: replace(c, final_cov=c.cov0),
    "basin set": lambda c: replace(c, basin=1.0),
    "kantorovich_radius set": lambda c: replace(c, kantorovich_radius=1e-3),
    "bound halved": lambda c: replace(c, bound=c.bound / 2),
    "bound x2": lambda c: replace(c, bound=2 * c.bound),
    "bound x(1 - 1e-6)": lambda c: replace(c, bound=c.bound * (1 - 1e-6)),
    "bound None": lambda c: replace(c, bound=None),
    "Σ0 x2": lambda c: replace(c, cov0=2 * c.cov0),
    "A + 0.1 I": lambda c: replace(c, params=Params(c.params.A + 0.1 * np.eye(c.params.d),
                                                   heads=c.params.heads)),
    "A plus a nilpotent part": lambda c: replace(c, params=Params(
        c.params.A + np.abs(c.params.A).max() * np.diag(np.ones(c.params.d - 1), 1),
        heads=c.params.heads)),
    "head with G ≺ 0": lambda c: _with_heads(c, [(np.eye(c.params.d), np.eye(c.params.d))]),
    "non-scalar head": lambda c: _with_heads(
        c, [(np.diag(np.arange(1.0, c.params.d + 1)), np.eye(c.params.d))]),
}
BOUNDED_TOLERANCES = {
    "lyapunov_rtol 0.5": lambda c: _tol(c, lyapunov_rtol=0.5),
    "semisimple_rtol missing": lambda c: _without(c, "semisimple_rtol"),
    "unknown key": lambda c: _tol(c, made_up_rtol=1e-3),
    "tolerance None": lambda c: replace(c, tolerance=None),
}


def _general(kind):
    p, S0 = random_case(np.random.default_rng(100), kind, 3, perturb=0.3)
    return certify(p, S0)


#: name → (builder, expected (regime, theorem, exact), forgeries)
KINDS = {
    "exact converges": (
        lambda: certify(Params(np.diag([1.0, 2.0]), B=0.5 * np.eye(2), V=-np.eye(2)), np.eye(2)),
        ("converges", "psd_gramian_pd", True),
        {**COMMON, **CONVERGES, **LOCAL, "A negated": _negated_A}),
    "exact collapses below the threshold": (
        lambda: certify(Params(-np.diag([1.0, 2.0]), B=0.5 * np.eye(2), V=np.eye(2)),
                        0.1 * np.eye(2)),
        ("collapses", "nsd_threshold", True),
        {**COMMON, "regime grows": CONVERGES["regime grows"], "rate x10": CONVERGES["rate x10"],
         "rate -1": CONVERGES["rate -1"], "Σ0 x100": EVIDENCE["Σ0 x100"],
         "threshold x2": lambda c: replace(c, threshold=2 * c.threshold),
         "A negated": _negated_A}),
    "exact blows up": (
        lambda: certify(Params(np.diag([1.0, -0.5]), B=np.eye(2), V=np.eye(2)),
                        np.array([[1.0, 0.2], [0.2, 3.0]])),
        ("blows_up", "nsd_unstable_range", True),
        {**COMMON, **BLOWUP}),
    "exact grows": (
        lambda: certify(Params(np.diag([1.0, -1.0]), B=np.diag([0.0, 0.5]), V=-np.eye(2)),
                        np.eye(2)),
        ("grows", "psd_gramian_singular", True),
        {**COMMON, "regime converges": lambda c: replace(c, regime="converges"),
         "rate 1": lambda c: replace(c, rate=1.0), "A negated": _negated_A,
         "theorem psd_hurwitz": lambda c: replace(c, theorem="psd_hurwitz")}),
    "numerical premises converge": (
        lambda: certify(Params(np.diag([1.0, 2.0]), B=0.5 * np.eye(2),
                               V=np.diag([-1.0, -1.0 - 1e-15])), np.eye(2)),
        ("converges", "psd_gramian_pd", False),
        {**COMMON, **CONVERGES, **PREMISE_TOLERANCES, "A negated": _negated_A}),
    "closed-form blow-up": (
        lambda: certify(Params(0.1 * np.eye(2), B=np.diag([-0.5, 0.5]), V=np.eye(2)),
                        np.array([[1.0, 0.3], [0.3, 1.0]])),
        ("blows_up", "closed_form_root", False),
        {**COMMON, **BLOWUP, "blowup_check_rtol 0.5": lambda c: _tol(c, blowup_check_rtol=0.5),
         **TOLERANCES}),
    "numerical grows": (
        lambda: certify(Params(np.diag([1.0, -1.0]), B=np.diag([0.0, 0.5]), V=-np.eye(2)),
                        np.ones((2, 2))),
        ("grows", "numerical", False),
        {**COMMON, **EVIDENCE, **TOLERANCES, "rate x10": lambda c: replace(c, rate=10 * c.rate),
         "regime converges": lambda c: replace(c, regime="converges"),
         "A negated": _negated_A}),
    "general V converges": (
        lambda: _general("opposite-antistable"), ("converges", "numerical", False),
        {**COMMON, **CONVERGES, **LOCAL, **TOLERANCES,
         "basin x100": lambda c: replace(c, basin=100 * c.basin),
         "final_cov x2": EVIDENCE["final_cov x2"], "A negated": _negated_A}),
    "general V collapses (zero sublevel set)": (
        lambda: certify(_stable_48(), np.eye(48)), ("collapses", "numerical", False),
        {**COMMON, **EVIDENCE, **TOLERANCES, "regime grows": CONVERGES["regime grows"],
         "rate x10": CONVERGES["rate x10"], "rate -1": CONVERGES["rate -1"],
         "basin x100": lambda c: replace(c, basin=100 * c.basin), "A negated": _negated_A}),
    "exact bounded (rotation, S = I)": (
        lambda: certify(Params(np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])),
                        np.array([[1.0, 0.2, 0.0], [0.2, 2.0, 0.1], [0.0, 0.1, 0.5]])),
        ("bounded", "lyapunov_stable", True), {**COMMON, **BOUNDED}),
    "exact bounded (integer S = diag(3, 1))": (
        lambda: certify(Params(np.array([[0.0, 1.0], [-3.0, 0.0]])),
                        np.array([[1.0, 0.3], [0.3, 2.0]])),
        ("bounded", "lyapunov_stable", True), {**COMMON, **BOUNDED}),
    "numerical bounded": (
        lambda: certify(Params(np.array([[0.0, -1.0, 0.3], [1.0, 0.0, 0.3], [0.0, 0.0, -1.0]])),
                        np.eye(3) + 0.1),
        ("bounded", "lyapunov_stable", False), {**COMMON, **BOUNDED, **BOUNDED_TOLERANCES}),
    "general V blows up": (
        lambda: _general("same-unstable"), ("blows_up", "numerical", False),
        {**COMMON, **BLOWUP, **TOLERANCES}),
}

_built: dict = {}


def _certificate(kind):
    if kind not in _built:
        _built[kind] = KINDS[kind][0]()
    return _built[kind]


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_genuine_certificate_passes(kind):
    c = _certificate(kind)
    assert (c.regime, c.theorem, c.exact) == KINDS[kind][1], c.reason
    assert c.check(), c.reason
    assert (c.tolerance is None) == c.exact


@pytest.mark.parametrize(("kind", "forgery"),
                         [(k, f) for k, (_, _, fs) in KINDS.items() for f in fs])
def test_a_forged_field_fails_the_check(kind, forgery):
    c = _certificate(kind)
    forged = KINDS[kind][2][forgery](c)
    assert not forged.check()


def test_the_quoted_general_v_blowup_forgeries():
    """A d = 3 layer of two non-scalar heads blowing up: T* halved or × 1.01, Σ0 × 100 (whose
    own T*, found by DOP853, is far from the stated one) and A negated all fail."""
    rng = np.random.default_rng(7)
    d = 3
    A = 0.3 * rng.standard_normal((d, d))
    heads = [(np.eye(d) + 0.3 * np.diag(rng.uniform(-1, 1, d)), np.eye(d) + 0.2 * np.ones((d, d)))
             for _ in range(2)]
    p = Params(A, heads=heads)
    S0 = np.diag([1.0, 0.5, 0.25])
    c = certify(p, S0)
    assert c.regime == "blows_up" and c.theorem == "numerical" and c.check()
    # an independent integration of the forged start blows up elsewhere
    T100 = flow(p, Gaussian(np.zeros(d), 100 * S0), 10 * c.blowup_time, method="rk",
                rtol=1e-12, atol=1e-14).blowup_time
    assert T100 is not None and abs(T100 - c.blowup_time) > 0.1 * c.blowup_time
    for forged in (replace(c, blowup_time=c.blowup_time / 2),
                   replace(c, blowup_time=1.01 * c.blowup_time), replace(c, cov0=100 * S0),
                   _negated_A(c)):
        assert not forged.check()
