"""flow(): exact closed form against Runge–Kutta, blow-up times, rank invariance (SPEC §3, §5)."""


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import solve_ivp
from scipy.linalg import solve_continuous_lyapunov

import riccati_tf.flows.rk.blowup as rk_blowup
import riccati_tf.flows.rk.constants as rk_constants
import riccati_tf.flows.rk.packing as rk_packing
import riccati_tf.flows.rk.run as rk_run
import riccati_tf.flows.rk.stepper as rk_stepper
import riccati_tf.flows.rk.sundman as rk_sundman
from riccati_tf import Gaussian, Head, Params, flow
from riccati_tf.errors import InvalidInputError, SolverError
from riccati_tf.flows.rk.constants import BLOWUP_EXTRAPOLATION

from .cases import general_params, random_cov, random_gaussian, scalar_v_params


def rel_err(a, b):
    return np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300)


def _case(seed, d):
    rng = np.random.default_rng(seed)
    rank = d if seed % 3 else max(1, d - 1 - seed % d)  # every third case singular
    heads = 1 + seed % 2
    return scalar_v_params(rng, d, heads=heads), random_gaussian(rng, d, rank=rank)


@pytest.mark.parametrize("d", range(1, 9))
@pytest.mark.parametrize("seed", range(3))
def test_exact_and_rk_agree(d, seed):
    p, g = _case(100 * d + seed, d)
    ex = flow(p, g, 2.0, method="exact")
    # near a blow-up Σ grows like 1/(T* − t): rk needs a tight tolerance to resolve it
    rk = flow(p, g, 2.0, method="rk", rtol=1e-12, atol=1e-14)
    assert ex.method == "exact" and rk.method == "rk"
    assert ex.status == rk.status
    k = min(len(ex), len(rk))
    assert abs(len(ex) - len(rk)) <= 1
    np.testing.assert_array_equal(ex.t[:k], rk.t[:k])
    assert rel_err(ex.cov[:k], rk.cov[:k]) <= 1e-8
    assert rel_err(ex.mean[:k], rk.mean[:k]) <= 1e-8
    if ex.status == "blowup":
        assert abs(ex.blowup_time - rk.blowup_time) <= 1e-7 * ex.blowup_time
        # both name the same direction of divergence (up to sign)
        assert abs(abs(ex.blowup_direction @ rk.blowup_direction) - 1) < 1e-6


@pytest.mark.parametrize("d", [2, 4, 8])
def test_blowups_are_exercised_and_agree(rng, d):
    """Equal definiteness (v(B + Bᵀ) ≻ 0, i.e. G ≺ 0) from a full-rank Σ0 blows up."""
    C = rng.standard_normal((d, d))
    p = Params(A=0.3 * rng.standard_normal((d, d)), B=C @ C.T / d + np.eye(d), V=0.5 * np.eye(d),
               b=rng.standard_normal(d))
    g = random_gaussian(rng, d)
    ex = flow(p, g, 10.0, method="exact")
    rk = flow(p, g, 10.0, method="rk")
    assert ex.status == rk.status == "blowup"
    assert abs(ex.blowup_time - rk.blowup_time) <= 1e-7 * ex.blowup_time
    assert np.all(ex.t < ex.blowup_time)


@pytest.mark.parametrize("a, v, b, s0", [(0.5, 1.0, 1.0, 0.3), (-1.0, 0.8, 2.0, 2.0),
                                         (0.0, 1.0, 0.5, 1.0), (2.0, -1.0, -1.0, 0.1)])
def test_scalar_blowup_time_formula(a, v, b, s0):
    """σ̇ = 2aσ + 2vbσ² blows up at t* = ln(1 + r/(kσ0))/r, r = 2a, k = 2vb (r → 0: 1/(kσ0))."""
    r, k = 2 * a, 2 * v * b
    t_star = np.log1p(r / (k * s0)) / r if r else 1 / (k * s0)
    p, g = Params(A=a, B=b, V=v), Gaussian([0.0], [[s0]])
    for method in ("exact", "rk"):
        tr = flow(p, g, 2 * t_star, method=method)
        assert tr.status == "blowup"
        assert abs(tr.blowup_time - t_star) <= 1e-7 * t_star
    assert abs(flow(p, g, 2 * t_star).blowup_time - t_star) <= 1e-10 * t_star


def test_scalar_closed_form_trajectory():
    """σ(t) = σ0 e^{rt} / (1 − kσ0 (e^{rt} − 1)/r) for σ̇ = rσ + kσ² (no blow-up when k < 0)."""
    a, v, b, s0 = 0.7, -1.0, 0.5, 2.0
    r, k = 2 * a, 2 * v * b
    tr = flow(Params(A=a, B=b, V=v), Gaussian([0.0], [[s0]]), 4.0)
    e = np.exp(r * tr.t)
    expected = s0 * e / (1 - k * s0 * (e - 1) / r)
    assert rel_err(tr.cov[:, 0, 0], expected) < 1e-13
    assert tr.status == "completed" and tr.method == "exact"


@pytest.mark.parametrize("d, r", [(3, 1), (4, 2), (6, 3)])
def test_rank_is_invariant_along_flows(rng, d, r):
    p = scalar_v_params(rng, d)
    g = Gaussian(rng.standard_normal(d), random_cov(rng, d, rank=r))
    for method in ("exact", "rk"):
        tr = flow(p, g, 1.0, method=method)
        for S in tr.cov:
            eig = np.linalg.eigvalsh(S)
            assert np.sum(eig > 1e-7 * eig[-1]) == r
    tr = flow(general_params(rng, d), g, 1.0)
    assert tr.method == "rk"
    assert all(np.sum(np.linalg.eigvalsh(S) > 1e-7 * np.linalg.eigvalsh(S)[-1]) == r
               for S in tr.cov)


def test_zero_covariance_stays_zero_and_mean_is_linear(rng):
    d = 3
    p = scalar_v_params(rng, d)
    g = Gaussian(rng.standard_normal(d), np.zeros((d, d)))
    tr = flow(p, g, 1.0, t_eval=[0.0, 1.0])
    assert np.all(tr.cov == 0)
    from scipy.linalg import expm
    K = p.A + sum(p.value_scalars) * np.eye(d)
    blk = np.zeros((d + 1, d + 1))
    blk[:d, :d], blk[:d, d] = K, p.b
    expected = (expm(blk) @ np.append(g.mean, 1.0))[:d]
    assert rel_err(tr.mean[-1], expected) < 1e-12


def test_time_varying_controls_use_rk(rng):
    d = 2
    p0, p1 = general_params(rng, d), general_params(rng, d)
    g = random_gaussian(rng, d)
    tr = flow(lambda t: p0 if t < 0.5 else p1, g, 1.0, t_eval=[0.0, 0.5, 1.0])
    assert tr.method == "rk"
    first = flow(p0, g, 0.5, t_eval=[0.0, 0.5])
    second = flow(p1, first.gaussian(-1), 0.5, t_eval=[0.0, 0.5])
    assert rel_err(tr.cov[-1], second.cov[-1]) < 1e-6
    with pytest.raises(InvalidInputError, match="time-invariant"):
        flow(lambda t: p0, g, 1.0, method="exact")


def test_auto_picks_exact_only_for_scalar_values(rng):
    g = random_gaussian(rng, 3)
    assert flow(scalar_v_params(rng, 3), g, 0.5).method == "exact"
    assert flow(general_params(rng, 3), g, 0.5).method == "rk"
    with pytest.raises(InvalidInputError, match="scalar value matrices"):
        flow(general_params(rng, 3), g, 0.5, method="exact")


