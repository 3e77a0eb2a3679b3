"""Exact finite-time steering between Gaussians of equal covariance rank (SPEC §4).

    Φ1 Σ0 Φ1ᵀ = Σ1,   Φ1 = Q P  (Q ∈ SO(d), P ≻ 0),
    A = log P / τ1 on [0, τ1],   A = log Q / τ2 on [τ1, T],
    m_end = e^{Aτ} m_start + (∫_0^τ e^{As} ds) b   in each phase.

Φ1 is chosen as Ψ R: R = e^Ω the direct rotation taking range Σ0 onto range Σ1 (plane rotations by
the principal angles θ_i ∈ [0, π/2], so log Q = Ω is explicit and real, never near an eigenvalue
−1), and Ψ ≻ 0 acting on range Σ1 as the Gaussian optimal-transport map between the rotated and
the target factor (identity on the complement). Then Φ1 = R P with P = RᵀΨR is the polar
decomposition, log P = Rᵀ (log Ψ) R is a symmetric logarithm, and Φ1 itself (similar to RΨ, whose
eigenvalues satisfy Re λ ≥ 0 because R + Rᵀ ⪰ 0 and Ψ ≻ 0) has a real principal logarithm K.

Attention route (controls "attention": B(t) and b(t) free, V constant in depth, A held): with
Σ(t) = e^{Kt/T}Σ0e^{Kᵀt/T}, V = s (K/T − A) and B(t) = Σ(t)⁺/s (s the softmax temperature),
V Σ B Σ = (K/T − A) Σ, so Σ̇ = AΣ + ΣAᵀ + VΣBΣ + ΣBᵀΣVᵀ = (K/T)Σ + Σ(K/T)ᵀ follows the planned
path on every stratum, and b(t) = (K/T) m + b̄ − (A + V) m − V Σ B m makes ṁ = (K/T) m + b̄.
With a value matrix V imposed by the caller (Σ ≻ 0, V invertible), B(t) = Σ(t)⁻¹V⁻¹(K_j − A)
tracks the two polar phases instead. Every other configuration (or case) goes to multiple
shooting with piecewise-constant controls (`scipy.optimize.least_squares`, minimum-energy
regularisation continued to zero), after the Lie-algebra rank test of `riccati_tf.reachability.lie`.

Scales. The moment equations are equivariant under (m, Σ, B, b) ↦ (m·2^−f, Σ·2^−e, B·2^e, b·2^−f)
(A and V unchanged). Verification and shooting run in such a `Frame` (powers of two, exact), so
that states of every representable magnitude are integrated with tolerances relative to their
size, and norms are taken on arrays scaled by powers of two (no overflow near 1e308, no loss in
the subnormal range). The constructive routes' controls scale like 1/T (A = log P/τ, b ~ Δm/T,
V = s(log Φ1/T − A)): a depth T too short for them to be representable is an InvalidInputError
that names the shortest depth; a plan whose controls leave float64 otherwise (B(t) = Σ(t)⁺/s for
Σ ~ 1e-315) is refused with SolverError.
"""

from .constants import DEFAULT_TEMPERATURE, DEFAULT_TOL, MAX_DIMENSION, MAX_HORIZON, MAX_PIECES
from .entry import steer as steer
from .geometry import direct_rotation as direct_rotation
from .geometry import phase_bias as phase_bias
from .geometry import transport as transport
from .pieces import ConstantPiece as ConstantPiece
from .pieces import TrackingPiece as TrackingPiece
from .plan import ControlPlan as ControlPlan
from .plan import terminal_error as terminal_error

# steer and ControlPlan are documented as riccati_tf.steer and riccati_tf.ControlPlan
__all__ = ["DEFAULT_TEMPERATURE", "DEFAULT_TOL", "MAX_DIMENSION", "MAX_HORIZON", "MAX_PIECES"]
