"""One entry point for trajectories of the Gaussian moment system (SPEC §2, §5).

`flow` composes the model (constant or time-varying `Params`), a method (`"exact"` closed form
for scalar value matrices, `"rk"` Runge–Kutta on the full system) and the blow-up event;
`layers` applies exact discrete residual layers x⁺ = x + τX(x).

Every method has a work budget (`max_steps`, default DEFAULT_MAX_STEPS) and raises SolverError,
with a sentence, rather than return a state it cannot vouch for; a trajectory never holds NaN
or Inf, and status "blowup" means a finite-time blow-up at T* ≤ t_final.
"""

from __future__ import annotations

import bisect
import functools
import math
import operator
import pickle
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, NamedTuple, SupportsIndex, overload

import numpy as np
import numpy.typing as npt
from scipy.integrate import DOP853
from scipy.optimize import brentq

from ..display import html_table, number
from ..errors import InvalidInputError, SolverError
from ..state.lowrank import FACTOR_MIN_D, factored_layer
from ..state.params import Gaussian, Params, check_dims
from ..state.schedule import all_finite as _all_finite
from ..state.schedule import checked_schedule
from ..state.validation import as_array, as_count, as_time, as_time_grid, psd_part, psd_rank
from .exact import DEFAULT_MAX_STEPS, NEAR_BLOWUP_RTOL, exact_flow, exact_from
from .implicit.run import implicit_flow

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from ..stability.equilibria import Equilibrium

__all__ = ["CALL_MAX_FLOATS", "DEFAULT_ATOL", "DEFAULT_OUTPUTS", "DEFAULT_RTOL",
           "LAYERS_DEFAULT_MAX", "LAYERS_MAX_FLOATS", "RK_DEFAULT_MAX_STEPS",
           "RK_NEAR_BLOWUP_RTOL", "TIME_ROUNDING", "State", "Trajectory", "flow", "layers"]

#: the rk blow-up event fires when tr Σ exceeds this factor times its starting scale
BLOWUP_GROWTH = 1e8
#: ... and is accepted as a finite-time blow-up when the quadratic (attention) terms make up at
#: least this share of d(tr Σ)/dt; the time is then T_est = t_event + tr Σ / (d tr Σ / dt),
#: uncertain by BLOWUP_EXTRAPOLATION (T_est − t_event): with the linear terms below 1 % of the
#: growth the extrapolated remaining time is off by about that share.
BLOWUP_QUADRATIC_SHARE = 0.99
BLOWUP_EXTRAPOLATION = 0.02
#: rk on a time-invariant layer runs in Sundman's time σ, dt/dσ = s_ref / tr Σ
#: (`_sundman_solve`), in which Σ ~ 1/(T* − t) grows exponentially instead of through a pole
#: (DOP853 keeps a steady step in σ, where in t its steps shrink with T* − t and about every
#: other one is rejected), from the start where the quadratic terms drive at least
#: SUNDMAN_SHARE of d tr Σ/dt > 0 at t = 0 towards a pole T_est = t + tr Σ/(d tr Σ/dt) before
#: t_final, else from the first trace event at SUNDMAN_GROWTH, 4, 16, 256, 65 536 times the
#: starting scale (the growth squared each time, while below BLOWUP_GROWTH) where they do
SUNDMAN_GROWTH = 2.0
SUNDMAN_SHARE = 0.5
#: The pole stop of a Sundman run: after each DOP853 step, with s = tr Σ and ṡ = tr Σ̇ (exact,
#: from the step's last right-hand side), T_k = t_k + r_k, r_k = s/ṡ (Newton's step on 1/s, whose
#: error is O((T* − t)^p)). The run stops at the first step k whose estimates agree over the last
#: POLE_SPAN-fold fall of the remaining time: u_k = max |T_i − T_k| over the steps i since the
#: last one with r_i ≥ POLE_SPAN r_k, plus 4 eps T_k, at most rtol·T_k, with T_k + u_k ≤ t_final
#: and the quadratic terms driving ≥ BLOWUP_QUADRATIC_SHARE of ṡ at every step of that record
#: (`_PoleWatch`). T* ∈ [t_k, T_k + u_k] (`Trajectory.blowup_bracket`). The bound: with the
#: error of Newton's estimate a power C(T* − t)^p, p ≥ 1, of the remaining time (p = 2 at a
#: simple pole of a Riccati flow, p ≈ 1.3 measured on trained-like multi-head layers, p = 1 for
#: s ~ (T* − t)^−α, α ≠ 1), |T_k − T*| = |T_j − T_k| q/(1 − q) with q = (r_k/r_j)^p ≤ 1/4, so
#: u_k ≥ 3 |T_k − T*|. The integration's own error in T* (about rtol·T*, up to a few times that)
#: comes on top
POLE_SPAN = 4.0
#: rk integrates a state (m, vec Σ) in t on its packed coordinates (m, Σ_ij for i ≤ j) from this
#: dimension on (`_Packing`): below it the two gathers per right-hand side cost more than the
#: stepper's arithmetic on the d(d − 1)/2 entries left out saves
PACK_MIN_D = 20
#: a Sundman run's steps towards a pole: relative tolerance rtol · min(SUNDMAN_LOOSEN_MAX, r_0/r)^q
#: (t's entry kept at rtol), r = tr Σ/(d tr Σ/dt) the remaining time at the last step, r_0 its
#: value where the pole stop's current record began (the quadratic terms driving the growth
#: since), q the power. Near a pole the problem itself fixes Σ at remaining time r only to about
#: rtol·T*/r relative (an error rtol·T* in T* moves it that much), and a relative error ε made
#: there moves T* by about ε·r and a later state at remaining time r' by ε·r/r'. q = 1/2
#: (SUNDMAN_LOOSEN_POWER, `flow`): these contributions still fall geometrically along the run,
#: and states and T* keep errors within a small factor of the uniform tolerance's (2–4× at rtol
#: 1e-12, tests/test_flows.py); q = 1 (a run whose only product is T*: `certify`'s evidence)
#: costs T* about rtol·r_0 at every step, about 10·rtol·T* in all on real-shape multi-head
#: layers, with 25–45 % fewer right-hand sides towards their poles than q = 0
SUNDMAN_LOOSEN_MAX = 1e4
SUNDMAN_LOOSEN_POWER = 0.5
#: rk near a blow-up after t_final: Σ(t) ~ 1/(T* − t), so an error ≈ rtol·T* in the blow-up time
#: is a relative error ≈ rtol·T*/(T* − t_final) in the end state; above this rk refuses (exact
#: refuses the same way with eps for rtol, riccati_tf.flows.exact.NEAR_BLOWUP_RTOL)
RK_NEAR_BLOWUP_RTOL = NEAR_BLOWUP_RTOL
#: flow's default tolerances (rtol, atol) of "rk"
DEFAULT_RTOL, DEFAULT_ATOL = 1e-10, 1e-12
#: default work budgets (flow's max_steps): exact — covariance steps plus mean collocation
#: steps, 2 per error-controlled sub-step (DEFAULT_MAX_STEPS, from riccati_tf.flows.exact); rk —
#: DOP853 steps, charged as
#: RK_EVALUATIONS_PER_STEP right-hand-side evaluations each (12 stages, dense output, FSAL)
RK_DEFAULT_MAX_STEPS = 20_000
RK_EVALUATIONS_PER_STEP = 16
#: DOP853 is explicit: its step is at most about RK_STABILITY / |λ| for every eigenvalue λ of
#: the linearisation (which contains 2λ(A) for the covariance): the up-front step estimate
RK_STABILITY = 8.0
#: rk integrates in the time unit 2^−k (τ = 2^k t, exact in binary) with 2^k ≥ the starting
#: rate ‖f(y0)‖∞/‖y0‖∞ when that rate exceeds RK_RATE_MAX, else in t itself (k = 0): solve_ivp's
#: event location uses an absolute time tolerance 4·eps, which a blow-up at T* ≈ 1e-21 (heads
#: of size 1e10) would not resolve
RK_RATE_MAX = 2.0 ** 20
#: the number of equally spaced output times of `flow` without t_eval
DEFAULT_OUTPUTS = 101
#: "auto" leaves DOP853 for the implicit method once STIFF_STEPS consecutive steps have each
#: been shorter than STIFF_RATIO of the solution's time scale ‖y‖/‖ẏ‖ (the step size collapsing
#: against the solution's scale: the explicit method's stability, not its accuracy, sets it)
STIFF_RATIO, STIFF_STEPS = 1e-3, 100
#: the implicit method's default budget of (attempted) Rodas4 steps
IMPLICIT_DEFAULT_MAX_STEPS = 20_000
#: the smallest trace the rk blow-up event takes the logarithm of
TINY = np.finfo(float).tiny
#: the machine epsilon: events are located to 4 EPS (as solve_ivp locates them)
EPS = np.finfo(float).eps
#: the smallest per-entry atol of the covariance (`_scaled_atol`): 1024 subnormal spacings
ATOL_FLOOR = 1024 * np.finfo(float).smallest_subnormal

#: tr(t) reads a time within TIME_ROUNDING·max(|start|, |end|) of a stored time (or of the end of
#: the interval) as that time: 0.3 names the layer at depth 3 · 0.1 = 0.30000000000000004
TIME_ROUNDING = 8 * np.finfo(float).eps
#: the most entries of a vector written out by Trajectory._repr_html_
DISPLAY_ENTRIES = 6
#: the most floats (k times · (d + d²)) one call tr(t) returns (1 GiB)
CALL_MAX_FLOATS = 2**27


