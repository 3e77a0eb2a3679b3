"""riccati_tf.design.repair: the nearest stable layer.

Checked against computations that do not go through the repair: closed forms written out here,
a brute-force optimiser (random restarts of SLSQP over the full B_h entries, with its own
constraints from numpy/scipy), certify's verdicts re-checked with `check()`, and scipy's DOP853
on the covariance equation written out here.
"""

import time

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.linalg import solve_continuous_lyapunov
from scipy.optimize import minimize, minimize_scalar

from riccati_tf.design import MARGIN_RTOL, nearest_stable
from riccati_tf.errors import InvalidInputError
from riccati_tf.stability.certificates.entry import certify
from riccati_tf.state.params import Gaussian, Head, Params

#: layers of the brute-force comparison checked by default; the rest of the 30 are slow
N_FAST, N_LAYERS = 10, 30
RESTARTS = 4
#: the brute force keeps candidates violating its constraints by up to this much
FEAS_ATOL = 1e-7


def _cov_rhs(params):
    """Σ̇ = AΣ + ΣAᵀ + Σ_h (V_hΣB_hΣ + ΣB_hᵀΣV_hᵀ), written out."""
    A, d = np.array(params.A), params.d
    pairs = [(np.array(V), np.array(B)) for V, B in params.heads]

    def rhs(_t, y):
        S = y.reshape(d, d)
        return (A @ S + S @ A.T + sum(V @ S @ B @ S + S @ B.T @ S @ V.T
                                      for V, B in pairs)).ravel()
    return rhs


def _blows_up(params, cov0, T):
    """Whether DOP853 sees tr Σ pass 1e8 before T."""
    ev = lambda _t, y: np.trace(y.reshape(params.d, params.d)) - 1e8  # noqa: E731
    ev.terminal = True
    sol = solve_ivp(_cov_rhs(params), (0, T), np.asarray(cov0, float).ravel(), method="DOP853",
                    rtol=1e-10, atol=1e-12, events=ev)
    return sol.status == 1, sol


