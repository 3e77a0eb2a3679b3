"""One entry point for trajectories of the Gaussian moment system (SPEC §2, §5).

`flow` composes the model (constant or time-varying `Params`), a method (`"exact"` closed form
for scalar value matrices, `"rk"` Runge–Kutta on the full system) and the blow-up event;
`layers` applies exact discrete residual layers x⁺ = x + τX(x).

Every method has a work budget (`max_steps`, default DEFAULT_MAX_STEPS) and raises SolverError,
with a sentence, rather than return a state it cannot vouch for; a trajectory never holds NaN
or Inf, and status "blowup" means a finite-time blow-up at T* ≤ t_final.

The methods live in their own modules: `riccati_tf.flows.exact` (the closed form),
`riccati_tf.flows.rk` (Runge–Kutta: `run`, `stepper`, `sundman`, `packing`, `blowup`, `dense`,
`constants`) and `riccati_tf.flows.implicit` (Rodas4); `riccati_tf.flows.trajectory` holds
`Trajectory` and `State`, `riccati_tf.flows.dense` the exact dense output and
`riccati_tf.flows.layers` the discrete layers. This module holds `flow` and the choice of
method, and re-exports the public names of those modules.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from ..errors import InvalidInputError, SolverError
from ..state.lowrank import FACTOR_MIN_D, factored_layer
from ..state.params import Gaussian, Params, check_dims
from ..state.schedule import all_finite as _all_finite
from ..state.schedule import checked_schedule
from ..state.validation import as_count, as_time, as_time_grid
from .dense import _ExactDense
from .exact import DEFAULT_MAX_STEPS, exact_flow
from .implicit.run import implicit_flow
from .layers import LAYERS_DEFAULT_MAX, LAYERS_MAX_FLOATS, layers
from .rk.blowup import _blowup_estimate
from .rk.constants import (
    BLOWUP_GROWTH,
    RK_DEFAULT_MAX_STEPS,
    RK_NEAR_BLOWUP_RTOL,
    RK_STABILITY,
    TINY,
)
from .rk.dense import _RkDense
from .rk.run import _rk_flow, _scaled_atol
from .rk.stepper import _StiffSwitch
from .trajectory import (
    CALL_MAX_FLOATS,
    TIME_ROUNDING,
    State,
    Trajectory,
    _finite_params,
    _guard,
)

# Trajectory (imported from here as before) is documented in riccati_tf.flows.trajectory and as
# riccati_tf.Trajectory
__all__ = ["CALL_MAX_FLOATS", "DEFAULT_ATOL", "DEFAULT_OUTPUTS", "DEFAULT_RTOL",
           "LAYERS_DEFAULT_MAX", "LAYERS_MAX_FLOATS", "RK_DEFAULT_MAX_STEPS",
           "RK_NEAR_BLOWUP_RTOL", "TIME_ROUNDING", "State", "flow", "layers"]

#: flow's default tolerances (rtol, atol) of "rk"
DEFAULT_RTOL, DEFAULT_ATOL = 1e-10, 1e-12
#: the number of equally spaced output times of `flow` without t_eval
DEFAULT_OUTPUTS = 101
#: the implicit method's default budget of (attempted) Rodas4 steps
IMPLICIT_DEFAULT_MAX_STEPS = 20_000


_OUTPUT_INDEX = np.arange(float(DEFAULT_OUTPUTS))


def _default_grid(t_final: float, t_eval: npt.ArrayLike | None) -> npt.NDArray[np.float64]:
    if t_eval is None:  # distinct times in [0, t_final] only: among subnormals the spacing
        # t_final/100 rounds to whole spacings, so times coincide or pass t_final; with a
        # normal spacing the times i·(t_final/100) increase strictly and stay below t_final
        step = t_final / (DEFAULT_OUTPUTS - 1)
        if step >= TINY:  # np.linspace(0, t_final, DEFAULT_OUTPUTS) bit for bit, at less cost
            grid = _OUTPUT_INDEX * step
            grid[-1] = t_final
            return grid
        return np.unique(np.minimum(np.linspace(0.0, t_final, DEFAULT_OUTPUTS), t_final))
    return as_time_grid("t_eval", t_eval, t_final)


def _time(name: str, value: object) -> float:
    """`as_time`, with a Python float in (0, ∞) returned at once (as as_time returns it): the
    general conversion costs more than the rest of a flow's checks (about 1 % of a short rk
    flow at d = 8)."""
    if type(value) is float and 0.0 < value < math.inf:
        return value
    return as_time(name, value)


def _tolerance(name: str, value: object) -> float:
    value = _time(name, value)
    if value >= 1:
        raise InvalidInputError(f"{name} must be < 1, got {value}")
    return value


def flow(params: Params | Callable[[float], Params], gaussian: Gaussian, t_final: float, *,
         method: str = "auto", t_eval: npt.ArrayLike | None = None,
         rtol: float = DEFAULT_RTOL, atol: float = DEFAULT_ATOL, max_steps: int | None = None,
         dense_output: bool = True) -> Trajectory:
    """The trajectory of a Gaussian N(m, Σ) under a layer, on [0, t_final] or up to blow-up.

    Solves the moment equations of SPEC §2

        ṁ = (A + V) m + V Σ B m + b,      Σ̇ = A Σ + Σ Aᵀ + V Σ B Σ + Σ Bᵀ Σ Vᵀ

    (multi-head: V Σ B → Σ_h V_h Σ B_h) from m(0) = gaussian.mean, Σ(0) = gaussian.cov.

    "auto" integrates by the closed form ("exact") when every head's value matrix is scalar,
    else by DOP853 ("rk"), switching a time-invariant layer's run to the stiff method Rodas4
    ("implicit") where DOP853's steps collapse (method "rk+implicit"); a finite-time blow-up
    at T* ≤ t_final ends the trajectory (status "blowup"). How each method works, and what a
    blow-up returns: Notes.

    Parameters
    ----------
    params : Params or callable float -> Params
        The layer: a `Params` (time-invariant), or a callable t ↦ Params (time-varying
        controls; method "rk"). Every value of the callable must be a finite Params on the
        Gaussian's R^d.
    gaussian : Gaussian
        The initial state N(m0, Σ0).
    t_final : float
        The horizon, > 0.
    method : {"auto", "exact", "rk", "implicit"}, optional
        The method (default "auto": "exact" for a time-invariant layer with scalar value
        matrices, else "rk", continued by "implicit" from where the flow turns stiff).
        "implicit" (time-invariant layers): Rodas4 from t = 0.
    t_eval : (k,) array_like of float, optional
        Output times, strictly increasing in [0, t_final] (default DEFAULT_OUTPUTS = 101
        equally spaced, the distinct ones among them when t_final is so small that some
        coincide in floating point).
    rtol : float, optional
        Relative tolerance of "rk", in (0, 1) (default 1e-10).
    atol : float, optional
        Absolute tolerance of "rk", in (0, 1) (default 1e-12).
    max_steps : int, optional
        Work budget. exact: covariance steps plus mean collocation steps, 3 per
        error-controlled sub-step (default DEFAULT_MAX_STEPS = 100 000); rk: DOP853 steps
        (default RK_DEFAULT_MAX_STEPS = 20 000), enforced as RK_EVALUATIONS_PER_STEP
        right-hand-side evaluations per step, and refused up front when the explicit method's
        stability alone needs more (about t_final·2ρ(A)/RK_STABILITY steps for a
        time-invariant layer, ρ the spectral radius).
    dense_output : bool, optional
        Keep what ``tr(t)`` (`Trajectory.__call__`) needs to give the state at any time of the
        flow (default True): the layer's data, the initial state and, for rk, the tolerances —
        no per-step data, so memory does not grow with the number of steps, and the
        integration is the same either way; states between the stored times are computed
        again on demand from the last stored state before them. False drops it.

    Returns
    -------
    Trajectory
        The states at the output times reached before any blow-up; status "completed" or
        "blowup", method "exact", "rk", "implicit" or "rk+implicit" (then switch_time).

    Raises
    ------
    InvalidInputError
        When t_final is not a positive finite time; rtol or atol is not in (0, 1); t_eval is
        not a strictly increasing array of times in [0, t_final]; max_steps is not an integer
        ≥ 1; method is unknown; dense_output is not a bool; params is neither a Params nor a
        callable; the layer and the Gaussian live in different R^d; the callable raises or
        returns anything but a finite Params on R^d (the message names params(t) and the
        time); method "exact" is asked for a callable or for non-scalar value matrices; or the
        arrays of params were modified to hold NaN or Inf.
    SolverError
        When the work budget is spent (or provably would be, before any work), a state leaves
        the floating-point range without a blow-up, t_final lies too close to T* for the end
        state to be known (see Notes, Blow-up), rk cannot tell whether T* precedes t_final,
        rounding in G decides whether (or when) Σ blows up, or (exact) the states are not
        determined by the data to NEAR_BLOWUP_RTOL relative: rounding-level changes of G move
        them further (Σ large along directions where G nearly vanishes; see
        `riccati_tf.flows.exact`, "Ill-conditioned states").

    See Also
    --------
    layers : discrete residual layers x⁺ = x + τ X(x).
    Trajectory : the result, its indexing and dense output.
    moment_rhs : the right-hand side (ṁ, Σ̇).
    certify : a certificate of where the flow goes (equilibrium or blow-up).

    Notes
    -----
    Methods. "exact" (scalar value matrices V_h = v_h I only): the closed form of SPEC §5,

        Σ(t) = e^{At} Σ0 (I + W(t) Σ0)⁻¹ e^{Aᵀt},   W(t) = ∫_0^t e^{Aᵀs} G e^{As} ds,

    with G = −Σ_h v_h (B_h + B_hᵀ), evaluated in square-root form in steps (Van Loan block
    exponentials); the blow-up time is the first root of det(I + W(t)Σ0), located by Brent's
    method; long horizons end early once the state provably settles; the mean by
    error-controlled Gauss collocation (see `riccati_tf.flows.exact`). "rk": DOP853 on the full
    system with a blow-up event (tr Σ beyond 1e8 tr Σ0, the quadratic terms driving ≥ 99 % of
    its growth: T* = t + tr Σ/(d tr Σ/dt)). Where the quadratic terms
    drive most of the growth of tr Σ (from the start, or once tr Σ has doubled, quadrupled, ...),
    in Sundman's time σ, dt/dσ ∝ 1/tr Σ, which turns the pole into exponential growth at a
    steady step, with a pole stop: after every step T_k = t_k + tr Σ/(d tr Σ/dt) (Newton's step
    on 1/tr Σ, error O((T* − t_k)^p), p ≥ 1), and the run ends once these estimates agree to
    u ≤ rtol·T_k over a 4-fold fall of the remaining time, T* then bracketed in
    [t_k, T_k + u] (`Trajectory.blowup_bracket`; u ≥ 3|T_k − T*| for errors that are powers of
    T* − t, see POLE_SPAN), long before the 1e8-fold growth. rtol/atol apply, atol capped for
    Σ_ij at rtol·√((Σ0)_ii (Σ0)_jj) so that variances below atol are resolved relative to their
    size; in σ that cap follows the state (Σ_ij to rtol·√(Σ_ii Σ_jj)), so that entries
    crossing zero near a pole do not hold the steps back.
    From d = FACTOR_MIN_D on, a time-invariant layer's dense heads whose V_h has numerical rank
    ≤ d/2 are integrated through pivoted-QR factors of V_h (and of B_h where its rank is ≤ d/2
    too; `riccati_tf.state.lowrank.factored_layer`: each factored matrix within FACTOR_RTOL =
    4 eps relative of the given one), so a right-hand side costs O(d² Σ_h r_h) instead of
    O(H d³), as for `Head` factors; the factorisations cost about two DOP853 steps.
    "implicit": the Rosenbrock method Rodas4 (order 4, L-stable, stiffly accurate; Hairer and
    Wanner) on (m, Σ), error-controlled by the same rtol/atol norm, each step ending on the
    output times, without dense output (``tr(t)`` at the stored times only). Its linear systems
    (I/(γh) − J)u = r use the structure of the Jacobian: J_ΣΣ[X] = MX + XMᵀ + P(X)Σ + ΣP(X)ᵀ
    (P(X) = Σ_h V_h X B_h) is a Lyapunov operator plus the attention term, and Σ̇ does not
    depend on m, so the covariance block is solved first (up to d = 48 by LU of its d²×d²
    matrix; above, GMRES preconditioned by the Lyapunov part, solved by Bartels–Stewart on a
    real Schur form computed once per step) and the mean's d×d block after it; see
    `riccati_tf.flows.implicit`. Blow-up: at each 1e8-fold growth of tr Σ driven ≥ 99 % by
    the quadratic terms, T* = t + tr Σ/(d tr Σ/dt) as for rk. A state whose products overflow
    float64 (exponential growth past about 1e154) ends in SolverError.
    "auto": exact when it applies, else rk; for a time-invariant layer, rk leaves for implicit
    once STIFF_STEPS = 100 consecutive steps h each had h‖ẏ‖ < STIFF_RATIO‖y‖ = 1e-3‖y‖ (the
    step set by the explicit method's stability, not by the solution's own time scale): the
    Trajectory's method is then "rk+implicit" and its `switch_time` the time of the switch.
    The up-front refusal of a stiff A (max_steps) applies to "rk" alone.

    Blow-up. A finite-time blow-up at T* ≤ t_final ends the trajectory: status "blowup"
    (blowup_kind "singularity"), states before T* only, and the unit direction along which
    Σ(t) diverges. One after t_final is no blow-up: the state at t_final is returned, unless
    t_final is so close to T* that the end state, Σ ~ 1/(T* − t), is known only to more than
    NEAR_BLOWUP_RTOL relative (rk: rtol·T*/(T* − t_final); exact: about
    eps·n^{3/4}·T*/(T* − t_final) after n steps) or rk cannot tell on which side of t_final T*
    lies: then SolverError. Before a blow-up, exact returns no state within rounding reach of
    T* (an estimated error above NEAR_BLOWUP_RTOL). A returned trajectory holds finite states
    only.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".
    .. [2] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".
    .. [3] C. F. Van Loan, "Computing integrals involving the matrix exponential", IEEE TAC
       23(3), 1978.
    .. [4] J. R. Dormand and P. J. Prince, "A family of embedded Runge–Kutta formulae",
       J. Comp. Appl. Math. 6(1), 1980.

    Examples
    --------
    For d = 1 with A = 0 and V = B = 1, σ̇ = 2σ² blows up at T* = 1/(2σ0):

    >>> import numpy as np
    >>> from riccati_tf import Gaussian, Params, flow
    >>> tr = flow(Params(0.0, B=1.0, V=1.0), Gaussian([0.0], [[1.0]]), 1.0)
    >>> tr.status, round(float(tr.blowup_time), 6), tr.method
    ('blowup', 0.5, 'exact')

    The closed form and Runge–Kutta agree; for A = −I, V = I/2, B = I and Σ0 = I,
    Σ(t) = 2e^{−2t}/(1 + e^{−2t}) I:

    >>> p = Params(-np.eye(2), B=np.eye(2), V=0.5 * np.eye(2), b=[1.0, 0.0])
    >>> g = Gaussian(np.zeros(2), np.eye(2))
    >>> ex = flow(p, g, 1.0, t_eval=[1.0])
    >>> rk = flow(p, g, 1.0, t_eval=[1.0], method="rk")
    >>> bool(np.isclose(ex.cov[-1, 0, 0], 2 * np.exp(-2) / (1 + np.exp(-2)), rtol=1e-12))
    True
    >>> bool(np.allclose(ex.cov, rk.cov, rtol=1e-8)), bool(np.allclose(ex.mean, rk.mean))
    (True, True)

    Time-varying controls (method "rk"):

    >>> tv = flow(lambda t: Params(-np.eye(2), b=[np.cos(t), 0.0]), g, 1.0)
    >>> tv.method, tv.status
    ('rk', 'completed')
    """
    if not isinstance(dense_output, bool | np.bool_):
        raise InvalidInputError(f"dense_output must be True or False, got {dense_output!r}")
    t_final = _time("t_final", t_final)
    rtol, atol = _tolerance("rtol", rtol), _tolerance("atol", atol)
    t_out = _default_grid(t_final, t_eval)
    if max_steps is not None:
        max_steps = as_count("max_steps", max_steps)
    if method not in ("auto", "exact", "rk", "implicit"):
        raise InvalidInputError(f"method must be 'auto', 'exact', 'rk' or 'implicit', "
                                f"got {method!r}")
    if isinstance(params, Params):
        check_dims(params, gaussian)  # finite: validated on construction, arrays read-only
        params_fn = None
        scalar = params.value_scalars is not None
    elif callable(params):
        if not isinstance(gaussian, Gaussian):
            raise InvalidInputError(f"gaussian must be a riccati_tf.Gaussian, "
                                    f"got {type(gaussian).__name__}")
        params_fn, scalar = checked_schedule("params", params, Params, gaussian.d), False
        params_fn(0.0)
        if method in ("exact", "implicit"):
            raise InvalidInputError(f"method {method!r} needs time-invariant Params; "
                                    f"time-varying controls are integrated with method 'rk'")
    else:
        raise InvalidInputError(f"params must be Params or a callable t -> Params, "
                                f"got {type(params).__name__}")
    if method == "exact" and not scalar:
        raise InvalidInputError("method 'exact' needs scalar value matrices V_h = v_h I "
                                "(the Riccati case of SPEC §5); use method 'rk'")
    try:
        return _dispatch(params, params_fn, scalar, gaussian, t_out, t_final, method, rtol, atol,
                         max_steps, bool(dense_output))
    except SolverError:
        if isinstance(params, Params) and not _finite_params(params):
            raise InvalidInputError("params holds NaN or Inf entries (its arrays were modified "
                                    "after construction)") from None
        raise


def _dispatch(params: Params | Callable[[float], Params],
              params_fn: Callable[[float], Params] | None, scalar: bool, gaussian: Gaussian,
              t_out: np.ndarray, t_final: float, method: str, rtol: float, atol: float,
              max_steps: int | None, dense_output: bool) -> Trajectory:
    if method == "exact" or (method == "auto" and scalar):
        assert isinstance(params, Params)  # flow refuses "exact" for a callable
        vs = params.value_scalars
        assert vs is not None  # flow refuses "exact" for non-scalar value matrices
        G = params.G  # SolverError when it overflows
        heads, b = params.heads, params.b
        with np.errstate(over="ignore", invalid="ignore"):
            Bbar = sum((v * B for v, (_, B) in zip(vs, heads, strict=True)),
                       np.zeros_like(params.A))
        if not _all_finite(Bbar):
            raise SolverError("B̄ = Σ_h v_h B_h overflows: the attention terms are out of the "
                              "floating-point range")
        max_steps = max_steps or DEFAULT_MAX_STEPS
        res = exact_flow(params.A, G, sum(vs), Bbar, b, gaussian.mean, gaussian.cov,
                         t_out, t_final, max_steps=max_steps)
        blew = res.blowup_time is not None
        dense = _ExactDense(params.A, G, sum(vs), Bbar, b, gaussian.mean, gaussian.cov,
                            t_final, max_steps) if dense_output else None
        return _guard(Trajectory(res.t, res.mean, res.cov, "blowup" if blew else "completed",
                                 res.blowup_time, "exact", res.blowup_direction,
                                 blowup_kind="singularity" if blew else None, dense=dense))
    if method == "implicit":
        assert isinstance(params, Params)  # flow refuses "implicit" for a callable
        return _guard(_implicit(params, gaussian, t_out, t_final, rtol, atol,
                                max_steps or IMPLICIT_DEFAULT_MAX_STEPS, None))
    rk_steps = max_steps or RK_DEFAULT_MAX_STEPS
    switch = method == "auto" and isinstance(params, Params)
    if isinstance(params, Params):
        if not switch:
            _refuse_stiff(params, gaussian, t_final, rk_steps)
        if params.d >= FACTOR_MIN_D:  # dense heads of low rank through their factors
            params = factored_layer(params)
    try:
        tr = _rk_flow(params_fn or params, gaussian, t_out, t_final, rtol, atol, rk_steps,
                      stiff_switch=switch)
    except _StiffSwitch as sw:
        assert isinstance(params, Params)  # only a time-invariant layer's run switches
        return _guard(_implicit(params, gaussian, t_out, t_final, rtol, atol,
                                max_steps or IMPLICIT_DEFAULT_MAX_STEPS, sw))
    max_steps = rk_steps
    if dense_output:  # the caller's own layer: a callable is checked again when used (the
        # checking wrapper is a closure, which does not pickle)
        end = t_final if tr.blowup_bracket is None else float(tr.blowup_bracket[0])
        tr = replace(tr, dense=_RkDense(params, gaussian.mean, gaussian.cov, rtol, atol,
                                        max_steps, end))
    return _guard(tr, checked=True)


def _implicit(p: Params, g: Gaussian, t_out: np.ndarray, t_final: float, rtol: float,
              atol: float, max_steps: int, before: _StiffSwitch | None) -> Trajectory:
    """The Rodas4 flow (`riccati_tf.flows.implicit`) from t = 0, or from DOP853's end state
    `before` (its outputs first, method "rk+implicit"), as a Trajectory without dense output;
    a blow-up where tr Σ has grown 1e8-fold with the quadratic terms driving it
    (`_blowup_estimate`)."""
    d = g.d
    with_mean = bool(np.any(g.mean) or np.any(p.b))
    t0, m0, S0 = (0.0, g.mean, g.cov) if before is None else (before.t, before.mean,
                                                               before.cov)
    res = implicit_flow(p, m0, S0, t0, t_out if before is None else t_out[t_out > t0],
                        t_final, rtol, _scaled_atol(g, atol, rtol), max_steps,
                        with_mean=with_mean, growth=BLOWUP_GROWTH,
                        blowup=lambda t, y: _blowup_estimate(p, d, t, y))
    t, mean, cov = res.t, res.mean, res.cov
    if before is not None:
        t0s, m0s, S0s = before.outputs
        t, mean, cov = (np.concatenate([t0s, t]), np.concatenate([m0s, mean]),
                        np.concatenate([S0s, cov]))
    status, blowup_time, direction, bracket = "completed", None, None, None
    if res.blowup is not None:
        T_est, u, S = res.blowup
        status, blowup_time = "blowup", T_est
        direction = np.linalg.eigh(0.5 * (S + S.T))[1][:, -1]
        bracket = (float(t[-1]) if t.size else t0, T_est + u)
    return Trajectory(t, mean, cov, status, blowup_time,
                      "implicit" if before is None else "rk+implicit", direction, rtol, atol,
                      None if blowup_time is None else "singularity", None, bracket,
                      None if before is None else before.t)


def _refuse_stiff(p: Params, g: Gaussian, t_final: float, max_steps: int) -> None:
    """SolverError before any work when DOP853's stability bound alone needs > max_steps steps:
    the linearisation of Σ̇ contains A ⊕ A (eigenvalues λ_i + λ_j of A) and that of ṁ
    A + Σ_h V_h, and an explicit step is at most about RK_STABILITY/|λ|."""
    rho = 0.0
    enough = max_steps * RK_STABILITY / t_final  # any |λ| up to this needs no refusal
    with np.errstate(over="ignore", invalid="ignore"):
        try:
            if g.cov.any():
                rho = 2 * _radius(p.A, enough / 2)
            if g.mean.any() or p.b.any():
                rho = max(rho, _radius(p.A + p.value_sum, enough))
        except np.linalg.LinAlgError:
            rho = np.inf
    need = t_final * rho / RK_STABILITY
    if not need <= max_steps:
        raise SolverError(
            f"the Runge–Kutta method needs at least about {need:.3g} steps on [0, {t_final:.6g}] "
            f"(explicit steps are bounded by {RK_STABILITY:g}/|λ| with |λ| up to {rho:.3g}), "
            f"more than max_steps = {max_steps}; use method 'exact' where it applies, a shorter "
            f"t_final, or a larger max_steps")


def _radius(M: np.ndarray, enough: float) -> float:
    """The spectral radius ρ(M), or the bound ‖M‖_F ≥ ρ(M) when that is at most `enough` (the
    eigenvalues are then not needed to know that ρ(M) ≤ enough)."""
    flat = M.ravel()
    bound = math.sqrt(float(flat @ flat))  # ‖M‖_F
    if bound <= enough:
        return bound
    return float(np.abs(np.linalg.eigvals(M)).max())
