"""Every covariance solution of the Bernoulli equation AΣ + ΣAᵀ − ΣGΣ = 0 (scalar V), one for
each A-invariant subspace R on which the solution P of T_Rᵀ P + P T_R = G_R is positive
definite: Σ = U_R P⁻¹ U_Rᵀ, the subspaces enumerated from the real eigenvalue groups of A.
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.linalg import schur

from ...errors import SolverError
from ...state.params import Params
from ..riccati.numerics import fro_norm
from ..riccati.schur import check_axis_gap, lapack_sylvester_gramian
from ..riccati.stabilizing import bernoulli_scaling, unscale_solution
from .budget import _Work
from .constants import ACCEPT_RTOL, RANK_RTOL
from .evidence import make_equilibrium
from .newton import _accepted
from .results import Equilibrium

__all__: list[str] = []


def _eigen_groups(A: np.ndarray, axis_rtol: float,
                  unit_exponent: int) -> tuple[np.ndarray, list[list[int]]]:
    """Eigenvalues of A and their real groups (a real eigenvalue, or a conjugate pair); A is the
    matrix of the equation scaled by 2^−unit_exponent (errors name the unscaled eigenvalues)."""
    eig = np.linalg.eigvals(A)
    scale = fro_norm(A)
    check_axis_gap(eig, scale, "A", axis_rtol, unit_exponent=unit_exponent)

    def named(z: complex) -> complex:
        return complex(np.ldexp(z.real, unit_exponent), np.ldexp(z.imag, unit_exponent))
    diff = np.abs(eig[:, None] - eig[None, :])
    np.fill_diagonal(diff, np.inf)
    i, j = map(int, np.unravel_index(np.argmin(diff), diff.shape))
    if eig.size > 1 and diff[i, j] <= np.sqrt(axis_rtol) * scale:
        raise SolverError(f"A has a repeated eigenvalue λ ≈ {named(eig[i]):.6g}: its "
                          f"invariant "
                          f"subspaces need not be finitely many, so the equilibria of the "
                          f"Bernoulli equation cannot be enumerated")
    sums = np.abs(eig[:, None] + eig[None, :])
    np.fill_diagonal(sums, np.inf)
    i, j = map(int, np.unravel_index(np.argmin(sums), sums.shape))
    if eig.size > 1 and sums[i, j] <= axis_rtol * scale:
        raise SolverError(f"eigenvalues λ = {named(eig[i]):.6g} and {named(eig[j]):.6g} of A "
                          f"sum to ≈ 0: the Lyapunov equation on an invariant subspace holding "
                          f"both is singular, so its equilibria are not isolated or do not exist")
    groups, used = [], set()
    for i in map(int, np.argsort(-eig.real)):
        if i in used:
            continue
        group = [i]
        if eig[i].imag != 0:
            partner = np.abs(eig - eig[i].conj())
            partner[i] = np.inf
            group.append(int(np.argmin(partner)))
        groups.append(group)
        used.update(group)
    return eig, groups


def _scalar_all(params: Params, axis_rtol: float,
                work: _Work) -> tuple[list[Equilibrium], list[str]]:
    """Every Bernoulli solution Σ = U₁P⁻¹U₁ᵀ with P ≻ 0, on the equation scaled as in
    riccati.bernoulli_scaling (Σ = 2^k Σ̃; SolverError when a Σ is beyond the float range),
    and the subspaces left out undecided (P numerically singular: |λ_min(P)| ≤ RANK_RTOL
    |λ_max(P)|, or a solution not computable to ACCEPT_RTOL), in words."""
    d = params.d
    a, k = bernoulli_scaling(params.A, params.G)
    A, G = np.ldexp(params.A, -a), np.ldexp(params.G, k - a)
    eig, groups = _eigen_groups(A, axis_rtol, a)
    out, left_out = [], []
    for size in range(len(groups) + 1):
        for chosen in itertools.combinations(range(len(groups)), size):
            members = [i for g in chosen for i in groups[g]]
            if not members:
                out.append(make_equilibrium(params, np.zeros((d, d)), "invariant-subspace",
                                            rank=0))
                continue
            selected = eig[members]

            def pick(re, im, selected=selected):
                z = re + 1j * im
                return bool(np.min(np.abs(selected - z)) <= np.min(np.abs(eig - z)))

            T, U, r = schur(A, output="real", sort=pick)
            if r != len(members):
                raise SolverError("the Schur reordering did not isolate the chosen eigenvalues; "
                                  "their separation is too small for a reliable enumeration")
            U1 = U[:, :r]
            P = lapack_sylvester_gramian(T[:r, :r], U1.T @ G @ U1)
            pe = np.linalg.eigvalsh(P)
            gap = RANK_RTOL * max(abs(pe[-1]), np.finfo(float).tiny)
            if pe[0] < -gap:
                continue  # P indefinite: Σ = U₁P⁻¹U₁ᵀ is no covariance
            if pe[0] <= gap:  # P singular to working accuracy: Σ huge or none, undecided
                left_out.append(f"rank {r} (P numerically singular, λ_min/λ_max = "
                                f"{pe[0] / pe[-1]:.2g})")
                continue
            scaled = U1 @ np.linalg.solve(P, U1.T)
            closed = np.linalg.eigvals(A - scaled @ G)
            eq = _accepted(params, make_equilibrium(
                params, unscale_solution(scaled, k), "invariant-subspace",
                abscissa=float(np.ldexp(2.0 * np.max(closed.real), a)), rank=r,
                rcond=float(pe[0] / pe[-1])), work)
            if eq is None:
                left_out.append(f"rank {r} (residual above ACCEPT_RTOL = {ACCEPT_RTOL:g})")
            else:
                out.append(eq)
    return out, left_out
