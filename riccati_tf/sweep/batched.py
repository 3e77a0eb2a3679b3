"""The scalar-V classifier of `certify`, on stacks of n layers at once (SPEC §5).

With V_h = v_h I the covariance obeys Σ̇ = AΣ + ΣAᵀ − ΣGΣ, G = −Σ_h v_h(B_h + B_hᵀ), and

    Σ(t) = e^{At}Σ0(I + W(t)Σ0)⁻¹e^{Aᵀt},   W(t) = ∫_0^t e^{Aᵀu} G e^{Au} du.

Decision rules — the theorem branches of `certificates._certify_scalar`, with its tolerances
(SIGN_RTOL, RANGE_RTOL, THRESHOLD_RTOL, MAX_NORM_TIME from riccati_tf.certificates; AXIS_RTOL,
SINGULAR_RCOND from riccati_tf.riccati — imported, never copied):

    rank Σ0 = 0                                      → collapses        ("zero")
    G ⪰ 0, A hyperbolic, A Hurwitz                   → collapses        ("psd_hurwitz")
    G ⪰ 0, A hyperbolic, Re λ > 0 somewhere, Σ0 ≻ 0:
        Gramian P (T₁₁ᵀP + PT₁₁ = G₁₁ on the anti-stable subspace) singular, i.e.
        min|λ(P)| / max(max|λ(P)|, ‖G‖₂/(2‖A‖₂)) < SINGULAR_RCOND → grows
                                                       ("psd_gramian_singular"), else converges
                                                       ("psd_gramian_pd", rate 2 min|Re λ(A)|)
    G ⪯ 0, G ≠ 0:  range Σ0 ⊄ stable subspace S of A (‖(I − Π_S)L0‖ > RANGE_RTOL‖L0‖):
        G ≺ 0 → blows_up ("nsd_unstable_range"); G singular → no theorem
                   range Σ0 ⊂ S: θ = λ_max(CᵀW∞C), C = U_SᵀL0, T_SᵀW∞ + W∞T_S = G_S:
        |θ − 1| ≤ THRESHOLD_RTOL → undetermined; θ > 1 → blows_up; θ < 1 → collapses
                                                       ("nsd_threshold", rate −2 max Re λ(T_S))
    anything else (certify's numerical evidence)      → not handled: certify per case.

A blow-up time is the first root of λ_min(I + L0ᵀW(t)L0) (monotone in t since G ⪯ 0), reported
when it is at most MAX_NORM_TIME / max(‖A‖₂, c‖Σ0‖₂), c = 2Σ_h‖V_h‖₂‖B_h‖₂ (else undetermined,
as certify's `_blowup`).

Batched numerics: stacked eigvals/eigvalsh/eigh (the same LAPACK calls as per case, so the
spectral tests are bitwise those of certify), Lyapunov equations as stacked Kronecker systems
(k² × k²), invariant subspaces from stacked eigenvectors (SVD of their real and imaginary parts;
cases whose eigenvector matrix is ill-conditioned are left to certify), and W(t) from a stacked
Padé-13 Van Loan exponential with the semigroup rule W(t + h) = W(t) + E_tᵀW(h)E_t: a doubling
march brackets T*, a dyadic descent shrinks the bracket to one step ‖A‖₂h ≤ 1, and the Illinois
method finishes it to 4·eps relative.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..certificates import MAX_NORM_TIME, RANGE_RTOL, SIGN_RTOL, THRESHOLD_RTOL
from ..model import SCALAR_RTOL
from ..riccati import AXIS_RTOL, SINGULAR_RCOND

#: eigenvector matrices with a 2-norm condition number above this are left to certify
EIGVEC_COND_MAX = 1e8
#: the blow-up march doubles its step after this many steps at one length
STEPS_PER_LEVEL = 4
#: Illinois iterations on the last step (each one stacked Padé exponential)
MAX_ILLINOIS = 100
_EPS = np.finfo(float).eps
_TINY = np.finfo(float).tiny

# Padé-13 coefficients and θ₁₃ (Higham, "The scaling and squaring method for the matrix
# exponential revisited", SIAM J. Matrix Anal. Appl. 26 (2005), Table 2.3)
_PADE13 = np.array([64764752532480000.0, 32382376266240000.0, 7771770303897600.0,
                    1187353796428800.0, 129060195264000.0, 10559470521600.0, 670442572800.0,
                    33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0])
_THETA13 = 5.371920351148152


# ------------------------------------------------------------------------- stacked numerics


def expm_stack(X: np.ndarray) -> np.ndarray:
    """e^X for a stack (n, m, m): Padé-13 scaling and squaring, s_i = ⌈log₂(‖X_i‖₁/θ₁₃)⌉₊."""
    n, m = X.shape[0], X.shape[-1]
    norm1 = np.abs(X).sum(axis=1).max(axis=1)
    s = np.maximum(0, np.ceil(np.log2(np.maximum(norm1, _TINY) / _THETA13))).astype(int)
    Xs = X / (2.0 ** s)[:, None, None]
    b = _PADE13
    eye = np.eye(m)
    X2 = Xs @ Xs
    X4 = X2 @ X2
    X6 = X4 @ X2
    U = Xs @ (X6 @ (b[13] * X6 + b[11] * X4 + b[9] * X2)
              + b[7] * X6 + b[5] * X4 + b[3] * X2 + b[1] * eye)
    V = X6 @ (b[12] * X6 + b[10] * X4 + b[8] * X2) + b[6] * X6 + b[4] * X4 + b[2] * X2 \
        + b[0] * eye
    R = np.linalg.solve(V - U, V + U)
    for j in range(int(s.max(initial=0))):
        sel = s > j
        R[sel] = R[sel] @ R[sel]
    return R.reshape(n, m, m)


def van_loan_stack(A: np.ndarray, G: np.ndarray, s: np.ndarray):
    """(E, W) = (e^{A s}, ∫_0^s e^{Aᵀu} G e^{Au} du) per case: expm([[−Aᵀ, G], [0, A]] s)."""
    n, d = A.shape[0], A.shape[-1]
    block = np.zeros((n, 2 * d, 2 * d))
    block[:, :d, :d] = -np.swapaxes(A, 1, 2)
    block[:, :d, d:] = G
    block[:, d:, d:] = A
    F = expm_stack(block * np.asarray(s, dtype=float).reshape(-1, 1, 1))
    E = F[:, d:, d:]
    W = np.swapaxes(E, 1, 2) @ F[:, :d, d:]
    return E, 0.5 * (W + np.swapaxes(W, 1, 2))


def lyapunov_stack(T: np.ndarray, C: np.ndarray) -> np.ndarray:
    """P with TᵀP + PT = C per case, as the Kronecker system (Tᵀ⊗I + I⊗Tᵀ) vec P = vec C
    (row-major vec), solved for the whole stack; P symmetrised."""
    n, k = T.shape[0], T.shape[-1]
    if k == 0:
        return np.zeros((n, 0, 0))
    Tt = np.swapaxes(T, 1, 2)
    eye = np.eye(k)
    K = (np.einsum("nij,kl->nikjl", Tt, eye) + np.einsum("ij,nkl->nikjl", eye, Tt)
         ).reshape(n, k * k, k * k)
    P = np.linalg.solve(K, C.reshape(n, k * k, 1)).reshape(n, k, k)
    return 0.5 * (P + np.swapaxes(P, 1, 2))


def invariant_basis(select: np.ndarray, vec: np.ndarray | None):
    """Orthonormal bases (n, d, k) of the invariant subspaces spanned by the eigenvectors `vec`
    (n, d, d) with select[i] (k = select.sum(1) equal across the stack; conjugate pairs selected
    together), and a flag per case: False when the eigenvector matrix is too ill-conditioned to
    trust. k = 0 or d needs no eigenvectors (vec may be None): the basis is exact."""
    n, d = select.shape
    k = int(select[0].sum()) if n else 0
    if k == 0 or k == d:
        return np.broadcast_to(np.eye(d)[:, :k], (n, d, k)).copy(), np.ones(n, dtype=bool)
    ok = np.linalg.cond(vec) <= EIGVEC_COND_MAX
    order = np.argsort(~select, axis=1, kind="stable")
    chosen = np.take_along_axis(vec, order[:, None, :k], axis=2)
    parts = np.concatenate([chosen.real, chosen.imag], axis=2)
    U, sv, _ = np.linalg.svd(parts)
    ok &= sv[:, k - 1] > np.sqrt(_EPS) * sv[:, 0]
    if sv.shape[1] > k:  # the real and imaginary parts span exactly k dimensions
        ok &= sv[:, k] <= 1e3 * _EPS * sv[:, 0]
    return U[:, :, :k], ok


def _lam_min(S: np.ndarray) -> np.ndarray:
    return np.linalg.eigvalsh(S)[:, 0]


def blowup_times(A: np.ndarray, G: np.ndarray, L: np.ndarray, t_max: np.ndarray) -> np.ndarray:
    """First root T* of λ_min(I + LᵀW(t)L) for G ⪯ 0 (a decreasing function of t), per case;
    NaN where no root lies in (0, t_max]. L: (n, d, r) factors of Σ0 (zero columns allowed).

    March: steps 2^j h (h = 1/‖A‖₂, STEPS_PER_LEVEL steps per j) composed exactly by the
    semigroup rule, until λ_min ≤ 0; descent: halve the bracket with the stored steps down to h;
    then Illinois (regula falsi with halving) on offsets s ∈ (0, h], W(s) by stacked Padé.
    """
    n, d, r = L.shape
    out = np.full(n, np.nan)
    if n == 0:
        return out
    norm = np.linalg.norm(A, 2, axis=(1, 2))
    h = np.where(norm > 0, 1.0 / np.where(norm > 0, norm, 1.0), 1.0)
    h = np.minimum(h, t_max)
    eye_r = np.eye(r)
    Lt = np.swapaxes(L, 1, 2)
    ladder = [van_loan_stack(A, G, h)]  # ladder[j] = (E, W) of a step 2^j h

    def ensure(level: int):
        while len(ladder) <= level:
            E, W = ladder[-1]
            ladder.append((E @ E, W + np.swapaxes(E, 1, 2) @ W @ E))

    t_a = np.zeros(n)
    E_a = np.broadcast_to(np.eye(d), (n, d, d)).copy()
    W_a = np.zeros((n, d, d))
    level = np.zeros(n, dtype=int)
    steps = np.zeros(n, dtype=int)
    active = np.ones(n, dtype=bool)
    bracketed = np.zeros(n, dtype=bool)
    with np.errstate(over="ignore", invalid="ignore"):
        while np.any(active):
            for j in np.unique(level[active]):
                ensure(int(j))
                idx = np.flatnonzero(active & (level == j))
                Ej, Wj = ladder[j][0][idx], ladder[j][1][idx]
                Ea, Wa = E_a[idx], W_a[idx]
                W_b = Wa + np.swapaxes(Ea, 1, 2) @ Wj @ Ea
                lam = _lam_min(eye_r + Lt[idx] @ W_b @ L[idx])
                hit = lam <= 0
                bracketed[idx[hit]] = True
                active[idx[hit]] = False
                move = idx[~hit]
                t_a[move] += (2.0 ** j) * h[move]
                W_a[move], E_a[move] = W_b[~hit], Ej[~hit] @ Ea[~hit]
                steps[move] += 1
                up = move[steps[move] >= STEPS_PER_LEVEL]
                level[up] += 1
                steps[up] = 0
            lost = active & ((t_a > t_max) | ~np.isfinite(W_a).all(axis=(1, 2)))
            active &= ~lost
        # descent: the bracket [t_a, t_a + 2^level h] halves down to one step h
        for j in range(int(level.max(initial=0)) - 1, -1, -1):
            idx = np.flatnonzero(bracketed & (level > j))
            if idx.size == 0:
                continue
            Ea, Wa = E_a[idx], W_a[idx]
            Ej, Wj = ladder[j][0][idx], ladder[j][1][idx]
            W_m = Wa + np.swapaxes(Ea, 1, 2) @ Wj @ Ea
            pos = _lam_min(eye_r + Lt[idx] @ W_m @ L[idx]) > 0
            move = idx[pos]
            t_a[move] += (2.0 ** j) * h[move]
            W_a[move], E_a[move] = W_m[pos], Ej[pos] @ Ea[pos]
            level[idx] = j
    idx = np.flatnonzero(bracketed)
    if idx.size:
        out[idx] = t_a[idx] + _illinois(A[idx], G[idx], L[idx], E_a[idx], W_a[idx], h[idx],
                                        t_a[idx])
    out[out > t_max] = np.nan
    return out


def _illinois(A, G, L, E_a, W_a, h, t_a) -> np.ndarray:
    """Root s ∈ (0, h] of f(s) = λ_min(I + Lᵀ(W_a + E_aᵀW(s)E_a)L), f(0) > 0 ≥ f(h)."""
    r = L.shape[2]
    M = E_a @ L
    Mt = np.swapaxes(M, 1, 2)
    S_a = np.eye(r) + np.swapaxes(L, 1, 2) @ W_a @ L

    def f(idx, s):
        _, W = van_loan_stack(A[idx], G[idx], s)
        return _lam_min(S_a[idx] + Mt[idx] @ W @ M[idx])

    n = h.size
    lo, hi = np.zeros(n), h.copy()
    f_lo = _lam_min(S_a)
    f_hi = f(np.arange(n), hi)
    side = np.zeros(n, dtype=int)  # which end moved last: −1 low, +1 high
    lo[f_hi == 0] = hi[f_hi == 0]
    active = f_hi < 0
    for _ in range(MAX_ILLINOIS):
        active &= (hi - lo) > 4 * _EPS * (t_a + hi)
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        a, b, fa, fb = lo[idx], hi[idx], f_lo[idx], f_hi[idx]
        x = b - fb * (b - a) / (fb - fa)
        bad = ~((x > a) & (x < b))
        x[bad] = 0.5 * (a[bad] + b[bad])
        fx = f(idx, x)
        zero = fx == 0
        up = fx > 0
        # low end moves: the high value is halved if the low end also moved last time
        lo[idx[up]], f_lo[idx[up]] = x[up], fx[up]
        halve = idx[up & (side[idx] == -1)]
        f_hi[halve] *= 0.5
        dn = ~up
        hi[idx[dn]], f_hi[idx[dn]] = x[dn], fx[dn]
        halve = idx[dn & ~zero & (side[idx] == 1)]
        f_lo[halve] *= 0.5
        side[idx] = np.where(up, -1, 1)
        lo[idx[zero]] = hi[idx[zero]]
        active[idx[zero]] = False
    return 0.5 * (lo + hi)



# ------------------------------------------------------------------------- the classifier


@dataclass(frozen=True, eq=False)
class BatchedCertificates:
    """certify's verdicts for a stack of n scalar-V layers, field by field (NaN for None).

    regime, theorem: (n,) str arrays ("" where not handled); exact, global_: (n,) bool;
    rate, blowup_time, threshold: (n,) float; handled: (n,) bool — False where no theorem
    branch applies (certify's numerical evidence) and the case must go to `certify` itself.
    Evidence: g_eigenvalues (n, d) of G, a_eigenvalues (n, d) of A, rank0 (n,) of Σ0.
    """

    regime: np.ndarray
    theorem: np.ndarray
    exact: np.ndarray
    global_: np.ndarray
    rate: np.ndarray
    blowup_time: np.ndarray
    threshold: np.ndarray
    handled: np.ndarray
    g_eigenvalues: np.ndarray
    a_eigenvalues: np.ndarray
    rank0: np.ndarray

    def __len__(self) -> int:
        return self.regime.size


def scalar_values(V: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(mask, v): mask[i] when every V_h[i] = v_h I, by Params.value_scalars' rule
    ‖V − (tr V / d) I‖_F ≤ SCALAR_RTOL ‖V‖_F; v (n, H) holds tr V_h / d."""
    d = V[0].shape[-1]
    eye = np.eye(d)
    v = np.stack([np.trace(Vh, axis1=1, axis2=2) / d for Vh in V], axis=1)
    mask = np.ones(v.shape[0], dtype=bool)
    for h, Vh in enumerate(V):
        dev = np.linalg.norm(Vh - v[:, h, None, None] * eye, axis=(1, 2))
        mask &= dev <= SCALAR_RTOL * np.linalg.norm(Vh, axis=(1, 2))
    return mask, v


def quadratic_constants(V: tuple[np.ndarray, ...], B: tuple[np.ndarray, ...]) -> np.ndarray:
    """c = 2 Σ_h ‖V_h‖₂ ‖B_h‖₂ per case (equilibrium.quadratic_constant on a stack)."""
    return 2.0 * sum(np.linalg.norm(Vh, 2, axis=(1, 2)) * np.linalg.norm(Bh, 2, axis=(1, 2))
                     for Vh, Bh in zip(V, B, strict=True))


def g_matrix(v: np.ndarray, B: tuple[np.ndarray, ...]) -> np.ndarray:
    """G = −Σ_h v_h (B_h + B_hᵀ) per case, summed in Params.G's order."""
    total = 0
    for h, Bh in enumerate(B):
        total = total + v[:, h, None, None] * (Bh + np.swapaxes(Bh, 1, 2))
    return -total


def classify_scalar(A: np.ndarray, G: np.ndarray, cov0: np.ndarray,
                    quadratic: np.ndarray | None = None) -> BatchedCertificates:
    """Apply the decision rules of the module docstring to stacks A, G, Σ0 of shape (n, d, d).

    quadratic: c = 2 Σ_h ‖V_h‖₂‖B_h‖₂ per case (equilibrium.quadratic_constant), which sets
    certify's blow-up horizon MAX_NORM_TIME / max(‖A‖₂, c‖Σ0‖₂); None counts as c = 0.
    """
    n, d = A.shape[:2]
    regime = np.full(n, "", dtype=object)
    theorem = np.full(n, "", dtype=object)
    exact, glob, handled = (np.zeros(n, dtype=bool) for _ in range(3))
    rate, blowup, threshold = (np.full(n, np.nan) for _ in range(3))

    def verdict(sel, reg, th, ex, gl, **numbers):
        regime[sel], theorem[sel], exact[sel], glob[sel], handled[sel] = reg, th, ex, gl, True
        for name, value in numbers.items():
            {"rate": rate, "threshold": threshold}[name][sel] = value

    g = np.linalg.eigvalsh(G)
    tol = SIGN_RTOL * np.maximum(np.abs(g).max(axis=1), _TINY)
    psd, nsd, nd = g[:, 0] >= -tol, g[:, -1] <= tol, g[:, -1] < -tol
    ce, cv = np.linalg.eigh(cov0)
    keep = ce > (d * _EPS * np.maximum(ce[:, -1], 0.0))[:, None]
    rank0 = keep.sum(axis=1)
    L0 = cv * np.sqrt(np.where(keep, ce, 0.0))[:, None, :]  # psd_factor, zero-padded to d
    eig = np.linalg.eigvals(A)
    anorm = np.linalg.norm(A, axis=(1, 2))
    hyper = (anorm > 0) & (np.abs(eig.real).min(axis=1) > AXIS_RTOL * anorm)
    hurwitz = np.all(eig.real < 0, axis=1)
    rest = rank0 > 0
    verdict(~rest, "collapses", "zero", True, False)

    verdict(rest & psd & hyper & hurwitz, "collapses", "psd_hurwitz", True, True,
            rate=-2 * eig.real.max(axis=1)[rest & psd & hyper & hurwitz])

    gram = rest & psd & hyper & ~hurwitz & (rank0 == d)
    _gramian_cases(A, G, eig, gram, verdict)

    neg = rest & nsd & ~psd
    blow = np.zeros(n, dtype=bool)
    _negative_cases(A, G, eig, anorm, L0, neg, nd, verdict, blow)
    idx = np.flatnonzero(blow)
    if idx.size:  # certify's `_blowup` integrates up to MAX_NORM_TIME / max(‖A‖₂, c‖Σ0‖₂)
        c = np.zeros(idx.size) if quadratic is None else np.asarray(quadratic, float)[idx]
        scale = np.maximum(np.linalg.norm(A[idx], 2, axis=(1, 2)),
                           c * np.linalg.norm(cov0[idx], 2, axis=(1, 2)))
        t_max = MAX_NORM_TIME / np.maximum(scale, _TINY)
        blowup[idx] = blowup_times(A[idx], G[idx], L0[idx], t_max)
        lost = idx[np.isnan(blowup[idx])]
        regime[lost], theorem[lost], exact[lost], glob[lost] = ("undetermined", "numerical",
                                                                 False, False)
    return BatchedCertificates(regime, theorem, exact, glob, rate, blowup, threshold, handled,
                               g, eig, rank0)


def _eigenvectors(A: np.ndarray, k: int) -> np.ndarray | None:
    """Eigenvectors of the stack when a proper invariant subspace (0 < k < d) is needed."""
    return np.linalg.eig(A)[1] if 0 < k < A.shape[-1] else None


def _by_count(mask: np.ndarray, select: np.ndarray):
    """Yield (k, indices) grouping the cases in mask by k = number of selected eigenvalues."""
    counts = select.sum(axis=1)
    for k in np.unique(counts[mask]):
        yield int(k), np.flatnonzero(mask & (counts == k))


def _gramian_cases(A, G, eig, cases, verdict) -> None:
    """G ⪰ 0, Re λ > 0 somewhere, Σ0 ≻ 0: the Gramian on the anti-stable subspace decides."""
    anti = eig.real > 0
    for k, idx in _by_count(cases, anti):
        U, ok = invariant_basis(anti[idx], _eigenvectors(A[idx], k))
        Ut = np.swapaxes(U, 1, 2)
        P = lyapunov_stack(Ut @ A[idx] @ U, Ut @ G[idx] @ U)
        singular = _singularity(P, A[idx], G[idx]) < SINGULAR_RCOND
        sel = np.zeros(len(cases), dtype=bool)
        sel[idx[ok & singular]] = True
        verdict(sel, "grows", "psd_gramian_singular", True, True)
        sel[:] = False
        sel[idx[ok & ~singular]] = True
        verdict(sel, "converges", "psd_gramian_pd", True, True,
                rate=2 * np.abs(eig[sel].real).min(axis=1))


def _singularity(P, A, G) -> np.ndarray:
    """riccati.SchurSplit.singularity per case: min|λ(P)| / max(max|λ(P)|, ‖G‖₂ / (2‖A‖₂))."""
    mags = np.abs(np.linalg.eigvalsh(P))
    ref = np.maximum(mags.max(axis=1), np.linalg.norm(G, 2, axis=(1, 2))
                     / (2 * np.linalg.norm(A, 2, axis=(1, 2))))
    safe = np.where(ref > 0, ref, 1.0)
    return np.where(ref > 0, mags.min(axis=1) / safe, 0.0)


def _negative_cases(A, G, eig, anorm, L0, cases, nd, verdict, blow) -> None:
    """G ⪯ 0, G ≠ 0: the range of Σ0 against the stable subspace, then the W∞ threshold."""
    n = len(cases)
    stable = eig.real < -(AXIS_RTOL * anorm)[:, None]
    for k, idx in _by_count(cases, stable):
        U, ok = invariant_basis(stable[idx], _eigenvectors(A[idx], k))
        Ut = np.swapaxes(U, 1, 2)
        C = Ut @ L0[idx]
        off = np.linalg.norm(L0[idx] - U @ C, axis=(1, 2)) > \
            RANGE_RTOL * np.linalg.norm(L0[idx], axis=(1, 2))
        out = np.zeros(n, dtype=bool)
        out[idx[ok & off & nd[idx]]] = True
        verdict(out, "blows_up", "nsd_unstable_range", True, True)
        blow |= out
        W = lyapunov_stack(Ut @ A[idx] @ U, Ut @ G[idx] @ U)
        lam = np.linalg.eigvalsh(np.swapaxes(C, 1, 2) @ W @ C)[:, -1]
        inside = ok & ~off
        border = np.abs(lam - 1) <= THRESHOLD_RTOL
        srate = -2 * np.where(stable[idx], eig[idx].real, -np.inf).max(axis=1)
        for mask, reg, th, ex in ((inside & border, "undetermined", "numerical", False),
                                  (inside & ~border & (lam > 1), "blows_up", "nsd_threshold",
                                   True),
                                  (inside & ~border & (lam < 1), "collapses", "nsd_threshold",
                                   True)):
            sel = np.zeros(n, dtype=bool)
            sel[idx[mask]] = True
            numbers = {"threshold": lam[mask]}
            if reg == "collapses":
                numbers["rate"] = srate[mask]
            verdict(sel, reg, th, ex, False, **numbers)
            if reg == "blows_up":
                blow |= sel
