"""Trajectory: dense output tr(t), indexing, iteration, repr (SPEC §2, §5).

Dense output is checked against independent references: DOP853 at rtol 1e-12 on the moment
equations written out here, the closed form Σ(t) = e^{At}Σ0(I + W(t)Σ0)⁻¹e^{Aᵀt} evaluated in one
Van Loan exponential from t = 0, and the scalar Bernoulli solution σ̇ = 2aσ + 2vβσ².
"""

import pickle
import re

import numpy as np
import pytest
from scipy.linalg import expm

from riccati_tf import Gaussian, Params, Trajectory, flow, layers
from riccati_tf.display import number
from riccati_tf.errors import InvalidInputError
from riccati_tf.flows.integrate import State

from .cases import dop853_moments, general_params, random_gaussian, scalar_v_params


def rel_err(a, b):
    return np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300)


def reference(p, g, times, params_fn=None):
    """(mean (k, d), cov (k, d, d)) at the sorted times: DOP853 at rtol 1e-12
    (`cases.dop853_moments`)."""
    return dop853_moments(p, g, times, params_fn)


def closed_form_cov(p, g, t):
    """Σ(t) = e^{At}Σ0(I + W(t)Σ0)⁻¹e^{Aᵀt}, W from one exponential of [[−Aᵀ, G], [0, A]] t."""
    d = g.d
    vs = [V[0, 0] for V, _ in p.heads]
    G = -sum(v * (B + B.T) for v, (_, B) in zip(vs, p.heads, strict=True))
    F = expm(np.block([[-p.A.T, G], [np.zeros((d, d)), p.A]]) * t)
    E = F[d:, d:]
    W = E.T @ F[:d, d:]
    return E @ g.cov @ np.linalg.solve(np.eye(d) + W @ g.cov, E.T)


def query_times(rng, t_end, k=17):
    return np.sort(rng.uniform(0.0, t_end, k))


# --- dense output: rk ----------------------------------------------------------------------


@pytest.mark.parametrize("varying", [False, True])
def test_rk_dense_output_matches_a_tight_reference(rng, varying):
    """Only the end points are stored: the states between are integrated again from the
    initial state, to about the integration tolerance (a linear interpolation is off by
    > 1e-3)."""
    d = 3
    p, g = general_params(rng, d), random_gaussian(rng, d)
    T = 1.5

    def fn(t):
        return Params(A=p.A * (1 + 0.3 * np.sin(2 * t)), heads=list(p.heads), b=p.b)

    tr = flow(fn if varying else p, g, T, method="rk", t_eval=[0.0, T])
    assert len(tr) == 2 and tr.status == "completed"
    t = query_times(rng, T)
    s = tr(t)
    m_ref, S_ref = reference(p, g, t, fn if varying else None)
    assert s.mean.shape == (t.size, d) and s.cov.shape == (t.size, d, d)
    assert rel_err(s.cov, S_ref) <= 1e-8
    assert rel_err(s.mean, m_ref) <= 1e-8
    np.testing.assert_array_equal(s.cov, np.swapaxes(s.cov, 1, 2))
    w = (t / T)[:, None, None]
    assert rel_err((1 - w) * tr.cov[0] + w * tr.cov[1], S_ref) > 1e-3


def test_rk_dense_output_matches_the_closed_form(rng):
    d = 2
    p, g = scalar_v_params(rng, d), random_gaussian(rng, d)
    tr = flow(p, g, 1.0, method="rk", t_eval=[0.0, 1.0])
    for t in query_times(rng, 1.0, 5):
        assert rel_err(tr(t).cov, closed_form_cov(p, g, t)) <= 1e-8


