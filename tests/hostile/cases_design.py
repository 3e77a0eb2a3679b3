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
