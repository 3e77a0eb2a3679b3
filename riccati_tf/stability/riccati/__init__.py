"""Algebraic Riccati, Bernoulli and Lyapunov equations (SPEC §5): the layer under the equilibria.

    CARE        Aᵀ X + X A − X G X + Q = 0              (stabilizing X: A − G X Hurwitz)
    Bernoulli   A Σ + Σ Aᵀ − Σ G Σ = 0                  (the CARE with A → Aᵀ, Q = 0)

The scalar-value covariance flow Σ̇ = AΣ + ΣAᵀ − ΣGΣ has the Bernoulli solutions as equilibria.
Its stabilizing solution (A − ΣG Hurwitz) is found here without a Hamiltonian: in an ordered real
Schur form A = U T Uᵀ whose leading block T₁₁ (k×k) carries the eigenvalues with Re λ > 0,

    Σ* = U₁ P⁻¹ U₁ᵀ,   T₁₁ᵀ P + P T₁₁ = U₁ᵀ G U₁   (one triangular Lyapunov solve),

so rank Σ* = k, the number of anti-stable eigenvalues of A. The CARE in G form (`care_g`, with
G = B R⁻¹ Bᵀ given directly) goes through SLICOT's sb02md (the routine python-control's `care`
calls), keeping the condition estimate it returns; `lyapunov_function` solves LᵀP + PL = −Q.

References: P. Benner, A. J. Laub, V. Mehrmann, "A collection of benchmark examples for the
numerical solution of algebraic Riccati equations I: continuous-time case", TU Chemnitz SPC 95_23
(1995), and J. Abels, P. Benner, "CAREX — a collection of benchmark examples for continuous-time
algebraic Riccati equations (version 2.0)", SLICOT Working Note 1999-14.

The modules follow the method: `constants` (the tolerances), `numerics` (input checks, power-of-two
scaling and the numerical boundary), `results` (`RiccatiSolution`, `NoStabilizingSolution`),
`schur` (the ordered Schur split and its triangular Lyapunov solve), `care` (the CARE in G form
through SLICOT), `stabilizing` (`bernoulli`, the stabilizing Bernoulli solution) and `lyapunov`
(`lyapunov_function`).
"""

from .care import care_g
from .constants import AXIS_RTOL, FAST_PATH_RESIDUAL, SINGULAR_RCOND
from .lyapunov import LyapunovSolution, lyapunov_function
from .results import NoStabilizingSolution, RiccatiSolution
from .stabilizing import bernoulli

__all__ = ["AXIS_RTOL", "FAST_PATH_RESIDUAL", "SINGULAR_RCOND", "LyapunovSolution",
           "NoStabilizingSolution", "RiccatiSolution", "bernoulli", "care_g", "lyapunov_function"]
