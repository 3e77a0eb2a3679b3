"""Stability and blow-up certificates for time-invariant layers (SPEC §5–§6).

A certificate answers "where does Σ(t) go from Σ0?" with one of

    "converges"     Σ(t) → Σ* ≠ 0 (an equilibrium of F(Σ) = AΣ + ΣAᵀ + Σ_h(V_hΣB_hΣ + ΣB_hᵀΣV_hᵀ))
    "collapses"     Σ(t) → 0
    "blows_up"      Σ(t) diverges at a finite T*
    "grows"         Σ(t) unbounded as t → ∞ without finite-time blow-up
    "undetermined"  no theorem applies and the numerical evidence is not conclusive

and ships the evidence: the equilibrium with its residual, the linearisation L in orthonormal
symmetric coordinates, a Lyapunov matrix P ≻ 0 with LᵀP + PL = −Q (python-control `lyap`), the
decay rate, T* and the singular direction. `exact` says whether the conclusion rests on SPEC §5's
closed-form reasoning (scalar V: G = −Σ_h v_h(B_h + B_hᵀ), Σ(t) = e^{At}Σ0(I + W(t)Σ0)⁻¹e^{Aᵀt})
rather than on integration; `global_` says whether it holds for every Σ0 ≻ 0, not just this one.

Numerical evidence (general V, or no theorem): a bounded integration, then a local certificate —
a sublevel set {h : hᵀPh ≤ ρ} around Σ* that lies inside its basin of attraction, because with
F(Σ* + H) = L(H) + q(H), ‖q(H)‖_F ≤ c‖H‖_F², the derivative of V(h) = hᵀPh obeys
V̇ ≤ −λ_min(Q)|h|² + 2‖P‖c|h|³ < 0 for |h| < λ_min(Q)/(2‖P‖c). The final state of the
integration must lie in that set; the certificate is then labelled exact=False.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from scipy.linalg import LinAlgError, cholesky, schur

from .equilibrium import (
    ACCEPT_RTOL,
    ENUMERATION_MAX_D,
    KRONECKER_MAX_D,
    Equilibrium,
    equilibria,
    linearization_matrix,
    make_equilibrium,
    quadratic_constant,
    relative_residual,
    sym_basis,
    to_coords,
)
from .equilibrium import F as F_of
from .errors import InvalidInputError, SolverError
from .exact import van_loan
from .flows import flow
from .model import Gaussian, Params
from .riccati import AXIS_RTOL, SINGULAR_RCOND, lapack_sylvester_gramian, lyapunov, schur_split
from .validation import as_covariance, as_vector, psd_factor, psd_rank

REGIMES = ("converges", "collapses", "blows_up", "grows", "undetermined")
#: G counts as semidefinite when its eigenvalues of the wrong sign are ≤ SIGN_RTOL · max |λ(G)|
SIGN_RTOL = 1e-12
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
#: a bounded integration stops once tr Σ leaves [tr Σ0 / GROWTH_STOP, GROWTH_STOP · tr Σ0]
GROWTH_STOP = 1e12
#: work limit of one bounded Runge–Kutta integration (right-hand-side evaluations)
MAX_RHS_EVALUATIONS = 60_000
#: "grows": tr Σ(T) ≥ GROWTH_FACTOR · tr Σ0 and still increasing exponentially
GROWTH_FACTOR = 1e6
#: numerical convergence onto an equilibrium without a Lyapunov set: distance ≤ CLOSE_RTOL scale
CLOSE_RTOL = 1e-6
#: the certified basin uses this fraction of the largest admissible level ρ
BASIN_SAFETY = 0.5
#: check(): blow-up sign change of λ_min(I + L0ᵀW(t)L0) within T*(1 ± BLOWUP_CHECK_RTOL)
BLOWUP_CHECK_RTOL = 1e-7
#: check() in exact rational arithmetic up to this d
EXACT_CHECK_MAX_D = 6
#: P is rounded to integers after scaling its largest entry to about 2^P_BITS
P_BITS = 52


@dataclass(frozen=True, eq=False)
class Certificate:
    """Where Σ(t) goes from Σ0 under a time-invariant layer, and the evidence for it.

    regime: one of REGIMES. equilibrium: Σ* (converges / collapses) or None. lyapunov: P ≻ 0 with
    LᵀP + PL = −Q in orthonormal symmetric coordinates (|h| = ‖H‖_F), Q = lyapunov_rhs, L =
    operator (n_s × n_s, n_s = d(d+1)/2); None where no local certificate is given. rate: decay
    rate −max Re λ(L) (or 2 min Re λ(A) from the closed form) for converges/collapses, None else.
    blowup_time T* and blowup_direction (unit vector) for blows_up. exact: closed-form reasoning
    (True) or numerical evidence (False); global_: the conclusion holds for every Σ0 ≻ 0.
    theorem: the premise `check()` re-verifies ("psd_hurwitz", "psd_gramian_pd",
    "psd_gramian_singular", "nsd_unstable_range", "nsd_threshold", "closed_form_root", "zero",
    "numerical"). threshold: λ_max(W∞Σ0) for "nsd_threshold". horizon, final_cov: end of the
    integration used as evidence; basin: level ρ of the certified sublevel set around Σ*;
    kantorovich_radius: radius around the stored Σ* in which an exact equilibrium exists.
    """

    regime: str
    equilibrium: Equilibrium | None
    lyapunov: np.ndarray | None
    rate: float | None
    blowup_time: float | None
    exact: bool
    global_: bool
    reason: str
    params: Params
    cov0: np.ndarray
    mean0: np.ndarray
    theorem: str = "numerical"
    lyapunov_rhs: np.ndarray | None = None
    operator: np.ndarray | None = None
    blowup_direction: np.ndarray | None = None
    threshold: float | None = None
    horizon: float | None = None
    final_cov: np.ndarray | None = None
    basin: float | None = None
    kantorovich_radius: float | None = None

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
        premises of the theorem used, and for blow-up the sign change of λ_min(I + L0ᵀW(t)L0)
        across T*(1 ± 1e-7) (scalar V; a general-V blow-up is integration evidence, exact=False,
        of which only the form is checked; the first-ness of the root is not re-checked for
        indefinite G). For d ≤ 6 the Lyapunov inequalities and the residual bound are re-checked
        in exact rational arithmetic, with P rounded to integers after scaling.
        """
        try:
            return bool(_verify(self))
        except (LinAlgError, SolverError, ValueError, ArithmeticError, TypeError):
            return False

    def linearization(self):
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
        K = p.M(cov) + sum(V for V, _ in p.heads)
        N = sym_basis(d)
        coupling = np.zeros((d, n))
        for k in range(n):
            E = N[:, k].reshape(d, d)
            coupling[:, k] = sum(V @ E @ B @ m for V, B in p.heads)
        Amat = np.block([[K, coupling], [np.zeros((n, d)), L]])
        Bmat = np.vstack([np.eye(d), np.zeros((n, d))])
        return control.ss(Amat, Bmat, np.eye(d + n), np.zeros((d + n, d)))