@pytest.mark.parametrize("kwargs, message", [
    ({"t_final": -1.0}, "positive"),
    ({"t_final": np.nan}, "finite"),
    ({"t_final": 1.0, "t_eval": [0.0, 2.0]}, r"\[0, t_final\]"),
    ({"t_final": 1.0, "t_eval": [0.5, 0.2]}, "increasing"),
    ({"t_final": 1.0, "method": "euler"}, "method"),
    ({"t_final": 1.0, "rtol": 0.0}, "rtol"),
    ({"t_final": "1"}, "real number"),
])
def test_flow_rejects_bad_input(rng, kwargs, message):
    with pytest.raises(InvalidInputError, match=message):
        flow(scalar_v_params(rng, 2), random_gaussian(rng, 2), **kwargs)


def test_flow_rejects_bad_params_objects(rng):
    with pytest.raises(InvalidInputError, match="Params"):
        flow({"A": 1}, random_gaussian(rng, 1), 1.0)
    with pytest.raises(InvalidInputError, match="dimension mismatch"):
        flow(scalar_v_params(rng, 3), random_gaussian(rng, 2), 1.0)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 5), method=st.sampled_from(["exact", "rk"]))
def test_flows_keep_covariances_symmetric_psd(seed, d, method):
    rng = np.random.default_rng(seed)
    p = scalar_v_params(rng, d)
    g = random_gaussian(rng, d, rank=int(rng.integers(0, d + 1)))
    try:
        tr = flow(p, g, 1.0, method=method, t_eval=np.linspace(0, 1, 11))
    except SolverError as exc:  # the documented refusal: t_final just before a blow-up
        assert method == "rk" and "of a blow-up at T*" in str(exc)
        T = flow(p, g, 2.0, method="exact").blowup_time
        assert T is not None and 1.0 < T and 1e-10 * T / (T - 1.0) > 1e-6
        return
    for S in tr.cov:
        assert np.all(np.isfinite(S)) and np.array_equal(S, S.T)
        eig = np.linalg.eigvalsh(S)
        assert eig[0] >= -1e-9 * max(eig[-1], 1.0)


# --------------------------------------------------------------------------- hardening


def test_exact_long_output_interval_is_finite_and_settles():
    """One output interval of length 800 (A = 0.5I): was NaN with status "completed"."""
    p = Params(A=0.5 * np.eye(2), B=np.eye(2), V=-np.eye(2))
    S0 = np.array([[1.0, 0.3], [0.3, 0.5]])
    for mean in ([0.0, 0.0], [1.0, 0.0]):
        tr = flow(p, Gaussian(mean, S0), 800, t_eval=[0, 800])
        assert tr.status == "completed"
        assert rel_err(tr.cov[-1], 0.5 * np.eye(2)) < 1e-14 and np.all(tr.mean[-1] == 0)


def test_rk_has_a_work_budget(rng):
    p = general_params(rng, 2)
    g = random_gaussian(rng, 2)
    with pytest.raises(SolverError, match="max_steps = 5"):
        flow(p, g, 50.0, method="rk", max_steps=5)
    # refused up front, before a step (explicit stability alone needs ~t_final·2ρ(A)/8 steps):
    # "needs at least about" is said only then; a spent budget says "used its budget"
    with pytest.raises(SolverError, match="needs at least about"):
        flow(Params(A=-0.5 * np.eye(2), B=np.eye(2), V=-np.eye(2)), g, 1e12, method="rk")
    for bad in (0, 2.5, True, "10"):
        with pytest.raises(InvalidInputError, match="max_steps"):
            flow(p, g, 1.0, max_steps=bad)


def test_exact_stable_layer_over_1e12_finishes_quickly():
    A = np.array([[-0.5, 0.3], [-0.2, -0.8]])
    p = Params(A=A, B=np.array([[1.0, 0.2], [0.2, 0.5]]), V=-np.eye(2), b=[0.3, -0.1])
    # quickly: in at most 200 steps (it takes 46), a count of work, not a time
    tr = flow(p, Gaussian([1.0, 2.0], np.eye(2)), 1e12, method="exact", max_steps=200)
    assert np.all(tr.cov[-1] == 0)
    assert rel_err(tr.mean[-1], -np.linalg.solve(A - np.eye(2), p.b)) < 1e-13


@pytest.mark.parametrize("method", ["exact", "rk"])
def test_blowup_after_t_final_is_no_blowup(method):
    """t_final just below T*: never "blowup" at a time after t_final, never the end state
    dropped — the state at t_final, or SolverError when it is too close to T* to vouch for."""
    a, v, b, s0 = 0.5, 1.0, 1.0, 0.3
    r, k = 2 * a, 2 * v * b
    T = np.log1p(r / (k * s0)) / r
    p, g = Params(A=a, B=b, V=v), Gaussian([0.0], [[s0]])
    for gap in (1e-3, 1e-9):
        try:
            tr = flow(p, g, T - gap, method=method)
        except SolverError as exc:
            assert gap < 1e-3 and "blow-up" in str(exc)
            continue
        assert tr.status == "completed" and tr.t[-1] == T - gap
        e = np.exp(r * (T - gap))
        assert rel_err(tr.cov[-1, 0, 0], s0 * e / (1 - k * s0 * (e - 1) / r)) < 1e-6
    tr = flow(p, g, T + 1e-6, method=method)
    assert tr.status == "blowup" and tr.blowup_time <= T + 1e-6
    assert tr.blowup_kind == "singularity"


@pytest.mark.parametrize("method", ["exact", "rk"])
def test_tiny_variance_along_an_unstable_direction_is_kept(method):
    """Σ0 = diag(1, 1e-16), A = diag(−1, 5), G = −2I: T* = ln(5e16)/10 = 3.845 (exact gave
    Σ22(5) = 0; rk's absolute tolerance lost the 1e-16 variance, T* = 3.91)."""
    tr = flow(Params(A=np.diag([-1.0, 5.0]), B=np.eye(2), V=np.eye(2)),
              Gaussian([0, 0], np.diag([1.0, 1e-16])), 5, method=method)
    T = np.log(1 + 10 / 2e-16) / 10
    assert tr.status == "blowup"
    assert abs(tr.blowup_time - T) <= (1e-12 if method == "exact" else 1e-7) * T


def test_exact_finds_blowups_driven_by_rounding_level_diagonal_g():
    eps = 1e-13
    tr = flow(Params(A=np.eye(2), B=np.diag([1.0, -eps]), V=-0.5 * np.eye(2)),
              Gaussian([0, 0], np.eye(2)), 20.0, method="exact")
    T = 0.5 * np.log1p(2 / eps)
    assert tr.status == "blowup" and abs(tr.blowup_time - T) < 1e-12 * T


def test_huge_entries_end_in_a_clean_error_or_a_finite_answer():
    big = Params(A=1e150 * np.eye(2), B=np.eye(2), V=-np.eye(2))
    g = Gaussian([1.0, 0.0], np.array([[1.0, 0.3], [0.3, 0.5]]))
    for method in ("exact", "rk"):
        with pytest.raises(SolverError):
            flow(big, g, 1.0, method=method)
    tri = Params(A=np.array([[1e150, 1.0], [0.0, -1e150]]), B=np.eye(2), V=-np.eye(2))
    tr = flow(tri, Gaussian([0, 0], np.eye(2)), 1.0, method="exact", max_steps=500)  # takes 109
    assert abs(tr.cov[-1, 0, 0] / 1e150 - 1) < 1e-12 and np.all(np.isfinite(tr.cov))


def test_overflow_is_a_solver_error_never_a_completed_nan():
    g = Gaussian([1.0, 0.0], np.eye(2))
    for method in ("exact", "rk"):
        with pytest.raises(SolverError):
            flow(Params(A=np.eye(2)), g, 800.0, method=method)


