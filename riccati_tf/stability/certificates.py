"""Stability and blow-up certificates for time-invariant layers (SPEC §5–§6).

A certificate answers "where does Σ(t) go from Σ0?" with one of

    "converges"     Σ(t) → Σ* ≠ 0 (an equilibrium of F(Σ) = AΣ + ΣAᵀ + Σ_h(V_hΣB_hΣ + ΣB_hᵀΣV_hᵀ))
    "collapses"     Σ(t) → 0
    "blows_up"      Σ(t) diverges at a finite T*
    "grows"         Σ(t) unbounded as t → ∞ without finite-time blow-up
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

Numerical evidence (general V, or no theorem): a bounded integration, then a local certificate —
a sublevel set {h : hᵀPh ≤ ρ} around Σ* that lies inside its basin of attraction, because with
F(Σ* + H) = L(H) + q(H), ‖q(H)‖_F ≤ c‖H‖_F², the derivative of V(h) = hᵀPh obeys
V̇ ≤ −λ_min(Q)|h|² + 2‖P‖c|h|³ < 0 for |h| < λ_min(Q)/(2‖P‖c). The final state of the
integration must lie in that set; the certificate is then labelled exact=False.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.linalg import LinAlgError, cholesky, eigh, schur
from scipy.optimize import brentq

from ..display import html_table, latex_matrix, number
from ..errors import InvalidInputError, SolverError
from ..flows.exact import van_loan
from ..flows.integrate import flow
from ..state.lowrank import FACTOR_MIN_D, factored_layer
from ..state.params import SCALAR_RTOL, Gaussian, Params
from ..state.validation import as_covariance, as_vector, psd_rank
from .equilibria import (
    ACCEPT_RTOL,
    ENUMERATION_MAX_D,
    KRONECKER_MAX_D,
    Equilibrium,
    drift_spectrum,
    equilibria,
    linearization_matrix,
    make_equilibrium,
    natural_scale,
    quadratic_constant,
    relative_residual,
    sym_basis,
    to_coords,
)
from .equilibria import F as F_of
from .riccati import (
    AXIS_RTOL,
    SINGULAR_RCOND,
    lapack_sylvester_gramian,
    lyapunov_function,
    numerical_failures,
    schur_split,
)

if TYPE_CHECKING:
    import control
    import sympy

__all__ = ["EXACT_MAX_D", "REGIMES", "Certificate", "certify"]

#: the regimes a certificate can conclude, in `Certificate.regime`
REGIMES = ("converges", "collapses", "blows_up", "grows", "undetermined")
EPS = float(np.finfo(float).eps)
#: premises are decided exactly (rational arithmetic on the floats as given) up to this d; beyond
#: it, and for value matrices that are scalar only within SCALAR_RTOL or a Σ0 that is PSD only
#: within validation's PSD_RTOL, they are decided numerically with the tolerances below
EXACT_MAX_D = 6
#: numerical premises — G counts as semidefinite when its eigenvalues of the wrong sign are
#: ≤ SIGN_RTOL · max |λ(G)|
SIGN_RTOL = 1e-12
#: numerical premise of "psd_marginal": an eigenvalue λ of A on the axis is semisimple when
#: A − (i Im λ) I has as many singular values ≤ SEMISIMPLE_RTOL ‖A‖_F as there are eigenvalues of A
#: within SEMISIMPLE_RTOL ‖A‖_F of λ
SEMISIMPLE_RTOL = 1e-8
#: |λ_max(W∞Σ0) − 1| ≤ THRESHOLD_RTOL is the borderline of the G ⪯ 0, Hurwitz-A theorem
THRESHOLD_RTOL = 1e-8
#: range Σ0 ⊂ stable subspace S when ‖(I − Π_S) L0‖_F ≤ RANGE_RTOL ‖L0‖_F (Σ0 = L0 L0ᵀ)
RANGE_RTOL = 1e-8
#: numerical horizons: HORIZON_RATES time constants 1/min|Re λ(A)|, at most MAX_NORM_TIME over
#: the rate scale max(‖A‖₂, c‖Σ0‖₂)
HORIZON_RATES = 40.0
MAX_NORM_TIME = 3000.0
HORIZON_DOUBLINGS = 2
#: segments have ‖A‖₂ · length ≤ SEGMENT_NORM_TIME: the linear part alone grows tr Σ by at most
#: e^{2·8} < 1e8 per segment, below the growth that triggers `flow`'s blow-up test
SEGMENT_NORM_TIME = 8.0
#: a bounded integration stops once tr Σ leaves [tr Σ0 / GROWTH_STOP, GROWTH_STOP · max(tr Σ0,
#: blow-up scale)] (`_blowup_scale`)
GROWTH_STOP = 1e12
#: ... and never beyond MAX_GROWTH · GROWTH_STOP · tr Σ0 (far from overflow)
MAX_GROWTH = 1e100
#: work limit of one bounded Runge–Kutta integration (right-hand-side evaluations)
MAX_RHS_EVALUATIONS = 60_000
#: "grows": tr Σ(T) ≥ GROWTH_FACTOR · tr Σ0 and still increasing exponentially
GROWTH_FACTOR = 1e6
#: numerical convergence onto an equilibrium without a Lyapunov set: distance ≤ CLOSE_RTOL scale
CLOSE_RTOL = 1e-6
#: the certified basin uses this fraction of the largest admissible level ρ
BASIN_SAFETY = 0.5
#: general V beyond d = 30: the state is first tested against the attracting ball of
#: `_attracting_ball` after 1/BALL_CHECKS of an integration segment, later ones at most that far
#: apart and at least 1/BALL_SHORTEST of it, each aimed at the time when the distance to Σ*
#: reaches BALL_AIM times the ball's radius
BALL_CHECKS = 4
BALL_SHORTEST = 16
BALL_AIM = 0.8
#: ... integrating at this relative tolerance (flow's absolute one): the ball's radius is
#: BASIN_SAFETY times the attracting one, so an error of this relative size in Σ cannot move a
#: state from inside the ball to outside the attracting region (tests/test_certificates.py
#: compares the final state with DOP853 at rtol 1e-13)
BALL_RTOL = 1e-6
#: the zero ball (`_ZeroBall`) takes μ and λ_min(P) this many d·eps (relative to the norms of
#: their products) below the computed values: the rounding of AᵀP + PA and of a symmetric
#: eigensolver, with a wide berth
ROUNDING_ULPS = 64
#: check(): blow-up sign change of λ_min(I + L0ᵀW(t)L0) within T*(1 ± BLOWUP_CHECK_RTOL)
BLOWUP_CHECK_RTOL = 1e-7
#: check() in exact rational arithmetic up to this d
EXACT_CHECK_MAX_D = 6
#: work budgets: Van Loan steps of one Gramian W(t) (T* search and its check), and Brent
#: iterations locating T* inside one step
MAX_GRAMIAN_STEPS = 4096
BRENT_MAXITER = 200
#: P is rounded to integers after scaling its largest entry to about 2^P_BITS
P_BITS = 52


@dataclass(frozen=True, eq=False)
class Certificate:
    """Where Σ(t) goes from Σ0 under a time-invariant layer, and the evidence for it.

    The answer of `certify` for the covariance flow (SPEC §5–§6)

        Σ̇ = A Σ + Σ Aᵀ + Σ_h (V_h Σ B_h Σ + Σ B_hᵀ Σ V_hᵀ),      Σ(0) = Σ0,

    one of REGIMES, with what makes it checkable: the equilibrium and its residual, the
    linearisation L in orthonormal symmetric coordinates (|h| = ‖H‖_F), a Lyapunov matrix
    P ≻ 0 with Lᵀ P + P L = −Q, the decay rate, T* and the singular direction of a blow-up, and
    the tolerances of any premise decided in floating point. `check()` re-verifies all of it
    from the stored matrices alone; `certify` returns only certificates that pass it. The stored
    Σ*, rate and T* are floating-point values whether or not the conclusion is exact.

    Parameters
    ----------
    regime : str
        One of REGIMES: "converges" (Σ(t) → Σ* ≠ 0), "collapses" (Σ(t) → 0), "blows_up"
        (Σ(t) diverges at a finite T*), "grows" (unbounded as t → ∞ without finite-time
        blow-up) or "undetermined" (no theorem applies and the numerical evidence is not
        conclusive).
    equilibrium : Equilibrium or None
        Σ* (converges / collapses), else None.
    lyapunov : (n_s, n_s) ndarray or None
        P ≻ 0 with Lᵀ P + P L = −Q in orthonormal symmetric coordinates, n_s = d(d+1)/2; None
        where no local certificate is given.
    rate : float or None
        Decay rate −max Re λ(L) (or 2 min Re λ(A) from the closed form) for converges /
        collapses; the exponential growth rate for a numerical "grows"; None otherwise, and None
        for "psd_marginal", whose collapse is algebraic, ‖Σ(t)‖₂ = O(1/t)
        (≤ κ²/(λ_min(G) t) for G ≻ 0, κ = sup_t ‖e^{At}‖₂), not exponential.
    blowup_time : float or None
        T* for blows_up, else None.
    exact : bool
        True: a SPEC §5 theorem whose every premise was decided in exact rational arithmetic on
        the data as given. False: premises decided with tolerances, or numerical evidence.
    global_ : bool
        The conclusion holds for every Σ0 ≻ 0, not just this one (only for exact=True).
    reason : str
        The argument in words: the theorem and its premises, or the numerical evidence.
    params : Params
        The layer.
    cov0 : (d, d) ndarray
        Σ0 (read-only).
    mean0 : (d,) ndarray
        m0 (read-only), stored for `linearization`; the regime concerns Σ only.
    theorem : str, optional
        The premise `check()` re-verifies: "psd_hurwitz", "psd_marginal", "psd_gramian_pd",
        "psd_gramian_singular", "nsd_unstable_range", "nsd_threshold", "closed_form_root",
        "zero" or "numerical" (default).
    lyapunov_rhs : (n_s, n_s) ndarray or None, optional
        Q of the Lyapunov equation (Q ≻ 0).
    operator : (n_s, n_s) ndarray or None, optional
        L, the linearisation at Σ* in orthonormal symmetric coordinates.
    blowup_direction : (d,) ndarray or None, optional
        Unit vector along which Σ(t) diverges at T* (blows_up).
    threshold : float or None, optional
        λ_max(W∞Σ0) for "nsd_threshold" (W∞ with Aᵀ W∞ + W∞ A + |G| = 0).
    horizon : float or None, optional
        End time of the integration used as evidence.
    final_cov : (d, d) ndarray or None, optional
        Σ at `horizon`.
    basin : float or None, optional
        Level ρ of the certified sublevel set {h : hᵀ P h ≤ ρ} around Σ* holding final_cov; for
        a collapse certified without `lyapunov`, the level of {Σ ⪰ 0 : tr(PΣ) < ρ} with
        AᵀP + PA = −I in which tr(PΣ) decreases (`check()` recomputes P and ρ).
    kantorovich_radius : float or None, optional
        Radius around the stored Σ* in which an exact equilibrium exists (Newton–Kantorovich).
    tolerance : dict of str to float, or None, optional
        For a numerical (exact=False) scalar-V certificate, the tolerances (name → value) with
        which its premises were decided (`default_tolerance`: sign_rtol, axis_rtol,
        semisimple_rtol, rank_rtol, singular_rcond, range_rtol, threshold_rtol and, for V scalar
        only within SCALAR_RTOL, scalar_rtol); `check()` re-decides them with the same values.
        None for an exact certificate, every premise of which `check()` re-decides in rational
        arithmetic.

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field: a certificate is immutable.
    InvalidInputError
        From `linearization()` when the certificate carries no equilibrium.

    See Also
    --------
    certify : computes the certificate.
    Certificate.check : re-verifies it from its stored matrices.
    riccati_tf.equilibria : the equilibria Σ* and their stability.
    riccati_tf.stability.riccati.lyapunov_function : the Lyapunov matrix P.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".
    .. [2] riccati_tf theory, SPEC §6 "Certificates".

    Examples
    --------
    A scalar-value layer that converges to Σ* = diag(2, 4) from every Σ0 ≻ 0, with a local
    Lyapunov certificate at Σ*:

    >>> import numpy as np
    >>> from dataclasses import replace
    >>> from riccati_tf import Gaussian, Params, certify
    >>> p = Params(np.diag([1.0, 2.0]), B=0.5 * np.eye(2), V=-np.eye(2))
    >>> c = certify(p, Gaussian(np.zeros(2), np.eye(2)))
    >>> c
    Certificate(regime='converges', exact=True, global_=True, theorem='psd_gramian_pd', d=2,
                rate=2, T*=None, rank Σ*=2)
    >>> c.equilibrium.residual < 1e-12, c.lyapunov.shape, c.lyapunov_min_eig > 0
    (True, (3, 3), True)
    >>> c.check()
    True

    A tampered certificate fails its check:

    >>> replace(c, lyapunov=-c.lyapunov).check()
    False
    """

    regime: str
    equilibrium: Equilibrium | None
    lyapunov: NDArray[np.float64] | None
    rate: float | None
    blowup_time: float | None
    exact: bool
    global_: bool
    reason: str
    params: Params
    cov0: NDArray[np.float64]
    mean0: NDArray[np.float64]
    theorem: str = "numerical"
    lyapunov_rhs: NDArray[np.float64] | None = None
    operator: NDArray[np.float64] | None = None
    blowup_direction: NDArray[np.float64] | None = None
    threshold: float | None = None
    horizon: float | None = None
    final_cov: NDArray[np.float64] | None = None
    basin: float | None = None
    kantorovich_radius: float | None = None
    tolerance: dict[str, float] | None = None

    def __repr__(self) -> str:
        """The verdict without the arrays (nothing is recomputed; call `check()` to verify)."""
        eq = "" if self.equilibrium is None else f", rank Σ*={self.equilibrium.rank}"
        return (f"Certificate(regime={self.regime!r}, exact={self.exact}, global_={self.global_}, "
                f"theorem={self.theorem!r}, d={self.params.d}, rate={number(self.rate)}, "
                f"T*={number(self.blowup_time)}{eq})")

    def _repr_html_(self) -> str:
        eq = self.equilibrium
        rows = [("regime", self.regime), ("theorem", self.theorem), ("exact", self.exact),
                ("global", self.global_), ("d", self.params.d), ("rate", number(self.rate)),
                ("T*", number(self.blowup_time)), ("threshold λ_max(W∞Σ0)", number(self.threshold)),
                ("rank Σ*", None if eq is None else eq.rank), ("reason", self.reason)]
        return html_table("Certificate", rows)

    def _repr_latex_(self) -> str | None:
        """Σ* as a matrix for converges/collapses, T* for a blow-up (None when d > LATEX_MAX_D or
        there is nothing to show)."""
        if self.blowup_time is not None:
            return rf"$T^* = {number(self.blowup_time)}$ (blows up)"
        if self.equilibrium is None:
            return None
        M = latex_matrix(self.equilibrium.cov)
        return None if M is None else rf"$\Sigma(t) \to \Sigma^* = {M}$ ({self.regime})"

    @property
    def lyapunov_min_eig(self) -> float | None:
        """λ_min(P) (SPEC §6 asks for it next to λ_min(Q))."""
        return None if self.lyapunov is None else float(np.linalg.eigvalsh(self.lyapunov)[0])

    @property
    def rhs_min_eig(self) -> float | None:
        """λ_min(Q) of the Lyapunov right-hand side."""
        return None if self.lyapunov_rhs is None else float(
            np.linalg.eigvalsh(self.lyapunov_rhs)[0])

    def check(self) -> bool:
        """Re-verify the certificate from its stored matrices alone; False if anything fails.

        Floating point: the equilibrium's residual (≤ 1e-9 and not above twice the stored one),
        its rank/sign for the regime, L recomputed from (params, Σ*) equal to the stored operator,
        Cholesky of P and of −(LᵀP + PL), a Newton–Kantorovich ball around Σ* holding an exact
        equilibrium at which P still certifies L, the basin inclusion of the final state, the
        premises of the theorem used (exactly, in rational arithmetic, for exact=True; with the
        stored `tolerance` otherwise), and for blow-up the sign change of λ_min(I + L0ᵀW(t)L0)
        across T*(1 ± 1e-7) (scalar V; a general-V blow-up is integration evidence, exact=False,
        of which only the form is checked; the first-ness of the root is not re-checked for
        indefinite G). For d ≤ 6 the Lyapunov inequalities and the residual bound are re-checked
        in exact rational arithmetic, with P rounded to integers after scaling.
        """
        try:
            with np.errstate(all="ignore"):  # an overflowing check quantity fails the check
                return bool(_verify(self))
        except (LinAlgError, SolverError, ValueError, ArithmeticError, TypeError, KeyError,
                IndexError, AttributeError):
            return False

    def linearization(self) -> control.StateSpace:
        """The linearised mean–covariance dynamics at (m*, Σ*) as a python-control StateSpace.

        State z = (δm, h) with h the orthonormal coordinates of δΣ; input u = δb; output z:

            δṁ = K* δm + Σ_h V_h H B_h m* + u,    ḣ = L h,    K* = A + Σ_h V_h + Σ_h V_h Σ* B_h,

        linearised about m* (or m = 0 when K* is not Hurwitz and there is no mean equilibrium).
        """
        import control

        if self.equilibrium is None:
            raise InvalidInputError(f"a certificate of regime {self.regime!r} carries no "
                                    f"equilibrium: there is no point to linearise about")
        p, cov = self.params, self.equilibrium.cov
        d = p.d
        m = self.equilibrium.mean if self.equilibrium.mean is not None else np.zeros(d)
        L = self.operator if self.operator is not None else linearization_matrix(p, cov)
        n = L.shape[0]
        K = p.M(cov) + sum((V for V, _ in p.heads), start=0.0)
        N = sym_basis(d)
        coupling = np.zeros((d, n))
        for k in range(n):
            E = N[:, k].reshape(d, d)
            coupling[:, k] = sum(V @ E @ B @ m for V, B in p.heads)
        Amat = np.block([[K, coupling], [np.zeros((n, d)), L]])
        Bmat = np.vstack([np.eye(d), np.zeros((n, d))])
        return control.ss(Amat, Bmat, np.eye(d + n), np.zeros((d + n, d)))


# ---------------------------------------------------------------- entry point


def certify(params: Params, gaussian: Gaussian | ArrayLike,
            mean0: ArrayLike | None = None) -> Certificate:
    """Classify the covariance flow Σ̇ = AΣ + ΣAᵀ + Σ_h(V_hΣB_hΣ + ΣB_hᵀΣV_hᵀ) from Σ(0) = Σ0.

    Decides where Σ(t) goes, "converges", "collapses", "blows_up", "grows" or "undetermined"
    (REGIMES), and returns the verdict with its evidence (SPEC §5–§6).

    Scalar V (V_h = v_h I, G = −Σ_h v_h(B_h + B_hᵀ)): the flow is Σ̇ = A Σ + Σ Aᵀ − Σ G Σ with the
    closed form

        Σ(t) = e^{At} Σ0 (I + W(t) Σ0)⁻¹ e^{Aᵀt},      W(t) = ∫_0^t e^{Aᵀs} G e^{As} ds,

    and SPEC §5's theorems decide: G ⪰ 0 never blows up; with A Hurwitz Σ → 0; with Σ0 ≻ 0 and
    an eigenvalue Re λ > 0 of A on the unobservable subspace ∩_k ker(GA^k) Σ grows without
    bound; with A hyperbolic, Re λ > 0 somewhere and no such unseen mode, Σ0 ≻ 0 converges to
    the stabilizing Bernoulli solution. G ⪯ 0: blow-up when G ≺ 0 and range Σ0 leaves the
    stable invariant subspace of A, else (range inside) iff λ_max(W∞Σ0) > 1; T* is the first
    root of λ_min(I + L0ᵀW(t)L0) (Σ0 = L0 L0ᵀ), non-increasing in t, by stepping and Brent's
    method. Any other case: the closed form on a bounded horizon and then numerical evidence.
    General V: a bounded Runge–Kutta integration and a local certificate at an equilibrium
    found by Newton's method (a sublevel set of hᵀ P h inside the basin of Σ*).

    Premises are decided exactly (exact=True) when d ≤ EXACT_MAX_D, every V_h is exactly v_h I
    and Σ0 is exactly positive semidefinite: signs of G and Σ0 from their characteristic
    polynomials, the half-plane counts of A's eigenvalues by the Routh–Hurwitz theorem, the
    unobservable and Krylov subspaces and the threshold λ_max(W∞Σ0) ⋚ 1 in rational arithmetic on
    the floats as given. Otherwise they are decided in floating point with the tolerances stored
    in `Certificate.tolerance` (exact=False), which `check()` reuses.

    Every certificate is re-verified by `check()` before it is returned; one that fails is not
    returned: an exact theorem keeps its verdict without the local Lyapunov evidence when only
    that evidence fails, anything else becomes "undetermined" with the reason. Work is bounded
    (the budgets MAX_RHS_EVALUATIONS, MAX_GRAMIAN_STEPS, BRENT_MAXITER and the horizons).

    Parameters
    ----------
    params : Params
        The time-invariant layer (A, heads (V_h, B_h), b).
    gaussian : Gaussian or (d, d) array_like
        The start, called like `flow`: `certify(params, Gaussian(m0, Σ0))`. The array form
        `certify(params, Σ0, mean0=None)` is kept: a covariance array Σ0 (symmetric positive
        semidefinite, validated as `cov0`).
    mean0 : (d,) array_like, optional
        The start mean for the array form (zero when omitted); must be omitted with a Gaussian.
        Stored for `Certificate.linearization`; the regime concerns Σ only.

    Returns
    -------
    Certificate
        The regime with its evidence: Σ* and its residual, P, Q and L, the rate, T* and the
        blow-up direction, `exact`, `global_`, the theorem, the tolerances of numerical
        premises, and the reason in words.

    Raises
    ------
    InvalidInputError
        params not a Params; gaussian neither a Gaussian nor a d×d covariance array (shape,
        NaN/Inf, symmetry and positive semidefiniteness checked as by validation.as_covariance);
        a Gaussian of another dimension; mean0 given with a Gaussian, or not a finite vector of
        length d.
    SolverError
        Any failure of floating point, overflow included (an integration that fails or spends
        its budget gives "undetermined" instead).

    See Also
    --------
    Certificate : the verdict and its evidence; `Certificate.check()` re-verifies it.
    riccati_tf.equilibria : the equilibria Σ* and their stability.
    riccati_tf.flow : the trajectory Σ(t) itself.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".
    .. [2] riccati_tf theory, SPEC §6 "Certificates".

    Examples
    --------
    G = −v(B + Bᵀ) = I ≻ 0 and both eigenvalues of A = diag(1, 2) positive: every Σ0 ≻ 0
    converges to the stabilizing Bernoulli solution Σ* = diag(2, 4), decided exactly.

    >>> import numpy as np
    >>> from dataclasses import replace
    >>> from riccati_tf import Gaussian, Params, certify
    >>> p = Params(np.diag([1.0, 2.0]), B=0.5 * np.eye(2), V=-np.eye(2))
    >>> c = certify(p, Gaussian(np.zeros(2), np.eye(2)))
    >>> c.regime, c.exact, c.global_, c.theorem, c.rate
    ('converges', True, True, 'psd_gramian_pd', 2.0)
    >>> np.round(c.equilibrium.cov, 4)
    array([[2., 0.],
           [0., 4.]])
    >>> c.equilibrium.residual < 1e-12, c.tolerance, c.check()
    (True, None, True)

    Blow-up in d = 1: σ̇ = 2aσ + 2vbσ² with a = −1, v = b = 1 from σ0 = 3 blows up at
    T* = ½ ln(σ0/(σ0 − 1)) = ½ ln(3/2):

    >>> c = certify(Params([[-1.0]], B=[[1.0]], V=[[1.0]]), Gaussian([0.0], [[3.0]]))
    >>> c.regime, c.theorem, c.exact
    ('blows_up', 'nsd_threshold', True)
    >>> print(round(c.blowup_time, 6), round(np.log(1.5) / 2, 6))
    0.202733 0.202733
    >>> c.check(), replace(c, blowup_time=0.25).check()
    (True, False)

    V scalar only to within SCALAR_RTOL: the premises are decided in floating point, and the
    tolerances used are stored for `check()`:

    >>> V = np.diag([-1.0, -1.0 - 1e-15])
    >>> c = certify(Params(np.diag([1.0, 2.0]), B=0.5 * np.eye(2), V=V), np.eye(2))
    >>> c.regime, c.exact, c.tolerance["scalar_rtol"], c.tolerance["axis_rtol"]
    ('converges', False, 1e-13, 1e-08)
    >>> c.check()
    True
    """
    if not isinstance(params, Params):
        raise InvalidInputError(f"params must be a riccati_tf.Params, got {type(params).__name__}")
    cov0, mean0 = _start(params.d, gaussian, mean0)
    cov0.setflags(write=False)
    mean0.setflags(write=False)
    base = {"params": params, "cov0": cov0, "mean0": mean0}
    with np.errstate(all="ignore"), numerical_failures("certify"):
        return _released(_certify(params, cov0, base))


def _start(d: int, gaussian: Gaussian | ArrayLike,
           mean0: ArrayLike | None) -> tuple[np.ndarray, np.ndarray]:
    """(Σ0, m0) from a Gaussian, or from a covariance array and an optional mean (validated)."""
    if isinstance(gaussian, Gaussian):
        if mean0 is not None:
            raise InvalidInputError("mean0 must be omitted when the start is a riccati_tf.Gaussian "
                                    "(its mean is the start mean)")
        if gaussian.d != d:
            raise InvalidInputError(f"gaussian lives in R^{gaussian.d} but params in R^{d}")
        return np.array(gaussian.cov, dtype=float), np.array(gaussian.mean, dtype=float)
    if gaussian is None or isinstance(gaussian, str | bytes | dict | Params):
        raise InvalidInputError(f"gaussian must be a riccati_tf.Gaussian or a d×d covariance "
                                f"array Σ0 (d = {d}), got {type(gaussian).__name__}")
    cov0 = as_covariance("cov0", gaussian, d)
    mean0 = np.zeros(d) if mean0 is None else as_vector("mean0", mean0, d)
    return cov0, mean0


def _certify(p: Params, cov0: np.ndarray, base: dict) -> Certificate:
    if not np.any(cov0):
        return Certificate("collapses", _zero_equilibrium(p), None, None, None, True, False,
                           "Σ0 = 0 is an equilibrium: the covariance stays 0.", theorem="zero",
                           **base)
    if not np.any(p.A) and quadratic_constant(p) == 0:
        eq = make_equilibrium(p, cov0, "static", abscissa=0.0, rank=_rank0(cov0))
        return Certificate("converges", eq, None, None, None, False, False,
                           "A = 0 and no head has both V ≠ 0 and B ≠ 0: Σ̇ = 0, so Σ(t) = Σ0 for "
                           "every t (Σ0 is one of a continuum of equilibria, not attracting).",
                           **base)
    if p.value_scalars is None:
        return _numerical(p, cov0, base, scalar=False)
    pr = premises(p, cov0)
    base = {**base, "tolerance": pr.tolerance}
    got = theorem_of(pr, p.d)
    how = ("decided exactly on the data as given" if pr.exact else
           "decided in floating point with the tolerances in `tolerance`")
    if got is None:
        if pr.g_nsd and pr.range_stable and pr.threshold_sign == 0:
            return Certificate(
                "undetermined", None, None, None, None, False, False,
                f"borderline of the G ⪯ 0 threshold: λ_max(W∞Σ0) = 1 ({how}); at the borderline "
                f"I + W(t)Σ0 becomes singular only as t → ∞.", threshold=pr.threshold, **base)
        return _numerical(p, cov0, base, scalar=True, no_blowup=pr.g_psd and pr.exact)
    theorem, regime = got
    glob = THEOREMS[theorem][1] and pr.exact
    A, d = p.A, p.d
    eig = np.linalg.eigvals(A)
    if theorem == "psd_hurwitz":
        return _converged(p, np.zeros((d, d)), base, theorem, exact=pr.exact, glob=glob,
                          rate=-2 * float(np.max(eig.real)),
                          reason=f"G ⪰ 0 rules out blow-up and A is Hurwitz ({how}): "
                                 f"Σ(t) ⪯ e^{{At}}Σ0e^{{Aᵀt}} → 0 (SPEC §5).")
    if theorem == "psd_marginal":
        return _converged(p, np.zeros((d, d)), base, theorem, exact=pr.exact, glob=glob,
                          rate=None, local=False,
                          reason=f"G ⪰ 0 with (A, G) observable and A has no eigenvalue with "
                                 f"Re λ > 0, those on iℝ semisimple, so κ = sup_t ‖e^{{At}}‖ < ∞ "
                                 f"({how}): Σ(t)⁻¹ ⪰ W̃(t) = ∫_0^t e^{{−Aᵀu}}Ge^{{−Au}}du, which "
                                 f"grows at least linearly in t (≥ λ_min(G) t/κ² I for G ≻ 0), so "
                                 f"‖Σ(t)‖ = O(1/t) → 0 for every Σ0 ⪰ 0 — an algebraic collapse "
                                 f"(rate None).")
    if theorem == "psd_gramian_singular":
        return Certificate(
            "grows", None, None, None, None, pr.exact, glob,
            f"G ⪰ 0 rules out blow-up, Σ0 ≻ 0, and A has an eigenvalue Re λ > 0 on the "
            f"unobservable subspace ∩_k ker(GA^k) ({how}): for its eigenvector x, "
            f"x*Σ(t)⁻¹x = e^{{−2Re λ t}} x*Σ0⁻¹x → 0, so Σ(t) is unbounded.", theorem=theorem,
            **base)
    if theorem == "psd_gramian_pd":
        return _stabilizing(p, cov0, base, pr, glob, how)
    if regime == "blows_up":
        reason = ("G ≺ 0 and range Σ0 is not inside the stable invariant subspace of A "
                  f"({how}): −W(t) grows without bound there, so λ_max(−W(t)Σ0) reaches 1 "
                  "(SPEC §5)." if theorem == "nsd_unstable_range" else
                  f"G ⪯ 0 and range Σ0 lies in the stable subspace of A, where λ_max(W∞Σ0) > 1 "
                  f"({how}; ≈ {pr.threshold}) with AᵀW∞ + W∞A + |G| = 0: λ_max(−W(t)Σ0) "
                  f"crosses 1 (SPEC §5).")
        return _nsd_blowup(p, cov0, base, pr, theorem, glob, reason)
    lam, rate = (pr.threshold, None) if pr.threshold is None else \
        (pr.threshold, _stable_rate(A))
    return _converged(p, np.zeros((d, d)), base, theorem, exact=pr.exact, glob=glob,
                      rate=rate, threshold=lam, local=pr.n_left == d,
                      reason=f"G ⪯ 0 and range Σ0 lies in the stable subspace of A, where "
                             f"λ_max(W∞Σ0) < 1 ({how}; ≈ {lam}): I + W(t)Σ0 stays invertible "
                             f"and Σ(t) → 0 (SPEC §5).")


def _stable_rate(A: np.ndarray) -> float | None:
    """−2 max Re λ over the stable eigenvalues of A (the slowest decay on the stable subspace)."""
    re = np.linalg.eigvals(A).real
    return -2 * float(np.max(re[re < 0])) if np.any(re < 0) else None


def _stabilizing(p: Params, cov0: np.ndarray, base: dict, pr: Premises, glob: bool,
                 how: str) -> Certificate:
    """"converges" to the stabilizing Bernoulli solution, when it can be computed to the accepted
    residual; otherwise numerical evidence (the theorem still rules out blow-up)."""
    try:
        eqs = equilibria(p)
    except SolverError:
        eqs = []
    if not eqs or eqs[0].rank != pr.n_right or not eqs[0].stable:
        return _numerical(p, cov0, base, scalar=True, no_blowup=True, bounded=True)
    eq = eqs[0]
    rate = 2 * float(np.min(np.abs(drift_spectrum(p)[0].real)))
    return _converged(p, eq.cov, base, "psd_gramian_pd", exact=pr.exact, glob=glob, rate=rate,
                      equilibrium=eq,
                      reason=f"G ⪰ 0 rules out blow-up; A has {pr.n_right} eigenvalue(s) with "
                             f"Re λ > 0, none on iℝ, none unseen by G ({how}), so every Σ0 ≻ 0 "
                             f"converges to the stabilizing Bernoulli solution Σ* = U₁P⁻¹U₁ᵀ of "
                             f"rank {pr.n_right}, at rate 2 min |Re λ(A)| (SPEC §5).")


def _zero_equilibrium(p: Params) -> Equilibrium:
    """Σ* = 0, where L(H) = AH + HAᵀ has spectral abscissa 2 max Re λ(A)."""
    return make_equilibrium(p, np.zeros((p.d, p.d)), "zero",
                            abscissa=2 * float(np.max(drift_spectrum(p)[0].real)), rank=0)


def _released(c: Certificate) -> Certificate:
    """The certificate if `check()` passes; an exact theorem without its local Lyapunov evidence
    if only that evidence fails; else "undetermined" with the reason."""
    if c.check():
        return c
    if c.exact and c.lyapunov is not None:
        bare = replace(c, lyapunov=None, lyapunov_rhs=None, operator=None, basin=None,
                       kantorovich_radius=None,
                       reason=c.reason + " (The local Lyapunov certificate at Σ* failed its "
                                         "re-check and is not shipped.)")
        if bare.check():
            return bare
    return Certificate("undetermined", None, None, None, None, False, False,
                       f"a {c.regime!r} certificate (theorem {c.theorem!r}) was found but failed "
                       f"its own re-check, so it is not returned. It read: {c.reason}",
                       params=c.params, cov0=c.cov0, mean0=c.mean0, tolerance=c.tolerance)


# ---------------------------------------------------------------- G ⪯ 0: stable subspace, T*


def cov_root(cov: np.ndarray, rank: int) -> np.ndarray:
    """L (d×rank) with LLᵀ ≈ Σ0 for the given rank (exact when known): Cholesky for full rank,
    else the `rank` leading eigenpairs; no positive direction of the stated rank is dropped."""
    d = cov.shape[0]
    if rank == d:
        try:
            return np.linalg.cholesky(cov)
        except np.linalg.LinAlgError:
            pass
    e, U = np.linalg.eigh(cov)
    e, U = e[d - rank:], U[:, d - rank:]
    return U * np.sqrt(np.clip(e, 0.0, None))


def _rank0(cov: np.ndarray) -> int:
    """rank Σ0: exact for d ≤ EXACT_MAX_D, else with psd_rank's d·eps·λ_max."""
    r = exact_rank(cov)
    return psd_rank(cov) if r is None else r