def test_rk_dense_output_up_to_where_the_integration_stopped():
    """Scalar blow-up σ̇ = 2aσ + 2vβσ² from a tiny σ0: the rk run passes the growth events
    (the linear term still dominates) and goes on in Sundman's time to the pole stop; dense
    output, integrated again from the stored states, covers [0, t_stop] to the tolerance
    amplified by T*/(T* − t) as σ ~ 1/(T* − t), and ends where the integration stopped,
    before T*; the memory it keeps does not grow with the steps (no per-step data)."""
    a, v, beta, s0, m0 = 1.0, 1.0, 1.0, 1e-10, 0.7
    p = Params(A=[[a]], V=[[v]], B=[[beta]])
    g = Gaussian([m0], [[s0]])
    T_star = np.log1p(a / (v * beta * s0)) / (2 * a)
    tr = flow(p, g, 20.0, method="rk", rtol=1e-12, atol=1e-14)
    assert tr.status == "blowup"
    end = tr.dense.end
    assert end == tr.blowup_bracket[0] < T_star
    assert all(np.size(value) <= 1 for name, value in vars(tr.dense).items()
               if name not in ("params", "mean0", "cov0"))
    t = np.linspace(0.0, end * (1 - 1e-6), 301)
    u = 1 - (v * beta * s0 / a) * np.expm1(2 * a * t)
    bound = 1e-10 * T_star / (T_star - t)
    s = tr(t)
    assert np.all(np.abs(s.cov[:, 0, 0] * u / (s0 * np.exp(2 * a * t)) - 1) <= bound)
    assert np.all(np.abs(s.mean[:, 0] * np.sqrt(u) / (m0 * np.exp((a + v) * t)) - 1) <= bound)
    with pytest.raises(InvalidInputError, match=r"outside \[0, .*integration stopped"):
        tr(0.5 * (end + T_star))


# --- dense output: exact ---------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_exact_dense_output_is_exact(seed):
    rng = np.random.default_rng(seed)
    d = 3
    C = rng.standard_normal((d, d))
    p = Params(A=rng.standard_normal((d, d)) / np.sqrt(d), B=C @ C.T / d + np.eye(d),
               V=-0.5 * np.eye(d), b=rng.standard_normal(d))  # G = (B + Bᵀ)/2 ≻ 0
    g = random_gaussian(rng, d, rank=2 if seed == 1 else None)
    T = 0.8
    tr = flow(p, g, T, method="exact", t_eval=[T / 2, T])  # no stored state at t = 0
    assert tr.status == "completed"
    t = query_times(rng, T, 9)
    s = tr(t)
    for k, tk in enumerate(t):
        assert rel_err(s.cov[k], closed_form_cov(p, g, tk)) <= 1e-12
    m_ref, _ = reference(p, g, t)
    assert rel_err(s.mean, m_ref) <= 1e-10  # error-controlled collocation (exact.MEAN_RTOL)
    again = flow(p, g, T, method="exact", t_eval=t)
    assert rel_err(s.cov, again.cov) <= 1e-13 and rel_err(s.mean, again.mean) <= 1e-11
    assert [np.linalg.matrix_rank(S, 1e-9) for S in s.cov] == [np.linalg.matrix_rank(g.cov)] * 9


def test_exact_dense_output_up_to_the_blowup():
    a, v, beta, s0, m0 = 0.2, 1.0, 1.0, 1.0, 0.7
    p = Params(A=[[a]], V=[[v]], B=[[beta]])
    T_star = np.log(1 + a / (v * beta * s0)) / (2 * a)
    tr = flow(p, Gaussian([m0], [[s0]]), 1.0, method="exact")
    assert tr.status == "blowup" and abs(tr.blowup_time - T_star) <= 1e-12 * T_star
    t = np.array([0.013, 0.3, tr.t[-1] + 0.5 * (T_star - tr.t[-1]), T_star * (1 - 1e-6)])
    u = 1 - (v * beta * s0 / a) * np.expm1(2 * a * t)
    gap = T_star / (T_star - t)  # errors are amplified by it as σ ~ 1/(T* − t)
    s = tr(t)
    assert np.all(np.abs(s.cov[:, 0, 0] * u / (s0 * np.exp(2 * a * t)) - 1) <= 1e-13 * gap)
    assert np.all(np.abs(s.mean[:, 0] * np.sqrt(u) / (m0 * np.exp((a + v) * t)) - 1)
                  <= 1e-9 * gap)
    for bad in (T_star, 1.0, -0.1):
        with pytest.raises(InvalidInputError, match=r"outside \[0, 0.455.*\)"):
            tr(bad)
    with pytest.raises(InvalidInputError, match="blows up at T"):
        tr(T_star)


def test_exact_dense_output_over_a_settled_long_horizon(rng):
    """G ≻ 0 with A anti-stable: Σ converges to P*⁻¹; tr(t) far out agrees with a fresh flow."""
    d = 2
    p = Params(A=np.eye(d) + 0.1 * rng.standard_normal((d, d)), B=-np.eye(d), V=0.5 * np.eye(d),
               b=rng.standard_normal(d))
    g = random_gaussian(rng, d)
    tr = flow(p, g, 500.0, method="exact", t_eval=[0.0, 500.0])
    fresh = flow(p, g, 333.0, method="exact", t_eval=[0.0, 333.0])
    assert rel_err(tr(333.0).cov, fresh.cov[-1]) <= 1e-12
    assert rel_err(tr(333.0).mean, fresh.mean[-1]) <= 1e-10