# ---------------------------------------------------------------- entry point


def certify(params: Params, cov0, mean0=None) -> Certificate:
    """Classify the covariance flow Σ̇ = AΣ + ΣAᵀ + Σ_h(V_hΣB_hΣ + ΣB_hᵀΣV_hᵀ) from Σ(0) = Σ0.

    Scalar V (G = −Σ_h v_h(B_h + B_hᵀ)), SPEC §5 exactly: G ⪰ 0 never blows up; with A Hurwitz
    Σ → 0, with Re λ > 0 somewhere and Σ0 ≻ 0 Σ → the stabilizing Bernoulli solution when its
    Gramian P (T₁₁ᵀP + PT₁₁ = G₁₁ on the anti-stable block) is invertible, and grows otherwise.
    G ⪯ 0: blow-up at the first root of λ_max(−W(t)Σ0) = 1 when range Σ0 leaves the stable
    subspace (G ≺ 0), else iff λ_max(W∞Σ0) > 1. Any other case: the closed form on a bounded
    horizon (a root of det(I + W(t)Σ0) is an exact blow-up) and then numerical evidence.
    General V: a bounded Runge–Kutta integration and a local certificate at an equilibrium found
    by Newton's method (exact=False). T* comes from `flow` (Brent's method on the closed form for
    scalar V, the DOP853 blow-up event for general V). mean0 is stored for the linearisation;
    the regime concerns Σ only.
    """
    if not isinstance(params, Params):
        raise InvalidInputError(f"params must be a riccati_tf.Params, got {type(params).__name__}")
    cov0 = as_covariance("cov0", cov0, params.d)
    mean0 = np.zeros(params.d) if mean0 is None else as_vector("mean0", mean0, params.d)
    cov0.setflags(write=False)
    mean0.setflags(write=False)
    base = {"params": params, "cov0": cov0, "mean0": mean0}
    if psd_rank(cov0) == 0:
        return Certificate("collapses", _zero_equilibrium(params), None, None, None, True, False,
                           "Σ0 = 0 is an equilibrium: the covariance stays 0.", theorem="zero",
                           **base)
    if params.value_scalars is not None:
        return _certify_scalar(params, cov0, base)
    return _numerical(params, cov0, base, scalar=False)


