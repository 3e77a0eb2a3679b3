"""Algebraic Riccati, Bernoulli and Lyapunov equations (SPEC §5): the layer under the equilibria.

    CARE        Aᵀ X + X A − X G X + Q = 0              (stabilizing X: A − G X Hurwitz)
    Bernoulli   A Σ + Σ Aᵀ − Σ G Σ = 0                  (the CARE with A → Aᵀ, Q = 0)

The scalar-value covariance flow Σ̇ = AΣ + ΣAᵀ − ΣGΣ has the Bernoulli solutions as equilibria.
Its stabilizing solution (A − ΣG Hurwitz) is found here without a Hamiltonian: in an ordered real
Schur form A = U T Uᵀ whose leading block T₁₁ (k×k) carries the eigenvalues with Re λ > 0,

    Σ* = U₁ P⁻¹ U₁ᵀ,   T₁₁ᵀ P + P T₁₁ = U₁ᵀ G U₁   (one triangular Lyapunov solve),

so rank Σ* = k, the number of anti-stable eigenvalues of A. The CARE in G form (`care_g`, with
G = B R⁻¹ Bᵀ given directly) goes through SLICOT's sb02md (the routine python-control's `care`
calls), keeping the condition estimate it returns; `lyapunov_function` solves LᵀP + PL = −Q.

References: P. Benner, A. J. Laub, V. Mehrmann, "A collection of benchmark examples for the
numerical solution of algebraic Riccati equations I: continuous-time case", TU Chemnitz SPC 95_23
(1995), and J. Abels, P. Benner, "CAREX — a collection of benchmark examples for continuous-time
algebraic Riccati equations (version 2.0)", SLICOT Working Note 1999-14.
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.linalg import (
    LinAlgError,
    LinAlgWarning,
    blas,
    cho_factor,
    cho_solve,
    cholesky,
    lapack,
    lu_factor,
    lu_solve,
    schur,
    solve_triangular,
)

from ..errors import InvalidInputError, SolverError
from ..state.validation import PSD_RTOL, SAFE_EXPONENT, SYM_RTOL, as_matrix, as_real, scale_exponent

__all__ = ["AXIS_RTOL", "FAST_PATH_RESIDUAL", "SINGULAR_RCOND", "LyapunovSolution",
           "NoStabilizingSolution", "RiccatiSolution", "bernoulli", "care_g", "lyapunov_function"]

_P = ParamSpec("_P")
_R = TypeVar("_R")

#: an eigenvalue λ of A counts as on the imaginary axis when |Re λ| ≤ AXIS_RTOL · ‖A‖_F
AXIS_RTOL = 1e-8
#: the fast path hands over to SLICOT when its relative residual exceeds this
FAST_PATH_RESIDUAL = 1e-10
#: a symmetric matrix counts as singular when its reciprocal 1-norm condition is below this
SINGULAR_RCOND = 1e3 * np.finfo(float).eps


def as_rtol(name: str, value: object) -> float:
    """A relative tolerance: a real number in (0, 1) (0 would switch a safety test off, 1 or more
    would refuse everything)."""
    x = as_real(name, value)
    if not 0.0 < x < 1.0:
        raise InvalidInputError(f"{name} must be a relative tolerance in (0, 1), got {x:g}")
    return x


def as_flag(name: str, value: object) -> bool:
    """True or False, nothing else (a string such as "no" is not read as a truth value)."""
    if not isinstance(value, bool | np.bool_):
        raise InvalidInputError(f"{name} must be True or False, got {type(value).__name__} "
                                f"{value!r:.40}")
    return bool(value)


def exponent(M: NDArray[np.float64]) -> int:
    """e with max|M| · 2^−e in [1/2, 1) (0 for M = 0): M · 2^−e is free of under- and overflow."""
    s = float(np.max(np.abs(M))) if M.size else 0.0
    return 0 if s == 0.0 else int(np.frexp(s)[1])


def fro_norm(M: NDArray[np.float64]) -> float:
    """‖M‖_F without intermediate under- or overflow (computed on M scaled by a power of two);
    inf when the norm itself exceeds the float range."""
    e = exponent(M)
    if abs(e) <= SAFE_EXPONENT:  # squares of the entries neither overflow nor underflow
        return float(np.linalg.norm(M))
    with np.errstate(over="ignore"):
        return float(np.ldexp(np.linalg.norm(np.ldexp(M, -e)), e))


@contextlib.contextmanager
def numerical_failures(what: str) -> Iterator[None]:
    """Let the package's own errors through and turn any other exception raised inside (LAPACK's
    LinAlgError, overflow, a failed iteration deep in scipy) into a SolverError naming `what`:
    a numerical method that cannot vouch for an answer says so in one error type."""
    try:
        yield
    except (InvalidInputError, SolverError):
        raise
    except Exception as exc:  # the boundary of the package's numerics
        raise SolverError(f"{what} failed numerically ({type(exc).__name__}: {exc}); the "
                          f"data may be too large, too small or too ill-conditioned for "
                          f"floating point") from exc


def numerical_boundary(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Decorator form of `numerical_failures` for a public solver."""
    @functools.wraps(fn)
    def wrapped(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with numerical_failures(fn.__name__):
            return fn(*args, **kwargs)
    return wrapped


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


def check_axis_gap(eigenvalues: np.ndarray, scale: float, name: str = "A",
                   axis_rtol: float = AXIS_RTOL, *, unit_exponent: int = 0) -> float:
    """Return min |Re λ| / scale; raise SolverError if an eigenvalue is within axis_rtol of iℝ.

    An eigenvalue on (or within rounding of) the imaginary axis leaves the split into stable and
    anti-stable parts undefined; SLICOT then refuses and scipy returns a wrong answer silently.
    unit_exponent: the eigenvalues are those of a matrix scaled by 2^−unit_exponent (the error
    names λ · 2^unit_exponent).
    """
    axis_rtol = as_rtol("axis_rtol", axis_rtol)
    re = np.abs(np.real(eigenvalues))
    i = int(np.argmin(re)) if re.size else 0
    gap = float(re[i] / scale) if scale > 0 else 0.0
    if re.size and gap <= axis_rtol:
        lam = complex(np.ldexp(eigenvalues[i].real, unit_exponent),
                      np.ldexp(eigenvalues[i].imag, unit_exponent))
        raise SolverError(f"eigenvalue λ = {lam.real:.6g}{lam.imag:+.6g}i of {name} lies within "
                          f"the relative gap {axis_rtol:g} of the imaginary axis (|Re λ| / "
                          f"‖{name}‖_F = {gap:.3g}): the stable/anti-stable splitting, hence the "
                          f"stabilizing solution, is not defined robustly")
    return gap


@dataclass(frozen=True, eq=False)
class SchurSplit:
    """Ordered real Schur form A = U T Uᵀ with the k anti-stable eigenvalues (Re λ > 0) leading,
    and the solution P of T₁₁ᵀ P + P T₁₁ = U₁ᵀ G U₁ on that block (k×k; P is the inverse of the
    stabilizing Bernoulli solution restricted to the anti-stable invariant subspace)."""

    U: np.ndarray
    T: np.ndarray
    k: int
    P: np.ndarray
    axis_gap: float
    eigenvalues: np.ndarray

    def singularity(self, A: np.ndarray, G: np.ndarray,
                    Pinv: np.ndarray | None = None) -> float:
        """1 / (‖P⁻¹‖₁ · max(‖P‖₁, ‖G‖₁ / (2‖A‖₁))) (1 when k = 0), a lower bound on
        min |λ(P)| relative to the scale of P up to a factor √k: P is singular, and the
        stabilizing solution does not exist, when this is below SINGULAR_RCOND. The floor
        ‖G‖₁/(2‖A‖₁) is the size P would have if every anti-stable mode of A saw G.
        Pinv: P⁻¹ when already computed."""
        if self.k == 0:
            return 1.0
        if Pinv is None:
            Pinv, _ = _symmetric_inverse(self.P)
        ref = max(np.linalg.norm(self.P, 1), np.linalg.norm(G, 1) / (2 * np.linalg.norm(A, 1)))
        inv_norm = np.linalg.norm(Pinv, 1)
        if not np.isfinite(inv_norm) or ref == 0:
            return 0.0
        return float(1.0 / (inv_norm * ref))


@numerical_boundary
def schur_split(A: ArrayLike, G: ArrayLike, *, axis_rtol: float = AXIS_RTOL,
                unit_exponent: int = 0) -> SchurSplit:
    """Solve T₁₁ᵀ P + P T₁₁ = U₁ᵀ G U₁ on the anti-stable block of an ordered Schur form of A.

    Raises SolverError when an eigenvalue of A lies within axis_rtol ‖A‖_F of the imaginary axis
    (named as λ · 2^unit_exponent: A may be a scaled matrix).
    """
    A = as_matrix("A", A)
    G = as_matrix("G", G, A.shape[0])
    return _schur_split(A, G, as_rtol("axis_rtol", axis_rtol), unit_exponent)


def _schur_split(A: np.ndarray, G: np.ndarray, axis_rtol: float,
                 unit_exponent: int) -> SchurSplit:
    """schur_split for validated (finite, square) A and G."""
    T, U, k = schur(A, output="real", sort="rhp", check_finite=False)
    eig = _quasi_triangular_eigenvalues(T)
    gap = check_axis_gap(eig, fro_norm(A), "A", axis_rtol, unit_exponent=unit_exponent)
    T11, U1 = T[:k, :k], U[:, :k]
    P = np.zeros((0, 0))
    if k:
        P = lapack_sylvester_gramian(T11, U1.T @ G @ U1)
    return SchurSplit(U, T, int(k), P, gap, eig)


@numerical_boundary
def lapack_sylvester_gramian(T: np.ndarray, C: np.ndarray) -> np.ndarray:
    """Solve  Tᵀ P + P T = C  for quasi-upper-triangular T (real Schur form): recursive blocking
    with LAPACK dtrsyl on blocks ≤ 64.

    Unique when λ_i(T) + λ_j(T) ≠ 0 for all i, j; dtrsyl's info = 1 (perturbed eigenvalues)
    is reported as a SolverError.
    """
    P = _recursive_lyapunov(T, np.array(C, dtype=float))
    return 0.5 * (P + P.T)


def _recursive_lyapunov(T: np.ndarray, C: np.ndarray) -> np.ndarray:
    """Tᵀ P + P T = C by recursive blocking (Jonsson–Kågström): with T = [[T₁, T₂], [0, T₃]],

        T₁ᵀP₁₁ + P₁₁T₁ = C₁₁,   T₁ᵀP₁₂ + P₁₂T₃ = C₁₂ − P₁₁T₂,
        T₃ᵀP₂₂ + P₂₂T₃ = C₂₂ − T₂ᵀP₁₂ − P₁₂ᵀT₂,

    so most of the work is matrix products; LAPACK dtrsyl (level-2) solves blocks ≤ 64."""
    n = T.shape[0]
    if n <= 64:
        return _trsyl(T, T, C)
    m = n // 2
    if T[m, m - 1] != 0.0:  # do not split a 2×2 block of the real Schur form
        m += 1
    T1, T2, T3 = T[:m, :m], T[:m, m:], T[m:, m:]
    P11 = _recursive_lyapunov(T1, C[:m, :m])
    P12 = _trsyl(T1, T3, C[:m, m:] - P11 @ T2)
    W = T2.T @ P12
    P22 = _recursive_lyapunov(T3, C[m:, m:] - W - W.T)
    return np.block([[P11, P12], [P12.T, P22]])


def _trsyl(Ta: np.ndarray, Tb: np.ndarray, C: np.ndarray) -> np.ndarray:
    """Taᵀ X + X Tb = C (quasi-triangular Ta, Tb) by LAPACK dtrsyl."""
    X, scale, info = lapack.dtrsyl(Ta, Tb, C, trana="T", tranb="N", isgn=1)
    if info != 0:
        raise SolverError("TᵀP + PT = C is (nearly) singular: eigenvalues of T sum to ≈ 0 "
                          f"(LAPACK dtrsyl info {info})")
    return X / scale


def _quasi_triangular_eigenvalues(T: np.ndarray) -> np.ndarray:
    """Eigenvalues of a real quasi-upper-triangular Schur factor (1×1 and 2×2 diagonal blocks)."""
    n = T.shape[0]
    out = np.diagonal(T).astype(complex)
    sub = np.diagonal(T, -1).tolist()
    starts, i = [], 0
    while i < n - 1:  # a 2×2 block starts where T[i + 1, i] ≠ 0 (and ends the next index)
        if sub[i] != 0.0:
            starts.append(i)
            i += 2
        else:
            i += 1
    if starts:  # the blocks' eigenvalues in one stacked call
        rows = np.add.outer(starts, [0, 1])  # (blocks, 2): the indices of each block
        out[rows] = np.linalg.eigvals(T[rows[:, :, None], rows[:, None, :]])
    return out


def _symmetric_inverse(P: np.ndarray) -> tuple[np.ndarray, float]:
    """P⁻¹ and the reciprocal 1-norm condition estimate of P (Cholesky when P ≻ 0, else LU)."""
    k = P.shape[0]
    anorm = float(np.abs(P).sum(axis=0).max())
    with np.errstate(all="ignore"):  # an exactly singular P yields inf, reported as rcond 0
        try:
            c, low = cho_factor(P, lower=False, check_finite=False)
            rcond, _ = lapack.dpocon(c, anorm, uplo="U")
            inv = cho_solve((c, low), np.eye(k), check_finite=False)
        except LinAlgError:
            with warnings.catch_warnings():  # singular P: reported through rcond = 0 below
                warnings.simplefilter("ignore", LinAlgWarning)
                lu, piv = lu_factor(P, check_finite=False)
            rcond, _ = lapack.dgecon(lu, anorm, norm="1")
            inv = lu_solve((lu, piv), np.eye(k), check_finite=False)
        inv = 0.5 * (inv + inv.T)
    return inv, float(rcond) if np.all(np.isfinite(inv)) else 0.0


def as_symmetric(name: str, value: ArrayLike, d: int) -> NDArray[np.float64]:
    """A real symmetric d×d matrix: ‖C − Cᵀ‖_F ≤ SYM_RTOL ‖C‖_F (checked on C scaled by a power
    of two), symmetrised on return; InvalidInputError naming `name` otherwise (a non-symmetric
    matrix is refused rather than replaced by its symmetric part)."""
    C = as_matrix(name, value, d)
    e = exponent(C)
    S = np.ldexp(C, -e)
    norm, asym = np.linalg.norm(S), np.linalg.norm(S - S.T)
    if asym > SYM_RTOL * norm:
        raise InvalidInputError(f"{name} must be symmetric: ‖{name} − {name}ᵀ‖_F / ‖{name}‖_F = "
                                f"{asym / norm:.3g} exceeds {SYM_RTOL:g}")
    return np.where(C == C.T, C, 0.5 * C + 0.5 * C.T)


def as_gain(name: str, value: ArrayLike, d: int) -> NDArray[np.float64]:
    """G = B R⁻¹ Bᵀ of a CARE: symmetric (as_symmetric) and positive semidefinite,
    λ_min ≥ −PSD_RTOL · λ_max (on G scaled by a power of two); InvalidInputError otherwise."""
    G = as_symmetric(name, value, d)
    e = exponent(G)
    eig = np.linalg.eigvalsh(np.ldexp(G, -e))
    if eig.size and eig[0] < -PSD_RTOL * max(eig[-1], 0.0):
        raise InvalidInputError(f"{name} must be positive semidefinite (G = B R⁻¹ Bᵀ with R ≻ 0): "
                                f"smallest eigenvalue {np.ldexp(eig[0], e):.6g}, largest "
                                f"{np.ldexp(eig[-1], e):.6g}")
    return G


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