def test_final_guard_refuses_non_finite_results(monkeypatch):
    from riccati_tf.flows import integrate as flows

    real = flows.exact_flow

    def broken(*args, **kwargs):
        res = real(*args, **kwargs)
        res.cov[-1, 0, 0] = np.nan
        return res

    monkeypatch.setattr(flows, "exact_flow", broken)
    with pytest.raises(SolverError, match="non-finite"):
        flow(Params(A=-np.eye(2), B=np.eye(2), V=-np.eye(2)), Gaussian([0, 0], np.eye(2)), 1.0)


@pytest.mark.parametrize("fn, fragment", [
    (lambda t: Params(A=np.eye(3)) if t > 0.5 else Params(A=np.eye(2)), r"R\^3"),
    (lambda t: None if t > 0.3 else Params(A=np.eye(2)), "NoneType"),
    (lambda t: 1 / 0 if t > 0.3 else Params(A=np.eye(2)), "ZeroDivisionError"),
])
def test_time_varying_callables_are_validated_at_every_time(fn, fragment):
    with pytest.raises(InvalidInputError, match=fragment) as info:
        flow(fn, Gaussian([0, 0], np.eye(2)), 1.0)
    assert "params(t)" in str(info.value) and "t = " in str(info.value)


def test_time_varying_nan_parameters_are_refused():
    bad = Params(A=np.eye(2))
    bad.A.setflags(write=True)
    bad.A[0, 0] = np.nan
    with pytest.raises(InvalidInputError, match=r"params\(t\).*NaN"):
        flow(lambda t: bad if t > 0.2 else Params(A=np.eye(2)), Gaussian([0, 0], np.eye(2)), 1.0)
    with pytest.raises(InvalidInputError, match="NaN"):
        flow(bad, Gaussian([0, 0], np.eye(2)), 1.0)


def test_moment_rhs_overflow_is_a_solver_error():
    from riccati_tf import moment_rhs
    with pytest.raises(SolverError, match="overflows"):
        moment_rhs(Params(A=1e150 * np.eye(2), B=1e200 * np.eye(2), V=1e200 * np.eye(2)),
                   Gaussian([0, 0], np.eye(2)))


def test_rk_refuses_a_right_hand_side_that_overflows_at_the_start():
    # VΣBΣ beyond float64 at Σ0, heads dense or factored (whose pair is finite): refused at
    # t = 0 by name, not after DOP853 has spent its budget on a NaN step size ("by t = nan")
    rng = np.random.default_rng(3)
    d = 4
    Q, K, V = (rng.standard_normal((2, d)) for _ in range(3))
    O = rng.standard_normal((d, 2))
    layers = [Params(A=-np.eye(d), heads=[(1e200 * O @ V, 1e200 * K.T @ Q)]),
              Params(A=-np.eye(d), heads=[Head(1e100 * Q, 1e100 * K, 1e100 * V, 1e100 * O)])]
    for p in layers:
        with pytest.raises(SolverError, match="overflows float64 at t = 0"):
            flow(p, Gaussian(np.zeros(d), np.eye(d)), 1.0, method="rk")


@pytest.mark.parametrize("scale", [1e10, 1e40, 1e75])
def test_rk_blowup_time_at_any_time_scale(scale):
    # V = sI, B = sB1: T* = T*(1)/s² (A = −I is negligible); rk integrates in a power-of-two
    # time unit, else solve_ivp's absolute event tolerance (4 eps) cannot resolve T* ≈ 1e-21
    # (it raised "`ts` must be strictly increasing" at s = 1e10)
    rng = np.random.default_rng(0)
    d = 4
    X = rng.standard_normal((d, d))
    p = Params(A=-np.eye(d), B=scale * X @ X.T / d, V=scale * np.eye(d))
    g = Gaussian(np.zeros(d), np.eye(d))
    rk, exact = flow(p, g, 1.0, method="rk"), flow(p, g, 1.0, method="exact")
    assert rk.status == exact.status == "blowup"
    assert rk.blowup_time == pytest.approx(exact.blowup_time, rel=1e-8)


def test_rk_refuses_a_rate_beyond_float64():
    # ‖f‖/‖y‖ ≈ 4e607 at the start (finite f, tiny Σ0; a schedule, so no up-front stiffness
    # estimate): no time unit brings it into range — a SolverError naming the rate
    with pytest.raises(SolverError, match="starting rate"):
        flow(lambda t: Params(A=1e307 * np.eye(2)), Gaussian([0, 0], 1e-300 * np.eye(2)), 1.0,
             method="rk")


def test_rk_dense_output_of_a_fast_layer():
    # rates ≈ 1e8 (beyond rk.constants.RK_RATE_MAX): the continuous extension, kept in the time
    # unit, still gives Σ(t) and m(t) between the output times
    rng = np.random.default_rng(1)
    d, s = 3, 1e8
    X = rng.standard_normal((d, d))
    p = Params(A=s * (np.triu(np.ones((d, d)), 1) - np.eye(d)), B=-s * X @ X.T / d,
               V=np.eye(d), b=s * np.ones(d))
    g = Gaussian(np.ones(d), np.eye(d))
    state = flow(p, g, 3 / s, method="rk")(1.55 / s)
    ref = flow(p, g, 1.55 / s, t_eval=[0.0, 1.55 / s], method="exact")
    assert rel_err(state.cov, ref.cov[-1]) < 1e-9 and rel_err(state.mean, ref.mean[-1]) < 1e-9


def test_rk_stiffness_refusal_uses_the_spectrum_not_the_norm_bound():
    """‖A‖_F ≫ ρ(A) (a large nilpotent part): the Frobenius bound alone would refuse, the
    spectral radius does not; a genuinely stiff A is refused up front."""
    d = 4
    A = -0.1 * np.eye(d) + np.diag([1e4] * (d - 1), 1)  # ρ(A) = 0.1, ‖A‖_F ≈ 1.7e4
    g = Gaussian(np.zeros(d), 1e-8 * np.eye(d))
    tr = flow(Params(A), g, 1.0, method="rk", max_steps=1000, t_eval=[0.0, 1.0])
    assert tr.status == "completed"
    with pytest.raises(SolverError, match="needs at least about"):
        flow(Params(-1e5 * np.eye(d)), g, 1.0, method="rk", max_steps=1000)


def test_rk_output_is_exactly_symmetric_and_centred_mean_is_zero(rng):
    """The covariances returned are symmetric to the bit; with m0 = b = 0 the mean is exactly 0
    and the states agree with those of the full (m, Σ) integration in t of the same layer as a
    callable (the layer's own run crosses towards its pole in Sundman's time) to within the
    tolerance."""
    p = general_params(rng, 5, heads=2)
    p0 = Params(p.A, heads=p.heads)
    g = Gaussian(np.zeros(5), random_cov(rng, 5))
    a = flow(p0, g, 1.0, method="rk")
    b = flow(lambda t: p0, g, 1.0, method="rk")  # a callable integrates (m, Σ)
    ref = flow(p0, g, 1.0, method="rk", rtol=1e-13, atol=1e-15)
    assert a.status == b.status == ref.status == "blowup"
    assert np.array_equal(a.cov, np.swapaxes(a.cov, 1, 2)) and not np.any(a.mean)
    assert np.array_equal(a.t, b.t) and np.array_equal(a.t, ref.t)
    # Σ ~ 1/(T* − t): an error rtol·T* in the time is rtol·T*/(T* − t) relative in the state
    T = ref.blowup_time
    for tr in (a, b):
        err = np.linalg.norm(tr.cov - ref.cov, axis=(1, 2)) / np.linalg.norm(ref.cov, axis=(1, 2))
        assert np.all(err * (T - a.t) / T < 10 * 1e-10), np.max(err * (T - a.t) / T)


@pytest.fixture
def sundman_runs(monkeypatch):
    """The list that gets one entry per Sundman run of rk (rk.sundman._sundman_solve)."""
    runs = []
    original = rk_sundman._sundman_solve
    monkeypatch.setattr(rk_run, "_sundman_solve", lambda *a: runs.append(1) or original(*a))
    return runs


