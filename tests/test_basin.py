"""The Lyapunov-basin certificate of a general-V converging flow (certificates.basin) and the
implicit path (stability.stiffpath): the basin's theorem against independent integrations, the
path against scipy's BDF, every field forged, a JSON round trip, and the stabilising-sign family
of real shape (slow)."""

import dataclasses
import json
from dataclasses import replace

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from riccati_tf import Params
from riccati_tf.io.serialize import to_jsonable
from riccati_tf.stability.certificates import basin, stiff
from riccati_tf.stability.equilibria.coords import from_coords, to_coords
from riccati_tf.stability.equilibria.field import F
from riccati_tf.stability.equilibria.settling import implicit_flow
from tests.test_certificates import random_case


def _field(p):
    def rhs(_t, y):
        d = p.d
        return F(p, 0.5 * (y.reshape(d, d) + y.reshape(d, d).T)).ravel()
    return rhs


def _bdf(p, cov0, t, rtol=1e-11):
    """Σ(t) by scipy's BDF on the vectorised d² system (finite-difference Jacobian)."""
    d = p.d
    sol = solve_ivp(_field(p), (0.0, t), cov0.ravel(), method="BDF", rtol=rtol,
                    atol=rtol * float(np.trace(cov0)) / d)
    assert sol.status == 0
    S = sol.y[:, -1].reshape(d, d)
    return 0.5 * (S + S.T)


def _small():
    """A general-V d = 3 layer whose flow converges (V_h not scalar, G ≻ 0 part)."""
    return random_case(np.random.default_rng(100), "opposite-antistable", 3, perturb=0.3)


def _certificate():
    p, S0 = _small()
    base = {"params": p, "cov0": S0, "mean0": np.zeros(3)}
    c = stiff.basin_certificate(p, S0, base, 200.0, 1e12)
    assert c is not None
    return c


@pytest.fixture(scope="module")
def cert():
    return _certificate()


def test_stiff_path_agrees_with_bdf():
    p, S0 = _small()
    run = implicit_flow(p, S0, 5.0, rtol=1e-10, atol=1e-12)
    ref = _bdf(p, S0, 5.0)
    assert run.status == "end"
    assert np.linalg.norm(run.cov - ref) <= 1e-7 * np.linalg.norm(ref)


def test_the_basin_certificate_passes_and_holds(cert):
    assert cert.regime == "converges" and cert.theorem == basin.THEOREM and not cert.exact
    assert cert.check()
    # the flow does go to the certified Σ̂: far past t1 an independent integration ends there
    p = cert.params
    far = _bdf(p, cert.cov0, cert.horizon + 40.0 / cert.rate)
    assert np.linalg.norm(far - cert.equilibrium.cov) <= 1e-7 * np.linalg.norm(far)
    # and the stored path state is within its error estimate of the independent one
    at = _bdf(p, cert.cov0, cert.horizon)
    assert np.linalg.norm(at - cert.final_cov) <= cert.path_error


def test_states_in_the_certified_ball_converge(cert):
    """Random states on the boundary of the certified ball {‖Σ − Σ̂‖_P² = basin} (scaled to
    0.99 of it) flow to Σ̂ under an independent integration: the theorem's claim, sampled."""
    p, P, cov = cert.params, cert.lyapunov, cert.equilibrium.cov
    rng = np.random.default_rng(3)
    radius = np.sqrt(cert.basin)
    for _ in range(4):
        h = rng.standard_normal(P.shape[0])
        h *= 0.99 * radius / np.sqrt(h @ P @ h)
        start = cov + from_coords(h, p.d)
        end = _bdf(p, start, 60.0 / cert.rate, rtol=1e-10)
        assert np.linalg.norm(end - cov) < np.linalg.norm(start - cov) * 1e-3


