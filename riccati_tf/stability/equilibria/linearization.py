"""The linearisation of the covariance field at Σ (SPEC §5) and its stability:

    L(H) = M H + H Mᵀ + Σ_h (V_h H B_h Σ + Σ B_hᵀ H V_hᵀ),      M = A + Σ_h V_h Σ B_h,

as a dense n_s × n_s matrix (Kronecker form, or column by column), as a matrix-free operator,
its spectral abscissa (dense eigenvalues, ARPACK beyond DENSE_SPECTRUM_MAX_D), and
`linearization_stability`: the numerical-range bound by Lanczos, ARPACK's rightmost Ritz value
as the fallback.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.linalg import eigh_tridiagonal
from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigs

from ...errors import InvalidInputError
from ...state.lowrank import value_factors
from ...state.params import Params
from ...state.validation import as_covariance
from ..riccati.numerics import numerical_boundary
from .constants import (
    ARNOLDI_MAXITER,
    ARNOLDI_NCV,
    ARNOLDI_RTOL,
    DENSE_SPECTRUM_MAX_D,
    LANCZOS_MAXITER,
    LANCZOS_RTOL,
    OPERATOR_COLUMNS_D,
    RANK_RTOL,
)
from .coords import from_coords, sym_basis, sym_coords
from .field import Products, products
from .results import Stability
from .scales import drift_spectrum

__all__ = ["linearization_stability"]


def apply_linearization(params: Params, cov: np.ndarray, H: np.ndarray) -> np.ndarray:
    """L(H) = M H + H Mᵀ + Σ_h (V_h H B_h Σ + Σ B_hᵀ H V_hᵀ), M = A + Σ_h V_h Σ B_h."""
    MH = params.M(cov) @ H
    out = MH + MH.T
    for V, B in params.heads:
        W = V @ H @ B @ cov
        out += W + W.T
    return out


def linearization_matrix(params: Params, cov: np.ndarray) -> np.ndarray:
    """L as an n_s × n_s matrix in orthonormal symmetric coordinates, from the Kronecker form

        vec(L(H)) = [M ⊗ I + I ⊗ M + Σ_h (V_h ⊗ (B_hΣ)ᵀ + (ΣB_hᵀ) ⊗ V_h)] vec(H)   (row-major vec),

    restricted to Sym(d): L_s = Nᵀ L_full N with N = sym_basis(d); from d = OPERATOR_COLUMNS_D
    on, column by column as L(E_k) of the orthonormal basis (`linearization_operator`, factored
    heads in O(s_h d²)): 5× faster at d = 24 than the d² × d² Kronecker matrix.
    """
    d = params.d
    if d >= OPERATOR_COLUMNS_D:
        op = linearization_operator(params, cov)
        return np.column_stack([op.matvec(e) for e in np.eye(op.shape[0])])
    eye = np.eye(d)
    M = params.M(cov)
    full = np.kron(M, eye) + np.kron(eye, M)
    for V, B in params.heads:
        full += np.kron(V, (B @ cov).T) + np.kron(cov @ B.T, V)
    N = sym_basis(d)
    return N.T @ (full @ N)


def linearization_operator(params: Params, cov: np.ndarray,
                           at: Products | None = None) -> LinearOperator:
    """L as a matrix-free operator on orthonormal symmetric coordinates (for d > 30): M and
    C_h = B_hΣ are formed once (or taken from `at`, the products at Σ), then each product
    costs 1 + 2H products of d×d matrices, a head with factors V_h = O_hW_h (`value_factors`)
    O_h(((W_hH)B_h)Σ) in O(s_h d²) instead."""
    d = params.d
    n = d * (d + 1) // 2
    at = products(params, cov) if at is None else at
    M = at.M
    vf = value_factors(params)
    dense = [(params.heads[h][0], at.C[h]) for h in vf.dense]
    rights = [params.heads[h][1] for h in vf.factored]

    def matvec(h):
        H = from_coords(np.ravel(h), d)
        out = M @ H
        for V, C in dense:
            out += V @ (H @ C)
        if rights:
            out += vf.apply(vf.O, vf.W @ H, rights, at.cov)
        return sym_coords(out)
    return LinearOperator((n, n), matvec=matvec, dtype=float)


def spectral_abscissa(params: Params, cov: np.ndarray) -> float:
    """max Re λ(L) on Sym(d): dense eigenvalues for d ≤ DENSE_SPECTRUM_MAX_D, ARPACK (largest
    real part; budget ARNOLDI_MAXITER restarts of ARNOLDI_NCV vectors, SolverError through the
    callers' numerical boundary when spent) beyond;
    at Σ = 0, where L(H) = AH + HAᵀ, 2 max Re λ(A)."""
    if not np.any(cov):
        return 2.0 * float(np.max(drift_spectrum(params)[0].real))
    if params.d <= DENSE_SPECTRUM_MAX_D:
        return float(np.max(np.linalg.eigvals(linearization_matrix(params, cov)).real))
    op = linearization_operator(params, cov)
    vals = eigs(op, k=2, which="LR", return_eigenvectors=False, tol=ARNOLDI_RTOL,
                ncv=min(ARNOLDI_NCV, op.shape[0] - 1), maxiter=ARNOLDI_MAXITER)
    return float(np.max(vals.real))


@numerical_boundary
def linearization_stability(params: Params, cov: np.ndarray) -> Stability:
    """Decide whether L at the equilibrium Σ* is Hurwitz on Sym(d), matrix-free.

    First the numerical-range bound of `Stability`: at Σ* ≻ 0, Re λ(L) ≤ θ + ρ + ‖R⁻¹F(Σ*)R⁻¹‖_F
    with θ the largest eigenvalue of the self-adjoint part of the heads' operator after the
    similarity K ↦ R⁻¹L(RKR)R⁻¹ (R = Σ*^{1/2}), by Lanczos, and ρ its Ritz residual; stable when
    that is negative. Each Lanczos product costs O(Σ_h s_h d²) with factored value matrices
    (`value_factors`), O(H d³) otherwise. When the bound is not negative (it is only sufficient)
    or Σ* is singular, ARPACK's rightmost Ritz value of L decides (the sign of its real part);
    when neither converges within its budget (LANCZOS_MAXITER, ARNOLDI_MAXITER restarts) the
    verdict is "undecided", stable None.

    Parameters
    ----------
    params : Params
        The layer on R^d (A, V_h, B_h of shape (d, d), dense or factored heads).
    cov : (d, d) array_like of float
        The equilibrium Σ*, symmetric positive semidefinite (`riccati_tf.state.validation`'s
        covariance policy); its residual F(Σ*) enters the bound.

    Returns
    -------
    Stability
        The verdict ("numerical-range", "arnoldi" or "undecided") with the bound or Ritz value,
        its residual, the defect, the tolerance and, for the bound, the quadratic constant c̃.

    Raises
    ------
    InvalidInputError
        params is not a Params, or cov is not a d×d covariance.
    SolverError
        A floating-point failure (LinAlgError, overflow) in the eigensolvers.

    See Also
    --------
    spectral_abscissa : max Re λ(L) itself (dense for d ≤ DENSE_SPECTRUM_MAX_D, ARPACK beyond).
    Stability : the record and the derivation of the bound.
    equilibria : the equilibria, whose stability beyond d = DENSE_SPECTRUM_MAX_D this decides.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".
    .. [2] T. Kato, *Perturbation Theory for Linear Operators*, Springer (1995), §V.3.2.
    .. [3] C. Lanczos, "An iteration method for the solution of the eigenvalue problem of
       linear differential and integral operators", J. Res. Nat. Bur. Standards 45, 1950.
    .. [4] R. B. Lehoucq, D. C. Sorensen, C. Yang, "ARPACK Users' Guide", SIAM, 1998.

    Examples
    --------
    V = −I, B = I, A = I: F(Σ) = 2Σ − 2Σ², Σ* = I and L(H) = −2H, as the dense spectrum says.

    >>> import numpy as np
    >>> from riccati_tf import Params
    >>> from riccati_tf.stability import linearization_stability
    >>> from riccati_tf.stability.equilibria.linearization import spectral_abscissa
    >>> p = Params(np.eye(3), V=-np.eye(3), B=np.eye(3))
    >>> s = linearization_stability(p, np.eye(3))
    >>> s.method, s.stable, round(s.value, 9), round(spectral_abscissa(p, np.eye(3)), 9)
    ('numerical-range', True, -2.0, -2.0)

    At the singular Σ = 0 there is no bound; ARPACK's rightmost Ritz value of L(H) = AH + HAᵀ
    decides that this equilibrium is unstable:

    >>> s0 = linearization_stability(p, np.zeros((3, 3)))
    >>> s0.method, s0.stable, round(s0.value, 6), spectral_abscissa(p, np.zeros((3, 3)))
    ('arnoldi', False, 2.0, 2.0)
    """
    if not isinstance(params, Params):
        raise InvalidInputError(f"params must be a riccati_tf.Params, got {type(params).__name__}")
    cov = as_covariance("cov", cov, params.d)
    at = products(params, 0.5 * (cov + cov.T))
    got = _numerical_range_bound(params, at)
    if got is not None:
        theta, rho, defect, quadratic = got
        value = theta + rho + defect
        if value < 0:
            return Stability("numerical-range", True, value, theta, rho, defect, LANCZOS_RTOL,
                             f"Re λ(L) ≤ θ + ρ + defect = {value:.6g} < 0 (largest eigenvalue "
                             f"θ = {theta:.6g} of the symmetric part, Ritz residual ρ = "
                             f"{rho:.2g}, defect ‖R⁻¹F(Σ*)R⁻¹‖_F = {defect:.2g})", quadratic)
    note = ("Σ* is singular, so no numerical-range bound" if got is None else
            f"the numerical-range bound {value:.6g} is not negative")
    op = linearization_operator(params, at.cov, at)
    try:
        vals, vecs = eigs(op, k=2, which="LR", tol=ARNOLDI_RTOL,
                          ncv=min(ARNOLDI_NCV, op.shape[0] - 1), maxiter=ARNOLDI_MAXITER)
    except ArpackNoConvergence:
        return Stability("undecided", None, None, None, None, None, ARNOLDI_RTOL,
                         f"{note}, and ARPACK found no rightmost eigenvalue of L within "
                         f"{ARNOLDI_MAXITER} restarts")
    i = int(np.argmax(vals.real))
    lam, v = vals[i], vecs[:, i]
    Lv = op.matvec(v.real) + 1j * op.matvec(v.imag)
    rho = float(np.linalg.norm(Lv - lam * v) / np.linalg.norm(v))
    top = float(lam.real)
    return Stability("arnoldi", bool(top < 0), top, top, rho, None, ARNOLDI_RTOL,
                     f"{note}; ARPACK's rightmost eigenvalue of L has Re λ = {top:.6g} "
                     f"(Ritz residual {rho:.2g})")


def _numerical_range_bound(params: Params,
                           at: Products) -> tuple[float, float, float, float] | None:
    """(θ, ρ, ‖R⁻¹F(Σ)R⁻¹‖_F, c̃) of `Stability` at Σ = at.cov ≻ 0, or None when Σ is singular
    (λ_min ≤ RANK_RTOL λ_max) or Lanczos does not converge within LANCZOS_MAXITER restarts."""
    d = params.d
    w, U = np.linalg.eigh(at.cov)
    if not w[0] > RANK_RTOL * w[-1]:
        return None
    R = (U * np.sqrt(w)) @ U.T
    Ri = (U / np.sqrt(w)) @ U.T
    defect = float(np.linalg.norm(Ri @ at.field @ Ri))
    vf = value_factors(params)
    dense = [(Ri @ V @ R, R @ B @ R) for V, B in (params.heads[h] for h in vf.dense)]
    X, Y = Ri @ vf.O, R @ vf.W.T  # Ṽ_h = X_hY_hᵀ for the factored heads
    Bt = [R @ params.heads[h][1] @ R for h in vf.factored]
    BtT = [B.T for B in Bt]
    quadratic = 2 * sum(np.linalg.norm(Vt) * np.linalg.norm(B) for Vt, B in dense)
    for r, B in zip(vf.rows, Bt, strict=True):  # ‖X_hY_hᵀ‖_F² = Σ (X_hᵀX_h) ∘ (Y_hᵀY_h)
        gram = np.sum((X[:, r].T @ X[:, r]) * (Y[:, r].T @ Y[:, r]))
        quadratic += 2 * np.sqrt(max(gram, 0.0)) * np.linalg.norm(B)

    def matvec(k):
        K = from_coords(np.ravel(k), d)
        Z = np.zeros((d, d))
        for Vt, B in dense:
            Z += Vt @ K @ B + Vt.T @ K @ B.T
        if Bt:
            Z += vf.apply(X, Y.T @ K, Bt) + vf.apply(Y, X.T @ K, BtT)
        return 0.5 * sym_coords(Z)
    n = d * (d + 1) // 2
    if n <= LANCZOS_MAXITER:  # small: the symmetric matrix itself
        vals, vecs = np.linalg.eigh(np.column_stack([matvec(e) for e in np.eye(n)]))
        theta, k = float(vals[-1]), vecs[:, -1]
    else:
        got = _lanczos_top(matvec, n)
        if got is None:
            return None
        theta, k = got
    rho = float(np.linalg.norm(matvec(k) - theta * k) / np.linalg.norm(k))
    return theta, rho, defect, float(quadratic)


def _lanczos_top(matvec: Callable[[np.ndarray], np.ndarray],
                 n: int) -> tuple[float, np.ndarray] | None:
    """(θ, k): the largest Ritz value of the symmetric operator `matvec` on R^n and its unit
    Ritz vector, by Lanczos with full reorthogonalisation from a fixed random start, stopped
    once the residual estimate β_j|y_j| ≤ LANCZOS_RTOL |θ| or once θ > 0 (a Rayleigh quotient:
    the largest eigenvalue is then positive); None after LANCZOS_MAXITER products."""
    Q = np.empty((LANCZOS_MAXITER + 1, n))
    q = np.random.default_rng(0).standard_normal(n)
    Q[0] = q / np.linalg.norm(q)
    alpha, beta = np.empty(LANCZOS_MAXITER), np.empty(LANCZOS_MAXITER)
    for j in range(LANCZOS_MAXITER):
        w = matvec(Q[j])
        alpha[j] = Q[j] @ w
        for _ in range(2):  # twice is enough (Kahan, Parlett)
            w -= Q[:j + 1].T @ (Q[:j + 1] @ w)
        beta[j] = np.linalg.norm(w)
        vals, vecs = eigh_tridiagonal(alpha[:j + 1], beta[:j], select="i",
                                      select_range=(j, j))
        theta, y = float(vals[0]), vecs[:, 0]
        if theta > 0 or beta[j] * abs(y[-1]) <= LANCZOS_RTOL * abs(theta) or beta[j] == 0:
            k = Q[:j + 1].T @ y
            return theta, k / np.linalg.norm(k)
        Q[j + 1] = w / beta[j]
    return None
