"""Regime and blow-up time of an encoder layer's attention flow at encoder sizes (SPEC §5).

`layer_regime`: the actual multi-head, general-V covariance flow

    Σ̇ = AΣ + ΣAᵀ + Σ_h (V_hΣB_hΣ + ΣB_hᵀΣV_hᵀ),   Σ(0) = Σ0,

of a layer whose heads are kept factored (`riccati_tf.Head`), decided up to a horizon by
`riccati_tf.certify` (d ≤ CERTIFY_MAX_D) or by `riccati_tf.flow` with method "rk" (DOP853 in
Sundman's time towards the pole, stopped once T* is bracketed to LAYER_RTOL relative), with the
evidence of whichever decided.

`flow_regime`: the scalar fit V_h ≈ v_h I of the same flow in closed form (the atlas keeps it
as a labelled extra column). With V_h ≈ v_h I the covariance of the continuous-depth flow
Σ̇ = AΣ + ΣAᵀ − ΣGΣ, G = −Σ_h v_h (B_h + B_hᵀ), from Σ0 = L0L0ᵀ is

    Σ(t) = e^{At} L0 (I + L0ᵀ W(t) L0)⁻¹ L0ᵀ e^{Aᵀt},   W(t) = ∫_0^t e^{Aᵀu} G e^{Au} du,

and blows up at the first root of λ_min(I + L0ᵀW(t)L0). This module evaluates it with a few
dense factorisations, fast at d in the hundreds (where `riccati_tf.certify`, with its
certificates and re-checks, takes seconds per layer):

- A = 0: W(t) = tG, so with g_1 ≤ … the eigenvalues of K = L0ᵀGL0, T* = −1/g_1 when g_1 < 0
  ("blows_up", exact); when every g_i > 0, Σ(t) = L0(I + tK)⁻¹L0ᵀ → 0 like 1/t ("collapses");
  when g_1 = 0 (within SIGN_RTOL·max|g|), Σ(t) tends to the nonzero L0 Π_ker K L0ᵀ
  ("converges").
- General A: the closed form is applied step by step (the flow is a semigroup) in square-root
  form, as in `flows.exact`: over a step h (at most horizon/GRID_STEPS and the conditioning
  step of `flows.exact`) from Σ = LLᵀ, S = I + LᵀW(h)L = CCᵀ and L⁺ = e^{Ah} L C⁻ᵀ, so
  the large W(t) of an unstable A never meets the 1 of I + L0ᵀW(t)L0 in one rounding. The first
  step whose S is not positive definite holds the blow-up; it is refined REFINE_LEVELS times
  into REFINE_SPLIT sub-steps, and on the last one λ_min(I + LᵀW(s)L), which falls from 1 at
  s = 0, is interpolated linearly (resolution h/REFINE_SPLIT^REFINE_LEVELS; tests find T*
  within 1e-6 of `certify`). "blows_up" with T*, or "bounded" when every S stays positive
  definite up to the horizon. A root inside a step that λ_min leaves again by the step's end is
  not seen (with G ⪯ 0, λ_min is monotone and none is missed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...errors import SolverError
from ...flows import Trajectory, flow
from ...flows.exact.covariance import growth_step, step_length, van_loan
from ...stability.certificates import certify
from ...state.params import Gaussian, Params
from ...state.validation import as_covariance, as_matrix, as_time

__all__ = ["CERTIFY_MAX_D", "ERROR_TOLERANCE_RATIO", "HORIZON_MARGIN", "LAYER_RTOL",
           "MAX_STEPS", "NO_BLOWUP", "FlowRegime", "LayerRegime", "flow_regime", "layer_regime"]

#: `layer_regime` asks `riccati_tf.certify` up to this d (it answers for all t, with a
#: certificate; at d = 384 one layer takes about 20 s), `riccati_tf.flow` (method "rk") beyond
CERTIFY_MAX_D = 16
#: relative tolerance of the rk integrations of `layer_regime` (DOP853's rtol, and the pole
#: stop's: `riccati_tf.flow` stops once T* is bracketed to u ≤ rtol·T*). The atlas promises T*
#: to 1e-6 relative; measured on the 12 flows of the d = 384, 12-head, 6-layer trained-like
#: encoder (benchmarks.encoders) against rtol 1e-8 run to the 1e8-fold growth event: rtol 1e-7
#: is off by 0.7e-8–1.4e-8 (70× below 1e-6; the bound u ≤ 1e-7 10× below) at 420–590
#: right-hand sides a flow, rtol 1e-6 by up to 1.2e-7 (a margin under 10×)
LAYER_RTOL = 1e-7
#: a blow-up found at rtol is run again at rtol/ERROR_TOLERANCE_RATIO: the finer T* is reported,
#: the change between the two (plus the pole extrapolation bound) is its error estimate
ERROR_TOLERANCE_RATIO = 10.0
#: the rk run goes HORIZON_MARGIN·horizon past the horizon, so that a blow-up just after it is
#: followed to its time instead of leaving the end state undecidable (flow refuses an end
#: state within reach of a pole); a second margin of twice that when the first lands on one
HORIZON_MARGIN = 1e-3
#: the regime of a layer whose covariance does not blow up before the horizon
NO_BLOWUP = "no_blowup_before_horizon"

#: eigenvalues of K = L0ᵀGL0 within SIGN_RTOL·max|g| of zero count as zero
SIGN_RTOL = 1e-10
#: eigenvalues of Σ0 below RANK_RTOL·λ_max are dropped from its factor L0
RANK_RTOL = 1e-12
#: grid steps over the horizon (at least), refinement levels and sub-steps per level
GRID_STEPS = 64
REFINE_LEVELS = 3
REFINE_SPLIT = 16
#: the most grid steps one evaluation may take (a stiff A needs tiny steps): SolverError beyond
MAX_STEPS = 4096


@dataclass(frozen=True)
class FlowRegime:
    """The regime of a scalar-V attention flow Σ̇ = AΣ + ΣAᵀ − ΣGΣ, the result of `flow_regime`.

    Parameters
    ----------
    regime : str
        "blows_up", "collapses" or "converges" (A = 0), or "blows_up" or "bounded" (up to the
        horizon, general A).
    blowup_time : float or None
        T*, or None without a blow-up.
    horizon : float or None
        None for A = 0 (the answer holds for all t), else the horizon checked.

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field.

    See Also
    --------
    flow_regime : produces it.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders.blowup import flow_regime
    >>> flow_regime(np.eye(2), np.eye(2))
    FlowRegime(regime='collapses', blowup_time=None, horizon=None)
    """

    regime: str
    blowup_time: float | None
    horizon: float | None


def _factor(cov: np.ndarray) -> np.ndarray:
    lam, U = np.linalg.eigh(cov)
    keep = lam > RANK_RTOL * max(lam[-1], 0.0)
    return U[:, keep] * np.sqrt(lam[keep])


def _without_drift(G: np.ndarray, L0: np.ndarray) -> FlowRegime:
    K = L0.T @ G @ L0
    g = np.linalg.eigvalsh(0.5 * (K + K.T))
    scale = float(np.max(np.abs(g))) if g.size else 0.0
    if g.size and g[0] < -SIGN_RTOL * scale:
        return FlowRegime("blows_up", float(-1.0 / g[0]), None)
    if g.size and g[0] > SIGN_RTOL * scale:
        return FlowRegime("collapses", None, None)
    return FlowRegime("converges", None, None)


def _march(A: np.ndarray, G: np.ndarray, L: np.ndarray, h: float, n_steps: int
           ) -> tuple[int, np.ndarray, float]:
    """Advance the factor L of Σ by up to n_steps steps h (Σ⁺ = E L S⁻¹ Lᵀ Eᵀ, S = I + LᵀW(h)L
    = CCᵀ, L⁺ = E L C⁻ᵀ); (j, L_j, λ_min(S_j)) at the first step j whose S is not positive
    definite (the blow-up lies inside it), or (n_steps, L_end, 1.0) when none is."""
    E, Wh = van_loan(A, G, h)
    for j in range(n_steps):
        S = np.eye(L.shape[1]) + L.T @ Wh @ L
        S = 0.5 * (S + S.T)
        try:
            C = np.linalg.cholesky(S)
        except np.linalg.LinAlgError:
            C = None
        f = float(np.linalg.eigvalsh(S)[0]) if C is None else 1.0
        if f <= 0:
            return j, L, f
        if C is None:  # Cholesky failed within rounding of a positive S: factor it exactly
            lam, U = np.linalg.eigh(S)
            C = U * np.sqrt(lam)
        L = E @ np.linalg.solve(C, L.T).T
        if not np.all(np.isfinite(L)):
            raise SolverError("the covariance of the attention flow overflows float64 before "
                              "the horizon (exponential growth without a blow-up)")
    return n_steps, L, 1.0


def _with_drift(A: np.ndarray, G: np.ndarray, L0: np.ndarray, horizon: float) -> FlowRegime:
    h = min(step_length(A), growth_step(A), horizon / GRID_STEPS)
    n_steps = math.ceil(horizon / h - 1e-12)
    if n_steps > MAX_STEPS:
        raise SolverError(f"the closed form needs {n_steps} steps of length {h:.3g} to reach the "
                          f"horizon {horizon:.3g} (budget MAX_STEPS = {MAX_STEPS}): ‖A‖ is too "
                          f"large for this horizon")
    j, L, f = _march(A, G, L0, h, n_steps)
    if j == n_steps:
        return FlowRegime("bounded", None, horizon)
    t = j * h
    for _ in range(REFINE_LEVELS):
        h /= REFINE_SPLIT
        k, L, f = _march(A, G, L, h, REFINE_SPLIT)
        t += k * h
        if k == REFINE_SPLIT:  # rounding moved the sign change to the bracket's end
            return FlowRegime("blows_up", float(t), horizon)
    # λ_min(I + LᵀW(s)L) falls from 1 at s = 0 to f at s = h, to first order linearly
    return FlowRegime("blows_up", float(t + h / (1.0 - f)), horizon)


def flow_regime(G: np.ndarray, cov0: np.ndarray, A: np.ndarray | None = None,
                horizon: float = 10.0) -> FlowRegime:
    """The regime of Σ̇ = AΣ + ΣAᵀ − ΣGΣ from Σ0 = cov0 (module docstring).

    The closed form Σ(t) = e^{At} L0 (I + L0ᵀ W(t) L0)⁻¹ L0ᵀ e^{Aᵀt},
    W(t) = ∫_0^t e^{Aᵀu} G e^{Au} du, blows up at the first root of
    λ_min(I + L0ᵀW(t)L0). For A = 0, W(t) = tG and the answer is exact for all t
    (T* = −1/g_1 with g_1 the least eigenvalue of L0ᵀGL0); for general A the closed form is
    marched in square-root form and the first step that loses definiteness is refined.

    Parameters
    ----------
    G : (d, d) array_like
        G = −Σ_h v_h (B_h + B_hᵀ).
    cov0 : (d, d) ndarray, symmetric positive semidefinite
        Σ0.
    A : (d, d) array_like, optional
        The drift; None for A = 0 (the answer for all t).
    horizon : float, optional
        The horizon for a drift A, > 0 (default 10).

    Returns
    -------
    FlowRegime
        The regime and T*.

    Raises
    ------
    InvalidInputError
        If G or A is not a finite (d, d) matrix, cov0 is not symmetric positive semidefinite
        (or holds NaN/Inf), or horizon is not a positive finite number.
    SolverError
        If the flow overflows float64 before the horizon, or reaching it needs more than
        MAX_STEPS steps.

    See Also
    --------
    riccati_tf.empirical.encoders.atlas : applies it to every layer of an encoder.
    riccati_tf.certify : certified regimes of a Params.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".
    .. [2] C. F. Van Loan, "Computing integrals involving the matrix exponential", IEEE TAC
       23(3), 1978.

    Examples
    --------
    A = 0 and G = diag(1, −1, 0): T* = −1/g_1 = 1/2 for Σ0 = diag(1, 2, 1/2).

    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders.blowup import flow_regime
    >>> flow_regime(np.diag([1.0, -1.0, 0.0]), np.diag([1.0, 2.0, 0.5])).regime
    'blows_up'

    In one dimension with A = ½ and G = −1, 1/Σ = 2e^{−t} − 1 vanishes at T* = ln 2:

    >>> r = flow_regime(-np.eye(1), np.eye(1), 0.5 * np.eye(1))
    >>> print(r.regime, round(r.blowup_time, 6), round(float(np.log(2)), 6))
    blows_up 0.693147 0.693147
    """
    d = cov0.shape[0]
    G, cov0 = as_matrix("G", G, d), as_covariance("cov0", cov0, d)
    horizon = as_time("horizon", horizon)
    L0 = _factor(cov0)
    if A is None:
        return _without_drift(G, L0)
    return _with_drift(as_matrix("A", A, d), G, L0, horizon)


@dataclass(frozen=True)
class LayerRegime:
    """The regime of a layer's attention flow up to a horizon, the result of `layer_regime`.

    Parameters
    ----------
    regime : str
        "blows_up" (T* ≤ horizon) or NO_BLOWUP; where `certify` decided without a blow-up, its
        regime for all t ("converges", "collapses", "grows" or "bounded") instead of NO_BLOWUP.
    blowup_time : float or None
        T* ≤ horizon, else None (a blow-up after the horizon is not reported).
    method : str
        "certify" or "rk": what decided.
    evidence : str
        certify's theorem ("closed_form_root", "numerical", …; its certificate passed
        `Certificate.check`), or "event" for the rk run's blow-up (the pole stop's bracket, or the
        blow-up event) / "horizon" for a run that reached the horizon.
    tolerance : float or None
        The rk run's relative tolerance (T* to about this relative accuracy); None for certify.
    trace_growth : float or None
        tr Σ(horizon)/tr Σ0 of the rk run without a blow-up before the horizon, else None.
    beyond : float or None
        T* of a blow-up found after the horizon (within the run's margin, or by `certify`),
        else None: evidence only, not a regime inside the horizon.
    reason : str
        The evidence in words: certify's reason, or the rk run's status.
    bracket : (float, float) or None, optional
        The rk run's bracket of T* (`riccati_tf.Trajectory.blowup_bracket`: a time the run
        reached, and T* plus the bound of its extrapolation error) where it found a blow-up (also
        after the horizon), else None.
    error : float or None, optional
        The rk run's error estimate of T* where it found a blow-up: |T*(rtol) −
        T*(rtol/ERROR_TOLERANCE_RATIO)| plus the pole extrapolation bound of the finer run,
        whose T* is reported (an estimate of the integration error, not a bound); else None.

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field.

    See Also
    --------
    layer_regime : produces it.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf import Params
    >>> from riccati_tf.empirical.encoders.blowup import layer_regime
    >>> r = layer_regime(Params(np.zeros((1, 1)), B=1.0, V=1.0), np.eye(1), 10.0)
    >>> r.regime, round(r.blowup_time, 9), r.method
    ('blows_up', 0.5, 'certify')
    """

    regime: str
    blowup_time: float | None
    method: str
    evidence: str
    tolerance: float | None
    trace_growth: float | None
    beyond: float | None
    reason: str
    bracket: tuple[float, float] | None = None
    error: float | None = None

    def to_json(self) -> dict:
        """The fields as JSON-ready numbers and strings."""
        return {"regime": self.regime, "blowup_time": self.blowup_time, "method": self.method,
                "evidence": self.evidence, "tolerance": self.tolerance,
                "trace_growth": self.trace_growth,
                "beyond_horizon": self.beyond, "reason": self.reason,
                "bracket": None if self.bracket is None else [float(x) for x in self.bracket],
                "error_estimate": self.error}


def _by_certify(params: Params, cov0: np.ndarray, horizon: float) -> LayerRegime | None:
    c = certify(params, Gaussian(np.zeros(params.d), cov0))
    tol = None
    if c.regime == "blows_up" and c.blowup_time is not None:
        T = float(c.blowup_time)
        if T <= horizon:
            return LayerRegime("blows_up", T, "certify", c.theorem, tol, None, None, c.reason)
        return LayerRegime(NO_BLOWUP, None, "certify", c.theorem, tol, None, T, c.reason)
    if c.regime in ("converges", "collapses", "grows", "bounded"):
        return LayerRegime(c.regime, None, "certify", c.theorem, tol, None, None, c.reason)
    return None  # undetermined: the rk run decides up to the horizon


def _rk_run(params: Params, g: Gaussian, horizon: float, rtol: float) -> Trajectory:
    """The rk flow from g to just past the horizon (HORIZON_MARGIN), moved further once when
    its end state lies within reach of a pole."""
    for k in (1, 2):
        end = horizon * (1.0 + k * HORIZON_MARGIN)
        try:
            return flow(params, g, end, method="rk", t_eval=[horizon], rtol=rtol,
                        dense_output=False)
        except SolverError as exc:  # the end state within reach of a pole: move the end
            if k == 2 or "blow-up" not in str(exc):
                raise
    raise AssertionError("unreachable")


def _by_flow(params: Params, cov0: np.ndarray, horizon: float, rtol: float) -> LayerRegime:
    g = Gaussian(np.zeros(params.d), cov0)
    tr = _rk_run(params, g, horizon, rtol)
    if tr.status == "blowup" and tr.blowup_time is not None:
        fine = _rk_run(params, g, horizon, rtol / ERROR_TOLERANCE_RATIO)
        if fine.status != "blowup" or fine.blowup_time is None:
            raise SolverError(f"DOP853 found a blow-up at {tr.blowup_time:.10g} with rtol "
                              f"{rtol:.0e} and none with rtol "
                              f"{rtol / ERROR_TOLERANCE_RATIO:.0e}: T* is not resolved")
        T = float(fine.blowup_time)
        bracket = fine.blowup_bracket
        extrapolation = 0.0 if bracket is None else float(bracket[1]) - T
        error = abs(T - float(tr.blowup_time)) + extrapolation
        within = (f" ± {error:.2g} (an estimate, not a bound: the change of T* from rtol "
                  f"{rtol:.0e} to {rtol / ERROR_TOLERANCE_RATIO:.0e} plus the pole's "
                  f"extrapolation bound {extrapolation:.2g})")
        if T <= horizon:
            return LayerRegime("blows_up", T, "rk", "event", rtol, None, None,
                               f"DOP853 bracketed the blow-up at T* = {T:.10g}{within}",
                               bracket, error)
        return LayerRegime(NO_BLOWUP, None, "rk", "event", rtol, None, T,
                           f"DOP853: blow-up at {T:.10g}{within}, after the horizon "
                           f"{horizon:.6g}", bracket, error)
    growth = float(np.trace(tr.cov[-1]) / np.trace(cov0))
    return LayerRegime(NO_BLOWUP, None, "rk", "horizon", rtol, growth, None,
                       f"DOP853 (rtol {rtol:.0e}) reached the horizon {horizon:.6g} with "
                       f"tr Σ/tr Σ0 = {growth:.4g}")


def layer_regime(params: Params, cov0: np.ndarray, horizon: float, *,
                 rtol: float = LAYER_RTOL) -> LayerRegime:
    """The regime of Σ̇ = AΣ + ΣAᵀ + Σ_h (V_hΣB_hΣ + ΣB_hᵀΣV_hᵀ) from Σ0 up to the horizon.

    Blow-up at T* ≤ horizon is "blows_up" with T*; anything else is NO_BLOWUP (T* None), or
    `certify`'s regime for all t where it decided one. Up to d = CERTIFY_MAX_D `certify`
    decides (its "undetermined" falls through to the rk run); beyond, `flow` with method "rk"
    and dense_output=False, from m0 = 0 (the covariance does not depend on the mean) to
    horizon·(1 + HORIZON_MARGIN), T* where the run brackets the pole to rtol relative (its
    pole stop; `LayerRegime.bracket`).

    Parameters
    ----------
    params : Params
        The layer: A and the heads (factored `Head` entries are integrated through their
        factors); b is irrelevant for Σ.
    cov0 : (d, d) ndarray, symmetric positive semidefinite
        Σ0.
    horizon : float
        The horizon, > 0.
    rtol : float, optional
        DOP853's relative tolerance (default LAYER_RTOL).

    Returns
    -------
    LayerRegime
        The regime, T* and the evidence (which method decided, its tolerance).

    Raises
    ------
    InvalidInputError
        If cov0 is not a finite symmetric positive semidefinite (d, d) matrix or horizon is
        not a positive finite number.
    SolverError
        If the rk integration fails (budget, overflow without a blow-up) or cannot decide
        on which side of the end a pole lies twice in a row.

    See Also
    --------
    flow_regime : the scalar-V closed form.
    riccati_tf.certify : certified regimes for all t.
    riccati_tf.flow : the rk integration.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".

    Examples
    --------
    σ̇ = 2σ² from σ0 = 1 blows up at T* = 1/2, inside a horizon of 10 but not of 0.4:

    >>> import numpy as np
    >>> from riccati_tf import Params
    >>> from riccati_tf.empirical.encoders.blowup import layer_regime
    >>> p = Params(np.zeros((1, 1)), B=1.0, V=1.0)
    >>> layer_regime(p, np.eye(1), 10.0).regime
    'blows_up'
    >>> r = layer_regime(p, np.eye(1), 0.4)
    >>> r.regime, r.blowup_time, r.beyond
    ('no_blowup_before_horizon', None, 0.5)
    """
    horizon = as_time("horizon", horizon)
    cov0 = as_covariance("cov0", cov0, params.d)
    if params.d <= CERTIFY_MAX_D:
        decided = _by_certify(params, cov0, horizon)
        if decided is not None:
            return decided
    return _by_flow(params, cov0, horizon, rtol)
