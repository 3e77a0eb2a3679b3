"""Trajectories of the moment system (SPEC §2, §4–§5): `flow` integrates the continuous-depth
system (closed form for scalar value matrices, Runge–Kutta otherwise) up to a horizon or the
blow-up time T*, `layers` applies discrete residual layers x⁺ = x + τ X(x).

`integrate` holds `flow` and the choice of method (and re-exports the public names below);
`trajectory` the result, `Trajectory` and `State`; `layers` the discrete layers; `exact` the
closed-form (Van Loan) flow of the Bernoulli equation Σ̇ = AΣ + ΣAᵀ − ΣGΣ and its
error-controlled mean, with `dense` its dense output; `rk` the Runge–Kutta flow (DOP853, in t
or in Sundman's time towards a pole); `implicit` the stiff method (Rodas4).
"""

from .integrate import State, Trajectory, flow, layers

__all__ = ["State", "Trajectory", "flow", "layers"]