class State(NamedTuple):
    """One state N(m(t), Σ(t)) of a trajectory, or k of them: State(t, mean, cov).

    `Trajectory` indexing ``tr[i]`` and dense output ``tr(t)`` return it; it unpacks as
    ``t, m, S = tr[i]``. From `Trajectory.__call__` with an array of k times it holds k states.
    It carries its times (three fields, unlike scipy's ``sol.sol(t)``, which returns y alone),
    so that a state taken from a trajectory says when it is; ``m, S = tr(ts).moments`` gives
    the mean and covariance alone.

    Parameters
    ----------
    t : float or (k,) ndarray of float
        The time, or k times.
    mean : (d,) or (k, d) ndarray of float
        The mean m(t).
    cov : (d, d) or (k, d, d) ndarray of float
        The covariance Σ(t), symmetric positive semidefinite.

    Raises
    ------
    InvalidInputError
        `State.gaussian` of a State holding k states (a Gaussian is one of them).

    See Also
    --------
    Trajectory : the states of a flow, indexed and called to give a State.
    riccati_tf.Gaussian : one state as a validated Gaussian (`State.gaussian`).

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    >>> from riccati_tf import Gaussian, Params, flow
    >>> tr = flow(Params(-1.0), Gaussian([1.0], [[1.0]]), 1.0, t_eval=[0.0, 1.0])
    >>> t, m, S = tr[-1]
    >>> t, round(float(S[0, 0]), 6)
    (1.0, 0.135335)
    >>> tr[-1].gaussian()
    Gaussian(mean=[0.367879], cov=[[0.135335]])
    >>> m, S = tr([0.25, 0.5]).moments
    >>> m.shape, S.shape
    ((2, 1), (2, 1, 1))
    """

    t: float | np.ndarray
    mean: np.ndarray
    cov: np.ndarray

    @property
    def moments(self) -> tuple[np.ndarray, np.ndarray]:
        """(mean, cov): the state's moments without its time (``m, S = tr(ts).moments``)."""
        return self.mean, self.cov

    def gaussian(self) -> Gaussian:
        """The state as a validated Gaussian N(mean, cov) (a State of one state only)."""
        if np.ndim(self.t):
            raise InvalidInputError(f"this State holds {np.size(self.t)} states; a Gaussian is one "
                                    f"of them: take tr(t_i) or tr[i] for a single time")
        return Gaussian(self.mean, self.cov)


