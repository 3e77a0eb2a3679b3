"""Hostile cases for the design functions (riccati_tf.design): a layer with a prescribed
attractor, the nearest stable layer, the Lie-algebra rank around a layer and the margins.

Refusals: sizes without a limit, None or booleans where names, sequences or numbers belong,
tensors torch cannot diagonalise. Claims: a margin from a reference that is not a covariance, a
"nearest" layer that is not certified or not the nearest of its set, a lost rank that another
computation finds.
"""

from __future__ import annotations

import numpy as np

from riccati_tf.design import attracting_layer, joint_controllability, nearest_stable
from riccati_tf.state.params import Gaussian, Params

from . import case, cases_of

AREA = "design"

I2 = np.eye(2)
_LAYER = Params(np.zeros((2, 2)), B=I2, V=I2)
_AT = Gaussian(np.zeros(2), I2)


def _torch_cases() -> dict:
    """The margins' refusals of tensors torch cannot diagonalise and of boolean numbers (empty
    without torch)."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a test dependency
        return {}
    from riccati_tf.design.margin import horizon_margin, stability_margin, trace_growth_rate

    I = torch.eye(2, dtype=torch.float64)
    heads = [(I, I, I, I)]
    return {
        "margin_float16_factor": lambda: stability_margin([(I.half(), I.half(), I.half(),
                                                            I.half())]),
        "margin_bfloat16_cov0": lambda: horizon_margin([tuple(h.bfloat16() for h in heads[0])],
                                                       I.bfloat16()),
        "margin_sparse_factor": lambda: stability_margin([(I.to_sparse(), I, I, I)]),
        "margin_sparse_cov0": lambda: horizon_margin(heads, I.to_sparse()),
        "margin_meta_factor": lambda: horizon_margin(
            [(torch.empty(2, 2, dtype=torch.float64, device="meta"), I, I, I)], I),
        "margin_meta_drift": lambda: horizon_margin(
            heads, I, torch.empty(2, 2, dtype=torch.float64, device="meta")),
        "trace_rate_sparse_cov0": lambda: trace_growth_rate(heads, I.to_sparse()),
        "margin_horizon_true": lambda: horizon_margin(heads, I, horizon=True),
        "margin_temperature_true": lambda: stability_margin(heads, temperature=True),
        "margin_indefinite_reference": lambda: horizon_margin(
            [tuple(torch.eye(3, dtype=torch.float64) for _ in range(4))],
            torch.diag(torch.tensor([1.0, 0.5, -1.4], dtype=torch.float64)), horizon=0.45),
    }


cases_of(AREA, "error", {
    "attracting_layer_billion_heads": lambda: attracting_layer(_AT, heads=10**9),
    "attracting_layer_heads_true": lambda: attracting_layer(_AT, heads=True),
    "nearest_stable_regime_none": lambda: nearest_stable(_LAYER, I2, regime=None),
    "nearest_stable_regime_nested": lambda: nearest_stable(_LAYER, I2, regime=[["collapses"]]),
    "nearest_stable_cov0_none": lambda: nearest_stable(_LAYER, None),
    "nearest_stable_margin_true": lambda: nearest_stable(_LAYER, I2, margin=True),
    "joint_configurations_none": lambda: joint_controllability(_LAYER, _AT, None),
    "joint_configurations_unhashable": lambda: joint_controllability(_LAYER, _AT, [["values"]]),
    "joint_configurations_empty": lambda: joint_controllability(_LAYER, _AT, []),
    "joint_depth_none": lambda: joint_controllability(_LAYER, _AT, depth=None),
    **_torch_cases(),
}, lambda fn: fn(), timeout=30)


@case(AREA, "result", timeout=30)
def attracting_layer_at_the_head_limit_is_built():
    """The largest head count accepted still builds the layer (it has every head)."""
    from riccati_tf.design.target import MAX_HEADS

    des = attracting_layer(_AT, heads=MAX_HEADS)
    assert len(des.params.heads) == MAX_HEADS


@case(AREA, "result", timeout=30)
def joint_rank_of_two_scalar_heads_whose_weighted_keys_cancel():
    """V_1 = I, V_2 = 2I, B_2 = −B_1/2 (Σ_h v_h B_h = 0): each head's value field moves Σ, so
    with the values moving per head the rank at a full-rank point is the stratum's 5; checked
    on the fields themselves: the values' generators at the point (one per head and entry,
    (E m + EΣB_h m, EΣB_hΣ + ΣB_hᵀΣEᵀ)) with the b_i already span R⁵ (exact rank over QQ)."""
    from fractions import Fraction

    from riccati_tf.reachability.lie import exact_rank

    B = np.array([[1, 2], [0, 1]], dtype=object)
    heads = [(np.eye(2), B.astype(float)), (2 * np.eye(2), -B.astype(float) / 2)]
    mean = np.array([Fraction(1), Fraction(1, 2)], dtype=object)
    S = np.array([[Fraction(2), Fraction(3, 10)], [Fraction(3, 10), Fraction(1)]], dtype=object)
    rows = [[1, 0, 0, 0, 0], [0, 1, 0, 0, 0]]
    for Bh in (B, -B / Fraction(2)):
        for k in range(2):
            for l in range(2):
                E = np.zeros((2, 2), dtype=object)
                E[k, l] = 1
                M = E @ mean + E @ S @ Bh @ mean
                C = E @ S @ Bh @ S
                C = C + C.T
                rows.append([M[0], M[1], C[0, 0], C[1, 0], C[1, 1]])
    assert exact_rank(rows) == 5
    jc = joint_controllability(Params(-np.eye(2), heads=heads),
                               Gaussian(np.array([1.0, 0.5]), np.array([[2.0, 0.3], [0.3, 1.0]])),
                               ["values"])
    assert jc.full == (True,), jc.reason


def _hurwitz_indefinite(seed: int, d: int, rank: int):
    """A Hurwitz A, one or two scalar heads with G indefinite, a start that blows up."""
    from riccati_tf.stability.certificates.entry import certify

    rng = np.random.default_rng(seed)
    while True:
        A = rng.standard_normal((d, d))
        A -= (np.max(np.linalg.eigvals(A).real) + 0.5) * np.eye(d)
        heads = [(rng.uniform(0.5, 1.5) * np.eye(d), rng.standard_normal((d, d)))
                 for _ in range(1 + seed % 2)]
        p = Params(A, heads=heads)
        g = np.linalg.eigvalsh(p.G)
        L = rng.standard_normal((d, rank)) * 2
        if g[0] < 0 < g[-1] and certify(p, L @ L.T).regime == "blows_up":
            return p, L @ L.T


def _nearest_is_certified_and_nearer_than_clipping(args):
    """nearest_stable on a Hurwitz-A indefinite-G layer: the layer returned is certified
    (check() True), its witness re-derived with scipy (G + N ⪰ 0, N ⪰ 0, ρ(W∞(N)Σ0) < 1),
    finite under DOP853 to t = 40, and no farther than the G ⪰ δI clipping (which it
    contains)."""
    from scipy.integrate import solve_ivp
    from scipy.linalg import solve_continuous_lyapunov

    seed, d, rank = args
    p, S0 = _hurwitz_indefinite(seed, d, rank)
    rep = nearest_stable(p, S0)
    assert rep.all_certified and rep.check(), rep.route
    assert rep.certificates[0].regime in ("collapses", "converges", "bounded")
    vs = p.value_scalars
    clipping = np.linalg.norm(np.maximum(rep.margin - np.linalg.eigvalsh(p.G), 0.0)) / (
        2 * np.sqrt(sum(v * v for v in vs)))
    assert rep.distance <= clipping * (1 + 1e-9), (rep.distance, clipping)
    if rep.witness is not None:
        N = rep.witness
        W = solve_continuous_lyapunov(p.A.T, -N)
        assert np.linalg.eigvalsh(N)[0] >= -1e-9 * max(1.0, np.linalg.norm(N))
        assert np.linalg.eigvalsh(rep.params.G + N)[0] >= -1e-9 * max(1.0, np.linalg.norm(N))
        assert np.max(np.linalg.eigvals(W @ S0).real) < 1
    q = rep.params

    def rhs(_t, y):
        S = y.reshape(d, d)
        return (q.A @ S + S @ q.A.T + sum(V @ S @ B @ S + S @ B.T @ S @ V.T
                                          for V, B in q.heads)).ravel()

    sol = solve_ivp(rhs, (0.0, 40.0), S0.ravel(), method="DOP853", rtol=1e-9, atol=1e-12)
    assert sol.status == 0 and np.all(np.isfinite(sol.y))


cases_of(AREA, "result", {
    "nearest_stable_rank_one_start_d4": (1, 4, 1),
    "nearest_stable_rank_one_start_d3_two_heads": (2, 3, 1),
    "nearest_stable_full_rank_start_d2": (3, 2, 2),
    "nearest_stable_full_rank_start_d3_two_heads": (5, 3, 3),
}, _nearest_is_certified_and_nearer_than_clipping, timeout=120)


def _margin_never_past_blowup(args):
    """horizon_margin from a PSD reference of norm z0 under V = vI, B = βI, A = aI: a positive
    margin must come from τ below the blow-up time of Σ0 = z0 I (closed form, mpmath)."""
    import mpmath
    import torch

    from riccati_tf.design.margin import horizon_margin

    a, v, beta, eig = args
    d = len(eig)
    cov0 = torch.diag(torch.tensor(eig, dtype=torch.float64))
    z0 = max(eig)
    mpmath.mp.dps = 40
    k = mpmath.mpf(v) * beta * z0
    tstar = (1 / (2 * k) if a == 0 else mpmath.log(1 + mpmath.mpf(a) / k) / (2 * a))
    I = torch.eye(d, dtype=torch.float64)
    for j in range(-200, 201, 5):
        tau = float(tstar * (1 + j * mpmath.mpf(2) ** -52))
        m = float(horizon_margin([(beta * I, I, v * I, I)], cov0, a * I, horizon=tau))
        assert not (m > 0 and mpmath.mpf(tau) >= tstar), (j, tau, m)


cases_of(AREA, "result", {
    "horizon_margin_quoted_norm_1_4": (0.0, 1.0, 1.0, [1.0, 0.5, 1.4]),
    "horizon_margin_growing_drift": (0.7, 0.3, 2.0, [0.2, 2.5]),
    "horizon_margin_weak_contraction": (-0.2, 1.0, 1.0, [3.0, 1.0, 0.0, 0.5]),
}, _margin_never_past_blowup, timeout=60)
