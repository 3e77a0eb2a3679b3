"""`certify`: the regime of the covariance flow from Σ0, by the theorems of SPEC §5 where their
premises hold and by numerical evidence otherwise.

Scalar V: Σ(t) = e^{At}Σ0(I + W(t)Σ0)⁻¹e^{Aᵀt}; G ⪰ 0 rules out blow-up (Hurwitz A: collapse;
observable and marginal A: algebraic collapse; an unseen unstable mode: growth; hyperbolic A: the
stabilizing Bernoulli solution), G ⪯ 0 blows up when range Σ0 leaves the stable subspace (G ≺ 0)
or λ_max(W∞Σ0) > 1, with T* located by `blowup`. Every certificate is re-checked before it is
returned (`_released`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from numpy.typing import ArrayLike
from scipy.linalg import LinAlgError

from ...errors import InvalidInputError, SolverError
from ...state.params import Gaussian, Params
from ...state.validation import as_covariance, as_vector
from ..equilibria import equilibria
from ..equilibria.evidence import make_equilibrium
from ..equilibria.scales import drift_spectrum, quadratic_constant
from ..riccati.numerics import numerical_failures
from . import bounded, stiff
from .blowup import _blowup_scale, _monotone_root, _rank0, _rate_scale, cov_root
from .certificate import Certificate, _converged
from .constants import BOUND_RTOL, GROWTH_STOP, MAX_NORM_TIME
from .local import _zero_equilibrium
from .numerical import _numerical
from .premises import THEOREMS, Premises, bracket_agrees, premises, theorem_of

__all__: list[str] = []  # certify is documented as riccati_tf.certify


def certify(params: Params, gaussian: Gaussian | ArrayLike,
            mean0: ArrayLike | None = None) -> Certificate:
    """Classify the covariance flow Σ̇ = AΣ + ΣAᵀ + Σ_h(V_hΣB_hΣ + ΣB_hᵀΣV_hᵀ) from Σ(0) = Σ0.

    Decides where Σ(t) goes, "converges", "collapses", "blows_up", "grows", "bounded" or
    "undetermined" (REGIMES), and returns the verdict with its evidence (SPEC §5–§6).

    Scalar V (V_h = v_h I, G = −Σ_h v_h(B_h + B_hᵀ)): the flow is Σ̇ = A Σ + Σ Aᵀ − Σ G Σ with the
    closed form

        Σ(t) = e^{At} Σ0 (I + W(t) Σ0)⁻¹ e^{Aᵀt},      W(t) = ∫_0^t e^{Aᵀs} G e^{As} ds,

    and SPEC §5's theorems decide: G ⪰ 0 never blows up; with A Hurwitz Σ → 0; with Σ0 ≻ 0 and
    an eigenvalue Re λ > 0 of A on the unobservable subspace ∩_k ker(GA^k) Σ grows without
    bound; with A hyperbolic, Re λ > 0 somewhere and no such unseen mode, Σ0 ≻ 0 converges to
    the stabilizing Bernoulli solution. G ⪯ 0: blow-up when G ≺ 0 and range Σ0 leaves the
    stable invariant subspace of A, else (range inside) iff λ_max(W∞Σ0) > 1; T* is the first
    root of λ_min(I + L0ᵀW(t)L0) (Σ0 = L0 L0ᵀ), non-increasing in t, by stepping and Brent's
    method. Attention term −ΣGΣ with G ⪰ 0 or zero (decided exactly; V_h = 0 or B_h = 0 heads
    count as absent) and A Lyapunov stable but not Hurwitz: "bounded", Σ(t) ⪯ e^{At}Σ0e^{Aᵀt}
    ⪯ λ_max(SΣ0)S⁻¹ for a witness S ≻ 0 with AᵀS + SA ⪯ 0 (S = I for skew A), answered without
    integrating. Any other case: the closed form on a bounded horizon and then numerical
    evidence.
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

    A pure rotation (A skew, no attention): Σ(t) = e^{At}Σ0e^{Aᵀt} stays bounded by λ_max(Σ0)
    without converging, with the witness S = I:

    >>> c = certify(Params([[0.0, -1.0], [1.0, 0.0]]), np.diag([1.0, 3.0]))
    >>> c.regime, c.theorem, c.exact, round(c.bound, 6), c.lyapunov.tolist(), c.check()
    ('bounded', 'lyapunov_stable', True, 3.0, [[1.0, 0.0], [0.0, 1.0]], True)
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
        return Certificate("converges", eq, None, None, None, True, False,
                           "A = 0 and no head has both V ≠ 0 and B ≠ 0 (decided exactly): Σ̇ = 0, "
                           "so Σ(t) = Σ0 for every t (Σ0 is one of a continuum of equilibria, not "
                           "attracting).", theorem="static", **base)
    if p.value_scalars is None:
        evidence = _bounded(p, cov0, base) or _numerical(p, cov0, base, scalar=False)
        if stiff.settling(p, evidence):  # a stiff flow: the implicit path into a basin
            return stiff.basin_certificate(p, cov0, base, MAX_NORM_TIME / _rate_scale(p, cov0),
                                           GROWTH_STOP * max(float(np.trace(cov0)),
                                                             _blowup_scale(p))) or evidence
        return evidence
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
        return _bounded(p, cov0, base) or _numerical(p, cov0, base, scalar=True,
                                                     no_blowup=pr.g_psd and pr.exact)
    if not bracket_agrees(p, cov0, pr):  # a premise within rounding of its boundary
        return _numerical(p, cov0, base, scalar=True)
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