def _counted(monkeypatch):
    """The list that gets one entry per right-hand-side evaluation of rk (the functions made
    by rk.run._rk_rhs)."""
    calls = []
    original = rk_run._rk_rhs

    def counting(*args, **kwargs):
        rhs = original(*args, **kwargs)
        return lambda t, y: calls.append(1) or rhs(t, y)

    monkeypatch.setattr(rk_run, "_rk_rhs", counting)
    return calls


@pytest.mark.parametrize("d", [1, 3, 6])
def test_rk_crosses_the_pole_in_sundman_time(rng, d, monkeypatch, sundman_runs):
    # G ≺ 0 from a full-rank Σ0: a blow-up. rk goes on in Sundman's time σ
    # (dt/dσ = s_ref/tr Σ) from the trace's first doubling: T*, the blow-up direction and
    # every output before T* (mean included) agree with the closed form, with fewer than half
    # the right-hand-side evaluations of stepping in t through the pole
    C = rng.standard_normal((d, d))
    p = Params(A=0.3 * rng.standard_normal((d, d)), B=C @ C.T / d + np.eye(d), V=0.5 * np.eye(d),
               b=rng.standard_normal(d))
    g = random_gaussian(rng, d)
    ex = flow(p, g, 10.0, method="exact")
    T = ex.blowup_time
    calls = _counted(monkeypatch)
    rk = flow(p, g, 10.0, method="rk", dense_output=False)
    assert rk.status == "blowup" and sundman_runs
    assert abs(rk.blowup_time - T) <= 1e-8 * T
    assert abs(abs(ex.blowup_direction @ rk.blowup_direction) - 1) < 1e-6
    np.testing.assert_array_equal(rk.t, ex.t)
    for k, t in enumerate(ex.t):
        amplification = T / (T - t)
        assert rel_err(rk.cov[k], ex.cov[k]) <= 1e-8 * amplification
        assert rel_err(rk.mean[k], ex.mean[k]) <= 1e-8 * amplification
    monkeypatch.setattr(rk_blowup, "SUNDMAN_SHARE", np.inf)  # never switch: stepping in t
    n_sigma = len(calls)
    rk_t = flow(p, g, 10.0, method="rk", dense_output=False)
    in_t = calls[n_sigma:]
    calls = calls[:n_sigma]
    assert abs(rk_t.blowup_time - T) <= 1e-8 * T
    assert len(calls) < 0.5 * len(in_t)


def test_rk_sundman_run_ends_at_t_final_before_a_blowup(sundman_runs):
    # t_final just below T* (σ̇ = 2aσ + 2vbσ² in d = 1): the Sundman run stops at t = t_final,
    # returns the state there and every output before it
    a, v, b, s0 = 0.5, 1.0, 1.0, 0.3
    r, k = 2 * a, 2 * v * b
    T = np.log1p(r / (k * s0)) / r
    p, g = Params(A=a, B=b, V=v), Gaussian([0.0], [[s0]])
    t_out = np.linspace(0.0, T - 1e-3, 41)
    tr = flow(p, g, T - 1e-3, method="rk", t_eval=t_out, dense_output=False)
    assert tr.status == "completed" and sundman_runs
    np.testing.assert_array_equal(tr.t, t_out)
    e = np.exp(r * t_out)
    exact = s0 * e / (1 - k * s0 * (e - 1) / r)
    assert np.all(np.abs(tr.cov[:, 0, 0] - exact) <= 1e-7 * exact * T / (T - t_out))


def test_rk_without_dense_output_agrees_with_the_closed_form_on_random_layers(sundman_runs):
    # scalar-V layers with rotations and indefinite G, d = 1..4: trace growth that blows up,
    # and growth that turns into decay once Σ rotates into G's positive directions — both
    # through Sundman runs. Status, T* and every output agree with the exact flow (outputs to
    # 1e-6 relative times Σ's conditioning T*/(T* − t) near a blow-up; the rest is the
    # absolute tolerance's share of entries that decay)
    rng = np.random.default_rng(7)
    kinds = set()
    for _ in range(100):
        d = int(rng.integers(1, 5))
        J = rng.standard_normal((d, d))
        J = J - J.T
        A = (rng.uniform(-1, 0.5) * np.eye(d) + rng.uniform(0, 10) * J / max(1, np.linalg.norm(J))
             + 0.3 * rng.standard_normal((d, d)))
        S = rng.standard_normal((d, d))
        p = Params(A, B=rng.uniform(0.2, 3) * (S + S.T) / 2,
                   V=rng.choice([-1.0, 1.0]) * rng.uniform(0.2, 2) * np.eye(d),
                   b=rng.standard_normal(d))
        X = rng.standard_normal((d, d))
        g = Gaussian(rng.standard_normal(d), X @ X.T * rng.uniform(0.1, 5))
        ex = flow(p, g, 5.0, method="exact")
        before = len(sundman_runs)
        rk = flow(p, g, 5.0, method="rk", dense_output=False)
        kinds.add((len(sundman_runs) > before, ex.status))
        assert rk.status == ex.status
        T = ex.blowup_time if ex.status == "blowup" else np.inf
        if ex.status == "blowup":
            assert abs(rk.blowup_time - T) <= 1e-7 * T
        np.testing.assert_array_equal(rk.t, ex.t)
        for k, t in enumerate(ex.t):
            scale = T / (T - t) if np.isfinite(T) else 1.0
            assert rel_err(rk.mean[k], ex.mean[k]) <= 1e-6 * scale
            assert np.max(np.abs(rk.cov[k] - ex.cov[k])) <= (
                1e-6 * scale * np.abs(ex.cov[k]).max() + 1e-9 * np.abs(ex.cov[0]).max())
    assert {(True, "blowup"), (False, "completed")} <= kinds


def test_rk_sundman_run_through_growth_that_turns_into_decay(sundman_runs):
    # G indefinite and A rotating: tr Σ grows ~50-fold under the quadratic term (a Sundman run
    # from its doubling on), then Σ turns into G's positive direction and decays; the run
    # completes, and every output agrees with the closed form
    p = Params([[-1.0113, 2.4678], [-2.9591, -0.919]], B=[[-1.1424, 2.7073], [2.7073, -0.3777]],
               V=0.67 * np.eye(2), b=[0.15, -0.45])
    g = Gaussian([0.2, -1.0], [[2.3, 0.5], [0.5, 1.7]])
    ex = flow(p, g, 5.0, method="exact")
    rk = flow(p, g, 5.0, method="rk", dense_output=False)
    trace = np.trace(ex.cov, axis1=1, axis2=2)
    assert rk.status == ex.status == "completed" and sundman_runs
    assert trace.max() > 20 * trace[0] and trace[-1] < 0.1 * trace.max()
    np.testing.assert_array_equal(rk.t, ex.t)
    assert rel_err(rk.cov, ex.cov) <= 1e-8 and rel_err(rk.mean, ex.mean) <= 1e-8


