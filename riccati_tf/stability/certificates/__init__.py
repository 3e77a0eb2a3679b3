"""Stability and blow-up certificates for time-invariant layers (SPEC §5–§6).

A certificate answers "where does Σ(t) go from Σ0?" with one of

    "converges"     Σ(t) → Σ* ≠ 0 (an equilibrium of F(Σ) = AΣ + ΣAᵀ + Σ_h(V_hΣB_hΣ + ΣB_hᵀΣV_hᵀ))
    "collapses"     Σ(t) → 0
    "blows_up"      Σ(t) diverges at a finite T*
    "grows"         Σ(t) unbounded as t → ∞ without finite-time blow-up
    "bounded"       Σ(t) stays below a stated bound for every t ≥ 0 (A Lyapunov stable, not
                    Hurwitz, and the attention term −ΣGΣ with G ⪰ 0 or zero: marginally stable)
    "undetermined"  no theorem applies and the numerical evidence is not conclusive

and ships the evidence: the equilibrium with its residual, the linearisation L in orthonormal
symmetric coordinates, a Lyapunov matrix P ≻ 0 with LᵀP + PL = −Q (python-control `lyap`), the
decay rate, T* and the singular direction. `exact` says that the conclusion is a theorem of
SPEC §5 (scalar V: G = −Σ_h v_h(B_h + B_hᵀ), Σ(t) = e^{At}Σ0(I + W(t)Σ0)⁻¹e^{Aᵀt}) whose every
premise was decided exactly on the data as given — the floats are dyadic rationals, so signs,
ranks, definiteness, half-plane counts of eigenvalues and the threshold λ_max(W∞Σ0) ⋚ 1 are decided
in rational arithmetic (d ≤ EXACT_MAX_D). A premise decided with a rank or eigenvalue tolerance
makes the certificate numerical (exact=False) and the tolerances are stored in `tolerance`;
`global_` says whether the conclusion holds for every Σ0 ≻ 0, not just this one.

The modules, from the bottom of the import graph up:

    constants      REGIMES, the tolerances and the work budgets
    rationals      exact rational arithmetic on the floats as given (inertia, Routh–Hurwitz,
                   ranks, Lyapunov inequalities with P rounded to integers)
    blowup         G ⪯ 0: the stable invariant subspace of A, λ_max(W∞Σ0), T* as the first root
                   of λ_min(I + L0ᵀW(t)L0) and its sign-change check
    premises       the premises of the SPEC §5 theorems and the theorem they establish
    bounded        the bounded regime: the attention term decided exactly, a witness S ≻ 0 with
                   AᵀS + SA ⪯ 0 in exact rational arithmetic, the bound on λ_max(Σ(t))
    local          local Lyapunov certificates: Newton–Kantorovich ball and basin level at Σ*,
                   the linear Lyapunov function tr(PΣ) of Σ* = 0 on the PSD cone
    basin          general V, stiff flows: a rounding-safe Lyapunov ball around a Newton
                   equilibrium and the implicitly integrated path entering it
    integration    the segmented integration of Σ that certify and check() share
    verification   `Certificate.check()`: every stored claim re-decided (VERIFIERS: the
                   theorems with a verifier of their own)
    certificate    the `Certificate` dataclass
    numerical      numerical evidence: bounded integrations, attracting balls, growth
    stiff          the basin certificate of a stiff general-V flow, built and checked
    entry          `certify`: the theorem branches, then numerical evidence
"""

# ruff: noqa: F401  (the names other modules and the tests import from the package)
from .blowup import (
    _gramian,
    _horizon,
    _monotone_root,
    _rank0,
    _rate_scale,
    _threshold,
    blowup_check,
    cov_root,
)
from .certificate import Certificate, _converged
from .constants import (
    BALL_RTOL,
    BLOWUP_CHECK_RTOL,
    EXACT_CHECK_MAX_D,
    EXACT_MAX_D,
    MAX_GRAMIAN_STEPS,
    MAX_NORM_TIME,
    REGIMES,
)
from .entry import certify
from .integration import _Integrator
from .local import _level, _local, _local_bounds, _zero_equilibrium
from .numerical import (
    _attracting_ball,
    _balls,
    _numerical,
    _quadratic_bound,
    _zero_ball,
)
from .premises import (
    THEOREMS,
    Premises,
    _numerical_premises,
    bracket_agrees,
    default_tolerance,
    premises,
    theorem_of,
)
from .rationals import _exact_ok, _half_planes, _q, _sym_inertia, exact_rank
from .verification import _premises_ok, _verify

# Certificate and certify are documented where riccati_tf exports them
__all__ = ["EXACT_MAX_D", "REGIMES"]
