"""The premises of certify's theorems decided in floating point where a margin far above every
rounding error shows the exact decision: the half-plane counts of A's spectrum (Bauer–Fike
discs), the sign of G, and the threshold λ_max(W∞Σ0) against 1 (SPEC §5)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...stability.certificates import EXACT_MAX_D, Premises
from .constants import _EPS, EIGVEC_COND_MAX, MAGNITUDE_RANGE, ROUNDING_ULPS
from .stack import _Discs, lyapunov_stack

__all__: list[str] = []


@dataclass(frozen=True)
class _Fast:
    premises: list  # Premises (exact) per case, or None where the margins do not decide
    a_eigenvalues: np.ndarray
    g_eigenvalues: np.ndarray
    discs: _Discs  # A's eigendecomposition (NaN rows where the case is not finite)


def _in_range(x: np.ndarray) -> np.ndarray:
    return (x == 0) | ((x >= MAGNITUDE_RANGE[0]) & (x <= MAGNITUDE_RANGE[1]))


def _fast_premises(A: np.ndarray, G: np.ndarray, cov0: np.ndarray, g_err: np.ndarray
                   ) -> _Fast:
    """Exact premises (certificates.Premises, tolerance None) wherever a floating-point margin
    decides them: Σ0 ≻ 0, the half-plane counts of λ(A), G ≻ 0 / G ≺ 0 / G = 0 and the sign of
    λ_max(W∞Σ0) − 1 (see the module docstring); None elsewhere."""
    n, d = A.shape[:2]
    g = np.full((n, d), np.nan)
    out: list = [None] * n
    finite = np.isfinite(A).all(axis=(1, 2)) & np.isfinite(G).all(axis=(1, 2)) & \
        np.isfinite(cov0).all(axis=(1, 2)) & np.isfinite(g_err)
    idx = np.flatnonzero(finite)
    all_discs = _eigen_discs(np.where(finite[:, None, None], A, np.nan))
    eig = all_discs.lam
    if idx.size == 0:
        return _Fast(out, eig, g, all_discs)
    A, G, S, g_err, discs = A[idx], G[idx], cov0[idx], g_err[idx], all_discs[idx]
    g[idx] = gi = np.linalg.eigvalsh(G)
    gnorm = np.abs(gi).max(axis=1)
    ce = np.linalg.eigvalsh(S)
    snorm = np.abs(ce).max(axis=1)
    ok = (d <= EXACT_MAX_D) & ~np.any(S - np.swapaxes(S, 1, 2), axis=(1, 2)) & \
        _in_range(np.linalg.norm(A, axis=(1, 2))) & _in_range(gnorm) & (snorm > 0) & \
        _in_range(snorm) & (ce[:, 0] > ROUNDING_ULPS * d * _EPS * snorm)
    if not ok.any():  # beyond EXACT_MAX_D: only the eigenvalues are needed
        return _Fast(out, eig, g, all_discs)
    left, axis, right, decided = _half_plane_counts(A, discs)
    ok &= decided
    margin = g_err + ROUNDING_ULPS * d * _EPS * gnorm
    gpd, gnd = gi[:, 0] > margin, gi[:, -1] < -margin
    gzero = ~np.any(G, axis=(1, 2)) & (g_err == 0)
    ok &= gpd | gnd | gzero
    sign = np.zeros(idx.size, dtype=int)
    lam = np.full(idx.size, np.nan)
    hurwitz = gnd & (left == d) & ok
    if hurwitz.any():
        lam[hurwitz], bound = _threshold_bound(A[hurwitz], G[hurwitz], S[hurwitz],
                                               g_err[hurwitz], discs[hurwitz])
        sign[hurwitz] = np.where(lam[hurwitz] - 1 > bound, 1,
                                 np.where(1 - lam[hurwitz] > bound, -1, 0))
        ok &= ~hurwitz | (sign != 0)
    for k in np.flatnonzero(ok):
        psd, nsd = bool(gpd[k] or gzero[k]), bool(gnd[k] or gzero[k])
        out[idx[k]] = Premises(
            tolerance=None, g_psd=psd, g_nsd=nsd, g_nd=bool(gnd[k]), n_left=int(left[k]),
            n_axis=int(axis[k]), n_right=int(right[k]), rank0=d,
            unseen=bool(gzero[k] and right[k] > 0) if psd else None,
            range_stable=bool(left[k] == d) if gnd[k] else None,
            threshold_sign=int(sign[k]) if hurwitz[k] else None,
            threshold=float(lam[k]) if hurwitz[k] else None)
    return _Fast(out, eig, g, all_discs)


def _half_plane_counts(A: np.ndarray, discs: _Discs
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(n_left, n_axis, n_right, decided) of the eigenvalues of each A, exact where decided.

    A triangular A has its diagonal as eigenvalues. Otherwise, with A V ≈ VΛ (LAPACK) and the
    computed residual R = AV − VΛ (plus its rounding bound), A = VΛV⁻¹ + RV⁻¹, and by the
    Bauer–Fike theorem along the path VΛV⁻¹ + tRV⁻¹ (t ∈ [0, 1]) every eigenvalue stays in
    discs of radius κ₂(V)‖R‖‖V⁻¹‖₂ about Λ: when none meets iℝ (and κ₂(V) ≤ EIGVEC_COND_MAX)
    the half-plane counts are those of Λ. The factor 2 covers the rounding of κ and ‖V⁻¹‖.
    discs: `_eigen_discs` of A."""
    diag = np.diagonal(A, axis1=1, axis2=2)
    tri = ~np.any(np.tril(A, -1), axis=(1, 2)) | ~np.any(np.triu(A, 1), axis=(1, 2))
    lam, cond, radius = discs.lam, discs.cond, discs.radius
    robust = (cond <= EIGVEC_COND_MAX) & (np.abs(lam.real).min(axis=1) > radius)
    re = np.where(tri[:, None], diag, lam.real)
    return (re < 0).sum(axis=1), (re == 0).sum(axis=1), (re > 0).sum(axis=1), tri | robust


