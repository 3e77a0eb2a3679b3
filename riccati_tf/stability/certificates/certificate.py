"""The certificate of `certify`: where Σ(t) goes from Σ0 and the evidence for it (SPEC §6).

`Certificate` stores the regime (REGIMES), the equilibrium Σ* of
F(Σ) = AΣ + ΣAᵀ + Σ_h(V_hΣB_hΣ + ΣB_hᵀΣV_hᵀ) with its residual, the linearisation L at Σ*, a
Lyapunov matrix P ≻ 0 with LᵀP + PL = −Q, the decay rate, T* and the blow-up direction, the
evidence of an integration (horizon, final state, basin level) and the tolerances of numerical
premises; `Certificate.check()` re-decides them (`verification`). `_converged` builds the
converges/collapses certificates with their local Lyapunov evidence (`local`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import LinAlgError

from ...display import Markup, html_table, latex_matrix, number, repr_number
from ...errors import InvalidInputError
from ...flows.integrate import flow
from ...io.htmlmath import text_with_math
from ...state.params import Gaussian, Params
from ..equilibria import Equilibrium
from ..equilibria.coords import sym_basis
from ..equilibria.linearization import linearization_matrix
from ..equilibria.scales import drift_spectrum
from ..riccati import AXIS_RTOL
from .blowup import _horizon
from .constants import BASIN_SAFETY
from .local import _Local, _local, _zero_equilibrium
from .verification import _verify

if TYPE_CHECKING:
    import control
    from matplotlib.axes import Axes

    from ...flows.integrate import Trajectory

__all__: list[str] = []  # Certificate is documented as riccati_tf.Certificate

#: `Certificate.plot` of a converging or collapsing flow: the window ends once the distance to Σ*
#: has fallen by this factor (in time ln(SETTLE_FACTOR)/rate when the certificate has a rate)
SETTLE_FACTOR = 1e6
#: ... or at SETTLE_SPAN times the time at which it has fallen 100-fold, if that comes first: an
#: algebraic approach (‖Σ(t) − Σ*‖ ~ 1/t, "psd_marginal") takes ~1e6 times longer to fall 1e6-fold
SETTLE_SPAN = 5.0
#: ... of a bounded flow: this many of the longest periods 2π/|Im λ(A)| (eigenvalues on the
#: imaginary axis) or time constants 1/|Re λ(A)| (the others)
BOUNDED_PERIODS = 3.0
#: ... the times drawn (equally spaced; before a blow-up, `io.plots.blowup_grid`)
PLOT_POINTS = 201


@dataclass(frozen=True, eq=False)
class Certificate:
    """Where Σ(t) goes from Σ0 under a time-invariant layer, and the evidence for it.

    The answer of `certify` for the covariance flow (SPEC §5–§6)

        Σ̇ = A Σ + Σ Aᵀ + Σ_h (V_h Σ B_h Σ + Σ B_hᵀ Σ V_hᵀ),      Σ(0) = Σ0,

    one of REGIMES, with what makes it checkable: the equilibrium and its residual, the
    linearisation L in orthonormal symmetric coordinates (|h| = ‖H‖_F), a Lyapunov matrix
    P ≻ 0 with Lᵀ P + P L = −Q, the decay rate, T* and the singular direction of a blow-up, and
    the tolerances of any premise decided in floating point. `check()` re-verifies all of it
    from the stored matrices alone; `certify` returns only certificates that pass it. The stored
    Σ*, rate and T* are floating-point values whether or not the conclusion is exact.

    Parameters
    ----------
    regime : str
        One of REGIMES: "converges" (Σ(t) → Σ* ≠ 0), "collapses" (Σ(t) → 0), "blows_up"
        (Σ(t) diverges at a finite T*), "grows" (unbounded as t → ∞ without finite-time
        blow-up), "bounded" (λ_max(Σ(t)) ≤ `bound` for every t ≥ 0, A Lyapunov stable but not
        Hurwitz: marginally stable, no convergence claimed) or "undetermined" (no theorem
        applies and the numerical evidence is not conclusive).
    equilibrium : Equilibrium or None
        Σ* (converges / collapses), else None.
    lyapunov : (n_s, n_s) ndarray or None
        P ≻ 0 with Lᵀ P + P L = −Q in orthonormal symmetric coordinates, n_s = d(d+1)/2; None
        where no local certificate is given. For "bounded" the (d, d) witness S ≻ 0 with
        AᵀS + SA ⪯ 0, verified in exact rational arithmetic and stored rounded to float64
        (exactly for S = I and integer S; `check()` re-derives the rational S from A):
        tr(SΣ(t)) never increases.
    rate : float or None
        Decay rate −max Re λ(L) (or 2 min Re λ(A) from the closed form) for converges /
        collapses; the exponential growth rate for a numerical "grows"; None otherwise, and None
        for "psd_marginal", whose collapse is algebraic, ‖Σ(t)‖₂ = O(1/t)
        (≤ κ²/(λ_min(G) t) for G ≻ 0, κ = sup_t ‖e^{At}‖₂), not exponential.
    blowup_time : float or None
        T* for blows_up, else None.
    exact : bool
        True: a SPEC §5 theorem whose every premise was decided in exact rational arithmetic on
        the data as given. False: premises decided with tolerances, or numerical evidence.
    global_ : bool
        The conclusion holds for every Σ0 ≻ 0, not just this one (only for exact=True).
    reason : str
        The argument in words: the theorem and its premises, or the numerical evidence.
    params : Params
        The layer.
    cov0 : (d, d) ndarray
        Σ0 (read-only).
    mean0 : (d,) ndarray
        m0 (read-only), stored for `linearization`; the regime concerns Σ only.
    theorem : str, optional
        The premise `check()` re-verifies: "psd_hurwitz", "psd_marginal", "psd_gramian_pd",
        "psd_gramian_singular", "nsd_unstable_range", "nsd_threshold", "closed_form_root",
        "zero", "static" (A = 0 and no attention term: Σ(t) = Σ0), "lyapunov_stable" (the
        bounded regime), "lyapunov_basin" (general V: an implicitly integrated path into a
        certified basin of an equilibrium, `basin`) or "numerical" (default).
    lyapunov_rhs : (n_s, n_s) ndarray or None, optional
        Q of the Lyapunov equation (Q ≻ 0); for "bounded" the (d, d) Q = −(AᵀS + SA) ⪰ 0.
    operator : (n_s, n_s) ndarray or None, optional
        L, the linearisation at Σ* in orthonormal symmetric coordinates.
    blowup_direction : (d,) ndarray or None, optional
        Scalar V (blows_up): the unit vector e^{AT*}L0v/‖·‖ (S(T*)v = 0) along which Σ(t)
        diverges at T*. None for general V: there the top eigenvector of Σ(t) keeps turning up
        to T* (1 − |cos ∠| of 1e-3 to 4e-2 between the states at 1e8- and 1e12-fold growth of
        tr Σ on random layers), so no state an integration reaches states the limit to a
        precision `check()` could re-decide; `flow`'s Trajectory.blowup_direction gives the
        direction at its last state.
    threshold : float or None, optional
        λ_max(W∞Σ0) for "nsd_threshold" (W∞ with Aᵀ W∞ + W∞ A + |G| = 0).
    horizon : float or None, optional
        End time of the integration used as evidence.
    final_cov : (d, d) ndarray or None, optional
        Σ at `horizon`.
    basin : float or None, optional
        Level ρ of the certified sublevel set {h : hᵀ P h ≤ ρ} around Σ* holding final_cov; for
        a collapse certified without `lyapunov`, the level of {Σ ⪰ 0 : tr(PΣ) < ρ} with
        AᵀP + PA = −I in which tr(PΣ) decreases (`check()` recomputes P and ρ).
    kantorovich_radius : float or None, optional
        Radius around the stored Σ* in which an exact equilibrium exists (Newton–Kantorovich).
    tolerance : dict of str to float, or None, optional
        For a numerical (exact=False) certificate, every tolerance (name → value) that decided
        it: the premises' of a scalar-V theorem (`default_tolerance`: sign_rtol, axis_rtol,
        semisimple_rtol, rank_rtol, singular_rcond, range_rtol, threshold_rtol and, for V scalar
        only within SCALAR_RTOL, scalar_rtol), and those of numerical evidence
        (integration_rtol and integration_atol of the integration, blowup_rtol of its bracket
        of a general-V T*, implicit_rtol of its Rodas4 continuation where DOP853's steps
        collapse, close_rtol, basin_safety, growth_factor, and blowup_check_rtol for a
        blow-up; an "undetermined" certificate with an integration has them too; "bounded" is
        always exact); `check()` re-decides the claims
        with the same values and refuses any other (an empty, partial, negative, NaN or unknown
        tolerance). None for an exact certificate, every premise of which `check()` re-decides
        in rational arithmetic, and for an "undetermined" one that used none.
    bound : float or None, optional
        "bounded" only: λ_max(Σ(t)) ≤ bound for every t ≥ 0, bound = λ_max(SΣ0)/λ_min(S)
        (≤ cond(S) λ_max(Σ0)) from Σ(t) ⪯ e^{At}Σ0e^{Aᵀt} ⪯ λ_max(SΣ0) S⁻¹ (`bounded`), stated
        (1 + BOUND_RTOL/2) above its floating-point value and checked to lie above the exact
        value (in rational arithmetic, or for S = I above λ_max(Σ0) by the eigensolver's
        backward error).
    path_error : float or None, optional
        Theorem "lyapunov_basin" only: the error estimate ε of final_cov, the implicitly
        integrated Σ(horizon) (`basin`: PATH_SAFETY times the distance between runs at two
        tolerances); the ball of radius ε around final_cov lies in the certified basin
        {‖Σ − Σ̂‖_P² ≤ basin} of the exact equilibrium near Σ̂.

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field: a certificate is immutable.
    InvalidInputError
        From `linearization()` when the certificate carries no equilibrium.

    See Also
    --------
    certify : computes the certificate.
    Certificate.check : re-verifies it from its stored matrices.
    riccati_tf.equilibria : the equilibria Σ* and their stability.
    riccati_tf.stability.riccati.lyapunov_function : the Lyapunov matrix P.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".
    .. [2] riccati_tf theory, SPEC §6 "Certificates".

    Examples
    --------
    A scalar-value layer that converges to Σ* = diag(2, 4) from every Σ0 ≻ 0, with a local
    Lyapunov certificate at Σ*:

    >>> import numpy as np
    >>> from dataclasses import replace
    >>> from riccati_tf import Gaussian, Params, certify
    >>> p = Params(np.diag([1.0, 2.0]), B=0.5 * np.eye(2), V=-np.eye(2))
    >>> c = certify(p, Gaussian(np.zeros(2), np.eye(2)))
    >>> c
    Certificate(regime='converges', exact=True, global_=True, theorem='psd_gramian_pd', d=2,
                rate=2, T*=None, rank Σ*=2)
    >>> c.equilibrium.residual < 1e-12, c.lyapunov.shape, c.lyapunov_min_eig > 0
    (True, (3, 3), True)
    >>> c.check()
    True

    A tampered certificate fails its check:

    >>> replace(c, lyapunov=-c.lyapunov).check()
    False
    """

    regime: str
    equilibrium: Equilibrium | None
    lyapunov: NDArray[np.float64] | None
    rate: float | None
    blowup_time: float | None
    exact: bool
    global_: bool
    reason: str
    params: Params
    cov0: NDArray[np.float64]
    mean0: NDArray[np.float64]
    theorem: str = "numerical"
    lyapunov_rhs: NDArray[np.float64] | None = None
    operator: NDArray[np.float64] | None = None
    blowup_direction: NDArray[np.float64] | None = None
    threshold: float | None = None
    horizon: float | None = None
    final_cov: NDArray[np.float64] | None = None
    basin: float | None = None
    kantorovich_radius: float | None = None
    tolerance: dict[str, float] | None = None
    bound: float | None = None
    path_error: float | None = None

    def __repr__(self) -> str:
        """The verdict without the arrays (nothing is recomputed; call `check()` to verify)."""
        eq = "" if self.equilibrium is None else f", rank Σ*={self.equilibrium.rank}"
        return (f"Certificate(regime={self.regime!r}, exact={self.exact}, global_={self.global_}, "
                f"theorem={self.theorem!r}, d={self.params.d}, rate={repr_number(self.rate)}, "
                f"T*={repr_number(self.blowup_time)}{eq})")

    def _repr_html_(self) -> str:
        eq = self.equilibrium
        rows = [("regime", self.regime), ("theorem", self.theorem), ("exact", self.exact),
                ("global", self.global_), ("d", self.params.d), ("rate", number(self.rate)),
                ("T*", number(self.blowup_time)), ("threshold λ_max(W∞Σ0)", number(self.threshold)),
                ("bound sup λ_max(Σ(t))", number(self.bound)),
                ("rank Σ*", "—" if eq is None else eq.rank),
                ("reason", Markup(text_with_math(self.reason)))]
        return html_table("Certificate", rows)

    def _repr_latex_(self) -> str | None:
        """Σ* as a matrix for converges/collapses, T* for a blow-up (None when d > LATEX_MAX_D or
        there is nothing to show)."""
        if self.blowup_time is not None:
            return rf"$T^* = {number(self.blowup_time)}$ (blows up)"
        if self.equilibrium is None:
            return None
        M = latex_matrix(self.equilibrium.cov)
        return None if M is None else rf"$\Sigma(t) \to \Sigma^* = {M}$ ({self.regime})"

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
        """Re-decide every claim of the certificate from its stored layer and start; False if any
        fails.

        The form: a regime of REGIMES with the fields it needs and no others, everything finite,
        Σ0 a finite, exactly symmetric (d, d) array, positive semidefinite within validation's
        tolerance, and m0 a finite vector, `global_` exactly when the exact theorem holds for
        every Σ0 ≻ 0, and `tolerance` None for an exact certificate, else the values `certify`
        uses under known names (an empty, partial, negative, NaN or unknown tolerance fails).
        A theorem with its own verifier (`verification.VERIFIERS`: "lyapunov_stable") is
        re-decided by it whole. The equilibrium: residual ≤ ACCEPT_RTOL (within a factor 2 of
        the stored one), rank recomputed, the spectral abscissa of L recomputed and the stable
        flag its sign, m* solving K*m* + b = 0 with K* not unstable (or None only where K* is
        not Hurwitz), the method's form and rcond ∈ [0, 1], and rank and sign for the regime.
        The local
        certificate: L recomputed at Σ* equal to the stored operator, Cholesky of P and of
        −(LᵀP + PL), LᵀP + PL = −Q, the Newton–Kantorovich radius recomputed, the basin level
        below the admissible one (for d ≤ 6 the Lyapunov inequalities and the residual bound in
        exact rational arithmetic, P rounded to integers after scaling). The rate recomputed from
        its source (A's spectrum, L's, or the numerical-range bound of Σ*). The threshold
        λ_max(W∞Σ0) recomputed. The premises of the theorem (exactly for exact=True, with the
        stored tolerances otherwise) and the regime they give. A scalar-V T*: the sign change of
        λ_min(I + L0ᵀW(t)L0) across T*(1 ± BLOWUP_CHECK_RTOL), that T* is its first root
        (`blowup.positive_until`: a Loewner lower bound on a grid, for every sign of G) and the
        direction e^{AT*}L0v with S(T*)v = 0.

        Numerical evidence is re-decided by integrating again from Σ0: a general-V T* must be
        found again within T*(1 ± blowup_check_rtol) (no direction is stated there); the state at
        the stored horizon must agree with final_cov (REPLAY_RTOL) and itself lie in the stated
        basin, approach Σ* within close_rtol, or grow by growth_factor at the stated rate. This
        replay costs about as much as the integration of `certify` itself (which checks what it
        has just integrated without it); it is kept, because a certificate whose numbers cannot be
        re-derived certifies nothing. The radius of an attracting ball (`numerical._Ball`) rests on
        Σ*'s numerical-range bound, which is not recomputed: its rate must equal that bound.
        """
        return self._check(replay=True)

    def _check(self, replay: bool) -> bool:
        try:
            with np.errstate(all="ignore"):  # an overflowing check quantity fails the check
                return bool(_verify(self, replay))
        except (LinAlgError, RuntimeError, ValueError, ArithmeticError, TypeError, KeyError,
                IndexError, AttributeError):  # RuntimeError: SolverError, ARPACK's errors
            return False

    def linearization(self) -> control.StateSpace:
        """The linearised mean–covariance dynamics at (m*, Σ*) as a python-control StateSpace.

        State z = (δm, h) with h the orthonormal coordinates of δΣ; input u = δb; output z:

            δṁ = K* δm + Σ_h V_h H B_h m* + u,    ḣ = L h,    K* = A + Σ_h V_h + Σ_h V_h Σ* B_h,

        linearised about m* (or m = 0 when K* is not Hurwitz and there is no mean equilibrium).
        The states and outputs are named m1 … md, then Σ11, √2·Σ12, … (the orthonormal
        coordinates of δΣ in np.triu_indices order: δΣ_ij times √2 off the diagonal), the inputs
        b1 … bd (indices from 1, separated by commas from d = 10 on).
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
        K = p.M(cov) + sum((V for V, _ in p.heads), start=0.0)
        N = sym_basis(d)
        coupling = np.zeros((d, n))
        for k in range(n):
            E = N[:, k].reshape(d, d)
            coupling[:, k] = sum(V @ E @ B @ m for V, B in p.heads)
        Amat = np.block([[K, coupling], [np.zeros((n, d)), L]])
        Bmat = np.vstack([np.eye(d), np.zeros((n, d))])
        sep = "," if d >= 10 else ""
        names = [f"m{i + 1}" for i in range(d)] + [
            f"Σ{i + 1}{sep}{j + 1}" if i == j else f"√2·Σ{i + 1}{sep}{j + 1}"
            for i, j in zip(*np.triu_indices(d), strict=True)]
        return control.ss(Amat, Bmat, np.eye(d + n), np.zeros((d + n, d)), states=names,
                          outputs=names, inputs=[f"b{i + 1}" for i in range(d)])

    def plot(self, ax: Any = None) -> Axes:
        """The eigenvalues of Σ(t) from Σ0 under the certificate's layer, over a window chosen
        from its dynamics, on a log scale.

        The flow Σ̇ = AΣ + ΣAᵀ + Σ_h (V_hΣB_hΣ + ΣB_hᵀΣV_hᵀ) from (m0, Σ0) (`riccati_tf.flow`),
        drawn by `riccati_tf.io.plots.plot_covariance` and titled with the regime. The window:

        - "blows_up": [0, T*), on `riccati_tf.io.plots.blowup_grid` (equally spaced times and
          the geometric refinement T*(1 − 2^−k) towards T*), T* a dashed vertical line and the
          axis a margin past it;
        - "converges", "collapses": until the distance ‖Σ(t) − Σ*‖_F has fallen by
          SETTLE_FACTOR = 1e6 — integrated up to ln(SETTLE_FACTOR)/rate when the certificate has
          a rate (the distance decays as exp(−rate · t)), else up to its horizon, and cut at the
          first time drawn at which the distance has fallen that far, or at SETTLE_SPAN = 5
          times the first at which it has fallen 100-fold if that is earlier (an algebraic
          approach, ‖Σ(t) − Σ*‖ ~ 1/t, without a rate); so the transient fills the axis,
          however long the horizon of the evidence. Σ*'s eigenvalues are dotted lines;
        - "bounded": BOUNDED_PERIODS = 3 of the longest periods 2π/|Im λ(A)| (eigenvalues on the
          imaginary axis) or time constants 1/|Re λ(A)| (the others);
        - "grows", "undetermined" (and "bounded" for A with only zero eigenvalues): the horizon
          of the certificate's integration, or without one the horizon `certify` would integrate
          to (HORIZON_RATES time constants 1/min|Re λ(A)|, capped).

        Like pandas' ``.plot()``: into `ax`, else into a new pyplot figure
        (``cert.plot(); plt.show()`` works in a script).

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            The Axes to draw into (nothing global changes); None (default): a new pyplot
            figure (`riccati_tf.io.figures.pyplot_axes`).

        Returns
        -------
        matplotlib.axes.Axes
            The Axes drawn into.

        Raises
        ------
        SolverError
            When `riccati_tf.flow` fails on the window (or spends its step budget).

        See Also
        --------
        riccati_tf.Trajectory.plot : draws a trajectory already computed.
        riccati_tf.io.plots.plot_covariance : the drawing.
        riccati_tf.certify : computes the certificate.

        References
        ----------
        .. [1] riccati_tf theory, SPEC §5 (the regimes: their equilibria, rates and T*) and
           §6 "Certificates".

        Examples
        --------
        >>> from riccati_tf import certify
        >>> from riccati_tf.app.examples import regime_examples
        >>> params, g0, _ = regime_examples()["blows_up"]
        >>> ax = certify(params, g0.cov, g0.mean).plot()
        >>> ax.get_title(), [line.get_label() for line in ax.get_lines()]
        ('blows_up (exact, nsd_unstable_range)', ['λ1(Σ)', 'λ2(Σ)', 'T* = 1.102'])
        """
        from ...io.figures import pyplot_axes
        from ...io.plots import BLOWUP_MARGIN, blowup_grid, plot_covariance

        g0 = Gaussian(self.mean0, self.cov0)
        if self.blowup_time is not None:
            t_star = self.blowup_time
            traj = flow(self.params, g0, t_star * (1.0 + BLOWUP_MARGIN),
                        t_eval=blowup_grid(t_star, PLOT_POINTS))
        else:
            traj = self._flow_window(g0)
        kind = "exact" if self.exact else "numerical"
        words = ", ".join(dict.fromkeys([kind, self.theorem]))  # once where they coincide
        ax = pyplot_axes(ax)
        plot_covariance(traj, title=f"{self.regime} ({words})", ax=ax,
                        equilibrium=self.equilibrium)
        return ax

    def _flow_window(self, g0: Gaussian) -> Trajectory:
        """The flow over the window `plot` describes, for every regime but "blows_up"."""
        t_end = self.horizon or _horizon(self.params, self.cov0)
        eq = self.equilibrium
        if eq is not None and self.rate:
            t_end = float(np.log(SETTLE_FACTOR)) / self.rate
        elif self.regime == "bounded":
            t_end = _bounded_window(self.params) or t_end
        traj = flow(self.params, g0, t_end, t_eval=np.linspace(0.0, t_end, PLOT_POINTS))
        if eq is not None:
            gap = np.linalg.norm(traj.cov - eq.cov, axis=(1, 2))
            ends = [traj.t[gap <= gap[0] / SETTLE_FACTOR][:1],
                    SETTLE_SPAN * traj.t[gap <= gap[0] / 100.0][:1]]
            cut = float(np.min(np.concatenate([*ends, [t_end]])))
            if gap[0] > 0 and 0.0 < cut < traj.t[-2]:
                t_end = cut
                traj = flow(self.params, g0, t_end, t_eval=np.linspace(0.0, t_end, PLOT_POINTS))
        return traj