@dataclass(frozen=True, eq=False)
class Trajectory:
    """States N(m(t), Σ(t)) of the moment system at increasing times t, with dense output.

    The states solve (`flow`, SPEC §2)

        ṁ = (A + V) m + V Σ B m + b,      Σ̇ = A Σ + Σ Aᵀ + V Σ B Σ + Σ Bᵀ Σ Vᵀ

    or follow the discrete layers m⁺ = (I + τM) m + τc, Σ⁺ = (I + τM) Σ (I + τM)ᵀ (`layers`).
    All are reached before any blow-up, and every state is finite.

    Access: ``tr[i]`` is the i-th state as a `State(t, mean, cov)` (negative i counts from the
    end), ``tr[i:j:k]`` a Trajectory of those states (k ≥ 1; the flow's status and dense output
    are kept), ``for s in tr`` iterates over the states, ``len(tr)`` counts them. Dense output:
    ``tr(t)`` is the state at any time t of the flow's interval, between the stored times too
    (`Trajectory.__call__`). ``tr.d`` is the dimension, ``tr.gaussian(i)`` the i-th state as a
    `riccati_tf.Gaussian`, ``tr.plot()`` a figure of the eigenvalues of Σ(t) (`Trajectory.plot`).

    Parameters
    ----------
    t : (k,) ndarray of float
        The times, increasing (the depths 0, τ, 2τ, ... for `layers`).
    mean : (k, d) ndarray of float
        The means m(t).
    cov : (k, d, d) ndarray of float
        The covariances Σ(t), symmetric positive semidefinite.
    status : {"completed", "blowup"}
        "blowup" when the trajectory ends at blowup_time ≤ t_final.
    blowup_time : float or None
        T* of a finite-time blow-up of the flow ("singularity"), or the depth of the first
        layer whose state leaves the floating-point range ("overflow"); None when completed.
    method : {"exact", "rk", "implicit", "rk+implicit", "layers"}
        How the states were computed: the closed form for scalar value matrices, DOP853, the
        stiff method Rodas4, DOP853 up to `switch_time` and Rodas4 after it, or discrete layers.
    blowup_direction : (d,) ndarray of float or None, optional
        The unit direction along which Σ(t) diverges at a singularity: "exact", the limit
        direction at T*; "rk", the top eigenvector of Σ at the last state reached,
        t = blowup_bracket[0] (a general-V blow-up's direction can keep turning up to T*).
        None otherwise.
    rtol, atol : float or None, optional
        The tolerances of "rk"; None for methods exact up to rounding.
    blowup_kind : {"singularity", "overflow"} or None, optional
        "singularity" (`flow`: the finite-time blow-up of the flow at T*) or "overflow"
        (`layers`: a finite stack of layers has no finite-time blow-up, but its state can
        leave the floating-point range); None when completed.
    dense : optional
        What ``tr(t)`` needs between the stored times, set by `flow` (None for `layers`, for
        ``flow(..., dense_output=False)`` and for a Trajectory built directly).
    blowup_bracket : (float, float) or None, optional
        "rk" at a singularity: (t_reached, T_upper) with t_reached ≤ T* ≤ T_upper — t_reached
        the last time the integration reached (Σ finite there), T_upper = blowup_time + u with
        u the derived bound of the extrapolation error |T* − blowup_time| (the pole stop of
        `flow`, or BLOWUP_EXTRAPOLATION of the remaining time at the blow-up event); the
        integration's own error, about rtol·T*, comes on top. None otherwise ("exact" locates T*
        to rounding).
    switch_time : float or None, optional
        "rk+implicit": the time at which `flow`'s "auto" left DOP853 for the implicit method
        (the states up to it are DOP853's, the later ones Rodas4's); None otherwise.

    Raises
    ------
    InvalidInputError
        Indexing with a non-integer, an index out of range or a slice step < 1; calling
        ``tr(t)`` at a time outside the flow's interval, between stored times without dense
        output, or at more times than CALL_MAX_FLOATS floats hold.
    SolverError
        Calling ``tr(t)`` at a time within rounding of the blow-up time T*, where the closed
        form is singular in floating point.

    See Also
    --------
    flow : the continuous-depth trajectory of a Gaussian.
    layers : the trajectory through discrete residual layers.
    State : one state of the trajectory.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".
    .. [2] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".

    Examples
    --------
    With A = −1 and no attention, m(t) = e^{−t} m0 and Σ(t) = e^{−2t} Σ0:

    >>> import numpy as np
    >>> from riccati_tf import Gaussian, Params, flow
    >>> tr = flow(Params(-1.0), Gaussian([1.0], [[1.0]]), 1.0, t_eval=[0.0, 0.5, 1.0])
    >>> tr
    Trajectory(method='exact', status='completed', t=[0, 1], n=3, d=1)
    >>> t, m, S = tr[-1]
    >>> t, round(float(m[0]), 6), round(float(S[0, 0]), 6)
    (1.0, 0.367879, 0.135335)
    >>> tr[1:]
    Trajectory(method='exact', status='completed', t=[0.5, 1], n=2, d=1)

    Dense output, at a time between the stored ones and at an array of times:

    >>> round(float(tr(0.25).mean[0]), 6)
    0.778801
    >>> tr(np.array([0.1, 0.2])).cov.shape
    (2, 1, 1)
    """

    t: np.ndarray
    mean: np.ndarray
    cov: np.ndarray
    status: str
    blowup_time: float | None
    method: str
    blowup_direction: np.ndarray | None = None
    rtol: float | None = None
    atol: float | None = None
    blowup_kind: str | None = None
    dense: _RkDense | _ExactDense | None = field(default=None, metadata={"serialize": False})
    blowup_bracket: tuple[float, float] | None = None
    switch_time: float | None = None

    def __len__(self) -> int:
        """The number of states."""
        return self.t.size

    @property
    def d(self) -> int:
        """The dimension of the Gaussians."""
        return self.cov.shape[-1]

    def gaussian(self, i: int = -1) -> Gaussian:
        """The state at index i as a validated Gaussian."""
        return Gaussian(self.mean[i], self.cov[i])

    def plot(self, ax: Any = None, *, title: str = "",
             equilibrium: Equilibrium | npt.ArrayLike | None = None) -> Axes:
        """The eigenvalues λ1 ≥ … ≥ λr of Σ(t) at the stored times, drawn on a log scale.

        `riccati_tf.io.plots.plot_covariance` of the trajectory: the r = rank Σ0 largest
        eigenvalues (rank invariance, SPEC §3), a blow-up time T* as a dashed vertical line, an
        equilibrium's eigenvalues as dotted horizontal lines. Only the stored states are drawn
        (nothing is integrated); `riccati_tf.Certificate.plot` resolves a blow-up up to T*.
        Like pandas' ``.plot()``: into `ax`, else into a new pyplot figure
        (``tr.plot(); plt.show()`` works in a script).

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            Draw into this Axes (nothing global changes); default: a new pyplot figure
            (`riccati_tf.io.figures.pyplot_axes`).
        title : str, default ""
            The axes' title.
        equilibrium : Equilibrium or (d, d) array_like, optional
            An equilibrium Σ* (or its covariance) to mark.

        Returns
        -------
        matplotlib.axes.Axes
            The Axes drawn into.

        Raises
        ------
        numpy.linalg.LinAlgError
            For a state with non-finite entries (the symmetric eigensolver fails).

        See Also
        --------
        riccati_tf.io.plots.plot_covariance : the drawing.
        riccati_tf.Certificate.plot : the flow of a certificate over a window chosen for it.

        References
        ----------
        .. [1] riccati_tf theory, SPEC §3 "Rank invariance" (the number of curves).

        Examples
        --------
        Σ(t) = e^{−2t} Σ0 under A = −I:

        >>> import numpy as np
        >>> from riccati_tf import Gaussian, Params, flow
        >>> tr = flow(Params(-np.eye(2)), Gaussian([0.0, 0.0], [[1.0, 0.0], [0.0, 2.0]]), 2.0)
        >>> ax = tr.plot(title="decay")
        >>> [line.get_label() for line in ax.get_lines()]
        ['λ1(Σ), final 0.03663', 'λ2(Σ), final 0.01832']
        """
        from ..io.figures import pyplot_axes
        from ..io.plots import plot_covariance

        ax = pyplot_axes(ax)
        plot_covariance(self, title=title, ax=ax, equilibrium=equilibrium)
        return ax

    @overload
    def __getitem__(self, index: slice) -> Trajectory: ...

    @overload
    def __getitem__(self, index: SupportsIndex) -> State: ...

    def __getitem__(self, index: SupportsIndex | slice) -> State | Trajectory:
        """tr[i]: State(t, mean, cov) at index i (negative i counts from the end); tr[i:j:k]:
        the Trajectory of those states (step k ≥ 1: times stay increasing), with the status,
        method and dense output of the flow it comes from."""
        n = len(self)
        if isinstance(index, slice):
            try:
                start, stop, step = index.indices(n)
            except (TypeError, ValueError) as exc:
                raise InvalidInputError(f"a Trajectory slice needs integer bounds and a nonzero "
                                        f"integer step: {exc}") from None
            if step < 1:
                raise InvalidInputError(f"a Trajectory slice must keep its times increasing: "
                                        f"step {step} is refused (index the arrays tr.t, "
                                        f"tr.mean, tr.cov to reverse them)")
            part = slice(start, stop, step)
            return replace(self, t=self.t[part], mean=self.mean[part], cov=self.cov[part])
        if isinstance(index, bool | np.bool_):
            raise InvalidInputError(f"a Trajectory index must be an integer, got {index!r}")
        try:
            i = operator.index(index)
        except TypeError:
            raise InvalidInputError(f"a Trajectory index must be an integer or a slice, got "
                                    f"{type(index).__name__}") from None
        if not -n <= i < n:
            raise InvalidInputError(f"index {i} is out of range for a Trajectory of {n} states")
        return State(float(self.t[i]), self.mean[i], self.cov[i])

    def __iter__(self) -> Iterator[State]:
        """The states in order of time, each a `State`."""
        return (self[i] for i in range(len(self)))

    def __call__(self, t: npt.ArrayLike) -> State:
        """The state at time t (dense output): State(t, m(t), Σ(t)) for a time, or for a 1-D
        array of k times (any order) State(t, mean (k, d), cov (k, d, d)).

        A stored time (to within TIME_ROUNDING relative) gives its stored state. Between them:
        "rk" — integrated again from the last stored state t_k ≤ t (or from the initial
        state) as the flow was (DOP853 with its tolerances, the flow's max_steps the budget of
        each call), accurate to about the integration tolerance; "exact" — the closed form
        continued from the last stored state t_k ≤ t (or from the initial state),
        Σ(t) = E L S⁻¹ Lᵀ Eᵀ with one Van Loan step per covariance step, exact to rounding, and
        the mean by the same Gauss collocation as the flow, as accurate as the flow's own means
        (`riccati_tf.flows.exact.exact_from`; the flow's max_steps is the budget of each
        call).
        "layers" has states at layer times only. The interval is [0, t_final] — for a blow-up
        [0, T*) ("exact") or up to where rk detected it — and a time outside it, or a trajectory
        without dense output, is an InvalidInputError naming the interval or the stored times.
        A time within rounding of T* where the closed form is singular in floating point, or
        (rk) so close to T* that flow would refuse it as t_final: SolverError.

        Parameters
        ----------
        t : float or (k,) array_like of float
            A time, or k times in any order, in the flow's interval.

        Returns
        -------
        State
            t, mean (d,), cov (d, d) for one time; t (k,), mean (k, d), cov (k, d, d) for k.

        Raises
        ------
        InvalidInputError
            When t is not a finite real time or 1-D array of times, lies outside the interval,
            falls between stored times of a trajectory without dense output, or asks for more
            than CALL_MAX_FLOATS floats.
        SolverError
            When t is within rounding of T* (the closed form is singular there), or rk's
            state there is known only to more than RK_NEAR_BLOWUP_RTOL (as `flow` refuses
            such a t_final).

        Examples
        --------
        >>> from riccati_tf import Gaussian, Params, flow
        >>> tr = flow(Params(0.0, B=1.0, V=1.0), Gaussian([0.0], [[1.0]]), 1.0)
        >>> tr.status, round(float(tr.blowup_time), 6)
        ('blowup', 0.5)
        >>> round(float(tr(0.45).cov[0, 0]), 6)  # σ(t) = 1 / (1 − 2t)
        10.0
        """
        times = as_array("t", t)
        if times.ndim > 1:
            raise InvalidInputError(f"t must be a time or a 1-D array of times, got an array of "
                                    f"shape {times.shape}")
        flat = times.reshape(-1) + 0.0
        if flat.size * (self.d + self.d**2) > CALL_MAX_FLOATS:
            raise InvalidInputError(
                f"t holds {flat.size} times: their states in R^{self.d} need "
                f"{8 * flat.size * (self.d + self.d**2) / 2**30:.3g} GiB, more than the "
                f"{8 * CALL_MAX_FLOATS / 2**30:.3g} GiB one call returns; ask in batches")
        mean, cov = self._states_at(flat)
        if times.ndim == 0:
            return State(float(flat[0]), mean[0], cov[0])
        return State(flat, mean, cov)

    def _interval(self) -> tuple[float, float, bool, str]:
        """(start, end, whether end is included, why it ends there) of the times with states."""
        if self.dense is not None:
            return self.dense.interval(self)
        if not len(self):
            raise InvalidInputError("this Trajectory holds no states")
        return float(self.t[0]), float(self.t[-1]), True, ""

    def _states_at(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lo, hi, closed, why = self._interval()
        tol = TIME_ROUNDING * max(abs(lo), abs(hi), np.finfo(float).tiny)
        outside = (t < lo - tol) | ((t > hi + tol) if closed else (t >= hi))
        if outside.any():
            bracket = "]" if closed else ")"
            raise InvalidInputError(
                f"t = {t[outside][0]:.10g} lies outside [{lo:.10g}, {hi:.10g}{bracket}, the "
                f"interval on which this {self.method} trajectory has states{why}")
        t = np.clip(t, lo, hi)
        n, d = len(self), self.d
        hit = np.zeros(t.size, dtype=bool)
        nearest = np.zeros(t.size, dtype=int)
        if n:
            right = np.minimum(np.searchsorted(self.t, t), n - 1)
            left = np.maximum(right - 1, 0)
            nearest = np.where(np.abs(self.t[left] - t) <= np.abs(self.t[right] - t), left, right)
            hit = np.abs(self.t[nearest] - t) <= tol
        mean, cov = np.empty((t.size, d)), np.empty((t.size, d, d))
        mean[hit], cov[hit] = self.mean[nearest[hit]], self.cov[nearest[hit]]
        if not hit.all():
            if self.dense is None:
                raise InvalidInputError(self._no_dense_output(float(t[~hit][0])))
            mean[~hit], cov[~hit] = self.dense.states(self, t[~hit])
        return mean, cov

    def _no_dense_output(self, t: float) -> str:
        stored = f"{len(self)} stored times in [{self.t[0]:.10g}, {self.t[-1]:.10g}]"
        if self.method == "layers":
            return (f"discrete layers have no states between layers: t = {t:.10g} is not one of "
                    f"the {stored} (the depths k τ); take tr(k * tau) or tr[k]")
        return (f"this {self.method} Trajectory carries no dense output (it was built directly, "
                f"or by flow(..., dense_output=False)): it has states only at its {stored}, and "
                f"t = {t:.10g} is not one of them")

    def __repr__(self) -> str:
        """The trajectory without its arrays."""
        n = len(self)
        span = f"[{self.t[0]:.6g}, {self.t[-1]:.6g}]" if n else "[]"
        blow = ("" if self.blowup_time is None else
                f", overflow at t={self.blowup_time:#.4g}" if self.blowup_kind == "overflow"
                else f", T*={self.blowup_time:#.4g}")
        return (f"Trajectory(method={self.method!r}, status={self.status!r}{blow}, t={span}, "
                f"n={n}, d={self.d})")

    def _repr_html_(self) -> str:
        """A small table: method, status, T*, and the start and end states (t, mean, eigenvalues
        of Σ, rank Σ) with at most DISPLAY_ENTRIES numbers per vector."""
        label = "overflow at t" if self.blowup_kind == "overflow" else "T*"
        rows = [("method", self.method), ("status", self.status),
                (label, "none" if self.blowup_time is None else number(self.blowup_time)),
                ("d", self.d), ("states", len(self))]
        if len(self):
            ends = (self[0], self[-1])

            def both(f):
                return " → ".join(f(s) for s in ends)

            rows += [("t (start → end)", both(lambda s: number(s.t))),
                     ("mean", both(lambda s: _brief(s.mean))),
                     ("eigenvalues of Σ", both(lambda s: _brief(np.linalg.eigvalsh(s.cov)))),
                     ("rank Σ", both(lambda s: str(psd_rank(s.cov))))]
        return html_table("Trajectory", rows)


def _brief(x: np.ndarray) -> str:
    """[x_1, ..., x_k] in display.DIGITS digits; past DISPLAY_ENTRIES entries the middle ones are
    elided (a display, the data stay whole in the arrays)."""
    if x.size <= DISPLAY_ENTRIES:
        return "[" + ", ".join(number(v) for v in x) + "]"
    h = DISPLAY_ENTRIES // 2
    return ("[" + ", ".join(number(v) for v in x[:h]) + ", …, " +
            ", ".join(number(v) for v in x[-h:]) + f"] ({x.size} entries)")


@dataclass(frozen=True, eq=False)
class _RkDense:
    """What an rk trajectory needs to give its state at any time of the flow: the layer (a
    Params or a callable t ↦ Params), the initial state, the tolerances and budget, and the end
    of the interval (t_final, or the last time reached before a blow-up). The state at t is
    integrated again, as `flow` integrates it (DOP853, Sundman's time near a pole), from the last
    stored state t_k ≤ t (or from the initial state): memory independent of the number of steps,
    at the cost of one short integration per call."""

    params: Params | Callable[[float], Params] | None
    mean0: np.ndarray
    cov0: np.ndarray
    rtol: float
    atol: float
    max_steps: int
    end: float

    def interval(self, tr: Trajectory) -> tuple[float, float, bool, str]:
        why = ("" if tr.blowup_time is None else
               f": the integration stopped at t = {self.end:.10g}, where it detected the blow-up "
               f"at T* ≈ {tr.blowup_time:.10g}")
        return 0.0, self.end, True, why

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickled with its layer when that pickles (a Params, a module-level function), else
        without it (a lambda or closure): states between the stored times are then refused."""
        params: Any = self.params
        if not isinstance(params, Params):
            try:
                pickle.dumps(params)
            except (pickle.PicklingError, AttributeError, TypeError):
                params = None
        return _RkDense, (params, self.mean0, self.cov0, self.rtol, self.atol,
                          self.max_steps, self.end)

    def states(self, tr: Trajectory, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.params is None:
            raise InvalidInputError(
                "this rk trajectory was unpickled without its layer (a Python callable that "
                "does not pickle, such as a lambda): it has states only at its stored times; "
                "pickle a Params or a module-level function to keep the dense output")

        def run(start: float, mean: np.ndarray, cov: np.ndarray,
                offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            fn = self.params
            assert fn is not None  # refused above
            if not isinstance(fn, Params):
                fn = checked_schedule("params", fn, Params, tr.d)
            shifted = fn if isinstance(fn, Params) else lambda s: fn(start + s)
            try:
                res = _rk_flow(shifted, Gaussian(mean, psd_part(cov)), offsets,
                               float(offsets[-1]), self.rtol, self.atol, self.max_steps)
            except SolverError as exc:
                raise SolverError(f"the state at t = {start + offsets[-1]:.10g}, integrated "
                                  f"again from the stored state at t = {start:.10g}: "
                                  f"{exc}") from None
            if res.t.size < offsets.size:
                raise SolverError(
                    f"integrated again from t = {start:.10g}, the flow blows up at "
                    f"T* ≈ {start + float(res.blowup_time or np.nan):.10g} before "
                    f"t = {start + offsets[res.t.size]:.10g}: that time is within the "
                    f"integration's error of the blow-up")
            return res.mean, res.cov

        return _continued(tr, self.mean0, self.cov0, t, run)


def _continued(tr: Trajectory, mean0: np.ndarray, cov0: np.ndarray, t: np.ndarray,
               run: Callable[[float, np.ndarray, np.ndarray, np.ndarray],
                             tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """The states at times t (any order) of a trajectory continued from its last stored state
    t_k ≤ t (or from the initial state): run(t_k, m_k, Σ_k, offsets) gives the states at
    t_k + offsets (offsets > 0, increasing) — the dense output of both methods."""
    starts = np.concatenate([[0.0], tr.t])
    means = np.concatenate([mean0[None], tr.mean])
    covs = np.concatenate([cov0[None], tr.cov])
    which = np.searchsorted(starts, t, side="right") - 1  # the last start ≤ t
    mean, cov = np.empty((t.size, tr.d)), np.empty((t.size, tr.d, tr.d))
    for j in np.unique(which):
        sel = which == j
        offsets, back = np.unique(t[sel] - starts[j], return_inverse=True)
        m, S = np.empty((offsets.size, tr.d)), np.empty((offsets.size, tr.d, tr.d))
        m[offsets == 0], S[offsets == 0] = means[j], covs[j]
        moving = offsets > 0
        if moving.any():
            m[moving], S[moving] = run(float(starts[j]), means[j], covs[j], offsets[moving])
        mean[sel], cov[sel] = m[back], S[back]
    return mean, cov


@dataclass(frozen=True, eq=False)
class _ExactDense:
    """What the closed form needs to continue an exact trajectory from any of its states
    (`riccati_tf.flows.exact.exact_from`): A, G, v̄ = Σ_h v_h, B̄ = Σ_h v_h B_h, b, the initial
    state (a starting point at t = 0 whatever the stored times), t_final and the budget."""

    A: np.ndarray
    G: np.ndarray
    vbar: float
    Bbar: np.ndarray
    b: np.ndarray
    mean0: np.ndarray
    cov0: np.ndarray
    t_final: float
    max_steps: int

    def interval(self, tr: Trajectory) -> tuple[float, float, bool, str]:
        if tr.blowup_time is None:
            return 0.0, self.t_final, True, ""
        return 0.0, float(tr.blowup_time), False, (f": Σ(t) blows up at "
                                                   f"T* = {tr.blowup_time:.10g}")

    def states(self, tr: Trajectory, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        def run(start: float, mean: np.ndarray, cov: np.ndarray,
                offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            res = exact_from(self.A, self.G, self.vbar, self.Bbar, self.b, mean, cov, offsets,
                             max_steps=self.max_steps)
            if res.t.size < offsets.size:
                late = start + offsets[res.t.size]
                T = tr.blowup_time or start + float(res.blowup_time or 0.0)
                raise SolverError(
                    f"Σ(t) at t = {late:.12g} is within rounding of the blow-up at "
                    f"T* = {T:.12g}: the closed form is singular there in floating point")
            return res.mean, res.cov

        return _continued(tr, self.mean0, self.cov0, t, run)


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


def _finite_params(p: Params) -> bool:
    return _all_finite(*p.arrays())


def _guard(tr: Trajectory, checked: bool = False) -> Trajectory:
    """The last line of defence: a trajectory holds finite states only (checked: its states
    were all tested already, as `_rk_run` tests every state it returns, and are not read
    again: a pass over them is 0.4 % of an rk flow at d = 128)."""
    if not checked and not _all_finite(tr.cov, tr.mean):
        raise SolverError(f"the {tr.method} flow produced a non-finite state (status "
                          f"{tr.status!r}): the state left the floating-point range "
                          f"(exponential growth past about 1e308, not a finite-time blow-up)")
    if tr.status == "blowup" and not (tr.blowup_time is not None
                                      and np.isfinite(tr.blowup_time)):
        raise SolverError(f"the {tr.method} flow reported a blow-up without a finite time")
    return tr


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


def _scaled_atol(g: Gaussian, atol: float, rtol: float) -> np.ndarray:
    """atol for (m, vec Σ), capped for Σ_ij at rtol·√(Σ_ii Σ_jj) (its scale at t = 0) where
    that is positive: a variance below atol (Σ0 = diag(1, 1e-16), or Σ0 ~ 1e-300) is then
    resolved relative to its size instead of being lost in the absolute tolerance (it may grow
    along an unstable direction). The mean keeps atol."""
    v = np.diag(g.cov)
    root = np.sqrt(v)  # √Σ_ii √Σ_jj: no underflow of Σ_ii Σ_jj at 1e-300
    scales = np.concatenate([np.zeros(g.d), np.outer(root, root).ravel()])
    return np.where(scales > 0, np.maximum(np.minimum(atol, rtol * scales), ATOL_FLOOR), atol)


class _RkBudgetSpent(Exception):
    def __init__(self, t: float) -> None:
        super().__init__(t)
        self.t = t


def _rk_flow(params_fn: Params | Callable[[float], Params], gaussian: Gaussian,
             t_out: np.ndarray, t_final: float, rtol: float, atol: float,
             max_steps: int = RK_DEFAULT_MAX_STEPS,
             counter: list[int] | None = None, pole_rtol: float | None = None,
             loosen_power: float = SUNDMAN_LOOSEN_POWER, stiff_switch: bool = False
             ) -> Trajectory:
    """params_fn: a callable t ↦ Params, or one Params (time-invariant: the right-hand side
    then binds it once, and with m0 = 0 and b = 0 the mean stays 0 and only Σ is integrated).
    counter: counter[0] grows by one per right-hand-side evaluation. pole_rtol: the relative
    width to which the pole stop brackets T* (`_PoleWatch`; None: rtol); loosen_power: the power
    q of the tolerance schedule towards a pole (SUNDMAN_LOOSEN_MAX). No dense output (`flow`
    attaches its `_RkDense`). stiff_switch: raise _StiffSwitch where the steps collapse
    (`_StiffMonitor`, runs in t only)."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # detected explicitly
        return _rk_run(params_fn, gaussian, t_out, t_final, rtol, atol, max_steps, counter,
                       rtol if pole_rtol is None else pole_rtol, loosen_power, stiff_switch)


def _rk_rhs(params_fn: Params | Callable[[float], Params], d: int, limit: int,
            with_mean: bool, counter: list[int] | None = None
            ) -> Callable[[float, np.ndarray], np.ndarray]:
    """The right-hand side on the state y = (m, vec Σ), or y = vec Σ when not with_mean; it
    raises _RkBudgetSpent on its (limit + 1)-th evaluation and adds one to counter[0] (when
    given) per evaluation. params_fn: a Params or a callable t ↦ Params. The products are
    `drift_arrays`'s, in its order: the same floats."""
    count = [0] if counter is None else counter
    stop = count[0] + limit  # the count at the limit
    fixed = params_fn if isinstance(params_fn, Params) else None

    def covariance(t: float, y: np.ndarray) -> np.ndarray:
        count[0] += 1
        if count[0] > stop:
            raise _RkBudgetSpent(t)
        q = fixed if fixed is not None else params_fn(t)  # type: ignore[operator]
        S = y.reshape(d, d)
        X = q.M(S) @ S
        return (X + X.T).ravel()

    def moments(t: float, y: np.ndarray) -> np.ndarray:
        count[0] += 1
        if count[0] > stop:
            raise _RkBudgetSpent(t)
        q = fixed if fixed is not None else params_fn(t)  # type: ignore[operator]
        S = y[d:].reshape(d, d)
        M = q.M(S)
        X = M @ S
        out = np.empty(d + d * d)
        m = y[:d]
        np.add(M @ m, q.c(m), out=out[:d])
        np.add(X, X.T, out=out[d:].reshape(d, d))
        return out

    return moments if with_mean else covariance


class _TraceEvent:
    """The growth event of an rk run: log tr Σ − log threshold, which rises through 0 where
    tr Σ passes the threshold (`_t_solve` tests tr Σ ≥ threshold at each step's end,
    `_sundman_solve` locates the root), tr Σ read from the state's diagonal entries of vec Σ,
    which starts at index k."""

    def __init__(self, k: int, d: int, threshold: float) -> None:
        self.k, self.d, self.threshold = k, d, threshold

    def trace(self, y: np.ndarray) -> float:
        """tr Σ of the state y."""
        return float(y[self.k::self.d + 1].sum())

    def level(self, trace: float) -> float:
        """log tr Σ − log threshold at tr Σ = trace."""
        return math.log(max(trace, TINY)) - math.log(self.threshold)

    def __call__(self, _t: float, y: np.ndarray) -> float:
        return self.level(self.trace(y))


def _rk_run(params_fn: Params | Callable[[float], Params], gaussian: Gaussian,
            t_out: np.ndarray, t_final: float, rtol: float, atol: float,
            max_steps: int, counter: list[int] | None, pole_rtol: float,
            loosen_power: float, stiff_switch: bool = False) -> Trajectory:
    d = gaussian.d
    limit = RK_EVALUATIONS_PER_STEP * max_steps
    with_mean = True
    params_at: Callable[[float], Params]
    if isinstance(params_fn, Params):
        p = params_fn
        with_mean = bool(np.any(gaussian.mean) or np.any(p.b))
        rhs = _rk_rhs(p, d, limit, with_mean, counter)
        params_at = lambda _t: p  # noqa: E731
    else:
        rhs = _rk_rhs(params_fn, d, limit, with_mean, counter)
        params_at = params_fn
    k = d if with_mean else 0  # where vec Σ starts in the state

    def full(y: np.ndarray) -> np.ndarray:
        return y if with_mean else np.concatenate([np.zeros(d), y])

    y = np.concatenate([gaussian.mean, gaussian.cov.ravel()])[d - k:]
    # without the mean, rtol and atol grow by √((d + d²)/d²) (in σ, with t in the state,
    # √((1 + d + d²)/(1 + d²))): scipy's RMS error norm then equals that of the full state,
    # whose mean errors are 0, and the steps are the same
    loosen = 1.0 if with_mean else math.sqrt((d + d * d) / (d * d))
    loosen_sigma = 1.0 if with_mean else math.sqrt((1 + d + d * d) / (1 + d * d))
    atol_full = _scaled_atol(gaussian, atol, rtol)[d - k:]
    atol_vec = loosen * atol_full
    scale = float(np.trace(gaussian.cov))
    # Python floats: overflow to inf without a warning. A time-invariant layer's run is in σ
    # from the start where the quadratic terms drive the growth of tr Σ there towards a pole
    # before t_final, else the early events decide whether to go on in σ; a time-varying one
    # (controls, whose own time scales set the steps) stays in t with the blow-up event alone
    early = scale > 0 and isinstance(params_fn, Params)
    f0 = _finite_start(rhs, 0.0, y)  # the trace of its Σ̇ is d tr Σ/dt at t = 0 (no M(Σ0) again)
    start = _pole_ahead(params_at(0.0), d, 0.0, full(y), t_final,
                        float(f0[k::d + 1].sum())) if early else None
    sundman = start is not None
    early = early and not sundman
    # t's scale in a run in σ from t = 0: tr Σ/(d tr Σ/dt) there (≈ T*), at most t_final
    t_start = 0.0 if start is None else min(start[0], t_final)
    threshold = (SUNDMAN_GROWTH if early else BLOWUP_GROWTH) * scale
    t0 = 0.0
    ts: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    blowup_time: float | None = None
    bracket: tuple[float, float] | None = None
    direction: np.ndarray | None = None
    pending = None  # a blow-up estimated near or after t_final: (T_est, uncertainty)
    unit = _time_unit(y, f0, t_final)

    def scaled(tau: float, y: np.ndarray) -> np.ndarray:  # dy/dτ = unit · f(unit τ, y)
        return unit * rhs(unit * tau, y)
    rhs_tau = rhs if unit == 1.0 else scaled

    def linear_rate(tau: float, y: np.ndarray) -> float:  # 2 tr(AΣ) per unit of τ
        return 2.0 * unit * float(np.vdot(params_at(unit * tau).A, y[k:].reshape(d, d).T))

    step = 0.0  # the last step of a run in t: the first step of the run in σ after it
    stop: tuple[float, float, np.ndarray] | None = None  # a blow-up found by `crossed`

    def crossed(tau: float, y_tau: np.ndarray, event: _TraceEvent) -> bool:
        """At the end of a step in t where tr Σ ≥ the threshold: True ends the run (on in σ
        towards a pole, or a blow-up `stop` before t_final), else the threshold is raised
        and the same run goes on (no restart)."""
        nonlocal early, sundman, threshold, pending, stop
        t = tau * unit
        if early:  # on in σ where the quadratic terms drive the growth towards a pole before
            # t_final, else the same test at the squared growth while below BLOWUP_GROWTH
            sundman = _pole_ahead(params_at(t), d, t, full(y_tau), t_final) is not None
            if sundman:
                early, threshold = False, BLOWUP_GROWTH * scale
                return True
            growth = threshold / scale
            early = growth * growth < BLOWUP_GROWTH
            threshold = (growth * growth if early else BLOWUP_GROWTH) * scale
        else:
            estimate = _blowup_estimate(params_at(t), d, t, full(y_tau))
            if estimate is not None:
                if estimate[0] + estimate[1] <= t_final:  # before t_final, beyond its uncertainty
                    stop = estimate
                    return True
                pending = estimate[:2]  # after t_final (or too close to tell): follow it
            threshold *= BLOWUP_GROWTH
        event.threshold = threshold
        return False

    while True:
        event = _TraceEvent(k, d, threshold if scale > 0 else 1.0)  # no event when Σ0 = 0
        grid = t_out if t0 == 0 else t_out[t_out > t0]  # (the output times are ≥ 0)
        f_start = _finite_start(rhs, t0, y) if ts else f0  # f(t0, y), handed to DOP853
        try:
            with np.errstate(over="ignore", invalid="ignore"):  # overflow is detected below
                if sundman:
                    sol = _sundman_solve(rhs_tau, t0 / unit, t_final / unit, y, grid / unit,
                                         event, loosen_sigma * rtol, loosen_sigma * atol_full,
                                         _PoleWatch(pole_rtol, t_final / unit, linear_rate),
                                         (t0 if t0 > 0 else t_start) / unit, step,
                                         loosen_power)
                else:
                    sol = _t_solve(rhs_tau, t0 / unit, t_final / unit, y, grid / unit,
                                   event if scale > 0 else None, loosen * rtol, atol_vec,
                                   crossed, d, unit * f_start,
                                   _StiffMonitor() if stiff_switch else None)
        except _RkBudgetSpent as spent:
            raise SolverError(
                f"the Runge–Kutta integration used its budget of max_steps = {max_steps} steps "
                f"({limit} right-hand-side evaluations) by t = {spent.t:.6g} of "
                f"t_final = {t_final:.6g}: the flow is stiff there, or its right-hand side is "
                f"dominated by rounding (e.g. near-cancelling attention terms)") from None
        except (np.linalg.LinAlgError, FloatingPointError, OverflowError) as exc:
            raise SolverError(f"the Runge–Kutta integration failed: {exc}") from None
        T_sol = np.asarray(sol.t, dtype=float).reshape(-1) * unit
        Y = np.asarray(sol.y, dtype=float).reshape(y.size, -1)
        if sol.status == -1 or not _all_finite(Y):
            reached = T_sol[-1] if T_sol.size else t0
            if pending is not None:
                T_est, u = pending
                raise SolverError(
                    f"Σ grows without bound near T* ≈ {T_est:.10g} (± {u:.2g}) and the "
                    f"integration broke down at t ≈ {reached:.10g} before t_final = "
                    f"{t_final:.10g}: whether the blow-up precedes t_final cannot be decided")
            raise SolverError(f"the Runge–Kutta integration failed after t = {reached:.6g}: "
                              f"{sol.message}")
        ts.append(T_sol)
        ys.append(Y)
        if sol.message == "stiff":
            end = full(sol.y_events[0][0])
            raise _StiffSwitch(float(sol.t_events[0][0]) * unit, end[:d],
                               end[d:].reshape(d, d), _outputs(ts, ys, d, k, with_mean))
        if sol.status == 0:
            if T_sol.size:  # the last state returned
                _check_near_blowup(params_at, d, full(Y[:, -1]), T_sol[-1], rtol, pending,
                                   None if sol.growth is None else sol.growth / unit)
            break
        t0, y, step = sol.t_events[0][0] * unit, sol.y_events[0][0], sol.step
        if sol.message == "crossed" and stop is None:  # `crossed` chose σ: on from here
            continue
        estimate: tuple[float, float, np.ndarray] | None
        if sol.pole is not None:
            estimate = (sol.pole[0] * unit, sol.pole[1] * unit, y[k:].reshape(d, d))
        else:  # `crossed`'s blow-up, or a Sundman run's trace event
            estimate = stop or _blowup_estimate(params_at(t0), d, t0, full(y))
        if estimate is not None:
            T_est, u, cov = estimate
            if T_est + u <= t_final:  # a blow-up before t_final, beyond its uncertainty
                blowup_time, bracket = T_est, (t0, T_est + u)
                _, vec = np.linalg.eigh(0.5 * (cov + cov.T))
                direction = vec[:, -1]
                break
            pending = (T_est, u)  # after t_final (or too close to tell): follow it to t_final
        threshold *= BLOWUP_GROWTH
    t, mean, cov = _outputs(ts, ys, d, k, with_mean)
    return Trajectory(t, mean, cov, "completed" if blowup_time is None else "blowup",
                      blowup_time, "rk", direction, rtol, atol,
                      None if blowup_time is None else "singularity", None, bracket)


def _outputs(ts: list[np.ndarray], ys: list[np.ndarray], d: int, k: int,
             with_mean: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t, mean, cov) of an rk run's output blocks (the states as columns, vec Σ from row k)."""
    t = np.concatenate(ts)
    Y = ys[0] if len(ys) == 1 else np.concatenate([part.T for part in ys]).T  # time-major
    mean = Y[:d].T.copy() if with_mean else np.zeros((t.size, d))
    cov = Y[k:].T.reshape(-1, d, d)  # symmetric (`_states`), time-major: a view
    return t, mean, cov


@dataclass(frozen=True)
class _SundmanResult:
    """The fields of solve_ivp's result that `_rk_run` reads, from `_sundman_solve`, and the
    pole stop's (T_est, u) (`_PoleWatch`) when the run ended there."""

    t: np.ndarray
    y: np.ndarray
    status: int
    t_events: list[np.ndarray]
    y_events: list[np.ndarray]
    message: str
    pole: tuple[float, float] | None = None
    #: the last step's length (a first step for the run that continues from the end)
    step: float = 0.0
    #: d tr Σ/dτ at the last output when that is the run's end t1 (the stepper's last
    #: right-hand side, DOP853 evaluating f at each accepted step's end), else None
    growth: float | None = None


class _PoleWatch:
    """The pole stop (POLE_SPAN): `bracket` is called after every step of a Sundman run with the
    state y at time t and its derivative dy; it returns (T_k, u_k) once the estimates
    T_i = t_i + tr Σ_i / tr Σ̇_i of the steps since the last one with POLE_SPAN times the
    remaining time agree to u_k ≤ tol·T_k and T_k + u_k ≤ t_end (a pole after t_end is not
    where the run stops), else None. Only steps whose growth is driven by the quadratic terms
    (d tr Σ/dt > 0, 2 tr(AΣ) at most 1 − BLOWUP_QUADRATIC_SHARE of it; `linear` gives 2 tr(AΣ))
    count: any other step starts the record afresh. `loosening` is the factor of the tolerance
    schedule (SUNDMAN_LOOSEN_MAX) with r_0 the remaining time at the record's first step."""

    def __init__(self, tol: float, t_end: float,
                 linear: Callable[[float, np.ndarray], float]) -> None:
        self.tol, self.t_end, self.linear = tol, t_end, linear
        self.estimates: list[tuple[float, float]] = []  # (remaining time, T) of the record
        self.start = 0.0  # the remaining time at the record's first step (0: no record)

    def loosening(self, power: float) -> float:
        """min(SUNDMAN_LOOSEN_MAX, r_0/r)^power with r the last step's remaining time, r_0 the
        record's first; 1 without a record."""
        if not self.estimates:
            return 1.0
        return min(SUNDMAN_LOOSEN_MAX, self.start / self.estimates[-1][0]) ** power

    def bracket(self, t: float, y: np.ndarray, dy: np.ndarray,
                trace: Callable[[np.ndarray], float]) -> tuple[float, float] | None:
        s, ds = trace(y), trace(dy)
        if not (math.isfinite(s) and math.isfinite(ds) and ds > 0
                and self.linear(t, y) <= (1.0 - BLOWUP_QUADRATIC_SHARE) * ds):
            self.estimates.clear()
            return None
        r = s / ds
        T = t + r
        if not self.estimates:
            self.start = r
        far = [i for i, (ri, _) in enumerate(self.estimates) if ri >= POLE_SPAN * r]
        self.estimates.append((r, T))
        if not far:
            return None
        del self.estimates[:far[-1]]
        u = max(abs(Ti - T) for _, Ti in self.estimates) + 4 * EPS * T
        return (T, u) if u <= self.tol * T and T + u <= self.t_end else None


def _t_solve(rhs: Callable[[float, np.ndarray], np.ndarray], t0: float, t1: float,
             y0: np.ndarray, grid: np.ndarray, event: _TraceEvent | None, rtol: float,
             atol: np.ndarray,
             crossed: Callable[[float, np.ndarray, _TraceEvent], bool], d: int,
             f0: np.ndarray, stiff: _StiffMonitor | None = None) -> _SundmanResult:
    """DOP853 from (t0, y0) to t1 in t, driven step by step as solve_ivp drives it (DOP853's
    continuous extension at the grid times in [t0, t1] the outputs), on the packed state
    v = (m, Σ_ij for i ≤ j) of `_Packing` (from d = PACK_MIN_D on) with the error norm of the
    full state y (the same acceptance test as solve_ivp on y, half the stepper's arithmetic on
    vec Σ). Where tr Σ has risen past the threshold of `event` by the end of a step,
    crossed(t, y, event) is called there — True ends the run (status 1, "crossed", with
    t_events[0], y_events[0] that step's end), False goes on with the same stepper (crossed
    raises the threshold), so that a growth event costs no restart (a fresh first step and
    step-size history). status 0 when t1 is reached, −1 on failure; `step` the last step. rhs
    and crossed see full states y, and the outputs are full states, each Σ symmetric
    (`_Packing.states`). f0 = rhs(t0, y0), already evaluated: DOP853's first right-hand
    side. stiff: ends the run (status 1, "stiff", t_events[0], y_events[0] that step's end)
    when it reports the steps collapsing (`_StiffMonitor`)."""
    packing = _packing(y0.size - d * d, d)
    solver = _PackedDOP853(packing.fun(rhs), t0, packing.packed(y0), t1, rtol=rtol,
                           atol=packing.packed(atol), packing=packing, f0=packing.packed(f0))
    blocks: list[np.ndarray] = []  # the outputs of each step, (v.size, k) as sol gives them
    times = grid.tolist()  # bisect on floats: a tenth of np.searchsorted's call per step
    i = 0

    def result(status: int, message: str) -> _SundmanResult:
        t_end, y_end = (solver.t, packing.full(solver.y)[None]) if status == 1 else \
            (np.zeros(0), np.zeros((0, y0.size)))
        growth = packing.trace(solver.f) if status == 0 and i and grid[i - 1] == t1 else None
        return _SundmanResult(grid[:i].copy(), packing.states(blocks), status,
                              [np.atleast_1d(t_end)], [y_end],
                              message, step=float(solver.step_size or 0.0), growth=growth)

    if grid.size and grid[0] == t0:
        blocks.append(packing.packed(y0)[:, None])
        i = 1
    while solver.status == "running":
        message = solver.step()
        if solver.status == "failed":
            return result(-1, message or "DOP853 failed")
        j = bisect.bisect_right(times, solver.t)
        if j > i:
            blocks.append(solver.dense_output()(grid[i:j]))
            i = j
        if event is not None and packing.trace(solver.y) >= event.threshold and \
                crossed(solver.t, packing.full(solver.y), event):
            return result(1, "crossed")
        if stiff is not None and stiff(float(solver.step_size or 0.0), solver.y, solver.f):
            return result(1, "stiff")
    return result(0, "t1 reached")


class _StiffMonitor:
    """True once STIFF_STEPS consecutive steps h each had h‖f‖ < STIFF_RATIO‖y‖ (y, f the
    state and its derivative at the step's end)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, h: float, y: np.ndarray, f: np.ndarray) -> bool:
        ny, nf = float(np.linalg.norm(y)), float(np.linalg.norm(f))
        self.count = self.count + 1 if h * nf < STIFF_RATIO * ny else 0
        return self.count >= STIFF_STEPS


class _StiffSwitch(Exception):
    """DOP853 stopped where its steps collapsed: the time, the state (m, Σ) there, and the
    outputs so far (t, mean, cov)."""

    def __init__(self, t: float, mean: np.ndarray, cov: np.ndarray,
                 outputs: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
        super().__init__(t)
        self.t, self.mean, self.cov, self.outputs = t, mean, cov, outputs


class _Packing:
    """The packed coordinates v = (m, Σ_ij for i ≤ j) of a state y = (m, vec Σ) with k mean
    entries (k = 0 or d) and Σ symmetric d × d, from d = PACK_MIN_D on: v = y[pack],
    y = v[unpack]; `weight` the error-norm weight of each entry of v, √2 for Σ_ij with i < j
    (it stands for the two equal entries Σ_ij, Σ_ji of y), else 1, so that Σ_v (w e/s)² is the
    full state's Σ_y (e/s)² for errors e and scales s of y that are symmetric in Σ; `diagonal`
    the positions of Σ_ii in v. Below PACK_MIN_D, v = y (pack and unpack None, weights 1).
    `outputs` maps the entries of y to those of the stored state (v, or y itself below
    PACK_MIN_D) that give them, Σ_ij and Σ_ji both from Σ_ij with i ≤ j (`_states`).
    One per (k, d) (`_packing`)."""

    def __init__(self, k: int, d: int) -> None:
        self.n = k + d * d
        self.pack: np.ndarray | None = None
        self.unpack: np.ndarray | None = None
        self.weight = np.ones(self.n)
        self.diagonal = k + np.arange(d) * (d + 1)
        if d < PACK_MIN_D:
            self.outputs = _mirror(k, d)
            return
        rows, cols = np.triu_indices(d)
        where = np.empty((d, d), dtype=np.intp)
        where[rows, cols] = where[cols, rows] = k + np.arange(rows.size)
        self.pack = np.concatenate([np.arange(k), k + rows * d + cols])
        self.unpack = self.outputs = np.concatenate([np.arange(k), where.ravel()])
        self.weight = np.concatenate([np.ones(k), np.where(rows == cols, 1.0, math.sqrt(2.0))])
        self.diagonal = where[np.arange(d), np.arange(d)]

    def packed(self, y: np.ndarray) -> np.ndarray:
        """v of the full state y."""
        return y if self.pack is None else y[self.pack]

    def full(self, v: np.ndarray) -> np.ndarray:
        """y of the packed state v."""
        return v if self.unpack is None else v[self.unpack]

    def fun(self, rhs: Callable[[float, np.ndarray], np.ndarray]
            ) -> Callable[[float, np.ndarray], np.ndarray]:
        """The right-hand side on v of rhs on y."""
        pack, unpack = self.pack, self.unpack
        if pack is None or unpack is None:
            return rhs

        def packed(t: float, v: np.ndarray) -> np.ndarray:
            return rhs(t, v.take(unpack)).take(pack)  # (take: faster than v[unpack])
        return packed

    def trace(self, v: np.ndarray) -> float:
        """tr Σ of the packed state v."""
        return float(v.take(self.diagonal).sum())

    def states(self, blocks: list[np.ndarray]) -> np.ndarray:
        """The full states of the stored (v.size, k_i) blocks (a state per column), each Σ
        symmetric (`_states` with `outputs`)."""
        return _states(blocks, self.outputs)


@functools.lru_cache(maxsize=8)
def _packing(k: int, d: int) -> _Packing:
    """The packing of (k, d), built once."""
    return _Packing(k, d)


class _PackedDOP853(DOP853):
    """scipy's DOP853 on a packed state (`_Packing`) whose error norm is the full state's:
    the scaled errors weighted by `_Packing.weight`, their mean over the full state's n
    entries. f0 = fun(t0, y0), already evaluated, is DOP853's first right-hand side; after the
    start the steps call fun itself, without scipy's wrappers (an evaluation count and an array
    conversion per call: fun returns float64 arrays)."""

    def __init__(self, fun: Callable[[float, np.ndarray], np.ndarray], t0: float,
                 y0: np.ndarray, t_bound: float, *, rtol: float, atol: np.ndarray,
                 packing: _Packing, f0: np.ndarray) -> None:
        start = [f0]

        def first(t: float, y: np.ndarray) -> np.ndarray:  # DOP853's first call is f(t0, y0)
            return start.pop() if start else fun(t, y)
        super().__init__(first, t0, y0, t_bound, rtol=rtol, atol=atol)
        self.fun = fun
        self._inverse_weight = None if packing.pack is None else 1.0 / packing.weight
        self._to_full = math.sqrt(packing.weight.size / packing.n)

    def _estimate_error_norm(self, K: np.ndarray, h: float, scale: np.ndarray) -> float:
        if self._inverse_weight is None:
            return float(super()._estimate_error_norm(K, h, scale))
        return float(super()._estimate_error_norm(K, h, scale * self._inverse_weight)) \
            * self._to_full


def _sundman_solve(rhs: Callable[[float, np.ndarray], np.ndarray], t0: float, t1: float,
                   y0: np.ndarray, grid: np.ndarray, event: _TraceEvent, rtol: float,
                   atol: np.ndarray, pole: _PoleWatch, t_scale: float,
                   first_step: float = 0.0,
                   power: float = SUNDMAN_LOOSEN_POWER) -> _SundmanResult:
    """DOP853 from (t0, y0) to t1 in Sundman's time σ: z = (t, y),

        dz/dσ = (s_ref / s) (1, f(t, y)),   s = tr Σ(y),  s_ref = s(y0),

    the same trajectory with dt/dσ = s_ref/s: where s grows like 1/(T* − t), y grows like
    e^{σ/(T* − t0)} and the steps in σ stay steady. scipy's DOP853 stepper is driven step by
    step as solve_ivp drives it, with its events: `event` (tr Σ rising through its threshold)
    and t = t1 end the run, the grid times in (t0, t1) are outputs (DOP853's continuous
    extension at the σ where t = t_k, located by Brent's method to 4 eps as solve_ivp does), as
    is t1's when it is a grid time; after each step the pole stop (`_PoleWatch`, with tr Σ̇
    from the step's last right-hand side) may end the run. t is integrated with relative
    tolerance rtol and absolute 1e-2·rtol·t_scale (t_scale > 0: t0, or the time scale of a run
    from t0 = 0). Before every step the absolute tolerance of each entry Σ_ij rises to rtol
    times √(Σ_ii Σ_jj) at the current state (`_sundman_atol`). status: 0 when t1 is
    reached, 1 at the trace event or the pole stop (t_events[0], y_events[0] in t and y;
    `pole` set for the latter), −1 on failure; the σ-span
    2 (t1 − t0) threshold / s_ref (the length in σ of [t0, t1] while s stays below the
    threshold) bounds the run. first_step > 0: DOP853's first step in σ (dσ = dt where the run
    starts, s = s_ref: the last step of a run in t that ends there), else its own choice.
    While the pole stop's record runs (the quadratic terms driving the growth of tr Σ), each
    step's relative tolerance is rtol · `pole.loosening(power)` (SUNDMAN_LOOSEN_MAX; the
    absolute ones follow through `_sundman_atol`; t's stays rtol)."""
    s_ref = event.trace(y0)

    def f(_sigma: float, z: np.ndarray) -> np.ndarray:
        w = s_ref / event.trace(z[1:])
        out = np.empty_like(z)
        out[0] = w
        out[1:] = w * rhs(float(z[0]), z[1:])
        return out

    def level(z: np.ndarray) -> float:  # rises through 0 at the trace threshold
        return event(0.0, z[1:])

    def at_time(tk: float) -> Callable[[np.ndarray], float]:  # rises through 0 at t = tk
        def g(z: np.ndarray) -> float:
            return float(z[0]) - tk
        return g

    to_end = at_time(t1)

    times = [float(tk) for tk in grid if tk < t1]
    span = 2.0 * (t1 - t0) * min(event.threshold, math.exp(700.0)) / s_ref
    solver = DOP853(f, 0.0, np.concatenate([[t0], y0]), span, rtol=rtol,
                    atol=np.concatenate([[1e-2 * rtol * t_scale], atol]),
                    first_step=min(first_step, span) or None)
    t_out: list[float] = []
    y_out: list[np.ndarray] = []  # (y0.size, 1) each

    def result(status: int, message: str, end: np.ndarray | None = None,
               at_pole: tuple[float, float] | None = None) -> _SundmanResult:
        Y = _states(y_out, _mirror(event.k, event.d))
        if end is None:
            return _SundmanResult(np.array(t_out), Y, status, [np.zeros(0)],
                                  [np.zeros((0, y0.size))], message)
        return _SundmanResult(np.array(t_out), Y, status, [end[:1]], [end[1:][None]], message,
                              pole=at_pole)

    ends = (level, to_end)
    before = [g(solver.y) for g in ends]
    solver.rtol = np.full(y0.size + 1, rtol)  # t's entry stays rtol: its error is T*'s
    while solver.status == "running":
        step_rtol = rtol * max(1.0, pole.loosening(power))
        solver.rtol[1:] = step_rtol
        solver.atol = _sundman_atol(solver.atol, solver.y, atol, step_rtol, event.k, event.d)
        message = solver.step()
        if solver.status == "failed":
            return result(-1, message or "DOP853 failed")
        z, a, b = solver.y, solver.t_old, solver.t
        after = [g(z) for g in ends]
        rising = [(g, i) for i, (g, x, x_new) in enumerate(zip(ends, before, after, strict=True))
                  if x <= 0 <= x_new]  # solve_ivp's test for events rising through 0
        before = after
        reached = [tk for tk in times if tk <= z[0]]
        if rising or reached:
            sol = solver.dense_output()
            found = sorted([(_event_root(g, sol, a, b), i) for g, i in rising] +
                           [(_event_root(at_time(tk), sol, a, b), 2 + j)
                            for j, tk in enumerate(reached)])
            for x, i in found:
                zx = sol(x)
                if i >= 2:  # a grid time
                    t_out.append(reached[i - 2])
                    y_out.append(zx[1:, None])
                    continue
                if i == 1 and np.any(grid == t1):
                    t_out.append(t1)
                    y_out.append(zx[1:, None])
                return result(1, "trace event", zx) if i == 0 else result(0, "t1 reached")
            del times[:len(reached)]
        # every step's end, outputs or not, goes on the pole stop's record (solver.f: dz/dσ
        # there, DOP853's FSAL stage), so that the steps do not depend on the output times
        stop = pole.bracket(float(z[0]), z[1:], solver.f[1:] / solver.f[0], event.trace)
        if stop is not None:
            return result(1, "pole", z, stop)
    return result(-1, f"Sundman's time σ ran to {span:.3g} before t = {t1:.6g}")


