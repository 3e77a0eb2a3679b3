"""A steering plan: the controls t ↦ Params on [0, t_final] steering N(m0, Σ0) to N(m1, Σ1),
verified by integrating the moment equations (SPEC §2) piece by piece (`ControlPlan`)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ...display import html_table, latex_matrix, number, repr_number
from ...empirical.particles import ParticleRun, simulate
from ...errors import InvalidInputError, SolverError
from ...flows.integrate import Trajectory, flow
from ...state.params import Gaussian, Params
from ...state.validation import as_array, as_count, as_matrix, as_time, as_vector
from .constants import (
    _DOP853_EVALUATIONS,
    _TINY,
    GROWTH_STEP,
    MAX_SUBINTERVALS,
    VERIFY_ATOL,
    VERIFY_MAX_STEPS,
    VERIFY_RTOL,
)
from .geometry import Transport, _norm, _ratio
from .pieces import ConstantPiece, Frame, Piece, _exponent, _mean_exponent, _mean_scale

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from ..lie import Accessibility

__all__: list[str] = []  # ControlPlan is documented as riccati_tf.ControlPlan


def _error(mean: np.ndarray, cov: np.ndarray, target_mean: np.ndarray, target_cov: np.ndarray,
           mean_scale: tuple[float, int]) -> float:
    return max(_ratio(_norm(mean - target_mean), mean_scale),
               _ratio(_norm(cov - target_cov), _norm(target_cov)))


def terminal_error(mean: ArrayLike, cov: ArrayLike, start: Gaussian, target: Gaussian) -> float:
    """max(‖m − m1‖ / s_m, ‖Σ − Σ1‖_F / ‖Σ1‖_F) with s_m = max(‖m0‖, ‖m1‖, ‖Σ0‖^½, ‖Σ1‖^½):
    the covariance relative to the target's, the mean in the unit of the problem's largest
    mean or spread (each absolute where its scale is 0). Norms of arrays scaled by powers of
    two: the same at every magnitude."""
    d = target.d
    mean, cov = as_vector("mean", mean, d), as_matrix("cov", cov, d)
    with np.errstate(over="ignore", invalid="ignore"):
        return _error(mean, cov, target.mean, target.cov, _mean_scale(start, target))


@dataclass(frozen=True, eq=False)
class ControlPlan:
    """Controls t ↦ Params on [0, t_final] steering N(m0, Σ0) to N(m1, Σ1).

    Under the controls the moments follow

        ṁ = (A + V) m + V Σ B m + b,   Σ̇ = AΣ + ΣAᵀ + VΣBΣ + ΣBᵀΣVᵀ,

    from (m0, Σ0) at depth 0 to (m1, Σ1) at depth t_final (within `tolerance`, checked by
    `verify`). `params_at(t)` gives the layer at depth t, `integrate()` the moment trajectory
    (piece by piece, never across a breakpoint), `plot()` the eigenvalues of Σ(t) along it,
    `particles(x0, ...)` the plan applied to a token cloud; `T` is a read-only alias of
    t_final. Made by `steer`.

    Parameters
    ----------
    start : Gaussian
        N(m0, Σ0).
    target : Gaussian
        N(m1, Σ1).
    t_final : float
        The depth T of the plan.
    controls : str
        The configuration of `lie.CONFIGURATIONS` whose controls the plan uses.
    route : {"polar", "attention", "shooting"}
        "polar": affine pieces A = log P/τ1 then A = log Q/τ2; "attention": tracking attention,
        V constant, B(t) = Σ(t)⁺R; "shooting": piecewise-constant controls found numerically.
    pieces : tuple
        The pieces in time order (each has t0, t1 and params(t)).
    residual : float
        The terminal relative error found by `verify()` when the plan was made.
    tolerance : float
        The bound the residual was checked against.
    success : bool
        residual ≤ tolerance.
    message : str
        What was done (and "FAILED: ..." when the verification failed).
    fixed : mapping of str to ndarray
        The parameters held constant in depth.
    transport : Transport, optional
        Φ1 with Φ1 Σ0 Φ1ᵀ = Σ1 (constructive routes).
    accessibility : Accessibility, optional
        The Lie-bracket rank test at the start (shooting route).

    Raises
    ------
    None
        Built by `steer`; its methods raise InvalidInputError for a depth outside [0, t_final]
        or bad arguments, and SolverError when the integration fails or spends its budget.

    See Also
    --------
    steer : makes the plan.
    flow : integrates the moment equations for given parameters.
    accessibility_rank : the Lie-algebra rank test of the shooting route.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §3 "Rank invariance".
    .. [2] riccati_tf theory, SPEC §4 "Reachability (time-varying controls)".
    .. [3] V. Jurdjevic, "Geometric Control Theory", Cambridge University Press, 1997.

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf import Gaussian, steer
    >>> start = Gaussian(np.zeros(1), np.eye(1))
    >>> target = Gaussian(np.array([1.0]), np.array([[4.0]]))
    >>> plan = steer(start, target, 1.0)
    >>> plan.route, plan.success, plan.breakpoints
    ('polar', True, array([0. , 0.5, 1. ]))
    >>> traj = plan.integrate()
    >>> np.allclose(traj.mean[-1], target.mean), np.allclose(traj.cov[-1], target.cov)
    (True, True)
    >>> np.round(plan.params_at(0.25).A, 4)
    array([[1.3863]])
    """

    start: Gaussian
    target: Gaussian
    t_final: float
    controls: str
    route: str
    pieces: tuple
    residual: float
    tolerance: float
    success: bool
    message: str
    fixed: Mapping[str, np.ndarray]
    transport: Transport | None = None
    accessibility: Accessibility | None = None

    @property
    def T(self) -> float:
        """Alias of t_final."""
        return self.t_final

    def __repr__(self) -> str:
        """The plan without its arrays."""
        return (f"ControlPlan(route={self.route!r}, controls={self.controls!r}, d={self.start.d}, "
                f"t_final={repr_number(self.t_final)}, pieces={len(self.pieces)}, "
                f"residual={repr_number(self.residual)}, success={self.success})")

    def _repr_html_(self) -> str:
        rows = [("route", self.route), ("controls", self.controls), ("d", self.start.d),
                ("t_final", number(self.t_final)), ("residual", number(self.residual)),
                ("tolerance", number(self.tolerance)), ("success", self.success),
                ("fixed", ", ".join(sorted(self.fixed)) or "none")]
        rows += [(f"piece {k}", f"{_piece_kind(p)} on [{number(p.t0)}, {number(p.t1)}]")
                 for k, p in enumerate(self.pieces)]
        return html_table("ControlPlan", [*rows, ("message", self.message)])

    def _repr_latex_(self) -> str:
        """The pieces as a case distinction in t (a constant piece by its drift A when d ≤
        LATEX_MAX_D)."""
        cases = [rf"{_piece_latex(p)} & {number(p.t0)} \le t < {number(p.t1)}"
                 for p in self.pieces]
        return r"$\theta(t) = \begin{cases}" + r" \\ ".join(cases) + r"\end{cases}$"

    @property
    def breakpoints(self) -> NDArray[np.float64]:
        """0 = t_0 < t_1 < … < t_n = t_final, the ends of the pieces."""
        return np.array([p.t0 for p in self.pieces] + [self.pieces[-1].t1])

    def params_at(self, t: float) -> Params:
        """The layer parameters at depth t ∈ [0, T] (right-continuous at breakpoints)."""
        t = as_time("t", t, allow_zero=True)
        if t > self.t_final * (1 + 1e-12):
            raise InvalidInputError(f"t must lie in [0, t_final] = [0, {self.t_final}], got {t}")
        k = int(np.searchsorted(self.breakpoints[1:-1], t, side="right"))
        return self.pieces[k].params(t)

    def integrate(self, *, rtol: float = VERIFY_RTOL, atol: float = VERIFY_ATOL,
                  points_per_piece: int = 21, max_steps: int = VERIFY_MAX_STEPS) -> Trajectory:
        """`flow(…, method="rk")` piece by piece (never stepping across a breakpoint), each piece
        cut into sub-intervals on which ‖Σ‖ changes by at most e^GROWTH_STEP (bound: the
        piece's `rate`), each integrated in a `Frame` fitted to
        its starting state: atol is relative to the covariance there (and to the mean scale s_m
        of `terminal_error`), so tiny and huge states are resolved alike. points_per_piece:
        output times per piece.
        The trajectory holds the output times and the sub-intervals' ends. SolverError when
        the integration fails, leaves the PSD cone or spends its budget (MAX_SUBINTERVALS
        sub-intervals; max_steps DOP853 steps in all, a step of a tracking piece counting as
        its `cost` = 5)."""
        return self._run(rtol, atol, points_per_piece, max_steps)[2]

    def plot(self, ax: Any = None) -> Axes:
        """The eigenvalues of Σ(t) along the steered trajectory, the target's marked at T.

        `riccati_tf.io.plots.plot_covariance` of `integrate()`: the r = rank Σ0 largest
        eigenvalues of Σ(t) on a log scale (rank invariance, SPEC §3: rank Σ1 = r), the r
        largest of Σ1 as crosses (×) at t = T, one in the colour of each curve, and the
        breakpoints between the pieces as dotted vertical lines. Like pandas' ``.plot()``: into
        `ax`, else into a new pyplot figure (``plan.plot(); plt.show()`` works in a script).

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            An Axes to draw into (nothing global changes); None (default): a new pyplot figure
            (`riccati_tf.io.figures.pyplot_axes`).

        Returns
        -------
        matplotlib.axes.Axes
            The Axes drawn into.

        Raises
        ------
        SolverError
            When `integrate` fails, leaves the PSD cone or spends its budget.

        See Also
        --------
        integrate : the trajectory drawn.
        riccati_tf.io.plots.plot_covariance : the drawing.

        References
        ----------
        .. [1] riccati_tf theory, SPEC §4 "Reachability (time-varying controls)".

        Examples
        --------
        Steering N(0, 1) to N(1, 4) on [0, 1]: one curve, ending at the cross at 4.

        >>> import numpy as np
        >>> from riccati_tf import Gaussian, steer
        >>> start = Gaussian(np.zeros(1), np.eye(1))
        >>> plan = steer(start, Gaussian(np.ones(1), 4 * np.eye(1)), 1.0)
        >>> ax = plan.plot()
        >>> [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")]
        ['λ1(Σ), final 4', 'target λ(Σ1) = 4']
        """
        from ...io.figures import pyplot_axes
        from ...io.plots import plot_covariance

        ax = pyplot_axes(ax)
        for t in self.breakpoints[1:-1]:
            ax.axvline(t, color="0.6", ls=":", lw=1)
        plot_covariance(self.integrate(), ax=ax, target=self.target.cov,
                        title=f"steering: {self.route} route, controls {self.controls}")
        return ax

    def verify(self, *, rtol: float = VERIFY_RTOL, atol: float = VERIFY_ATOL,
               max_steps: int = VERIFY_MAX_STEPS) -> float:
        """`terminal_error` of `integrate()`: max(‖m(T) − m1‖ / s_m, ‖Σ(T) − Σ1‖ / ‖Σ1‖),
        evaluated in the last frame (no rounding of tiny covariances into subnormals)."""
        frame, end, _ = self._run(rtol, atol, 2, max_steps)
        target = frame.gaussian(self.target)
        s_m = _mean_scale(self.start, self.target)
        with np.errstate(over="ignore", invalid="ignore"):
            return _error(end.mean, end.cov, target.mean, target.cov, (s_m[0], s_m[1] - frame.f))

    def _run(self, rtol: float, atol: float, points_per_piece: int,
             max_steps: int) -> tuple[Frame, Gaussian, Trajectory]:
        """(the last frame, the final state in it, the trajectory in the original units)."""
        max_steps = as_count("max_steps", max_steps)
        rtol = as_time("rtol", rtol, maximum=0.5)
        atol = as_time("atol", atol, maximum=0.5)
        n_points = as_count("points_per_piece", points_per_piece, minimum=2, maximum=10_001)
        tol = max(atol * math.exp(-GROWTH_STEP), _TINY)  # relative to the smallest ‖Σ‖ there
        f = _mean_exponent(self.start, self.target)
        frame, state = Frame(0, 0), self.start
        ts: list[np.ndarray] = []
        means: list[np.ndarray] = []
        covs: list[np.ndarray] = []
        n_subs = [max(math.ceil(min(p.rate * (p.t1 - p.t0) / GROWTH_STEP, 1e18)), 1)
                  for p in self.pieces]
        if sum(n_subs) > MAX_SUBINTERVALS:
            raise SolverError(f"verifying the plan needs {sum(n_subs)} sub-intervals (the "
                              f"covariance changes by about e^{sum(n_subs) * GROWTH_STEP:.3g}), "
                              f"more than MAX_SUBINTERVALS = {MAX_SUBINTERVALS}")
        spent = [0]  # right-hand-side evaluations so far, each weighted by its piece's cost
        for piece, n_sub in zip(self.pieces, n_subs, strict=True):
            cuts = np.linspace(piece.t0, piece.t1, n_sub + 1)
            outputs = np.linspace(piece.t0, piece.t1, n_points)
            for a, b in itertools.pairwise(cuts):
                new = Frame(frame.e + _exponent(_norm(state.cov), 0), f)
                state = Gaussian(np.ldexp(state.mean, frame.f - f),
                                 np.ldexp(state.cov, frame.e - new.e))
                frame = new
                grid = np.concatenate([[a], outputs[(outputs > a) & (outputs < b)], [b]])
                left = max_steps - spent[0] // _DOP853_EVALUATIONS
                if left <= 0:
                    raise SolverError(f"verifying the plan spent its budget of max_steps = "
                                      f"{max_steps} DOP853 steps by t = {a:.6g}")
                traj = self._flow(piece, frame, state, a, grid - a, rtol, tol, left, spent)
                keep = slice(1, None) if ts else slice(None)
                with np.errstate(over="ignore", under="ignore"):
                    ts.append(a + traj.t[keep])
                    means.append(np.ldexp(traj.mean[keep], frame.f))
                    covs.append(np.ldexp(traj.cov[keep], frame.e))
                state = self._end(traj, b)
        t, mean, cov = np.concatenate(ts), np.concatenate(means), np.concatenate(covs)
        if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(cov))):
            raise SolverError("the plan's trajectory leaves the float64 range")
        return frame, state, Trajectory(t, mean, cov, "completed", None, "rk", None, rtol, atol)

    @staticmethod
    def _flow(piece: Piece, frame: Frame, state: Gaussian, t0: float, grid: np.ndarray,
              rtol: float, atol: float, max_steps: int, spent: list[int]) -> Trajectory:
        """One sub-interval [t0, t0 + grid[-1]] of a piece, integrated in `frame` with the depth
        measured in units 2^g ≈ the sub-interval's length (so that any T is integrated alike);
        the returned times are in the original units. spent[0] counts the evaluations."""
        frame = replace(frame, g=math.frexp(grid[-1])[1])
        if isinstance(piece, ConstantPiece):
            p = piece.layer
            assert p.B is not None and p.V is not None and p.b is not None  # Params fills them
            layer = frame.params(p.A, p.B, p.V, p.b)

            def fn(s: float) -> Params:
                spent[0] += piece.cost
                return layer
        else:
            def fn(s: float) -> Params:
                spent[0] += piece.cost
                return frame.params(*piece.arrays(t0 + math.ldexp(s, frame.g)))
        grid = np.ldexp(grid, -frame.g)
        try:
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # flow checks
                traj = flow(fn, state, grid[-1], method="rk", rtol=rtol, atol=atol, t_eval=grid,
                            max_steps=max_steps)
        except InvalidInputError as exc:  # raised by the plan's own parameters
            raise SolverError(f"the plan cannot be integrated from t = {t0:.6g}: {exc}") from exc
        if traj.status != "completed":
            assert traj.blowup_time is not None  # set with the status "blowup"
            raise SolverError(f"the plan's covariance blew up at t = "
                              f"{t0 + math.ldexp(traj.blowup_time, frame.g):.6g}")
        return replace(traj, t=np.ldexp(traj.t, frame.g))

    @staticmethod
    def _end(traj: Trajectory, t: float) -> Gaussian:
        try:
            return traj.gaussian(-1)
        except InvalidInputError as exc:
            raise SolverError(f"the integrated state at t = {t:.6g} is not a Gaussian ({exc}): "
                              f"the plan cannot be verified") from exc

    def particles(self, x0: ArrayLike, *, steps_per_piece: int, method: str = "rk4",
                  keep_particles: bool = False, backend: str = "numpy",
                  device: str | None = None) -> ParticleRun:
        """The plan applied to a token cloud x0 (N, d) with `empirical.particles.simulate`
        (true softmax attention), piece by piece so that fixed steps never straddle a breakpoint.
        Returns the concatenated run; `particles` holds the final cloud only when keep_particles
        (shape (1, N, d)). backend/device as in `simulate`."""
        steps = as_count("steps_per_piece", steps_per_piece)
        ts: list[np.ndarray] = []
        means: list[np.ndarray] = []
        covs: list[np.ndarray] = []
        x = as_array("x0", x0, ndim=2)
        if x.shape[1] != self.start.d:
            raise InvalidInputError(f"x0 must be an (N, d) cloud with d = {self.start.d}, got "
                                    f"shape {x.shape}")
        for k, piece in enumerate(self.pieces):
            def fn(s: float, piece: Piece = piece) -> Params:
                return piece.params(piece.t0 + s)

            run = simulate(fn, x, piece.t1 - piece.t0, n_steps=steps, method=method,
                           keep_particles=True, backend=backend, device=device)
            assert run.particles is not None  # kept: keep_particles=True
            x = run.particles[-1]
            sl = slice(None) if k == 0 else slice(1, None)
            ts.append(piece.t0 + run.t[sl])
            means.append(run.mean[sl])
            covs.append(run.cov[sl])
        return ParticleRun(np.concatenate(ts), np.concatenate(means), np.concatenate(covs),
                           x.shape[0], method, x[None] if keep_particles else None,
                           backend=run.backend)


def _piece_kind(piece: Piece) -> str:
    return "constant" if isinstance(piece, ConstantPiece) else "tracking attention"


def _piece_latex(piece: Piece) -> str:
    """A constant piece as its drift A and bias b (attention noted when present), a tracking
    piece as B(t) = Σ(t)⁺R."""
    if not isinstance(piece, ConstantPiece):
        return r"\text{tracking: } B(t) = \Sigma(t)^{+} R"
    M = latex_matrix(piece.layer.A)
    attention = r",\ \text{attention}" if any(np.any(V) and np.any(B)
                                                for V, B in piece.layer.heads or ()) else ""
    b = piece.layer.b
    assert b is not None  # Params fills b at construction
    bias = "" if M is None or not np.any(b) else rf",\ b = {latex_matrix(b[:, None])}"
    return (r"\text{constant}" if M is None else rf"A = {M}") + bias + attention


def _finish(plan: ControlPlan) -> ControlPlan:
    residual = plan.verify()
    return replace(plan, residual=residual, success=residual <= plan.tolerance)


def _report(plan: ControlPlan) -> ControlPlan:
    """The plan, its message saying FAILED with the residual when verification failed (e.g. a
    tracking route whose open-loop B(t) amplifies integration errors, as Σ(t)⁻¹ does for an
    ill-conditioned Σ with an imposed V)."""
    if plan.success:
        return plan
    return replace(plan, message=plan.message + f"; FAILED: terminal relative error "
                                                f"{plan.residual:.3g} > tolerance "
                                                f"{plan.tolerance:g}")