def _bounded(p: Params, cov0: np.ndarray, base: dict) -> Certificate | None:
    """"bounded" (`bounded`) when the attention term is −ΣGΣ with G ⪰ 0 or zero, A is Lyapunov
    stable but not Hurwitz and a witness S ≻ 0 with AᵀS + SA ⪯ 0 exists, every premise decided
    exactly (A exactly skew at any d, else d ≤ EXACT_MAX_D) and the certificate passes its
    re-check; else None (the other branches decide: a premise that holds only within a
    tolerance proves no bound for all t)."""
    A = p.A
    sign = bounded.attention_sign(p)  # G in rational arithmetic: decided once
    if sign is None:
        return None
    if not np.array_equal(A, -A.T) and not bounded.lyapunov_stable(A):
        return None
    Sq = bounded.witness(A)
    if Sq is None:
        return None
    S = bounded.stored(Sq)
    try:  # an exact S ≻ 0 so ill-conditioned that its float rounding is not: no bound stated
        bound = bounded.bound_of(S, cov0) * (1 + BOUND_RTOL / 2)
    except LinAlgError:
        return None
    term = ("the attention term vanishes identically (decided exactly): Σ(t) = e^{At}Σ0e^{Aᵀt}"
            if sign == "zero" else
            "the attention term is −ΣGΣ with G ⪰ 0 (decided exactly): Σ(t) ⪯ e^{At}Σ0e^{Aᵀt}")
    c = Certificate(
        "bounded", None, S, None, None, True, True,
        f"{term}; A is Lyapunov stable, not Hurwitz, with the witness S (S ≻ 0 and "
        f"AᵀS + SA ⪯ 0 verified in exact rational arithmetic), so e^{{Aᵀt}}Se^{{At}} ⪯ S and "
        f"Σ(t) ⪯ λ_max(SΣ0)S⁻¹: λ_max(Σ(t)) ≤ {bound:.6g} for every t ≥ 0 (marginally stable: "
        f"bounded, no convergence claimed).",
        theorem=bounded.THEOREM, lyapunov_rhs=-(A.T @ S + S @ A), bound=bound,
        **{**base, "tolerance": None})
    return c if c._check(replay=False) else None


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
                             f"Re λ > 0, 0 on iℝ and 0 unseen by G ({how}), so every Σ0 ≻ 0 "
                             f"converges to the stabilizing Bernoulli solution Σ* = U₁P⁻¹U₁ᵀ of "
                             f"rank {pr.n_right}, at rate 2 min |Re λ(A)| (SPEC §5).")


def _released(c: Certificate) -> Certificate:
    """The certificate if `check()` passes; an exact theorem without its local Lyapunov evidence
    if only that evidence fails; else "undetermined" with the reason."""
    if c._check(replay=False):
        return c
    if c.exact and c.lyapunov is not None:
        bare = replace(c, lyapunov=None, lyapunov_rhs=None, operator=None, basin=None,
                       kantorovich_radius=None,
                       reason=c.reason + " (The local Lyapunov certificate at Σ* failed its "
                                         "re-check and is not shipped.)")
        if bare._check(replay=False):
            return bare
    return Certificate("undetermined", None, None, None, None, False, False,
                       f"a {c.regime!r} certificate (theorem {c.theorem!r}) was found but failed "
                       f"its own re-check, so it is not returned. It read: {c.reason}",
                       params=c.params, cov0=c.cov0, mean0=c.mean0, tolerance=c.tolerance)


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
