"""steer: the controls that steer N(m0, Σ0) to N(m1, Σ1) in depth T, by the route the controls
allow (constructive, or shooting), verified by integration (SPEC §3–§4)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import numpy as np
from numpy.typing import ArrayLike

from ...errors import InvalidInputError, RankMismatchError
from ...state.params import Gaussian
from ...state.validation import as_count, as_time
from .constants import DEFAULT_TEMPERATURE, DEFAULT_TOL, MAX_DIMENSION, MAX_HORIZON, MAX_PIECES
from .constructive import _attention_plan, _polar_plan
from .geometry import covariance_rank
from .plan import ControlPlan
from .shooting import _check_accessibility, _shooting_plan

__all__: list[str] = []  # steer is documented as riccati_tf.steer


def _horizon_argument(t_final: float | None, T: float | None) -> float:
    """t_final, or the deprecated keyword T (with a DeprecationWarning)."""
    if T is None:
        if t_final is None:
            raise InvalidInputError("t_final (the horizon of the plan) is required")
        return t_final
    if t_final is not None:
        raise InvalidInputError("give the horizon once: t_final, or the deprecated alias T, "
                                "not both")
    warnings.warn("steer(..., T=...) is deprecated; pass t_final (as in flow)",
                  DeprecationWarning, stacklevel=3)
    return T


def steer(start: Gaussian, target: Gaussian, t_final: float | None = None, *,
          controls: str = "affine", fixed: Mapping[str, ArrayLike] | None = None,
          temperature: float = DEFAULT_TEMPERATURE, n_pieces: int = 6,
          tol: float = DEFAULT_TOL, check_accessibility: bool = True,
          T: float | None = None) -> ControlPlan:
    """Controls on [0, T] (T = t_final) with N(m(T), Σ(T)) = N(m1, Σ1) from N(m0, Σ0), for

        ṁ = (A + V) m + V Σ B m + b,   Σ̇ = AΣ + ΣAᵀ + VΣBΣ + ΣBᵀΣVᵀ   (SPEC §2, §4).

    Routes by configuration. "affine" and "full": the polar route, Φ1 Σ0 Φ1ᵀ = Σ1 with
    Φ1 = Q P (Q ∈ SO(d), P ≻ 0), A = log P / τ1 on [0, τ1] then A = log Q / τ2 on [τ1, T], and
    in each phase the b solving m_end = e^{Aτ} m_start + (∫_0^τ e^{As} ds) b. "attention": the
    tracking route, V = s (K/T − A) constant in depth (s = `temperature`, K = log Φ1) unless
    `fixed` gives V, and B(t) = Σ(t)⁺/s, so that V Σ B Σ = (K/T − A) Σ and the covariance
    follows Σ(t) = e^{Kt/T} Σ0 e^{Kᵀt/T}. Others (and "attention" with an imposed V it cannot
    track): multiple shooting with `n_pieces` constant pieces, after the Lie-bracket rank test
    at start and target. Ranks count eigenvalues above RANK_RTOL·λ_max. The plan is verified
    by integrating it (`ControlPlan.verify`): it carries `residual` and
    `success` = residual ≤ tol.

    Parameters
    ----------
    start : Gaussian
        N(m0, Σ0) on R^d, d ≤ `MAX_DIMENSION`.
    target : Gaussian
        N(m1, Σ1) on R^d, rank Σ1 = rank Σ0.
    t_final : float
        The depth T > 0, T ≤ `MAX_HORIZON` (named as in `flow`).
    controls : str, optional
        A configuration of `lie.CONFIGURATIONS` (default "affine").
    fixed : mapping of str to array_like, optional
        Held parameters: (d, d) matrices for "A", "B", "V", a (d,) vector for "b" (the drift A
        for "attention"; the tied V or B; see `lie.control_system`).
    temperature : float, optional
        The softmax temperature s > 0 of the attention route (default `DEFAULT_TEMPERATURE`).
    n_pieces : int, optional
        The number of constant pieces of the shooting route, ≤ `MAX_PIECES` (default 6).
    tol : float, optional
        The bound on the terminal relative error (default `DEFAULT_TOL`).
    check_accessibility : bool, optional
        Refuse a shooting problem whose rank condition fails (default True); the ranks at start
        and target must agree in any case.
    T : float, optional
        Deprecated alias of t_final (DeprecationWarning; giving both is refused).

    Returns
    -------
    ControlPlan
        The plan, its pieces, and the verified terminal error.

    Raises
    ------
    InvalidInputError
        If start or target is not a Gaussian, they live in different dimensions, d exceeds
        `MAX_DIMENSION`, t_final is missing (or given twice), not positive, not finite or above
        `MAX_HORIZON`, tol or temperature is not positive and finite, n_pieces is out of range,
        check_accessibility is not a bool, controls is not a registered configuration,
        `fixed` names a control or an unknown parameter or has a bad shape or non-finite
        entries, or t_final is too short for the constructive route's controls (∝ 1/t_final)
        to be representable in float64 (the message names the shortest t_final).
    RankMismatchError
        If rank Σ0 ≠ rank Σ1: the rank is invariant under every control (SPEC §3).
    UnreachableError
        Shooting route: if the Lie-algebra ranks at start and target differ, or (with
        check_accessibility=True) the rank condition fails at the start.
    SolverError
        If the plan's controls leave float64, a logarithm or transport cannot be computed
        accurately, or the verification or shooting spends its budget.

    See Also
    --------
    ControlPlan : the result: pieces, params_at, integrate, verify, particles.
    accessibility_rank : the Lie-bracket rank test.
    flow : integrates the moment equations for given parameters.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §3 "Rank invariance".
    .. [2] riccati_tf theory, SPEC §4 "Reachability (time-varying controls)".
    .. [3] V. Jurdjevic, "Geometric Control Theory", Cambridge University Press, 1997.

    Examples
    --------
    The polar route between two Gaussians on R², verified by integration:

    >>> import numpy as np
    >>> from riccati_tf import Gaussian, steer
    >>> start = Gaussian(np.zeros(2), np.eye(2))
    >>> target = Gaussian(np.array([1.0, -1.0]), np.array([[2.0, 0.5], [0.5, 1.0]]))
    >>> plan = steer(start, target, t_final=1.0)
    >>> plan.route, plan.success, plan.residual < 1e-8
    ('polar', True, True)

    Gaussians of different covariance rank cannot be connected:

    >>> from riccati_tf.errors import RankMismatchError
    >>> try:
    ...     steer(start, Gaussian(np.zeros(2), np.diag([1.0, 0.0])), t_final=1.0)
    ... except RankMismatchError:
    ...     print("rank Σ is invariant")
    rank Σ is invariant
    """
    t_final = _horizon_argument(t_final, T)
    for name, g in (("start", start), ("target", target)):
        if not isinstance(g, Gaussian):
            raise InvalidInputError(f"{name} must be a riccati_tf.Gaussian, "
                                    f"got {type(g).__name__}")
    if start.d != target.d:
        raise InvalidInputError(f"start lives in R^{start.d} but target in R^{target.d}")
    d = start.d
    if d > MAX_DIMENSION:
        raise InvalidInputError(f"steering is offered up to d = {MAX_DIMENSION}, got d = {d}")
    T = as_time("t_final", t_final, maximum=MAX_HORIZON)
    tol = as_time("tol", tol)
    temperature = as_time("temperature", temperature)
    n_pieces = as_count("n_pieces", n_pieces, maximum=MAX_PIECES)
    if not isinstance(check_accessibility, bool | np.bool_):
        raise InvalidInputError(f"check_accessibility must be True or False, got "
                                f"{check_accessibility!r:.40}")
    from ..lie import configuration, control_system  # SymPy loads on first use
    from ..lie.system import _fixed_values

    conf = configuration(controls)
    held = {k: np.array(v, dtype=float) for k, v in _fixed_values(conf, d, fixed).items()
            if v is not None}
    r0, r1 = covariance_rank(start.cov), covariance_rank(target.cov)
    if r0 != r1:
        raise RankMismatchError(
            f"rank Σ0 = {r0} but rank Σ1 = {r1}: Σ(t) = Φ(t) Σ0 Φ(t)ᵀ with Φ(t) invertible, so "
            f"the rank of the covariance is invariant under every control (SPEC §3) and no plan "
            f"connects Gaussians of different rank")
    attention_free = not np.any(held.get("V", 0)) and not np.any(held.get("B", 0))
    if conf.name in ("affine", "full") and attention_free and not np.any(held.get("A", 0)):
        return _polar_plan(start, target, T, r0, tol, conf.name)
    if conf.name == "attention":
        plan = _attention_plan(start, target, T, r0, tol, conf.name, held["A"],
                               held["V"] if "V" in (fixed or {}) else None, temperature)
        if plan is not None:
            return plan
    system = control_system(conf, d, fixed=fixed)
    acc = _check_accessibility(system, start, target, r0, check_accessibility)
    return _shooting_plan(system, start, target, T, tol, n_pieces, acc)
