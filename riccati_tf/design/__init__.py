"""Design (SPEC §5): layers with a prescribed attracting Gaussian N(m*, Σ*).

`target` builds, for scalar value matrices V_h = v_h I, the layers A = ½Σ*G + KΣ*⁻¹ (K skew;
a rank-k variant for singular Σ*) and b = −K*m* that make N(m*, Σ*) attract every admissible
start, choosing K by a least-squares criterion.
"""

from .target import CRITERIA, GAINS, Design, attracting_layer

__all__ = ["CRITERIA", "GAINS", "Design", "attracting_layer"]