@pytest.mark.parametrize("t_final", [1e50, 1e100, 1e300, np.finfo(float).max])
def test_exact_converging_layers_reach_any_horizon(t_final):
    """Horizons beyond 1e40 failed with "the mean grows past the floating-point range ...
    α(K) = −1": scipy's expm of the settled drift K·τ (K Hurwitz, τ = 1e50) is not finite for
    non-normal K. The README's converging layer with a bias, and a collapsing layer with a
    non-normal A: Σ(t_final) = Σ* = P*⁻¹ (AᵀP* + P*A = G) resp. 0, m(t_final) = −K⁻¹b."""
    p = Params(A=0.5 * np.eye(2) + np.array([[0.0, 0.3], [-0.1, 0.0]]), B=np.eye(2),
               V=-np.eye(2), b=[0.4, -0.2])
    tr = flow(p, Gaussian([1.0, 0.0], [[1.0, 0.3], [0.3, 0.5]]), t_final)
    star = np.linalg.inv(solve_continuous_lyapunov(p.A.T, p.G))
    assert tr.status == "completed" and rel_err(tr.cov[-1], star) < 1e-12
    K = p.A - np.eye(2) - star
    assert rel_err(tr.mean[-1], -np.linalg.solve(K, p.b)) < 1e-12
    A = np.array([[-0.5, 2.0], [0.0, -0.3]])
    p = Params(A=A, B=np.array([[1.0, 0.2], [0.2, 0.5]]), V=-np.eye(2), b=[1.0, -1.0])
    tr = flow(p, Gaussian([1.0, 2.0], [[1.0, 0.3], [0.3, 0.5]]), t_final, t_eval=[0, t_final])
    assert np.all(tr.cov[-1] == 0)
    assert rel_err(tr.mean[-1], -np.linalg.solve(A - np.eye(2), p.b)) < 1e-13


def test_exact_mean_growth_names_a_nonnegative_abscissa():
    """Scalar heads with Σ* = 2aI/g: K = A + vI + vΣ*B = vI, so v = 0.5 > 0 makes the mean grow
    like e^{t/2} once Σ settles; past 1e308 the error names α(K) = 0.5 ≥ 0 (growth), and a
    decaying mean (α < 0) is never reported as growth."""
    p = Params(A=np.eye(2), B=-np.eye(2), V=0.5 * np.eye(2))
    with pytest.raises(SolverError, match=r"α\(K\) = 0\.5 ≥ 0 .*exponential growth"):
        flow(p, Gaussian([1.0, 0.0], np.eye(2)), 1e4, method="exact")
    tr = flow(p, Gaussian([1.0, 0.0], np.eye(2)), 100.0, t_eval=[90.0, 100.0], method="exact")
    assert rel_err(tr.mean[-1], np.exp(5.0) * tr.mean[0]) < 1e-12  # settled: ṁ = m/2


# --- the pole stop of rk without dense output (rk.sundman._PoleWatch) ------------------------

def _pole_checks(tr, T, rtol):
    """The stop's claims against the true T*: a blow-up, T* inside (t_reached, T_upper] up to
    the integration's error, the extrapolation bound u = T_upper − blowup_time within the
    requested tolerance, the reported time within u plus the integration's error (DOP853's
    global error, a few rtol·T* with the steps loosened towards the pole: 10 rtol·T* allowed on
    either side)."""
    assert tr.status == "blowup" and tr.blowup_kind == "singularity"
    lo, hi = tr.blowup_bracket
    u = hi - tr.blowup_time
    assert lo - 10 * rtol * T < T <= hi + 10 * rtol * T
    # the pole stop's u ≤ rtol·T, or (tr Σ reached 1e8 times its start first) the blow-up
    # event's u = BLOWUP_EXTRAPOLATION of the remaining time
    assert 0 < u <= max(rtol * tr.blowup_time, BLOWUP_EXTRAPOLATION * (hi - lo))
    assert abs(tr.blowup_time - T) <= u + 10 * rtol * T
    return lo, u


@pytest.mark.parametrize("s0", [0.3, 1.0, 7.0])
def test_rk_pole_stop_on_the_scalar_riccati_pole(s0, sundman_runs):
    """σ̇ = 2σ² (A = 0, V = B = 1): 1/σ = 1/σ0 − 2t is linear, so Newton's T_k = t_k + σ/σ̇ is
    exact, T* = 1/(2σ0): the run stops as soon as the estimates span a POLE_SPAN-fold fall of
    the remaining time, far before the 1e8-fold growth of the blow-up event."""
    T = 1 / (2 * s0)
    tr = flow(Params(0.0, B=1.0, V=1.0), Gaussian([0.0], [[s0]]), 2 * T, method="rk",
              dense_output=False)
    lo, _ = _pole_checks(tr, T, 1e-10)
    assert sundman_runs
    assert T / (T - lo) < 1e3  # σ(lo)/σ0: the growth where it stopped


def _rotated_riccati(seed, d=4):
    """Σ̇ = AΣ + ΣAᵀ + 2vΣBΣ with A = Q diag(a) Qᵀ, B = Q diag(b) Qᵀ, Σ0 = Q diag(σ0) Qᵀ: d
    scalar Riccatis σ̇ = 2aσ + kσ², k = 2vb, in the rotated basis, T* = min over those that
    blow up of ln(1 + 2a/(kσ0))/(2a), evaluated in mpmath."""
    import mpmath

    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.standard_normal((d, d)))[0]
    a, b = rng.uniform(-1, 1, d), rng.uniform(0.2, 2, d)
    s0, v = rng.uniform(0.2, 3, d), 0.7
    rot = lambda x: (Q * x) @ Q.T  # noqa: E731
    p = Params(rot(a), B=rot(b), V=v * np.eye(d), b=rng.standard_normal(d))
    g = Gaussian(rng.standard_normal(d), rot(s0))
    with mpmath.workdps(40):
        times = []
        for ai, bi, si in zip(a, b, s0, strict=True):
            r, k = 2 * mpmath.mpf(ai), 2 * v * mpmath.mpf(bi)
            x = r / (k * si)
            if x > -1:  # σ reaches the pole (x ≤ −1: it settles at −r/k)
                times.append(mpmath.log1p(x) / r)
        return p, g, float(min(times))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("rtol", [1e-6, 1e-10])
def test_rk_pole_stop_against_the_closed_form(seed, rtol, sundman_runs):
    """Rotated decoupled Riccati flows (mpmath T*), the mean integrated too: the stop's bracket
    holds, at rtol 1e-6 and 1e-10."""
    p, g, T = _rotated_riccati(seed)
    tr = flow(p, g, 2 * T, method="rk", rtol=rtol, dense_output=False)
    _pole_checks(tr, T, rtol)
    assert sundman_runs


def _dop853_blowup(p, cov0, t_max, growth=1e8):
    """T* of the covariance flow by solve_ivp's DOP853 at rtol 1e-12 in t, the event at
    tr Σ = growth·tr Σ0 and T* = t + tr Σ / tr Σ̇ there (written out without the package)."""
    d = cov0.shape[0]

    def field(S):
        M = p.A + sum(V @ S @ B for V, B in p.heads)
        return M @ S + S @ M.T

    def grown(_t, y):
        return np.trace(y.reshape(d, d)) - growth * np.trace(cov0)
    grown.terminal, grown.direction = True, 1
    sol = solve_ivp(lambda _t, y: field(y.reshape(d, d)).ravel(), (0.0, t_max), cov0.ravel(),
                    method="DOP853", rtol=1e-12, atol=1e-14, events=grown)
    if sol.status != 1:
        return np.inf
    S = sol.y_events[0][0].reshape(d, d)
    return float(sol.t_events[0][0] + np.trace(S) / np.trace(field(S)))


def test_rk_pole_stop_on_random_general_v_layers(sundman_runs):
    """Multi-head layers with general V_h (no closed form), d = 3..8: where DOP853 at rtol 1e-12
    finds a blow-up before the horizon, rk without dense output reports it inside its bracket
    (at rtol 1e-7 and 1e-10); where it finds none, rk reports none. Layers on which rk spends
    its budget (max_steps 2000; Σ growing along a degenerate direction, as before the pole stop)
    claim nothing and are counted out."""
    rng = np.random.default_rng(11)
    seen = []
    for _ in range(24):
        d = int(rng.integers(3, 9))
        heads = [(rng.standard_normal((d, d)) / np.sqrt(d),
                  rng.standard_normal((d, d)) / np.sqrt(d)) for _ in range(int(rng.integers(1, 4)))]
        p = Params(0.5 * rng.standard_normal((d, d)) / np.sqrt(d), heads=heads)
        g = Gaussian(np.zeros(d), random_cov(rng, d))
        T = None  # the reference, integrated once per layer when a run needs it
        for rtol in (1e-7, 1e-10):
            try:
                tr = flow(p, g, 5.0, method="rk", rtol=rtol, dense_output=False, max_steps=2000)
            except SolverError as exc:
                assert "budget" in str(exc)
                continue
            T = _dop853_blowup(p, g.cov, 5.0) if T is None else T
            seen.append(np.isfinite(T))
            if np.isfinite(T):
                _pole_checks(tr, T, rtol)
            else:
                assert tr.status == "completed" and tr.blowup_bracket is None
    assert sum(seen) >= 30


