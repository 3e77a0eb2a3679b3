"""The exact flow: covariance steps between the output times, the mean over spans of them,
settling, blow-up location and the refusals (see `riccati_tf.flows.exact`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ...errors import SolverError
from .budget import DEFAULT_MAX_STEPS, _Budget
from .covariance import EPS, _advance, _factor, _first_singular_offset, _Propagator, _step_rule
from .mean import MEAN_STEP_COST, MEAN_THETA, _dense_pays, _mean_law, _mean_over, _MeanLaw
from .rounding import (
    ACCURACY_RTOL,
    BLOWUP_RTOL,
    CONDITION_CHECK,
    G_ROUNDING,
    _before_blowup,
    _coupled,
    _g_rounding,
    _near_blowup,
    _Rounding,
    _rounding_band,
)
from .settling import (
    SETTLE_GATE,
    SETTLE_MIN_STEPS,
    SETTLE_ROUNDING,
    _Collapse,
    _equilibrium_sensitivity,
    _mean_jump,
    _settled_equilibrium,
)

__all__: list[str] = []  # exact_flow, exact_from, ExactResult: riccati_tf.flows.exact


@dataclass(frozen=True)
class ExactResult:
    """Raw output of `exact_flow`: the states at the requested times reached before blow-up.

    The states solve Σ̇ = AΣ + ΣAᵀ − ΣGΣ and ṁ = (A + v̄I + ΣB̄) m + b; `riccati_tf.flow`
    turns this into a `riccati_tf.Trajectory`.

    Parameters
    ----------
    t : (k,) ndarray of float
        The requested times reached before any blow-up.
    mean : (k, d) ndarray of float
        m(t).
    cov : (k, d, d) ndarray of float
        Σ(t), symmetric positive semidefinite.
    blowup_time : float or None
        T*, the first time where I + W(t)Σ0 is singular, when it is ≤ t_final; else None.
    blowup_direction : (d,) ndarray of float or None
        The unit direction along which Σ diverges at T*; None without blow-up.
    n_steps : int
        Covariance steps plus mean collocation steps taken.
    settled_time : float or None, optional
        The time from which the state was certified to stay put ("equilibrium") or to follow
        the one-exponential closed form ("collapse"); None when stepped to the end.
    settled_by : {"equilibrium", "collapse"} or None, optional
        Which certificate ended the stepping.
    error_estimate : float, optional
        Estimated relative error of the returned states that the conditioning of the data
        causes (covariances relative to each state, means relative to the largest returned
        mean): the first-order bound on the effect of G's rounding accumulated along the steps
        and the rounding estimate near a blow-up, or, where the bound exceeded
        CONDITION_CHECK, the spread of the states under G ∓ Δ (`riccati_tf.flows.exact`,
        "Ill-conditioned states"). `exact_flow` returns it at most ACCURACY_RTOL. Each step's
        own rounding, about eps·κ relative with κ ≤ STEP_KAPPA the Van Loan conditioning of
        the step, comes on top.

    Raises
    ------
    SolverError
        Never on construction; `exact_flow` raises it instead of returning a result it cannot
        vouch for.

    See Also
    --------
    exact_flow : computes it.
    riccati_tf.Trajectory : the public form of a trajectory.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".

    Examples
    --------
    With A = G = I, Σ(t) → Σ* = 2I (AΣ + ΣAᵀ − ΣGΣ = 0), and the flow stops stepping once it is
    there to rounding:

    >>> import numpy as np
    >>> from riccati_tf.flows.exact import exact_flow
    >>> res = exact_flow(np.eye(2), np.eye(2), 0.0, np.zeros((2, 2)), np.zeros(2), np.zeros(2),
    ...                  np.eye(2), np.array([100.0]), 100.0)
    >>> res.settled_by, res.blowup_time
    ('equilibrium', None)
    >>> np.round(res.cov[-1], 6)
    array([[2., 0.],
           [0., 2.]])
    """

    t: np.ndarray
    mean: np.ndarray
    cov: np.ndarray
    blowup_time: float | None
    blowup_direction: np.ndarray | None
    n_steps: int
    #: time from which the state was certified to stay put ("equilibrium") or to follow the
    #: one-exponential closed form ("collapse"), and which; None when stepped to the end
    settled_time: float | None = None
    settled_by: str | None = None
    #: estimated relative error of the states (see the class docstring)
    error_estimate: float = 0.0


def _check_finite(L: np.ndarray, m: np.ndarray, t: float) -> None:
    if np.isfinite(L.sum() + m.sum()):  # one pass each; a false alarm is re-checked below
        return
    if not (np.all(np.isfinite(L)) and np.all(np.isfinite(m))):
        what = "Σ" if not np.all(np.isfinite(L)) else "the mean"
        raise SolverError(f"{what} left the floating-point range by t = {t:.6g} without a "
                          f"finite-time blow-up (I + LᵀW(s)L stayed non-singular): exponential "
                          f"growth past about 1e308")


def _refuse_early(A: np.ndarray, L: np.ndarray, law: _MeanLaw | None,
                  collapse: _Collapse | None, h0: float, t_final: float,
                  budget: _Budget) -> None:
    """Refuse before any work a flow whose steps (t_final/h0 covariance steps, and
    MEAN_STEP_COST·‖A_v‖t_final/MEAN_THETA collocation steps of the mean, > max_steps) cannot
    end early: A with an eigenvalue
    on the imaginary axis (to 1e-12‖A‖) converges, if at all, sub-exponentially and never
    settles to rounding; in the collapse regime the earliest settling time is bounded by
    `_Collapse.ready_time`."""
    lam = np.linalg.eigvals(A)
    if np.abs(lam.real).min() <= 1e-12 * max(np.abs(lam).max(), np.finfo(float).tiny):
        need = t_final / h0 + (MEAN_STEP_COST * law.norm_Av * t_final / MEAN_THETA if law
                               else 0)
        budget.spend(math.ceil(need), 0.0)
    if collapse is not None:
        ready = collapse.ready_time(L, law, h0, t_final)
        if min(ready, t_final) / h0 > budget.max_steps:
            budget.spend(math.ceil(min(ready, t_final) / h0), 0.0)


def _run(A: np.ndarray, G: np.ndarray, law: _MeanLaw | None, m0: np.ndarray, L0: np.ndarray,
         t_out: np.ndarray, t_final: float, max_steps: int, *,
         positive_definite: bool | None = None, settle: bool = True,
         check_end: bool = False) -> ExactResult:
    d = A.shape[0]
    prop = _Propagator(A, G, positive_definite)
    L, m = L0, m0.copy()
    r = L.shape[1]
    can_blow_up = bool(r and np.any(prop.G_minus))
    h0, kappa_h = _step_rule(A)
    settle_tol = SETTLE_ROUNDING * d * EPS * max(kappa_h, 1.0)
    budget = _Budget(max_steps, h0)
    # settling is worth testing only when more than SETTLE_MIN_STEPS steps lie ahead
    settle = settle and t_final / h0 > SETTLE_MIN_STEPS
    collapse = _Collapse.of(A, G, prop, settle_tol) if settle else None

    knots = np.unique(np.concatenate([t_out, [t_final]]))
    wanted = set(t_out.tolist())
    out_t: list[float] = []
    out_m: list[np.ndarray | None] = []  # None: filled in by `advance`
    out_S: list[np.ndarray] = []
    n_steps = n_cov = 0
    blowup_time = blowup_dir = None
    settled = None  # (time, kind, L, m, K)
    # the mean is known at the anchor (t_a, L_a, m, ‖K‖₂ there or None); the outputs since then
    # (their indices in out_m, times, factors of Σ) get theirs when the mean is advanced past
    # them (`advance`)
    t_a, L_a, norm_a = 0.0, L, None
    pending: list[tuple[int, float, np.ndarray]] = []
    S_prev, wait, waited = None, 0, 0
    # first-order rounding bound (package docstring, "Ill-conditioned states"): ω = w_round·‖W(H)‖_F
    bound, w_round = _Rounding(), G_ROUNDING * EPS

    out_e: list[tuple[float, float, int]] = []  # (Σε_k, Σε_k t_k, covariance steps) at outputs

    def keep(t: float, mean: np.ndarray | None, cov: np.ndarray,
             factor: np.ndarray | None = None) -> None:
        """An output; mean None: not known yet (`advance` fills it in from cov's factor)."""
        if mean is None:
            assert factor is not None  # Σ(t) = factor factorᵀ
            pending.append((len(out_m), t, factor))
        out_t.append(t)
        out_m.append(mean)
        out_S.append(cov)
        out_e.append((bound.total, bound.moment, n_cov))

    def advance(t_end: float, L_end: np.ndarray) -> None:
        """The mean from the anchor to t_end (Σ(t_end) = L_end L_endᵀ), past the pending outputs:
        in one `_mean_over` span with them inside where that takes fewer collocation nodes
        (`_dense_pays`), else span by span from output to output; t_end becomes the anchor."""
        nonlocal t_a, L_a, norm_a, m, n_steps
        span = t_end - t_a
        if law is not None and span > 0:
            norm_end = law.norm_K(L_end, span)
            norm = law.norm_K(L_a, span) if norm_a is None else norm_a
            taus = np.array([tk - t_a for _, tk, _ in pending])
            if pending and _dense_pays(max(norm, norm_end), span, taus):
                m, count, inner = _mean_over(prop, L_a, m, span, law, (norm, norm_end), 0,
                                             budget, t_a, taus)
                for (index, _, _), mean in zip(pending, inner, strict=True):
                    out_m[index] = mean
                n_steps += count
            else:
                starts = [(t_a, L_a)] + [(tk, L_k) for _, tk, L_k in pending]
                ends = [(index, tk, L_k) for index, tk, L_k in pending] + [(-1, t_end, L_end)]
                for (t0, L0), (index, t1, L1) in zip(starts, ends, strict=True):
                    if t1 > t0:  # (an output at t_end: the blow-up's step starts there)
                        later = law.norm_K(L1, t1 - t0) if index >= 0 else norm_end
                        m, count, _ = _mean_over(prop, L0, m, t1 - t0, law, (norm, later), 0,
                                                 budget, t0)
                        n_steps += count
                        norm = later
                    if index >= 0:
                        out_m[index] = m.copy()
            norm_a = norm_end
        pending.clear()
        t_a, L_a = t_end, L_end

    def next_step_end(knot_index: int, k: int, n_big: int, t_start: float, H: float) -> float:
        """The end of the covariance step after step k of n_big (of length H from t_start) in
        the interval ending at knots[knot_index]; inf after the last."""
        if k < n_big:
            return t_start + (k + 1) * H if k + 1 < n_big else float(knots[knot_index])
        if knot_index + 1 < len(knots):
            t0, t1 = float(knots[knot_index]), float(knots[knot_index + 1])
            n, H_next = _equal_steps(t1 - t0, h0)
            return t0 + H_next if n > 1 else t1
        return math.inf

    def try_settle(L, H):
        """("collapse", None), ("equilibrium", Σ*) or None after a step (package docstring,
        "Long horizons")."""
        nonlocal S_prev, wait, waited
        if collapse is not None and collapse.ready(L, law):
            return "collapse", None
        if not L.any():
            return "equilibrium", np.zeros((d, d))  # Σ = 0 exactly: a fixed point of every step
        S = L @ L.T
        previous, S_prev = S_prev, S
        if previous is None:
            return None
        dg = np.sqrt(np.outer(np.diag(S), np.diag(S)))
        if np.any(np.abs(S - previous) > SETTLE_GATE * dg):
            return None
        if waited < wait:
            waited += 1
            return None
        try:
            star = _settled_equilibrium(A, G, L, S, settle_tol, np.linalg.norm(S - previous),
                                        H)
        except (ValueError, np.linalg.LinAlgError):  # overflow inside the test: not settled
            star = None
        if star is not None:
            return "equilibrium", star
        wait, waited = 2 * wait + 1, 0  # a failed full test: wait longer before the next
        return None

    t = 0.0
    if knots[0] == 0.0:
        keep(0.0, m.copy(), L @ L.T)
        knots = knots[1:]
    if collapse is not None and collapse.ready(L, law):
        settled = (0.0, "collapse", L, m, None)
        bound.add(w_round, 0.0)
    elif r and t_final / h0 + (MEAN_STEP_COST * law.norm_Av * t_final / MEAN_THETA if law
                               else 0) > max_steps:
        _refuse_early(A, L, law, collapse, h0, t_final, budget)
    for index, knot in enumerate(knots):
        if settled is None:
            t_start = t
            n_big, H = _equal_steps(knot - t_start, h0)
            k = 0
            while k < n_big:
                budget.spend(1, t)
                if can_blow_up:
                    root = _first_singular_offset(prop, L, H, t)
                    if root is not None:
                        Er, Wr = prop.at(root)
                        _, vec = np.linalg.eigh(np.eye(r) + L.T @ Wr @ L)
                        u = Er @ L @ vec[:, 0]
                        blowup_time = min(t + root, t_final)  # t + root rounds up at most
                        blowup_dir = u / np.linalg.norm(u)
                        advance(t, L)  # the outputs before the blow-up
                        break
                L, trace_Y = _advance(prop, L, H)
                bound.add(w_round * prop.w_norm(H) * trace_Y, t_start + (k + 1) * H)
                n_cov += 1
                k += 1
                t = t_start + k * H if k < n_big else knot
                # the mean is advanced in spans of at most h0 (as the covariance steps), over
                # as many steps (and outputs) as fit
                if next_step_end(index, k, n_big, t_start, H) - t_a > h0:
                    advance(t, L)
                if settle and (t_final - t) > SETTLE_MIN_STEPS * H:
                    _check_finite(L, m, t)
                    found = try_settle(L, H)
                    if found is not None:
                        advance(t, L)
                        kind, star = found
                        K = None if law is None or star is None else law.Av + star @ law.Bbar
                        settled = (t, kind, L if star is None else star, m, K)
                        bound.add(w_round * (1.0 if star is None else _equilibrium_sensitivity(
                            A, G, star)), t)
                        break
            if blowup_time is not None:
                break
        if settled is not None:
            t_s, kind, L_s, m_s, K = settled
            tau = knot - t_s
            if kind == "collapse":
                assert collapse is not None  # "collapse" is found by it
                S = collapse.cov(L_s, tau) if tau else L_s @ L_s.T
                K = None if law is None else law.Av
                norm_S = 0.0
            else:
                S = L_s  # the settled equilibrium Σ*
                norm_S = float(np.linalg.norm(S, 2))
            mk = _mean_jump(law, K, m_s, tau, t_s, 0.0, norm_S)
            if not np.all(np.isfinite(S)):
                raise SolverError(f"Σ left the floating-point range by t = {knot:.6g}")
            if knot in wanted:
                keep(knot, mk, S)
            continue
        t = knot
        if knot in wanted:
            keep(knot, m.copy() if law is None or t_a == knot else None, L @ L.T, L)
    if settled is None and blowup_time is None:
        advance(t, L)
    estimate = bound.total
    if check_end and can_blow_up and blowup_time is None and settled is None and out_t:
        error, T = _near_blowup(A, G, out_S[-1], out_t[-1], n_cov)  # the last state
        estimate = error + (bound.at(T, out_t[-1]) if T is not None else estimate)
    elif check_end and blowup_time is not None and out_t:
        estimate, kept = _before_blowup(blowup_time, out_t, out_e)
        del out_t[kept:], out_m[kept:], out_S[kept:]
    return ExactResult(np.array(out_t), np.array(out_m).reshape(-1, d),
                       np.array(out_S).reshape(-1, d, d), blowup_time, blowup_dir, n_steps,
                       None if settled is None else settled[0],
                       None if settled is None else settled[1], estimate)


def _equal_steps(span: float, h0: float) -> tuple[int, float]:
    """(n, H): the fewest equal covariance steps H = span/n ≤ h0 over an interval between
    output times (one block exponential per interval)."""
    n = max(1, math.ceil(span / h0))
    return n, span / n


def exact_flow(A: np.ndarray, G: np.ndarray, vbar: float, Bbar: np.ndarray, b: np.ndarray,
               mean0: np.ndarray, cov0: np.ndarray, t_out: np.ndarray, t_final: float, *,
               max_steps: int = DEFAULT_MAX_STEPS) -> ExactResult:
    """Exact scalar-V flow on [0, t_final], returning states at t_out (sorted, within [0, t_final]).

    For scalar value matrices V_h = v_h I the moment equations are

        Σ̇ = A Σ + Σ Aᵀ − Σ G Σ,      ṁ = (A + v̄ I + Σ B̄) m + b,

    with G = −Σ_h v_h (B_h + B_hᵀ), v̄ = Σ_h v_h, B̄ = Σ_h v_h B_h. The covariance follows the
    closed form Σ(t) = e^{At} Σ0 (I + W(t) Σ0)⁻¹ e^{Aᵀt} in square-root steps, and blows up at
    the first root of det(I + W(t)Σ0), located by Brent's method; the mean by error-controlled
    Gauss–Legendre collocation on the exact covariance. See the package docstring for the step
    rule, the settling shortcut, the rounding-level G brackets and every refusal. The inputs
    are not validated here (`riccati_tf.flow` does that).

    Parameters
    ----------
    A : (d, d) ndarray of float
        The drift matrix.
    G : (d, d) ndarray of float, symmetric
        The quadratic coefficient −Σ_h v_h (B_h + B_hᵀ).
    vbar : float
        v̄ = Σ_h v_h.
    Bbar : (d, d) ndarray of float
        B̄ = Σ_h v_h B_h.
    b : (d,) ndarray of float
        The bias.
    mean0 : (d,) ndarray of float
        m(0).
    cov0 : (d, d) ndarray of float, symmetric positive semidefinite
        Σ(0) (singular allowed: the rank is kept exactly).
    t_out : (k,) ndarray of float
        The output times, sorted, within [0, t_final].
    t_final : float
        The horizon, > 0.
    max_steps : int, optional
        The budget of covariance steps and mean sub-steps (default DEFAULT_MAX_STEPS).

    Returns
    -------
    ExactResult
        The states at the output times before any blow-up, T* and its direction.

    Raises
    ------
    SolverError
        Rather than return a state it cannot vouch for: the budget is spent (or provably would
        be, before any work); Brent's method or the certification of a step fails; a state
        leaves the floating-point range without a blow-up; t_final lies so close after T*
        that the end state is uncertain beyond NEAR_BLOWUP_RTOL; G has eigenvalues at
        rounding level and G ∓ δI disagree on the blow-up; the linear algebra meets overflow
        or NaN.

    See Also
    --------
    exact_from : the same flow continued from a state (dense output).
    van_loan : the exponentials of one step.
    riccati_tf.flow : the validated entry point (method "exact").

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".
    .. [2] C. F. Van Loan, "Computing integrals involving the matrix exponential", IEEE TAC
       23(3), 1978.
    .. [3] R. P. Brent, "Algorithms for Minimization without Derivatives", Prentice-Hall,
       1973.

    Examples
    --------
    For d = 1 with A = 0 and G = −2, σ(t) = σ0 / (1 − 2σ0 t) blows up at T* = 1/2:

    >>> import numpy as np
    >>> from riccati_tf.flows.exact import exact_flow
    >>> res = exact_flow(np.zeros((1, 1)), np.array([[-2.0]]), 1.0, np.ones((1, 1)),
    ...                  np.zeros(1), np.zeros(1), np.eye(1), np.array([0.0, 0.25]), 1.0)
    >>> round(float(res.blowup_time), 6), res.cov[:, 0, 0]
    (0.5, array([1., 2.]))
    """
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        try:
            law = _mean_law(A, vbar, Bbar, b, mean0)
            L0 = _factor(cov0)
            band, pd = _rounding_band(A, G)
            res = _run(A, G, law, mean0, L0, t_out, t_final, max_steps, positive_definite=pd,
                       check_end=True)
            if band is not None:
                _bracket(A, G, L0, band, res, t_final, max_steps)
            if res.error_estimate > CONDITION_CHECK:
                res = _conditioning(A, G, law, mean0, L0, res, t_out, t_final, max_steps)
        except (np.linalg.LinAlgError, FloatingPointError, OverflowError) as exc:
            raise SolverError(f"the exact flow failed in its linear algebra ({exc}): the data "
                              f"are out of the range it can handle (overflow or NaN)") from None
    return res


def exact_from(A: np.ndarray, G: np.ndarray, vbar: float, Bbar: np.ndarray, b: np.ndarray,
               mean: np.ndarray, cov: np.ndarray, offsets: np.ndarray, *,
               max_steps: int = DEFAULT_MAX_STEPS) -> ExactResult:
    """The exact flow continued from a state (m_k, Σ_k) of a flow at time t_k, at t_k + s.

    The dense output of `exact_flow`, at the sorted offsets s ≥ 0: the flow of
    Σ̇ = AΣ + ΣAᵀ − ΣGΣ is a semigroup, so

        Σ(t_k + s) = E_s L S(s)⁻¹ Lᵀ E_sᵀ,   Σ_k = L Lᵀ,   S(s) = I + Lᵀ W(s) L,

    stepped, settled and (for the mean) collocated exactly as in `exact_flow`, with the same
    budget max_steps. The blow-up verdict of the flow it continues is not decided again (no
    G ∓ δI brackets, no refusal near T*): its states are returned up to the first singular S(s)
    found, blowup_time then the offset of that singularity (rounding may place it a few ulps
    before the flow's own T*).

    Parameters
    ----------
    A : (d, d) ndarray of float
        The drift matrix.
    G : (d, d) ndarray of float, symmetric
        The quadratic coefficient −Σ_h v_h (B_h + B_hᵀ).
    vbar : float
        v̄ = Σ_h v_h.
    Bbar : (d, d) ndarray of float
        B̄ = Σ_h v_h B_h.
    b : (d,) ndarray of float
        The bias.
    mean : (d,) ndarray of float
        m_k, the mean at t_k.
    cov : (d, d) ndarray of float, symmetric positive semidefinite
        Σ_k, the covariance at t_k.
    offsets : (k,) ndarray of float
        The offsets s > 0 from t_k, sorted.
    max_steps : int, optional
        The budget of covariance steps and mean sub-steps (default DEFAULT_MAX_STEPS).

    Returns
    -------
    ExactResult
        The states at t_k + s (its times are the offsets s) up to the first singular S(s).

    Raises
    ------
    SolverError
        When the budget is spent, a state leaves the floating-point range, Brent's method or
        the certification of a step fails, or the linear algebra meets overflow or NaN.

    See Also
    --------
    exact_flow : the flow from t = 0, with its blow-up verdict.
    riccati_tf.Trajectory : whose dense output ``tr(t)`` calls this for method "exact".

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".
    .. [2] C. F. Van Loan, "Computing integrals involving the matrix exponential", IEEE TAC
       23(3), 1978.

    Examples
    --------
    σ̇ = 2σ² continued from σ(0.25) = 2 to t = 0.35: σ = 1 / (1 − 2t) = 10/3.

    >>> import numpy as np
    >>> from riccati_tf.flows.exact import exact_from
    >>> res = exact_from(np.zeros((1, 1)), np.array([[-2.0]]), 1.0, np.ones((1, 1)),
    ...                  np.zeros(1), np.zeros(1), np.array([[2.0]]), np.array([0.1]))
    >>> round(float(res.cov[0, 0, 0]), 6)
    3.333333
    """
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        try:
            return _run(A, G, _mean_law(A, vbar, Bbar, b, mean), mean, _factor(cov), offsets,
                        float(offsets[-1]), max_steps)
        except (np.linalg.LinAlgError, FloatingPointError, OverflowError) as exc:
            raise SolverError(f"the exact flow failed in its linear algebra ({exc}): the data "
                              f"are out of the range it can handle (overflow or NaN)") from None


def _bracket(A: np.ndarray, G: np.ndarray, L0: np.ndarray, band: tuple[np.ndarray, float],
             res: ExactResult, t_final: float, max_steps: int) -> None:
    """Raise SolverError unless the blow-up verdict of `res` survives G → G ∓ δP (`_rounding_band`).

    W is linear in G, so G − δP ⪯ G' ⪯ G + δP gives S_low(t) ⪯ S'(t) ⪯ S_high(t) and
    T*_low ≤ T*(G') ≤ T*_high: no blow-up with G − δP means none for any such G'; blow-up times
    of both brackets within BLOWUP_RTOL pin T*."""
    P, delta = band
    zero_t = np.array([0.0])

    def blowup(Gb):
        return _run(A, Gb, None, np.zeros(A.shape[0]), L0, zero_t, t_final, max_steps,
                    settle=True).blowup_time

    low = blowup(G - delta * P)
    where = (f"G has eigenvalues within rounding (δ = {delta:.2g}) of zero on the coordinates "
             f"coupled through A or G")
    if res.blowup_time is None:
        if low is not None:
            raise SolverError(
                f"no blow-up by t_final = {t_final:.6g} with G as computed, but one at "
                f"t = {low:.6g} with G − δI: {where}, so whether Σ blows up is decided by rounding")
        return
    high = blowup(G + delta * P)
    T = res.blowup_time
    if low is None or high is None or high - low > BLOWUP_RTOL * T:
        span = f"[{low if low is not None else T:.10g}, " + (
            f"{high:.10g}]" if high is not None else f"beyond t_final = {t_final:.6g}]")
        raise SolverError(f"the blow-up at T* ≈ {T:.10g} is not determined by the data: {where}, "
                          f"and G ∓ δI move it over {span}")


def _conditioning(A: np.ndarray, G: np.ndarray, law: _MeanLaw | None, m0: np.ndarray,
                  L0: np.ndarray, res: ExactResult, t_out: np.ndarray, t_final: float,
                  max_steps: int) -> ExactResult:
    """`res` with the spread of its states under G → G ∓ Δ as error estimate (package
    docstring, "Ill-conditioned states"), or SolverError when that exceeds ACCURACY_RTOL.

    Δ is diagonal: δ = G_ROUNDING·d·eps·‖G‖_F on the coordinates coupled through A or G (as for
    the blow-up brackets), G_ROUNDING·d·eps·|G_ii| on an uncoupled one (whose W_ii is computed
    to relative accuracy). The rounding of a step perturbs W(h) by no more than what G ∓ Δ adds,
    and Σ(t) is Loewner-monotone in G, so the two runs bracket the covariance of every G' that
    rounding cannot tell from G. The estimate is the largest relative distance of either run
    from `res` (covariances relative to their own state, means relative to the largest mean),
    plus the rounding estimate near a blow-up after t_final. States of a flow that blows up
    past which either run has blown up already are not kept (they lie within the uncertainty
    of T*); for a flow that does not, such a state is refused."""
    d = A.shape[0]
    near = 0.0
    if res.blowup_time is None and res.settled_by is None and np.any(
            np.linalg.eigvalsh(G) < 0) and res.t.size:
        near = _near_blowup(A, G, res.cov[-1], float(res.t[-1]), res.n_steps)[0]
    coupled = _coupled(A, G)
    delta = _g_rounding(G)
    shift = G_ROUNDING * d * EPS * np.abs(np.diag(G))
    if coupled is not None:
        shift[coupled] = delta
    if not shift.any():
        return res
    runs = [_run(A, G + sign * np.diag(shift), law, m0, L0, t_out, t_final, max_steps)
            for sign in (-1.0, 1.0)]
    n = min(res.t.size, *(run.t.size for run in runs))
    if n < res.t.size:
        if res.blowup_time is None:
            T = min(run.blowup_time for run in runs
                    if run.t.size == n and run.blowup_time is not None)
            raise SolverError(
                f"G changed by rounding-level amounts (G ∓ Δ, Δ ≤ {shift.max():.2g} on the "
                f"diagonal) blows up at T* ≈ {T:.10g}, before t = {res.t[n]:.10g}: the states "
                f"from there on are not determined by the data")
        res = replace(res, t=res.t[:n], mean=res.mean[:n], cov=res.cov[:n])
    worst, at = 0.0, float(res.t[-1]) if n else 0.0
    scale_m = float(np.abs(res.mean).max()) if n else 0.0
    for run in runs:
        diff = run.cov[:n] - res.cov[:n]
        size = np.sqrt(np.sum(res.cov ** 2, axis=(1, 2)))
        gap = np.sqrt(np.sum(diff ** 2, axis=(1, 2)))
        rel = np.divide(gap, size, out=np.where(gap > 0, np.inf, 0.0), where=size > 0)
        if scale_m > 0:
            rel = np.maximum(rel, np.abs(run.mean[:n] - res.mean).max(axis=1) / scale_m)
        k = int(np.argmax(rel)) if n else 0
        if n and rel[k] > worst:
            worst, at = float(rel[k]), float(res.t[k])
    estimate = worst + near
    if not estimate <= ACCURACY_RTOL:
        eig = np.abs(np.linalg.eigvalsh(G))
        norm_S = float(np.linalg.norm(res.cov[int(np.searchsorted(res.t, at))], 2))
        raise SolverError(
            f"the state at t = {at:.6g} is determined by the data only to about {estimate:.2g} "
            f"relative (> {ACCURACY_RTOL:g}): changing G by rounding-level amounts (G ∓ Δ, "
            f"Δ ≤ {shift.max():.2g} on the diagonal) moves it that far, since Σ is large "
            f"(‖Σ‖₂ = {norm_S:.3g}) along directions where G nearly vanishes (smallest "
            f"|eigenvalue| {eig.min():.2g} against ‖G‖_F = {np.linalg.norm(G):.3g}); no step "
            f"size can fix this in double precision")
    return replace(res, error_estimate=estimate)