def _stable_basis(A: np.ndarray, axis_rtol: float) -> tuple[np.ndarray, np.ndarray, int]:
    """Ordered Schur form with the eigenvalues Re λ < −axis_rtol‖A‖_F leading: (U, T, s)."""
    tol = axis_rtol * np.linalg.norm(A)
    T, U, s = schur(A, output="real", sort=lambda re, _im: re < -tol)
    return U, T, int(s)


def _threshold(A: np.ndarray, G: np.ndarray, L0: np.ndarray, axis_rtol: float = AXIS_RTOL,
               range_rtol: float = RANGE_RTOL) -> tuple[float | None, float]:
    """(λ_max(W∞Σ0) or None when range Σ0 = range L0 ⊄ stable subspace within range_rtol, the
    stable decay rate), in floating point."""
    U, T, s = _stable_basis(A, axis_rtol)
    Us = U[:, :s]
    C = Us.T @ L0
    if np.linalg.norm(L0 - Us @ C) > range_rtol * np.linalg.norm(L0):
        return None, 0.0
    Ts = T[:s, :s]
    # TsᵀW + WTs = G_s = −|G|_s: W is W∞ (= −W(∞), with W(t) = ∫_0^t e^{Aᵀu}Ge^{Au}du)
    W = lapack_sylvester_gramian(Ts, Us.T @ G @ Us)
    lam = float(np.linalg.eigvalsh(C.T @ W @ C)[-1])
    rate = -2 * float(np.max(np.linalg.eigvals(Ts).real))
    return lam, rate