def _zero_equilibrium(p: Params) -> Equilibrium:
    """Σ* = 0, where L(H) = AH + HAᵀ has spectral abscissa 2 max Re λ(A)."""
    return make_equilibrium(p, np.zeros((p.d, p.d)), "zero",
                            abscissa=2 * float(np.max(np.linalg.eigvals(p.A).real)), rank=0)


# ---------------------------------------------------------------- scalar V: SPEC §5 theorems


def _g_signs(G: np.ndarray) -> tuple[bool, bool, bool]:
    """(G ⪰ 0, G ⪯ 0, G ≺ 0) with the relative tolerance SIGN_RTOL."""
    g = np.linalg.eigvalsh(G)
    tol = SIGN_RTOL * max(np.abs(g).max(), np.finfo(float).tiny)
    return bool(g[0] >= -tol), bool(g[-1] <= tol), bool(g[-1] < -tol)


def _hyperbolic(A: np.ndarray) -> tuple[np.ndarray, bool]:
    eig = np.linalg.eigvals(A)
    scale = np.linalg.norm(A)
    return eig, bool(scale > 0 and np.min(np.abs(eig.real)) > AXIS_RTOL * scale)


def _certify_scalar(p: Params, cov0: np.ndarray, base: dict) -> Certificate:
    A, G, d = p.A, p.G, p.d
    psd, nsd, nd = _g_signs(G)
    eig, hyperbolic = _hyperbolic(A)
    pd0 = psd_rank(cov0) == d
    if psd and hyperbolic:
        if np.all(eig.real < 0):
            return _converged(p, np.zeros((d, d)), base, "psd_hurwitz", exact=True, glob=True,
                              rate=-2 * float(np.max(eig.real)),
                              reason="G ⪰ 0 rules out blow-up and A is Hurwitz: "
                                     "Σ(t) ⪯ e^{At}Σ0e^{Aᵀt} → 0 (SPEC §5).")
        if pd0:
            split = schur_split(A, G)
            if split.singularity(A, G) < SINGULAR_RCOND:
                return Certificate(
                    "grows", None, None, None, None, True, True,
                    "G ⪰ 0 rules out blow-up, and the Gramian P of the anti-stable part "
                    "(T₁₁ᵀP + PT₁₁ = G₁₁) is singular: an anti-stable mode of A is not seen by G, "
                    "so Σ(t)⁻¹ = e^{−Aᵀt}(Σ0⁻¹ + W(t))e^{−At} tends to a singular matrix and Σ(t) "
                    "is unbounded.", theorem="psd_gramian_singular", **base)
            eq = equilibria(p)[0]
            k = split.k
            rate = 2 * float(np.min(np.abs(eig.real)))
            return _converged(p, eq.cov, base, "psd_gramian_pd", exact=True, glob=True,
                              rate=rate, equilibrium=eq,
                              reason=f"G ⪰ 0 rules out blow-up; A has {k} eigenvalue(s) with "
                                     f"Re λ > 0 whose Gramian P ≻ 0, so every Σ0 ≻ 0 converges "
                                     f"to the stabilizing Bernoulli solution Σ* = U₁P⁻¹U₁ᵀ of "
                                     f"rank {k}, at rate 2 min |Re λ(A)| (SPEC §5).")
    if nsd and not psd:
        got = _negative_case(p, cov0, base, nd)
        if got is not None:
            return got
    return _numerical(p, cov0, base, scalar=True, no_blowup=psd)