def test_sundman_tolerance_loosens_towards_the_pole_as_t_star_allows():
    """The tolerance schedule towards a pole (rk.constants.SUNDMAN_LOOSEN_MAX): on random real-shape
    multi-head layers (12 factored heads of rank 2, A = 0 or anti-stable), each power q of the
    schedule costs fewer right-hand sides than the one before (q = 0, the uniform tolerance;
    1/2, flow's; 1, certify's) and T* stays within 10·rtol·T* of DOP853 at rtol 1e-12."""

    rng = np.random.default_rng(5)
    d, rtol = 24, 1e-9
    for a in (0.0, 0.5):
        heads = [Head(*(rng.standard_normal((2, d)) / np.sqrt(d) for _ in range(3)),
                      rng.standard_normal((d, 2)) / np.sqrt(d)) for _ in range(12)]
        p = Params(a * np.eye(d), heads=heads)
        g = Gaussian(np.zeros(d), np.eye(d))
        T = _dop853_blowup(p, g.cov, 10.0)
        assert np.isfinite(T)
        calls = []
        for q in (0.0, 0.5, 1.0):
            counter = [0]
            tr = rk_run._rk_flow(p, g, np.array([0.0, 10.0]), 10.0, rtol, 1e-12,
                                 counter=counter, loosen_power=q)
            assert tr.status == "blowup" and abs(tr.blowup_time - T) <= 10 * rtol * T
            calls.append(counter[0])
        assert calls[0] > calls[1] > calls[2], calls


def test_sundman_steps_do_not_depend_on_the_output_times():
    """A blow-up run with 101 output times takes the same steps towards the pole as one with
    none between 0 and t_final: the same T* and bracket to the bit (the right-hand sides differ
    by DOP853's three extra stages of each step's continuous extension at output times)."""

    rng = np.random.default_rng(8)
    d = 12
    heads = [Head(*(rng.standard_normal((1, d)) / np.sqrt(d) for _ in range(3)),
                  rng.standard_normal((d, 1)) / np.sqrt(d)) for _ in range(12)]
    p, g = Params(np.zeros((d, d)), heads=heads), Gaussian(np.zeros(d), np.eye(d))
    runs = []
    for grid in (np.linspace(0.0, 20.0, 101), np.array([0.0, 20.0])):
        counter = [0]
        tr = rk_run._rk_flow(p, g, grid, 20.0, 1e-10, 1e-12, counter=counter)
        runs.append((counter[0], tr.blowup_time, tr.blowup_bracket))
    assert runs[0][1] is not None and runs[0][1] < 20.0 / 4  # several outputs in σ
    assert runs[0][1:] == runs[1][1:] and runs[0][0] > runs[1][0]


def test_rk_pole_stop_leaves_flows_without_blowup_alone(monkeypatch):
    """A flow whose trace grows through a Sundman run and then decays (the near miss of a pole)
    and one that settles: no blow-up claimed, and the states are those of the run without the
    pole stop (the watch keeping its record, which sets the tolerances, but never stopping), to
    the bit."""

    grows_then_decays = (
        Params([[-1.0113, 2.4678], [-2.9591, -0.919]], B=[[-1.1424, 2.7073], [2.7073, -0.3777]],
               V=0.67 * np.eye(2), b=[0.15, -0.45]),
        Gaussian([0.2, -1.0], [[2.3, 0.5], [0.5, 1.7]]))
    settles = (Params(-np.eye(2), B=np.eye(2), V=0.5 * np.eye(2)), Gaussian([1.0, 0.0], np.eye(2)))
    runs = [flow(p, g, 5.0, method="rk", dense_output=False)
            for p, g in (grows_then_decays, settles)]
    bracket = rk_sundman._PoleWatch.bracket
    monkeypatch.setattr(rk_sundman._PoleWatch, "bracket", lambda *a: bracket(*a) and None)
    for tr, (p, g) in zip(runs, (grows_then_decays, settles), strict=True):
        ref = flow(p, g, 5.0, method="rk", dense_output=False)
        assert tr.status == ref.status == "completed" and tr.blowup_bracket is None
        assert np.array_equal(tr.cov, ref.cov) and np.array_equal(tr.mean, ref.mean)


def test_sundman_steps_hold_each_entry_to_its_cauchy_schwarz_scale():
    """In σ each Σ_ij's absolute tolerance is rtol·√(Σ_ii Σ_jj) at the current state (t and
    the mean keep theirs): the formula on a state (t, m, vec Σ); and on a blow-up whose Σ has
    entries crossing zero the Sundman run's states at t = T*(1 − 10^−k), k = 1 … 6, stay within
    the accuracy flow states near a blow-up, rtol·T*/(T* − t) relative (against DOP853 at
    rtol 1e-13 in t), in fewer steps than entry-by-entry control."""

    z = np.array([7.0, 1.0, -3.0, 9.0, -5.0, -5.0, 4.0])  # t, m (2), vec Σ (2 × 2)
    atol = np.array([1e-12, 1e-12, 1e-12, 1e-6, 1e-12, 1e-12])
    got = rk_sundman._sundman_atol(np.full(7, 5.0), z, atol, 1e-8, 2, 2)
    assert np.allclose(got, [5.0, 5.0, 5.0, 9e-8, 1e-6, 6e-8, 4e-8], rtol=1e-15, atol=0)

    rng = np.random.default_rng(3)
    d = 4
    heads = [(rng.standard_normal((d, d)) / 2, rng.standard_normal((d, d)) / 2)
             for _ in range(3)]
    p = Params(0.2 * rng.standard_normal((d, d)), heads=heads)
    S0 = np.eye(d) + 0.3 * np.ones((d, d))
    y0 = S0.ravel()
    tr = flow(p, Gaussian(np.zeros(d), S0), 50.0, method="rk")
    assert tr.status == "blowup"
    grid = tr.blowup_time * (1 - np.logspace(-1, -6, 6))
    rhs = rk_run._rk_rhs(p, d, 10**6, False)
    event = rk_stepper._TraceEvent(0, d, 1e30)
    never = rk_sundman._PoleWatch(0.0, 0.0, lambda t, y: 0.0)
    steps = []
    for atol_grows in (True, False):
        calls = []

        def counted(t, y, calls=calls):
            calls.append(t)
            return rhs(t, y)
        if atol_grows:
            ours = rk_sundman._sundman_solve(counted, 0.0, grid[-1], y0, grid, event, 1e-9,
                                             np.full(d * d, 1e-12), never, 1.0)
        else:  # entry by entry: the floor switched off
            keep = rk_sundman._sundman_atol
            rk_sundman._sundman_atol = lambda current, *_: current
            try:
                rk_sundman._sundman_solve(counted, 0.0, grid[-1], y0, grid, event, 1e-9,
                                          np.full(d * d, 1e-12), never, 1.0)
            finally:
                rk_sundman._sundman_atol = keep
        steps.append(len(calls))
    ref = solve_ivp(lambda t, y: rhs(t, y), (0.0, grid[-1]), y0, method="DOP853", rtol=1e-13,
                    atol=1e-16, t_eval=grid)
    assert ours.status == 0 and ref.status == 0
    for k, t in enumerate(grid):
        S, R = ours.y[:, k], ref.y[:, k]
        bound = 1e-9 * tr.blowup_time / (tr.blowup_time - t)
        assert np.max(np.abs(S - R)) <= bound * np.abs(R).max(), k
    assert steps[0] < steps[1]