# --- dense output: stored states, layers, no dense output, arguments --------------------------


@pytest.mark.parametrize("method", ["exact", "rk"])
def test_stored_times_give_the_stored_states(rng, method):
    p, g = scalar_v_params(rng, 3), random_gaussian(rng, 3)
    tr = flow(p, g, 1.0, method=method)
    s = tr(tr.t)
    np.testing.assert_array_equal(s.mean, tr.mean)
    np.testing.assert_array_equal(s.cov, tr.cov)
    one = tr(tr.t[7])
    assert isinstance(one, State) and one.t == tr.t[7] and one.cov.shape == (3, 3)
    np.testing.assert_array_equal(one.cov, tr.cov[7])


def test_times_in_any_order_and_repeated(rng):
    p, g = scalar_v_params(rng, 2), random_gaussian(rng, 2)
    tr = flow(p, g, 1.0, method="exact")
    t = np.array([0.77, 0.015, 0.77, 0.5, 0.0151])
    s = tr(t)
    np.testing.assert_array_equal(s.t, t)
    for k, tk in enumerate(t):
        np.testing.assert_allclose(s.cov[k], tr(tk).cov, rtol=1e-14, atol=0)
    np.testing.assert_array_equal(s.cov[0], s.cov[2])


def test_layers_have_states_at_layer_times_only(rng):
    p, g = scalar_v_params(rng, 2), random_gaussian(rng, 2)
    tau = 0.1
    tr = layers(p, g, 10, tau)
    s = tr(0.3)  # the layer at depth 3 · 0.1 = 0.30000000000000004
    np.testing.assert_array_equal(s.cov, tr.cov[3])
    np.testing.assert_array_equal(tr(tr.t).mean, tr.mean)
    with pytest.raises(InvalidInputError, match="no states between layers"):
        tr(0.15)
    with pytest.raises(InvalidInputError, match=r"outside \[0, 1\]"):
        tr(1.1)


def test_without_dense_output_only_stored_states(rng):
    p, g = general_params(rng, 2), random_gaussian(rng, 2)
    for tr in (flow(p, g, 1.0, method="rk", dense_output=False),
               Trajectory(np.array([0.0, 1.0]), np.zeros((2, 2)), np.stack([np.eye(2)] * 2),
                          "completed", None, "rk")):
        np.testing.assert_array_equal(tr(1.0).cov, tr.cov[-1])
        with pytest.raises(InvalidInputError, match="no dense output"):
            tr(0.505)
    with pytest.raises(InvalidInputError, match="dense_output"):
        flow(p, g, 1.0, dense_output="yes")


@pytest.mark.parametrize("bad", [np.nan, np.inf, "0.5", 0.5j, True, [[0.1, 0.2]], None])
def test_bad_times_are_refused(rng, bad):
    tr = flow(scalar_v_params(rng, 2), random_gaussian(rng, 2), 1.0)
    with pytest.raises(InvalidInputError):
        tr(bad)


# --- indexing, iteration -----------------------------------------------------------------------


def test_indexing_and_iteration(rng):
    p, g = scalar_v_params(rng, 2), random_gaussian(rng, 2)
    tr = flow(p, g, 1.0, method="exact")
    t, m, S = tr[4]
    assert t == tr.t[4]
    np.testing.assert_array_equal(m, tr.mean[4])
    np.testing.assert_array_equal(S, tr.cov[4])
    assert tr[-1].t == tr.t[-1] and tr[np.int64(2)].t == tr.t[2]
    states = list(tr)
    assert len(states) == len(tr) == 101
    assert all(s.t == tk for s, tk in zip(states, tr.t, strict=True))
    gauss = tr[3].gaussian()
    assert isinstance(gauss, Gaussian)
    np.testing.assert_array_equal(gauss.cov, tr.cov[3])
    with pytest.raises(InvalidInputError, match="one of them"):
        tr(tr.t[:3]).gaussian()
    for bad in (101, -102, 1.0, True, "1", [1, 2]):
        with pytest.raises(InvalidInputError):
            tr[bad]


