"""The ordered real Schur split of A = U T Uᵀ (anti-stable block T₁₁ leading) and the triangular
Lyapunov solve T₁₁ᵀ P + P T₁₁ = U₁ᵀ G U₁ on it (`schur_split`, `lapack_sylvester_gramian`), with
the imaginary-axis refusal (`check_axis_gap`) and the symmetric inverse P⁻¹."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.linalg import (
    LinAlgError,
    LinAlgWarning,
    cho_factor,
    cho_solve,
    lapack,
    lu_factor,
    lu_solve,
    schur,
)

from ...errors import SolverError
from ...state.validation import (
    as_matrix,
)
from .constants import AXIS_RTOL
from .numerics import as_rtol, fro_norm, numerical_boundary

__all__: list[str] = []


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