def _bounded_window(p: Params) -> float | None:
    """BOUNDED_PERIODS times the longest period 2π/|Im λ| (|Re λ| ≤ AXIS_RTOL‖A‖₂) or time
    constant 1/|Re λ| of A's nonzero eigenvalues λ; None when A has none."""
    lam, norm = drift_spectrum(p)
    tol = AXIS_RTOL * norm
    spans = [2.0 * np.pi / abs(z.imag) if abs(z.real) <= tol else 1.0 / abs(z.real)
             for z in lam if abs(z) > tol]
    return BOUNDED_PERIODS * max(spans) if spans else None


def _converged(p: Params, cov: np.ndarray, base: dict, theorem: str, *, exact: bool, glob: bool,
               rate: float | None, reason: str, equilibrium: Equilibrium | None = None,
               threshold: float | None = None, local: bool = True, loc: _Local | None = None,
               final_cov: np.ndarray | None = None, horizon: float | None = None,
               basin: float | None = None) -> Certificate:
    """A converges/collapses certificate with a local Lyapunov certificate at Σ* when one exists
    (`loc` if given, else computed when `local`); basin: the level of `_ZeroBall` (no loc)."""
    if loc is None and local:
        loc = _local(p, cov)
    eq = equilibrium if equilibrium is not None else _zero_equilibrium(p)
    regime = "collapses" if eq.rank == 0 else "converges"
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