def _nsd_blowup(p: Params, cov0: np.ndarray, base: dict, pr: Premises, theorem: str,
                glob: bool, reason: str) -> Certificate:
    """Locate T* (the blow-up is known to happen) up to MAX_NORM_TIME over the rate scale."""
    horizon = MAX_NORM_TIME / _rate_scale(p, cov0)
    try:
        got = _monotone_root(p.A, p.G, cov_root(cov0, pr.rank0), horizon)
    except SolverError as exc:
        return Certificate("undetermined", None, None, None, None, False, False,
                           reason + f" But T* could not be located: {exc}.",
                           threshold=pr.threshold, **base)
    if got is not None:
        T, direction = got
        return Certificate("blows_up", None, None, None, T, pr.exact, glob,
                           reason + f" T* = {T:.12g}.", theorem=theorem,
                           blowup_direction=direction, threshold=pr.threshold, **base)
    return Certificate("undetermined", None, None, None, None, False, False,
                       reason + f" But λ_min(I + L0ᵀW(t)L0) stays positive up to t = "
                                f"{horizon:.6g}, so T* cannot be reported.",
                       threshold=pr.threshold, **base)


def _monotone_root(A: np.ndarray, G: np.ndarray, L0: np.ndarray,
                   horizon: float) -> tuple[float, np.ndarray] | None:
    """First t ≤ horizon with λ_min(S(t)) = 0, S(t) = I + L0ᵀW(t)L0, for G ⪯ 0 (S non-increasing),
    and the unit blow-up direction e^{At}L0u (S(T*)u = 0); None if S(horizon) ≻ 0.

    Steps h with ‖A‖₂h ≤ 1 (at most MAX_GRAMIAN_STEPS) compose W exactly by the semigroup rule
    S_{k+1} = S_k + X_kᵀW(h)X_k, X_{k+1} = e^{Ah}X_k (X_0 = L0); in the step where λ_min(S) first
    drops to ≤ 0 Brent's method (at most BRENT_MAXITER iterations) locates the root."""
    n = int(min(max(1.0, np.ceil(np.linalg.norm(A, 2) * horizon)), MAX_GRAMIAN_STEPS))
    h = horizon / n
    Eh, Wh = van_loan(A, G, h)
    X, S, t = L0, np.eye(L0.shape[1]), 0.0
    for _ in range(n):
        S_next = S + X.T @ Wh @ X
        if not np.all(np.isfinite(S_next)):
            raise SolverError(f"W(t) overflowed at t = {t:.6g} before the blow-up was located")
        if np.linalg.eigvalsh(S_next)[0] <= 0:
            def lam(s, S=S, X=X):
                return float(np.linalg.eigvalsh(S + X.T @ van_loan(A, G, s)[1] @ X)[0])

            try:
                s = brentq(lam, 0.0, h, xtol=4 * EPS * (t + h), rtol=4 * EPS,
                           maxiter=BRENT_MAXITER)
            except RuntimeError:
                raise SolverError(f"Brent's method did not locate T* within {BRENT_MAXITER} "
                                  f"iterations") from None
            E, W = van_loan(A, G, s)
            u = E @ X @ np.linalg.eigh(S + X.T @ W @ X)[1][:, 0]
            return t + s, u / np.linalg.norm(u)
        X, S, t = Eh @ X, S_next, t + h
    return None


