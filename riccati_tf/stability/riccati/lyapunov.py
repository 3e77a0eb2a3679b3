"""The Lyapunov matrix of ḣ = L h: P with Lᵀ P + P L = −Q (`lyapunov_function`,
`LyapunovSolution`)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ...errors import SolverError
from ...state.validation import (
    as_matrix,
)
from .numerics import as_symmetric, numerical_boundary

__all__ = ["LyapunovSolution", "lyapunov_function"]


@dataclass(frozen=True, eq=False)
class LyapunovSolution:
    """P with Lᵀ P + P L = −Q, and its relative residual.

    Returned by `lyapunov_function`: the matrix of the quadratic Lyapunov function hᵀ P h of
    ḣ = L h, the right-hand side it was solved for, and the residual
    ‖LᵀP + PL + Q‖_F / (2‖LᵀP‖_F + ‖Q‖_F) that shows how well it solves the equation.

    Parameters
    ----------
    P : (n, n) ndarray
        The symmetric solution of Lᵀ P + P L = −Q (P ≻ 0 for Q ≻ 0 exactly when L is Hurwitz).
    Q : (n, n) ndarray
        The symmetric right-hand side used (I when none was given).
    residual : float
        ‖Lᵀ P + P L + Q‖_F / (2‖Lᵀ P‖_F + ‖Q‖_F).

    Raises
    ------
    dataclasses.FrozenInstanceError
        On assignment to a field: a solution is immutable.

    See Also
    --------
    lyapunov_function : the solver that returns it.
    riccati_tf.Certificate : certificates carry such a P for the linearisation L at Σ*.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §6 "Certificates".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.stability.riccati import lyapunov_function
    >>> sol = lyapunov_function(np.array([[-1.0]]))
    >>> sol.P, sol.Q, sol.residual
    (array([[0.5]]), array([[1.]]), 0.0)
    """

    P: NDArray[np.float64]
    Q: NDArray[np.float64]
    residual: float



@numerical_boundary
def lyapunov_function(L: ArrayLike, Q: ArrayLike | None = None) -> LyapunovSolution:
    """P of the quadratic Lyapunov function hᵀPh of ḣ = Lh:  Lᵀ P + P L = −Q  (Q = I by default).

    SPEC §6 ships a stability claim with a Lyapunov matrix P ≻ 0 for the linearisation L at an
    equilibrium:

        Lᵀ P + P L = −Q,      Q ≻ 0  ⇒  (P ≻ 0  ⇔  L Hurwitz),

    and then V(h) = hᵀ P h decreases along ḣ = L h, V̇ = −hᵀ Q h. This is the transpose of
    python-control's `lyap(A, Q)` (A X + X Aᵀ + Q = 0), which is called with A = Lᵀ (SLICOT's
    Bartels–Stewart solver); P is symmetrised and its residual reported.

    Parameters
    ----------
    L : (n, n) array_like
        The linear operator: finite, real, square (for the certificates, L in orthonormal
        symmetric coordinates, n = d(d+1)/2).
    Q : (n, n) array_like, symmetric, optional
        The right-hand side; the identity when omitted.

    Returns
    -------
    LyapunovSolution
        P (symmetric), the Q used and the relative residual
        ‖Lᵀ P + P L + Q‖_F / (2‖Lᵀ P‖_F + ‖Q‖_F).

    Raises
    ------
    InvalidInputError
        L or Q not a finite real square matrix of one size n ≥ 1 (shape, NaN/Inf, complex,
        boolean or string entries); Q not symmetric (‖Q − Qᵀ‖_F > SYM_RTOL ‖Q‖_F).
    SolverError
        No unique solution (eigenvalues of L with λ_i + λ_j = 0), or any other failure of
        floating point.

    See Also
    --------
    care_g : the quadratic (Riccati) counterpart Aᵀ X + X A − X G X + Q = 0.
    riccati_tf.certify : certificates built on such a P at the equilibrium.
    LyapunovSolution : the solution and its residual.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §6 "Certificates".
    .. [2] R. H. Bartels and G. W. Stewart, "Solution of the matrix equation AX + XB = C",
       Communications of the ACM 15(9), 1972.

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.stability.riccati import lyapunov_function
    >>> L = np.array([[-1.0, 2.0], [0.0, -3.0]])
    >>> sol = lyapunov_function(L)
    >>> np.round(sol.P, 4)
    array([[0.5   , 0.25  ],
           [0.25  , 0.3333]])
    >>> sol.residual < 1e-14, bool(np.all(np.linalg.eigvalsh(sol.P) > 0))
    (True, True)
    """
    # SLICOT's sb03md (Bartels–Stewart on the real Schur form), the solver python-control's
    # `lyap` calls with these arguments, called directly: importing python-control takes seconds
    from slycot import sb03md57
    from slycot.exceptions import SlycotResultWarning

    L = as_matrix("L", L)
    n = L.shape[0]
    Q = np.eye(n) if Q is None else as_symmetric("Q", Q, n)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", SlycotResultWarning)  # a perturbed solve: refused
            X, scale = sb03md57(L.T, np.eye(n), -Q, "C", "X", "N", "T")[2:4]
        P = X / scale  # sb03md solves LᵀP + PL = −scale·Q, scale ≤ 1 against overflow
    except Exception as exc:
        raise SolverError(f"the Lyapunov equation LᵀP + PL = −Q has no unique solution "
                          f"(L has eigenvalues λ_i + λ_j = 0): {exc}") from None
    P = 0.5 * (P + P.T)
    LP = L.T @ P
    scale = 2 * np.linalg.norm(LP) + np.linalg.norm(Q)
    return LyapunovSolution(P, Q, float(np.linalg.norm(LP + LP.T + Q) / scale))