def _stable_basis(A: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Ordered Schur form with the eigenvalues Re λ < −AXIS_RTOL‖A‖_F leading: (U, T, s)."""
    tol = AXIS_RTOL * np.linalg.norm(A)
    T, U, s = schur(A, output="real", sort=lambda re, _im: re < -tol)
    return U, T, int(s)


def _threshold(A: np.ndarray, G: np.ndarray, cov0: np.ndarray) -> tuple[float | None, float]:
    """(λ_max(W∞Σ0) or None when range Σ0 ⊄ stable subspace, the stable decay rate)."""
    U, T, s = _stable_basis(A)
    L0 = psd_factor(cov0)
    Us = U[:, :s]
    C = Us.T @ L0
    if np.linalg.norm(L0 - Us @ C) > RANGE_RTOL * np.linalg.norm(L0):
        return None, 0.0
    Ts = T[:s, :s]
    # TsᵀW + WTs = G_s = −|G|_s: W is W∞ (= −W(∞), with W(t) = ∫_0^t e^{Aᵀu}Ge^{Au}du)
    W = lapack_sylvester_gramian(Ts, Us.T @ G @ Us)
    lam = float(np.linalg.eigvalsh(C.T @ W @ C)[-1])
    rate = -2 * float(np.max(np.linalg.eigvals(Ts).real))
    return lam, rate


def _negative_case(p: Params, cov0: np.ndarray, base: dict, nd: bool) -> Certificate | None:
    A, d = p.A, p.d
    lam, rate = _threshold(A, p.G, cov0)
    if lam is None:
        if not nd:
            return None
        return _blowup(p, cov0, base, "nsd_unstable_range", exact=True, glob=True,
                       reason="G ≺ 0 and range Σ0 is not inside the stable invariant subspace of "
                              "A: −W(t) grows without bound there, so λ_max(−W(t)Σ0) reaches 1 "
                              "(SPEC §5); T* is its first root.")
    if abs(lam - 1) <= THRESHOLD_RTOL:
        return Certificate("undetermined", None, None, None, None, False, False,
                           f"borderline of the G ⪯ 0 threshold: λ_max(W∞Σ0) = {lam:.12g} is 1 to "
                           f"within {THRESHOLD_RTOL:g}.", threshold=lam, theorem="numerical",
                           **base)
    if lam > 1:
        return _blowup(p, cov0, base, "nsd_threshold", exact=True, glob=False, threshold=lam,
                       reason=f"G ⪯ 0 and range Σ0 lies in the stable subspace of A, where "
                              f"λ_max(W∞Σ0) = {lam:.6g} > 1 with AᵀW∞ + W∞A + |G| = 0: "
                              f"λ_max(−W(t)Σ0) crosses 1 (SPEC §5).")
    hurwitz = bool(np.all(np.linalg.eigvals(A).real < 0))
    return _converged(p, np.zeros((d, d)), base, "nsd_threshold", exact=True, glob=False,
                      rate=rate, threshold=lam, local=hurwitz,
                      reason=f"G ⪯ 0 and range Σ0 lies in the stable subspace of A, where "
                             f"λ_max(W∞Σ0) = {lam:.6g} < 1: I + W(t)Σ0 stays invertible and "
                             f"Σ(t) → 0 (SPEC §5).")


def _blowup(p: Params, cov0: np.ndarray, base: dict, theorem: str, *, exact: bool, glob: bool,
            reason: str, threshold: float | None = None) -> Certificate:
    """Locate T* with the exact flow (the blow-up is known to happen) up to MAX_NORM_TIME over
    the rate scale max(‖A‖₂, c‖Σ0‖₂)."""
    horizon = MAX_NORM_TIME / _rate_scale(p, cov0)
    run = _Integrator(p, cov0, "exact", stop_growth=False).advance(horizon)
    if run.blowup_time is not None:
        return Certificate("blows_up", None, None, None, run.blowup_time, exact, glob,
                           reason + f" T* = {run.blowup_time:.12g}.", theorem=theorem,
                           blowup_direction=run.blowup_direction, threshold=threshold,
                           horizon=run.t_end, final_cov=run.final, **base)
    return Certificate("undetermined", None, None, None, None, False, False,
                       reason + f" But no root of det(I + W(t)Σ0) was located up to t = "
                                f"{run.t_end:.6g}, so T* cannot be reported.",
                       threshold=threshold, horizon=run.t_end, final_cov=run.final, **base)


@dataclass(frozen=True)
class _Run:
    """Bounded integration: the state at t_end (≤ horizon) and at about t_end/2, or blow-up."""

    t_end: float
    mid: np.ndarray
    final: np.ndarray
    blowup_time: float | None = None
    blowup_direction: np.ndarray | None = None
    exhausted: bool = False


class _BudgetExhausted(Exception):
    """More than MAX_RHS_EVALUATIONS right-hand-side evaluations in one integration."""


class _Integrator:
    """Integrate Σ alone (b = 0, m = 0: Σ does not depend on the mean) with `flow` in segments of
    length ≤ SEGMENT_NORM_TIME/‖A‖₂ (the flow is a semigroup), projecting each segment's end onto
    the PSD cone against rounding. `advance(t)` continues to time t and stops early at blow-up,
    when the work budget is spent, or (stop_growth) once tr Σ leaves
    [tr Σ0 / GROWTH_STOP, GROWTH_STOP · tr Σ0]."""

    def __init__(self, p: Params, cov0: np.ndarray, method: str, stop_growth: bool = True):
        bare = Params(p.A, heads=p.heads)
        self.calls = 0

        def counted(_t):  # the time-varying form of `flow` lets the right-hand side be counted
            self.calls += 1
            if self.calls > MAX_RHS_EVALUATIONS:
                raise _BudgetExhausted
            return bare

        self.layer = bare if method == "exact" else counted
        self.method, self.stop_growth, self.d = method, stop_growth, p.d
        norm = np.linalg.norm(p.A, 2)
        self.seg = SEGMENT_NORM_TIME / norm if norm > 0 else np.inf
        self.tr0 = np.trace(cov0)
        self.t, self.S = 0.0, cov0
        self.times, self.states = [0.0], [cov0]
        self.stopped = False

    def advance(self, until: float) -> _Run:
        while self.t < until * (1 - 1e-12) and not self.stopped:
            h = min(self.seg, until - self.t)
            try:
                traj = flow(self.layer, Gaussian(np.zeros(self.d), self.S), h,
                            method=self.method, t_eval=[0.0, h / 2, h])
            except _BudgetExhausted:
                self.stopped = True
                return _Run(self.t, self.states[-1], self.S, exhausted=True)
            if traj.blowup_time is not None:
                self.stopped = True
                T = self.t + float(traj.blowup_time)
                return _Run(T, self.states[-1], traj.cov[-1], T, traj.blowup_direction)
            self.times += [self.t + h / 2, self.t + h]
            self.t += h
            self.S = _psd_part(traj.cov[-1])
            self.states += [traj.cov[1], self.S]
            tr = np.trace(self.S)
            if self.stop_growth and not (self.tr0 / GROWTH_STOP < tr < GROWTH_STOP * self.tr0):
                self.stopped = True
        i = int(np.argmin(np.abs(np.array(self.times) - self.t / 2)))
        return _Run(self.t, self.states[i], self.S)


def _psd_part(S: np.ndarray) -> np.ndarray:
    S = 0.5 * (S + S.T)
    e, U = np.linalg.eigh(S)
    return S if e[0] >= 0 else (U * np.clip(e, 0.0, None)) @ U.T


def _rate_scale(p: Params, cov0: np.ndarray) -> float:
    """max(‖A‖₂, c‖Σ0‖₂): the fastest rate the linear or the quadratic term can start with."""
    return float(max(np.linalg.norm(p.A, 2), quadratic_constant(p) * np.linalg.norm(cov0, 2),
                     np.finfo(float).tiny))


def _horizon(p: Params, cov0: np.ndarray) -> float:
    """HORIZON_RATES / min|Re λ(A)|, within [1, MAX_NORM_TIME] / rate scale (`_rate_scale`)."""
    scale = _rate_scale(p, cov0)
    slow = float(np.min(np.abs(np.linalg.eigvals(p.A).real)))
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
    sol = lyapunov(L)
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
               final_cov: np.ndarray | None = None, horizon: float | None = None) -> Certificate:
    """A converges/collapses certificate with a local Lyapunov certificate at Σ* when one exists
    (`loc` if given, else computed when `local`)."""
    if loc is None and local:
        loc = _local(p, cov)
    eq = equilibrium if equilibrium is not None else _zero_equilibrium(p)
    regime = "collapses" if eq.rank == 0 else "converges"
    basin = None
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
               no_blowup: bool = False) -> Certificate:
    """Bounded integration (closed form for scalar V, DOP853 otherwise), then a local
    certificate at a nearby stable equilibrium, or growth/undetermined."""
    method = "exact" if scalar else "rk"
    horizon = _horizon(p, cov0)
    integrator = _Integrator(p, cov0, method)
    for _ in range(HORIZON_DOUBLINGS + 1):
        run = integrator.advance(horizon)
        if run.blowup_time is not None:
            how = ("the first root of det(I + W(t)Σ0) located by the closed form" if scalar else
                   "the Runge–Kutta blow-up event (quadratic terms dominate d tr Σ/dt)")
            return Certificate("blows_up", None, None, None, run.blowup_time, scalar, False,
                               f"blow-up at T* = {run.blowup_time:.12g}: {how}.",
                               theorem="closed_form_root" if scalar else "numerical",
                               blowup_direction=run.blowup_direction, horizon=run.t_end,
                               final_cov=run.final, **base)
        if run.exhausted:
            return Certificate(
                "undetermined", None, None, None, None, False, False,
                f"the Runge–Kutta integration used its budget of {MAX_RHS_EVALUATIONS} "
                f"right-hand-side evaluations by t = {run.t_end:.6g} (tr Σ = "
                f"{np.trace(run.final):.3g}): the flow is stiff there, typically Σ growing along "
                f"a direction where the attention term degenerates; no conclusion.",
                horizon=run.t_end, final_cov=run.final, **base)
        got = _classify_final(p, cov0, base, run, scalar)
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


def _candidates(p: Params, final: np.ndarray, scalar: bool) -> list[Equilibrium]:
    try:
        if scalar and p.d <= ENUMERATION_MAX_D:
            return equilibria(p, which="all")
        if scalar:
            return [*equilibria(p), _zero_equilibrium(p)]
        return equilibria(p, which="all", starts=[final])
    except SolverError:
        return []


def _classify_final(p: Params, cov0: np.ndarray, base: dict, run: _Run,
                    scalar: bool) -> Certificate | None:
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
    if trf >= GROWTH_FACTOR * tr0 and trf >= GROWTH_FACTOR ** 0.5 * trm:
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
    if c.regime not in REGIMES or (c.global_ and not c.exact):
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
    if c.regime == "blows_up":
        if c.blowup_time is None or not np.isfinite(c.blowup_time) or c.blowup_time <= 0:
            return False
        if p.value_scalars is not None and not _blowup_ok(p, c.cov0, c.blowup_time):
            return False
    elif c.blowup_time is not None:
        return False
    return _premises_ok(c)


def _equilibrium_ok(p: Params, eq: Equilibrium) -> bool:
    cov = eq.cov
    if cov.shape != (p.d, p.d) or not np.all(np.isfinite(cov)):
        return False
    if np.linalg.norm(cov - cov.T) > 1e-12 * max(np.linalg.norm(cov), 1e-300):
        return False
    res = relative_residual(p, cov)
    return res <= ACCEPT_RTOL and res <= 2 * eq.residual + 1e-15


def _lyapunov_ok(c: Certificate) -> bool:
    p, eq, P = c.params, c.equilibrium, c.lyapunov
    if eq is None or c.operator is None or c.lyapunov_rhs is None:
        return False
    L = linearization_matrix(p, eq.cov)
    if L.shape != c.operator.shape or \
            np.linalg.norm(L - c.operator) > 1e-12 * max(np.linalg.norm(L), 1e-300):
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


def _blowup_ok(p: Params, cov0: np.ndarray, T: float) -> bool:
    """λ_min(I + L0ᵀW(t)L0) changes sign across T*(1 ± BLOWUP_CHECK_RTOL)."""
    L0 = psd_factor(cov0)
    r = L0.shape[1]
    lo, hi = T * (1 - BLOWUP_CHECK_RTOL), T * (1 + BLOWUP_CHECK_RTOL)
    W_lo, W_hi = _gramian(p.A, p.G, lo), _gramian(p.A, p.G, hi)
    s_lo = np.linalg.eigvalsh(np.eye(r) + L0.T @ W_lo @ L0)[0]
    s_hi = np.linalg.eigvalsh(np.eye(r) + L0.T @ W_hi @ L0)[0]
    return bool(s_lo > 0 > s_hi)


def _gramian(A: np.ndarray, G: np.ndarray, t: float) -> np.ndarray:
    """W(t) = ∫_0^t e^{Aᵀu} G e^{Au} du by the semigroup rule W(s + h) = W(s) + E_sᵀW(h)E_s,
    with steps ‖A‖₂ h ≤ 1 (the Van Loan block exponential is accurate on each)."""
    norm = np.linalg.norm(A, 2)
    n = max(1, int(np.ceil(norm * t)))
    Eh, Wh = van_loan(A, G, t / n)
    E, W = np.eye(A.shape[0]), np.zeros_like(A)
    for _ in range(n):
        W = W + E.T @ Wh @ E
        E = Eh @ E
    return 0.5 * (W + W.T)


def _premises_ok(c: Certificate) -> bool:
    """Re-check the premises of the theorem the certificate cites."""
    p, th = c.params, c.theorem
    if th in ("numerical", "zero"):
        if th == "zero":
            return psd_rank(c.cov0) == 0 and c.regime == "collapses"
        return not c.exact
    if p.value_scalars is None or not c.exact:
        return False
    A, G = p.A, p.G
    psd, nsd, nd = _g_signs(G)
    eig, hyperbolic = _hyperbolic(A)
    pd0 = psd_rank(c.cov0) == p.d
    if th == "psd_hurwitz":
        return psd and hyperbolic and bool(np.all(eig.real < 0)) and c.regime == "collapses"
    if th in ("psd_gramian_pd", "psd_gramian_singular"):
        if not (psd and hyperbolic and pd0 and np.any(eig.real > 0)):
            return False
        singular = schur_split(A, G).singularity(A, G) < SINGULAR_RCOND
        if th == "psd_gramian_singular":
            return singular and c.regime == "grows"
        k = int(np.sum(eig.real > 0))
        return (not singular) and c.regime == "converges" and c.equilibrium.rank == k \
            and c.equilibrium.stable
    if th == "nsd_unstable_range":
        return nd and _threshold(A, G, c.cov0)[0] is None and c.regime == "blows_up"
    if th == "nsd_threshold":
        lam = _threshold(A, G, c.cov0)[0]
        if not nsd or lam is None or abs(lam - 1) <= THRESHOLD_RTOL:
            return False
        return c.regime == ("blows_up" if lam > 1 else "collapses")
    if th == "closed_form_root":
        return c.regime == "blows_up"
    return False


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


