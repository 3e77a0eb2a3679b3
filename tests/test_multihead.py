"""Multi-head layers of real shape: valid input is never refused, and the equilibria found on
random heads of rank d/12 are the states the flow itself settles in.

Property (seeded loops, 508 random layers in all: 8 in the default run, 500 marked slow):
on a valid layer (H = 1…12 heads of rank 1…d as `Head` factors or dense pairs, scalar or
general V, A Hurwitz, zero or anti-stable, d = 2…96, mostly small) and a valid Σ0,
`equilibria`, `certify` and `flow` raise no InvalidInputError; a SolverError (a documented
solver limit) is allowed. The verdicts are compared with scipy's DOP853 at tight tolerances.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from riccati_tf import Gaussian, Head, Params, certify, equilibria, flow
from riccati_tf.errors import InvalidInputError, SolverError
from riccati_tf.stability.equilibria import DEFAULT_BUDGET, SearchBudget, equilibrium_search
from riccati_tf.stability.equilibria.newton import newton
from riccati_tf.stability.equilibria.settling import _settled

KINDS = ("hurwitz", "zero", "antistable")


def random_dimension(rng: np.random.Generator, large: bool) -> int:
    """d = 2…8 mostly; 9…32 sometimes; up to 96 when `large`."""
    u = rng.random()
    if u < 0.7 or (not large and u < 0.9):
        return int(rng.integers(2, 9))
    if u < 0.93 or not large:
        return int(rng.integers(9, 33))
    return int(rng.integers(33, 97))


def random_layer(rng: np.random.Generator, large: bool = False) -> tuple[Params, np.ndarray]:
    """A valid layer and a valid Σ0: H = 1…12 heads of rank 1…d (factors or dense pairs; scalar V
    in a quarter of the layers; a third of the general-V layers with V_h PSD-dominant and B_h
    NSD-dominant), A Hurwitz, zero or anti-stable (0.3 I ± noise), Σ0 ≻ 0 or of low rank."""
    d = random_dimension(rng, large)
    H = int(rng.integers(1, 13))
    kind = KINDS[int(rng.integers(3))]
    noise = 0.1 * rng.standard_normal((d, d)) / np.sqrt(d)
    A = {"hurwitz": -0.3 * np.eye(d) + noise, "zero": np.zeros((d, d)),
         "antistable": 0.3 * np.eye(d) + noise}[kind]
    style = rng.random()
    heads: list = []
    for _ in range(H):
        r = int(rng.integers(1, d + 1))

        def w(*shape):
            return rng.standard_normal(shape) / np.sqrt(d)
        if style < 0.25:  # scalar V: V_h = v_h I
            heads.append((float(rng.standard_normal()) * np.eye(d), w(r, d).T @ w(r, d)))
        elif style < 0.5:  # PSD-dominant V_h, NSD-dominant B_h, dense
            U, W = w(d, r), w(d, r)
            heads.append((U @ U.T + 0.1 * w(d, d), -W @ W.T + 0.1 * w(d, d)))
        else:  # i.i.d. factors
            heads.append(Head(w(r, d), w(r, d), w(r, d), w(d, r)))
    X = rng.standard_normal((d, int(rng.integers(1, d + 1)) if rng.random() < 0.3 else d))
    cov0 = float(np.exp(rng.uniform(-2, 2))) * (X @ X.T) / X.shape[1]
    return Params(A, heads=heads), cov0


def assert_not_refused(p: Params, cov0: np.ndarray) -> None:
    """equilibria, certify and flow answer or raise SolverError, never InvalidInputError."""
    calls = (lambda: equilibria(p), lambda: certify(p, cov0),
             lambda: flow(p, Gaussian(np.zeros(p.d), cov0), 1.0))
    for name, call in zip(("equilibria", "certify", "flow"), calls, strict=True):
        try:
            call()
        except InvalidInputError as exc:  # pragma: no cover - the failure being tested
            pytest.fail(f"{name} refused valid input (d = {p.d}, {len(p.heads)} heads): {exc}")
        except SolverError:
            pass


def test_valid_layers_are_never_refused():
    rng = np.random.default_rng(2025)
    for _ in range(8):
        assert_not_refused(*random_layer(rng))


@pytest.mark.long
def test_valid_layers_up_to_d96_are_never_refused():
    rng = np.random.default_rng(96)
    for _ in range(500):
        assert_not_refused(*random_layer(rng, large=True))


def psd_dominant_layer(d: int, seed: int) -> Params:
    """12 heads of rank d/12, A = 0.3 I + noise, V_h PSD-dominant and B_h NSD-dominant: Newton
    iterates of the continuation leave the PSD cone on such layers."""
    rng = np.random.default_rng(seed)
    r = d // 12
    A = 0.3 * np.eye(d) + 0.05 * rng.standard_normal((d, d))
    heads = []
    for _ in range(12):
        U = rng.standard_normal((d, r)) / np.sqrt(d)
        W = rng.standard_normal((d, r)) / np.sqrt(d)
        heads.append((U @ U.T + 0.1 * rng.standard_normal((d, d)) / d,
                      -W @ W.T + 0.1 * rng.standard_normal((d, d)) / d))
    return Params(A, heads=heads)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_internal_iterates_outside_the_cone_are_not_input(seed):
    # these layers raised "cov0 is not positive semidefinite" from inside the continuation
    p = psd_dominant_layer(48, seed)
    for eq in equilibria(p):
        assert np.linalg.eigvalsh(eq.cov)[0] >= -1e-9 * np.linalg.eigvalsh(eq.cov)[-1]
        assert eq.residual <= 1e-9


def dop853_end(p: Params, cov0: np.ndarray, t: float) -> np.ndarray:
    """Σ(t) by scipy's DOP853 on the dense covariance ODE (rtol 1e-12, atol 1e-14)."""
    d = p.d

    def rhs(_t, y):
        S = y.reshape(d, d)
        out = p.A @ S
        for V, B in p.heads:
            out = out + V @ S @ B @ S
        return (out + out.T).ravel()
    sol = solve_ivp(rhs, (0.0, t), cov0.ravel(), method="DOP853", rtol=1e-12, atol=1e-14)
    assert sol.success
    return sol.y[:, -1].reshape(d, d)


