"""Design (SPEC §4–§5): layers with a prescribed attracting Gaussian, the nearest stable layer,
stability and controllability together, and a differentiable stability margin.

`target` builds, for scalar value matrices V_h = v_h I, the layers A = ½Σ*G + KΣ*⁻¹ (K skew;
a rank-k variant for singular Σ*) and b = −K*m* that make N(m*, Σ*) attract every admissible
start, choosing K by a least-squares criterion. `repair` finds the least change of the B_h
(Frobenius) that moves a layer into a certified non-blow-up regime. `joint` asks whether the
control system around a layer keeps the Lie-algebra rank at its target. `margin` holds torch
functions of a layer's weights: μ ≥ 0 where no start can blow up, and the finite-depth m(τ) > 0
where no start of bounded spectral norm blows up within the depth τ (torch imported on first
use).
"""

from .joint import JointControllability, joint_controllability
from .margin import (
    MAX_MARGIN_D,
    encoder_horizon_margins,
    encoder_margins,
    horizon_margin,
    stability_margin,
    trace_growth_rate,
)
from .repair import (
    CHANGES,
    FEASIBILITY_RTOL,
    GENERAL,
    MARGIN_RTOL,
    NORMS,
    NUMERICAL_MAX_D,
    SAFE_REGIMES,
    SHIFT_DOUBLINGS,
    SHIFT_RTOL,
    Repair,
    nearest_stable,
)
from .target import CRITERIA, GAINS, MAX_HEADS, Design, attracting_layer

__all__ = ["CHANGES", "CRITERIA", "FEASIBILITY_RTOL", "GAINS", "GENERAL", "MARGIN_RTOL",
           "MAX_HEADS", "MAX_MARGIN_D", "NORMS", "NUMERICAL_MAX_D", "SAFE_REGIMES",
           "SHIFT_DOUBLINGS", "SHIFT_RTOL", "Design", "JointControllability", "Repair",
           "attracting_layer", "encoder_horizon_margins", "encoder_margins", "horizon_margin",
           "joint_controllability", "nearest_stable", "stability_margin", "trace_growth_rate"]