def _sundman_atol(current: np.ndarray, z: np.ndarray, atol: np.ndarray, rtol: float, k: int,
                  d: int) -> np.ndarray:
    """The absolute tolerances of a Sundman run's next step from its state z = (t, m, vec Σ)
    (vec Σ from index k of the state): t's and m's kept, and each entry of Σ at least rtol
    times its Cauchy–Schwarz scale at the current state,

        atol_ij = max(atol_ij, rtol · √(|Σ_ii| |Σ_jj|)),

    the scale `_scaled_atol` caps the tolerances at on Σ0, kept up to date: an off-diagonal
    entry crossing zero is held to rtol relative to the variances it couples instead of to its
    own vanishing size (near a pole Σ grows along a few directions and such crossings sweep
    through the matrix), while every variance keeps its relative accuracy. About 25 % fewer
    steps towards a pole than entry-by-entry control
    (tests/test_flows.py::test_sundman_steps_hold_each_entry_to_its_cauchy_schwarz_scale)."""
    out = current.copy()
    v = np.sqrt(np.abs(z[1 + k::d + 1]))
    out[1 + k:] = np.maximum(atol[k:], rtol * np.outer(v, v).ravel())
    return out


def _event_root(g: Callable[[np.ndarray], float], sol: Callable[[float], np.ndarray], a: float,
                b: float) -> float:
    """Where g(state) crosses 0 inside the step [a, b], on its continuous extension `sol`:
    Brent's method to 4 eps, as solve_ivp locates events."""
    return float(brentq(lambda x: g(sol(x)), a, b, xtol=4 * EPS, rtol=4 * EPS))