@dataclass(frozen=True)
class _Run:
    """Bounded integration: the state at t_end (≤ horizon) and at about t_end/2, or blow-up."""

    t_end: float
    mid: np.ndarray
    final: np.ndarray
    blowup_time: float | None = None
    blowup_direction: np.ndarray | None = None
    failure: str | None = None


class _BudgetExhausted(Exception):
    """More than MAX_RHS_EVALUATIONS right-hand-side evaluations in one integration."""


class _Integrator:
    """Integrate Σ alone (b = 0, m = 0: Σ does not depend on the mean) with `flow` in segments of
    length ≤ SEGMENT_NORM_TIME/‖A‖₂ (the flow is a semigroup), projecting each segment's end onto
    the PSD cone against rounding. `advance(t)` continues to time t and stops early at blow-up,
    when the work budget is spent, or once tr Σ leaves
    [tr Σ0 / GROWTH_STOP, GROWTH_STOP · max(tr Σ0, scale)]. The layer p is integrated without b;
    by "rk" from d = FACTOR_MIN_D on with its dense heads of low rank through their factors
    (`state.lowrank.factored_layer`, as `flow` does for a layer it is given: the counted
    right-hand side below is a callable, which `flow` does not rewrite). Only the segments' mid
    and end states are formed (no dense output: DOP853's continuous extension costs 3
    right-hand sides per step); `rtol` is flow's relative tolerance (None: its default)."""

    def __init__(self, p: Params, cov0: np.ndarray, method: str, scale: float = 0.0,
                 rtol: float | None = None):
        if method == "rk" and p.d >= FACTOR_MIN_D:
            bare = factored_layer(p, bias=False)
        else:
            bare = Params(p.A, heads=p.heads)
        self.calls = 0
        self.tolerances: dict[str, Any] = {} if rtol is None else {"rtol": rtol}

        def counted(_t):  # the time-varying form of `flow` lets the right-hand side be counted
            self.calls += 1
            if self.calls > MAX_RHS_EVALUATIONS:
                raise _BudgetExhausted
            return bare

        self.layer = bare if method == "exact" else counted
        self.method, self.d = method, bare.d
        self.tr0 = float(np.trace(cov0))
        self.top = GROWTH_STOP * min(max(self.tr0, scale), MAX_GROWTH * self.tr0)
        norm = drift_spectrum(p)[1]
        self.seg = SEGMENT_NORM_TIME / norm if norm > 0 else np.inf
        self.t, self.S = 0.0, cov0
        self.times, self.states = [0.0], [cov0]
        self.stopped = False

    def advance(self, until: float) -> _Run:
        while self.t < until * (1 - 1e-12) and not self.stopped:
            h = min(self.seg, until - self.t)
            try:
                traj = flow(self.layer, Gaussian(np.zeros(self.d), self.S), h,
                            method=self.method, t_eval=[0.0, h / 2, h], dense_output=False,
                            **self.tolerances)
            except _BudgetExhausted:
                self.stopped = True
                return _Run(self.t, self.states[-1], self.S, failure=(
                    f"the Runge–Kutta integration used its budget of {MAX_RHS_EVALUATIONS} "
                    f"right-hand-side evaluations by t = {self.t:.6g} (tr Σ = "
                    f"{np.trace(self.S):.3g}): the flow is stiff there, typically Σ growing "
                    f"along a direction where the attention term degenerates"))
            except (SolverError, ValueError, LinAlgError, ArithmeticError) as exc:
                self.stopped = True  # the flow could not continue (InvalidInputError included)
                return _Run(self.t, self.states[-1], self.S, failure=(
                    f"the {self.method} integration failed after t = {self.t:.6g} "
                    f"(tr Σ = {np.trace(self.S):.3g}): {exc}"))
            if traj.blowup_time is not None:
                self.stopped = True
                T = self.t + float(traj.blowup_time)
                return _Run(T, self.states[-1], traj.cov[-1], T, traj.blowup_direction)
            self.times += [self.t + h / 2, self.t + h]
            self.t += h
            self.S = _psd_part(traj.cov[-1])
            self.states += [traj.cov[1], self.S]
            tr = np.trace(self.S)
            if not (self.tr0 / GROWTH_STOP < tr < self.top):
                self.stopped = True
        i = int(np.argmin(np.abs(np.array(self.times) - self.t / 2)))
        return _Run(self.t, self.states[i], self.S)


def _psd_part(S: np.ndarray) -> np.ndarray:
    S = 0.5 * (S + S.T)
    e, U = np.linalg.eigh(S)
    return S if e[0] >= 0 else (U * np.clip(e, 0.0, None)) @ U.T


def _rate_scale(p: Params, cov0: np.ndarray) -> float:
    """max(‖A‖₂, c‖Σ0‖₂): the fastest rate the linear or the quadratic term can start with."""
    quadratic = quadratic_constant(p) * float(np.linalg.norm(cov0, 2))
    return max(drift_spectrum(p)[1], quadratic, float(np.finfo(float).tiny))


def _horizon(p: Params, cov0: np.ndarray) -> float:
    """HORIZON_RATES / min|Re λ(A)|, within [1, MAX_NORM_TIME] / rate scale (`_rate_scale`)."""
    scale = _rate_scale(p, cov0)
    slow = float(np.min(np.abs(drift_spectrum(p)[0].real)))
    t = HORIZON_RATES / slow if slow > 0 else np.inf
    return float(min(max(t, 1.0 / scale), MAX_NORM_TIME / scale))


# ---------------------------------------------------------------- local certificates


@dataclass(frozen=True)
class _Local:
    L: np.ndarray
    P: np.ndarray
    Q: np.ndarray
    radius: float  # Kantorovich radius r*
    rho_max: float  # largest certified level: {hᵀPh ≤ rho_max} ⊂ basin (about the exact Σ*)


def _local(p: Params, cov: np.ndarray) -> _Local | None:
    """Lyapunov certificate at Σ* (d ≤ 30): P from LᵀP + PL = −I, Kantorovich radius, basin."""
    if p.d > KRONECKER_MAX_D:
        return None
    L = linearization_matrix(p, cov)
    if np.max(np.linalg.eigvals(L).real) >= 0:
        return None
    sol = lyapunov_function(L)
    bounds = _local_bounds(p, cov, L, sol.P)
    if bounds is None:
        return None
    radius, rho_max = bounds
    return _Local(L, sol.P, sol.Q, radius, rho_max)


def _local_bounds(p: Params, cov: np.ndarray, L: np.ndarray, P: np.ndarray,
                  fnorm: float | None = None) -> tuple[float, float] | None:
    """(Kantorovich radius r*, largest basin level ρ) for P at the stored Σ̂, or None.

    Newton–Kantorovich with β = 1/σ_min(L), η = β‖F(Σ̂)‖_F and Lipschitz constant K = 2c of L:
    if h = βηK ≤ 1/2, an exact equilibrium Σ* lies within r* = (1 − √(1 − 2h))/(βK) of Σ̂. There
    L_{Σ*} differs from L by at most K r*, so −(L*ᵀP + PL*) ⪰ (λ_min(Q̂) − 2‖P‖K r*) I =: μ I, and
    V̇ < 0 for |h| < μ / (2‖P‖c): every level ρ < λ_min(P) (μ/(2‖P‖c))² is inside the basin.
    """
    c = quadratic_constant(p)
    K = 2 * c
    Qhat = -(L.T @ P + P @ L)
    lam_q = float(np.linalg.eigvalsh(0.5 * (Qhat + Qhat.T))[0])
    pe = np.linalg.eigvalsh(P)
    if pe[0] <= 0 or lam_q <= 0:
        return None
    normP = float(pe[-1])
    fnorm = float(np.linalg.norm(F_of(p, cov))) if fnorm is None else fnorm
    radius = 0.0
    if fnorm > 0:
        smin = float(np.linalg.svd(L, compute_uv=False)[-1])
        if smin <= 0:
            return None
        beta = 1.0 / smin
        eta = beta * fnorm
        h = beta * eta * K
        if h > 0.5:
            return None
        radius = (1 - np.sqrt(1 - 2 * h)) / (beta * K) if K > 0 else eta
    mu = lam_q - 2 * normP * K * radius
    if mu <= 0:
        return None
    rho = np.inf if c == 0 else float(pe[0] * (mu / (2 * normP * c)) ** 2)
    return float(radius), rho


def _level(P: np.ndarray, cov: np.ndarray, state: np.ndarray, radius: float) -> float:
    """Upper bound of V(state − Σ*) = hᵀPh for the exact Σ* within `radius` of the stored cov."""
    h = to_coords(state - cov)
    return float((np.sqrt(max(h @ P @ h, 0.0)) + np.sqrt(np.linalg.eigvalsh(P)[-1]) * radius) ** 2)


def _converged(p: Params, cov: np.ndarray, base: dict, theorem: str, *, exact: bool, glob: bool,
               rate: float | None, reason: str, equilibrium: Equilibrium | None = None,
               threshold: float | None = None, local: bool = True, loc: _Local | None = None,
               final_cov: np.ndarray | None = None, horizon: float | None = None,
               basin: float | None = None) -> Certificate:
    """A converges/collapses certificate with a local Lyapunov certificate at Σ* when one exists
    (`loc` if given, else computed when `local`); basin: the level of `_ZeroBall` (no loc)."""
    if loc is None and local:
        loc = _local(p, cov)
    eq = equilibrium if equilibrium is not None else _zero_equilibrium(p)
    regime = "collapses" if eq.rank == 0 else "converges"
    if loc is not None and final_cov is not None:
        basin = BASIN_SAFETY * loc.rho_max
    if rate is None and loc is not None:
        rate = -float(np.max(np.linalg.eigvals(loc.L).real))
    return Certificate(
        regime, eq, None if loc is None else loc.P, rate, None, exact, glob, reason,
        theorem=theorem, lyapunov_rhs=None if loc is None else loc.Q,
        operator=None if loc is None else loc.L, threshold=threshold, horizon=horizon,
        final_cov=final_cov, basin=basin,
        kantorovich_radius=None if loc is None else loc.radius, **base)


# ---------------------------------------------------------------- numerical evidence


def _numerical(p: Params, cov0: np.ndarray, base: dict, *, scalar: bool,
               no_blowup: bool = False, bounded: bool = False) -> Certificate:
    """Bounded integration (closed form for scalar V, DOP853 otherwise), then a local
    certificate at a nearby stable equilibrium, or growth/undetermined; general V beyond d = 30
    first `_attracting_ball`. no_blowup: a theorem rules out blow-up; bounded: a theorem says Σ
    converges (growth is then no conclusion)."""
    method = "exact" if scalar else "rk"
    horizon = _horizon(p, cov0)
    scale = 0.0 if no_blowup else _blowup_scale(p)
    if not scalar and p.d > KRONECKER_MAX_D:
        got = _attracting_ball(p, cov0, base, horizon * 2 ** HORIZON_DOUBLINGS, scale)
        if got is not None:
            return got
    integrator = _Integrator(p, cov0, method, scale)
    for _ in range(HORIZON_DOUBLINGS + 1):
        run = integrator.advance(horizon)
        if run.blowup_time is not None:
            how = ("the first root of det(I + W(t)Σ0) located by the closed form" if scalar else
                   "the Runge–Kutta blow-up event (quadratic terms dominate d tr Σ/dt)")
            tol = {**(base.get("tolerance") or {}), "blowup_check_rtol": BLOWUP_CHECK_RTOL}
            return Certificate("blows_up", None, None, None, run.blowup_time, False, False,
                               f"blow-up at T* = {run.blowup_time:.12g}: {how}.",
                               theorem="closed_form_root" if scalar else "numerical",
                               blowup_direction=run.blowup_direction, horizon=run.t_end,
                               final_cov=run.final, **{**base, "tolerance": tol})
        if run.failure is not None:
            return Certificate("undetermined", None, None, None, None, False, False,
                               f"{run.failure}; no conclusion.", horizon=run.t_end,
                               final_cov=run.final, **base)
        got = _classify_final(p, cov0, base, run, scalar, np.inf if bounded else scale)
        if got is not None or integrator.stopped:
            break
        horizon *= 2
    if got is not None:
        return got
    note = " G ⪰ 0 rules out finite-time blow-up." if no_blowup else ""
    return Certificate("undetermined", None, None, None, None, False, False,
                       f"no theorem of SPEC §5 applies and the integration up to t = "
                       f"{run.t_end:.6g} neither blew up nor entered a certified basin of a "
                       f"stable equilibrium nor grew by a factor {GROWTH_FACTOR:g}.{note}",
                       horizon=run.t_end, final_cov=run.final, **base)