def test_rk_sundman_run_matches_solve_ivp_on_the_same_steps():
    """The Sundman run drives scipy's DOP853 stepper itself: with the pole stop off its outputs
    equal those of solve_ivp on the same augmented system (z = (t, y), events at the output
    times) to rounding. atol 1e-7 lies above rtol·√(Σ_ii Σ_jj) throughout, so the step-by-step
    tolerance (`_sundman_atol`) leaves it as solve_ivp has it."""

    p = Params(0.3 * np.eye(2), B=np.eye(2), V=np.eye(2))
    y0 = np.eye(2).ravel()
    rhs = rk_run._rk_rhs(p, 2, 10**6, False)
    event = rk_stepper._TraceEvent(0, 2, 1e8 * 2)
    t0, grid = 0.05, np.linspace(0.05, 0.25, 5)
    never = rk_sundman._PoleWatch(0.0, 0.0, lambda t, y: 0.0)
    ours = rk_sundman._sundman_solve(rhs, t0, grid[-1], y0, grid[1:], event, 1e-9,
                                     np.full(4, 1e-7), never, t0)

    def f(_s, z):
        w = 2.0 / (z[1] + z[4])  # s_ref / tr Σ
        return np.concatenate([[w], w * rhs(z[0], z[1:])])

    def at(tk):
        def g(_s, z):
            return z[0] - tk
        g.direction, g.terminal = 1, tk == grid[-1]
        return g
    sol = solve_ivp(f, (0.0, 1e8), np.concatenate([[t0], y0]), method="DOP853", rtol=1e-9,
                    atol=np.concatenate([[1e-2 * 1e-9 * t0], np.full(4, 1e-7)]),
                    events=[at(tk) for tk in grid[1:]])
    ref = np.array([z[0][1:] for z in sol.y_events])
    assert ours.status == 0 and np.allclose(ours.t, grid[1:], rtol=0, atol=1e-15)
    assert np.max(np.abs(ours.y.T - ref)) <= 1e-14 * np.abs(ref).max()


