"""The stabilizing solution of the Bernoulli equation A Σ + Σ Aᵀ − Σ G Σ = 0 (`bernoulli`): the
Schur fast path Σ* = U₁ P⁻¹ U₁ᵀ, the SLICOT path, and the power-of-two scaling Σ = 2^k Σ̃."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy.linalg import (
    LinAlgError,
    blas,
    cholesky,
    lapack,
    solve_triangular,
)

from ...errors import InvalidInputError, SolverError
from ...state.validation import (
    SAFE_EXPONENT,
    as_matrix,
    scale_exponent,
)
from .care import _sb02md, care_condition, care_python_control, care_residual
from .constants import AXIS_RTOL, FAST_PATH_RESIDUAL, SINGULAR_RCOND
from .numerics import as_flag, as_rtol, exponent, fro_norm, numerical_boundary
from .results import NoStabilizingSolution, RiccatiSolution
from .schur import _schur_split, _symmetric_inverse, check_axis_gap

__all__ = ["bernoulli"]


@numerical_boundary
def bernoulli(A: ArrayLike, G: ArrayLike, *, method: str = "schur", axis_rtol: float = AXIS_RTOL,
              crosscheck: bool = False, condition: bool = False) -> RiccatiSolution:
    """Stabilizing solution Σ of the algebraic Bernoulli equation  A Σ + Σ Aᵀ − Σ G Σ = 0.

    The equilibria of the scalar-value covariance flow Σ̇ = A Σ + Σ Aᵀ − Σ G Σ (SPEC §5,
    G = −Σ_h v_h (B_h + Bᵀ_h)) solve

        A Σ + Σ Aᵀ − Σ G Σ = 0,      A − Σ G Hurwitz   (the stabilizing one),

    the CARE Aᶜᵀ X + X Aᶜ − X G X + Q = 0 with Aᶜ = Aᵀ and Q = 0. Σ has rank k = the number of
    eigenvalues of A with Re λ > 0 (Σ = 0 for Hurwitz A). method "schur" (default): ordered
    real Schur form A = U T Uᵀ with the anti-stable block T₁₁ leading, one triangular Lyapunov
    solve T₁₁ᵀ P + P T₁₁ = U₁ᵀ G U₁ and Σ = U₁ P⁻¹ U₁ᵀ (formed as YᵀY when P ≻ 0, so
    positive semidefinite by construction); if its relative residual exceeds
    FAST_PATH_RESIDUAL = 1e-10 the SLICOT path is used instead (method then reads
    "schur→slycot-sb02md"). method "care": SLICOT sb02md on the CARE with A → Aᵀ, Q = 0.

    The equation is solved in the scaled form of `bernoulli_scaling` (Ã = A·2^−a,
    G̃ = G·2^(k−a), Σ = Σ̃·2^k: the equation is homogeneous), so the verdict does not depend on
    the magnitudes of A and G; the relative residual, condition and axis gap are those of the
    scaled equation.

    Parameters
    ----------
    A : (d, d) array_like
        The linear part of the flow: finite, real, square.
    G : (d, d) array_like
        The quadratic coefficient; it is symmetrised, (G + Gᵀ)/2, and may be indefinite.
    method : {"schur", "care"}, optional
        The Schur fast path (with SLICOT fallback) or SLICOT sb02md directly. Default "schur".
    axis_rtol : float, optional
        Relative gap in (0, 1): an eigenvalue of A with |Re λ| ≤ axis_rtol ‖A‖_F counts as on
        the imaginary axis (default AXIS_RTOL = 1e-8).
    crosscheck : bool, optional
        Also solve with python-control's `care` and record the relative difference in
        `RiccatiSolution.crosscheck`. Default False.
    condition : bool, optional
        Also report Byers' condition bound (several Lyapunov solves). Default False.

    Returns
    -------
    RiccatiSolution
        Σ (as X) with its relative residual, the reciprocal condition estimate of P (or of
        SLICOT's solve), the closed-loop eigenvalues λ(A − Σ G), rank k, method, axis gap and
        the optional cross-check and condition bound; `psd` is True when Σ was formed from a
        factor.

    Raises
    ------
    InvalidInputError
        A or G not a finite real square matrix of one size d ≥ 1 (shape, NaN/Inf, complex,
        boolean or string entries); method not "schur" or "care"; axis_rtol outside (0, 1);
        crosscheck or condition not a bool.
    NoStabilizingSolution
        P singular (relative size of P⁻¹ below SINGULAR_RCOND): an anti-stable mode of A that
        G does not see, so no stabilizing solution exists. A subclass of SolverError.
    SolverError
        An eigenvalue of A within axis_rtol ‖A‖_F of the imaginary axis (scipy's solver returns
        a wrong answer silently there); SLICOT finds no stabilizing solution; a solution beyond
        the float range; any other failure of floating point (overflow, LAPACK).

    See Also
    --------
    care_g : the CARE in G form, Aᵀ X + X A − X G X + Q = 0, with Q.
    riccati_tf.equilibria : every covariance equilibrium, for scalar and general V.
    riccati_tf.certify : whether Σ(t) converges to this Σ*, with checkable evidence.
    RiccatiSolution : the solution and its evidence.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".
    .. [2] R. H. Bartels and G. W. Stewart, "Solution of the matrix equation AX + XB = C",
       Communications of the ACM 15(9), 1972.
    .. [3] A. J. Laub, "A Schur method for solving algebraic Riccati equations", IEEE Trans.
       Automatic Control 24(6), 1979.

    Examples
    --------
    A = [[1, 2], [0, 3]] has two eigenvalues with Re λ > 0, so Σ* has full rank:

    >>> import numpy as np
    >>> from riccati_tf.stability.riccati import bernoulli
    >>> A = np.array([[1.0, 2.0], [0.0, 3.0]])
    >>> sol = bernoulli(A, np.eye(2))
    >>> np.round(sol.X, 4)
    array([[3.2, 2.4],
           [2.4, 4.8]])
    >>> sol.rank, sol.method, sol.residual < 1e-12
    (2, 'schur', True)
    >>> bool(np.allclose(A @ sol.X + sol.X @ A.T - sol.X @ sol.X, 0))
    True

    An eigenvalue on the imaginary axis leaves the stable/anti-stable split undefined:

    >>> bernoulli(np.array([[0.0, 1.0], [-1.0, 0.0]]), np.eye(2))
    Traceback (most recent call last):
        ...
    riccati_tf.errors.SolverError: eigenvalue λ = 0+1i of A lies within the relative gap 1e-08 ...
    """
    if method not in ("schur", "care"):
        raise InvalidInputError(f"method must be 'schur' or 'care', got {method!r}")
    A0 = as_matrix("A", A)
    G0 = as_matrix("G", G, A0.shape[0])
    axis_rtol = as_rtol("axis_rtol", axis_rtol)
    crosscheck, condition = as_flag("crosscheck", crosscheck), as_flag("condition", condition)
    if not np.array_equal(G0, G0.T):
        G0 = 0.5 * (G0 + G0.T)
    a, k = bernoulli_scaling(A0, G0)
    As, Gs = (np.ldexp(A0, -a), np.ldexp(G0, k - a)) if a or k else (A0, G0)  # Ã, G̃ scaled
    if method == "schur":
        sol = _bernoulli_schur(As, Gs, axis_rtol, a)
        if sol.residual > FAST_PATH_RESIDUAL:
            fallback = _bernoulli_care(As, Gs, axis_rtol, a)
            sol = RiccatiSolution(fallback.X, fallback.residual, fallback.rcond,
                                  fallback.closed_loop, sol.rank, "schur→slycot-sb02md",
                                  sol.axis_gap)
    else:
        sol = _bernoulli_care(As, Gs, axis_rtol, a)
    diff = kappa = None  # relative quantities: the same for the scaled equation
    if crosscheck:
        ref = care_python_control(As.T, Gs)
        diff = float(np.linalg.norm(sol.X - ref) / max(np.linalg.norm(ref), np.finfo(float).tiny))
    if condition:
        kappa = care_condition(As.T, Gs, np.zeros_like(Gs), sol.X)
    closed = np.ldexp(sol.closed_loop.real, a) + 1j * np.ldexp(sol.closed_loop.imag, a)
    return RiccatiSolution(unscale_solution(sol.X, k), sol.residual, sol.rcond, closed, sol.rank,
                           sol.method, sol.axis_gap, diff, kappa, sol.psd)



def bernoulli_scaling(A: np.ndarray, G: np.ndarray) -> tuple[int, int]:
    """(a, k) such that Ã = A·2^−a and G̃ = G·2^(k−a) have their largest entries within
    2^±SAFE_EXPONENT (a = k = 0 for data already there: nothing is rescaled):
    Σ solves AΣ + ΣAᵀ − ΣGΣ = 0 iff Σ̃ = Σ·2^−k solves ÃΣ̃ + Σ̃Ãᵀ − Σ̃G̃Σ̃ = 0 (the equation is
    homogeneous), so the solution does not depend on the magnitudes except through 2^k, and the
    relative residual, the condition and the axis gap are those of the scaled equation."""
    a = scale_exponent(A) if np.any(A) else scale_exponent(G)
    shift = exponent(G) - a
    return a, -shift if np.any(G) and abs(shift) > SAFE_EXPONENT else 0



def unscale_solution(X: np.ndarray, k: int) -> np.ndarray:
    """X·2^k, or SolverError when that leaves the float range (the solution is not
    representable: an entry overflows, or every entry of a nonzero X falls below the normal
    range)."""
    with np.errstate(over="ignore", under="ignore"):
        out = np.ldexp(X, k) if k else X
    big = float(np.max(np.abs(out))) if out.size else 0.0
    if not np.isfinite(big) or (big < np.finfo(float).tiny and np.any(X)):
        raise SolverError(f"the solution has magnitude ≈ 2^{k + exponent(X)}, outside the range "
                          f"of float64: it is not representable")
    return out



def _bernoulli_schur(A: np.ndarray, G: np.ndarray, axis_rtol: float,
                     unit_exponent: int) -> RiccatiSolution:
    split = _schur_split(A, G, axis_rtol, unit_exponent)
    k, U1 = split.k, split.U[:, :split.k]
    d = A.shape[0]
    if k == 0:
        return RiccatiSolution(np.zeros((d, d)), 0.0, 1.0, split.eigenvalues, 0, "schur",
                               split.axis_gap, psd=True)
    P = split.P
    pnorm = np.linalg.norm(P, 1)
    ref = max(pnorm, np.linalg.norm(G, 1) / (2 * np.linalg.norm(A, 1)))
    try:  # P ≻ 0 (G ≻ 0 on the anti-stable part): Σ = WWᵀ with W = U₁C⁻¹, P = CᵀC
        C = cholesky(P, lower=False, check_finite=False)
        rcond = float(lapack.dpocon(C, pnorm, uplo="U")[0])
        sing = float(rcond * pnorm / ref)  # ≈ 1 / (‖P⁻¹‖₁ ref)
        Y = solve_triangular(C, U1.T, trans="T", lower=False, check_finite=False)
        X = blas.dsyrk(1.0, Y, trans=1)  # YᵀY in the upper triangle, zeros below
        X = X + X.T
        X[np.diag_indices(d)] *= 0.5  # the doubled diagonal, halved exactly
        Pinv = None
    except LinAlgError:  # indefinite P: explicit inverse
        Pinv, rcond = _symmetric_inverse(P)
        sing = split.singularity(A, G, Pinv)
    if sing < SINGULAR_RCOND:
        raise NoStabilizingSolution(
            f"no stabilizing solution: the solution P of T₁₁ᵀP + PT₁₁ = U₁ᵀGU₁ on the anti-stable "
            f"invariant subspace of A is singular (relative size of P⁻¹ {sing:.3g}); an "
            f"anti-stable mode of A is not seen by G")
    if Pinv is not None:
        X = U1 @ Pinv @ U1.T
        X = 0.5 * (X + X.T)
    # closed loop A − ΣG in Schur coordinates: [[−P⁻¹T₁₁ᵀP, ·], [0, T₂₂]]
    closed = np.concatenate([-split.eigenvalues[:k].conj(), split.eigenvalues[k:]])
    return RiccatiSolution(X, care_residual(A.T, G, None, X), rcond, closed, k,
                           "schur", split.axis_gap, psd=Pinv is None)



def _bernoulli_care(A: np.ndarray, G: np.ndarray, axis_rtol: float,
                    unit_exponent: int) -> RiccatiSolution:
    eig = np.linalg.eigvals(A)
    gap = check_axis_gap(eig, fro_norm(A), "A", axis_rtol, unit_exponent=unit_exponent)
    sol = _sb02md(A.T, G, np.zeros_like(G), axis_rtol, True, False)
    k = int(np.sum(eig.real > 0))
    return RiccatiSolution(sol.X, sol.residual, sol.rcond, sol.closed_loop, k, sol.method, gap)