def _finite_start(rhs: Callable[[float, np.ndarray], np.ndarray], t0: float,
                  y: np.ndarray) -> np.ndarray:
    """f(t0, y), refusing a start where the right-hand side is not finite: DOP853's first step
    size h0 ∝ ‖y‖/‖f(y)‖ is then 0 or NaN and the integration would spend its whole budget at
    t = NaN. Later overflow inside a step is the step controller's (a rejected step, a shorter
    one)."""
    f0 = rhs(t0, y)
    if not _all_finite(f0):
        raise SolverError(f"the moment right-hand side (ṁ, Σ̇) overflows float64 at t = "
                          f"{t0:.6g} (its products AΣ, VΣBΣ, VΣBm exceed about 1e308): the "
                          f"layer's terms are out of the floating-point range at this state")
    return f0


def _time_unit(y0: np.ndarray, f0: np.ndarray, t_final: float) -> float:
    """2^−k with 2^k ≥ r = ‖f0‖∞/‖y0‖∞ when r > RK_RATE_MAX, else 1: integrating in τ = t 2^k
    (dy/dτ = 2^−k f) puts the starting rate at most 1 and changes no rounding (a power of two),
    so that solve_ivp's absolute time tolerances (event location to 4·eps) stay far below the
    steps however fast the layer is. k from the binary exponents (r itself may overflow);
    SolverError when t_final·2^k leaves the float range (rates beyond float64 over t_final)."""
    size = float(np.abs(y0).max(initial=0.0))
    speed = float(np.abs(f0).max(initial=0.0))
    if size == 0 or speed == 0:
        return 1.0
    if speed <= RK_RATE_MAX * size:  # (the product may overflow to inf: then r is small)
        return 1.0
    k = math.frexp(speed)[1] - math.frexp(size)[1] + 1  # r < 2^k
    if k > 1000 or not math.isfinite(math.ldexp(t_final, k)):
        raise SolverError(f"the flow's starting rate ‖f‖/‖y‖ ≈ 2^{k} is beyond what float64 "
                          f"can integrate over t_final = {t_final:.6g}")
    return math.ldexp(1.0, -k)