def test_the_basin_constants_are_consistent(cert):
    p, cov = cert.params, cert.equilibrium.cov
    b = basin.basin_of(p, cov, cert.lyapunov)
    assert b is not None and cert.basin <= b.radius ** 2
    assert b.s_minus < b.radius
    # q below the true λ_min(−(LᵀP + PL)), p₋ ≤ λ_min(P) ≤ λ_max(P) ≤ p₊
    e = np.linalg.eigvalsh(cert.lyapunov)
    assert b.p_min <= e[0] and e[-1] <= b.p_max
    assert b.q <= np.linalg.eigvalsh(cert.lyapunov_rhs)[0]
    # g bounds ‖F(Σ̂)‖_P
    f = to_coords(F(p, cov))
    assert np.sqrt(f @ cert.lyapunov @ f) <= b.g


def _scaled_heads(c, s):
    return replace(c, params=Params(c.params.A, heads=[(s * V, B) for V, B in c.params.heads]))


FORGERIES = {
    "regime grows": lambda c: replace(c, regime="grows"),
    "exact": lambda c: replace(c, exact=True),
    "global": lambda c: replace(c, global_=True),
    "tolerance": lambda c: replace(c, tolerance={**c.tolerance, "path_safety": 1.0}),
    "tolerance missing": lambda c: replace(c, tolerance={"path_rtol": basin.PATH_RTOL}),
    "equilibrium x1.01": lambda c: replace(c, equilibrium=replace(
        c.equilibrium, cov=1.01 * c.equilibrium.cov)),
    "lyapunov negated": lambda c: replace(c, lyapunov=-c.lyapunov),
    "lyapunov x2 (Q kept)": lambda c: replace(c, lyapunov=2 * c.lyapunov),
    "lyapunov_rhs x2": lambda c: replace(c, lyapunov_rhs=2 * c.lyapunov_rhs),
    "operator x2": lambda c: replace(c, operator=2 * c.operator),
    "basin x1e6": lambda c: replace(c, basin=1e6 * c.basin),
    "basin inf": lambda c: replace(c, basin=np.inf),
    "final_cov moved out": lambda c: replace(
        c, final_cov=c.final_cov + 2 * np.sqrt(c.basin / np.linalg.eigvalsh(c.lyapunov)[0])
        * np.eye(c.params.d) / np.sqrt(c.params.d)),
    "path_error x1e8": lambda c: replace(c, path_error=1e8 * c.path_error),
    "path_error tiny (replay)": lambda c: replace(c, path_error=1e-6 * c.path_error),
    "path_error None": lambda c: replace(c, path_error=None),
    "horizon x0.5 (replay)": lambda c: replace(c, horizon=0.5 * c.horizon),
    "rate x2": lambda c: replace(c, rate=2 * c.rate),
    "Σ0 x1e-8 (replay)": lambda c: replace(c, cov0=1e-8 * c.cov0),
    "heads x1.1": lambda c: _scaled_heads(c, 1.1),
    "blowup_time": lambda c: replace(c, blowup_time=1.0),
}


@pytest.mark.parametrize("forgery", list(FORGERIES))
def test_a_forged_field_fails_the_check(cert, forgery):
    forged = FORGERIES[forgery](cert)
    assert not forged.check()


def test_json_round_trip_keeps_the_check(cert):
    fields = {f.name: getattr(cert, f.name) for f in dataclasses.fields(cert)
              if f.name != "params"}  # the layer travels as the caller's own (Params)
    data = json.loads(json.dumps(to_jsonable(fields), allow_nan=False))
    eq = data["equilibrium"]
    back = replace(
        cert, equilibrium=replace(cert.equilibrium, cov=np.array(eq["cov"])),
        lyapunov=np.array(data["lyapunov"]), lyapunov_rhs=np.array(data["lyapunov_rhs"]),
        operator=np.array(data["operator"]), final_cov=np.array(data["final_cov"]),
        cov0=np.array(data["cov0"]), basin=data["basin"], rate=data["rate"],
        horizon=data["horizon"], path_error=data["path_error"], tolerance=data["tolerance"],
        regime=data["regime"], theorem=data["theorem"])
    assert back.check()


