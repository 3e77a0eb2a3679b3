"""The trace-normalised covariance flow: the cloud as a LayerNorm sees it (SPEC §13).

A LayerNorm after each layer fixes the tokens' scale, so what the layers do to the cloud's
shape is the covariance flow with its trace held at a constant c > 0:

    Σ̇ = F(Σ) − (tr F(Σ) / tr Σ) Σ,   F(Σ) = AΣ + ΣAᵀ + Σ_h (V_hΣB_hΣ + ΣB_hᵀΣV_hᵀ),

which keeps tr Σ(t) = tr Σ0 = c (d tr Σ/dt = tr F − tr F = 0) and Σ ⪰ 0 (it is the moment flow
of the affine field x ↦ (M − κI)x + …, κ = tr F / (2 tr Σ), SPEC §3). It is the flow of the
tokens moved by attention and re-centred and re-scaled at every instant,
ẋ_i = X[μ](x_i) − κ(t)(x_i − m(t)), whose Gaussian is exact (SPEC §2).

With A = 0 it is the moment flow itself seen on the sphere tr Σ = c: F is homogeneous of degree
two, so Σ̂ = cΣ/tr Σ of a solution Σ(t) solves it in the time τ(t) = ∫_0^t tr Σ(s)/c ds (SPEC
§13, verified symbolically in proofs/). A blow-up of Σ at T* is then no blow-up of Σ̂: τ → ∞
as t → T* when tr Σ grows like 1/(T* − t), and Σ̂ concentrates on the blow-up directions —
the cloud after LayerNorm loses rank (clusters); a flow whose Σ spreads over more directions
raises the participation ratio

    r(Σ) = (tr Σ)² / tr(Σ²) ∈ [1, rank Σ],

the effective number of directions the cloud occupies. `normalised_flow` reports r at the
start and at the horizon: a measurement of one run up to the horizon, not a limit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.integrate import solve_ivp

from ..errors import InvalidInputError, SolverError
from ..state.moments import covariance_array
from ..state.params import Params
from ..state.validation import as_covariance, as_time

__all__ = ["TRENDS", "NormalisedFlow", "normalised_flow", "normalised_rhs",
           "participation_ratio"]

#: how the participation ratio moved from the start to the horizon (`NormalisedFlow.trend`)
TRENDS = ("concentrates", "spreads", "steady")
#: relative change of the participation ratio below which the trend is "steady"
STEADY_RTOL = 1e-3


def participation_ratio(cov: np.ndarray) -> float:
    """r(Σ) = (tr Σ)² / tr(Σ²), the effective number of directions of Σ ⪰ 0 (module
    docstring); 0 for Σ = 0.

    Parameters
    ----------
    cov : (d, d) ndarray
        A symmetric positive semidefinite matrix.

    Returns
    -------
    float
        r(Σ) ∈ [1, rank Σ] (0 for Σ = 0).

    Raises
    ------
    ValueError
        From numpy for a non-square array.

    See Also
    --------
    normalised_flow : reports it along the flow.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §13 "The flow after LayerNorm".

    Examples
    --------
    >>> import numpy as np
    >>> participation_ratio(np.eye(4)), participation_ratio(np.diag([1.0, 0.0, 0.0]))
    (4.0, 1.0)
    """
    sq = float(np.sum(cov * cov))
    return 0.0 if sq == 0.0 else float(np.trace(cov)) ** 2 / sq


def normalised_rhs(params: Params, cov: np.ndarray) -> np.ndarray:
    """Σ̇ = F(Σ) − (tr F(Σ)/tr Σ) Σ, the trace-normalised covariance flow (module docstring).

    Parameters
    ----------
    params : Params
        The layer (A and heads).
    cov : (d, d) ndarray
        Σ, symmetric with tr Σ > 0 (not validated: the integrator's inner loop).

    Returns
    -------
    (d, d) ndarray
        The right-hand side, trace-free.

    Raises
    ------
    ValueError
        From numpy for arrays of the wrong shape.

    See Also
    --------
    normalised_flow : integrates it.
    riccati_tf.moment_rhs : F(Σ), with the mean.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §13 "The flow after LayerNorm".

    Examples
    --------
    The right-hand side is trace-free:

    >>> import numpy as np
    >>> from riccati_tf import Params
    >>> p = Params(B=np.eye(2), V=np.eye(2))
    >>> float(np.trace(normalised_rhs(p, np.diag([2.0, 1.0]))))
    0.0
    """
    F = covariance_array(params, cov)
    return F - (np.trace(F) / np.trace(cov)) * cov


@dataclass(frozen=True, eq=False)
class NormalisedFlow:
    """The trace-normalised flow from Σ0 up to the horizon (`normalised_flow`).

    Parameters
    ----------
    t : (n,) ndarray
        The output times, from 0 to the horizon.
    cov : (n, d, d) ndarray
        Σ(t), of trace tr Σ0 at every t.
    ratio : (n,) ndarray
        The participation ratio r(Σ(t)).
    trend : str
        "concentrates" (r at the horizon below r(Σ0) by more than STEADY_RTOL relative: the
        cloud after LayerNorm loses directions), "spreads" (above it) or "steady" (TRENDS): of
        this run up to the horizon, not a limit.
    trace_drift : float
        max_t |tr Σ(t) − tr Σ0| / tr Σ0, the integration's departure from the constraint.
    rtol : float
        The integrator's relative tolerance.

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field.

    See Also
    --------
    normalised_flow : produces it.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §13 "The flow after LayerNorm".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf import Params
    >>> run = normalised_flow(Params(B=np.eye(2), V=-np.eye(2)), np.diag([2.0, 1.0]), 5.0)
    >>> run.trend, sorted(run.to_json())
    ('spreads', ['horizon', 'ratio_end', 'ratio_start', 'rtol', 'trace_drift', 'trend'])
    """

    t: np.ndarray
    cov: np.ndarray
    ratio: np.ndarray
    trend: str
    trace_drift: float
    rtol: float

    def to_json(self) -> dict:
        """The participation ratios at the start and the horizon, the trend and the drift."""
        return {"ratio_start": float(self.ratio[0]), "ratio_end": float(self.ratio[-1]),
                "horizon": float(self.t[-1]), "trend": self.trend,
                "trace_drift": self.trace_drift, "rtol": self.rtol}


def normalised_flow(params: Params, cov0: np.ndarray, horizon: float, *, n_eval: int = 65,
                    rtol: float = 1e-8) -> NormalisedFlow:
    """The trace-normalised covariance flow Σ̇ = F(Σ) − (tr F/tr Σ)Σ from Σ0 up to the
    horizon, with the participation ratio r(Σ) = (tr Σ)²/tr(Σ²) along it (module docstring).

    Parameters
    ----------
    params : Params
        The layer (A and heads; b and the mean do not enter).
    cov0 : (d, d) array_like, symmetric positive semidefinite, non-zero
        Σ0 (its trace is kept).
    horizon : float
        The end time, > 0.
    n_eval : int, optional
        Output times, evenly spaced (default 65).
    rtol : float, optional
        DOP853's relative tolerance (default 1e-8; the absolute one is rtol·tr Σ0/d).

    Returns
    -------
    NormalisedFlow

    Raises
    ------
    InvalidInputError
        If cov0 is not a non-zero symmetric positive semidefinite (d, d) matrix, or horizon is
        not a positive finite number.
    SolverError
        If the integration fails or leaves the constraint tr Σ = tr Σ0 by more than 1e-6
        relative.

    See Also
    --------
    participation_ratio : the ratio reported.
    riccati_tf.flow : the moment flow itself.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §13 "The flow after LayerNorm".

    Examples
    --------
    V = B = I (same signs: Σ blows up) concentrates a cloud on its widest direction:

    >>> import numpy as np
    >>> from riccati_tf import Params
    >>> run = normalised_flow(Params(B=np.eye(2), V=np.eye(2)), np.diag([2.0, 1.0]), 5.0)
    >>> run.trend, round(float(run.ratio[0]), 3), round(float(np.trace(run.cov[-1])), 9)
    ('concentrates', 1.8, 3.0)
    """
    horizon = as_time("horizon", horizon)
    d = params.d
    cov0 = as_covariance("cov0", cov0, d)
    c = float(np.trace(cov0))
    if not c > 0:
        raise InvalidInputError("cov0 must be non-zero: the normalised flow keeps tr Σ = tr Σ0")
    if isinstance(n_eval, bool) or not isinstance(n_eval, int) or n_eval < 2:
        raise InvalidInputError(f"n_eval must be an integer ≥ 2, got {n_eval!r}")

    def rhs(_t: float, y: np.ndarray) -> np.ndarray:
        S = y.reshape(d, d)
        return normalised_rhs(params, 0.5 * (S + S.T)).ravel()

    t_eval = np.linspace(0.0, horizon, n_eval)
    sol = solve_ivp(rhs, (0.0, horizon), cov0.ravel(), method="DOP853", t_eval=t_eval,
                    rtol=rtol, atol=rtol * c / d)
    if sol.status != 0 or not np.all(np.isfinite(sol.y)):
        raise SolverError(f"the normalised flow failed: {sol.message}")
    covs = sol.y.T.reshape(-1, d, d)
    covs = 0.5 * (covs + covs.transpose(0, 2, 1))
    drift = float(np.max(np.abs(np.trace(covs, axis1=1, axis2=2) - c)) / c)
    if drift > 1e-6:
        raise SolverError(f"the normalised flow left tr Σ = {c:.6g} by {drift:.2g} relative")
    ratio = np.array([participation_ratio(S) for S in covs])
    change = (ratio[-1] - ratio[0]) / ratio[0]
    trend = ("steady" if abs(change) <= STEADY_RTOL else
             "concentrates" if change < 0 else "spreads")
    return NormalisedFlow(sol.t, covs, ratio, trend, drift, rtol)
