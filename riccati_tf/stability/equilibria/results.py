"""The results of the equilibrium search (SPEC §5): an equilibrium with its evidence, the
record of how its stability was decided, and the search's list with its claim.

    F(Σ*) = A Σ* + Σ* Aᵀ + Σ_h (V_h Σ* B_h Σ* + Σ* B_hᵀ Σ* V_hᵀ) = 0,      Σ* ⪰ 0

`Equilibrium` (Σ*, m*, residual, rank, the verdict on L), `Stability` (the numerical-range
bound or the Ritz value that decided it), `EquilibriumSearch` (the equilibria found, whether
the list is complete or undetermined, the work spent) and `EquilibriaUndetermined`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ...display import array_text, html_table, number
from ...errors import SolverError
from ...state.validation import ReadOnlyArrays
from .budget import SearchBudget, SearchWork

__all__ = ["EquilibriaUndetermined", "Equilibrium", "EquilibriumSearch", "Stability"]


@dataclass(frozen=True, eq=False)
class Equilibrium(ReadOnlyArrays):
    """An equilibrium Σ* of Σ̇ = F(Σ), with the evidence for it.

    Σ* is a covariance (symmetric positive semidefinite) with

        F(Σ*) = A Σ* + Σ* Aᵀ + Σ_h (V_h Σ* B_h Σ* + Σ* B_hᵀ Σ* V_hᵀ) = 0,

    reported with its relative residual, its rank, the spectral abscissa of the linearisation
    L(H) = M* H + H M*ᵀ + Σ_h (V_h H B_h Σ* + Σ* B_hᵀ H V_hᵀ) on symmetric H (stable iff < 0)
    and, when K* = A + Σ_h V_h + Σ_h V_h Σ* B_h is Hurwitz, the mean equilibrium m* = −K*⁻¹ b
    (SPEC §5). The arrays are read-only.

    Parameters
    ----------
    cov : (d, d) ndarray, symmetric positive semidefinite
        Σ*.
    mean : (d,) ndarray or None
        m* = −K*⁻¹ b when K* is Hurwitz (and m* is within the float range), else None.
    residual : float
        ‖F(Σ*)‖_F / (‖AΣ*‖_F + Σ_h ‖V_hΣ*B_hΣ*‖_F) (0 for Σ* = 0).
    rank : int
        For a Bernoulli solution the dimension of its invariant subspace (structural: an
        eigenvalue of Σ* far below λ_max still counts), otherwise the number of eigenvalues above
        RANK_RTOL · λ_max.
    stable : bool or None
        Whether L is Hurwitz on symmetric matrices; None when that could not be decided within
        the budgets of `linearization_stability` (then the reason is in `stability`).
    spectral_abscissa : float or None
        max Re λ(L) over symmetric H; None where it was not computed (d >
        DENSE_SPECTRUM_MAX_D with stability decided by the numerical-range bound).
    method : str
        How Σ* was found: "bernoulli-schur", "bernoulli-slycot", "invariant-subspace", "zero"
        or "newton[<start>]" ("+newton" appended when Newton-polished to the accepted residual).
    rcond : float or None, optional
        Reciprocal condition estimate of the last linear solve (None for Newton).
    stability : Stability or None, optional
        How stability was decided beyond d = DENSE_SPECTRUM_MAX_D (the bound, its Ritz
        residual, the defect and the tolerance), None where the spectrum was used.

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field: an equilibrium is immutable.

    See Also
    --------
    equilibria : finds the equilibria and returns them as Equilibrium objects.
    riccati_tf.certify : the regime of Σ(t) from a given start, with a Lyapunov certificate at Σ*.
    riccati_tf.stability.riccati.bernoulli : the stabilizing Bernoulli solution (scalar V).

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".

    Examples
    --------
    A scalar-value layer (V = −I, B = I/2, so G = I) with A = diag(1, 2): Σ* = diag(2, 4),
    K* = A − I − Σ*/2 = −I, so the mean converges to m* = −K*⁻¹ b = b.

    >>> import numpy as np
    >>> from riccati_tf import Params, equilibria
    >>> p = Params(np.diag([1.0, 2.0]), B=0.5 * np.eye(2), V=-np.eye(2), b=[1.0, 1.0])
    >>> eq = equilibria(p)[0]
    >>> eq
    Equilibrium(cov=[[2, 0], [0, 4]], mean=[1, 1], rank=2, stable=True, abscissa=-2, residual=...,
    method='bernoulli-schur')
    >>> np.round(eq.cov, 4)
    array([[2., 0.],
           [0., 4.]])
    >>> np.round(eq.mean, 6)
    array([1., 1.])
    >>> eq.residual < 1e-12
    True
    """

    cov: NDArray[np.float64]
    mean: NDArray[np.float64] | None
    residual: float
    rank: int
    stable: bool | None
    spectral_abscissa: float | None
    method: str
    rcond: float | None = None
    stability: Stability | None = None

    def __repr__(self) -> str:
        """Σ* (and m*) written out for d ≤ display.REPR_MAX_D, then the verdict."""
        top = "None" if self.spectral_abscissa is None else f"{self.spectral_abscissa:.3g}"
        cov = array_text(self.cov)
        mean = None if self.mean is None else array_text(self.mean)
        shown = "" if cov is None else f"cov={cov}, " + ("" if mean is None else
                                                         f"mean={mean}, ")
        return (f"Equilibrium({shown}rank={self.rank}, stable={self.stable}, "
                f"abscissa={top}, residual={self.residual:.2g}, "
                f"method={self.method!r})")

    def _repr_html_(self) -> str:
        return html_table("Equilibrium", [
            ("Σ*", array_text(self.cov) or f"tr Σ* = {number(np.trace(self.cov))}"),
            ("m*", "none" if self.mean is None else array_text(self.mean) or "…"),
            ("rank", self.rank), ("stable", self.stable),
            ("spectral abscissa", number(self.spectral_abscissa)),
            ("residual", number(self.residual)), ("method", self.method)])


@dataclass(frozen=True)
class Stability:
    """How the stability of an equilibrium Σ* (L Hurwitz on Sym(d)) was decided.

    At a positive definite Σ* = RR (R = Σ*^{1/2}), K ↦ R⁻¹L(RKR)R⁻¹ is similar to L and reads
    L̃(K) = ŜK + KŜᵀ + P(K), Ŝ = R⁻¹M*R, P(K) = Σ_h (Ṽ_hKB̃_h + B̃_hᵀKṼ_hᵀ), Ṽ_h = R⁻¹V_hR,
    B̃_h = RB_hR. Since M*Σ* + Σ*M*ᵀ = F(Σ*), Ŝ + Ŝᵀ = R⁻¹F(Σ*)R⁻¹ vanishes up to the residual,
    so every eigenvalue of L lies in the numerical range of L̃: Re λ(L) ≤ λ_max(½(P + P*)) +
    ‖R⁻¹F(Σ*)R⁻¹‖_F. The largest eigenvalue of the self-adjoint ½(P + P*) is a Lanczos Ritz
    value θ with residual ρ: an eigenvalue lies within ρ of θ, and θ + ρ is taken for the
    largest one (Lanczos finds the extreme eigenvalues first; this is not a proof).

    Parameters
    ----------
    method : str
        "numerical-range" (the bound above), "arnoldi" (ARPACK's rightmost Ritz value of L, the
        fallback when the bound is not negative or Σ* is singular) or "undecided".
    stable : bool or None
        L is Hurwitz (True), has an eigenvalue with Re λ ≥ 0 (False), or neither could be
        established within the budgets (None).
    value : float or None
        The bound θ + ρ + defect ("numerical-range", negative when stable) or the rightmost
        Ritz value's real part ("arnoldi"); None for "undecided".
    ritz : float or None
        The Ritz value θ (the largest eigenvalue of ½(P + P*), or Re of L's rightmost); None for
        "undecided".
    residual : float or None
        ‖Sk − θk‖ of the unit Ritz vector k (S the operator whose Ritz value θ is: ½(P + P*) on
        the n_s = d(d+1)/2 orthonormal coordinates of Sym(d), or L); None for "undecided".
    defect : float or None
        ‖R⁻¹F(Σ*)R⁻¹‖_F, the part of the bound that the equilibrium's residual contributes
        ("numerical-range"; None otherwise).
    tolerance : float
        The relative accuracy the eigensolver was run with (LANCZOS_RTOL or ARNOLDI_RTOL).
    reason : str
        The decision in words.
    quadratic : float or None, optional
        "numerical-range": c̃ = 2 Σ_h ‖Ṽ_h‖_F ‖B̃_h‖_F, so that the quadratic part of the field in
        the coordinates K = R⁻¹(Σ − Σ*)R⁻¹ (K, Σ, Σ* of shape (d, d)), Σ_h (Ṽ_hKB̃_hK +
        KB̃_hᵀKṼ_hᵀ), has norm ≤ c̃‖K‖_F²: with μ = −value > 0 and f = defect, ½ d‖K‖_F²/dt ≤
        ‖K‖_F (f − μ‖K‖_F + c̃‖K‖_F²) < 0 for r₋ < ‖K‖_F < r₊, r± = (μ ± √(μ² − 4c̃f)) / (2c̃):
        that ball attracts. None for the other methods (default).

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field: the record is immutable.

    See Also
    --------
    linearization_stability : computes it.
    spectral_abscissa : max Re λ(L) itself, which the bound lies above.
    Equilibrium : carries it as `Equilibrium.stability` beyond d = DENSE_SPECTRUM_MAX_D.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".
    .. [2] T. Kato, *Perturbation Theory for Linear Operators*, Springer (1995), §V.3.2 (the
       numerical range holds the spectrum).
    .. [3] C. Lanczos, "An iteration method for the solution of the eigenvalue problem of
       linear differential and integral operators", J. Res. Nat. Bur. Standards 45, 1950.
    .. [4] Y. Saad, *Numerical Methods for Large Eigenvalue Problems*, SIAM (2011), §4.3 (Ritz
       residual bounds).
    .. [5] R. B. Lehoucq, D. C. Sorensen, C. Yang, "ARPACK Users' Guide", SIAM, 1998.

    Examples
    --------
    A general-V layer on R³ at its stable equilibrium: the bound θ + ρ + defect is negative,
    and lies above the spectral abscissa of L computed from the dense spectrum.

    >>> import numpy as np
    >>> from riccati_tf import Params, equilibria
    >>> from riccati_tf.stability import linearization_stability
    >>> from riccati_tf.stability.equilibria.linearization import spectral_abscissa
    >>> A = np.array([[1.0, 0.5, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 3.0]])
    >>> p = Params(A, V=-np.eye(3) - 0.2 * np.ones((3, 3)), B=np.eye(3))
    >>> eq = equilibria(p)[0]
    >>> s = linearization_stability(p, eq.cov)
    >>> s.method, s.stable
    ('numerical-range', True)
    >>> bool(s.value == s.ritz + s.residual + s.defect)
    True
    >>> round(s.value, 3), round(spectral_abscissa(p, eq.cov), 3)
    (-1.948, -1.987)
    """

    method: str
    stable: bool | None
    value: float | None
    ritz: float | None
    residual: float | None
    defect: float | None
    tolerance: float
    reason: str
    quadratic: float | None = None


@dataclass(frozen=True, eq=False)
class EquilibriumSearch:
    """The result of a search for the covariance equilibria F(Σ*) = 0, Σ* ⪰ 0 (SPEC §5), with
    what it spent and what it can claim:

        F(Σ) = A Σ + Σ Aᵀ + Σ_h (V_h Σ B_h Σ + Σ B_hᵀ Σ V_hᵀ).

    Parameters
    ----------
    equilibria : tuple of Equilibrium
        The equilibria found of the kind asked for (`which`), in the order found.
    which : {"stable", "all"}
        The kind asked for.
    complete : bool
        True only where it is proved that `equilibria` holds every covariance equilibrium of
        that kind: scalar V, where the Bernoulli theory maps the equilibria one to one onto the
        A-invariant subspaces on which P ≻ 0 (which="all": every subspace enumerated and none
        left out; which="stable": the stable one is the unique stabilizing solution), and
        which="stable" with A = 0 (F is homogeneous, L(Σ*) = 2F(Σ*) = 0: none is stable). False
        for general V otherwise (Newton's method from finitely many starts proves nothing about the
        equilibria it did not reach) and whenever the search was cut short.
    undetermined : bool
        The budget ran out before the search ended: `equilibria` holds what was found by then,
        and an empty tuple says nothing about existence.
    reason : str
        Why the list is (or is not known to be) complete, or what ran out, in words.
    budget : SearchBudget
        The budget the search ran within.
    spent : SearchWork
        The work it spent.

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field.

    See Also
    --------
    equilibrium_search : computes it.
    equilibria : its list of equilibria alone.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".

    Examples
    --------
    Scalar V: the enumeration of the invariant subspaces is exhaustive.

    >>> import numpy as np
    >>> from riccati_tf import Params
    >>> from riccati_tf.stability.equilibria import equilibrium_search
    >>> p = Params(np.diag([1.0, 2.0]), B=0.5 * np.eye(2), V=-np.eye(2))
    >>> r = equilibrium_search(p, which="all")
    >>> len(r.equilibria), r.complete, r.undetermined
    (4, True, False)
    """

    equilibria: tuple[Equilibrium, ...]
    which: str
    complete: bool
    undetermined: bool
    reason: str
    budget: SearchBudget
    spent: SearchWork

    def __repr__(self) -> str:
        state = "undetermined" if self.undetermined else \
            "complete" if self.complete else "not known complete"
        return (f"EquilibriumSearch({len(self.equilibria)} {self.which} equilibria, {state}, "
                f"{self.spent.newton_iterations} Newton iterations, "
                f"{self.spent.lyapunov_solves} Lyapunov solves, {self.spent.seconds:.3g} s)")


class EquilibriaUndetermined(SolverError):
    """`equilibria` spent its `SearchBudget` before its search ended.

    A `SolverError`; `search` holds the `EquilibriumSearch` (what was found by then, the
    reason and the work spent).

    Parameters
    ----------
    search : EquilibriumSearch
        The undetermined search.

    Raises
    ------
    EquilibriaUndetermined
        From `equilibria` when the search is undetermined.

    See Also
    --------
    equilibrium_search : the same search, returning the undetermined result instead.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5.

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf import Params, equilibria
    >>> from riccati_tf.stability.equilibria import EquilibriaUndetermined, SearchBudget
    >>> p = Params(np.diag([1.0, 4.0]), B=0.5 * np.eye(2), V=-np.array([[1.0, 0.2], [0, 1]]))
    >>> try:
    ...     equilibria(p, budget=SearchBudget(newton_iterations=1))
    ... except EquilibriaUndetermined as exc:
    ...     print(exc.search.undetermined, exc.search.spent.newton_iterations)
    True 2
    """

    def __init__(self, search: EquilibriumSearch) -> None:
        super().__init__(f"the search for {search.which} equilibria is undetermined: "
                         f"{search.reason}")
        self.search = search