def _states(blocks: list[np.ndarray], index: np.ndarray) -> np.ndarray:
    """The states of the (m, k_i) blocks (a state per column, as DOP853's continuous extension
    gives them) as one (index.size, Σ k_i) array in solve_ivp's layout, stored time-major (each
    state contiguous, so that Σ(t_1..t_k) is a (k, d, d) view): entry i of a state is entry
    index[i] of its column (`_Packing.outputs`: every Σ_ji read from Σ_ij with i ≤ j, so each
    Σ is symmetric). Gathered block by block into place from each block made time-major (one
    small copy), no joined copy of all blocks held beside the result (at d = 768 each state
    has 590 000 entries); blocks of fewer than 2^15 entries in all are joined first (at d = 8
    the per-block work costs more than the gather)."""
    rows = [block.T for block in blocks]  # (k_i, m): a state per row
    Y = np.empty((sum(row.shape[0] for row in rows), index.size))
    if len(rows) > 1 and Y.size <= 2**15:
        rows = [np.concatenate(rows)]
    start = 0
    for row in rows:
        stop = start + row.shape[0]
        np.take(np.ascontiguousarray(row), index, axis=1, out=Y[start:stop])
        start = stop
    return Y.T


@functools.lru_cache(maxsize=8)
def _mirror(k: int, d: int) -> np.ndarray:
    """The index of y = (m, vec Σ) (k mean entries) that reads every Σ_ij from Σ_min(i,j)max(i,j):
    y[index] is y with Σ replaced by its upper triangle mirrored."""
    i, j = np.divmod(np.arange(d * d), d)
    return np.concatenate([np.arange(k), k + np.minimum(i, j) * d + np.maximum(i, j)])


