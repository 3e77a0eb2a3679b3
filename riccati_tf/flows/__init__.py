"""Trajectories of the moment system (SPEC §2, §4–§5): `flow` integrates the continuous-depth
system (closed form for scalar value matrices, Runge–Kutta otherwise) up to a horizon or the
blow-up time T*, `layers` applies discrete residual layers x⁺ = x + τ X(x).

`integrate` holds the entry points and `Trajectory`; `exact` the closed-form (Van Loan) flow of
the Bernoulli equation Σ̇ = AΣ + ΣAᵀ − ΣGΣ and its error-controlled mean.
"""

from .integrate import State, Trajectory, flow, layers

__all__ = ["State", "Trajectory", "flow", "layers"]