def _layer(i):
    """Layer i: scalar heads, d in 2..4, 1 or 2 heads, A Hurwitz (odd i) or 0; unstable from
    Σ0 (certify says blows_up), with one or two starts."""
    rng = np.random.default_rng(500 + i)
    while True:
        d, H = 2 + i % 3, 1 + (i // 3) % 2
        A = (-0.5 * np.eye(d) + 0.2 * rng.standard_normal((d, d))) if i % 2 else np.zeros((d, d))
        vs = rng.choice([-1, 1], H) * rng.uniform(0.5, 1.5, H)
        heads = [(v * np.eye(d), rng.standard_normal((d, d)) + 0.8 * np.sign(v) * np.eye(d))
                 for v in vs]
        p = Params(A, heads=heads)
        starts = [2.0 * np.eye(d)] + ([np.diag(rng.uniform(0.5, 3.0, d))] if i % 4 == 1 else [])
        if any(certify(p, s).regime == "blows_up" for s in starts):
            return p, starts


def _brute(p, starts, delta, m):
    """The least ‖ΔB‖_F found by random restarts of SLSQP over all H·d² entries of ΔB, on the
    union of G ⪰ δI and (A Hurwitz) G ⪯ −δI with λ_max(L0ᵀW∞L0) ≤ 1 − m (W∞ from scipy's
    Lyapunov solver), each semidefinite constraint X ⪰ 0 written smoothly as X = MMᵀ with M
    free; every candidate certified by certify (regime safe and check())."""
    d, H = p.d, len(p.heads)
    vs = [V[0, 0] for V, _ in p.heads]
    B0 = np.concatenate([B.ravel() for _, B in p.heads])
    n, iu, eye = B0.size, np.triu_indices(d), np.eye(d)
    rng = np.random.default_rng(7)

    def G(x):
        Bs = (B0 + x[:n]).reshape(H, d, d)
        return -sum(v * (B + B.T) for v, B in zip(vs, Bs, strict=True))

    def W(x):  # AᵀW∞ + W∞A = G: W∞ = ∫ e^{Aᵀs}(−G)e^{As}ds
        return solve_continuous_lyapunov(p.A.T, G(x))

    roots = [np.linalg.cholesky(s) for s in starts]
    psd = [lambda x: G(x) - delta * eye]
    branches = [psd]
    if np.max(np.linalg.eigvals(p.A).real) < 0:
        branches.append([lambda x: -G(x) - delta * eye] +
                        [lambda x, L=L: (1 - m) * eye - L.T @ W(x) @ L for L in roots])
    best = np.inf
    for sets in branches:
        k = len(sets)

        def eq(z, sets=sets, k=k):
            Ms = z[n:].reshape(k, d, d)
            return np.concatenate([(X(z) - M @ M.T)[iu] for X, M in zip(sets, Ms,
                                                                           strict=True)])
        for j in range(RESTARTS):
            z0 = np.concatenate([rng.standard_normal(n) * 0.3 * j,
                                 rng.standard_normal(k * d * d)])
            r = minimize(lambda z: z[:n] @ z[:n], z0,
                         jac=lambda z: np.concatenate([2 * z[:n], np.zeros(z.size - n)]),
                         constraints=[{"type": "eq", "fun": eq}], method="SLSQP",
                         options={"maxiter": 500, "ftol": 1e-14})
            dist = float(np.linalg.norm(r.x[:n]))
            if dist >= best or any(np.linalg.eigvalsh(X(r.x))[0] < -FEAS_ATOL for X in sets):
                continue
            Bs = (B0 + r.x[:n]).reshape(H, d, d)
            q = Params(p.A, heads=[(V, B) for (V, _), B in zip(p.heads, Bs, strict=True)])
            if all(c.regime in ("converges", "collapses", "bounded") and c.check()
                   for c in (certify(q, s) for s in starts)):
                best = dist
    return best


@pytest.mark.parametrize("i", [pytest.param(i, marks=() if i < N_FAST else pytest.mark.slow)
                               for i in range(N_LAYERS)])
def test_no_brute_force_answer_is_nearer(i):
    p, starts = _layer(i)
    rep = nearest_stable(p, starts)
    assert rep.all_certified
    for c in rep.certificates:
        assert c.regime in ("converges", "collapses", "bounded") and c.check()
    best = _brute(p, starts, rep.margin, MARGIN_RTOL)
    print(f"layer {i}: route {rep.route}, distance {rep.distance:.8g}, brute force {best:.8g}, "
          f"ratio {rep.distance / best:.6f}")
    assert np.isfinite(best)
    assert rep.distance <= 1.01 * best


def test_one_head_is_the_psd_clipping_of_the_symmetric_part():
    """ΔB = eigenvalue clipping of sym(vB) (skew part untouched), against eigh written out."""
    rng = np.random.default_rng(1)
    B, v = rng.standard_normal((4, 4)), -0.7
    rep = nearest_stable(Params(np.zeros((4, 4)), B=B, V=v * np.eye(4)), np.eye(4))
    dB = rep.params.B - B
    np.testing.assert_allclose(dB - dB.T, 0, atol=1e-14)
    delta = rep.margin
    lam, U = np.linalg.eigh(-v * (B + B.T))
    want = (U * np.maximum(delta - lam, 0)) @ U.T / (-2 * v)
    np.testing.assert_allclose(dB, want, atol=1e-13)
    assert rep.distance == pytest.approx(np.linalg.norm(want), rel=1e-12)
    assert np.linalg.eigvalsh(rep.params.G)[0] == pytest.approx(delta, abs=1e-12)
    assert delta == pytest.approx(MARGIN_RTOL * max(np.linalg.norm(v * (B + B.T), 2),
                                                    0.7 * np.linalg.norm(B, 2)))


def test_several_heads_share_the_correction_in_proportion_to_v():
    """ΔB_h = v_h C/(2Σv²)... checked by the KKT of min Σ‖S_h‖² s.t. Σ v_h S_h fixed: S_h ∥ v_h,
    and the total against SLSQP on the heads' symmetric parts for the same G."""
    rng = np.random.default_rng(2)
    d, vs = 3, np.array([1.0, -0.5, 2.0])
    p = Params(np.zeros((d, d)), heads=[(v * np.eye(d), rng.standard_normal((d, d)))
                                        for v in vs])
    rep = nearest_stable(p, np.eye(d))
    dBs = [B1 - B0 for (_, B1), (_, B0) in zip(rep.params.heads, p.heads, strict=True)]
    for dB, v in zip(dBs, vs, strict=True):
        np.testing.assert_allclose(dB * vs[0], dBs[0] * v, atol=1e-13)
    np.testing.assert_allclose(rep.per_head, np.abs(vs) / np.linalg.norm(vs) * rep.distance,
                               rtol=1e-12)
    target = rep.params.G - p.G  # the change of G; least Σ‖S_h‖² giving it, by SLSQP
    iu = np.triu_indices(d)

    def S(x):
        X = np.zeros((3, d, d))
        for h in range(3):
            X[h][iu] = x[h * 6:(h + 1) * 6]
            X[h] = X[h] + np.triu(X[h], 1).T
        return X

    r = minimize(lambda x: float(np.sum(S(x) ** 2)), np.zeros(18), method="SLSQP",
                 constraints=[{"type": "eq", "fun": lambda x: (-2 * np.einsum(
                     "h,hij->ij", vs, S(x)) - target)[iu]}], options={"ftol": 1e-15})
    assert rep.distance == pytest.approx(np.sqrt(r.fun), rel=1e-6)


def test_the_repaired_layer_does_not_blow_up_under_dop853():
    """The original blows up before T (DOP853), the repair stays bounded on [0, T]."""
    p, starts = _layer(3)
    rep = nearest_stable(p, starts)
    up, sol = _blows_up(p, starts[0], 50.0)
    assert up
    up, sol = _blows_up(rep.params, starts[0], 50.0)
    assert not up and sol.status == 0
    assert np.trace(sol.y[:, -1].reshape(p.d, p.d)) <= np.trace(starts[0]) * (1 + 1e-8)


def test_numerical_route_beats_the_closed_form_when_a_is_hurwitz():
    """G0 ⪯ 0 a little above the threshold: scaling G down is far nearer than flipping it to
    ⪰ 0; the answer satisfies λ_max(W∞Σ0) ≤ 1 − m with W∞ from scipy, and is certified."""
    d = 3
    A = -np.eye(d) + 0.1 * np.triu(np.ones((d, d)), 1)
    p = Params(A, B=0.8 * np.eye(d), V=np.eye(d))  # G0 = −1.6 I
    cov0 = 2.0 * np.eye(d)
    assert certify(p, cov0).regime == "blows_up"
    rep = nearest_stable(p, cov0)
    assert rep.route == "numerical" and rep.all_certified
    W = solve_continuous_lyapunov(A.T, rep.params.G)
    assert np.linalg.eigvalsh(np.sqrt(2) * W * np.sqrt(2))[-1] <= 1 - MARGIN_RTOL + 1e-9
    assert np.linalg.eigvalsh(rep.params.G)[-1] <= -rep.margin + 1e-9
    closed = np.linalg.norm(1.6 * np.eye(d) + rep.margin * np.eye(d)) / 2
    assert rep.distance < 0.5 * closed
    assert rep.certificates[0].regime == "collapses" and rep.certificates[0].check()


def test_general_heads_go_to_the_nearest_point_of_the_ray():
    """Non-scalar V_h, A Hurwitz: B_h ↦ −cV_hᵀ with c from minimize_scalar, tr Σ non-increasing
    by the attention term at random Σ ⪰ 0, and the flow certified."""
    rng = np.random.default_rng(4)
    d = 3
    A = -np.eye(d) + 0.2 * rng.standard_normal((d, d))
    heads = [(rng.standard_normal((d, d)), rng.standard_normal((d, d))) for _ in range(2)]
    p = Params(A, heads=heads)
    rep = nearest_stable(p, np.eye(d), general="ray")
    for (V, B), (_, B1), dist in zip(heads, rep.params.heads, rep.per_head, strict=True):
        r = minimize_scalar(lambda c, V=V, B=B: np.linalg.norm(B + c * V.T), bounds=(0, 100),
                            method="bounded", options={"xatol": 1e-12})
        assert dist == pytest.approx(r.fun, rel=1e-8, abs=1e-10)
        np.testing.assert_allclose(B1, -max(r.x, 0) * V.T, atol=1e-6)
    for _ in range(20):
        L = rng.standard_normal((d, d))
        S = L @ L.T
        att = sum(V @ S @ B @ S + S @ B.T @ S @ V.T for V, B in rep.params.heads)
        assert np.trace(att) <= 1e-12
    assert rep.all_certified


def test_factored_heads_stay_factored():
    rng = np.random.default_rng(5)
    d, r = 6, 2
    heads = [Head(*(rng.standard_normal((r, d)) for _ in range(3)), rng.standard_normal((d, r)))
             for _ in range(3)]
    p = Params(-np.eye(d), heads=heads)
    rep = nearest_stable(p, np.eye(d), general="ray")
    assert all(f is not None for f in rep.params.factors)
    for (V, B), (_, B1), dist in zip(p.heads, rep.params.heads, rep.per_head, strict=True):
        assert dist == pytest.approx(np.linalg.norm(B1 - B), rel=1e-12)
        c = max(0.0, -np.sum(B * V.T) / np.sum(V * V))
        np.testing.assert_allclose(B1, -c * V.T, atol=1e-13)


def test_several_starts_and_gaussians():
    p, starts = _layer(1)
    rep = nearest_stable(p, [Gaussian(np.zeros(p.d), s) for s in starts])
    rep2 = nearest_stable(p, np.stack(starts))
    assert len(rep.certificates) == len(starts) == 2
    assert rep.distance == pytest.approx(rep2.distance, rel=1e-12)


@pytest.mark.parametrize("kwargs, match", [
    ({"change": "A"}, "change"), ({"norm": "nuc"}, "norm"), ({"general": "x"}, "general"),
    ({"regime": ()}, "regime"), ({"regime": ("blows_up",)}, "regime"),
    ({"margin": -1.0}, "margin"), ({"margin": 1.0}, "margin")])
def test_bad_options_are_refused(kwargs, match):
    with pytest.raises(InvalidInputError, match=match):
        nearest_stable(Params(np.zeros((2, 2)), B=np.eye(2), V=np.eye(2)), np.eye(2), **kwargs)


@pytest.mark.parametrize("cov0", [np.ones(2), np.eye(3), -np.eye(2), np.zeros((0, 2, 2))])
def test_bad_starts_are_refused(cov0):
    with pytest.raises(InvalidInputError, match="cov0"):
        nearest_stable(Params(np.zeros((2, 2)), B=np.eye(2), V=np.eye(2)), cov0)


def test_real_shape_layer_is_repaired_in_a_minute():
    """d = 384, 12 factored heads of rank 32 (i.i.d. N(0, 1/d) factors), A = 0, Σ0 = I."""
    d, H, r = 384, 12, 32
    rng = np.random.default_rng(0)
    heads = [Head(*(rng.standard_normal((r, d)) / np.sqrt(d) for _ in range(3)),
                  rng.standard_normal((d, r)) / np.sqrt(d)) for _ in range(H)]
    p = Params(np.zeros((d, d)), heads=heads)
    t = time.perf_counter()
    rep = nearest_stable(p, np.eye(d))
    elapsed = time.perf_counter() - t
    print(f"d = 384 repair: {elapsed:.2f} s, distance {rep.distance:.4g}, regimes "
          f"{[c.regime for c in rep.certificates]}")
    assert elapsed <= 60
    assert rep.all_certified and rep.certificates[0].check()
    assert len(rep.per_head) == H and all(f is not None for f in rep.params.factors)


@pytest.mark.slow
def test_real_shape_layer_blows_up_before_the_repair():
    d, H, r = 384, 12, 32
    rng = np.random.default_rng(0)
    heads = [Head(*(rng.standard_normal((r, d)) / np.sqrt(d) for _ in range(3)),
                  rng.standard_normal((d, r)) / np.sqrt(d)) for _ in range(H)]
    assert certify(Params(np.zeros((d, d)), heads=heads), np.eye(d)).regime == "blows_up"
