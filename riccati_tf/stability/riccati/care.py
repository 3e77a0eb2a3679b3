"""The CARE in G form, Aᵀ X + X A − X G X + Q = 0, through SLICOT's sb02md (`care_g`), its
relative residual and Byers' condition bound, and python-control's `care` as a reference."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ...errors import SolverError
from ...state.validation import (
    as_matrix,
)
from .constants import AXIS_RTOL
from .numerics import as_flag, as_gain, as_rtol, as_symmetric, fro_norm, numerical_boundary
from .results import RiccatiSolution
from .schur import check_axis_gap

__all__ = ["care_g"]


def care_residual(A: np.ndarray, G: np.ndarray, Q: np.ndarray | None, X: np.ndarray) -> float:
    """Relative residual ‖AᵀX + XA − XGX + Q‖_F / (‖Q‖_F + 2‖AᵀX‖_F + ‖XGX‖_F) of a symmetric X
    (Q = None: Q = 0)."""
    AX = A.T @ X
    XGX = X @ G @ X
    scale = 2 * np.linalg.norm(AX) + np.linalg.norm(XGX)
    R = AX + AX.T
    R -= XGX
    if Q is not None:
        scale += np.linalg.norm(Q)
        R += Q
    if scale == 0.0:
        return 0.0
    return float(np.linalg.norm(R) / scale)



@numerical_boundary
def care_condition(A: np.ndarray, G: np.ndarray, Q: np.ndarray, X: np.ndarray) -> float:
    """Byers' first-order relative condition bound of the CARE solution X,

        κ = ‖Ω⁻¹‖ (‖Q‖ + 2‖A‖‖X‖ + ‖G‖‖X‖²) / ‖X‖,   Ω(Z) = A_clᵀ Z + Z A_cl,   A_cl = A − G X,

    so that a backward-stable solver's relative forward error is O(κ · eps). ‖Ω⁻¹‖ (on vec(Z),
    1-norm) is estimated by Higham's onenormest with Lyapunov solves; the other norms are
    1-norms. Returns inf for X = 0 (a relative condition is then undefined).
    """
    from scipy.linalg import solve_continuous_lyapunov
    from scipy.sparse.linalg import LinearOperator, onenormest

    n = A.shape[0]
    xnorm = np.linalg.norm(X, 1)
    if xnorm == 0:
        return float("inf")
    Acl = A - G @ X

    def inv(z, M):
        return solve_continuous_lyapunov(M, z.reshape(n, n)).ravel()

    op = LinearOperator((n * n, n * n), dtype=float, matvec=lambda z: inv(np.ravel(z), Acl.T),
                        rmatvec=lambda z: inv(np.ravel(z), Acl))
    omega_inv = onenormest(op) if n > 1 else 1.0 / abs(2 * Acl[0, 0])
    num = (np.linalg.norm(Q, 1) + 2 * np.linalg.norm(A, 1) * xnorm
           + np.linalg.norm(G, 1) * xnorm ** 2)
    return float(omega_inv * num / xnorm)



@numerical_boundary
def care_g(A: ArrayLike, G: ArrayLike, Q: ArrayLike | None = None, *,
           axis_rtol: float = AXIS_RTOL, scaling: bool = True,
           condition: bool = True) -> RiccatiSolution:
    """Stabilizing solution X of the CARE in G form  Aᵀ X + X A − X G X + Q = 0  (A − G X Hurwitz).

    The equation of python-control's `care(A, B, Q, R)` and scipy's
    `solve_continuous_are(A, B, Q, R)` with G = B R⁻¹ Bᵀ given directly (not B):

        Aᵀ X + X A − X G X + Q = 0,      A − G X Hurwitz,

    the SPEC §5 form of the equilibrium equation (there with A → Aᵀ and Q = 0, see `bernoulli`).
    Solved by SLICOT sb02md (Laub's Schur method on the Hamiltonian [[A, −G], [−Q, −Aᵀ]]), the
    routine python-control calls after forming G, so that SLICOT's condition estimate is kept.

    Parameters
    ----------
    A : (d, d) array_like
        The state matrix: finite, real, square.
    G : (d, d) array_like, symmetric positive semidefinite
        G = B R⁻¹ Bᵀ.
    Q : (d, d) array_like, symmetric, optional
        The constant term; zero when omitted.
    axis_rtol : float, optional
        Relative gap in (0, 1) below which an eigenvalue of the Hamiltonian counts as on the
        imaginary axis (default AXIS_RTOL = 1e-8).
    scaling : bool, optional
        SLICOT's general scaling (scal = 'G'; on CAREX example 7 at ε = 1e-6 it turns a relative
        error of 5e-5 into one of 1e-29). Default True.
    condition : bool, optional
        Also report Byers' condition bound κ in `RiccatiSolution.condition` (several Lyapunov
        solves). Default True.

    Returns
    -------
    RiccatiSolution
        X with its relative residual, SLICOT's reciprocal condition estimate `rcond`, the
        closed-loop eigenvalues λ(A − G X), rank, method "slycot-sb02md", axis gap and (when
        requested) the condition bound.

    Raises
    ------
    InvalidInputError
        A, G or Q not a finite real square matrix of one size d ≥ 1 (shape, NaN/Inf, complex,
        boolean or string entries); G or Q not symmetric (‖C − Cᵀ‖_F > SYM_RTOL ‖C‖_F); G not
        positive semidefinite (λ_min < −PSD_RTOL λ_max); axis_rtol outside (0, 1); scaling or
        condition not a bool.
    SolverError
        The Hamiltonian [[A, −G], [−Q, −Aᵀ]] has an eigenvalue within axis_rtol ‖H‖_F of the
        imaginary axis; SLICOT finds no stabilizing solution (the stable subspace is not a
        graph: U₁₁ singular); any other failure of floating point (overflow, LAPACK).

    See Also
    --------
    bernoulli : the equilibrium equation A Σ + Σ Aᵀ − Σ G Σ = 0 (the CARE with A → Aᵀ, Q = 0).
    lyapunov_function : the linear equation Lᵀ P + P L = −Q.
    RiccatiSolution : the solution and its evidence.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".
    .. [2] A. J. Laub, "A Schur method for solving algebraic Riccati equations", IEEE Trans.
       Automatic Control 24(6), 1979.
    .. [3] R. Byers, "Numerical condition of the algebraic Riccati equation", Contemporary
       Mathematics 47, 1985.
    .. [4] P. Benner, A. J. Laub, V. Mehrmann, "A collection of benchmark examples for the
       numerical solution of algebraic Riccati equations I: continuous-time case", TU Chemnitz
       SPC 95_23, 1995.

    Examples
    --------
    The double integrator A = [[0, 1], [0, 0]] with B = e₂, R = 1, Q = I has
    X = [[√3, 1], [1, √3]]:

    >>> import numpy as np
    >>> from riccati_tf.stability.riccati import care_g
    >>> A = np.array([[0.0, 1.0], [0.0, 0.0]])
    >>> G = np.array([[0.0, 0.0], [0.0, 1.0]])
    >>> sol = care_g(A, G, np.eye(2))
    >>> np.round(sol.X, 4)
    array([[1.7321, 1.    ],
           [1.     , 1.7321]])
    >>> sol.method, sol.residual < 1e-12, bool(np.all(sol.closed_loop.real < 0))
    ('slycot-sb02md', True, True)
    >>> bool(np.allclose(A.T @ sol.X + sol.X @ A - sol.X @ G @ sol.X + np.eye(2), 0))
    True
    """
    A = as_matrix("A", A)
    n = A.shape[0]
    G = as_gain("G", G, n)
    Q = np.zeros((n, n)) if Q is None else as_symmetric("Q", Q, n)
    axis_rtol = as_rtol("axis_rtol", axis_rtol)
    scaling, condition = as_flag("scaling", scaling), as_flag("condition", condition)
    return _sb02md(A, G, Q, axis_rtol, scaling, condition)



def _sb02md(A: np.ndarray, G: np.ndarray, Q: np.ndarray, axis_rtol: float, scaling: bool,
            condition: bool) -> RiccatiSolution:
    """AᵀX + XA − XGX + Q = 0 by SLICOT sb02md for validated symmetric G (any inertia) and Q."""
    from slycot import sb02md  # a compiled extension: imported where it is used

    n = A.shape[0]
    try:
        X, rcond, _, _, _, _ = sb02md(n, A.copy(), G.copy(), Q.copy(), "C",
                                      scal="G" if scaling else "N", sort="S")
    except Exception as exc:  # slycot raises its own arithmetic errors with LAPACK codes
        raise SolverError(f"SLICOT sb02md found no stabilizing solution of the CARE: {exc}") \
            from None
    X = 0.5 * (X + X.T)
    hnorm = fro_norm(np.block([[A, -G], [-Q, -A.T]]))
    # for a stabilizing X the closed-loop spectrum is the stable half of the Hamiltonian's
    closed = np.linalg.eigvals(A - G @ X)
    gap = check_axis_gap(closed, hnorm, "the Hamiltonian", axis_rtol)
    return RiccatiSolution(X, care_residual(A, G, Q, X), float(rcond), closed,
                           int(np.linalg.matrix_rank(X)), "slycot-sb02md", gap,
                           condition=care_condition(A, G, Q, X) if condition else None)



@numerical_boundary
def care_python_control(A: ArrayLike, G: ArrayLike, Q: ArrayLike | None = None
                        ) -> NDArray[np.float64]:
    """X from python-control's `control.care(A, B, Q, R)` with G = B R⁻¹ Bᵀ factored by eigh.

    A reference implementation for cross-checks (python-control discards SLICOT's condition
    estimate, so `care` above is the one to use); R may be indefinite (SLICOT sb02mt then uses
    a symmetric indefinite factorization).
    """
    import control

    A = as_matrix("A", A)
    n = A.shape[0]
    G = as_matrix("G", G, n)
    Q = np.zeros((n, n)) if Q is None else as_matrix("Q", Q, n)
    g, W = np.linalg.eigh(0.5 * (G + G.T))
    keep = np.abs(g) > n * np.finfo(float).eps * max(np.abs(g).max(initial=0.0), 0.0)
    if np.any(keep):
        B, R = W[:, keep], np.diag(1.0 / g[keep])
    else:
        B, R = np.zeros((n, 1)), np.eye(1)
    try:
        X, _, _ = control.care(A, B, 0.5 * (Q + Q.T), R, method="slycot")
    except Exception as exc:
        raise SolverError(f"python-control care found no stabilizing solution: {exc}") from None
    return 0.5 * (X + X.T)