def _eigen_discs(A: np.ndarray) -> _Discs:
    """(λ, V, κ₂(V), r) per case: LAPACK's eigenvalues and eigenvectors AV ≈ VΛ, the condition
    number of V and the Bauer–Fike radius r = 2κ₂(V)‖R‖/σ_min(V) ≥ κ₂(V)‖RV⁻¹‖₂ of the
    perturbation A − VΛV⁻¹ = RV⁻¹, R = AV − VΛ plus its rounding bound (see
    `_half_plane_counts`); NaN for a non-finite case."""
    n, d = A.shape[:2]
    finite = np.isfinite(A).all(axis=(1, 2))
    if not finite.all():
        out = _Discs(np.full((n, d), np.nan, complex), np.full((n, d, d), np.nan, complex),
                     np.full(n, np.nan), np.full(n, np.nan))
        if finite.any():
            got = _eigen_discs(A[finite])
            for field in ("lam", "vec", "cond", "radius"):
                getattr(out, field)[finite] = getattr(got, field)
        return out
    lam, vec = np.linalg.eig(A)
    R = A @ vec - vec * lam[:, None, :]
    sv = np.linalg.svd(vec, compute_uv=False)
    cond = sv[:, 0] / sv[:, -1]
    bound = np.linalg.norm(R, axis=(1, 2)) + 2 * (d + 1) * _EPS * np.linalg.norm(
        vec, axis=(1, 2)) * (np.linalg.norm(A, axis=(1, 2)) + np.abs(lam).max(axis=1))
    return _Discs(lam, vec, cond, 2 * cond / sv[:, -1] * bound)


def _threshold_bound(A: np.ndarray, G: np.ndarray, S: np.ndarray, g_err: np.ndarray,
                     discs: _Discs) -> tuple[np.ndarray, np.ndarray]:
    """(λ_max(W∞Σ0), a bound on its error) for Hurwitz A, G ≺ 0, Σ0 ≻ 0, with AᵀW∞ + W∞A = G.

    With R the residual of the computed W (plus its rounding and G's), the exact W∞ − W = X
    solves AᵀX + XA = −R, so ‖X‖₂ ≤ ‖R‖₂ ‖P‖₂ for AᵀP + PA = −I; the computed P̂ with residual
    ‖R_P‖ < 1/2 gives ‖P‖₂ ≤ 2‖P̂‖₂ (else no bound). Then
    |λ − λ_exact| ≤ ‖Σ0‖₂‖X‖₂ + 2 ROUNDING_ULPS d eps ‖Σ0‖₂‖W‖ (Σ0's factor and eigvalsh)."""
    d = A.shape[-1]
    eye = np.broadcast_to(np.eye(d), A.shape)
    At = np.swapaxes(A, 1, 2)
    W, P = np.moveaxis(lyapunov_stack(A, np.stack([G, -eye], axis=1), discs), 1, 0)
    an, wn, pn = (np.linalg.norm(X, axis=(1, 2)) for X in (A, W, P))
    slack = (d + 3) * _EPS
    rp = np.linalg.norm(At @ P + P @ A + eye, axis=(1, 2)) + slack * (2 * an * pn + np.sqrt(d))
    rho = np.linalg.norm(At @ W + W @ A - G, axis=(1, 2)) + g_err + \
        slack * (2 * an * wn + np.linalg.norm(G, axis=(1, 2)))
    p_bound = np.where(rp < 0.5, 2 * np.linalg.norm(P, 2, axis=(1, 2)), np.inf)
    ce, cv = np.linalg.eigh(S)
    L0 = cv * np.sqrt(np.clip(ce, 0.0, None))[:, None, :]
    lam = np.linalg.eigvalsh(np.swapaxes(L0, 1, 2) @ W @ L0)[:, -1]
    sn = ce[:, -1]
    return lam, sn * rho * p_bound + 2 * ROUNDING_ULPS * d * _EPS * sn * wn
