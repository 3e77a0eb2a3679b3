"""`nearest_stable` (change "B") for Hurwitz A and indefinite G: the relaxed certified-safe set.

Layers: one or two scalar heads, A Hurwitz, G0 indefinite, starts of rank one or full rank,
d ≤ 4. Checked against: an independent multi-start SLSQP over every entry of the B_h in the set
the result names (G = P − N, P, N ⪰ 0 written as factors, the threshold from scipy's Lyapunov
solver), each candidate certified by `certify`; the witness re-derived with scipy; DOP853 on
the covariance equation written out here; and the quoted kind of layer, where the old answer
changed B by 2.22 while a certified layer lay at 0.15.
"""

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.linalg import solve_continuous_lyapunov
from scipy.optimize import minimize

from riccati_tf.design.relaxed import RELAXED_SET
from riccati_tf.design.repair import MARGIN_RTOL, nearest_stable
from riccati_tf.stability.certificates.entry import certify
from riccati_tf.state.params import Params

SAFE = ("converges", "collapses", "bounded")
N_LAYERS, FAST = 20, (0, 3)
RESTARTS = 2


def _layer(i):
    """Layer i: A Hurwitz, scalar heads with G0 indefinite, starts that blow up."""
    rng = np.random.default_rng(4000 + i)
    while True:
        d = 2 + i % 3
        A = rng.standard_normal((d, d))
        A -= (np.max(np.linalg.eigvals(A).real) + rng.uniform(0.2, 1.0)) * np.eye(d)
        H = 1 + i % 2
        heads = [(rng.choice([-1.0, 1.0]) * rng.uniform(0.5, 1.5) * np.eye(d),
                  rng.standard_normal((d, d))) for _ in range(H)]
        p = Params(A, heads=heads)
        g = np.linalg.eigvalsh(p.G)
        if not (g[0] < 0 < g[-1]):
            continue
        r = 1 if i % 4 < 2 else d
        L = rng.standard_normal((d, r)) * rng.uniform(1.0, 3.0)
        starts = [L @ L.T]
        if certify(p, starts[0]).regime == "blows_up":
            return p, starts


def _rhs(p):
    A, d = p.A, p.d

    def rhs(_t, y):
        S = y.reshape(d, d)
        return (A @ S + S @ A.T + sum(V @ S @ B @ S + S @ B.T @ S @ V.T
                                      for V, B in p.heads)).ravel()
    return rhs


def _independent_best(p, starts, m):
    """The least ‖ΔB‖ (Frobenius over all heads) found by multi-start L-BFGS over every entry
    of the B_h and a factor M of N, on the penalised distance ‖ΔB‖² + ρ(‖(G + MMᵀ)₋‖_F² +
    Σ_starts max(0, λ_max(W∞(MMᵀ)Σ0) − (1 − m))²) for ρ = 1e2 … 1e8 (W∞ from scipy; finite
    difference gradients), each answer certified by `certify` (regime safe and check()). A
    penalty answer may sit a little outside the set, so this best is if anything too small."""
    d, H = p.d, len(p.heads)
    vs = [V[0, 0] for V, _ in p.heads]
    B0 = np.concatenate([B.ravel() for _, B in p.heads])
    n = B0.size
    rng = np.random.default_rng(11)

    def G(x):
        Bs = (B0 + x).reshape(H, d, d)
        return -sum(v * (B + B.T) for v, B in zip(vs, Bs, strict=True))

    def penalised(z, rho):
        x, M = z[:n], z[n:].reshape(d, d)
        N = M @ M.T
        neg = np.minimum(np.linalg.eigvalsh(G(x) + N), 0.0)
        W = solve_continuous_lyapunov(p.A.T, -N)
        over = [max(0.0, float(np.max(np.linalg.eigvals(W @ s).real)) - (1 - m)) for s in starts]
        return x @ x + rho * (neg @ neg + sum(o * o for o in over))

    best = np.inf
    for j in range(RESTARTS):
        z = np.concatenate([rng.standard_normal(n) * 0.3 * j, rng.standard_normal(d * d) * 0.3])
        for rho in (1e2, 1e4, 1e6, 1e8):
            z = minimize(penalised, z, args=(rho,), method="L-BFGS-B",
                         options={"maxiter": 2000}).x
        dist = float(np.linalg.norm(z[:n]))
        if dist >= best:
            continue
        Bs = (B0 + z[:n]).reshape(H, d, d)
        q = Params(p.A, heads=[(V, B) for (V, _), B in zip(p.heads, Bs, strict=True)])
        if all(c.regime in SAFE and c.check() for c in (certify(q, s) for s in starts)):
            best = dist
    return best