def trace_growth(p: Params, cov: np.ndarray) -> tuple[float, float]:
    """(d tr Σ/dt, its attention part) at Σ: 2 tr(MΣ) and 2 tr(MΣ) − 2 tr(AΣ), with
    M = A + Σ_h V_hΣB_h (Σ̇ = MΣ + ΣMᵀ); NaN or inf where they overflow."""
    with np.errstate(over="ignore", invalid="ignore"):
        growth = 2.0 * float(np.vdot(p.M(cov), cov.T))
        return growth, growth - 2.0 * float(np.vdot(p.A, cov.T))


def attention_driven(p: Params, cov: np.ndarray, share: float) -> bool:
    """Whether tr Σ grows at Σ with the attention terms driving at least `share` of it:
    d tr Σ/dt > 0 (finite) and its attention part ≥ share · d tr Σ/dt (`trace_growth`) — where
    a growth is heading for a pole rather than following the linear part."""
    return _drives(*trace_growth(p, cov), share)


def _drives(growth: float, attention: float, share: float) -> bool:
    """`attention_driven` from `trace_growth`'s pair."""
    return bool(np.isfinite(growth) and growth > 0 and attention >= share * growth)


def _blowup_estimate(p: Params, d: int, t: float, y: np.ndarray,
                     share: float = BLOWUP_QUADRATIC_SHARE, growth: float | None = None
                     ) -> tuple[float, float, np.ndarray] | None:
    """(T_est, uncertainty, Σ) when the quadratic terms drive ≥ share of the growth of tr Σ at
    (t, y), else None: T_est = t + tr Σ / (d tr Σ / dt). growth: d tr Σ/dt when known (the
    trace of a right-hand side's Σ̇ at y), else `trace_growth`'s."""
    cov = y[d:].reshape(d, d)
    if growth is None:
        growth, attention = trace_growth(p, cov)  # `attention_driven`'s test
    else:
        attention = growth - 2.0 * float(np.vdot(p.A, cov.T))
    if not _drives(growth, attention, share):
        return None
    remaining = np.trace(cov) / growth
    T_est = t + remaining
    return T_est, BLOWUP_EXTRAPOLATION * remaining + 4 * EPS * T_est, cov