@dataclass(frozen=True)
class _Ball:
    """The ball ‖R⁻¹(Σ − Σ*)R⁻¹‖_F < radius around a stable equilibrium Σ* = R² ≻ 0 that the
    numerical-range bound and the quadratic constant c̃ (`_quadratic_bound`) make attracting."""

    eq: Equilibrium
    Ri: np.ndarray
    radius: float
    c: float

    def gap(self, S: np.ndarray) -> float:
        """‖R⁻¹(S − Σ*)R⁻¹‖_F."""
        return float(np.linalg.norm(self.Ri @ (S - self.eq.cov) @ self.Ri))

    def verdict(self, p: Params, base: dict, state: np.ndarray, t: float,
                gap: float) -> Certificate:
        """"converges" to Σ* from the state at t, inside the ball at distance gap."""
        st = self.eq.stability
        assert st is not None and st.value is not None  # a ball's bound (`_balls`)
        return _converged(
            p, self.eq.cov, base, "numerical", exact=False, glob=False, rate=-st.value,
            equilibrium=self.eq, local=False, final_cov=state, horizon=t,
            reason=f"Runge–Kutta integration (rtol {BALL_RTOL:g}) to t = {t:.6g} ends at "
                   f"distance ‖R⁻¹(Σ − Σ*)R⁻¹‖_F = {gap:.3g} (Σ* = R², rank {self.eq.rank}) "
                   f"inside the ball of radius {self.radius:.3g} that attracts by the "
                   f"numerical-range bound Re⟨K, L̃K⟩ ≤ {st.value:.6g}‖K‖² (Lanczos Ritz "
                   f"residual {st.residual:.2g}, Equilibrium.stability) and the quadratic "
                   f"constant c̃ = {self.c:.3g} of the stacked heads: ‖R⁻¹(Σ(t) − Σ*)R⁻¹‖_F "
                   f"decreases to the residual's level at rate ≥ {-st.value:.3g} (numerical "
                   f"evidence).")


@dataclass(frozen=True)
class _ZeroBall:
    """The sublevel set ℓ(Σ) = tr(PΣ) < radius of Σ* = 0 on the PSD cone, for Hurwitz A.

    With AᵀP + PA = −Q (P ≻ 0, μ = λ_min(Q) > 0) and Σ ⪰ 0, ℓ is a Lyapunov function of the
    whole field: ℓ̇ = −tr(QΣ) + 2 Σ_h tr(PV_hΣB_hΣ) ≤ −μ tr Σ + κ (tr Σ)², with
    κ = 2 Σ_h ‖PV_h‖₂‖B_h‖₂ (|tr(XΣYΣ)| ≤ ‖Σ^½XΣ^½‖_F‖Σ^½YΣ^½‖_F ≤ ‖X‖₂‖Y‖₂(tr Σ)²), and
    λ_min(P) tr Σ ≤ ℓ ≤ λ_max(P) tr Σ. Below radius = BASIN_SAFETY μ λ_min(P)/κ, tr Σ <
    BASIN_SAFETY μ/κ, so ℓ̇ ≤ −(1 − BASIN_SAFETY) μ tr Σ ≤ −rate ℓ with
    rate = (1 − BASIN_SAFETY) μ/λ_max(P): ℓ(t) ≤ ℓ(t0)e^{−rate(t − t0)}, and Σ → 0. μ and
    λ_min(P) are taken ROUNDING_ULPS d eps beyond the rounding of their products and eigenvalue
    solves (`_zero_ball`)."""

    eq: Equilibrium
    P: np.ndarray
    radius: float
    mu: float
    kappa: float
    rate: float
    asymptotic: float  # 2|max Re λ(A)|, the rate of the linearisation H ↦ AH + HAᵀ at Σ* = 0

    def gap(self, S: np.ndarray) -> float:
        """ℓ(S) = tr(PS)."""
        return float(np.vdot(self.P, S))

    def verdict(self, p: Params, base: dict, state: np.ndarray, t: float,
                gap: float) -> Certificate:
        """"collapses" from the state at t, inside the sublevel set at level gap."""
        return _converged(
            p, self.eq.cov, base, "numerical", exact=False, glob=False, rate=self.asymptotic,
            equilibrium=self.eq, local=False, final_cov=state, horizon=t, basin=self.radius,
            reason=f"Runge–Kutta integration (rtol {BALL_RTOL:g}) to t = {t:.6g} ends at "
                   f"ℓ = tr(PΣ) = {gap:.3g} below the level {self.radius:.3g} of the linear "
                   f"Lyapunov function ℓ on the PSD cone (AᵀP + PA = −Q, λ_min(Q) ≥ "
                   f"{self.mu:.3g}; heads' quadratic constant κ = {self.kappa:.3g}): "
                   f"ℓ̇ ≤ −μ tr Σ + κ(tr Σ)² < 0 there, so ℓ decreases at rate ≥ "
                   f"{self.rate:.3g} and Σ → 0; asymptotic rate 2|max Re λ(A)| = "
                   f"{self.asymptotic:.3g} (numerical evidence).")


def _zero_ball(p: Params) -> _ZeroBall | None:
    """`_ZeroBall` of Σ* = 0 with Q = I (P by `riccati.lyapunov_function`), or None when A is
    not Hurwitz or the rounding leaves μ or λ_min(P) not positive."""
    if not np.max(drift_spectrum(p)[0].real) < 0:
        return None
    try:
        P = lyapunov_function(p.A).P
    except SolverError:
        return None
    d = p.d
    slack = ROUNDING_ULPS * d * EPS
    norm_P = float(np.linalg.norm(P, 2))
    AP = p.A.T @ P
    Q = -(AP + AP.T)
    mu = float(np.linalg.eigvalsh(Q)[0]) - slack * (2 * drift_spectrum(p)[1] * norm_P
                                                    + float(np.linalg.norm(Q, 2)))
    low = float(np.linalg.eigvalsh(P)[0]) - slack * norm_P
    if not (mu > 0 and low > 0):
        return None
    kappa = 2 * sum(float(np.linalg.norm(P @ V, 2) * np.linalg.norm(B, 2)) for V, B in p.heads)
    radius = BASIN_SAFETY * mu * low / kappa if kappa > 0 else np.inf
    rate = (1 - BASIN_SAFETY) * mu / norm_P
    eq = _zero_equilibrium(p)
    assert eq.spectral_abscissa is not None  # 2 max Re λ(A), < 0 here
    return _ZeroBall(eq, P, radius, mu, kappa, rate, -eq.spectral_abscissa)


def _quadratic_bound(p: Params, R: np.ndarray, Ri: np.ndarray) -> float:
    """c̃ with ‖Σ_h (X_hKY_hK + KY_hᵀKX_hᵀ)‖_F ≤ c̃‖K‖_F² for every symmetric K, where
    X_h = R⁻¹V_hR and Y_h = RB_hR (the quadratic part of the field in the coordinates
    K = R⁻¹(Σ − Σ*)R⁻¹); the second term is the transpose of the first, hence the factor 2.

    Stacked heads: for weights α_h > 0, Σ_h X_hKZ_hK = 𝐗(I_H ⊗ K)𝐙K with 𝐗 = [α_1X_1 …
    α_HX_H] (d × Hd) and 𝐙 = [Z_1/α_1; …; Z_H/α_H] (Hd × d), and ‖I_H ⊗ K‖₂ = ‖K‖₂ ≤ ‖K‖_F,
    so ‖Σ_h X_hKZ_hK‖_F ≤ s(Z)‖K‖_F² with s(Z) = ‖𝐗‖₂‖𝐙‖₂ = (λ_max(Σ_h α_h²X_hX_hᵀ)
    λ_max(Σ_h Z_hᵀZ_h/α_h²))^{1/2}. With α_h² = ‖Z_h‖_F/‖X_h‖_F, ‖𝐗‖₂² ≤ Σ_h α_h²‖X_h‖_F² =
    Σ_h ‖X_h‖_F‖Z_h‖_F and likewise ‖𝐙‖₂², so s(Z) ≤ Σ_h ‖X_h‖_F‖Z_h‖_F; it is smaller when
    the X_h have nearly orthogonal ranges (heads writing to complementary subspaces).

    Shared part: for Ȳ = (1/H) Σ_h Y_h, Σ_h X_hKY_hK = (Σ_h X_h)KȲK + Σ_h X_hK(Y_h − Ȳ)K, so
    ‖·‖_F ≤ (‖Σ_h X_h‖₂‖Ȳ‖₂ + s(Y − Ȳ))‖K‖_F²: small when the heads share most of B_h and
    their value matrices add up to a small one.

    c̃ = 2 min(s(Y), ‖Σ_h X_h‖₂‖Ȳ‖₂ + s(Y − Ȳ)) ≤ 2 Σ_h ‖X_h‖_F‖Y_h‖_F (`Stability.quadratic`).
    A head with X_h = 0 or Z_h = 0 contributes nothing to s(Z) and is left out of it."""
    X = [Ri @ V @ R for V, _ in p.heads]
    Y = [R @ B @ R for _, B in p.heads]
    Ybar = sum(Y) / len(Y)
    Xsum = sum(X)
    shared = np.sqrt(_top_eigenvalue(Xsum.T @ Xsum) * _top_eigenvalue(Ybar.T @ Ybar))
    return float(2 * min(_stacked(X, Y), shared + _stacked(X, [Yh - Ybar for Yh in Y])))


def _stacked(X: list[np.ndarray], Z: list[np.ndarray]) -> float:
    """s(Z) = ‖𝐗‖₂‖𝐙‖₂ of `_quadratic_bound`, weights α_h² = ‖Z_h‖_F/‖X_h‖_F."""
    d = X[0].shape[0]
    XX, ZZ = np.zeros((d, d)), np.zeros((d, d))
    for Xh, Zh in zip(X, Z, strict=True):
        x, z = np.linalg.norm(Xh), np.linalg.norm(Zh)
        if x > 0 and z > 0:
            XX += (z / x) * (Xh @ Xh.T)
            ZZ += (x / z) * (Zh.T @ Zh)
    return float(np.sqrt(_top_eigenvalue(XX) * _top_eigenvalue(ZZ)))


def _top_eigenvalue(S: np.ndarray) -> float:
    """λ_max of a symmetric positive semidefinite matrix (its upper triangle), ≥ 0."""
    top = eigh(S, eigvals_only=True, subset_by_index=[S.shape[0] - 1] * 2)[0]
    return max(float(top), 0.0)


def _balls(p: Params, starts: tuple[np.ndarray, ...]) -> list[_Ball | _ZeroBall]:
    """The attracting balls (`_Ball`, shrunk by BASIN_SAFETY) of the equilibria whose stability
    the numerical-range bound decided, from Newton–Krylov on the continuation and from the given
    starts (`equilibria`): with μ = −bound, f the defect and c̃ = `_quadratic_bound`,
    ½ d‖K‖_F²/dt ≤ ‖K‖_F (f − μ‖K‖_F + c̃‖K‖_F²) < 0 for r₋ < ‖K‖_F < r₊ =
    (μ + √(μ² − 4c̃f)) / (2c̃)."""
    try:
        eqs = equilibria(p, starts=starts)
    except SolverError:
        return []
    balls: list[_Ball | _ZeroBall] = []
    for eq in eqs:
        st = eq.stability
        if st is None or st.method != "numerical-range":
            continue
        assert st.value is not None and st.defect is not None  # set by the bound
        w, U = np.linalg.eigh(eq.cov)
        R, Ri = (U * np.sqrt(w)) @ U.T, (U / np.sqrt(w)) @ U.T
        c = _quadratic_bound(p, R, Ri)
        mu, f = -st.value, st.defect
        if c > 0 and mu * mu > 4 * c * f:
            balls.append(_Ball(eq, Ri, BASIN_SAFETY * (mu + np.sqrt(mu * mu - 4 * c * f))
                               / (2 * c), c))
    return balls