def contracting_layer(d: int, seed: int) -> Params:
    """Anti-stable A = I/2 + noise and 12 heads of rank d/12 with V_h = −U_hU_hᵀ − I/12 ≺ 0 and
    B_h = W_hW_hᵀ + I/4 ≻ 0 (general V): the quadratic term pulls Σ back, Σ(t) settles."""
    rng = np.random.default_rng(seed)
    r = max(1, d // 12)
    heads = []
    for _ in range(12):
        U, W = rng.standard_normal((d, r)), rng.standard_normal((d, r))
        heads.append((-U @ U.T / d - np.eye(d) / 12, W @ W.T / d + 0.25 * np.eye(d)))
    return Params(0.5 * np.eye(d) + 0.1 * rng.standard_normal((d, d)) / np.sqrt(d), heads=heads)


@pytest.mark.parametrize("d", [12, pytest.param(24, marks=pytest.mark.slow)])
def test_stable_equilibrium_is_where_dop853_settles(d):
    p = contracting_layer(d, d)
    eqs = equilibria(p)
    assert len(eqs) == 1 and eqs[0].stable and eqs[0].rank == d
    far = dop853_end(p, np.eye(d), 60.0)
    assert np.linalg.norm(far - eqs[0].cov) <= 1e-8 * np.linalg.norm(far)
    # the search's own start, where the rk flow settles, leads Newton to the same Σ*
    start = _settled(p)
    assert start is not None
    got = newton(p, start)
    assert got is not None
    assert np.linalg.norm(far - got[0]) <= 1e-8 * np.linalg.norm(far)


@pytest.mark.parametrize("d", [24, 48])
def test_real_shape_layers_are_answered_within_the_budget(d):
    """benchmarks.multihead's family (12 heads of rank d/12 from i.i.d. Q, K, V, O; A = 0,
    Hurwitz, anti-stable): the search ends within its default budget; A = 0 has no stable
    equilibrium (a theorem: complete), and the Hurwitz layer's stable Σ* = 0 is where DOP853
    goes from Σ0 = I."""
    from benchmarks.multihead import layer

    for kind in ("zero", "hurwitz", "antistable"):
        p = layer(d, kind)
        r = equilibrium_search(p)
        assert not r.undetermined
        assert r.spent.newton_iterations <= DEFAULT_BUDGET.newton_iterations
        assert r.spent.lyapunov_solves <= DEFAULT_BUDGET.lyapunov_solves
        if kind == "zero":
            assert r.equilibria == () and r.complete
        if kind == "hurwitz":
            (eq,) = r.equilibria
            assert eq.stable and not np.any(eq.cov)
            far = dop853_end(p, np.eye(d), 40.0)
            assert np.linalg.norm(far) <= 1e-10 * d


def test_a_small_budget_stops_the_search_with_its_reason():
    p = contracting_layer(20, 3)
    r = equilibrium_search(p, budget=SearchBudget(newton_iterations=2))
    assert r.undetermined and not r.complete and "2 Newton iterations are spent" in r.reason
    assert r.spent.newton_iterations == 3
    full = equilibrium_search(p)
    assert not full.undetermined and len(full.equilibria) == 1
    far = dop853_end(p, np.eye(20), 60.0)
    assert np.linalg.norm(far - full.equilibria[0].cov) <= 1e-8 * np.linalg.norm(far)