def _pole_ahead(p: Params, d: int, t: float, y: np.ndarray, t_final: float,
                growth: float | None = None) -> tuple[float, float, np.ndarray] | None:
    """`_blowup_estimate` with SUNDMAN_SHARE (and growth) when its pole
    T_est = t + tr Σ/(d tr Σ/dt) lies before t_final (a run goes on in Sundman's time only
    towards a pole within reach), else None."""
    estimate = _blowup_estimate(p, d, t, y, SUNDMAN_SHARE, growth)
    return estimate if estimate is not None and estimate[0] <= t_final else None


def _check_near_blowup(params_fn: Callable[[float], Params], d: int, y_end: np.ndarray,
                       t_final: float, rtol: float, pending: tuple[float, float] | None,
                       growth: float | None = None) -> None:
    """Refuse an rk state (the last one returned, at t_final here) within reach of a blow-up:
    when the quadratic terms dominate there, T* ≈ t_final + tr Σ/(d tr Σ/dt), and Σ(t_final) is
    then known only to about rtol·T*/(T* − t_final) relative. growth: d tr Σ/dt there when
    known (the integration's last right-hand side), else computed."""
    estimate = _blowup_estimate(params_fn(t_final), d, t_final, y_end, growth=growth)
    if estimate is None:
        if pending is not None and pending[0] - pending[1] <= t_final:
            raise SolverError(f"a blow-up was estimated at T* ≈ {pending[0]:.10g} ± "
                              f"{pending[1]:.2g}, yet Σ stayed finite to t_final = "
                              f"{t_final:.10g}: the Runge–Kutta run is not consistent")
        return
    T_est = estimate[0]
    amplification = T_est / (T_est - t_final)
    if rtol * amplification > RK_NEAR_BLOWUP_RTOL:
        raise SolverError(
            f"t_final = {t_final:.10g} lies within {T_est - t_final:.3g} of a blow-up at "
            f"T* ≈ {T_est:.10g}: Σ(t) ~ 1/(T* − t) there, so the Runge–Kutta end state is known "
            f"only to a relative error of about rtol·T*/(T* − t_final) = "
            f"{rtol * amplification:.2g}; use method 'exact' or a smaller rtol")


#: layers: default largest number of layers, and the largest output (floats) kept in memory
LAYERS_DEFAULT_MAX = 1_000_000
LAYERS_MAX_FLOATS = 2**27


def layers(params: Params | Sequence[Params], gaussian: Gaussian, n_layers: int,
           tau: float, *, max_steps: int | None = None) -> Trajectory:
    """Exact discrete residual layers x⁺ = x + τ X(x) acting on N(m, Σ).

    An affine field maps Gaussians to Gaussians exactly, layer by layer (SPEC §2):

        m⁺ = (I + τM) m + τc,   Σ⁺ = (I + τM) Σ (I + τM)ᵀ,
        M = A + Σ_h V_h Σ B_h,   c = b + Σ_h V_h m.

    Overflow: a finite stack of layers has no finite-time blow-up (each layer is a finite map),
    but Σ⁺ is quartic in Σ and can leave the floating-point range. The states are then returned
    up to the last finite layer with status "blowup", blowup_time the depth n τ of the first
    layer that overflows and blowup_kind "overflow" — not "singularity", the finite-time blow-up
    of the continuous flow that `flow` reports.

    Parameters
    ----------
    params : Params or sequence of Params
        One layer for every step, or a sequence of n_layers layers (the k-th acts at depth
        k τ).
    gaussian : Gaussian
        The input N(m0, Σ0).
    n_layers : int
        The number of layers, ≥ 1.
    tau : float
        The step τ > 0 of the residual connection.
    max_steps : int, optional
        The largest n_layers accepted (default LAYERS_DEFAULT_MAX = 1 000 000); the states kept
        must also fit in LAYERS_MAX_FLOATS floats.

    Returns
    -------
    Trajectory
        One state per layer at the times 0, τ, ..., n_layers τ (method "layers", no dense
        output), or up to the last finite layer with status "blowup".

    Raises
    ------
    InvalidInputError
        When n_layers or max_steps is not an integer ≥ 1, tau is not a positive finite time,
        params is neither a Params nor a sequence of n_layers Params, a layer and the Gaussian
        live in different R^d, or a layer holds NaN or Inf.
    SolverError
        Before any work, when n_layers exceeds max_steps or the states would not fit in
        LAYERS_MAX_FLOATS floats; when the depths n τ overflow float64.

    See Also
    --------
    flow : the continuous-depth limit τ → 0.
    Trajectory : the result.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".
    .. [2] B. Geshkovski, C. Letrouit, Y. Polyanskiy, P. Rigollet, "A mathematical perspective
       on Transformers", arXiv:2312.10794, 2023.

    Examples
    --------
    With A = −1 and τ = 1/2, each layer halves the mean and quarters the variance:

    >>> from riccati_tf import Gaussian, Params, layers
    >>> tr = layers(Params(-1.0), Gaussian([1.0], [[1.0]]), n_layers=3, tau=0.5)
    >>> tr.t
    array([0. , 0.5, 1. , 1.5])
    >>> tr.cov[:, 0, 0]
    array([1.      , 0.25    , 0.0625  , 0.015625])

    Attention makes Σ⁺ quartic in Σ; the state overflows after a few layers:

    >>> tr = layers(Params(0.0, B=1.0, V=1.0), Gaussian([0.0], [[1.0]]), n_layers=20, tau=1.0)
    >>> tr.status, tr.blowup_kind, tr.blowup_time
    ('blowup', 'overflow', 7.0)
    """
    n_layers = as_count("n_layers", n_layers)
    tau = as_time("tau", tau)
    limit = LAYERS_DEFAULT_MAX if max_steps is None else as_count("max_steps", max_steps)
    if n_layers > limit:
        raise SolverError(f"n_layers = {n_layers} exceeds max_steps = {limit} layers")
    layer_at: Callable[[int], Params]
    if isinstance(params, Params):
        single = params
        distinct = [single]
        layer_at = lambda _k: single  # noqa: E731
    else:
        plist = list(params) if isinstance(params, Sequence) else None
        if plist is None or len(plist) != n_layers:
            raise InvalidInputError("params must be a Params or a sequence of n_layers = "
                                    f"{n_layers} Params")
        distinct = list({id(p): p for p in plist}.values())
        layer_at = plist.__getitem__
    for p in distinct:
        check_dims(p, gaussian)
        if not _finite_params(p):
            raise InvalidInputError("params holds NaN or Inf entries")
    d = gaussian.d
    if (n_layers + 1) * (d * d + d) > LAYERS_MAX_FLOATS:
        raise SolverError(f"{n_layers + 1} states of dimension {d} need "
                          f"{8 * (n_layers + 1) * (d * d + d) / 2**30:.3g} GiB, more than the "
                          f"{8 * LAYERS_MAX_FLOATS / 2**30:.3g} GiB kept in memory")
    m, S = gaussian.mean.copy(), gaussian.cov.copy()
    means, covs = [m], [S]
    status, t_blow = "completed", None
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(n_layers):
            p = layer_at(k)
            F = np.eye(d) + tau * p.M(S)
            m = F @ m + tau * p.c(m)
            S = F @ S @ F.T
            S = 0.5 * (S + S.T)
            if not (np.all(np.isfinite(S)) and np.all(np.isfinite(m))):
                status, t_blow = "blowup", (k + 1) * tau
                break
            means.append(m)
            covs.append(S)
    t = tau * np.arange(len(means))
    if not (math.isfinite(float(t[-1])) and (t_blow is None or math.isfinite(t_blow))):
        raise SolverError("the layer depths n τ overflow float64")
    return _guard(Trajectory(t, np.array(means), np.array(covs), status, t_blow, "layers",
                             blowup_kind=None if t_blow is None else "overflow"))