def _attracting_ball(p: Params, cov0: np.ndarray, base: dict, horizon: float,
                     scale: float) -> Certificate | None:
    """"converges" when Σ(t) enters the attracting ball r₋ < ‖R⁻¹(Σ − Σ*)R⁻¹‖_F < r₊ of a
    stable equilibrium Σ* = R² ≻ 0 whose stability the numerical-range bound decided
    (`_balls`), "collapses" when it enters the sublevel set tr(PΣ) < ρ of Σ* = 0 (Hurwitz A,
    `_ZeroBall`), integrating (dense heads of low rank factored: `state.lowrank.factored_layer`)
    only until it does: the first check at a quarter segment of `_Integrator`, each later one
    where the distance, decaying at its rate over the last half segment, reaches BALL_AIM times
    the radius (`_entry_wait`). The balls: those of the continuation's equilibria, and the zero
    sublevel set for Hurwitz A; without either, those of Newton from Σ0; with the zero set
    alone, Newton runs later, from the state at the first check from which Σ(t), at its rate,
    would not enter the set before the horizon. None when there is no ball, or the integration
    up to `horizon` within its budget enters none."""
    balls = _balls(p, ())
    zero = _zero_ball(p)
    if not balls and zero is None:
        balls = _balls(p, (cov0,))
    if zero is not None:
        balls.append(zero)
    if not balls:
        return None
    deferred = zero if len(balls) == 1 else None  # Newton from a later state, if Σ(t) stalls
    integrator = _Integrator(p, cov0, "rk", scale, rtol=BALL_RTOL)
    longest = integrator.seg / BALL_CHECKS
    state, t, wait = cov0, 0.0, longest
    while True:
        for ball in balls:
            gap = ball.gap(state)
            if gap < ball.radius:
                tol = {**(base.get("tolerance") or {}), "integration_rtol": BALL_RTOL}
                return ball.verdict(p, {**base, "tolerance": tol}, state, t, gap)
        if integrator.stopped or t >= horizon * (1 - 1e-12):
            return None
        run = integrator.advance(min(t + wait, horizon))
        if run.blowup_time is not None or run.failure is not None:
            return None
        state, t = run.final, run.t_end
        t_mid, mid = integrator.times[-2], integrator.states[-2]
        if deferred is not None and t + _entry_wait(deferred, t_mid, mid, t, state) > horizon:
            balls, deferred = [*_balls(p, (state,)), *balls], None
        wait = float(np.clip(min(_entry_wait(b, t_mid, mid, t, state) for b in balls),
                             longest / BALL_SHORTEST, longest))


def _entry_wait(ball: _Ball | _ZeroBall, t_mid: float, mid: np.ndarray, t: float,
                state: np.ndarray) -> float:
    """The time from t until the ball's distance g, decaying from (t_mid, g(mid)) to
    (t, g(state)) at the rate λ = ln(g(mid)/g(state)) / (t − t_mid), reaches BALL_AIM times its
    radius; inf when it does not decay. `_attracting_ball` checks next after the shortest of
    these waits, within [longest / BALL_SHORTEST, longest]."""
    g_mid, g = ball.gap(mid), ball.gap(state)
    if not (g_mid > g > 0 and t > t_mid):
        return np.inf
    return float(np.log(g / (BALL_AIM * ball.radius)) / (np.log(g_mid / g) / (t - t_mid)))


def _blowup_scale(p: Params) -> float:
    """Size of Σ beyond which the attention term would dominate a blow-up: ‖A‖₂/c for general V
    (`natural_scale`), ‖A‖₂/‖G₋‖₂ for scalar V with G₋ the negative part of G (at least
    eps‖G‖₂: the rounding of G), 0 for G = 0."""
    if p.value_scalars is None:
        return natural_scale(p)
    g = np.linalg.eigvalsh(p.G)
    neg = max(-g[0], EPS * np.abs(g).max(), 0.0)
    return float(drift_spectrum(p)[1] / neg) if neg > 0 else 0.0


def _candidates(p: Params, final: np.ndarray, scalar: bool) -> list[Equilibrium]:
    try:
        if scalar and p.d <= ENUMERATION_MAX_D:
            return equilibria(p, which="all")
        if scalar:
            return [*equilibria(p), _zero_equilibrium(p)]
        return equilibria(p, which="all", starts=[final])
    except SolverError:
        return []


def _classify_final(p: Params, cov0: np.ndarray, base: dict, run: _Run, scalar: bool,
                    blow_scale: float) -> Certificate | None:
    mid, final, horizon = run.mid, run.final, run.t_end
    label = "closed-form" if scalar else "Runge–Kutta"
    candidates = _candidates(p, final, scalar)
    for eq in candidates:
        loc = _local(p, eq.cov) if eq.stable else None
        if loc is not None and _level(loc.P, eq.cov, final, loc.radius) <= \
                BASIN_SAFETY * loc.rho_max:
            return _converged(p, eq.cov, base, "numerical", exact=False, glob=False, rate=None,
                              equilibrium=eq, loc=loc, final_cov=final, horizon=horizon,
                              reason=f"{label} integration to t = {horizon:.6g} ends inside a "
                                     f"sublevel set of the Lyapunov function hᵀPh certified to "
                                     f"lie in the basin of the stable equilibrium of rank "
                                     f"{eq.rank} (local certificate plus bounded integration).")
    scale = max(np.linalg.norm(cov0), np.linalg.norm(final))
    for eq in candidates:
        gap_end = np.linalg.norm(final - eq.cov)
        if gap_end <= CLOSE_RTOL * scale and gap_end < 0.5 * np.linalg.norm(mid - eq.cov):
            return _converged(p, eq.cov, base, "numerical", exact=False, glob=False, rate=None,
                              equilibrium=eq, local=False, final_cov=final, horizon=horizon,
                              reason=f"{label} integration to t = {horizon:.6g} approaches the "
                                     f"equilibrium of rank {eq.rank} (distance {gap_end:.2g}, "
                                     f"halved since t/2), but no Lyapunov sublevel set around it "
                                     f"is certified to hold the final state (it may be unstable "
                                     f"off the rank-{psd_rank(cov0)} stratum, which Σ keeps).")
    tr0, trm, trf = np.trace(cov0), np.trace(mid), np.trace(final)
    # growth is evidence only past the blow-up scale, where the quadratic term would have turned
    # exponential growth into a blow-up if it were going to
    if trf >= GROWTH_FACTOR * max(tr0, blow_scale) and trf >= GROWTH_FACTOR ** 0.5 * trm:
        rate = float(np.log(trf / trm) / (horizon / 2))
        return Certificate("grows", None, None, rate, None, False, False,
                           f"{label} integration to t = {horizon:.6g}: tr Σ grew by "
                           f"{trf / tr0:.3g} at an exponential rate ≈ {rate:.3g} without a "
                           f"finite-time blow-up (numerical evidence).", horizon=horizon,
                           final_cov=final, **base)
    return None


# ---------------------------------------------------------------- verification


def _verify(c: Certificate) -> bool:
    p = c.params
    if c.regime not in REGIMES or (c.global_ and not c.exact) or not _finite(c):
        return False
    if not isinstance(p, Params) or c.cov0.shape != (p.d, p.d):
        return False
    eq = c.equilibrium
    if c.regime in ("converges", "collapses"):
        if eq is None or not _equilibrium_ok(p, eq):
            return False
        if (c.regime == "collapses") != (not np.any(eq.cov)):
            return False
        if c.regime == "converges" and eq.rank < 1:
            return False
    elif eq is not None or c.lyapunov is not None:
        return False
    if c.lyapunov is not None and not _lyapunov_ok(c):
        return False
    if c.lyapunov is None and c.basin is not None and not _zero_basin_ok(c):
        return False
    if c.regime == "blows_up":
        if c.blowup_time is None or not np.isfinite(c.blowup_time) or c.blowup_time <= 0:
            return False
        if p.value_scalars is not None and not blowup_check(p.A, p.G, c.cov0, c.blowup_time):
            return False
    elif c.blowup_time is not None:
        return False
    return _premises_ok(c)


def _equilibrium_ok(p: Params, eq: Equilibrium) -> bool:
    cov = eq.cov
    if cov.shape != (p.d, p.d) or not np.all(np.isfinite(cov)):
        return False
    if np.linalg.norm(cov - cov.T) > 1e-12 * max(float(np.linalg.norm(cov)), 1e-300):
        return False
    res = relative_residual(p, cov)
    return res <= ACCEPT_RTOL and res <= 2 * eq.residual + 1e-15


def _zero_basin_ok(c: Certificate) -> bool:
    """A collapse on the evidence of `_ZeroBall` (basin without a Lyapunov matrix): with P and
    the level recomputed from the layer, the stored basin is at most that level (to 1e-9
    relative: another BLAS may round the solves differently) and the final state lies below
    the basin."""
    ball = _zero_ball(c.params)
    return (c.regime == "collapses" and ball is not None and c.final_cov is not None
            and c.basin is not None and c.basin <= ball.radius * (1 + 1e-9)
            and ball.gap(c.final_cov) < c.basin)


def _lyapunov_ok(c: Certificate) -> bool:
    p, eq, P = c.params, c.equilibrium, c.lyapunov
    if eq is None or P is None or c.operator is None or c.lyapunov_rhs is None:
        return False
    L = linearization_matrix(p, eq.cov)
    if L.shape != c.operator.shape or \
            np.linalg.norm(L - c.operator) > 1e-12 * max(float(np.linalg.norm(L)), 1e-300):
        return False
    if np.linalg.norm(P - P.T) > 1e-12 * np.linalg.norm(P):
        return False
    cholesky(0.5 * (P + P.T), lower=True)
    cholesky(-(L.T @ P + P @ L), lower=True)
    bounds = _local_bounds(p, eq.cov, L, P)
    if bounds is None:
        return False
    radius, rho_max = bounds
    if c.basin is not None:
        if c.final_cov is None or c.basin > rho_max:
            return False
        if _level(P, eq.cov, c.final_cov, radius) > c.basin:
            return False
    if p.d <= EXACT_CHECK_MAX_D:
        return _exact_ok(p, eq.cov, P)
    return True


def _finite(c: Certificate) -> bool:
    """No NaN/Inf in anything the certificate reports (the basin level may be +∞: with no
    attention term the whole space is the basin)."""
    arrays = [c.lyapunov, c.lyapunov_rhs, c.operator, c.blowup_direction, c.final_cov]
    numbers = [c.rate, c.blowup_time, c.threshold, c.horizon, c.kantorovich_radius]
    return all(a is None or np.all(np.isfinite(a)) for a in arrays) and \
        all(x is None or np.isfinite(x) for x in numbers) and \
        (c.basin is None or not np.isnan(c.basin))


def blowup_check(A: np.ndarray, G: np.ndarray, cov0: np.ndarray, T: float) -> bool:
    """λ_min(I + L0ᵀW(t)L0) changes sign across T*(1 ± BLOWUP_CHECK_RTOL), L0 a factor of Σ0
    of its (exact for d ≤ EXACT_MAX_D) rank: the blow-up half of `Certificate.check()`."""
    L0 = cov_root(cov0, _rank0(cov0))
    r = L0.shape[1]
    lo, hi = T * (1 - BLOWUP_CHECK_RTOL), T * (1 + BLOWUP_CHECK_RTOL)
    W_lo, W_hi = _gramian(A, G, lo), _gramian(A, G, hi)
    s_lo = np.linalg.eigvalsh(np.eye(r) + L0.T @ W_lo @ L0)[0]
    s_hi = np.linalg.eigvalsh(np.eye(r) + L0.T @ W_hi @ L0)[0]
    return bool(s_lo > 0 > s_hi)


def _gramian(A: np.ndarray, G: np.ndarray, t: float) -> np.ndarray:
    """W(t) = ∫_0^t e^{Aᵀu} G e^{Au} du by the semigroup rule W(s + h) = W(s) + E_sᵀW(h)E_s,
    with steps ‖A‖₂ h ≤ 1 (the Van Loan block exponential is accurate on each), at most
    MAX_GRAMIAN_STEPS of them."""
    norm = np.linalg.norm(A, 2)
    n = int(min(max(1.0, np.ceil(norm * t)), MAX_GRAMIAN_STEPS))
    Eh, Wh = van_loan(A, G, t / n)
    E, W = np.eye(A.shape[0]), np.zeros_like(A)
    for _ in range(n):
        W = W + E.T @ Wh @ E
        E = Eh @ E
    return 0.5 * (W + W.T)


def _premises_ok(c: Certificate) -> bool:
    """Re-check the premises of the theorem the certificate cites: exactly for an exact
    certificate, with the stored tolerances for a numerical one."""
    p, th = c.params, c.theorem
    if th == "zero":
        return not np.any(c.cov0) and c.regime == "collapses" and c.exact
    if c.exact == (c.tolerance is not None) and th != "numerical":
        return False
    if th == "numerical":
        return not c.exact
    if p.value_scalars is None:
        return False
    if th == "closed_form_root":
        if c.exact or c.regime != "blows_up":
            return False
        pr = premises(p, c.cov0)
        return not (pr.exact and pr.g_psd)  # G ⪰ 0 exactly: no blow-up
    if th not in THEOREMS:
        return False
    pr = premises(p, c.cov0, c.tolerance)
    if pr.exact != c.exact or theorem_of(pr, p.d) != (th, c.regime):
        return False
    if c.global_ and not THEOREMS[th][1]:
        return False
    if th == "psd_gramian_pd":
        eq = c.equilibrium
        return eq is not None and eq.rank == pr.n_right and bool(eq.stable)
    return True


# ---------------------------------------------------------------- premises of the SPEC §5 theorems