def _factored_layer(rng, d, A_scale, identity_K=False, v_scale=1.0):
    """4 `Head` factors of value rank d/4 and query rank d/4 (K = I: rank d, B_h = Q_h), one
    group of `Params.stack`, value factors times v_scale; A = A_scale·(noise − I/2)."""
    s = max(1, d // 4)
    r = d if identity_K else s

    def w(*shape):
        return rng.standard_normal(shape) / np.sqrt(d)
    heads = [Head(w(r, d), np.eye(d) if identity_K else w(r, d), v_scale * w(s, d), w(d, s))
             for _ in range(4)]
    return Params(A_scale * (0.1 * w(d, d) - 0.5 * np.eye(d)), heads=heads)


@pytest.mark.parametrize("d", [1, 5, 8, 32])
@pytest.mark.parametrize("A_scale", [0.0, 1.0])
@pytest.mark.parametrize("identity_K", [False, True])
def test_rk_rhs_is_drift_arrays_bit_for_bit_and_M_the_sum_over_heads(rng, d, A_scale,
                                                                       identity_K):
    """M(Σ) of a layer of factored heads of one rank (`_Stack.product`'s batched path) is
    A + Σ_h O_h V_h Σ K_hᵀ Q_h, summed head by head here, to rounding; the right-hand side of
    rk is `drift_arrays`'s (ṁ, Σ̇) to the last bit, with and without a mean."""
    from riccati_tf.state.moments import drift_arrays

    p = _factored_layer(rng, d, A_scale, identity_K)
    S = random_cov(rng, d)
    ref = p.A + sum(h.O @ h.V @ S @ h.K.T @ h.Q for h in p.factors)
    assert np.abs(p.M(S) - ref).max() <= 64 * np.finfo(float).eps * np.abs(ref).max()
    m = rng.standard_normal(d)
    X, dm = drift_arrays(p, m, S)
    with_mean = rk_run._rk_rhs(p, d, 10, True)(0.0, np.concatenate([m, S.ravel()]))
    assert np.array_equal(with_mean, np.concatenate([dm, (X + X.T).ravel()]))
    X, _ = drift_arrays(p, None, S)
    assert np.array_equal(rk_run._rk_rhs(p, d, 10, False)(0.0, S.ravel()), (X + X.T).ravel())


def test_M_of_heads_of_several_ranks_and_dense_pairs_is_the_sum_over_heads(rng):
    """Factored heads of two ranks (two groups of `Params.stack`) next to a dense pair: M(Σ) is
    A + Σ_h V_h Σ B_h summed head by head, to rounding."""
    d = 6
    heads = [Head(*(rng.standard_normal(shape) for shape in ((r, d), (r, d), (r, d), (d, r))))
             for r in (1, 2, 2)]
    V, B = rng.standard_normal((2, d, d))
    p = Params(rng.standard_normal((d, d)), heads=[*heads, (V, B)])
    S = random_cov(rng, d)
    ref = p.A + V @ S @ B + sum(h.O @ h.V @ S @ h.K.T @ h.Q for h in heads)
    assert len(p.stack.groups) == 2
    assert np.abs(p.M(S) - ref).max() <= 64 * np.finfo(float).eps * np.abs(ref).max()


@pytest.mark.parametrize("d", [1, 3, 8, 40])
@pytest.mark.parametrize("with_mean", [False, True])
def test_rk_states_are_the_outputs_symmetrised_and_time_major(rng, d, with_mean):
    """`_Packing.states` joins the per-step output blocks into solve_ivp's (n, k) layout,
    stored time-major (Σ(t_1..t_k) a contiguous (k, d, d) view), each Σ its block's upper
    triangle mirrored (Σ_ji = Σ_ij for i ≤ j), the mean as stored; from full states below
    PACK_MIN_D and from packed ones above."""

    k = d if with_mean else 0
    n = k + d * d
    packing = rk_packing._packing(k, d)
    full = [rng.standard_normal((n, m)) for m in (1, 4, 0, 7, 2)]
    Y = packing.states([packing.packed(block) for block in full])  # rows: the stored state
    ref = np.concatenate(full, axis=1)
    S = ref[k:].reshape(d, d, -1)
    upper = np.triu(np.ones((d, d), dtype=bool))
    mirrored = np.where(upper[:, :, None], S, S.transpose(1, 0, 2))
    assert Y.shape == ref.shape and Y.T.flags.c_contiguous
    np.testing.assert_array_equal(Y[:k], ref[:k])
    cov = Y[k:].T.reshape(-1, d, d)
    assert np.shares_memory(cov, Y)
    np.testing.assert_array_equal(cov, mirrored.transpose(2, 0, 1))
    assert packing.states([]).shape == (n, 0)


def test_default_grid_shortcut_is_the_distinct_times(rng):
    """Without t_eval the 101 output times are linspace(0, t_final) itself wherever the
    spacing t_final/100 is a normal float (strictly increasing, the last t_final): the same
    as the distinct times among min(linspace, t_final), checked down into the subnormals."""
    import riccati_tf.flows.integrate as integrate

    exponents = np.concatenate([rng.uniform(-1074, 1023, 300), [-1022 + np.log2(100)] * 3])
    for T in np.ldexp(rng.uniform(1, 2, exponents.size), exponents.astype(int)):
        T = float(T)
        if not 0 < T < np.inf:
            continue
        ref = np.unique(np.minimum(np.linspace(0.0, T, 101), T))
        np.testing.assert_array_equal(integrate._default_grid(T, None), ref)


@pytest.mark.parametrize("d", [4, 8, 20])
@pytest.mark.parametrize("kind", ["converging", "growing"])
@pytest.mark.parametrize("with_mean", [True, False])
def test_rk_matches_solve_ivp_on_the_full_state(rng, d, kind, with_mean):
    """rk steps DOP853 on the packed state (m, Σ_ij for i ≤ j) with the full state's error
    norm; against solve_ivp on the full state y = (m, vec Σ) with `drift_arrays`'s right-hand
    side (rk's tolerances then solve_ivp's: atol capped at rtol·√(Σ_ii Σ_jj) = 1e-12 is atol
    itself for Σ0 = I): the same output times, right-hand sides within one step's 12 (the first
    step is DOP853's own choice on each state, the steps after it the same test), states that
    agree to the tolerance's order, and each Σ exactly symmetric."""
    from riccati_tf.state.moments import drift_arrays

    p = _factored_layer(rng, d, 1.0 if kind == "converging" else 0.0, v_scale=0.2)
    p = Params(p.A, b=rng.standard_normal(d) if with_mean else None,
               heads=[h for h in p.factors if h is not None])
    g = Gaussian(rng.standard_normal(d) if with_mean else np.zeros(d), np.eye(d))
    T = 5.0 if kind == "converging" else 1.0
    counter = [0]
    tr = rk_run._rk_flow(p, g, np.linspace(0.0, T, 101), T, 1e-10, 1e-12, counter=counter)

    def rhs(_t, y):
        X, dm = drift_arrays(p, y[:d], y[d:].reshape(d, d))
        return np.concatenate([dm, (X + X.T).ravel()])
    # the cov-only run's loosened tolerances (rk.run._rk_run) are the full state's with m ≡ 0
    sol = solve_ivp(rhs, (0.0, T), np.concatenate([g.mean, g.cov.ravel()]), method="DOP853",
                    rtol=1e-10, atol=1e-12, t_eval=np.linspace(0.0, T, 101))
    assert tr.status == "completed" and abs(counter[0] - sol.nfev) <= 12
    np.testing.assert_array_equal(tr.t, sol.t)
    scale = np.abs(sol.y).max()
    np.testing.assert_allclose(tr.mean, sol.y[:d].T, rtol=0, atol=1e-8 * scale)
    np.testing.assert_allclose(tr.cov, sol.y[d:].T.reshape(-1, d, d), rtol=0, atol=1e-8 * scale)
    np.testing.assert_array_equal(tr.cov, tr.cov.transpose(0, 2, 1))


@pytest.mark.parametrize("packed", [True, False])
@pytest.mark.parametrize("with_mean", [True, False])
def test_packed_error_norm_is_the_full_states(rng, packed, with_mean):
    """The packed DOP853's error norm of stages symmetric in Σ equals scipy's DOP853 norm of
    the same stages on the full state (m, vec Σ), and packing then unpacking is the identity
    on symmetric states (below PACK_MIN_D the state is not packed)."""
    from scipy.integrate import DOP853


    d = rk_constants.PACK_MIN_D + (1 if packed else -1)
    k = d if with_mean else 0
    pk = rk_packing._packing(k, d)
    assert (pk.pack is not None) == packed

    def symmetric_state():
        S = rng.standard_normal((d, d))
        return np.concatenate([rng.standard_normal(k), (S + S.T).ravel()])
    y0 = symmetric_state()
    np.testing.assert_array_equal(pk.full(pk.packed(y0)), y0)
    assert pk.packed(y0).size == k + (d * (d + 1) // 2 if packed else d * d)
    blocks = [np.stack([pk.packed(symmetric_state()) for _ in range(n)], axis=1) for n in (3, 2)]
    states = pk.states(blocks)
    np.testing.assert_array_equal(states, np.concatenate([pk.full(b) for b in blocks], axis=1))
    tilted = blocks[0] + (1 - packed) * rng.standard_normal(blocks[0].shape)  # unpacked:
    S = pk.states([tilted])[k:].T.reshape(-1, d, d)  # Σ its upper triangle mirrored
    ref = pk.full(tilted)[k:].T.reshape(-1, d, d)
    np.testing.assert_array_equal(S, np.where(np.triu(np.ones((d, d), dtype=bool)), ref,
                                              ref.transpose(0, 2, 1)))
    assert states.T.flags.c_contiguous  # time-major
    assert pk.trace(pk.packed(y0)) == pytest.approx(np.trace(y0[k:].reshape(d, d)),
                                                    rel=1e-14, abs=1e-14)
    K = np.stack([symmetric_state() for _ in range(13)])
    scale = 1e-6 + 1e-8 * np.abs(symmetric_state())

    def zero(_t, y):
        return np.zeros_like(y)
    full = DOP853(zero, 0.0, y0, 1.0, rtol=1e-6, atol=1e-8)
    v0 = pk.packed(y0)
    solver = rk_packing._PackedDOP853(zero, 0.0, v0, 1.0, rtol=1e-6, atol=1e-8 + 0 * v0,
                                      packing=pk, f0=np.zeros_like(v0))
    for h in (1e-3, 0.1, 2.0):
        assert solver._estimate_error_norm(
            np.stack([pk.packed(row) for row in K]), h, pk.packed(scale)) == pytest.approx(
            full._estimate_error_norm(K, h, scale), rel=1e-13)


@pytest.mark.parametrize("d", [8, 24])
def test_rk_end_growth_is_the_trace_of_the_last_right_hand_side(rng, d):
    """A run in t hands back d tr Σ/dt at its end state from the stepper's last right-hand side
    (DOP853 evaluates f at each accepted step's end; `_check_near_blowup` reads it instead of
    forming M(Σ) again): trace_growth at the returned end state, packed (d = 24) or not; None
    when the last output time lies before the end of the run."""

    A = -0.3 * np.eye(d) + rng.standard_normal((d, d)) / (3 * np.sqrt(d))
    V, B = (rng.standard_normal((d, d)) / np.sqrt(d) for _ in range(2))
    p = Params(A, B=B, V=V)
    cov0 = np.eye(d) + 0.1 * np.ones((d, d))
    rhs = rk_run._rk_rhs(p, d, 10**6, with_mean=False)
    y0 = cov0.ravel()
    for grid, ends in ((np.linspace(0.0, 0.6, 7), True), (np.array([0.0, 0.3]), False)):
        sol = rk_stepper._t_solve(rhs, 0.0, 0.6, y0, grid, None, 1e-10, np.full(d * d, 1e-12),
                                  lambda *_: False, d, rhs(0.0, y0))
        assert sol.status == 0
        if not ends:
            assert sol.growth is None
            continue
        growth, _ = rk_blowup.trace_growth(p, sol.y[:, -1].reshape(d, d))
        assert sol.growth == pytest.approx(growth, rel=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_rk_pole_test_from_the_first_right_hand_side(seed):
    """At t = 0 rk reads d tr Σ/dt off its first right-hand side (the trace of Σ̇) instead of
    forming M(Σ0) again: the same decision and, to rounding, the same pole estimate as
    `trace_growth`'s."""

    rng = np.random.default_rng(seed)
    d = 5
    p = _factored_layer(rng, d, seed % 2)
    g = random_gaussian(rng, d)
    y = np.concatenate([g.mean, g.cov.ravel()])
    f0 = rk_run._rk_rhs(p, d, 10, True)(0.0, y)
    for t_final in (0.1, 1.0, 10.0, 1e3):
        ref = rk_blowup._pole_ahead(p, d, 0.0, y, t_final)
        got = rk_blowup._pole_ahead(p, d, 0.0, y, t_final, float(f0[d::d + 1].sum()))
        assert (ref is None) == (got is None)
        if ref is not None:
            assert abs(got[0] - ref[0]) <= 1e-13 * ref[0]
