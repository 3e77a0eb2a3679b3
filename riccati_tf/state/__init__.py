"""The state and its law (SPEC §1–§2): layer parameters, Gaussian states, the moment equations
and the conversion policy every input passes through.

    ṁ = (A + V) m + V Σ B m + b,      Σ̇ = A Σ + Σ Aᵀ + V Σ B Σ + Σ Bᵀ Σ Vᵀ

`params` holds `Params` (A, b and the attention heads, dense (V_h, B_h) or factored `Head`) and
`Gaussian` (m, Σ); `moments` evaluates the right-hand side above; `validation` converts and
checks arrays (shape, finiteness, symmetry, definiteness, rank) for every other module.
"""

from .moments import moment_rhs
from .params import Gaussian, Head, Params

__all__ = ["Gaussian", "Head", "Params", "moment_rhs"]