@dataclass(frozen=True)
class Premises:
    """What the scalar-V theorems of SPEC §5 need to know about (A, G, Σ0), decided either
    exactly on the data as given (tolerance None) or numerically with the listed tolerances.

    g_psd / g_nsd / g_nd / g_pd: G ⪰ 0 / G ⪯ 0 / G ≺ 0 / G ≻ 0. n_left, n_axis, n_right:
    eigenvalues of A with Re λ < 0, = 0, > 0 (numerically: |Re λ| ≤ axis_rtol ‖A‖_F counts as
    0). rank0: rank Σ0.
    unseen: an eigenvalue with Re λ > 0 of A restricted to the unobservable subspace
    ∩_k ker(GA^k) (the anti-stable Gramian is singular) — decided when G ⪰ 0. observable: that
    subspace is {0} (exactly; numerically only G ≻ 0 within sign_rtol, a sufficient condition,
    counts). axis_semisimple: every eigenvalue of A on iℝ is semisimple — decided when
    observable and n_right = 0 < n_axis (numerically with `SEMISIMPLE_RTOL`). range_stable:
    range Σ0 lies in the stable invariant subspace of A (A restricted to the Krylov space
    span{A^kΣ0} is Hurwitz) — decided when G ⪯ 0. threshold_sign: sign of λ_max(W∞Σ0) − 1 when
    range_stable, threshold: a floating-point value of λ_max(W∞Σ0)."""

    tolerance: dict | None
    g_psd: bool
    g_nsd: bool
    g_nd: bool
    n_left: int
    n_axis: int
    n_right: int
    rank0: int
    unseen: bool | None = None
    g_pd: bool = False
    observable: bool | None = None
    axis_semisimple: bool | None = None
    range_stable: bool | None = None
    threshold_sign: int | None = None
    threshold: float | None = None

    @property
    def exact(self) -> bool:
        return self.tolerance is None


def _exactly_scalar(p: Params) -> bool:
    """Every value matrix is exactly v_h I (equal diagonal, zero off-diagonal)."""
    return all(not np.any(V - V[0, 0] * np.eye(p.d)) for V, _ in p.heads)


def exact_rank(cov: np.ndarray) -> int | None:
    """rank of the float matrix as an exact rational matrix (d ≤ EXACT_MAX_D), else None."""
    if cov.shape[0] > EXACT_MAX_D:
        return None
    return len(_q_rref(_q(cov))[1])


def premises(p: Params, cov0: np.ndarray, tolerance: dict | None = None) -> Premises:
    """Exact premises when d ≤ EXACT_MAX_D, every V_h is exactly v_h I and Σ0 is exactly
    positive semidefinite (unless a tolerance is given); otherwise numerical ones with the
    tolerances of `tolerance` (default: `default_tolerance`)."""
    if tolerance is None and p.d <= EXACT_MAX_D and _exactly_scalar(p):
        S0 = _q(cov0)
        pos, _, neg = _sym_inertia(S0)
        if neg == 0:
            return _exact_premises(p, S0, pos)
    return _numerical_premises(p, cov0, dict(tolerance or default_tolerance(p)))


def _exact_G(p: Params) -> np.ndarray:
    """G = −Σ_h v_h (B_h + B_hᵀ) from the floats, in exact rational arithmetic (not the rounded
    p.G)."""
    G = np.full((p.d, p.d), Fraction(0), dtype=object)
    for V, B in p.heads:
        Bq = _q(B)
        G = G - Fraction(float(V[0, 0])) * (Bq + Bq.T)
    return G


def _exact_premises(p: Params, S0: np.ndarray, rank0: int) -> Premises:
    d = p.d
    A, G = _q(p.A), _exact_G(p)
    gpos, gzero, gneg = _sym_inertia(G)
    left, axis, right = _half_planes(A)
    facts: dict[str, Any] = dict(
        tolerance=None, g_psd=gneg == 0, g_nsd=gpos == 0, g_nd=gpos == 0 and gzero == 0,
        g_pd=gpos == d, n_left=left, n_axis=axis, n_right=right, rank0=rank0)
    if gneg == 0:  # unobservable subspace N = ∩_k ker(G A^k)
        blocks, GA = [], G
        for _ in range(d):
            blocks.append(GA)
            GA = GA.dot(A)
        N = _q_null(np.vstack(blocks))
        facts["unseen"] = bool(N.shape[1]) and _half_planes(_q_restrict(A, N))[2] > 0
        facts["observable"] = N.shape[1] == 0
        if N.shape[1] == 0 and right == 0 and axis:
            facts["axis_semisimple"] = _q_axis_semisimple(A, axis)
    if gpos == 0 and gneg > 0 and rank0 > 0:
        blocks, AkS = [], S0
        for _ in range(d):
            blocks.append(AkS)
            AkS = A.dot(AkS)
        K = _q_range(np.hstack(blocks))
        AK = _q_restrict(A, K)
        facts["range_stable"] = _half_planes(AK)[0] == K.shape[1]
        if facts["range_stable"]:
            facts["threshold_sign"] = _exact_threshold_sign(AK, K, G, S0)
            try:  # the value is only reported; the decision above is exact
                facts["threshold"] = _threshold(p.A, p.G, cov_root(np.array(S0, dtype=float),
                                                                   rank0))[0]
            except (SolverError, LinAlgError, ValueError):
                facts["threshold"] = None
    return Premises(**facts)


def _q_axis_semisimple(A: np.ndarray, n_axis: int) -> bool:
    """Every eigenvalue of the Fraction matrix A on iℝ is semisimple, for A without eigenvalues
    Re λ > 0 (exact). Then h = gcd(p(s), p(−s)) (p the characteristic polynomial) has exactly the
    n_axis roots of p on iℝ, its squarefree part c has each of them once, and dim ker c(A) is the
    sum of their geometric multiplicities: semisimple iff it equals n_axis."""
    import sympy

    s = sympy.Symbol("s")
    p = _sympy_poly(_q_charpoly(A), "s")
    h = p.gcd(p.compose(sympy.Poly(-s, s, domain="QQ")))
    c = h.quo(h.gcd(h.diff(s)))
    cA = np.full(A.shape, Fraction(0), dtype=object)
    eye = _q_eye(A.shape[0])
    for a in c.all_coeffs():  # Horner
        cA = cA.dot(A) + Fraction(int(a.p), int(a.q)) * eye
    return A.shape[0] - len(_q_rref(cA)[1]) == n_axis


def _exact_threshold_sign(AK: np.ndarray, K: np.ndarray, G: np.ndarray, S0: np.ndarray) -> int:
    """sign(λ_max(W∞Σ0) − 1) exactly for range Σ0 ⊂ K = span K (A-invariant, A_K Hurwitz):
    with Σ0 = K C Kᵀ and W_K = KᵀW∞K solving A_KᵀW_K + W_KA_K = KᵀGK (G ⪯ 0), the nonzero
    eigenvalues of W∞Σ0 are those of W_K C (real, ≥ 0); count the roots of det(x − W_K C) > 1."""
    r = K.shape[1]
    KtK = K.T.dot(K)
    C = _q_solve(KtK, _q_solve(KtK, K.T.dot(S0).dot(K)).T).T  # (KᵀK)⁻¹KᵀΣ0K(KᵀK)⁻¹
    # vectorised Lyapunov equation (row-major vec): (A_Kᵀ ⊗ I + I ⊗ A_Kᵀ) vec W = vec(KᵀGK)
    eye = _q_eye(r)
    lyap = np.kron(AK.T, eye) + np.kron(eye, AK.T)
    W = _q_solve(lyap, K.T.dot(G).dot(K).reshape(r * r, 1)).reshape(r, r)
    q = _sympy_poly(_q_charpoly(W.dot(C)), "x")
    if q.count_roots(1, None) > (1 if q.eval(1) == 0 else 0):
        return 1
    return 0 if q.eval(1) == 0 else -1


def default_tolerance(p: Params) -> dict:
    """The tolerances of the numerical premises (`_numerical_premises`)."""
    tol = {"sign_rtol": SIGN_RTOL, "axis_rtol": AXIS_RTOL, "semisimple_rtol": SEMISIMPLE_RTOL,
           "rank_rtol": p.d * EPS,
           "singular_rcond": SINGULAR_RCOND, "range_rtol": RANGE_RTOL,
           "threshold_rtol": THRESHOLD_RTOL}
    if not _exactly_scalar(p):
        tol["scalar_rtol"] = SCALAR_RTOL
    return tol


def _numerical_premises(p: Params, cov0: np.ndarray, tol: dict) -> Premises:
    """The premises decided in floating point with the tolerances of `tol`: G's eigenvalues of
    the wrong sign ≤ sign_rtol max|λ(G)|, |Re λ(A)| ≤ axis_rtol ‖A‖_F on the axis, Σ0's
    eigenvalues ≤ rank_rtol λ_max zero, the anti-stable Gramian singular below singular_rcond,
    range Σ0 in the stable subspace within range_rtol, |λ_max(W∞Σ0) − 1| ≤ threshold_rtol
    borderline."""
    A, G = p.A, p.G
    g = np.linalg.eigvalsh(G)
    gtol = tol["sign_rtol"] * max(np.abs(g).max(), np.finfo(float).tiny)
    psd, nsd, nd = bool(g[0] >= -gtol), bool(g[-1] <= gtol), bool(g[-1] < -gtol)
    eig = np.linalg.eigvals(A)
    atol = tol["axis_rtol"] * np.linalg.norm(A)
    e0 = np.linalg.eigvalsh(cov0)
    rank0 = int(np.sum(e0 > tol["rank_rtol"] * max(e0[-1], 0.0)))
    pd = bool(g[0] > gtol)
    facts: dict[str, Any] = dict(
        tolerance=tol, g_psd=psd, g_nsd=nsd, g_nd=nd, g_pd=pd,
        n_left=int(np.sum(eig.real < -atol)), n_axis=int(np.sum(abs(eig.real) <= atol)),
        n_right=int(np.sum(eig.real > atol)), rank0=rank0)
    if pd:  # numerically, only the sufficient condition G ≻ 0 counts as observable
        facts["observable"] = True
        if facts["n_axis"] and not facts["n_right"]:
            facts["axis_semisimple"] = _axis_semisimple(A, eig, atol, tol["semisimple_rtol"])
    if psd and facts["n_axis"] == 0 and facts["n_right"]:
        split = schur_split(A, G, axis_rtol=tol["axis_rtol"])
        facts["unseen"] = bool(split.singularity(A, G) < tol["singular_rcond"])
    if nsd and not psd and rank0:
        lam, _ = _threshold(A, G, cov_root(cov0, rank0), tol["axis_rtol"], tol["range_rtol"])
        facts["range_stable"] = lam is not None
        if lam is not None:
            facts["threshold"] = lam
            facts["threshold_sign"] = 0 if abs(lam - 1) <= tol["threshold_rtol"] else \
                (1 if lam > 1 else -1)
    return Premises(**facts)


def _axis_semisimple(A: np.ndarray, eig: np.ndarray, atol: float, rtol: float) -> bool:
    """Every computed eigenvalue λ of A with |Re λ| ≤ atol has as many singular values of
    A − (i Im λ)I below rtol ‖A‖_F as A has eigenvalues within rtol ‖A‖_F of i Im λ (geometric
    = algebraic multiplicity, decided with the tolerance)."""
    tol = rtol * np.linalg.norm(A)
    eye = np.eye(A.shape[0])
    for lam in eig[np.abs(eig.real) <= atol]:
        w = 1j * lam.imag
        algebraic = int(np.sum(np.abs(eig - w) <= max(tol, atol)))
        geometric = int(np.sum(np.linalg.svd(A - w * eye, compute_uv=False) <= tol))
        if geometric < algebraic:
            return False
    return True


#: the theorems, the regime each concludes and whether it holds for every Σ0 ≻ 0
THEOREMS = {"psd_hurwitz": ("collapses", True), "psd_marginal": ("collapses", True),
            "psd_gramian_pd": ("converges", True),
            "psd_gramian_singular": ("grows", True), "nsd_unstable_range": ("blows_up", True),
            "nsd_threshold": (None, False)}


def theorem_of(pr: Premises, d: int) -> tuple[str, str] | None:
    """(theorem, regime) that the premises establish (SPEC §5), or None.

    "psd_marginal" (G ⪰ 0 with (A, G) observable — G ≻ 0 for instance —, no Re λ(A) > 0, every
    eigenvalue on iℝ semisimple; e.g. A skew): with P = Σ⁻¹, Ṗ = −AᵀP − PA + G gives
    Σ(t)⁻¹ = e^{−Aᵀt}Σ0⁻¹e^{−At} + W̃(t), W̃(t) = ∫_0^t e^{−Aᵀu}Ge^{−Au}du (for singular Σ0 = L0L0ᵀ,
    Σ(t) = X(I + XᵀW̃X)⁻¹Xᵀ ⪯ X(XᵀW̃X)⁻¹Xᵀ with X = e^{At}L0). κ = sup ‖e^{At}‖ < ∞ gives
    |e^{−Au}x| ≥ |x|/κ, so W̃(t) ⪰ λ_min(G) t/κ² I for G ≻ 0, and by the semigroup rule
    W̃(kτ) ⪰ k λ_min(W̃(τ))/κ² I with W̃(τ) ≻ 0 (observability) in general: Σ(t) → 0 at rate
    O(1/t) from every Σ0 ⪰ 0."""
    if pr.g_psd:
        if pr.n_left == d:
            return "psd_hurwitz", "collapses"
        if pr.observable and pr.n_right == 0 and pr.axis_semisimple:
            return "psd_marginal", "collapses"
        if pr.rank0 == d and pr.unseen:
            return "psd_gramian_singular", "grows"
        if pr.rank0 == d and pr.n_axis == 0 and pr.n_right and pr.unseen is False:
            return "psd_gramian_pd", "converges"
        return None
    if pr.g_nsd and pr.range_stable is False and pr.g_nd:
        return "nsd_unstable_range", "blows_up"
    if pr.g_nsd and pr.range_stable and pr.threshold_sign:
        return "nsd_threshold", "blows_up" if pr.threshold_sign > 0 else "collapses"
    return None


