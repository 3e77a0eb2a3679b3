"""The result of a flow (SPEC §2): `Trajectory`, the states N(m(t), Σ(t)) at the output times
with the status, the blow-up time and the dense output between them, and `State`, one state (or
k of them) read from it.

`_guard` is the check every method's trajectory passes before it is returned: finite states
only, and a blow-up with a finite time.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, NamedTuple, SupportsIndex, overload

import numpy as np
import numpy.typing as npt

from ..display import html_table, number
from ..errors import InvalidInputError, SolverError
from ..state.params import Gaussian, Params
from ..state.schedule import all_finite as _all_finite
from ..state.validation import as_array, psd_rank

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from ..stability.equilibria import Equilibrium
    from .dense import _ExactDense
    from .rk.dense import _RkDense

__all__ = ["State", "Trajectory"]  # the constants: riccati_tf.flows.integrate

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