@pytest.mark.parametrize("i", [pytest.param(i, marks=() if i in FAST else pytest.mark.long)
                               for i in range(N_LAYERS)])
def test_nearest_within_the_named_set_and_certified(i):
    p, starts = _layer(i)
    rep = nearest_stable(p, starts)
    # the returned layer: certified, its witness and every field re-decided, finite under DOP853
    assert rep.all_certified and rep.check()
    assert all(c.regime in SAFE and c.check() for c in rep.certificates)
    assert rep.searched == RELAXED_SET and rep.route == "relaxed"
    N = rep.witness
    assert np.linalg.eigvalsh(N)[0] >= -1e-9 * max(1.0, np.linalg.norm(N))
    assert np.linalg.eigvalsh(rep.params.G + N)[0] >= -1e-9 * max(1.0, np.linalg.norm(N))
    W = solve_continuous_lyapunov(p.A.T, -N)
    for s in starts:
        assert np.max(np.linalg.eigvals(W @ s).real) < 1
        sol = solve_ivp(_rhs(rep.params), (0.0, 40.0), s.ravel(), method="DOP853", rtol=1e-9,
                        atol=1e-12)
        assert sol.status == 0 and np.all(np.isfinite(sol.y))
        assert np.max(np.abs(sol.y)) <= 1e3 * max(1.0, np.max(np.abs(s)))
    # nearest within the set it names: no independent multi-start answer is nearer by 1 %
    best = _independent_best(p, starts, MARGIN_RTOL)
    print(f"layer {i}: distance {rep.distance:.6g}, independent best {best:.6g}")
    assert np.isfinite(best)
    assert rep.distance <= 1.01 * best + 1e-9


def test_the_quoted_kind_is_repaired_near():
    # d = 4, one head, a rank-one start, A Hurwitz, G indefinite: the relaxed answer is far
    # nearer than the G ⪰ δI clipping (which the old search returned), certified, and a
    # layer that is already in the set (its witness found) is returned unchanged
    rng = np.random.default_rng(1)
    found = 0
    for _ in range(6):
        d = 4
        A = rng.standard_normal((d, d))
        A -= (np.max(np.linalg.eigvals(A).real) + 0.5) * np.eye(d)
        B = rng.standard_normal((d, d))
        u = rng.standard_normal((d, 1))
        p = Params(A, B=B, V=np.eye(d))
        rep = nearest_stable(p, u @ u.T)
        G0 = p.G
        lam = np.linalg.eigvalsh(G0)
        clipping = np.linalg.norm(np.maximum(rep.margin - lam, 0)) / 2
        assert rep.check() and rep.all_certified
        assert rep.distance <= clipping
        if rep.distance == 0:
            found += 1
            assert np.array_equal(rep.params.B, B)
        else:
            assert rep.distance < 0.75 * clipping
    assert found >= 1


def test_check_rejects_forged_fields():
    # every field check() re-decides: the distance, the per-head norms, the witness, the set
    # named, the certified flags, a change outside what `change` names
    from dataclasses import replace

    p, starts = _layer(3)
    rep = nearest_stable(p, starts)
    assert rep.route == "relaxed" and rep.check()
    V0, B0 = rep.params.heads[0]
    forged = {
        "distance": replace(rep, distance=0.5 * rep.distance),
        "per_head": replace(rep, per_head=np.zeros_like(rep.per_head)),
        "witness_zero": replace(rep, witness=np.zeros_like(rep.witness)),
        "witness_dropped": replace(rep, witness=None),
        "witness_shrunk": replace(rep, witness=0.2 * rep.witness),
        "searched": replace(rep, searched="G ⪰ δI"),
        "certified_unsafe": replace(rep, certificates=tuple(certify(p, s) for s in starts),
                                    certified=(True,)),
        "values_moved": replace(rep, params=Params(p.A, heads=[(1.5 * V0, B0),
                                                               *rep.params.heads[1:]])),
    }
    for what, bad in forged.items():
        assert not bad.check(), what


@pytest.mark.parametrize("change", ["B", "V", "A"])
def test_check_holds_for_every_route(change):
    # one layer of each change: the result's own fields pass check()
    p = Params(np.zeros((2, 2)), heads=[(np.eye(2), np.eye(2)), (2 * np.eye(2), np.eye(2))])
    rep = nearest_stable(p, np.eye(2), change=change)
    assert rep.all_certified and rep.check()
    assert rep.searched


def test_pickle_round_trip_keeps_check():
    import pickle

    p, starts = _layer(3)
    rep = nearest_stable(p, starts)
    again = pickle.loads(pickle.dumps(rep))
    assert again.check() and not again.witness.flags.writeable