# ---------------------------------------------------------------- exact premises: rationals


def _q(X: ArrayLike) -> np.ndarray:
    """The float array X as an object array of exact Fractions (floats are dyadic rationals)."""
    X = np.asarray(X, dtype=float)
    out = np.empty(X.shape, dtype=object)
    for idx, x in np.ndenumerate(X):
        out[idx] = Fraction(float(x))
    return out


def _q_eye(n: int) -> np.ndarray:
    out = np.full((n, n), Fraction(0), dtype=object)
    for i in range(n):
        out[i, i] = Fraction(1)
    return out


def _q_rref(M: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """Reduced row echelon form of a Fraction matrix and its pivot columns (exact)."""
    R = np.array(M, dtype=object, copy=True)
    rows, cols = R.shape
    pivots: list[int] = []
    for j in range(cols):
        r = len(pivots)
        if r == rows:
            break
        piv = next((i for i in range(r, rows) if R[i, j] != 0), None)
        if piv is None:
            continue
        R[[r, piv]] = R[[piv, r]]
        R[r] = R[r] / R[r, j]
        for i in range(rows):
            if i != r and R[i, j] != 0:
                R[i] = R[i] - R[i, j] * R[r]
        pivots.append(j)
    return R, pivots


def _q_range(M: np.ndarray) -> np.ndarray:
    """Columns of M that form a basis of its range (exact)."""
    return M[:, _q_rref(M)[1]]


def _q_null(M: np.ndarray) -> np.ndarray:
    """A basis of the null space of M (n columns of length M.shape[1]), exact."""
    R, pivots = _q_rref(M)
    n = M.shape[1]
    free = [j for j in range(n) if j not in pivots]
    out = np.full((n, len(free)), Fraction(0), dtype=object)
    for k, j in enumerate(free):
        out[j, k] = Fraction(1)
        for i, pj in enumerate(pivots):
            out[pj, k] = -R[i, j]
    return out


def _q_solve(M: np.ndarray, B: np.ndarray) -> np.ndarray:
    """X with M X = B for an invertible square Fraction matrix M (exact Gauss–Jordan)."""
    n = M.shape[0]
    R, pivots = _q_rref(np.hstack([M, B]))
    if pivots[:n] != list(range(n)):
        raise ArithmeticError("singular system")
    return R[:n, n:]


def _q_restrict(A: np.ndarray, U: np.ndarray) -> np.ndarray:
    """A restricted to the A-invariant subspace spanned by the columns of U: A U = U A_U."""
    return _q_solve(U.T.dot(U), U.T.dot(A.dot(U)))


def _q_charpoly(M: np.ndarray) -> list[Fraction]:
    """det(xI − M) = x^n + c₁x^{n−1} + … + c_n, coefficients highest first (Faddeev–LeVerrier)."""
    n = M.shape[0]
    coeffs = [Fraction(1)]
    Mk = np.full((n, n), Fraction(0), dtype=object)
    eye = _q_eye(n)
    for k in range(1, n + 1):
        Mk = M.dot(Mk) + coeffs[-1] * eye
        coeffs.append(-sum(np.diagonal(M.dot(Mk)), Fraction(0)) / k)
    return coeffs


def _sym_inertia(S: np.ndarray) -> tuple[int, int, int]:
    """(n₊, n₀, n₋) of a symmetric Fraction matrix, exactly: its characteristic polynomial has
    real roots only, so Descartes' rule of signs counts the positive (and, at −x, negative) ones
    exactly; n₀ is the number of trailing zero coefficients."""
    c = _q_charpoly(S)
    n = len(c) - 1
    zero = next(k for k in range(n + 1) if c[n - k] != 0) if any(c) else n
    signs = [x > 0 for x in c if x != 0]
    pos = sum(a != b for a, b in itertools.pairwise(signs))
    return pos, zero, n - pos - zero


def _sympy_poly(coeffs: Sequence[Fraction], var: str) -> sympy.Poly:
    import sympy

    return sympy.Poly([sympy.Rational(c.numerator, c.denominator) for c in coeffs],
                      sympy.Symbol(var), domain="QQ")


def _sign_variations(polys: Iterable[sympy.Poly], at_minus_infinity: bool) -> int:
    signs = []
    for f in polys:
        s = f.LC() > 0
        signs.append(s != (at_minus_infinity and f.degree() % 2 == 1))
    return sum(a != b for a, b in itertools.pairwise(signs))


def _cauchy_index(f0: sympy.Poly, f1: sympy.Poly) -> int:
    """Cauchy index of f1/f0 over ℝ by the generalised Sturm sequence
    f_{k+1} = −rem(f_{k−1}, f_k)."""
    seq = [f0, f1]
    while not seq[-1].is_zero:
        seq.append(-seq[-2].rem(seq[-1]))
    seq = [f for f in seq if not f.is_zero]
    return _sign_variations(seq, True) - _sign_variations(seq, False)


def _on_axis(p: sympy.Poly) -> int:
    """Number of roots of the real polynomial p on iℝ, with multiplicity: the real roots of
    gcd(Re p(iω), Im p(iω))."""
    U, V = _axis_parts(p)
    g = U.gcd(V) if not V.is_zero else U
    return 0 if g.degree() <= 0 else len(g.real_roots())


def _axis_parts(p: sympy.Poly) -> tuple[sympy.Poly, sympy.Poly]:
    """(U, V) with p(iω) = U(ω) + i V(ω)."""
    import sympy

    w = sympy.Symbol("w")
    n = p.degree()
    U, V = [], []
    for i, a in enumerate(p.all_coeffs()):
        k = n - i
        unit = (1, 0, -1, 0)[k % 4], (0, 1, 0, -1)[k % 4]  # i^k = unit[0] + i unit[1]
        U.append(a * unit[0])
        V.append(a * unit[1])
    return sympy.Poly(U, w, domain="QQ"), sympy.Poly(V, w, domain="QQ")


def _half_planes(M: np.ndarray) -> tuple[int, int, int]:
    """(n_left, n_axis, n_right): eigenvalues of the Fraction matrix M with Re λ < 0, = 0, > 0,
    with multiplicity, exactly.

    With h = gcd(p(s), p(−s)) (p the characteristic polynomial), h holds every root on iℝ and
    every pair ±z, so n_right(h) = (deg h − n_axis)/2; q = p/h has no root on iℝ, and the
    argument principle on iℝ (Routh–Hurwitz through the Cauchy index of the real and imaginary
    parts of q(iω)) gives n_left(q) − n_right(q) = −Ind(V/U) (deg q even) or Ind(U/V) (odd)."""
    p = _sympy_poly(_q_charpoly(M), "s")
    n = p.degree()
    import sympy

    s = sympy.Symbol("s")
    h = p.gcd(p.compose(sympy.Poly(-s, s, domain="QQ")))
    q = p.quo(h)
    axis = _on_axis(h)
    m = q.degree()
    if m > 0:
        U, V = _axis_parts(q)
        diff = -_cauchy_index(U, V) if m % 2 == 0 else _cauchy_index(V, U)
    else:
        diff = 0
    right = (m - diff) // 2 + (h.degree() - axis) // 2
    return n - right - axis, axis, right


# ---------------------------------------------------------------- exact rational arithmetic


def _dyadic(X: np.ndarray) -> tuple[np.ndarray, int]:
    """X = Z · 2^e exactly, Z an object array of Python ints (floats are dyadic rationals)."""
    fr = [Fraction(float(x)) for x in np.ravel(X)]
    e = min((-(f.denominator.bit_length() - 1) for f in fr if f), default=0)
    Z = np.array([int(f * Fraction(2) ** (-e)) for f in fr], dtype=object).reshape(X.shape)
    return Z, e


def _dy_add(a: tuple, b: tuple) -> tuple:
    (Za, ea), (Zb, eb) = a, b
    e = min(ea, eb)
    return Za * (2 ** (ea - e)) + Zb * (2 ** (eb - e)), e


def _dy_mul(a: tuple, b: tuple) -> tuple:
    return a[0].dot(b[0]), a[1] + b[1]


def _dy_kron(a: tuple, b: tuple) -> tuple:
    return np.kron(a[0], b[0]), a[1] + b[1]


def _exact_ok(p: Params, cov: np.ndarray, P: np.ndarray) -> bool:
    """Exact: residual bound, P̃ ≻ 0 and −(L_vᵀP̃ + P̃L_v) ≻ 0 with L_v the linearisation in
    vech coordinates (h = (H_ij), i ≤ j) built from the stored floats as exact rationals and
    P̃ = round(2^k · D P D) (D = diag(1, √2): orthonormal → vech coordinates)."""
    d = p.d
    S = _dyadic(cov)
    A = _dyadic(p.A)
    eye = (np.eye(d, dtype=int).astype(object), 0)
    # M = A + Σ_h V_h Σ B_h, then the Kronecker form of L (row-major vec)
    M = A
    heads = [(_dyadic(V), _dyadic(B)) for V, B in p.heads]
    for V, B in heads:
        M = _dy_add(M, _dy_mul(_dy_mul(V, S), B))
    full = _dy_add(_dy_kron(M, eye), _dy_kron(eye, M))
    for V, B in heads:
        BS_T = _dy_mul(B, S)
        BS_T = (BS_T[0].T, BS_T[1])
        SBt = _dy_mul(S, (B[0].T, B[1]))
        full = _dy_add(full, _dy_add(_dy_kron(V, BS_T), _dy_kron(SBt, V)))
    iu, ju = np.triu_indices(d)
    dup = np.zeros((d * d, iu.size), dtype=object)
    dup[:] = 0
    for k, (i, j) in enumerate(zip(iu, ju, strict=True)):
        dup[i * d + j, k] = 1
        dup[j * d + i, k] = 1
    Lv = full[0][iu * d + ju, :].dot(dup)  # exact vech(L(H)) = Lv · vech(H) · 2^{e}
    # P in vech coordinates, rounded to integers
    w = np.where(iu == ju, 1.0, np.sqrt(2.0))
    Pv = (w[:, None] * P) * w[None, :]
    k = P_BITS - int(np.ceil(np.log2(np.abs(Pv).max())))
    Pi = np.array([[round(float(np.ldexp(x, k))) for x in row] for row in Pv], dtype=object)
    Pi = np.triu(Pi) + np.triu(Pi, 1).T
    Mq = -(Lv.T.dot(Pi) + Pi.dot(Lv))
    if not (_bareiss_pd(Pi) and _bareiss_pd(Mq)):
        return False
    # residual: ‖F‖_F² ≤ ACCEPT_RTOL² (‖AΣ‖_F² + Σ_h ‖V_hΣB_hΣ‖_F²), exactly
    AS = _dy_mul(A, S)
    Fm = _dy_add(AS, (AS[0].T, AS[1]))
    scale2 = Fraction(int((AS[0] * AS[0]).sum())) * Fraction(2) ** (2 * AS[1])
    for V, B in heads:
        Wm = _dy_mul(_dy_mul(_dy_mul(V, S), B), S)
        Fm = _dy_add(Fm, _dy_add(Wm, (Wm[0].T, Wm[1])))
        scale2 += Fraction(int((Wm[0] * Wm[0]).sum())) * Fraction(2) ** (2 * Wm[1])
    f2 = Fraction(int((Fm[0] * Fm[0]).sum())) * Fraction(2) ** (2 * Fm[1])
    return f2 <= Fraction(ACCEPT_RTOL) ** 2 * scale2


def _bareiss_pd(M: np.ndarray) -> bool:
    """Exact positive definiteness of a symmetric integer matrix: every leading principal minor
    > 0 (Sylvester), the minors being the pivots of fraction-free Bareiss elimination."""
    a = [[int(x) for x in row] for row in M]
    n = len(a)
    prev = 1
    for k in range(n):
        if a[k][k] <= 0:
            return False
        akk = a[k][k]
        for i in range(k + 1, n):
            aik = a[i][k]
            row_i, row_k = a[i], a[k]
            for j in range(k + 1, n):
                row_i[j] = (row_i[j] * akk - aik * row_k[j]) // prev
        prev = akk
    return True