def test_slices_are_trajectories_with_the_flows_dense_output(rng):
    p, g = scalar_v_params(rng, 2), random_gaussian(rng, 2)
    for method in ("exact", "rk"):
        tr = flow(p, g, 1.0, method=method)
        part = tr[10:50:7]
        assert isinstance(part, Trajectory) and len(part) == 6
        np.testing.assert_array_equal(part.t, tr.t[10:50:7])
        np.testing.assert_array_equal(part.cov, tr.cov[10:50:7])
        assert (part.method, part.status) == (tr.method, tr.status)
        # rk integrates again from the last stored state: the slice's, or the flow's
        want = flow(p, g, 0.333, method="exact", t_eval=[0.0, 0.333]).cov[-1]
        assert rel_err(part(0.333).cov, want) <= (1e-13 if method == "exact" else 1e-9)
        assert rel_err(tr(0.333).cov, want) <= (1e-13 if method == "exact" else 1e-9)
        assert len(tr[5:5]) == 0 and len(tr[-3:]) == 3
        for bad in (slice(None, None, -1), slice(None, None, 0), slice(1.5, None)):
            with pytest.raises(InvalidInputError):
                tr[bad]


# --- repr ----------------------------------------------------------------------------------------


def test_repr_is_compact():
    p = Params(A=[[0.2, 0.0], [0.0, -0.1]], V=np.eye(2), B=np.eye(2))
    tr = flow(p, Gaussian([0.0, 0.0], np.eye(2)), 1.0, method="exact")
    T = tr.blowup_time
    assert repr(tr) == (f"Trajectory(method='exact', status='blowup', T*={T:#.4g}, "
                        f"t=[0, {tr.t[-1]:.6g}], n={len(tr)}, d=2)")
    done = flow(p, Gaussian([0.0, 0.0], np.eye(2)), 0.2, method="rk")
    assert repr(done) == "Trajectory(method='rk', status='completed', t=[0, 0.2], n=101, d=2)"
    big = Params(A=np.eye(2) * 400, V=np.zeros((2, 2)), B=np.zeros((2, 2)))
    over = layers(big, Gaussian([1.0, 1.0], np.eye(2)), 200, 1.0)
    assert over.blowup_kind == "overflow"
    assert re.fullmatch(r"Trajectory\(method='layers', status='blowup', overflow at t=\S+, "
                        r"t=\[0, \S+\], n=\d+, d=2\)", repr(over))


def test_html_table_shows_the_ends_without_arrays(rng):
    d = 30
    p = scalar_v_params(rng, d, v=0.3)
    g = random_gaussian(rng, d, rank=5)
    tr = flow(p, g, 0.5, method="exact")
    html = tr._repr_html_()
    assert html.count("<tr>") <= 10 and len(html) < 2500
    assert "exact" in html and tr.status in html
    assert "rank Σ</th><td style='text-align:left'>5 → 5" in html
    assert number(float(tr.mean[0][0])) in html and "(30 entries)" in html
    assert len(repr(tr)) < 100


def test_dense_output_survives_pickling_and_bounds_its_answers(rng):
    p, g = general_params(rng, 2), random_gaussian(rng, 2)
    for method in ("rk", "exact"):
        q = p if method == "rk" else scalar_v_params(rng, 2)
        tr = flow(q, g, 1.0, method=method)
        back = pickle.loads(pickle.dumps(tr))
        np.testing.assert_array_equal(back(0.123).cov, tr(0.123).cov)
    with pytest.raises(InvalidInputError, match="in batches"):
        tr(np.zeros(22_500_000))


def _scaled_layer(t):
    """A module-level time-varying layer (pickles by reference)."""
    return Params(A=-(1 + 0.5 * np.sin(t)) * np.eye(2), B=np.eye(2), V=-0.5 * np.eye(2))


def test_pickled_time_varying_trajectories_keep_what_pickles(rng):
    """A time-varying rk trajectory pickles: with a module-level layer its dense output comes
    back whole; with a lambda (which does not pickle) the stored states do, and a time between
    them is refused with the reason instead of failing to pickle at all."""
    g = random_gaussian(rng, 2)
    tr = flow(_scaled_layer, g, 1.0, method="rk", t_eval=[0.0, 0.5, 1.0])
    back = pickle.loads(pickle.dumps(tr))
    np.testing.assert_array_equal(back(0.3).cov, tr(0.3).cov)
    tr = flow(lambda t: _scaled_layer(t), g, 1.0, method="rk", t_eval=[0.0, 0.5, 1.0])
    back = pickle.loads(pickle.dumps(tr))
    np.testing.assert_array_equal(back(0.5).cov, tr(0.5).cov)
    with pytest.raises(InvalidInputError, match="unpickled without its layer"):
        back(0.3)
