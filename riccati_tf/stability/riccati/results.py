"""The results of the Riccati layer: `RiccatiSolution` (X of Aᵀ X + X A − X G X + Q = 0 with its
evidence) and `NoStabilizingSolution` (the Bernoulli equation has no stabilizing solution)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ...errors import SolverError

__all__ = ["NoStabilizingSolution", "RiccatiSolution"]


class NoStabilizingSolution(SolverError):
    """The Bernoulli equation has no stabilizing solution (P singular on the anti-stable part).

    A `SolverError`: the equation A Σ + Σ Aᵀ − Σ G Σ = 0 has no solution Σ with A − Σ G
    Hurwitz when the solution P of T₁₁ᵀ P + P T₁₁ = U₁ᵀ G U₁ on the anti-stable invariant
    subspace of A (ordered real Schur form A = U T Uᵀ) is singular, i.e. an eigenvalue of A with
    Re λ > 0 has a mode that G does not see. `bernoulli` raises it when the relative size of P⁻¹
    falls below SINGULAR_RCOND; the covariance flow Σ̇ = A Σ + Σ Aᵀ − Σ G Σ then has no stable
    equilibrium of that rank.

    Raises
    ------
    NoStabilizingSolution
        From `bernoulli` (Schur method) when P is singular to within SINGULAR_RCOND.

    See Also
    --------
    bernoulli : the solver that raises it.
    riccati_tf.errors.SolverError : its base class, the package's numerical failure.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".

    Examples
    --------
    The anti-stable eigenvalue 1 of A = diag(1, −1) lies on e₁, which G = diag(0, 1) does not
    see:

    >>> import numpy as np
    >>> from riccati_tf.stability.riccati import NoStabilizingSolution, bernoulli
    >>> try:
    ...     bernoulli(np.diag([1.0, -1.0]), np.diag([0.0, 1.0]))
    ... except NoStabilizingSolution:
    ...     print("no stabilizing solution")
    no stabilizing solution
    """



@dataclass(frozen=True, eq=False)
class RiccatiSolution:
    """A solution X of Aᵀ X + X A − X G X + Q = 0 with the evidence to check it.

    Returned by `care_g` (the CARE in G form) and `bernoulli` (A Σ + Σ Aᵀ − Σ G Σ = 0, the
    CARE with A → Aᵀ and Q = 0, X = Σ). Its fields are the solution and the numbers that let a
    reader judge it without re-solving: the relative residual, the conditioning of the last
    linear solve, the closed-loop spectrum (stabilizing: all of it in the open left half-plane)
    and the distance of the deciding eigenvalues from the imaginary axis.

    Parameters
    ----------
    X : (d, d) ndarray
        The symmetric solution (Σ* for `bernoulli`).
    residual : float
        ‖Aᵀ X + X A − X G X + Q‖_F / (‖Q‖_F + 2‖Aᵀ X‖_F + ‖X G X‖_F) (0 when X = Q = 0).
    rcond : float
        Reciprocal 1-norm condition estimate of the last linear solve that produced X (P in the
        Schur fast path, U₁₁ of the Hamiltonian's stable subspace in SLICOT sb02md).
    closed_loop : (d,) ndarray of complex
        Eigenvalues of A − G X (all in the open left half-plane for a stabilizing X; for
        `bernoulli` those of A − Σ G).
    rank : int
        Rank of X (structural for the Bernoulli fast path: the number of eigenvalues of A with
        Re λ > 0).
    method : str
        How X was computed: "schur", "schur→slycot-sb02md" or "slycot-sb02md".
    axis_gap : float
        min |Re λ| / ‖·‖_F over the eigenvalues that decide the stable/anti-stable split (those
        of A for `bernoulli`, of the Hamiltonian's stable half for `care_g`).
    crosscheck : float or None, optional
        Relative difference ‖X − X_care‖_F / ‖X_care‖_F to python-control's `care` when
        requested, else None.
    condition : float or None, optional
        Byers' relative condition bound κ (`care_condition`) when requested, else None; the
        relative forward error of X is then O(κ · eps).
    psd : bool, optional
        True when X = YᵀY was formed from a factor (Bernoulli fast path with P ≻ 0: X is
        positive semidefinite by construction), False when positive semidefiniteness was not
        established.

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field: a solution is immutable.

    See Also
    --------
    care_g : the CARE in G form, Aᵀ X + X A − X G X + Q = 0.
    bernoulli : the algebraic Bernoulli equation A Σ + Σ Aᵀ − Σ G Σ = 0.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".
    .. [2] R. Byers, "Numerical condition of the algebraic Riccati equation", Contemporary
       Mathematics 47, 1985.

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.stability.riccati import bernoulli
    >>> sol = bernoulli(np.diag([1.0, -2.0]), np.eye(2))
    >>> np.round(sol.X, 4)
    array([[2., 0.],
           [0., 0.]])
    >>> sol.rank, sol.method, sol.residual < 1e-12, sol.psd
    (1, 'schur', True, True)
    >>> bool(np.all(sol.closed_loop.real < 0))
    True
    """

    X: NDArray[np.float64]
    residual: float
    rcond: float
    closed_loop: NDArray[np.complex128]
    rank: int
    method: str
    axis_gap: float
    crosscheck: float | None = None
    condition: float | None = None
    psd: bool = False
